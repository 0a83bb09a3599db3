// The kind of a fused kernel (loop, input, stitch, generic, library): which lowering takes it.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/KernelKind.h"
#include "passes/FuseOps.h"

namespace dscc::fuseops {

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

}  // namespace dscc::fuseops
