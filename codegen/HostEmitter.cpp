// The parts of a model's host function both targets share: runtime declarations, argument and shape checks, symbol binding, the arena, the exported data.
#include "codegen/HostEmitter.h"

#include <algorithm>
#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/KernelCommon.h"
#include "ir/Tensor.h"

namespace dscc::codegen {

std::string HostEmitter::emit(const std::string& source) {
  // GPU models run their kernels from the PTX module; the host module holds none.
  if (!gpu_)
    if (std::string e = emitKernels(); !e.empty()) return e;
  declareRuntime();
  if (std::string e = emitHost(); !e.empty()) return e;
  emitData(source);
  return "";
}

llvm::FunctionCallee HostEmitter::declare(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args, bool vararg) {
  return mod_.getOrInsertFunction(name, llvm::FunctionType::get(ret, args, vararg));
}

void HostEmitter::declareRuntime() {
  auto* p = ptrTy();
  setError_ = declare("dscc_set_error", i32(), {p, i32(), p}, true);
  // The named check: its messages say which argument (%x) is wrong.
  checkInput_ = declare("dscc_check_input_named", i32(), {p, p, i32(), p, i32(), i32()});
  prepareOutput_ = declare("dscc_prepare_output", i32(), {p, p, i32(), i32(), i32(), p});
  alloc_ = declare("dscc_alloc", p, {p, i64()});
  free_ = declare("dscc_free", b_.getVoidTy(), {p, p});
  tensorFree_ = declare("dscc_tensor_free", b_.getVoidTy(), {p});
  // The *_info entry points take a dscc_kernel_info last, for profiles (kernelInfo).
  launch_ = declare("dscc_launch_kernel_info", i32(), {p, p, p, p, p, i64(), i64(), p});
  streamMinBytes_ = declare("dscc_stream_min_bytes", i64(), {});
  gemm_ = declare("dscc_sgemm_nd_info", i32(),
                  {p, i32(), i32(), i64(), i64(), i64(), p, i64(), p, i64(), p, i64(), i32(), p, p, p, p, p});
  copy_ = declare("dscc_copy_strided_info", i32(), {p, p, p, i64(), i32(), p, p, p});
  gemmConstB_ = declare("dscc_sgemm_const_b_info", i32(),
                        {p, i32(), i32(), i64(), i64(), i64(), p, i64(), p, i64(), i64(), p, i64(), p});
  if (gpu_) declareGpuRuntime();
  // dscc_tensor: { void* data; int64_t* dims; int32_t rank; int32_t dtype; }
  tensorTy_ = llvm::StructType::get(ctx_, {p, p, i32(), i32()});
}

llvm::Value* HostEmitter::str(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  llvm::Value* g = b_.CreateGlobalStringPtr(s, ".str", 0, &mod_);
  strings_[s] = g;
  return g;
}

void HostEmitter::require(llvm::Value* ok, int status, const std::string& fmt, std::vector<llvm::Value*> args) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* bad = llvm::BasicBlock::Create(ctx_, "bad", fn);
  auto* good = llvm::BasicBlock::Create(ctx_, "ok", fn);
  b_.CreateCondBr(ok, good, bad, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
  b_.SetInsertPoint(bad);
  std::vector<llvm::Value*> callArgs = {ctxArg_, b_.getInt32(status), str(fmt)};
  callArgs.insert(callArgs.end(), args.begin(), args.end());
  llvm::Value* st = b_.CreateCall(setError_, callArgs);
  fail(st);
  b_.SetInsertPoint(good);
}

void HostEmitter::fail(llvm::Value* status) {
  failStatus_->addIncoming(status, b_.GetInsertBlock());
  b_.CreateBr(failBlock_);
}

void HostEmitter::checked(llvm::FunctionCallee callee, std::vector<llvm::Value*> args) {
  llvm::Value* st = b_.CreateCall(callee, args);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* bad = llvm::BasicBlock::Create(ctx_, "call.bad", fn);
  auto* good = llvm::BasicBlock::Create(ctx_, "call.ok", fn);
  b_.CreateCondBr(b_.CreateICmpEQ(st, b_.getInt32(0)), good, bad, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
  b_.SetInsertPoint(bad);
  fail(st);
  b_.SetInsertPoint(good);
}

llvm::Value* HostEmitter::entryAlloca(llvm::Type* t, size_t n, const std::string& name) {
  llvm::IRBuilder<> eb(&entry_->getParent()->getEntryBlock(), entry_->getParent()->getEntryBlock().begin());
  return eb.CreateAlloca(t, eb.getInt32(static_cast<uint32_t>(std::max<size_t>(n, 1))), name);
}

// An i64 array holding `vals`.
llvm::Value* HostEmitter::i64Array(const std::vector<llvm::Value*>& vals, const std::string& name) {
  llvm::Value* a = entryAlloca(i64(), vals.size(), name);
  for (size_t k = 0; k < vals.size(); ++k) b_.CreateStore(vals[k], b_.CreateConstInBoundsGEP1_64(i64(), a, k));
  return a;
}

llvm::Value* HostEmitter::ptrArray(const std::vector<llvm::Value*>& vals, const std::string& name) {
  llvm::Value* a = entryAlloca(ptrTy(), vals.size(), name);
  for (size_t k = 0; k < vals.size(); ++k) b_.CreateStore(vals[k], b_.CreateConstInBoundsGEP1_64(ptrTy(), a, k));
  return a;
}

llvm::Value* HostEmitter::bytes(const Type& t) {
  return b_.CreateMul(dim(numel(t)), b_.getInt64(static_cast<int64_t>(dtypeSize(t.dtype))));
}

std::string HostEmitter::symbolList(const std::vector<DimExpr>& es, std::vector<llvm::Value*>& args) {
  std::set<std::string> syms;
  for (const DimExpr& e : es) e.collectSymbols(syms);
  std::string s;
  for (const std::string& n : syms) {
    s += (s.empty() ? "" : ", ") + n + " = %lld";
    args.push_back(dim(DimExpr::symbol(n)));
  }
  return s;
}

std::string HostEmitter::escape(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '%' ? std::string("%%") : std::string(1, c);
  return o;
}

std::string HostEmitter::emitHost() {
  auto* fnTy = llvm::FunctionType::get(i32(), {ptrTy(), ptrTy(), i32(), ptrTy(), i32()}, false);
  hostFn_ = llvm::Function::Create(fnTy, llvm::GlobalValue::ExternalLinkage, runSymbol(f_), mod_);
  ctxArg_ = hostFn_->getArg(0);
  llvm::Value* inputs = hostFn_->getArg(1);
  llvm::Value* nIn = hostFn_->getArg(2);
  llvm::Value* outputs = hostFn_->getArg(3);
  llvm::Value* nOut = hostFn_->getArg(4);
  const char* names[] = {"ctx", "inputs", "n_in", "outputs", "n_out"};
  for (unsigned a = 0; a < 5; ++a) hostFn_->getArg(a)->setName(names[a]);
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", hostFn_);
  failBlock_ = llvm::BasicBlock::Create(ctx_, "fail", hostFn_);
  b_.SetInsertPoint(failBlock_);
  failStatus_ = b_.CreatePHI(i32(), 4, "status");
  b_.SetInsertPoint(entry_);
  const std::string fname = "@" + f_.name;

  // Everything a run touches is in place before any output is written.
  std::vector<std::string> symbols = collectSymbols();
  sizes_ = entryAlloca(i64(), symbols.size(), "sizes");
  arenaSlot_ = entryAlloca(ptrTy(), 1, "arena.slot");
  b_.CreateStore(llvm::ConstantPointerNull::get(b_.getPtrTy()), arenaSlot_);
  size_t nOutputs = f_.returns.size();
  allocated_ = entryAlloca(b_.getInt8Ty(), nOutputs, "allocated");
  for (size_t i = 0; i < nOutputs; ++i)
    b_.CreateStore(b_.getInt8(0), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), allocated_, i));

