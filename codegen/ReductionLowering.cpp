// Stitch and input kernels (reductions) to LLVM IR: plan, then emit each version (ReductionEmitter.h, ReductionKernels.cpp).
#include "codegen/ReductionLowering.h"

#include "codegen/KernelLowering.h"
#include "codegen/Jit.h"
#include "codegen/ReductionEmitter.h"

#include <algorithm>

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

namespace dscc::codegen {
namespace {

using namespace reduction;

LoweredKernel lower(const Operation& fusion, bool stitch, CodeModule& m, const std::string& name,
                    const KernelVariant& variant, int splitPhase = -1) {
  LoweredKernel res;
  Plan p;
  res.error = plan(fusion, stitch, p);
  if (!res.error.empty()) return res;
  if (variant.schedule == GpuSchedule::Split &&
      (p.iface.guards.phases == 0 || splitPhase < 0 || splitPhase > p.phases || variant.splitChunk <= 0 ||
       variant.splitChunk % std::max(1, variant.vectorWidth) != 0)) {
    res.error = err("a split version needs a stitch kernel or a reduction of the last axis only, a phase in [0, " +
                    std::to_string(p.phases) + "] and a chunk that is a multiple of the vector width");
    return res;
  }
  if ((variant.schedule == GpuSchedule::RowSplit || variant.schedule == GpuSchedule::TileSplit) &&
      (!p.column || (splitPhase != 0 && splitPhase != 1))) {
    res.error = err("a row-split version needs a reduction that keeps the last axis and a launch 0 or 1");
    return res;
  }
  llvm::Function* fn = createKernelFunction(m, name, &res.error);
  if (!fn) return res;
  llvm::LLVMContext& ctx = m.context();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  Emitter(p, b, variant, splitPhase).emit(fn->getArg(0), fn->getArg(1), fn->getArg(2), fn->getArg(3), fn->getArg(4));
  b.CreateRetVoid();
  res.fn = fn;
  res.iface = p.iface;
  return res;
}

}  // namespace

std::string describeStitchKernel(const Operation& fusion, KernelInterface& out) {
  Plan p;
  std::string e = plan(fusion, true, p);
  if (e.empty()) out = p.iface;
  return e;
}

LoweredKernel lowerStitchKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                const KernelVariant& v, int splitPhase) {
  return lower(fusion, true, m, name, v, splitPhase);
}

std::string describeInputKernel(const Operation& fusion, KernelInterface& out) {
  Plan p;
  std::string e = plan(fusion, false, p);
  if (e.empty()) out = p.iface;
  return e;
}

LoweredKernel lowerInputKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                               const KernelVariant& v, int splitPhase) {
  return lower(fusion, false, m, name, v, splitPhase);
}

}  // namespace dscc::codegen
