// The GPU's parts of a model's host function: the CUDA runtime, the module, device outputs, device copies of host values, kernel launches.
#include "codegen/HostEmitter.h"
#include "codegen/gpu/GpuScatter.h"
#include "ir/IndexMap.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

namespace dscc::codegen {

// Device memory, kernels and the BLAS go through the CUDA runtime
// (runtime/dscc_cuda.h); declared after, and replacing, the CPU's allocator and BLAS.
void HostEmitter::declareGpuRuntime() {
  auto* p = ptrTy();
  alloc_ = declare("dscc_cuda_alloc", p, {p, i64()});
  free_ = declare("dscc_cuda_free", b_.getVoidTy(), {p, p});
  gemm_ = declare("dscc_cuda_sgemm_nd", i32(),
                  {p, i32(), i32(), i64(), i64(), i64(), p, i64(), p, i64(), p, i64(), i32(), p, p, p, p, i32()});
  // f16 and bf16 matmuls: tensor-op cuBLAS, fp32 accumulation.
  hgemm_ = declare("dscc_cuda_hgemm_nd", i32(),
                   {p, i32(), i32(), i64(), i64(), i64(), p, i64(), p, i64(), p, i64(), i32(), p, p, p, p, i32()});
  bgemm_ = declare("dscc_cuda_bgemm_nd", i32(),
                   {p, i32(), i32(), i64(), i64(), i64(), p, i64(), p, i64(), p, i64(), i32(), p, p, p, p, i32()});
  moduleGet_ = declare("dscc_cuda_module_get", i32(), {p, p, p, p});
  cudaLaunch_ = declare("dscc_cuda_launch", i32(), {p, p, p, i64(), i32(), i32(), p});
  toDevice_ = declare("dscc_cuda_copy_to_device", i32(), {p, p, p, i64()});
  deviceCopy_ = declare("dscc_cuda_copy_device", i32(), {p, p, p, i64()});
  sync_ = declare("dscc_cuda_synchronize", i32(), {p});
  toHost_ = declare("dscc_cuda_copy_to_host", i32(), {p, p, p, i64()});
  memsetZero_ = declare("dscc_cuda_memset_zero", i32(), {p, p, i64()});
}

// The module: the cubin for the target when ptxas made one, PTX as the
// fallback the driver compiles (cached per context by the runtime).
void HostEmitter::loadGpuModule() {
  auto blob = [&](const std::string& bytes, const std::string& name) -> llvm::Value* {
    auto* init = llvm::ConstantDataArray::getString(ctx_, bytes, /*AddNull=*/true);
    auto* g = new llvm::GlobalVariable(mod_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, name);
    g->setAlignment(llvm::Align(64));
    return g;
  };
  llvm::Value* ptx = blob(gpu_->ptx, "gpu.ptx");
  llvm::Value* image = gpu_->cubin.empty() ? ptx : blob(gpu_->cubin, "gpu.cubin");
  llvm::Value* slot = entryAlloca(ptrTy(), 1, "gpu.module");
  checked(moduleGet_, {ctxArg_, image, gpu_->cubin.empty() ? llvm::ConstantPointerNull::get(b_.getPtrTy()) : ptx, slot});
  module_ = b_.CreateLoad(ptrTy(), slot, "module");
}

// Output i on the device: the caller's buffer after the runtime's shape
// check, or (data == NULL) a new device buffer, freed again on failure.
void HostEmitter::prepareDeviceOutput(llvm::Value* outputs, size_t i) {
  const Value* r = f_.returns[i];
  llvm::Value* t = b_.CreateConstInBoundsGEP1_64(tensorTy_, outputs, i);
  llvm::Value* dataSlot = b_.CreateStructGEP(tensorTy_, t, 0);
  std::vector<llvm::Value*> ds;
  for (const DimExpr& d : r->type.dims) ds.push_back(dim(d));
  llvm::Value* nbytes = bytes(r->type);  // emitted before the branch: dims are cached
  llvm::Value* given = b_.CreateLoad(ptrTy(), dataSlot);
  auto* mine = llvm::BasicBlock::Create(ctx_, "out.alloc", hostFn_);
  auto* theirs = llvm::BasicBlock::Create(ctx_, "out.given", hostFn_);
  auto* next = llvm::BasicBlock::Create(ctx_, "out.ready", hostFn_);
  b_.CreateCondBr(b_.CreateIsNull(given), mine, theirs);
  b_.SetInsertPoint(theirs);
  checked(prepareOutput_, {ctxArg_, t, b_.getInt32(i), b_.getInt32(static_cast<int>(r->type.dtype)),
                           b_.getInt32(r->type.rank()), i64Array(ds, "out.dims")});
  b_.CreateBr(next);
  b_.SetInsertPoint(mine);
  llvm::Value* rank = b_.CreateLoad(i32(), b_.CreateStructGEP(tensorTy_, t, 2));
  require(b_.CreateICmpEQ(rank, b_.getInt32(r->type.rank())), kShapeMismatch,
          escape("output " + std::to_string(i) + " is " + r->type.str() + "; the caller's tensor has rank ") + "%d",
          {rank});
  llvm::Value* dimsPtr = b_.CreateLoad(ptrTy(), b_.CreateStructGEP(tensorTy_, t, 1));
  if (r->type.rank() > 0)
    require(b_.CreateIsNotNull(dimsPtr), kInvalidArgument,
            escape("output " + std::to_string(i) + ": dims is NULL; the caller must give room for " +
                   std::to_string(r->type.rank()) + " dims"));
  for (size_t d = 0; d < ds.size(); ++d) b_.CreateStore(ds[d], b_.CreateConstInBoundsGEP1_64(i64(), dimsPtr, d));
  b_.CreateStore(b_.getInt32(static_cast<int>(r->type.dtype)), b_.CreateStructGEP(tensorTy_, t, 3));
  llvm::Value* mem = b_.CreateCall(alloc_, {ctxArg_, nbytes});
  auto* ok = llvm::BasicBlock::Create(ctx_, "out.alloc.ok", hostFn_);
  auto* bad = llvm::BasicBlock::Create(ctx_, "out.alloc.bad", hostFn_);
  b_.CreateCondBr(b_.CreateIsNull(mem), bad, ok);
  b_.SetInsertPoint(bad);
  fail(b_.getInt32(kOutOfMemory));  // DSCC_OUT_OF_MEMORY; the runtime set the message
  b_.SetInsertPoint(ok);
  b_.CreateStore(mem, dataSlot);
  b_.CreateStore(b_.getInt8(1), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), allocated_, i));
  b_.CreateBr(next);
  b_.SetInsertPoint(next);
  outData_.push_back(b_.CreateLoad(ptrTy(), dataSlot, "out." + r->name));
}

