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
/// the planner records (its kind, legality included, for the `kind`
/// attribute; its reductions), computed once rather than asked of the ops
/// again.
struct KernelAnalysis {
  KernelKind kind = KernelKind::Loop;
  /// Why the planner named the kernel Generic: which op or result keeps it
  /// from the loop, input and stitch lowerings, or which form it lacks (its
  /// fusion remark). "" for the other kinds.
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
/// kernelKind, with why it is generic, and its reductions. A stitch or input
/// kind is given only with its form (checkGroupForm); a group without it is
/// Generic, with the remark "it lacks the <kind> form" (the planner forms
/// stitches only with their form, so that remark means a planner bug: the
/// random program checks look for it).
KernelAnalysis analyzeKernel(const std::vector<Operation*>& ops, const KindQueries& q);

/// The KernelOps of a group (`ops` in program order) as the fusion op made
/// of it holds them: the values it reads from outside, in first-use order,
/// and the values `yieldedBy` says leave it.
KernelOps groupKernelOps(const std::vector<Operation*>& ops,
                         const std::function<bool(const Value*, const std::set<const Operation*>&)>& yieldedBy);

/// Checks the group `ops` against the form of kind `k`: a stitch or input
/// kernel must have the reduction form (formReductions), which the kind
/// analysis of the group does not decide alone (it sees dims as written, not
/// the frames). "" when it has (or `k` has no such form), else why not. The
/// lowering plans from the same form, so a kernel this takes is lowered.
std::string checkGroupForm(const std::vector<Operation*>& ops, KernelKind k, const KindQueries& q);

}  // namespace dscc::fuseops
