// The compile-time plan of a model: its kernels in order, each kernel's guards (proved, or checked at run time) and versions.
//
// `dscc compile` emits code from this plan and `dscc explain` prints it, so
// both always agree on which version runs at which sizes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/Kernel.h"
#include "ir/IR.h"

namespace dscc {
class ShapeSolver;
}

namespace dscc::codegen {

struct GemmPlan;

/// The guards a kernel's versions can assume.
enum class GuardKind { Vector, Index32, BroadcastFree };

/// One guard of one kernel and what the solver made of it.
struct GuardPlan {
  GuardKind kind = GuardKind::Vector;
  /// Proved from the facts: every version assumes it and no fallback without it exists.
  bool proved = false;
  /// The condition as text, e.g. `D % 8 == 0`, `N*D <= 2147483647`, `S == T`.
  std::string text;
  /// The operands of the condition (see holdsAt).
  DimExpr extent;                                          ///< Vector
  std::vector<DimExpr> counts;                             ///< Index32
  std::vector<std::pair<DimExpr, DimExpr>> pairs;          ///< BroadcastFree
  int width = 8;                                           ///< Vector
  bool aligned = false;  ///< Vector: also every buffer aligned to width elements (tested by the host only)
  /// Evaluates the condition at concrete sizes; nullopt (with `err`) if a dim cannot be evaluated.
  std::optional<bool> holdsAt(const DimBindings& env, std::string* err = nullptr) const;
};

/// One kernel of the model.
struct KernelPlan {
  const Operation* fusion = nullptr;
  std::string kind;    ///< loop, stitch, input, library
  std::string symbol;  ///< the base of its functions' names, e.g. `bert_layer.k3.p`
  /// The interface of the generated kernel (for library kernels: of the epilogue; see hasKernel).
  KernelInterface iface;
  /// False for a library kernel without an epilogue: only the BLAS runs.
  bool hasKernel = true;
  std::vector<GuardPlan> guards;
  /// Versions, most specialised first; the last one assumes only proved guards (the fallback).
  std::vector<KernelVariant> versions;
  /// For library kernels: the BLAS call and the epilogue.
  std::shared_ptr<GemmPlan> gemm;

  /// The name of the function of version `v`.
  std::string functionName(size_t v) const { return symbol + "." + versions[v].name(); }
  /// The index of the first version whose guards hold at `env` (the one the host code calls).
  size_t chooseVersion(const DimBindings& env) const;
};

/// Options of the planner.
struct PlanOptions {
  /// The width of vector versions (elements); 1 disables them.
  int vectorWidth = 8;
  /// Generate index32 and broadcast-free versions.
  bool index32 = true, broadcastFree = true;
  /// Vector versions also need aligned buffers (the GPU's vector accesses):
  /// the vector guard then always includes a run-time pointer test.
  bool alignedVectors = false;
};

/// The plan of one function.
struct ModelPlan {
  const Function* func = nullptr;
  std::vector<KernelPlan> kernels;  ///< in program order
};

/// Describes every kernel of `f` (after the default pipeline) and decides its
/// guards with `solver` (which holds f's facts and checks). Returns "" or the
/// first kernel that cannot be compiled and why.
std::string planModel(const Function& f, ShapeSolver& solver, const PlanOptions& opts, ModelPlan& out);

/// A ShapeSolver loaded with f's `where` facts and its `check` ops' relations.
std::unique_ptr<ShapeSolver> makeModelSolver(const Function& f);

/// Makes `name` a C identifier: characters other than [A-Za-z0-9_] become '_'.
std::string cIdentifier(const std::string& name);

}  // namespace dscc::codegen
