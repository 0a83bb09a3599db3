// The CPU's parts of a model's host function: its kernels in the same module, the outputs it allocates, tuned dispatch.
#include "codegen/HostEmitter.h"

#include <llvm/IR/Function.h>

#include "codegen/BoundsCheck.h"

namespace dscc::codegen {

// Every version of every kernel, with internal linkage: only the host function calls them.
std::string HostEmitter::emitKernels() {
  for (const KernelPlan& k : plan_.kernels) {
    std::vector<llvm::Function*> fns;
    for (size_t v = 0; v < k.versions.size(); ++v) {
      LoweredKernel lk = lowerKernelVersion(k, v, owner_, k.functionName(v));
      if (!lk.ok()) {
        errorLoc_ = k.fusion ? k.fusion->loc : Location();
        return "kernel " + k.symbol + ": " + lk.error;
      }
      if (plan_.checkBounds) addBoundsChecks(*lk.fn, lk.iface, k.functionName(v));
      lk.fn->setLinkage(llvm::GlobalValue::InternalLinkage);
      fns.push_back(lk.fn);
    }
    kernelFns_.push_back(fns);
    // Tuned kernels (`--tuning`): every version of every configuration,
    // each name once (equal names are the same code).
    std::map<std::string, llvm::Function*> byName;
    for (size_t v = 0; v < k.versions.size(); ++v) byName[k.functionName(v)] = fns[v];
    if (k.tuning)
      for (const TunedConfig& c : k.tuning->configs)
        for (size_t v = 0; v < c.plan.versions.size(); ++v) {
          if (byName.count(c.plan.functionName(v))) continue;
          LoweredKernel lk = lowerKernelVersion(c.plan, v, owner_, c.plan.functionName(v));
          if (!lk.ok()) {
            errorLoc_ = k.fusion ? k.fusion->loc : Location();
            return "kernel " + k.symbol + " (" + c.name + "): " + lk.error;
          }
          if (plan_.checkBounds) addBoundsChecks(*lk.fn, lk.iface, c.plan.functionName(v));
          lk.fn->setLinkage(llvm::GlobalValue::InternalLinkage);
          byName[c.plan.functionName(v)] = lk.fn;
        }
    tunedFns_.push_back(std::move(byName));
  }
  return "";
}

// Output i on the CPU: the runtime checks the caller's tensor or allocates
// it (data == NULL), and the allocated flag frees it again on failure.
void HostEmitter::prepareHostOutput(llvm::Value* outputs, size_t i) {
  const Value* r = f_.returns[i];
  llvm::Value* t = b_.CreateConstInBoundsGEP1_64(tensorTy_, outputs, i);
  llvm::Value* dataSlot = b_.CreateStructGEP(tensorTy_, t, 0);
  llvm::Value* wasNull = b_.CreateIsNull(b_.CreateLoad(ptrTy(), dataSlot));
  std::vector<llvm::Value*> ds;
  for (const DimExpr& d : r->type.dims) ds.push_back(dim(d));
  checked(prepareOutput_, {ctxArg_, t, b_.getInt32(i), b_.getInt32(static_cast<int>(r->type.dtype)),
                           b_.getInt32(r->type.rank()), i64Array(ds, "out.dims")});
  b_.CreateStore(b_.CreateZExt(wasNull, b_.getInt8Ty()), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), allocated_, i));
  outData_.push_back(b_.CreateLoad(ptrTy(), dataSlot, "out." + r->name));
}

// A tuned kernel: the range of its governing size selects a configuration
// (vector width and chunk), whose own guard cascade then selects the version.
void HostEmitter::launchTuned(const KernelPlan& k, size_t kIndex, llvm::Value* inArr, llvm::Value* outArr,
                              const std::vector<llvm::Value*>& outs, llvm::Value* sizes, llvm::Value* units,
                              llvm::Value* work) {
  const KernelTuningPlan& tp = *k.tuning;
  // Every value the branches use is computed here, before them (dims are cached by expression).
  std::vector<std::vector<llvm::Value*>> holds;
  std::vector<llvm::Value*> grains;
  for (const TunedConfig& c : tp.configs) {
    holds.emplace_back();
    for (const GuardPlan& g : c.plan.guards) holds.back().push_back(g.proved ? b_.getTrue() : guardHolds(g));
    streamAligned(c.plan, outs, holds.back());
    grains.push_back(
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, b_.CreateUDiv(b_.getInt64(c.chunk), work), b_.getInt64(1)));
  }
  llvm::Value* size = dim(tp.size);
  auto* join = llvm::BasicBlock::Create(ctx_, k.symbol + ".done", hostFn_);
  auto cascade = [&](size_t ci) {
    const TunedConfig& c = tp.configs[ci];
    versionCascade(c.plan, k.symbol, k.symbol + "." + c.name + ".", holds[ci], join, [&](size_t v) {
      checked(launch_, {ctxArg_, tunedFns_[kIndex].at(c.plan.functionName(v)), inArr, outArr, sizes, units, grains[ci],
                        kernelInfo(k, c.plan.functionName(v), c.plan.versions[v].name())});
    });
  };
  for (size_t r = 0; r < tp.ranges.size(); ++r) {
    const KernelTuningPlan::Range& range = tp.ranges[r];
    llvm::Value* in = b_.CreateAnd(b_.CreateICmpSGE(size, b_.getInt64(range.from)),
                                   b_.CreateICmpSLE(size, b_.getInt64(range.to)));
    auto* body = llvm::BasicBlock::Create(ctx_, k.symbol + ".range" + std::to_string(r), hostFn_);
    auto* next = llvm::BasicBlock::Create(ctx_, k.symbol + ".range.next", hostFn_);
    b_.CreateCondBr(in, body, next);
    b_.SetInsertPoint(body);
    cascade(range.config);
    b_.SetInsertPoint(next);
  }
  cascade(tp.fallback);
  b_.SetInsertPoint(join);
}

}  // namespace dscc::codegen