// Frees output tensor `tensor`'s device buffer, which this call allocated.
void HostEmitter::freeDeviceOutput(llvm::Value* tensor) {
  llvm::Value* slot = b_.CreateStructGEP(tensorTy_, tensor, 0);
  b_.CreateCall(free_, {ctxArg_, b_.CreateLoad(ptrTy(), slot)});
  b_.CreateStore(llvm::ConstantPointerNull::get(b_.getPtrTy()), slot);
}

void HostEmitter::mirrorToDevice(const Value* v) {
  if (buffers_.mirror.count(v))
    checked(toDevice_, {ctxArg_, slotPtr_[buffers_.mirror.at(v)], hostAddress(v), bytes(v->type)});
}

void HostEmitter::prepareGpuLaunch(const KernelPlan& k, size_t kIndex, const std::vector<llvm::Value*>& ins,
                                   const std::vector<llvm::Value*>& outs, std::vector<llvm::Value*>& holds) {
  // Dim values are cached by expression, so every one a version's launch
  // needs is emitted here, before the branches.
  for (const GpuKernel& g : gpu_->kernels)
    if (g.kernel == kIndex && g.copyOf.empty()) {
      for (const std::string& sym : g.symbols) dim(DimExpr::symbol(sym));
      dim(g.threadUnits);
    }
  // Vector versions on the GPU also need every buffer 16-byte aligned.
  for (size_t gi = 0; gi < k.guards.size(); ++gi) {
    if (!k.guards[gi].aligned) continue;
    for (llvm::Value* p : ins) holds[gi] = b_.CreateAnd(holds[gi], alignedTo(p, 16));
    for (llvm::Value* p : outs) holds[gi] = b_.CreateAnd(holds[gi], alignedTo(p, 16));
  }
}

void HostEmitter::launchGpuVersion(const KernelPlan& k, size_t kIndex, size_t v,
                                   const std::vector<llvm::Value*>& ins, const std::vector<llvm::Value*>& outs) {
  if (!phasedSchedule(k.versions[v].schedule)) {
    launchGpu(gpuKernel(kIndex, v, ""), ins, outs);
    return;
  }
  // One launch per phase (a tile split's two), in order, on the op's workspace.
  std::vector<llvm::Value*> withWs = outs;
  withWs.push_back(slotPtr_[buffers_.tempSlot.at({k.fusion, "ws"})]);
  for (const GpuKernel& g : gpu_->kernels)
    if (g.kernel == kIndex && g.version == v && g.copyOf.empty()) launchGpu(g, ins, withWs);
}

