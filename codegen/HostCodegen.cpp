// The generated host function of a model (checks, symbol binding, buffers by liveness, version dispatch, launches, BLAS) and its kernels.
#include "codegen/HostCodegen.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <sstream>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementGenerator.h"
#include "codegen/ElementOps.h"
#include "codegen/Jit.h"
#include "codegen/KernelLowering.h"
#include "codegen/LibraryPlan.h"
#include "codegen/ReductionLowering.h"
#include "ir/InterpInternal.h"

namespace dscc::codegen {

std::string runSymbol(const Function& f) { return cIdentifier(f.name) + "_run"; }

LoweredKernel lowerKernelVersion(const KernelPlan& k, size_t v, CodeModule& m, const std::string& name) {
  if (k.kind == "loop") return lowerLoopKernel(*k.fusion, m, name, k.versions[v]);
  if (k.kind == "stitch") return lowerStitchKernel(*k.fusion, m, name, k.versions[v]);
  if (k.kind == "input") return lowerInputKernel(*k.fusion, m, name, k.versions[v]);
  if (k.kind == "generic") return lowerGenericKernel(*k.fusion, m, name, k.versions[v]);
  return lowerLoopKernel(*k.gemm->epilogue, m, name, k.versions[v]);
}

namespace {

// dscc_status values (runtime/dscc_runtime.h); they are fixed by the ABI.
constexpr int kInvalidArgument = 1, kShapeMismatch = 2, kFactViolated = 3;

// Where a value's elements live during a call.
struct Storage {
  enum Kind { Input, Constant, HostScalar, Alias, Output, Scratch } kind = Scratch;
  size_t index = 0;            // input index, output index, or scratch slot
  const Value* of = nullptr;   // Alias: the value it reshapes
  llvm::Value* ptr = nullptr;  // Constant, HostScalar: the address
};

class HostEmitter {
 public:
  HostEmitter(const ModelPlan& plan, CodeModule& m, const GpuArtifact* gpu)
      : plan_(plan), f_(*plan.func), mod_(m.module()), ctx_(m.context()), b_(ctx_), gpu_(gpu) {}

  std::string emit(const std::string& source) {
    // GPU models run their kernels from the PTX module; the host module holds none.
    if (!gpu_)
      if (std::string e = emitKernels(); !e.empty()) return e;
    declareRuntime();
    if (std::string e = emitHost(); !e.empty()) return e;
    emitData(source);
    return "";
  }

 private:
  // ---- kernels ----------------------------------------------------------

  std::string emitKernels() {
    for (const KernelPlan& k : plan_.kernels) {
      std::vector<llvm::Function*> fns;
      for (size_t v = 0; v < k.versions.size(); ++v) {
        LoweredKernel lk = lowerVersion(k, v);
        if (!lk.ok()) return "kernel " + k.symbol + ": " + lk.error;
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
            LoweredKernel lk = lowerKernelVersion(c.plan, v, *owner_, c.plan.functionName(v));
            if (!lk.ok()) return "kernel " + k.symbol + " (" + c.name + "): " + lk.error;
            lk.fn->setLinkage(llvm::GlobalValue::InternalLinkage);
            byName[c.plan.functionName(v)] = lk.fn;
          }
      tunedFns_.push_back(std::move(byName));
    }
    return "";
  }

  LoweredKernel lowerVersion(const KernelPlan& k, size_t v) { return lowerKernelVersion(k, v, *owner_, k.functionName(v)); }

 public:
  CodeModule* owner_ = nullptr;
  std::string sourceDir_;

 private:
  // ---- runtime declarations --------------------------------------------

  llvm::Type* ptrTy() { return b_.getPtrTy(); }
  llvm::Type* i32() { return b_.getInt32Ty(); }
  llvm::Type* i64() { return b_.getInt64Ty(); }

  llvm::FunctionCallee declare(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args, bool vararg = false) {
    return mod_.getOrInsertFunction(name, llvm::FunctionType::get(ret, args, vararg));
  }

