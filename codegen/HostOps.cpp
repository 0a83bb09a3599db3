// The top-level ops of a model's host function: host constants, dims and scalar arithmetic, version dispatch by guards, kernel and BLAS launches.
#include "codegen/HostEmitter.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <sstream>

#include <llvm/IR/Constants.h>
#include <llvm/Support/xxhash.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementGenerator.h"
#include "codegen/KernelCommon.h"
#include "codegen/LibraryPlan.h"
#include "ir/IndexMap.h"
#include "ir/InterpInternal.h"

namespace dscc::codegen {

std::string HostEmitter::emitOp(const Operation& op) {
  std::string e = emitOpOnHost(op);
  if (e.empty() && gpu_)
    for (const auto& r : op.results) mirrorToDevice(r.get());
  return e;
}

std::string HostEmitter::emitOpOnHost(const Operation& op) {
  switch (op.kind) {
    case OpKind::Fusion: return emitKernel(op);
    case OpKind::Reshape: case OpKind::Check: return "";
    case OpKind::Constant: return emitConstant(op);
    case OpKind::Dim: {
      const Type& t = op.operands[0]->type;
      size_t axis = opAxis(op, t.rank());
      llvm::Value* slot = entryAlloca(i64(), 1, op.result()->name);
      llvm::Value* v = dim(t.dims.at(axis));
      storeElement(b_, op.result()->type.dtype,
                   op.result()->type.dtype == DType::I64 ? v : b_.CreateTrunc(v, registerType(ctx_, op.result()->type.dtype)),
                   slot);
      hostPtr_[op.result()] = slot;
      return "";
    }
    default: break;
  }
  // Scalar arithmetic on the host (counts, epsilons).
  bool scalar = op.results.size() == 1 && op.result()->type.rank() == 0 && isElementwise(op);
  for (const Value* v : op.operands) scalar = scalar && v->type.rank() == 0;
  if (!scalar)
    return err("op '" + std::string(op.name()) + "' (%" + nameOf(op) + ") outside a kernel is not supported");
  if (std::string why = checkElementwiseOp(op); !why.empty()) return err(why);
  std::vector<llvm::Value*> args;
  for (const Value* v : op.operands) {
    if (gpu_ && !buffers_.mirror.count(buffers_.root(v)))
      return err("scalar %" + v->name + " lives on the GPU; host arithmetic on it is not supported yet");
    args.push_back(loadElement(b_, v->type.dtype, hostAddress(v)));
  }
  llvm::Value* r = emitElementwiseOp(b_, op, args);
  llvm::Value* slot = entryAlloca(storageType(ctx_, op.result()->type.dtype), 1, op.result()->name);
  storeElement(b_, op.result()->type.dtype, r, slot);
  hostPtr_[op.result()] = slot;
  return "";
}

std::string HostEmitter::emitConstant(const Operation& op) {
  const Type& t = op.result()->type;
  for (const DimExpr& d : t.dims)
    if (!d.isConst())
      return err("constant %" + op.result()->name + " of symbolic shape " + t.str() + " is not supported yet");
  // File constants were read and checked by the frontend (loadFileConstants),
  // with the program's diagnostics; codegen never reads files.
  const Attribute* value = op.attr("value");
  bool file = value && value->kind == Attribute::Kind::File;
  if (file && !value->data)
    return err("constant file '" + value->s + "' of %" + op.result()->name + " was not loaded");
  // File data is used as loaded (no copy: weights can be large); literals are evaluated.
  std::shared_ptr<const Tensor> tensor;
  if (file) {
    tensor = value->data;
  } else {
    DimBindings env;
    std::ostringstream sink;
    SourceMgr sm;
    DiagEngine diags(sm, sink);
    interp::OpCtx c{op, {}, env, diags};
    std::vector<Tensor> out;
    // A shape too large to hold (f32[2^63-1, 4]) is refused, not thrown out of codegen (fuzz_lower found it).
    try {
      if (!interp::runConstant(c, out) || out.empty())
        return err("cannot evaluate constant %" + op.result()->name + ": " + sink.str());
    } catch (const TensorSizeError& e) {
      return err("constant %" + op.result()->name + " : " + t.str() + " is too large to embed: " + e.what());
    } catch (const std::bad_alloc&) {
      return err("constant %" + op.result()->name + " : " + t.str() + " is too large to embed: out of memory");
    }
    tensor = std::make_shared<const Tensor>(std::move(out[0]));
  }
  llvm::Constant* addr = embedBytes(tensor, file, op.result()->name);
  hostPtr_[op.result()] = addr;
  constKey_[op.result()] = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t*>(tensor->bytes.data()), tensor->bytes.size()));
  if (file) embeddedFiles_.push_back({value->s, addr, tensor->bytes.size()});
  return "";
}