// A scatter or cumsum (codegen/gpu/GpuScatter.h), a conv, conv_transpose or pool (codegen/gpu/GpuWindow.h) or an
// rnn (codegen/gpu/GpuRecurrent.h): its launches in order on the stream, each reading the fusion's operands and
// writing the result and the op's workspace (a scatter without reduction, a cumsum, an rnn). A cumsum takes its
// chunked form (version 1) when its columns are few and longer than a chunk; an rnn's per-step launches run in a
// loop over the sequence's steps.
std::string HostEmitter::launchGpuData(const Operation& op, size_t kIndex) {
  const KernelPlan& k = plan_.kernels[kIndex];
  std::vector<llvm::Value*> ins, outs{address(op.result(0))};
  for (const Value* v : op.operands) ins.push_back(address(v));
  if (auto ws = buffers_.tempSlot.find({&op, "ws"}); ws != buffers_.tempSlot.end()) outs.push_back(slotPtr_[ws->second]);
  // Every dim a launch needs, before the branch (dim values are cached by expression).
  for (const GpuKernel& g : gpu_->kernels)
    if (g.kernel == kIndex) {
      for (const std::string& sym : g.symbols) dim(DimExpr::symbol(sym));
      dim(g.threadUnits);
    }
  auto launchVersion = [&](size_t v) {
    for (const GpuKernel& g : gpu_->kernels)
      if (g.kernel == kIndex && g.version == v) launchGpu(g, ins, outs);
  };
  if (k.rnn) {
    // Before the loop (step index 0), each step s in [0, S) in order, after it (step index S).
    auto launchWhen = [&](DataLaunchWhen when, llvm::Value* step) {
      for (const GpuKernel& g : gpu_->kernels)
        if (g.kernel == kIndex && g.when == when) launchGpu(g, ins, outs, step);
    };
    llvm::Value* steps = dim(k.rnn->seq);
    launchWhen(DataLaunchWhen::Once, b_.getInt64(0));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ctx_, k.symbol + ".step", hostFn_);
    auto* done = llvm::BasicBlock::Create(ctx_, k.symbol + ".steps.done", hostFn_);
    b_.CreateCondBr(b_.CreateICmpSGT(steps, b_.getInt64(0)), loop, done);
    b_.SetInsertPoint(loop);
    llvm::PHINode* s = b_.CreatePHI(i64(), 2, "step");
    s->addIncoming(b_.getInt64(0), pre);
    launchWhen(DataLaunchWhen::EachStep, s);
    llvm::Value* next = b_.CreateAdd(s, b_.getInt64(1));
    s->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, steps), loop, done);
    b_.SetInsertPoint(done);
    launchWhen(DataLaunchWhen::AfterSteps, steps);
    return "";
  }
  if (!k.scan) {
    noteGpuCheckSizes(kIndex);
    launchVersion(0);
    return "";
  }
  llvm::Value* chunked = b_.CreateAnd(b_.CreateICmpULT(dim(k.scan->outer * k.scan->inner), b_.getInt64(kGpuScanChunkColumnsMax)),
                                      b_.CreateICmpUGT(dim(k.scan->len), b_.getInt64(kGpuScanChunk)));
  auto* longBB = llvm::BasicBlock::Create(ctx_, k.symbol + ".chunks", hostFn_);
  auto* colBB = llvm::BasicBlock::Create(ctx_, k.symbol + ".columns", hostFn_);
  auto* join = llvm::BasicBlock::Create(ctx_, k.symbol + ".done", hostFn_);
  b_.CreateCondBr(chunked, longBB, colBB);
  b_.SetInsertPoint(longBB);
  launchVersion(1);
  b_.CreateBr(join);
  b_.SetInsertPoint(colBB);
  launchVersion(0);
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  return "";
}

const GpuKernel& HostEmitter::gpuKernel(size_t kernel, size_t version, const std::string& copyOf) {
  for (const GpuKernel& g : gpu_->kernels)
    if (g.kernel == kernel && g.copyOf == copyOf && (!copyOf.empty() || g.version == version)) return g;
  static const GpuKernel none;
  return none;  // planned together with the PTX, so not reached
}