  // A NULL context would reach the thread pool and the arena: refused first.
  require(b_.CreateIsNotNull(ctxArg_), kInvalidArgument, escape(fname) + ": ctx is NULL");
  require(b_.CreateICmpEQ(nIn, b_.getInt32(f_.args.size())), kInvalidArgument,
          escape(fname) + ": expected " + std::to_string(f_.args.size()) + " inputs, got %d", {nIn});
  require(b_.CreateICmpEQ(nOut, b_.getInt32(nOutputs)), kInvalidArgument,
          escape(fname) + ": expected " + std::to_string(nOutputs) + " outputs, got %d", {nOut});
  if (!f_.args.empty())
    require(b_.CreateIsNotNull(inputs), kInvalidArgument, escape(fname) + ": inputs is NULL");
  if (nOutputs)
    require(b_.CreateIsNotNull(outputs), kInvalidArgument, escape(fname) + ": outputs is NULL");

  // Inputs: dtype and rank, then their dims.
  std::vector<std::vector<llvm::Value*>> inDims(f_.args.size());
  std::vector<llvm::Value*> inData(f_.args.size());
  for (size_t i = 0; i < f_.args.size(); ++i) {
    const Value& a = *f_.args[i];
    llvm::Value* t = b_.CreateConstInBoundsGEP1_64(tensorTy_, inputs, i);
    checked(checkInput_, {ctxArg_, t, b_.getInt32(i), str("%" + a.name), b_.getInt32(static_cast<int>(a.type.dtype)),
                          b_.getInt32(a.type.rank())});
    inData[i] = b_.CreateLoad(ptrTy(), b_.CreateStructGEP(tensorTy_, t, 0), "in." + a.name);
    llvm::Value* dimsPtr = b_.CreateLoad(ptrTy(), b_.CreateStructGEP(tensorTy_, t, 1));
    for (size_t d = 0; d < a.type.rank(); ++d)
      inDims[i].push_back(
          b_.CreateLoad(i64(), b_.CreateConstInBoundsGEP1_64(i64(), dimsPtr, d), a.name + ".d" + std::to_string(d)));
  }