llvm::Constant* HostEmitter::embedBytes(const std::shared_ptr<const Tensor>& tensor, bool file, const std::string& name) {
  if (file && external_ && !tensor->bytes.empty()) {
    // Placed in the external blob; the host addresses it at its offset.
    if (!externalSym_) {
      externalSym_ = new llvm::GlobalVariable(mod_, b_.getInt8Ty(), true, llvm::GlobalValue::ExternalLinkage, nullptr,
                                              external_->symbol);
      externalSym_->setVisibility(llvm::GlobalValue::HiddenVisibility);
      externalSym_->setAlignment(llvm::Align(64));
    }
    uint64_t offset = (external_->size + 63) / 64 * 64;
    external_->parts.emplace_back(offset, tensor);
    external_->size = offset + tensor->bytes.size();
    return llvm::ConstantExpr::getInBoundsGetElementPtr(b_.getInt8Ty(), externalSym_, b_.getInt64(offset));
  }
  auto* data = llvm::ConstantDataArray::getRaw(
      llvm::StringRef(reinterpret_cast<const char*>(tensor->bytes.data()), tensor->bytes.size()),
      tensor->bytes.size(), b_.getInt8Ty());
  auto* g = new llvm::GlobalVariable(mod_, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data,
                                     "const." + name);
  g->setAlignment(llvm::Align(64));
  return g;
}

// The guard conditions of kernel `k`, evaluated now (before any branch).
llvm::Value* HostEmitter::guardHolds(const GuardPlan& g) {
  switch (g.kind) {
    case GuardKind::Vector:
      if (g.atLeast) return b_.CreateICmpSGE(dim(g.extent), b_.getInt64(g.width));
      return b_.CreateICmpEQ(b_.CreateURem(dim(g.extent), b_.getInt64(g.width)), b_.getInt64(0));
    case GuardKind::Index32: {
      llvm::Value* ok = b_.getTrue();
      for (const DimExpr& c : g.counts) ok = b_.CreateAnd(ok, b_.CreateICmpULE(dim(c), b_.getInt64(INT32_MAX)));
      return ok;
    }
    case GuardKind::BroadcastFree: {
      llvm::Value* ok = b_.getTrue();
      for (const auto& [x, y] : g.pairs) ok = b_.CreateAnd(ok, b_.CreateICmpEQ(dim(x), dim(y)));
      return ok;
    }
    case GuardKind::Schedule: {
      llvm::Value* ok = b_.CreateICmpSGE(dim(g.extent), b_.getInt64(g.lo));
      if (g.hi != INT64_MAX) ok = b_.CreateAnd(ok, b_.CreateICmpSLT(dim(g.extent), b_.getInt64(g.hi)));
      if (g.unitsMax != INT64_MAX) ok = b_.CreateAnd(ok, b_.CreateICmpSLE(dim(g.units), b_.getInt64(g.unitsMax)));
      return ok;
    }
    case GuardKind::Stream: {  // the outputs' alignment is added by streamAligned
      llvm::Value* big = b_.CreateICmpSGE(dim(g.bytes), g.minBytes == kStreamAtRunTime
                                                          ? static_cast<llvm::Value*>(b_.CreateCall(streamMinBytes_))
                                                          : b_.getInt64(g.minBytes));
      if (g.peeled) return big;
      return b_.CreateAnd(big, b_.CreateICmpEQ(b_.CreateURem(dim(g.extent), b_.getInt64(g.width)), b_.getInt64(0)));
    }
  }
  return b_.getFalse();
}

