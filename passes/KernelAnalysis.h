// What a fused kernel is, computed once from its ops: its kind (which lowering takes it), its reductions, why it is generic.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/KernelKind.h"
#include "passes/FuseOps.h"

namespace dscc::fuseops {

/// One fused kernel as the planner forms it: the facts about its ops that
/// the planner needs after forming it (its kind, for the `kind` attribute
/// and the legality check; its reductions, to take one out of a refused
/// stitch), computed once rather than asked of the ops again.
struct KernelAnalysis {
  KernelKind kind = KernelKind::Loop;
  /// Why the planner named the kernel Generic: which op or result keeps it
  /// from the loop, input and stitch lowerings (its fusion remark). "" for
  /// the other kinds, and for a kernel made Generic later because the code
  /// generator refused its kind (legalize records that remark itself).
  std::string whyGeneric;
  /// Its reductions (Cls::Reduction: reduce_* and argmax), in program order.
  std::vector<const Operation*> reductions;
};

/// What kernelKind asks of the planner: its free ops, dim equality under the
/// function's facts, and whether a value leaves a set of ops (returned or read
/// outside it).
struct KindQueries {
  const std::set<const Operation*>& freeOps;
  std::function<bool(const DimExpr&, const DimExpr&)> same;
  std::function<bool(const Value*, const std::set<const Operation*>&)> yieldedBy;
};

/// The kind of the kernel holding `ops` (in program order): Library with a
/// matmul; Generic when an op's index map is not the kernel's index
/// (readsAtKernelIndex: data movement, argmax), which only the element
/// generator lowers, or when the kernel's reductions or results are not in
/// the form the input, stitch or loop lowering takes (`why` says which op);
/// else Stitch, Input or Loop by how its reductions are read.
KernelKind kernelKind(const std::vector<Operation*>& ops, const KindQueries& q, std::string& why);

/// The analysis of the kernel holding `ops` (in program order): its
/// kernelKind, with why it is generic, and its reductions.
KernelAnalysis analyzeKernel(const std::vector<Operation*>& ops, const KindQueries& q);

}  // namespace dscc::fuseops
