// The CPU's parts of a model's host function: its kernels in the same module, the outputs it allocates, tuned dispatch.
#include "codegen/HostEmitter.h"

#include <llvm/IR/Function.h>

#include "codegen/cpu/BoundsCheck.h"
#include "codegen/KernelCommon.h"

namespace dscc::codegen {

// Version `v` of `p` as function `name` (a RowSplit version's second launch
// too, as `name.combine`), internal: only the host function calls it.
std::string HostEmitter::emitKernelVersion(const KernelPlan& p, size_t v, const std::string& name,
                                           llvm::Function*& fn) {
  bool rows = p.versions[v].schedule == GpuSchedule::RowSplit;
  for (int phase = rows ? 0 : -1; phase < (rows ? 2 : 0); ++phase) {
    std::string fname = phase == 1 ? name + ".combine" : name;
    LoweredKernel lk = lowerKernelVersion(p, v, owner_, fname, phase);
    if (!lk.ok()) return lk.error;
    if (plan_.checkBounds) {
      // The workspace is the output after the results.
      KernelInterface checked = lk.iface;
      if (rows) checked.outputs.push_back(Type{DType::I64, {rowSplitWorkspaceElements(lk.iface)}});
      addBoundsChecks(*lk.fn, checked, fname);
    }
    lk.fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    if (phase == 1) combineFns_[name] = lk.fn;
    else fn = lk.fn;
  }
  return "";
}

// Every version of every kernel.
std::string HostEmitter::emitKernels() {
  for (const KernelPlan& k : plan_.kernels) {
    std::vector<llvm::Function*> fns;
    for (size_t v = 0; v < k.versions.size(); ++v) {
      llvm::Function* fn = nullptr;
      if (std::string e = emitKernelVersion(k, v, k.functionName(v), fn); !e.empty()) {
        errorLoc_ = k.fusion ? k.fusion->loc : Location();
        return "kernel " + k.symbol + ": " + e;
      }
      fns.push_back(fn);
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
          llvm::Function* fn = nullptr;
          if (std::string e = emitKernelVersion(c.plan, v, c.plan.functionName(v), fn); !e.empty()) {
            errorLoc_ = k.fusion ? k.fusion->loc : Location();
            return "kernel " + k.symbol + " (" + c.name + "): " + e;
          }
          byName[c.plan.functionName(v)] = fn;
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
    prepareRowSplit(c.plan);
    grains.push_back(grainOf(c.chunk, work));
  }
  llvm::Value* size = dim(tp.size);
  auto* join = llvm::BasicBlock::Create(ctx_, k.symbol + ".done", hostFn_);
  auto cascade = [&](size_t ci) {
    const TunedConfig& c = tp.configs[ci];
    versionCascade(c.plan, k.symbol, k.symbol + "." + c.name + ".", holds[ci], join, [&](size_t v) {
      launchCpu(k, c.plan, v, tunedFns_[kIndex].at(c.plan.functionName(v)), c.plan.functionName(v), inArr, outArr,
                outs, sizes, units, grains[ci]);
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

// The dims launchCpu needs for `p`'s RowSplit versions, emitted before the
// version branches (dims are cached by expression).
void HostEmitter::prepareRowSplit(const KernelPlan& p) {
  for (const KernelVariant& v : p.versions)
    if (v.schedule == GpuSchedule::RowSplit) {
      const KernelGuardInputs& g = p.iface.guards;
      dim(rowSplitChunks(g.splitRows) * g.splitOuter);
      dim(rowSplitChunks(g.splitRows));
      return;
    }
}

// One CPU launch of version `v` of `p` (kernel `k`'s plan or a tuned
// configuration's): a RowSplit version is two, on the op's workspace.
void HostEmitter::launchCpu(const KernelPlan& k, const KernelPlan& p, size_t v, llvm::Function* fn,
                            const std::string& name, llvm::Value* inArr, llvm::Value* outArr,
                            const std::vector<llvm::Value*>& outs, llvm::Value* sizes, llvm::Value* units,
                            llvm::Value* grain) {
  const KernelVariant& kv = p.versions[v];
  if (kv.schedule != GpuSchedule::RowSplit) {
    checked(launch_, {ctxArg_, fn, inArr, outArr, sizes, units, grain, kernelInfo(k, name, kv.name())});
    return;
  }
  std::vector<llvm::Value*> withWs = outs;
  withWs.push_back(slotPtr_[buffers_.tempSlot.at({k.fusion, "ws"})]);
  llvm::Value* wsArr = ptrArray(withWs, k.symbol + ".out.ws");
  // Launch 0: a unit per chunk and row of outputs, each reading a chunk of
  // whole rows: one unit is plenty of work.
  const KernelGuardInputs& g = p.iface.guards;
  llvm::Value* parts = dim(rowSplitChunks(g.splitRows) * g.splitOuter);
  checked(launch_, {ctxArg_, fn, inArr, wsArr, sizes, parts, b_.getInt64(1), kernelInfo(k, name, kv.name())});
  // Launch 1: the outputs, each combining one partial per chunk.
  checked(launch_, {ctxArg_, combineFns_.at(name), inArr, wsArr, sizes, units,
                    grainOf(kChunkElements, dim(rowSplitChunks(g.splitRows))),
                    kernelInfo(k, name + ".combine", kv.name() + ".combine", /*countBytes=*/false)});
}

}  // namespace dscc::codegen
