// The pass registry and the pipeline runner, with IR printing and timing.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ir/Diagnostics.h"
#include "ir/IR.h"

namespace dscc {

struct PipelineOptions;
class SolverPool;

/// The kind of machine kernels are planned for.
enum class KernelTarget { Cpu, Gpu };

/// What a pass may use besides the module: diagnostics, options, and the
/// stream for what it prints on request (facts, statistics).
struct PassContext {
  DiagEngine& diags;
  const PipelineOptions& opts;
  std::ostream& os;
  /// Start-up time a pass spent outside its own work (creating the Z3
  /// context), reported apart by --time-passes.
  double startupMs = 0;
  /// The compile session's solvers (one per function), or null: then each
  /// pass that needs one makes its own.
  SolverPool* solvers = nullptr;
};

/// A pass rewrites a module in place; returns false after reporting errors.
using PassFn = std::function<bool(Module&, PassContext&)>;

/// One registered pass: its flag name (`--pass=NAME`), summary and body.
struct PassInfo {
  std::string name;
  std::string summary;
  PassFn run;
};

/// Every pass, in a fixed order (the order of `dscc-opt --list-passes`).
const std::vector<PassInfo>& allPasses();
/// The pass named `name`, or null.
const PassInfo* lookupPass(const std::string& name);

/// Options that apply to every pass run (`--print-ir-after-all`, ...).
struct PipelineOptions {
  bool printAfterAll = false;
  std::vector<std::string> printAfter;  // pass names
  bool timePasses = false;
  bool printShapeFacts = false;  // infer-shapes prints classes, facts, checks
  bool stats = false;            // passes print their counters
  unsigned solverTimeoutMs = 250;
  bool fusionRemarks = false;    // fuse records why producers were not fused
  /// The target the kernels are planned for: what its libraries take
  /// decides which kernels are library calls (passes/KernelAnalysis.h,
  /// gemmRefusal). Every other kind is target-independent.
  KernelTarget target = KernelTarget::Cpu;
};

/// Runs `passes` in order; prints IR and timings to `os` as asked. Stops at
/// the first failing pass and returns false. `solvers`: the session's
/// solvers, which the passes then share (null: each pass makes its own).
bool runPasses(Module& m, const std::vector<const PassInfo*>& passes, DiagEngine& diags,
               const PipelineOptions& opts, std::ostream& os, SolverPool* solvers = nullptr);

}  // namespace dscc
