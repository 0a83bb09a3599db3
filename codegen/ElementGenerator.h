// Generic kernels (`fusion {kind = "generic"}`): any ops, lowered by one element generator over the ops' index maps.
//
// The generator computes "the value of %v at index i" for every op of the IR
// that can sit in a kernel (elementwise, broadcast, reshape, transpose,
// slice, concat, gather, iota, reductions over any axes, argmax), as XLA's
// elemental emitter does: each op asks its operands for the elements its
// index map (ir/IndexMap.h) names, values are memoised per (value, index)
// within the scope where they dominate, and reductions open a loop nest over
// their reduced axes with the kept ones taken from the output index.
//
// A unit is one element of one result: the results are laid end to end, so
// units = the sum of their element counts, and [begin, end) covers pieces of
// each (the KernelFn convention of codegen/Kernel.h). The kernel has two
// versions: "generic" and, when every flat count may fit in int32, "i32"
// (the row and tile splits of the flat index divide in 32 bits; the ops'
// maps stay 64-bit). It is the path for what the specialised kernels
// (loop, stitch, input) do not cover, and the worst case is "not fused",
// never "not compiled".
//
// Numerics are the interpreter's: elementwise ops through ElementOps, float
// sums, means and products accumulated in f64 in row-major order of the
// reduced elements (the interpreter's order, so sums agree to the bit), max
// and min propagating NaN, integers in i64 wrapping to their width; argmax
// takes the first maximum and the first NaN. Where the interpreter reports a
// data error the generated code gives a defined value: a gather index out of
// range is clamped into the dim, max/min of nothing is -inf/+inf (integers:
// the type's min/max), argmax of nothing 0, an integer mean of nothing 0.
#pragma once

#include <string>

#include "codegen/Kernel.h"
#include "ir/IR.h"

namespace dscc::codegen {

class CodeModule;

/// Checks that `fusion` can be lowered as a generic kernel (whatever its
/// kind attribute says) and describes its interface. Returns "" or why not
/// (an op no kernel can hold: matmul, composites not yet decomposed,
/// constants inside the body). `tiles`: a kernel whose transpose moves the
/// last axis walks its results in tiles (the CPU's caches); false gives one
/// element per unit (the GPU: a thread per element, neighbours coalesced).
std::string describeGenericKernel(const Operation& fusion, KernelInterface& out, bool tiles = true);

/// Lowers `fusion` as a generic kernel to function `name` (KernelFn) in `m`;
/// `tiles` as for describeGenericKernel (they must agree).
LoweredKernel lowerGenericKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                 const KernelVariant& v = {}, bool tiles = true);

}  // namespace dscc::codegen
