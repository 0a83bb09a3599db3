// Internal to codegen/gpu: the thread-unit loop that the GPU's kernels of their own (scatter, cumsum, windows) are
// written in, and the small LLVM helpers they share. Includes LLVM: only codegen's .cpp files include it.
//
// A body is a KernelFn (codegen/Kernel.h) over thread units [begin, end): codegen/gpu/GpuKernels.cpp wraps it in a
// grid-stride PTX entry (a unit per thread per trip), and the tests JIT it for the CPU and spread the units over
// std::threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"
#include "codegen/Jit.h"
#include "ir/DType.h"
#include "ir/DimExpr.h"

namespace dscc::codegen {

/// The emitter of one thread unit: `ins`/`outs` are the kernel's pointer arrays' loaded elements, `u` the unit.
struct Unit {
  llvm::IRBuilder<>& b;
  std::vector<llvm::Value*> ins, outs;
  DimEmitter& dims;
  llvm::Value* u;
};

/// Adds a body `name` (KernelFn) looping over thread units [begin, end) with `nIn` inputs and `nOut` outputs;
/// `unit` emits one unit's work and leaves the builder in a block that falls through to the next unit. The dims
/// it emits must be among `dimsUsed`: those are emitted once, before the loop (DimEmitter caches a dim in the block
/// that first emits it, so one first emitted inside a unit would not dominate its later uses). "" or an error.
std::string unitLoop(CodeModule& m, const std::string& name, size_t nIn, size_t nOut,
                     const std::vector<std::string>& symbols, const std::vector<const DimExpr*>& dimsUsed,
                     const std::function<void(Unit&)>& unit);

/// The symbols of `ds`, sorted: a body's `sizes` in order.
std::vector<std::string> symbolsOf(const std::vector<const DimExpr*>& ds);

/// Runs `then` (which leaves the builder in a block falling through) only when `cond` holds.
void when(llvm::IRBuilder<>& b, llvm::Value* cond, const char* name, const std::function<void()>& then);

/// A loop over i in [lo, hi) (signed i64; no trip when lo >= hi); `body(i)` leaves the builder in a block that
/// falls through.
void forRange(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const char* name,
              const std::function<void(llvm::Value*)>& body);

/// `d` (f64) rounded to f16 or bf16 once, as Tensor::setF does (through f32 rounded to odd), in storage form.
llvm::Value* halfFromDouble(llvm::IRBuilder<>& b, DType dt, llvm::Value* d);

}  // namespace dscc::codegen
