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

LoweredKernel lower(const KernelForm& form, bool stitch, CodeModule& m, const std::string& name,
                    const KernelVariant& variant, int splitPhase = -1) {
  LoweredKernel res;
  const auto* pp = dynamic_cast<const Plan*>(&form);
  if (!pp || pp->stitch != stitch) {
    res.error = err(std::string("lower") + (stitch ? "Stitch" : "Input") + "Kernel was given another kind's form");
    return res;
  }
  const Plan& p = *pp;
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

LoweredKernel planAndLower(const Operation& fusion, bool stitch, CodeModule& m, const std::string& name,
                           const KernelVariant& variant, int splitPhase) {
  std::string e;
  std::shared_ptr<const KernelForm> form = planReductionKernel(fusion, stitch, &e);
  if (!form) {
    LoweredKernel res;
    res.error = e;
    return res;
  }
  return lower(*form, stitch, m, name, variant, splitPhase);
}

}  // namespace

std::shared_ptr<const KernelForm> planReductionKernel(const Operation& fusion, bool stitch, std::string* error) {
  auto p = std::make_shared<Plan>();
  p->stitch = stitch;
  *error = plan(fusion, stitch, *p);
  if (!error->empty()) return nullptr;
  return p;
}

std::string describeStitchKernel(const Operation& fusion, KernelInterface& out) {
  std::string e;
  if (auto form = planReductionKernel(fusion, true, &e)) out = form->iface;
  return e;
}

LoweredKernel lowerStitchKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                const KernelVariant& v, int splitPhase) {
  return planAndLower(fusion, true, m, name, v, splitPhase);
}

LoweredKernel lowerStitchKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                                const KernelVariant& v, int splitPhase) {
  return lower(form, true, m, name, v, splitPhase);
}

std::string describeInputKernel(const Operation& fusion, KernelInterface& out) {
  std::string e;
  if (auto form = planReductionKernel(fusion, false, &e)) out = form->iface;
  return e;
}

LoweredKernel lowerInputKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                               const KernelVariant& v, int splitPhase) {
  return planAndLower(fusion, false, m, name, v, splitPhase);
}

LoweredKernel lowerInputKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                               const KernelVariant& v, int splitPhase) {
  return lower(form, false, m, name, v, splitPhase);
}

}  // namespace dscc::codegen
