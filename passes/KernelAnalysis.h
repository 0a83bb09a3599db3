// What a fused kernel is, computed once from its ops: its kind (which lowering takes it), its reductions, why it is generic.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/KernelKind.h"
#include "passes/FuseOps.h"
#include "passes/Pipeline.h"
#include "passes/ReductionForm.h"

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
  /// The target: which matmuls are GEMM library calls (gemmRefusal).
  KernelTarget target;
  std::function<bool(const DimExpr&, const DimExpr&)> same;
  std::function<bool(const Value*, const std::set<const Operation*>&)> yieldedBy;
};

/// Why `matmul` is no GEMM call on `target` ("" when it is one): the GEMM
/// routines take f32 (and f16, bf16 on the GPU), and batch dims that are
/// equal or 1 (one that may broadcast only at run time has no strided-batch
/// layout). A kernel whose matmul is refused is generic (a loop over K per
/// element).
std::string gemmRefusal(const Operation& matmul, KernelTarget target);

/// The kind of the kernel holding `ops` (in program order): Library with a
/// matmul the target has a GEMM for (gemmRefusal, else Generic), or with a
/// conv or pool (oneDNN calls; the GPU targets refuse them for now); Generic when an op's index map is not the kernel's index
/// (readsAtKernelIndex: data movement, argmax), which only the element
/// generator lowers, or when the kernel's reductions or results are not in
/// the form the input, stitch or loop lowering takes (`why` says which op);
/// else Stitch, Input or Loop by how its reductions are read.
KernelKind kernelKind(const std::vector<Operation*>& ops, const KindQueries& q, std::string& why);

/// The analysis of the kernel holding `ops` (in program order): its
/// kernelKind, with why it is generic, and its reductions.
KernelAnalysis analyzeKernel(const std::vector<Operation*>& ops, const KindQueries& q);

/// Checks the fusion op `fusion` (formed from a group) against the form of
/// its kind: a stitch or input kernel must have the reduction form
/// (formReductions), which the kind analysis of the group does not decide
/// alone (it sees dims as written, not the frames). "" when it has, else why
/// not. The lowering asks the same form, so a kernel this takes is lowered.
std::string checkKernelForm(const Operation& fusion);

}  // namespace dscc::fuseops
