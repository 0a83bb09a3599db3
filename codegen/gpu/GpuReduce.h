// Cooperative reductions on NVPTX: thread ids, warp shuffles, shared memory and barriers for the GPU schedules of reduction kernels.
//
// Every helper gives all participating threads the bit-identical result
// (butterfly shuffles combine commutative pairs; the block step combines the
// warps' values in warp order in every thread), so a row's result never
// depends on which thread stores it, and reruns are deterministic.
//
// In a module for another target (the CPU), the same operations become calls
// of `int dscc_emu_tid_x(void)`, `void dscc_emu_barrier(void)` and
// `int dscc_emu_shfl_bfly_i32(int v, int mask)`, which a test harness
// defines to run a block as threads on the CPU (test/unit/GpuScheduleTest).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <llvm/IR/IRBuilder.h>

namespace dscc::codegen {

/// Combines two partial results of one reduction (an accumulator type).
using Combine = std::function<llvm::Value*(llvm::Value*, llvm::Value*)>;

/// The thread's index in its block (tid.x), as i32.
llvm::Value* emitThreadIdX(llvm::IRBuilderBase& b);

/// A barrier of the whole block (bar.sync 0). Every thread of the block must reach it.
void emitBarrier(llvm::IRBuilderBase& b);

/// A shared-memory array of `n` elements of `t` in the module of `b`'s insertion point.
llvm::GlobalVariable* emitSharedArray(llvm::IRBuilderBase& b, llvm::Type* t, int64_t n, const std::string& name);

/// `x` combined over the 32 threads of the warp with shfl.sync.bfly (any
/// 16-, 32- or 64-bit type); every lane must execute it.
llvm::Value* emitWarpAllReduce(llvm::IRBuilderBase& b, llvm::Value* x, const Combine& combine);

/// `x` combined over the first `lanes` threads of the block (a multiple of
/// 32, the whole block): a warp reduction, one value per warp in shared
/// memory, then each thread combines the warps' values in order. Every
/// thread of the block must execute it.
llvm::Value* emitBlockAllReduce(llvm::IRBuilderBase& b, llvm::Value* x, int lanes, const Combine& combine,
                                const std::string& name);

}  // namespace dscc::codegen