// A streaming version's stores are whole aligned lines: its guard also
// needs every output 64-byte aligned (a caller's buffer need not be), unless
// the version peels its rows to lines itself (GuardPlan::peeled).
void HostEmitter::streamAligned(const KernelPlan& k, const std::vector<llvm::Value*>& outs,
                                std::vector<llvm::Value*>& holds) {
  for (size_t gi = 0; gi < k.guards.size(); ++gi) {
    if (k.guards[gi].kind != GuardKind::Stream || k.guards[gi].peeled) continue;
    for (llvm::Value* p : outs) holds[gi] = b_.CreateAnd(holds[gi], alignedTo(p, 64));
  }
}

llvm::Value* HostEmitter::grainOf(int64_t chunk, llvm::Value* work) {
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, b_.CreateUDiv(b_.getInt64(chunk), work), b_.getInt64(1));
}

llvm::Value* HostEmitter::alignedTo(llvm::Value* p, int64_t bytes) {
  return b_.CreateICmpEQ(b_.CreateAnd(b_.CreatePtrToInt(p, i64()), b_.getInt64(bytes - 1)), b_.getInt64(0));
}

// Launches the version of kernel `k` that its guards select.
void HostEmitter::launch(const KernelPlan& k, size_t kIndex, const std::vector<llvm::Value*>& ins,
                         const std::vector<llvm::Value*>& outs) {
  const KernelInterface& iface = k.iface;
  std::vector<llvm::Value*> sizeVals;
  for (const std::string& s : iface.symbols) sizeVals.push_back(dim(DimExpr::symbol(s)));
  llvm::Value* sizes = i64Array(sizeVals, k.symbol + ".sizes");
  // A CPU kernel holding gathers checks their indices into a cell passed
  // after its operands (ElementGenerator.h, gatherChecks): "none" before
  // the launch, a run-time error after it when a word 0 is set. The GPU's
  // kernels report into the call's check block instead (reportGpuChecks).
  std::vector<const Operation*> gathers;
  if (!gpu_ && k.fusion) gathers = gatherChecks(*k.fusion);
  std::vector<llvm::Value*> withCell = ins;
  llvm::Value* cell = nullptr;
  std::vector<llvm::Value*> gatherDims, gatherCounts;
  if (!gathers.empty()) {
    cell = entryAlloca(i64(), 2 * gathers.size(), k.symbol + ".gather.cell");
    for (size_t g = 0; g < gathers.size(); ++g) {
      b_.CreateStore(b_.getInt64(0), b_.CreateConstInBoundsGEP1_64(i64(), cell, 2 * g));
      b_.CreateStore(b_.getInt64(0), b_.CreateConstInBoundsGEP1_64(i64(), cell, 2 * g + 1));
      const Value* x = gathers[g]->operands[0];
      gatherDims.push_back(dim(x->type.dims.at(opAxis(*gathers[g], x->type.rank()))));
      gatherCounts.push_back(dim(numel(gathers[g]->operands[1]->type)));
    }
    withCell.push_back(cell);
  }
  llvm::Value* inArr = ptrArray(withCell, k.symbol + ".in");
  llvm::Value* outArr = ptrArray(outs, k.symbol + ".out");
  llvm::Value* units = dim(iface.units);
  llvm::Value* work = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, dim(iface.workPerUnit), b_.getInt64(1));
  llvm::Value* grain = grainOf(k.chunk, work);
  std::vector<llvm::Value*> holds;
  for (const GuardPlan& g : k.guards) holds.push_back(g.proved ? b_.getTrue() : guardHolds(g));
  streamAligned(k, outs, holds);
  if (!gpu_) prepareRowSplit(k);
  if (!gpu_ && k.tuning) {
    launchTuned(k, kIndex, inArr, outArr, outs, sizes, units, work);
  } else {
    if (gpu_) {
      prepareGpuLaunch(k, kIndex, ins, outs, holds);
      noteGpuCheckSizes(kIndex);
    }
    auto* join = llvm::BasicBlock::Create(ctx_, k.symbol + ".done", hostFn_);
    versionCascade(k, k.symbol, k.symbol + ".", holds, join, [&](size_t v) {
      if (gpu_) launchGpuVersion(k, kIndex, v, ins, outs);
      else launchCpu(k, k, v, kernelFns_[kIndex][v], k.functionName(v), inArr, outArr, outs, sizes, units, grain);
    });
    b_.SetInsertPoint(join);
  }
  for (size_t g = 0; g < gathers.size(); ++g) checkGather(k, *gathers[g], ins, cell, g, gatherDims[g], gatherCounts[g]);
}

