// Lowering of reduction kernels (`fusion {kind = "stitch"}` and `{kind = "input"}`) to LLVM IR.
//
// Both kinds use the common calling convention of codegen/Kernel.h (KernelFn).
//
// Stitch kernels (row-wise softmax, layer_norm, rms_norm): every reduction
// reduces the last axis of one iteration space [outer..., L]. A unit is one
// row (units = product of the outer dims, workPerUnit = L). Each row runs in
// phases: a phase is one loop over the row that evaluates the elementwise
// chain feeding its reductions (recomputed from the inputs, no scratch
// memory) using the per-row scalars of earlier phases; the last loop stores
// the full-size results. Per-row results ([outer..., 1] or [outer...]) are
// stored once per row.
//
// Input kernels (column sums, row reductions with a per-row epilogue): every
// reduction reduces the same axes of one same-shaped input. A unit is one
// output element of the kept dims (workPerUnit = the product of the reduced
// dims). When the last axis is kept, a range of outputs is processed in
// blocks of consecutive columns with a stack accumulator array, the rows
// looped outside, so reads are contiguous; when the last axis is reduced,
// each output loops over its reduced elements, innermost along the row.
//
// Numerics follow the interpreter (ir/InterpReduce.cpp): floats of f32 sum,
// mean and prod accumulate in f64 (as the interpreter does), max and min
// propagate NaN; integers accumulate in i64 and wrap to their width at the
// end, integer mean truncates. Where the interpreter reports an error,
// generated code gives a defined value: max/min over an empty extent give
// -inf/+inf (integers: the type's min/max), an integer mean of nothing 0.
// Summation order differs from the interpreter's (partial sums per lane).
#pragma once

#include <memory>
#include <string>

#include "codegen/Kernel.h"
#include "ir/IR.h"

namespace dscc::codegen {

class CodeModule;

/// Plans `fusion` as a stitch kernel (`stitch`) or an input kernel once for
/// all its versions: its frames, phases and interface. Null with `error` set
/// when it cannot be lowered (the describe functions' reasons).
std::shared_ptr<const KernelForm> planReductionKernel(const Operation& fusion, bool stitch, std::string* error);

/// Checks that `fusion` (kind "stitch") can be lowered and describes its
/// interface. Returns "" or why not (an unsupported op or dtype, a reduction
/// over other than the last axis, results of an unsupported shape).
std::string describeStitchKernel(const Operation& fusion, KernelInterface& out);

/// Lowers the stitch kernel `fusion` to function `name` (KernelFn convention)
/// in `m`, the version `v` (its assumptions are guarded by the host). On an
/// unsupported kernel returns the error and adds no function.
///
/// A Split version (GPU) is lowered once per launch: `splitPhase` k in
/// [0, phases) reduces phase k over one chunk per unit and writes each
/// reduction's partial to the workspace, after combining the earlier phases'
/// partials; k = phases stores the results. The workspace is an extra output
/// (outputs[results]) of units x chunks x reductions 8-byte slots, and a
/// unit is one (row, chunk): units = rows * ceil(L / splitChunk).
LoweredKernel lowerStitchKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                const KernelVariant& v = {}, int splitPhase = -1);

/// Checks that `fusion` (kind "input") can be lowered and describes its
/// interface. Returns "" or why not.
std::string describeInputKernel(const Operation& fusion, KernelInterface& out);

/// Lowers the input kernel `fusion` to function `name` (KernelFn convention)
/// in `m`, the version `v`. On an unsupported kernel returns the error and
/// adds no function.
/// Split versions as for lowerStitchKernel, when only the last axis is reduced.
/// A RowSplit version (CPU, the last axis kept) is lowered once per launch:
/// `splitPhase` 0 sums chunks of rows into the workspace (outputs[results],
/// rowSplitChunks x reductions x units 8-byte slots; its units are chunks x
/// the outputs over the last axis' length), 1 combines them and stores the
/// results (units as usual).
LoweredKernel lowerInputKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                               const KernelVariant& v = {}, int splitPhase = -1);

/// As lowerStitchKernel and lowerInputKernel, from the kernel's form
/// (planReductionKernel with the same `stitch`), which every version shares.
LoweredKernel lowerStitchKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                                const KernelVariant& v = {}, int splitPhase = -1);
LoweredKernel lowerInputKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                               const KernelVariant& v = {}, int splitPhase = -1);

}  // namespace dscc::codegen