// One launch: pointers, then the kernel's symbols, then its thread units;
// a 1-D grid of 256-thread blocks, capped (the kernels loop grid-stride).
void HostEmitter::launchGpu(const GpuKernel& g, const std::vector<llvm::Value*>& ins, const std::vector<llvm::Value*>& outs,
                            llvm::Value* step) {
  std::vector<llvm::Value*> params;
  auto param = [&](llvm::Value* v, llvm::Type* t) {
    llvm::Value* slot = entryAlloca(t, 1, "arg");
    b_.CreateStore(v, slot);
    params.push_back(slot);
  };
  for (llvm::Value* p : ins) param(p, ptrTy());
  for (llvm::Value* p : outs) param(p, ptrTy());
  if (g.checks > 0)
    param(b_.CreateConstInBoundsGEP1_64(i64(), checkWords_, 2 * checkBase_.at(g.kernel)), ptrTy());
  for (const std::string& sym : g.symbols) param(dim(DimExpr::symbol(sym)), i64());
  if (g.takesStep) param(step ? step : b_.getInt64(0), i64());
  llvm::Value* units = dim(g.threadUnits);
  param(units, i64());
  const int64_t block = kGpuBlockSize;
  llvm::Value* blocks = b_.CreateUDiv(b_.CreateAdd(units, b_.getInt64(block - 1)), b_.getInt64(block));
  llvm::Value* grid = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, blocks, b_.getInt64(1 << 20));
  checked(cudaLaunch_, {ctxArg_, module_, str(g.entry), grid, b_.getInt32(block), b_.getInt32(0),
                        ptrArray(params, g.entry + ".params")});
}

// Index checks. The CPU fails a call at the kernel that reads a bad gather or
// scatter index (HostEmitter::checkGather, dscc_scatter); a GPU kernel runs
// on while the host goes ahead, so its kernels report into a block of check
// words instead (2 i64 per check: a flag and the smallest bad index,
// ElementGenerator.h's encoding), zeroed once per call after the arena's
// slots, and read back once, after the last kernel, in place of the final
// synchronisation. The first flagged check in program order fails the call
// with the CPU's message, naming the smallest bad index (the indices' buffer
// may hold another value by then, so the host cannot look for the first).
void HostEmitter::planGpuChecks() {
  walkOps(f_.ops, [&](Operation& op) {
    const KernelPlan* k = kernelOf(plan_, &op);
    if (!k) return;
    size_t ki = static_cast<size_t>(k - plan_.kernels.data());
    if (checkBase_.count(ki)) return;
    std::vector<const Operation*> checked = gpuIndexChecks(*k);
    if (checked.empty()) return;
    checkBase_[ki] = gpuChecks_.size();
    for (const Operation* c : checked) {
      llvm::Value* size = entryAlloca(i64(), 1, "check.size");
      b_.CreateStore(b_.getInt64(0), size);
      gpuChecks_.push_back({c, ki, size});
    }
  });
}

void HostEmitter::noteGpuCheckSizes(size_t kIndex) {
  auto base = checkBase_.find(kIndex);
  if (base == checkBase_.end()) return;
  for (size_t c = base->second; c < gpuChecks_.size() && gpuChecks_[c].kernel == kIndex; ++c) {
    const Operation& op = *gpuChecks_[c].op;
    const KernelPlan& k = plan_.kernels[kIndex];
    DimExpr size = k.scatter ? k.scatter->rows : op.operands[0]->type.dims.at(opAxis(op, op.operands[0]->type.rank()));
    b_.CreateStore(dim(size), gpuChecks_[c].size);
  }
}

void HostEmitter::reportGpuChecks() {
  if (gpuChecks_.empty()) {
    checked(sync_, {ctxArg_});
    return;
  }
  size_t n = gpuChecks_.size();
  llvm::Value* cell = entryAlloca(i64(), 2 * n, "checks.host");
  checked(toHost_, {ctxArg_, cell, checkWords_, b_.getInt64(static_cast<int64_t>(16 * n))});
  for (size_t c = 0; c < n; ++c) {
    const GpuCheck& gc = gpuChecks_[c];
    const Operation& op = *gc.op;
    bool scatter = plan_.kernels[gc.kernel].scatter != nullptr;
    size_t axis = scatter ? 0 : opAxis(op, op.operands[0]->type.rank());
    llvm::Value* flag = b_.CreateLoad(i64(), b_.CreateConstInBoundsGEP1_64(i64(), cell, 2 * c));
    require(b_.CreateICmpEQ(flag, b_.getInt64(0)), kInvalidArgument,
            indexErrorFormat(op, scatter ? "scatter" : "gather", axis),
            {leastIndex(cell, c), b_.CreateLoad(i64(), gc.size)});
  }
}

}  // namespace dscc::codegen