  // Symbols bind from plain-symbol dims, first occurrence in argument order.
  std::set<std::string> bound;
  for (size_t i = 0; i < f_.args.size(); ++i)
    for (size_t d = 0; d < f_.args[i]->type.rank(); ++d) {
      const DimExpr& e = f_.args[i]->type.dims[d];
      if (!e.isSymbol() || bound.count(e.symbolName())) continue;
      size_t k = std::find(symbols.begin(), symbols.end(), e.symbolName()) - symbols.begin();
      b_.CreateStore(inDims[i][d], b_.CreateConstInBoundsGEP1_64(i64(), sizes_, k));
      bound.insert(e.symbolName());
    }
  // Then from dims affine in one unbound symbol over bound ones, `a*S + b`:
  // S = (dim - b) / a, until no more bind. The dim checks below reject a
  // size that is not exactly a*S + b; a negative S is a shape mismatch here.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < f_.args.size(); ++i)
      for (size_t d = 0; d < f_.args[i]->type.rank(); ++d) {
        const DimExpr& e = f_.args[i]->type.dims[d];
        std::set<std::string> syms;
        e.collectSymbols(syms);
        std::vector<std::string> open;
        for (const std::string& s : syms)
          if (!bound.count(s)) open.push_back(s);
        if (open.size() != 1 || e.hasOpaqueAtoms()) continue;
        const std::string& s = open[0];
        DimExpr b0 = e.substitute({{s, DimExpr(0)}}), a = e.substitute({{s, DimExpr(1)}}) - b0;
        if (!a.isConst() || a.constValue() == 0 || e != b0 + a * DimExpr::symbol(s)) continue;
        DimEmitter known(b_, sizes_, symbols);
        llvm::Value* v = b_.CreateSDiv(b_.CreateSub(inDims[i][d], known.emit(b0)), b_.getInt64(a.constValue()));
        std::vector<llvm::Value*> args = {inDims[i][d]};
        require(b_.CreateICmpSGE(v, b_.getInt64(0)), kShapeMismatch,
                escape(fname + ": input " + std::to_string(i) + " (%" + f_.args[i]->name + ") has dim " +
                       std::to_string(d) + " = ") +
                    "%lld" + escape(", which is " + e.str() + " for no " + s + " >= 0"),
                args);
        size_t k = std::find(symbols.begin(), symbols.end(), s) - symbols.begin();
        b_.CreateStore(v, b_.CreateConstInBoundsGEP1_64(i64(), sizes_, k));
        bound.insert(s);
        progress = true;
      }
  }
  for (const std::string& s : symbols)
    if (!bound.count(s)) {
      errorLoc_ = symbolLoc(s);
      return err("symbol " + s + " of " + fname +
                 " is not the size of an input dim, so the host code cannot bind it (not supported yet)");
    }
  dims_ = std::make_unique<DimEmitter>(b_, sizes_, symbols);

  // Every input dim against its declared expression.
  for (size_t i = 0; i < f_.args.size(); ++i)
    for (size_t d = 0; d < f_.args[i]->type.rank(); ++d) {
      const DimExpr& e = f_.args[i]->type.dims[d];
      llvm::Value* want = dim(e);
      std::string what = escape(fname + ": input " + std::to_string(i) + " (%" + f_.args[i]->name + ") has dim " +
                                std::to_string(d) + " = ") +
                         "%lld" + escape(", expected " + (e.isConst() ? "" : e.str() + " = ")) + "%lld" +
                         escape(" (" + f_.args[i]->type.str() + ")");
      std::vector<llvm::Value*> args = {inDims[i][d], want};
      require(b_.CreateICmpEQ(inDims[i][d], want), kShapeMismatch, what, args);
    }

  // Facts, then the run-time checks the solver left.
  for (const Fact& fact : f_.facts) {
    std::vector<llvm::Value*> args;
    std::string syms = symbolList({fact.lhs, fact.rhs, fact.hi}, args);
    require(factHolds(fact), kFactViolated,
            escape(fname + ": sizes break the fact '" + fact.str() + "' (") + syms + ")", args);
  }
  std::string error;
  walkOps(f_.ops, [&](Operation& op) {
    if (op.kind != OpKind::Check || !error.empty()) return;
    auto r = checkRelation(op);
    if (!r) {
      error = err("malformed check op");
      errorLoc_ = op.loc;
      return;
    }
    std::vector<llvm::Value*> args;
    std::string syms = symbolList({r->lhs, r->rhs}, args);
    require(relationHolds(*r), kFactViolated,
            escape(fname + ": run-time check (" + r->what + ") failed: '" + r->str() + "' does not hold (") + syms +
                ")",
            args);
  });
  if (!error.empty()) return error;

  // Where every value lives, then the outputs and the arena.
  inData_ = inData;
  buffers_ = planBuffers(plan_, gpu_ != nullptr);
  if (gpu_) {
    loadGpuModule();
    planGpuChecks();
  }
  for (size_t i = 0; i < nOutputs; ++i) {
    if (gpu_) prepareDeviceOutput(outputs, i);
    else prepareHostOutput(outputs, i);
  }
  // Caller buffers that overlap an input or each other would be read after
  // being written: refused before any kernel runs.
  if (nOutputs)
    checked(declare("dscc_check_no_alias", i32(), {ptrTy(), ptrTy(), i32(), ptrTy(), i32()}),
            {ctxArg_, f_.args.empty() ? llvm::ConstantPointerNull::get(b_.getPtrTy()) : inputs, nIn, outputs, nOut});
  emitArena();

  for (const auto& op : f_.ops)
    if (std::string e = emitOp(*op); !e.empty()) {
      errorLoc_ = op->loc;
      return e;
    }

  // Returned values that are not a kernel's own output: copy.
  for (size_t i = 0; i < nOutputs; ++i) {
    const Value* r = f_.returns[i];
    const BufferPlace* s = buffers_.placeOf(r);
    if (s && s->kind == BufferPlace::Output && s->index == i) continue;
    if (gpu_) checked(deviceCopy_, {ctxArg_, outData_[i], address(r), bytes(r->type)});
    else b_.CreateMemCpy(outData_[i], llvm::MaybeAlign(1), address(r), llvm::MaybeAlign(1), bytes(r->type));
  }
  // The outputs are complete when the call returns, and the arena is idle;
  // the GPU's index checks are read then.
  if (gpu_) reportGpuChecks();
  b_.CreateCall(free_, {ctxArg_, b_.CreateLoad(ptrTy(), arenaSlot_)});
  b_.CreateRet(b_.getInt32(0));

  // The failure exit: free what this call allocated, keep the status.
  b_.SetInsertPoint(failBlock_);
  for (size_t i = 0; i < nOutputs; ++i) {
    llvm::Value* flag = b_.CreateLoad(b_.getInt8Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), allocated_, i));
    auto* doFree = llvm::BasicBlock::Create(ctx_, "free.out", hostFn_);
    auto* next = llvm::BasicBlock::Create(ctx_, "free.next", hostFn_);
    b_.CreateCondBr(b_.CreateICmpNE(flag, b_.getInt8(0)), doFree, next);
    b_.SetInsertPoint(doFree);
    llvm::Value* t = b_.CreateConstInBoundsGEP1_64(tensorTy_, outputs, i);
    if (gpu_) freeDeviceOutput(t);
    else b_.CreateCall(tensorFree_, {t});
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
  b_.CreateCall(free_, {ctxArg_, b_.CreateLoad(ptrTy(), arenaSlot_)});
  b_.CreateRet(failStatus_);
  if (failStatus_->getNumIncomingValues() == 0) failBlock_->eraseFromParent();
  return "";
}