  void declareRuntime() {
    auto* p = ptrTy();
    setError_ = declare("dscc_set_error", i32(), {p, i32(), p}, true);
    checkInput_ = declare("dscc_check_input", i32(), {p, p, i32(), i32(), i32()});
    prepareOutput_ = declare("dscc_prepare_output", i32(), {p, p, i32(), i32(), i32(), p});
    alloc_ = declare("dscc_alloc", p, {p, i64()});
    free_ = declare("dscc_free", b_.getVoidTy(), {p, p});
    tensorFree_ = declare("dscc_tensor_free", b_.getVoidTy(), {p});
    launch_ = declare("dscc_launch_kernel", i32(), {p, p, p, p, p, i64(), i64()});
    gemm_ = declare("dscc_sgemm_nd", i32(),
                    {p, i32(), i32(), i64(), i64(), i64(), p, i64(), p, i64(), p, i64(), i32(), p, p, p, p});
    copy_ = declare("dscc_copy_strided", i32(), {p, p, p, i64(), i32(), p, p});
    if (gpu_) {
      // Device memory, kernels and the BLAS go through the CUDA runtime (runtime/dscc_cuda.h).
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
    }
    // dscc_tensor: { void* data; int64_t* dims; int32_t rank; int32_t dtype; }
    tensorTy_ = llvm::StructType::get(ctx_, {p, p, i32(), i32()});
  }

  // ---- helpers -----------------------------------------------------------

  llvm::Value* str(const std::string& s) {
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    llvm::Value* g = b_.CreateGlobalStringPtr(s, ".str", 0, &mod_);
    strings_[s] = g;
    return g;
  }