// After a launch: the interpreter's message for gather `op` (the kernel's
// g-th) when its flag in `cell` is set, after the op and where it was
// written. Indices that are an operand of the kernel are scanned here for
// the first bad one in row-major order (the one the interpreter names): on
// the error path, and also after a clean launch when there are at most
// kHostScanIndices of them, because a kernel computes only the elements its
// results need and so may never read an index (a slice of the gather's
// result, an empty result; random seeds 19003 #205, 19004 #175). Larger
// index tensors are checked where the kernel reads them (docs/compile.md).
// Indices computed inside the kernel give the kernel's smallest
// (gatherChecks).
void HostEmitter::checkGather(const KernelPlan& k, const Operation& op, const std::vector<llvm::Value*>& ins,
                              llvm::Value* cell, size_t g, llvm::Value* D, llvm::Value* count) {
  constexpr int64_t kHostScanIndices = 4096;
  const Value* x = op.operands[0];
  const Value* idx = op.operands[1];
  std::string fmt = indexErrorFormat(op, "gather", opAxis(op, x->type.rank()));
  llvm::Value* flag = b_.CreateLoad(i64(), b_.CreateConstInBoundsGEP1_64(i64(), cell, 2 * g));
  llvm::Value* flagged = b_.CreateICmpNE(flag, b_.getInt64(0));
  auto* bad = llvm::BasicBlock::Create(ctx_, "gather.bad", hostFn_);
  auto* good = llvm::BasicBlock::Create(ctx_, "gather.ok", hostFn_);
  auto report = [&](llvm::Value* value) {
    fail(b_.CreateCall(setError_, {ctxArg_, b_.getInt32(kInvalidArgument), str(fmt), value, D}));
  };
  const auto& operands = k.fusion->operands;
  auto at = std::find(operands.begin(), operands.end(), idx);
  if (at == operands.end()) {
    b_.CreateCondBr(flagged, bad, good, llvm::MDBuilder(ctx_).createBranchWeights(1, 1000));
    b_.SetInsertPoint(bad);
    report(leastIndex(cell, g));
    b_.SetInsertPoint(good);
    return;
  }
  // if (flagged || count <= kHostScanIndices) for (m = 0; m < count; ++m) if (idx[m] outside [-D, D)) report;
  llvm::Value* scan = b_.CreateOr(flagged, b_.CreateICmpULE(count, b_.getInt64(kHostScanIndices)));
  auto* head = llvm::BasicBlock::Create(ctx_, "gather.scan", hostFn_);
  auto* body = llvm::BasicBlock::Create(ctx_, "gather.scan.body", hostFn_);
  auto* none = llvm::BasicBlock::Create(ctx_, "gather.scan.none", hostFn_);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  b_.CreateCondBr(scan, head, good);
  b_.SetInsertPoint(head);
  llvm::PHINode* m = b_.CreatePHI(i64(), 2, "m");
  m->addIncoming(b_.getInt64(0), pre);
  b_.CreateCondBr(b_.CreateICmpSLT(m, count), body, none);
  b_.SetInsertPoint(body);
  llvm::Type* et = storageType(ctx_, idx->type.dtype);
  llvm::Value* base = ins[static_cast<size_t>(at - operands.begin())];
  llvm::Value* w = b_.CreateSExt(b_.CreateLoad(et, b_.CreateInBoundsGEP(et, base, m)), i64());
  llvm::Value* wrapped = b_.CreateSelect(b_.CreateICmpSLT(w, b_.getInt64(0)), b_.CreateAdd(w, D), w);
  m->addIncoming(b_.CreateAdd(m, b_.getInt64(1)), body);
  b_.CreateCondBr(b_.CreateICmpUGE(wrapped, D), bad, head);
  b_.SetInsertPoint(bad);
  report(w);
  // No bad index among the operand's: fine, unless the kernel saw one (not reached: it read these indices).
  b_.SetInsertPoint(none);
  auto* flaggedBad = llvm::BasicBlock::Create(ctx_, "gather.flagged", hostFn_);
  b_.CreateCondBr(flagged, flaggedBad, good);
  b_.SetInsertPoint(flaggedBad);
  report(leastIndex(cell, g));
  b_.SetInsertPoint(good);
}