std::vector<std::string> HostEmitter::collectSymbols() {
  std::set<std::string> s;
  auto addType = [&](const Type& t) {
    for (const DimExpr& d : t.dims) d.collectSymbols(s);
  };
  for (const auto& a : f_.args) addType(a->type);
  for (const Fact& fact : f_.facts) {
    fact.lhs.collectSymbols(s);
    fact.rhs.collectSymbols(s);
    fact.hi.collectSymbols(s);
  }
  walkOps(f_.ops, [&](Operation& op) {
    for (const auto& r : op.results) addType(r->type);
    if (auto rel = op.kind == OpKind::Check ? checkRelation(op) : std::nullopt) {
      rel->lhs.collectSymbols(s);
      rel->rhs.collectSymbols(s);
    }
  });
  return {s.begin(), s.end()};
}

Location HostEmitter::symbolLoc(const std::string& s) const {
  auto has = [&](const DimExpr& e) {
    std::set<std::string> syms;
    e.collectSymbols(syms);
    return syms.count(s) > 0;
  };
  auto typeHas = [&](const Type& t) { return std::any_of(t.dims.begin(), t.dims.end(), has); };
  for (const auto& a : f_.args)
    if (typeHas(a->type) && a->loc.valid()) return a->loc;
  for (const Fact& fact : f_.facts)
    if ((has(fact.lhs) || has(fact.rhs) || has(fact.hi)) && fact.loc.valid()) return fact.loc;
  Location found;
  walkOps(f_.ops, [&](Operation& op) {
    if (found.valid() || !op.loc.valid()) return;
    for (const auto& r : op.results)
      if (typeHas(r->type)) found = op.loc;
    if (auto rel = op.kind == OpKind::Check ? checkRelation(op) : std::nullopt)
      if (has(rel->lhs) || has(rel->rhs)) found = op.loc;
  });
  return found.valid() ? found : f_.loc;
}

