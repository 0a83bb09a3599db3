// Streaming (non-temporal) output stores of CPU kernel versions planned for outputs larger than the cache.
//
// A streaming version (KernelVariant::stream) states what its host guard
// checked as LLVM assumptions: every output pointer 64-byte aligned and the
// row extent a multiple of a line. After the -O3 pipeline has vectorised the
// rows, streamStores makes each vector store to an output that those facts
// prove aligned non-temporal, and fences the function's returns. A store it
// cannot prove aligned stays an ordinary store, so a version is never wrong,
// at worst not faster.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/Kernel.h"

namespace llvm {
class Function;
class IRBuilderBase;
class Module;
class Value;
}  // namespace llvm

namespace dscc::codegen {

/// Elements of the narrowest output in one 64-byte line: the row extent of a
/// streaming version is a multiple of this (GuardKind::Stream's width). 0
/// when every output is i1 (stored a byte at a time: nothing to stream).
int streamLineElements(const KernelInterface& iface);

/// Whether a streaming version of the loop or stitch kernel `fusion` can pay:
/// its body computes at most three exponentials' worth of vector math per
/// element (vectorMathCost). With the inline polynomials of
/// codegen/cpu/VectorMath.h, beyond the cache on the Zen 4 VM, non-temporal
/// stores made a tanh, a sigmoid and an erf 1.4x, the exact gelu 1.15-1.2x
/// faster, and three exps (3) and the chain's tanh times sigmoid (4) as fast
/// (bench/results/2026-12-04-epyc-experiments.md, section 14); an add 1.45x,
/// a division 1.54x, an exp 1.17x (bench/results/2026-12-04-stream-nt.md).
/// There, on the earlier machine and with slower math, tanh with sigmoid had
/// run 0.86x and an exact gelu 0.70x as fast (the bound was one exp then):
/// a kernel busy computing can lose more than the saved read, so the chain
/// (4, no gain here) stays ordinary.
bool streamingPays(const Operation& fusion);

/// In the kernel function being emitted at `b`: marks it a streaming version
/// and assumes each of `outputs` 64-byte aligned and `extent` (the row
/// length, any integer type) a multiple of `lineElements`.
void assumeStreamGuard(llvm::IRBuilderBase& b, const std::vector<llvm::Value*>& outputs, llvm::Value* extent,
                       int lineElements);

/// Whether the streaming version of the CPU stitch kernel `fusion` peels its
/// rows to the output's lines (GuardPlan::peeled: any row length and output
/// alignment): its rows are explicit vectors (rowVectorValues) and it has no
/// vector math. A softmax, bound by its exp, ran its rows of 343 1.11x
/// slower so (bench/results/2026-12-04-epyc-experiments.md, section 14).
bool peelsRows(const Operation& fusion);

/// Marks `fn` a streaming version whose code places its non-temporal stores
/// itself (streamStore): streamStores fences its returns.
void markStreaming(llvm::Function& fn);

/// A non-temporal store of the vector `v` to `ptr`, which the caller knows
/// to be 64-byte aligned (a whole line of the output).
void streamStore(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* ptr);

/// After optimisation: in every streaming version of `m`, vector stores of
/// at least 16 bytes to its outputs that are provably aligned to their size
/// (up to 64) become non-temporal, and an sfence precedes each return, so
/// the stores are visible before the thread pool hands the range back
/// (also where the version placed its own, markStreaming). Returns the
/// number of stores made non-temporal.
int streamStores(llvm::Module& m);

}  // namespace dscc::codegen