std::string HostEmitter::indexErrorFormat(const Operation& op, const std::string& what, size_t axis) {
  std::string where = "@" + f_.name + ": %" + op.result()->name;
  if (op.loc.valid()) where += " (line " + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col) + ")";
  return escape(where + ": " + what + " index ") + "%lld" +
         escape(" is out of range for dim " + std::to_string(axis) + " of size ") + "%lld";
}

// The smallest bad index of check g of `cell` (encodeLeastIndex, ElementGenerator.h).
llvm::Value* HostEmitter::leastIndex(llvm::Value* cell, size_t g) {
  llvm::Value* word = b_.CreateLoad(i64(), b_.CreateConstInBoundsGEP1_64(i64(), cell, 2 * g + 1));
  return b_.CreateXor(word, b_.getInt64(INT64_MAX));
}

void HostEmitter::versionCascade(const KernelPlan& p, const std::string& symbol, const std::string& prefix,
                                 const std::vector<llvm::Value*>& holds, llvm::BasicBlock* join,
                                 const std::function<void(size_t)>& call) {
  for (size_t v = 0; v < p.versions.size(); ++v) {
    const KernelVariant& kv = p.versions[v];
    llvm::Value* cond = b_.getTrue();
    for (size_t gi = 0; gi < p.guards.size(); ++gi) {
      const GuardPlan& g = p.guards[gi];
      if (assumes(kv, g) && !g.proved) cond = b_.CreateAnd(cond, holds[gi]);
    }
    bool last = v + 1 == p.versions.size();
    auto* body = llvm::BasicBlock::Create(ctx_, prefix + kv.name(), hostFn_);
    auto* next = last ? nullptr : llvm::BasicBlock::Create(ctx_, symbol + ".try", hostFn_);
    if (last) b_.CreateBr(body);
    else b_.CreateCondBr(cond, body, next);
    b_.SetInsertPoint(body);
    call(v);
    b_.CreateBr(join);
    if (next) b_.SetInsertPoint(next);
  }
}

llvm::Value* HostEmitter::kernelInfo(const KernelPlan& k, const std::string& function, const std::string& version,
                                     bool countBytes) {
  auto it = kernelInfos_.find(function);
  if (it != kernelInfos_.end()) return it->second;
  // Bytes a launch reads and writes, over the sizes it is passed; library
  // calls report their own (the runtime knows M, N, K).
  bool library = version == "sgemm" || version == "copy";
  DimExpr bytes = library ? DimExpr(0) : totalBytes({&k.iface.inputs, &k.iface.outputs});
  std::vector<llvm::Constant*> names;
  if (!library)
    for (const std::string& s : k.iface.symbols) names.push_back(llvm::cast<llvm::Constant>(str(s)));
  llvm::Constant* nameArr = llvm::ConstantPointerNull::get(b_.getPtrTy());
  if (!names.empty()) {
    auto* at = llvm::ArrayType::get(ptrTy(), names.size());
    nameArr = new llvm::GlobalVariable(mod_, at, true, llvm::GlobalValue::PrivateLinkage,
                                       llvm::ConstantArray::get(at, names), function + ".size_names");
  }
  // { name, kind, version, function, n_sizes, size_names, bytes_expr } (dscc_kernel_info)
  auto* infoTy = llvm::StructType::get(ctx_, {ptrTy(), ptrTy(), ptrTy(), ptrTy(), i32(), ptrTy(), ptrTy()});
  auto c = [&](const std::string& s) { return llvm::cast<llvm::Constant>(str(s)); };
  auto* init = llvm::ConstantStruct::get(
      infoTy, {c(k.symbol), c(kernelKindName(k.kind)), c(version), c(function), b_.getInt32(library ? 0 : names.size()), nameArr,
               c(library || !countBytes ? "" : bytes.str())});
  auto* g = new llvm::GlobalVariable(mod_, infoTy, true, llvm::GlobalValue::PrivateLinkage, init, function + ".info");
  kernelInfos_[function] = g;
  return g;
}