  // Branches to the failure exit with `status` unless `ok`; `fmt` and `args`
  // make the message (printf style, %lld for sizes).
  void require(llvm::Value* ok, int status, const std::string& fmt, std::vector<llvm::Value*> args = {}) {
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

  // Ends the current block in the failure exit with `status`.
  void fail(llvm::Value* status) {
    failStatus_->addIncoming(status, b_.GetInsertBlock());
    b_.CreateBr(failBlock_);
  }

  // Calls a runtime function returning dscc_status and fails on non-OK.
  void checked(llvm::FunctionCallee callee, std::vector<llvm::Value*> args) {
    llvm::Value* st = b_.CreateCall(callee, args);
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* bad = llvm::BasicBlock::Create(ctx_, "call.bad", fn);
    auto* good = llvm::BasicBlock::Create(ctx_, "call.ok", fn);
    b_.CreateCondBr(b_.CreateICmpEQ(st, b_.getInt32(0)), good, bad, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
    b_.SetInsertPoint(bad);
    fail(st);
    b_.SetInsertPoint(good);
  }

  // An alloca in the entry block (so it is allocated once per call).
  llvm::Value* entryAlloca(llvm::Type* t, size_t n, const std::string& name) {
    llvm::IRBuilder<> eb(&entry_->getParent()->getEntryBlock(), entry_->getParent()->getEntryBlock().begin());
    return eb.CreateAlloca(t, eb.getInt32(static_cast<uint32_t>(std::max<size_t>(n, 1))), name);
  }

  // An i64 array holding `vals`.
  llvm::Value* i64Array(const std::vector<llvm::Value*>& vals, const std::string& name) {
    llvm::Value* a = entryAlloca(i64(), vals.size(), name);
    for (size_t k = 0; k < vals.size(); ++k) b_.CreateStore(vals[k], b_.CreateConstInBoundsGEP1_64(i64(), a, k));
    return a;
  }
  llvm::Value* ptrArray(const std::vector<llvm::Value*>& vals, const std::string& name) {
    llvm::Value* a = entryAlloca(ptrTy(), vals.size(), name);
    for (size_t k = 0; k < vals.size(); ++k) b_.CreateStore(vals[k], b_.CreateConstInBoundsGEP1_64(ptrTy(), a, k));
    return a;
  }

  llvm::Value* dim(const DimExpr& e) { return dims_->emit(e); }

  llvm::Value* numel(const std::vector<DimExpr>& dims) {
    DimExpr n(1);
    for (const DimExpr& d : dims) n = n * d;
    return dim(n);
  }
  llvm::Value* bytes(const Type& t) {
    return b_.CreateMul(numel(t.dims), b_.getInt64(static_cast<int64_t>(dtypeSize(t.dtype))));
  }

  // The values of the symbols of `e`, for messages: "S = %lld, T = %lld".
  std::string symbolList(const std::vector<DimExpr>& es, std::vector<llvm::Value*>& args) {
    std::set<std::string> syms;
    for (const DimExpr& e : es) e.collectSymbols(syms);
    std::string s;
    for (const std::string& n : syms) {
      s += (s.empty() ? "" : ", ") + n + " = %lld";
      args.push_back(dim(DimExpr::symbol(n)));
    }
    return s;
  }

  static std::string escape(const std::string& s) {
    std::string o;
    for (char c : s) o += c == '%' ? std::string("%%") : std::string(1, c);
    return o;
  }

  // ---- the host function -----------------------------------------------

  std::string emitHost() {
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
      checked(checkInput_, {ctxArg_, t, b_.getInt32(i), b_.getInt32(static_cast<int>(a.type.dtype)),
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
    for (const std::string& s : symbols)
      if (!bound.count(s))
        return "codegen: symbol " + s + " of " + fname +
               " is not the size of an input dim, so the host code cannot bind it (not supported yet)";
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
    std::string err;
    walkOps(f_.ops, [&](Operation& op) {
      if (op.kind != OpKind::Check || !err.empty()) return;
      auto r = checkRelation(op);
      if (!r) {
        err = "codegen: malformed check op";
        return;
      }
      std::vector<llvm::Value*> args;
      std::string syms = symbolList({r->lhs, r->rhs}, args);
      require(relationHolds(*r), kFactViolated,
              escape(fname + ": run-time check (" + r->what + ") failed: '" + r->str() + "' does not hold (") + syms +
                  ")",
              args);
    });
    if (!err.empty()) return err;

    // Storage of every value, then the outputs and the arena.
    for (size_t i = 0; i < f_.args.size(); ++i) {
      storage_[f_.args[i].get()] = {Storage::Input, i};
      inData_.push_back(inData[i]);
    }
    if (std::string e = assignStorage(); !e.empty()) return e;
    if (gpu_) loadGpuModule();
    for (size_t i = 0; i < nOutputs; ++i) {
      if (gpu_) {
        prepareDeviceOutput(outputs, i);
        continue;
      }
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
    emitArena();

    for (const auto& op : f_.ops)
      if (std::string e = emitOp(*op); !e.empty()) return e;

    // Returned values that are not a kernel's own output: copy.
    for (size_t i = 0; i < nOutputs; ++i) {
      const Value* r = f_.returns[i];
      const Storage& s = storage_.at(root(r));
      if (s.kind == Storage::Output && s.index == i) continue;
      if (gpu_) checked(deviceCopy_, {ctxArg_, outData_[i], address(r), bytes(r->type)});
      else b_.CreateMemCpy(outData_[i], llvm::MaybeAlign(1), address(r), llvm::MaybeAlign(1), bytes(r->type));
    }
    // The outputs are complete when the call returns, and the arena is idle.
    if (gpu_) checked(sync_, {ctxArg_});
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
      if (gpu_) {
        llvm::Value* slot = b_.CreateStructGEP(tensorTy_, t, 0);
        b_.CreateCall(free_, {ctxArg_, b_.CreateLoad(ptrTy(), slot)});
        b_.CreateStore(llvm::ConstantPointerNull::get(b_.getPtrTy()), slot);
      } else {
        b_.CreateCall(tensorFree_, {t});
      }
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
    }
    b_.CreateCall(free_, {ctxArg_, b_.CreateLoad(ptrTy(), arenaSlot_)});
    b_.CreateRet(failStatus_);
    if (failStatus_->getNumIncomingValues() == 0) failBlock_->eraseFromParent();
    return "";
  }

  std::vector<std::string> collectSymbols() {
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

  llvm::Value* cmp(CmpOp op, llvm::Value* a, llvm::Value* c) {
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

  llvm::Value* factHolds(const Fact& fact) {
    llvm::Value* l = dim(fact.lhs);
    if (fact.kind == Fact::Kind::Range)
      return b_.CreateAnd(b_.CreateICmpSGE(l, dim(fact.rhs)), b_.CreateICmpSLE(l, dim(fact.hi)));
    return cmp(fact.op, l, dim(fact.rhs));
  }

  llvm::Value* relationHolds(const CheckRelation& r) {
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

  // ---- storage -------------------------------------------------------------

  const Value* root(const Value* v) const {
    auto it = storage_.find(v);
    while (it != storage_.end() && it->second.kind == Storage::Alias) {
      v = it->second.of;
      it = storage_.find(v);
    }
    return v;
  }

  // Decides where every top-level value lives; intermediate kernel results
  // share scratch slots by liveness (a slot is free once the last op reading
  // any value stored in it has run).
  std::string assignStorage() {
    std::map<const Value*, size_t> pos;  // defining op index
    std::map<const Value*, size_t> lastUse;
    const size_t kEnd = f_.ops.size() + 1;
    for (size_t i = 0; i < f_.ops.size(); ++i) {
      const Operation& op = *f_.ops[i];
      for (const auto& r : op.results) pos[r.get()] = i;
      if (op.kind == OpKind::Reshape) storage_[op.result()] = {Storage::Alias, 0, op.operands[0]};
    }
    for (size_t i = 0; i < f_.ops.size(); ++i)
      for (const Value* v : f_.ops[i]->operands) {
        const Value* r = root(v);
        lastUse[r] = std::max(lastUse[r], i);
      }
    for (const Value* v : f_.returns) lastUse[root(v)] = kEnd;
    // A returned kernel result is written straight into its output buffer.
    std::set<size_t> outputTaken;
    for (size_t i = 0; i < f_.returns.size(); ++i) {
      const Value* v = f_.returns[i];
      if (v->def && v->def->kind == OpKind::Fusion && !storage_.count(v)) storage_[v] = {Storage::Output, i};
    }
    std::vector<size_t> slotFreeAt;  // op index after which the slot is free
    for (size_t i = 0; i < f_.ops.size(); ++i) {
      const Operation& op = *f_.ops[i];
      // On the GPU, values made on the host (constants, dims, scalar
      // arithmetic) are copied to a device slot for the kernels to read.
      if (gpu_ && op.kind != OpKind::Fusion && op.kind != OpKind::Reshape && op.kind != OpKind::Check)
        for (const auto& r : op.results) {
          size_t slot = acquire(slotFreeAt, i, kEnd);
          mirror_[r.get()] = slot;
          slotTemps_[slot].push_back(r->type);
        }
      if (op.kind != OpKind::Fusion) continue;
      for (const auto& r : op.results) {
        if (storage_.count(r.get())) continue;
        size_t slot = acquire(slotFreeAt, i, lastUse.count(r.get()) ? lastUse[r.get()] : i);
        storage_[r.get()] = {Storage::Scratch, slot};
        slotValues_[slot].push_back(r.get());
      }
      // Library kernels may need temporaries alive during the op only.
      const KernelPlan* k = kernelOf(&op);
      if (k && k->gemm) {
        std::vector<std::pair<std::string, Type>> temps;
        DType gdt = k->gemm->matmul->operands[0]->type.dtype;
        if (!k->gemm->a.copyDims.empty()) temps.push_back({"a", Type{gdt, k->gemm->a.copyDims}});
        if (!k->gemm->b.copyDims.empty()) temps.push_back({"b", Type{gdt, k->gemm->b.copyDims}});
        if (k->gemm->epilogue && !k->gemm->epilogueInPlace)
          temps.push_back({"c", k->gemm->matmul->result()->type});
        for (auto& [name, t] : temps) {
          size_t slot = acquire(slotFreeAt, i, i);
          tempSlot_[{&op, name}] = slot;
          slotTemps_[slot].push_back(t);
        }
      }
      // GPU split versions: the workspace of partial reductions.
      if (k && gpu_)
        for (const KernelVariant& v : k->versions)
          if (v.schedule == GpuSchedule::Split && !tempSlot_.count({&op, "ws"})) {
            size_t slot = acquire(slotFreeAt, i, i);
            tempSlot_[{&op, "ws"}] = slot;
            slotTemps_[slot].push_back(Type{DType::I64, {splitWorkspaceElements(*k, v)}});
          }
    }
    return "";
  }

  size_t acquire(std::vector<size_t>& slotFreeAt, size_t now, size_t until) {
    for (size_t s = 0; s < slotFreeAt.size(); ++s)
      if (slotFreeAt[s] < now) {
        slotFreeAt[s] = until;
        return s;
      }
    slotFreeAt.push_back(until);
    return slotFreeAt.size() - 1;
  }

  const KernelPlan* kernelOf(const Operation* op) const {
    for (const KernelPlan& k : plan_.kernels)
      if (k.fusion == op) return &k;
    return nullptr;
  }

  // One allocation for all scratch slots; each slot is as large as the
  // largest value it holds at these sizes, rounded to 64 bytes.
  void emitArena() {
    size_t nSlots = 0;
    for (auto& [s, _] : slotValues_) nSlots = std::max(nSlots, s + 1);
    for (auto& [s, _] : slotTemps_) nSlots = std::max(nSlots, s + 1);
    llvm::Value* total = b_.getInt64(0);
    std::vector<llvm::Value*> offsets;
    for (size_t s = 0; s < nSlots; ++s) {
      llvm::Value* size = b_.getInt64(0);
      for (const Value* v : slotValues_[s]) size = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, size, bytes(v->type));
      for (const Type& t : slotTemps_[s]) size = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, size, bytes(t));
      size = b_.CreateAnd(b_.CreateAdd(size, b_.getInt64(63)), b_.getInt64(~int64_t(63)));
      offsets.push_back(total);
      total = b_.CreateAdd(total, size);
    }
    if (nSlots == 0) return;
    llvm::Value* arena = b_.CreateCall(alloc_, {ctxArg_, total}, "arena");
    auto* bad = llvm::BasicBlock::Create(ctx_, "arena.bad", hostFn_);
    auto* good = llvm::BasicBlock::Create(ctx_, "arena.ok", hostFn_);
    b_.CreateCondBr(b_.CreateIsNull(arena), bad, good);
    b_.SetInsertPoint(bad);
    fail(b_.getInt32(4));  // DSCC_OUT_OF_MEMORY; dscc_alloc set the message
    b_.SetInsertPoint(good);
    b_.CreateStore(arena, arenaSlot_);
    for (size_t s = 0; s < nSlots; ++s) slotPtr_.push_back(b_.CreateInBoundsGEP(b_.getInt8Ty(), arena, offsets[s]));
  }

  llvm::Value* address(const Value* v) {
    const Value* r = root(v);
    if (gpu_ && mirror_.count(r)) return slotPtr_[mirror_.at(r)];
    return hostAddress(v);
  }

  // Where the host reads a value it computes with (scalar arithmetic).
  llvm::Value* hostAddress(const Value* v) {
    const Value* r = root(v);
    const Storage& s = storage_.at(r);
    switch (s.kind) {
      case Storage::Input: return inData_[s.index];
      case Storage::Output: return outData_[s.index];
      case Storage::Scratch: return slotPtr_[s.index];
      default: return s.ptr;
    }
  }

  // ---- top-level ops ----------------------------------------------------

  std::string emitOp(const Operation& op) {
    std::string e = emitOpOnHost(op);
    if (e.empty() && gpu_)
      for (const auto& r : op.results)
        if (mirror_.count(r.get()))
          checked(toDevice_, {ctxArg_, slotPtr_[mirror_.at(r.get())], hostAddress(r.get()), bytes(r->type)});
    return e;
  }

  std::string emitOpOnHost(const Operation& op) {
    switch (op.kind) {
      case OpKind::Fusion: return emitKernel(op);
      case OpKind::Reshape: case OpKind::Check: return "";
      case OpKind::Constant: return emitConstant(op);
      case OpKind::Dim: {
        const Attribute* ax = op.attr("axis");
        int64_t axis = ax ? ax->i : 0;
        const Type& t = op.operands[0]->type;
        if (axis < 0) axis += t.rank();
        llvm::Value* slot = entryAlloca(i64(), 1, op.result()->name);
        llvm::Value* v = dim(t.dims.at(axis));
        storeElement(b_, op.result()->type.dtype,
                     op.result()->type.dtype == DType::I64 ? v : b_.CreateTrunc(v, registerType(ctx_, op.result()->type.dtype)),
                     slot);
        storage_[op.result()] = {Storage::HostScalar, 0, nullptr, slot};
        return "";
      }
      default: break;
    }
    // Scalar arithmetic on the host (counts, epsilons).
    bool scalar = op.results.size() == 1 && op.result()->type.rank() == 0 && isElementwise(op);
    for (const Value* v : op.operands) scalar = scalar && v->type.rank() == 0;
    if (!scalar)
      return "codegen: op '" + std::string(op.name()) + "' (%" + (op.results.empty() ? "?" : op.result()->name) +
             ") outside a kernel is not supported";
    if (std::string why = checkElementwiseOp(op); !why.empty()) return "codegen: " + why;
    std::vector<llvm::Value*> args;
    for (const Value* v : op.operands) {
      if (gpu_ && !mirror_.count(root(v)))
        return "codegen: scalar %" + v->name + " lives on the GPU; host arithmetic on it is not supported yet";
      args.push_back(loadElement(b_, v->type.dtype, hostAddress(v)));
    }
    llvm::Value* r = emitElementwiseOp(b_, op, args);
    llvm::Value* slot = entryAlloca(storageType(ctx_, op.result()->type.dtype), 1, op.result()->name);
    storeElement(b_, op.result()->type.dtype, r, slot);
    storage_[op.result()] = {Storage::HostScalar, 0, nullptr, slot};
    return "";
  }

  std::string emitConstant(const Operation& op) {
    const Type& t = op.result()->type;
    for (const DimExpr& d : t.dims)
      if (!d.isConst())
        return "codegen: constant %" + op.result()->name + " of symbolic shape " + t.str() + " is not supported yet";
    // File constants were read and checked by the frontend (loadFileConstants),
    // with the program's diagnostics; codegen never reads files.
    const Attribute* value = op.attr("value");
    if (value && value->kind == Attribute::Kind::File && !value->data)
      return "codegen: constant file '" + value->s + "' of %" + op.result()->name + " was not loaded";
    DimBindings env;
    std::ostringstream sink;
    SourceMgr sm;
    DiagEngine diags(sm, sink);
    interp::OpCtx c{op, {}, env, diags};
    std::vector<Tensor> out;
    if (!interp::runConstant(c, out) || out.empty())
      return "codegen: cannot evaluate constant %" + op.result()->name + ": " + sink.str();
    const Tensor& tensor = out[0];
    auto* data = llvm::ConstantDataArray::getRaw(
        llvm::StringRef(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size()),
        tensor.bytes.size(), b_.getInt8Ty());
    auto* g = new llvm::GlobalVariable(mod_, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data,
                                       "const." + op.result()->name);
    g->setAlignment(llvm::Align(64));
    storage_[op.result()] = {Storage::Constant, 0, nullptr, g};
    return "";
  }

  // The guard conditions of kernel `k`, evaluated now (before any branch).
  llvm::Value* guardHolds(const GuardPlan& g) {
    switch (g.kind) {
      case GuardKind::Vector:
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
    }
    return b_.getFalse();
  }

  // Launches the version of kernel `k` that its guards select.
  void launch(const KernelPlan& k, size_t kIndex, const std::vector<llvm::Value*>& ins,
              const std::vector<llvm::Value*>& outs) {
    const KernelInterface& iface = k.iface;
    std::vector<llvm::Value*> sizeVals;
    for (const std::string& s : iface.symbols) sizeVals.push_back(dim(DimExpr::symbol(s)));
    llvm::Value* sizes = i64Array(sizeVals, k.symbol + ".sizes");
    llvm::Value* inArr = ptrArray(ins, k.symbol + ".in");
    llvm::Value* outArr = ptrArray(outs, k.symbol + ".out");
    llvm::Value* units = dim(iface.units);
    // Chunks of at least ~16K elements keep the pool's overhead small.
    llvm::Value* work = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, dim(iface.workPerUnit), b_.getInt64(1));
    llvm::Value* grain =
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, b_.CreateUDiv(b_.getInt64(16384), work), b_.getInt64(1));
    std::vector<llvm::Value*> holds;
    for (const GuardPlan& g : k.guards) holds.push_back(g.proved ? b_.getTrue() : guardHolds(g));
    if (!gpu_ && k.tuning) {
      launchTuned(k, kIndex, inArr, outArr, sizes, units, work);
      return;
    }
    if (gpu_) {
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
        for (llvm::Value* p : ins) holds[gi] = b_.CreateAnd(holds[gi], aligned16(p));
        for (llvm::Value* p : outs) holds[gi] = b_.CreateAnd(holds[gi], aligned16(p));
      }
    }
    auto* join = llvm::BasicBlock::Create(ctx_, k.symbol + ".done", hostFn_);
    static const std::vector<llvm::Function*> none;
    const auto& fns = gpu_ ? none : kernelFns_[kIndex];
    for (size_t v = 0; v < k.versions.size(); ++v) {
      const KernelVariant& kv = k.versions[v];
      llvm::Value* cond = b_.getTrue();
      for (size_t gi = 0; gi < k.guards.size(); ++gi) {
        const GuardPlan& g = k.guards[gi];
        if (assumes(kv, g) && !g.proved) cond = b_.CreateAnd(cond, holds[gi]);
      }
      bool last = v + 1 == k.versions.size();
      auto* call = llvm::BasicBlock::Create(ctx_, k.symbol + "." + kv.name(), hostFn_);
      auto* next = last ? nullptr : llvm::BasicBlock::Create(ctx_, k.symbol + ".try", hostFn_);
      if (last) b_.CreateBr(call);
      else b_.CreateCondBr(cond, call, next);
      b_.SetInsertPoint(call);
      if (gpu_ && kv.schedule == GpuSchedule::Split) {
        // One launch per phase, in order, on the op's workspace.
        std::vector<llvm::Value*> withWs = outs;
        withWs.push_back(slotPtr_[tempSlot_.at({k.fusion, "ws"})]);
        for (const GpuKernel& g : gpu_->kernels)
          if (g.kernel == kIndex && g.version == v && g.copyOf.empty()) launchGpu(g, ins, withWs);
      } else if (gpu_) {
        launchGpu(gpuKernel(kIndex, v, ""), ins, outs);
      } else checked(launch_, {ctxArg_, fns[v], inArr, outArr, sizes, units, grain});
      b_.CreateBr(join);
      if (next) b_.SetInsertPoint(next);
    }
    b_.SetInsertPoint(join);
  }

  // A tuned kernel: the range of its governing size selects a configuration
  // (vector width and chunk), whose own guard cascade then selects the version.
  void launchTuned(const KernelPlan& k, size_t kIndex, llvm::Value* inArr, llvm::Value* outArr, llvm::Value* sizes,
                   llvm::Value* units, llvm::Value* work) {
    const KernelTuningPlan& tp = *k.tuning;
    // Every value the branches use is computed here, before them (dims are cached by expression).
    std::vector<std::vector<llvm::Value*>> holds;
    std::vector<llvm::Value*> grains;
    for (const TunedConfig& c : tp.configs) {
      holds.emplace_back();
      for (const GuardPlan& g : c.plan.guards) holds.back().push_back(g.proved ? b_.getTrue() : guardHolds(g));
      grains.push_back(
          b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, b_.CreateUDiv(b_.getInt64(c.chunk), work), b_.getInt64(1)));
    }
    llvm::Value* size = dim(tp.size);
    auto* join = llvm::BasicBlock::Create(ctx_, k.symbol + ".done", hostFn_);
    auto cascade = [&](size_t ci) {
      const TunedConfig& c = tp.configs[ci];
      for (size_t v = 0; v < c.plan.versions.size(); ++v) {
        const KernelVariant& kv = c.plan.versions[v];
        llvm::Value* cond = b_.getTrue();
        for (size_t gi = 0; gi < c.plan.guards.size(); ++gi) {
          const GuardPlan& g = c.plan.guards[gi];
          if (assumes(kv, g) && !g.proved) cond = b_.CreateAnd(cond, holds[ci][gi]);
        }
        bool last = v + 1 == c.plan.versions.size();
        auto* call = llvm::BasicBlock::Create(ctx_, k.symbol + "." + c.name + "." + kv.name(), hostFn_);
        auto* next = last ? nullptr : llvm::BasicBlock::Create(ctx_, k.symbol + ".try", hostFn_);
        if (last) b_.CreateBr(call);
        else b_.CreateCondBr(cond, call, next);
        b_.SetInsertPoint(call);
        checked(launch_, {ctxArg_, tunedFns_[kIndex].at(c.plan.functionName(v)), inArr, outArr, sizes, units, grains[ci]});
        b_.CreateBr(join);
        if (next) b_.SetInsertPoint(next);
      }
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

  std::string emitKernel(const Operation& op) {
    const KernelPlan* k = kernelOf(&op);
    if (!k) return "codegen: fusion %" + op.result()->name + " has no plan";
    size_t kIndex = k - plan_.kernels.data();
    std::vector<llvm::Value*> outs;
    for (const auto& r : op.results) outs.push_back(address(r.get()));
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
      llvm::Value* dst = slotPtr_[tempSlot_.at({&op, name})];
      std::vector<llvm::Value*> ds, ss;
      for (const DimExpr& d : o.copyDims) ds.push_back(dim(d));
      for (const DimExpr& s : o.copyStrides) ss.push_back(dim(s));
      if (gpu_) launchGpu(gpuKernel(kIndex, 0, name), {src}, {dst});
      else
        checked(copy_, {ctxArg_, dst, src, b_.getInt64(4), b_.getInt32(o.copyDims.size()), i64Array(ds, "copy.dims"),
                        i64Array(ss, "copy.strides")});
      return dst;
    };
    llvm::Value* a = operandBase(g.a, "a");
    llvm::Value* bm = operandBase(g.b, "b");
    llvm::Value* c = g.epilogue && !g.epilogueInPlace ? slotPtr_[tempSlot_.at({&op, "c"})] : outs[0];
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
    DType gdt = g.matmul->operands[0]->type.dtype;
    checked(gdt == DType::F16 ? hgemm_ : gdt == DType::BF16 ? bgemm_ : gemm_, gemmArgs);
    if (!g.epilogue) return "";
    std::vector<llvm::Value*> ins = {c};
    for (size_t idx : g.epilogueOperands) ins.push_back(address(op.operands.at(idx)));
    launch(*k, kIndex, ins, outs);
    return "";
  }

  // ---- GPU -----------------------------------------------------------------

  // The module: the cubin for the target when ptxas made one, PTX as the
  // fallback the driver compiles (cached per context by the runtime).
  void loadGpuModule() {
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
  void prepareDeviceOutput(llvm::Value* outputs, size_t i) {
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
    fail(b_.getInt32(4));  // DSCC_OUT_OF_MEMORY; the runtime set the message
    b_.SetInsertPoint(ok);
    b_.CreateStore(mem, dataSlot);
    b_.CreateStore(b_.getInt8(1), b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), allocated_, i));
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
    outData_.push_back(b_.CreateLoad(ptrTy(), dataSlot, "out." + r->name));
  }

  llvm::Value* aligned16(llvm::Value* p) {
    return b_.CreateICmpEQ(b_.CreateAnd(b_.CreatePtrToInt(p, i64()), b_.getInt64(15)), b_.getInt64(0));
  }

  const GpuKernel& gpuKernel(size_t kernel, size_t version, const std::string& copyOf) {
    for (const GpuKernel& g : gpu_->kernels)
      if (g.kernel == kernel && g.copyOf == copyOf && (!copyOf.empty() || g.version == version)) return g;
    static const GpuKernel none;
    return none;  // planned together with the PTX, so not reached
  }

  // One launch: pointers, then the kernel's symbols, then its thread units;
  // a 1-D grid of 256-thread blocks, capped (the kernels loop grid-stride).
  void launchGpu(const GpuKernel& g, const std::vector<llvm::Value*>& ins, const std::vector<llvm::Value*>& outs) {
    std::vector<llvm::Value*> params;
    auto param = [&](llvm::Value* v, llvm::Type* t) {
      llvm::Value* slot = entryAlloca(t, 1, "arg");
      b_.CreateStore(v, slot);
      params.push_back(slot);
    };
    for (llvm::Value* p : ins) param(p, ptrTy());
    for (llvm::Value* p : outs) param(p, ptrTy());
    for (const std::string& sym : g.symbols) param(dim(DimExpr::symbol(sym)), i64());
    llvm::Value* units = dim(g.threadUnits);
    param(units, i64());
    const int64_t block = kGpuBlockSize;
    llvm::Value* blocks = b_.CreateUDiv(b_.CreateAdd(units, b_.getInt64(block - 1)), b_.getInt64(block));
    llvm::Value* grid = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, blocks, b_.getInt64(1 << 20));
    checked(cudaLaunch_, {ctxArg_, module_, str(g.entry), grid, b_.getInt32(block), b_.getInt32(0),
                          ptrArray(params, g.entry + ".params")});
  }