llvm::Value* HostEmitter::cmp(CmpOp op, llvm::Value* a, llvm::Value* c) {
  switch (op) {
    case CmpOp::Eq: return b_.CreateICmpEQ(a, c);
    case CmpOp::Ne: return b_.CreateICmpNE(a, c);
    case CmpOp::Lt: return b_.CreateICmpSLT(a, c);
    case CmpOp::Le: return b_.CreateICmpSLE(a, c);
    case CmpOp::Gt: return b_.CreateICmpSGT(a, c);
    case CmpOp::Ge: return b_.CreateICmpSGE(a, c);
  }
  return b_.getFalse();
}

llvm::Value* HostEmitter::factHolds(const Fact& fact) {
  llvm::Value* l = dim(fact.lhs);
  if (fact.kind == Fact::Kind::Range)
    return b_.CreateAnd(b_.CreateICmpSGE(l, dim(fact.rhs)), b_.CreateICmpSLE(l, dim(fact.hi)));
  return cmp(fact.op, l, dim(fact.rhs));
}

llvm::Value* HostEmitter::relationHolds(const CheckRelation& r) {
  llvm::Value* l = dim(r.lhs);
  llvm::Value* c = dim(r.rhs);
  llvm::Value* one = b_.getInt64(1);
  if (r.kind == "eq") return b_.CreateICmpEQ(l, c);
  if (r.kind == "le") return b_.CreateICmpSLE(l, c);
  if (r.kind == "divisible") {
    // A zero divisor divides nothing but zero.
    llvm::Value* safe = b_.CreateSelect(b_.CreateICmpEQ(c, b_.getInt64(0)), one, c);
    return b_.CreateSelect(b_.CreateICmpEQ(c, b_.getInt64(0)), b_.CreateICmpEQ(l, b_.getInt64(0)),
                           b_.CreateICmpEQ(b_.CreateSRem(l, safe), b_.getInt64(0)));
  }
  if (r.kind == "broadcastable")
    return b_.CreateOr(b_.CreateICmpEQ(l, c), b_.CreateOr(b_.CreateICmpEQ(l, one), b_.CreateICmpEQ(c, one)));
  return b_.CreateOr(b_.CreateICmpEQ(l, c), b_.CreateICmpEQ(l, one));  // broadcasts_to
}

