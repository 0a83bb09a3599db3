// The front half of `dscc compile` and `dscc explain`: read, parse, run the default pipeline, plan the kernels.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/ModelPlan.h"
#include "frontend/OnnxImporter.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"
#include "passes/ShapeSolver.h"
#include "tools/Embedded.h"

namespace dscc::tools {

/// A program through the default pipeline, planned for code generation.
struct Frontend {
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
};

/// `--streaming-min SIZE` into `out` (after targetPlanOptions): "" keeps the
/// default (the running machine's last-level cache), "0" makes no streaming
/// versions. False, reported to `err`, on a bad size or a GPU target.
bool streamingOption(const std::string& value, codegen::PlanOptions& out, std::ostream& err);

/// The planner's options for `target` ("cpu", "cuda:sm_80", "cuda:sm_90"):
/// vector width (`vectorWidth` > 0, else 8 on the CPU and 4 on the GPU),
/// aligned vector blocks and reduction schedules on the GPU, with the
/// schedule thresholds `rowSchedule` ("WARP,BLOCK,TILE[,SPLIT,ROWS,CHUNK]";
/// "" keeps the defaults). Reports to `err`; false on a bad value.
bool targetPlanOptions(const std::string& target, int vectorWidth, const std::string& rowSchedule,
                       codegen::PlanOptions& out, std::ostream& err);

/// Loads `file` (a .dsc program, or an ONNX model imported by frontend/) and
/// prepares function `funcName` (default: @main or the only one). Errors go to `err` as located diagnostics; returns null after any.
/// `funcWhere` (`file:line:col`), when `funcName` was read from a file: where
/// the error that the program has no such function is located.
std::unique_ptr<Frontend> loadAndPlan(const std::string& file, const std::string& funcName,
                                      const codegen::PlanOptions& opts, std::ostream& err,
                                      const frontend::ImportOptions& onnx = {}, const std::string& funcWhere = "");

/// loadAndPlan for program text read from elsewhere (a compiled model's
/// dscc_model_source, named `name` in diagnostics): file constants take the
/// model's `embedded` data where it has them, else are read relative to `sourceDir`.
std::unique_ptr<Frontend> loadAndPlanSource(const std::string& name, const std::string& source,
                                            const std::string& sourceDir, const EmbeddedFile* embedded,
                                            const std::string& funcName, const codegen::PlanOptions& opts,
                                            std::ostream& err);

/// The common tail of both: infer shapes, the default pipeline and the plan
/// of `funcName` for a loaded module (`file` names it in messages).
std::unique_ptr<Frontend> planLoaded(std::unique_ptr<Frontend> fe, const std::string& file,
                                     const std::string& funcName, const codegen::PlanOptions& opts,
                                     std::ostream& err, const std::string& funcWhere = "");

/// Reports `error` from generating fe's code: a located diagnostic at `loc`
/// (the argument, op or function it concerns) when it has one, as planning
/// errors are, else `dscc: error: FILE: cannot compile @f: ...` on `err`.
void reportCannotCompile(const Frontend& fe, const std::string& file, const std::string& error, Location loc,
                         std::ostream& err);

/// Loads the tuning file `tuning` into fe's plan (tuner::loadTuning): the
/// tuned configs' other vector widths are planned again (fe's function and
/// solver, not a second parse) into `keep`, which must outlive fe's plan.
/// Reports to `err`; false on error.
bool applyTuning(Frontend& fe, const std::string& tuning, const std::string& file, const std::string& funcName,
                 const codegen::PlanOptions& opts, std::vector<std::unique_ptr<codegen::ModelPlan>>& keep,
                 std::ostream& err);

}  // namespace dscc::tools
