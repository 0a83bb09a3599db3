// Generic kernels (`fusion {kind = "generic"}`): any ops, each result walked in rows or tiles around the element generator.
//
// A unit is one element of one result (or one tile of its last two dims,
// when the kernel moves data across its last axis and tiles are asked for):
// the results are laid end to end, so units = the sum of their unit counts,
// and [begin, end) covers pieces of each (the KernelFn convention of
// codegen/Kernel.h). Each element is the element generator's
// (ElementGenerator.h); this schedule only decides the loops and reads an
// input element by linearising its full index. The kernel has two versions:
// "generic" and, when every flat count may fit in int32, "i32" (the row and
// tile splits of the flat index divide in 32 bits; the ops' maps stay
// 64-bit); on the CPU each also in a vector version ("v16", "v16.i32"),
// whose rows go in blocks of W lanes through the generator's lane mode
// (ElementLanes.cpp), with a scalar tail. It is the path for what the specialised kernels (loop, stitch,
// input) do not cover, and the worst case is "not fused", never "not
// compiled".
#pragma once

#include <memory>
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
/// `vectors`: the kernel may have a vector version (KernelVariant::vectorWidth
/// > 1: its rows in blocks of that many lanes from the generator's lane mode,
/// a scalar tail), whose guard asks for the first result's rows to be at
/// least one block long (KernelGuardInputs::vectorExtent); not when the body
/// holds what lane mode does not take (reductions, argmax, matmul).
std::string describeGenericKernel(const Operation& fusion, KernelInterface& out, bool tiles = true,
                                  bool vectors = false);

/// Whether the CPU vector version of generic kernel `fusion`, in blocks of
/// `width` lanes, pays without being asked for (PlanOptions::GenericVector
/// Auto): every result's rows have one constant length of one or two whole
/// blocks, and every concat along a last axis joins constant widths that are
/// multiples of width (no block straddles its seam). Why: LLVM's own
/// widening of the scalar rows, with its per-row checks and scalar
/// remainder, left rows that short mostly scalar: whole blocks were
/// 1.1-1.8x faster on attention's data movement at head sizes 16 and 32;
/// from three blocks on, and where blocks straddle a seam, its rows were as
/// fast or faster (bench/results/2026-12-07-generic-vector-short-rows.md).
bool genericVectorPays(const Operation& fusion, int width);

/// Plans `fusion` as a generic kernel once for all its versions (`tiles`
/// and `vectors` as for describeGenericKernel); null with `error` set when
/// it cannot be lowered. `leastIndices`: every gather keeps its smallest bad
/// index in its check cell (ElementGenerator.h, gatherChecks; the GPU).
std::shared_ptr<const KernelForm> planGenericKernel(const Operation& fusion, bool tiles, bool vectors,
                                                    std::string* error, bool leastIndices = false);

/// Lowers version `v` of the generic kernel planned as `form` (from
/// planGenericKernel) to function `name` (KernelFn) in `m`. A vector version
/// needs a form planned with `vectors`.
LoweredKernel lowerGenericKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                                 const KernelVariant& v = {});

/// planGenericKernel (with vectors where `v` is a vector version) then
/// lowerGenericKernel: for callers that lower one version.
LoweredKernel lowerGenericKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                 const KernelVariant& v = {}, bool tiles = true);

}  // namespace dscc::codegen
