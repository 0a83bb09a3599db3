// The compile session: one program read or imported, its passes run with one solver per function, its kernels planned.
//
// Every command that reads a program goes through it: `compile`, `explain`,
// `view`, `run` (which interprets after shape analysis), and `dscc-tune`.
// The session owns what they share: the source manager and diagnostics, the
// module, the solvers, the plan, and the report flags (--time-passes,
// --print-ir-after, --fusion-remarks), which therefore mean the same on
// every command.
#pragma once

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "codegen/ModelPlan.h"
#include "frontend/OnnxImporter.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"
#include "passes/ShapeSolver.h"
#include "tools/Embedded.h"

namespace dscc::tools {

/// How a session reports on its work, on stderr: the same flags on every
/// command that reads a program.
struct SessionReport {
  bool timePasses = false;              ///< --time-passes: each pass and each stage, at the end
  bool printAfterAll = false;           ///< --print-ir-after-all
  std::vector<std::string> printAfter;  ///< --print-ir-after NAME (repeatable)
  bool fusionRemarks = false;           ///< --fusion-remarks: why producers were not fused, in the IR printed
};

/// Adds --time-passes, --print-ir-after, --print-ir-after-all and --fusion-remarks to `cmd`.
void addSessionReportFlags(CLI::App* cmd, const std::shared_ptr<SessionReport>& r);

/// The flags that give `r` on another command line (a compile `dscc run --target` starts).
std::vector<std::string> sessionReportArgs(const SessionReport& r);

/// Checks that every --print-ir-after names a pass; false with
/// `TOOL: error: ...` on `err` otherwise.
bool checkSessionReport(const SessionReport& r, const std::string& tool, std::ostream& err);

/// A program read (or imported) and analysed; after planProgram, through the
/// default pipeline and planned for code generation.
struct Session {
  SourceMgr sm;
  std::unique_ptr<DiagEngine> diags;
  std::unique_ptr<Module> module;
  std::string source;             ///< the file's text
  std::string parsedIR;           ///< the module after infer-shapes (`--emit=ir`)
  Function* func = nullptr;
  /// One solver per function for the whole session: infer-shapes loads it,
  /// the planner, the code generator and tuning ask it.
  std::unique_ptr<SolverPool> solvers;
  ShapeSolver* solver = nullptr;  ///< func's, in `solvers`
  codegen::ModelPlan plan;
  SessionReport report;
  /// Each stage's wall time in ms, in order (reading, each pass, planning,
  /// and the command's own stages), for --time-passes.
  std::vector<std::pair<std::string, double>> timings;

  /// Runs `fn()` as stage `name`, timed; returns what it returns.
  template <class F>
  auto stage(const std::string& name, F fn) {
    auto t0 = std::chrono::steady_clock::now();
    struct Record {
      Session& s;
      const std::string& name;
      std::chrono::steady_clock::time_point t0;
      ~Record() {
        s.timings.push_back({name, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
      }
    } record{*this, name, t0};
    return fn();
  }

  /// With --time-passes, prints the stages' times and their total to `os`
  /// (`TOOL: time: ...` lines); otherwise nothing.
  void printTimings(const std::string& tool, std::ostream& os) const;
};

/// `--streaming-min SIZE` into `out` (after targetPlanOptions): "" keeps the
/// default (the running machine's last-level cache), "0" makes no streaming
/// versions. False, reported to `err`, on a bad size or a GPU target.
bool streamingOption(const std::string& value, codegen::PlanOptions& out, std::ostream& err);

/// Adds --generic-vector and --no-generic-vector to `cmd`, stored into `out`
/// (which must outlive the parse; PlanOptions::GenericVector::Auto unless given).
void addGenericVectorFlags(CLI::App* cmd, codegen::PlanOptions::GenericVector& out);

/// The planner's options for `target` ("cpu", "cuda:sm_80", "cuda:sm_90"):
/// vector width (`vectorWidth` > 0, else 8 on the CPU and 4 on the GPU),
/// aligned vector blocks and reduction schedules on the GPU, with the
/// schedule thresholds `rowSchedule` ("WARP,BLOCK,TILE[,SPLIT,ROWS,CHUNK]";
/// "" keeps the defaults). Reports to `err`; false on a bad value.
bool targetPlanOptions(const std::string& target, int vectorWidth, const std::string& rowSchedule,
                       codegen::PlanOptions& out, std::ostream& err);

/// Reads `file` (a .dsc program, or an ONNX model imported by frontend/),
/// loads its file constants and runs shape analysis (infer-shapes: the
/// checks the interpreter enforces, impossible programs refused). Errors go
/// to `err` as located diagnostics; returns null after any. `names`, for an
/// ONNX model: its input and output names.
std::unique_ptr<Session> loadProgram(const std::string& file, std::ostream& err, const frontend::ImportOptions& onnx = {},
                                     const SessionReport& report = {}, frontend::Imported* names = nullptr);

/// Runs the rest of the default pipeline on a loaded session for the target
/// of `opts` and plans function `funcName` (default: @main or the only one).
/// `funcWhere` (`file:line:col`), when `funcName` was read from a file: where
/// the error that the program has no such function is located. False after
/// reporting to `err`.
bool planProgram(Session& s, const std::string& file, const std::string& funcName, const codegen::PlanOptions& opts,
                 std::ostream& err, const std::string& funcWhere = "");

/// loadProgram then planProgram.
std::unique_ptr<Session> loadAndPlan(const std::string& file, const std::string& funcName,
                                      const codegen::PlanOptions& opts, std::ostream& err,
                                      const frontend::ImportOptions& onnx = {}, const std::string& funcWhere = "",
                                      const SessionReport& report = {});

/// loadAndPlan for program text read from elsewhere (a compiled model's
/// dscc_model_source, named `name` in diagnostics): file constants take the
/// model's `embedded` data where it has them, else are read relative to `sourceDir`.
std::unique_ptr<Session> loadAndPlanSource(const std::string& name, const std::string& source,
                                            const std::string& sourceDir, const EmbeddedFile* embedded,
                                            const std::string& funcName, const codegen::PlanOptions& opts,
                                            std::ostream& err);


/// Reports `error` from generating fe's code: a located diagnostic at `loc`
/// (the argument, op or function it concerns) when it has one, as planning
/// errors are, else `dscc: error: FILE: cannot compile @f: ...` on `err`.
void reportCannotCompile(const Session& fe, const std::string& file, const std::string& error, Location loc,
                         std::ostream& err);

/// Loads the tuning file `tuning` into fe's plan (tuner::loadTuning): the
/// tuned configs' other vector widths are planned again (fe's function and
/// solver, not a second parse) into `keep`, which must outlive fe's plan.
/// Reports to `err`; false on error.
bool applyTuning(Session& fe, const std::string& tuning, const std::string& file, const std::string& funcName,
                 const codegen::PlanOptions& opts, std::vector<std::unique_ptr<codegen::ModelPlan>>& keep,
                 std::ostream& err);

}  // namespace dscc::tools
