// The fusion planner: decides which ops run together as one kernel.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Groups ops into kernels using only relations the shape solver proves
/// (never a concrete size), and rewrites each group as a `fusion` op:
///  1. library: each matmul, with the transposes/reshapes feeding it (folded
///     into strides) and an elementwise epilogue over its output whose other
///     operands are bias vectors or scalars, unless that epilogue leads into a
///     reduction (then it belongs to the reduction's stitch kernel);
///  2. the other ops, visited from the last to the first: an op joins the
///     kernel of its users when all of them are in one kernel and the
///     iteration spaces agree: the same element count (loop), a reduction
///     whose input has the kernel's element count (stitch, or input when only
///     its reduced shape is consumed), or a per-row value of a row reduction
///     over the kernel's space (stitch). Reshapes between fused ops are views
///     and move into the kernel; constants, dims and scalar math stay outside.
/// Each op is in exactly one kernel (no duplication), and joining only the
/// kernel that holds every user keeps the kernel graph acyclic. With
/// --fusion-remarks each kernel records why its producers were not fused in a
/// `remarks` attribute.
bool fuse(Module& m, PassContext& ctx);

/// Prints `// kernels of @f: N (...)` and one line per kernel (kind, results).
void printKernelCount(const Module& m, std::ostream& os);

}  // namespace dscc