// One allocation for all scratch slots; each slot is as large as the
// largest value it holds at these sizes, rounded to 64 bytes.
void HostEmitter::emitArena() {
  size_t nSlots = buffers_.slotCount();
  llvm::Value* total = b_.getInt64(0);
  std::vector<llvm::Value*> offsets;
  for (size_t s = 0; s < nSlots; ++s) {
    llvm::Value* size = b_.getInt64(0);
    for (const Value* v : buffers_.slotValues[s])
      size = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, size, bytes(v->type));
    for (const Type& t : buffers_.slotTemps[s]) size = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, size, bytes(t));
    size = b_.CreateAnd(b_.CreateAdd(size, b_.getInt64(63)), b_.getInt64(~int64_t(63)));
    offsets.push_back(total);
    total = b_.CreateAdd(total, size);
  }
  // The GPU's check words after the slots (planGpuChecks), zeroed below.
  llvm::Value* checksAt = total;
  total = b_.CreateAdd(total, b_.getInt64(static_cast<int64_t>(16 * gpuChecks_.size())));
  if (nSlots == 0 && gpuChecks_.empty()) return;
  llvm::Value* arena = b_.CreateCall(alloc_, {ctxArg_, total}, "arena");
  auto* bad = llvm::BasicBlock::Create(ctx_, "arena.bad", hostFn_);
  auto* good = llvm::BasicBlock::Create(ctx_, "arena.ok", hostFn_);
  b_.CreateCondBr(b_.CreateIsNull(arena), bad, good);
  b_.SetInsertPoint(bad);
  fail(b_.getInt32(kOutOfMemory));  // DSCC_OUT_OF_MEMORY; dscc_alloc set the message
  b_.SetInsertPoint(good);
  b_.CreateStore(arena, arenaSlot_);
  for (size_t s = 0; s < nSlots; ++s) slotPtr_.push_back(b_.CreateInBoundsGEP(b_.getInt8Ty(), arena, offsets[s]));
  if (!gpuChecks_.empty()) {
    checkWords_ = b_.CreateInBoundsGEP(b_.getInt8Ty(), arena, checksAt, "checks");
    checked(memsetZero_, {ctxArg_, checkWords_, b_.getInt64(static_cast<int64_t>(16 * gpuChecks_.size()))});
  }
}