  // ---- exported data ------------------------------------------------------

  void emitData(const std::string& source) {
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
  }

  const ModelPlan& plan_;
  const Function& f_;
  llvm::Module& mod_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::vector<std::vector<llvm::Function*>> kernelFns_;
  std::vector<std::map<std::string, llvm::Function*>> tunedFns_;  // by function name, per kernel
  llvm::FunctionCallee setError_, checkInput_, prepareOutput_, alloc_, free_, tensorFree_, launch_, gemm_, copy_, hgemm_, bgemm_;
  // GPU models only.
  const GpuArtifact* gpu_ = nullptr;
  llvm::FunctionCallee moduleGet_, cudaLaunch_, toDevice_, deviceCopy_, sync_;
  llvm::Value* module_ = nullptr;
  std::map<const Value*, size_t> mirror_;
  llvm::StructType* tensorTy_ = nullptr;
  llvm::Function* hostFn_ = nullptr;
  llvm::Value* ctxArg_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::BasicBlock* failBlock_ = nullptr;
  llvm::PHINode* failStatus_ = nullptr;
  llvm::Value* sizes_ = nullptr;
  llvm::Value* arenaSlot_ = nullptr;
  llvm::Value* allocated_ = nullptr;
  std::unique_ptr<DimEmitter> dims_;
  std::map<std::string, llvm::Value*> strings_;
  std::map<const Value*, Storage> storage_;
  std::map<size_t, std::vector<const Value*>> slotValues_;
  std::map<size_t, std::vector<Type>> slotTemps_;
  std::map<std::pair<const Operation*, std::string>, size_t> tempSlot_;
  std::vector<llvm::Value*> slotPtr_, inData_, outData_;
};

}  // namespace

std::string emitModel(const ModelPlan& plan, const std::string& source, CodeModule& m, const GpuArtifact* gpu,
                      const std::string& sourceDir) {
  HostEmitter e(plan, m, gpu);
  e.owner_ = &m;
  e.sourceDir_ = sourceDir;
  return e.emit(source);
}

}  // namespace dscc::codegen
