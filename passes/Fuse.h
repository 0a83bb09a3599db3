// The fusion planner: decides which ops run together as one kernel.
#pragma once

#include <cstddef>
#include <map>

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
///
/// Each kernel's kind comes from its analysis (passes/KernelAnalysis.h; a
/// matmul is a library call only where the target has a GEMM for it), which
/// gives the stitch and input kinds only with the reduction form their
/// lowering takes (passes/ReductionForm.h, the same code the code generator
/// plans from): the planner never hands codegen a kernel it cannot lower.
/// A stitch is formed with its form by construction: each op that joins a
/// stitch (the reduction that makes it one included) is checked with the
/// group, and stays out of it when the group would lack the form, so the
/// reduction gets a kernel of its own rather than a generic kernel that
/// re-reads it per element of its input (quadratic work). An input kernel
/// lacking the form is generic (linear work).
///
/// Bounded work: a kernel holds at most kMaxKernelOps ops and at most
/// kMaxStitchReductions reductions (a longer chain is cut into several
/// kernels), so planning, the codegen legality check and lowering cost a
/// bounded amount per kernel and the whole compile is linear in the program
/// (docs/hardening.md, "Bounded work").
bool fuse(Module& m, PassContext& ctx);

/// The most ops one kernel holds (reshapes that move in as views included).
inline constexpr size_t kMaxKernelOps = 256;
/// The most reductions one stitch or input kernel holds: each reduction of a
/// stitch is a phase that recomputes the chain before it, so a stitch's code
/// grows with ops times phases (16 phases of 135 ops took 22 s to compile).
/// A chain of more is cut before the op that reads the next reduction.
inline constexpr size_t kMaxStitchReductions = 4;

/// Prints `// kernels of @f: N (...)` and one line per kernel (kind, results).
void printKernelCount(const Module& m, std::ostream& os);

}  // namespace dscc