llvm::Value* HostEmitter::address(const Value* v) {
  const Value* r = buffers_.root(v);
  if (gpu_ && buffers_.mirror.count(r)) return slotPtr_[buffers_.mirror.at(r)];
  return hostAddress(v);
}

llvm::Value* HostEmitter::hostAddress(const Value* v) {
  const Value* r = buffers_.root(v);
  if (auto it = hostPtr_.find(r); it != hostPtr_.end()) return it->second;
  const BufferPlace& s = buffers_.places.at(r);
  switch (s.kind) {
    case BufferPlace::Input: return inData_[s.index];
    case BufferPlace::Output: return outData_[s.index];
    case BufferPlace::Scratch: return slotPtr_[s.index];
    default: return nullptr;  // a root is never an alias
  }
}

void HostEmitter::emitData(const std::string& source) {
  auto addString = [&](const std::string& name, const std::string& value) {
    auto* init = llvm::ConstantDataArray::getString(ctx_, value, true);
    auto* g = new llvm::GlobalVariable(mod_, init->getType(), true, llvm::GlobalValue::ExternalLinkage, init, name);
    g->setAlignment(llvm::Align(1));
  };
  addString("dscc_model_source", source);
  addString("dscc_model_source_dir", sourceDir_);
  addString("dscc_model_entry", f_.name);
  addString("dscc_model_target", gpu_ ? gpu_->target : "cpu");
  llvm::GlobalAlias::create(llvm::GlobalValue::ExternalLinkage, "dscc_model_run", hostFn_);
  // The embedded file constants, so `dscc run model.so --check` interprets the
  // program without the weight files: {path, data, bytes}, ended by a null path.
  auto* entryTy = llvm::StructType::get(ctx_, {b_.getPtrTy(), b_.getPtrTy(), b_.getInt64Ty()});
  std::vector<llvm::Constant*> entries;
  // The source's file constants the passes no longer read (fold-conv-affine
  // replaces a conv's weight by a folded copy) are embedded too: `run
  // --check` and `view` read the source back, and an imported model's weights
  // are in no file.
  std::set<std::string> embedded;
  for (const EmbeddedFile& e : embeddedFiles_) embedded.insert(e.path);
  for (const auto& [path, data] : plan_.sourceFiles)
    if (data && embedded.insert(path).second)
      embeddedFiles_.push_back({path, embedBytes(data, true, "source"), data->bytes.size()});
  for (const EmbeddedFile& e : embeddedFiles_) {
    auto* path = llvm::ConstantDataArray::getString(ctx_, e.path, true);
    auto* pg = new llvm::GlobalVariable(mod_, path->getType(), true, llvm::GlobalValue::PrivateLinkage, path,
                                        "const.path");
    entries.push_back(llvm::ConstantStruct::get(entryTy, {pg, e.data, b_.getInt64(e.bytes)}));
  }
  auto* nullPtr = llvm::ConstantPointerNull::get(b_.getPtrTy());
  entries.push_back(llvm::ConstantStruct::get(entryTy, {nullPtr, nullPtr, b_.getInt64(0)}));
  auto* tableTy = llvm::ArrayType::get(entryTy, entries.size());
  new llvm::GlobalVariable(mod_, tableTy, true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantArray::get(tableTy, entries), "dscc_model_file_constants");
}

}  // namespace dscc::codegen