std::string HostEmitter::emitKernel(const Operation& op) {
  const KernelPlan* k = kernelOf(plan_, &op);
  if (!k) return err("fusion %" + op.result()->name + " has no plan");
  size_t kIndex = k - plan_.kernels.data();
  std::vector<llvm::Value*> outs;
  for (const auto& r : op.results) outs.push_back(address(r.get()));
  if (gpu_ && (k->scatter || k->scan || k->window || k->rnn)) return launchGpuData(op, kIndex);
  if (k->window) return emitWindowKernel(op, *k);
  if (k->rnn) return emitRnnKernel(op, *k);
  if (k->scatter) return emitScatterKernel(op, *k);
  if (k->scan) return emitScanKernel(op, *k);
  if (!k->gemm) {
    std::vector<llvm::Value*> ins;
    for (const Value* v : op.operands) ins.push_back(address(v));
    launch(*k, kIndex, ins, outs);
    return "";
  }
  const GemmPlan& g = *k->gemm;
  auto operandBase = [&](const GemmOperandPlan& o, const std::string& name) -> llvm::Value* {
    llvm::Value* src = address(op.operands.at(o.operand));
    if (o.copyDims.empty()) return src;
    llvm::Value* dst = slotPtr_[buffers_.tempSlot.at({&op, name})];
    std::vector<llvm::Value*> ds, ss;
    for (const DimExpr& d : o.copyDims) ds.push_back(dim(d));
    for (const DimExpr& s : o.copyStrides) ss.push_back(dim(s));
    if (gpu_) launchGpu(gpuKernel(kIndex, 0, name), {src}, {dst});
    else
      checked(copy_, {ctxArg_, dst, src, b_.getInt64(4), b_.getInt32(o.copyDims.size()), i64Array(ds, "copy.dims"),
                      i64Array(ss, "copy.strides"), kernelInfo(*k, k->symbol + ".copy_" + name, "copy")});
    return dst;
  };
  llvm::Value* a = operandBase(g.a, "a");
  llvm::Value* bm = operandBase(g.b, "b");
  llvm::Value* c = g.epilogue && !g.epilogueInPlace ? slotPtr_[buffers_.tempSlot.at({&op, "c"})] : outs[0];
  std::vector<llvm::Value*> bd, sa, sb, sc;
  for (size_t q = 0; q < g.batchDims.size(); ++q) {
    bd.push_back(dim(g.batchDims[q]));
    sa.push_back(dim(g.a.batchStrides[q]));
    sb.push_back(dim(g.b.batchStrides[q]));
    sc.push_back(dim(g.batchStridesC[q]));
  }
  std::vector<llvm::Value*> gemmArgs = {ctxArg_, b_.getInt32(g.a.trans), b_.getInt32(g.b.trans), dim(g.M), dim(g.N),
                                        dim(g.K), a, dim(g.a.ld), bm, dim(g.b.ld), c, dim(g.ldc),
                                        b_.getInt32(g.batchDims.size()), i64Array(bd, "batch.dims"),
                                        i64Array(sa, "batch.sa"), i64Array(sb, "batch.sb"), i64Array(sc, "batch.sc")};
  if (gpu_) gemmArgs.push_back(b_.getInt32(0));  // exact fp32, no TF32
  else gemmArgs.push_back(kernelInfo(*k, k->symbol + ".sgemm", "sgemm"));
  DType gdt = g.matmul->operands[0]->type.dtype;
  // A single f32 product whose B is a host constant (a model's weights): the
  // runtime packs B once per context and streams the packed copy when A has
  // few rows (docs/abi.md, dscc_sgemm_const_b).
  auto constB = constKey_.find(op.operands.at(g.b.operand));
  if (!gpu_ && gdt == DType::F32 && g.batchDims.empty() && g.b.copyDims.empty() && constB != constKey_.end()) {
    checked(gemmConstB_, {ctxArg_, b_.getInt32(g.a.trans), b_.getInt32(g.b.trans), dim(g.M), dim(g.N), dim(g.K), a,
                          dim(g.a.ld), bm, dim(g.b.ld), b_.getInt64(constB->second), c, dim(g.ldc),
                          kernelInfo(*k, k->symbol + ".sgemm", "sgemm")});
  } else {
    checked(gdt == DType::F16 ? hgemm_ : gdt == DType::BF16 ? bgemm_ : gemm_, gemmArgs);
  }
  if (!g.epilogue) return "";
  std::vector<llvm::Value*> ins = {c};
  for (size_t idx : g.epilogueOperands) ins.push_back(address(op.operands.at(idx)));
  launch(*k, kIndex, ins, outs);
  return "";
}

}  // namespace dscc::codegen
