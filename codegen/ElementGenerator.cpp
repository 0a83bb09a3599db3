// The element generator: the value of any kernel-body value at an index, through the ops' index maps.
#include "codegen/ElementGenerator.h"

#include <functional>
#include <limits>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementOps.h"
#include "codegen/KernelCommon.h"
#include "ir/IndexMap.h"

namespace dscc::codegen {

// Index arithmetic of ir/IndexMap.h as LLVM IR (i64; indices are non-negative).
struct LlvmArith {
  using V = llvm::Value*;
  llvm::IRBuilderBase& b;
  std::map<const Value*, std::vector<llvm::Value*>>& dims;
  DimEmitter& exprs;
  V c(int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); }
  V add(V x, V y) { return b.CreateAdd(x, y); }
  V sub(V x, V y) { return b.CreateSub(x, y); }
  V mul(V x, V y) { return b.CreateMul(x, y); }
  // The ops' maps divide in i64 in every version: LLVM folds a contiguous
  // reshape's round trip (x / D * D + x % D) only there.
  V div(V x, V y) { return b.CreateUDiv(x, nonZero(y)); }
  V rem(V x, V y) { return b.CreateURem(x, nonZero(y)); }
  // A divisor is a dim, 0 only when no element is read through it; umax(D, 1)
  // makes the division safe to speculate. Otherwise LLVM 19's loop vectoriser
  // if-converts a concat's branches with the division predicated per lane and
  // takes a masked-off lane's poison as a consecutive load's address (wrong
  // answers with AVX-512 masked loads: llvm-project#142957; random seed
  // 6006 program 43). One per divisor, right after its definition, so that
  // the round trip above still sees one value.
  V nonZero(V y) {
    if (llvm::isa<llvm::ConstantInt>(y)) return y;
    auto [it, fresh] = nonZeroOf.try_emplace(y, nullptr);
    if (!fresh) return it->second;
    llvm::IRBuilder<> t(b.getContext());
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(y))
      t.SetInsertPoint(inst->getParent(), *inst->getInsertionPointAfterDef());
    else
      t.SetInsertPoint(b.GetInsertBlock()->getParent()->getEntryBlock().getFirstInsertionPt());
    return it->second = t.CreateBinaryIntrinsic(llvm::Intrinsic::umax, y, t.getInt64(1), nullptr, "nz");
  }
  std::map<V, V> nonZeroOf;
  V lt(V x, V y) { return b.CreateICmpSLT(x, y); }
  V ult(V x, V y) { return b.CreateICmpULT(x, y); }
  V eq(V x, V y) { return b.CreateICmpEQ(x, y); }
  V select(V cnd, V x, V y) { return b.CreateSelect(cnd, x, y); }
  V dim(const Value* v, size_t d) { return dims.at(v).at(d); }
  // Every expression is emitted in the setup block first (see emitSetup), so
  // this finds it in DimEmitter's cache and emits nothing here.
  V expr(const DimExpr& e) { return exprs.emit(e); }
};

std::vector<const Operation*> gatherChecks(const Operation& fusion) {
  std::vector<const Operation*> r;
  for (const auto& op : fusion.body)
    if (op->kind == OpKind::Gather) r.push_back(op.get());
  return r;
}

ElementGenerator::ElementGenerator(const Operation& fusion, llvm::IRBuilderBase& b, ElementSource& src)
    : f_(fusion), b_(b), ctx_(b.getContext()), src_(src), gathers_(gatherChecks(fusion)) {
  for (size_t k = 0; k < fusion.operands.size(); ++k) inputIndex_.emplace(fusion.operands[k], k);
  for (const auto& op : fusion.body)
    for (const auto& r : op->results) defOf_.emplace(r.get(), op.get());
}

ElementGenerator::~ElementGenerator() = default;

void ElementGenerator::prepareIndexing(DimEmitter& dims, llvm::BasicBlock* entry, llvm::Value* inputs,
                                       llvm::Value* outputs) {
  entry_ = entry;
  arith_ = std::make_unique<LlvmArith>(LlvmArith{b_, dims_, dims, {}});
  auto dimsOf = [&](const Value* v) {
    std::vector<llvm::Value*>& d = dims_[v];
    for (const DimExpr& e : v->type.dims) d.push_back(dims.emit(e));
  };
  llvm::Type* ptrTy = b_.getPtrTy();
  for (size_t k = 0; k < f_.operands.size(); ++k) {
    dimsOf(f_.operands[k]);
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, inputs, k);
    in_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "in." + f_.operands[k]->name));
  }
  // The gathers' check cell after the operands, and their slots: a flag
  // and (indices computed in the kernel) a minimum, which mem2reg keeps in
  // registers (an or- and a min-reduction where a loop reads the gather),
  // set to "none" here, in the setup block, which dominates every element
  // and reportChecks.
  if (!gathers_.empty()) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, inputs, f_.operands.size());
    checkCell_ = b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "gather.cell");
    for (const Operation* g : gathers_) {
      llvm::Value* flag = entryAlloca(b_.getInt1Ty(), "gather.bad." + g->result()->name);
      llvm::Value* least = entryAlloca(b_.getInt64Ty(), "gather.min." + g->result()->name);
      b_.CreateStore(b_.getFalse(), flag);
      b_.CreateStore(b_.getInt64(std::numeric_limits<int64_t>::max()), least);
      checkSlots_[g] = {flag, least};
    }
  }
  for (const auto& op : f_.body) {
    for (const auto& r : op->results) dimsOf(r.get());
    if (op->kind == OpKind::Slice)
      for (const SliceAxis& s : sliceAxes(*op)) dims.emit(s.start);
  }
  for (size_t i = 0; i < f_.results.size(); ++i) {
    dimsOf(f_.result(i));
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, outputs, i);
    out_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "out." + f_.result(i)->name));
  }
}

llvm::Value* ElementGenerator::linearIndex(const Value* v, const ElementIndex& idx) {
  return linearize(*arith_, v, idx);
}

llvm::Value* ElementGenerator::inputBuffer(const Value* v) const { return in_.at(inputIndex_.at(v)); }

llvm::Value* ElementGenerator::nonZeroDivisor(llvm::Value* y) { return arith_->nonZero(y); }
llvm::Value* ElementGenerator::exprValue(const DimExpr& e) { return arith_->expr(e); }

llvm::Value* ElementGenerator::entryAlloca(llvm::Type* t, const std::string& name) {
  llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
  return eb.CreateAlloca(t, nullptr, name);
}

llvm::Value* ElementGenerator::gen(const Value* v, const ElementIndex& asked) {
  ElementIndex idx = src_.canonical(v, asked);
  if (src_.ownsMemo()) {
    if (llvm::Value* x = src_.recall(v, idx)) return x;
  } else {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      if (auto it = s->find(Key{v, idx}); it != s->end()) return it->second;
  }
  llvm::Value* r = src_.place(v, idx);
  if (!r) r = compute(v, idx);
  if (src_.ownsMemo()) src_.remember(v, idx, r);
  else scopes_.back()[Key{v, idx}] = r;
  return r;
}

llvm::Value* ElementGenerator::compute(const Value* v, const ElementIndex& oi) {
  if (inputIndex_.count(v)) return src_.load(v, oi);
  const Operation& op = *defOf_.at(v);
  const std::vector<DimExpr>& out = op.result()->type.dims;
  switch (op.info().category) {
    case OpCategory::Unary: case OpCategory::Cast: case OpCategory::Binary: case OpCategory::Logical:
    case OpCategory::Compare: case OpCategory::Select: {
      std::vector<llvm::Value*> args;
      for (const Value* x : op.operands)
        args.push_back(gen(x, src_.aligned() ? oi : broadcastSource(*arith_, x, out, oi)));
      llvm::Value* r = src_.combine(op, oi, args);
      if (!r) r = emitElementwiseOp(b_, op, args);
      r->setName(op.result()->name);
      return r;
    }
    case OpCategory::BroadcastTo: return gen(op.operands[0], broadcastSource(*arith_, op.operands[0], out, oi));
    case OpCategory::Reshape: return gen(op.operands[0], reshapeSource(*arith_, op, oi));
    case OpCategory::Transpose: return gen(op.operands[0], transposeSource(*arith_, op, oi));
    case OpCategory::Slice: return gen(op.operands[0], sliceSource(*arith_, op, oi));
    case OpCategory::Gather: {
      const Value* ix = op.operands[1];
      llvm::Value* w = gen(ix, gatherIndexSource(*arith_, op, oi));
      w = b_.CreateSExt(w, b_.getInt64Ty());
      checkGather(op, w);
      return gen(op.operands[0], gatherDataSource(*arith_, op, oi, w));
    }
    case OpCategory::Iota: {
      llvm::Value* i = oi[opAxis(op, out.size())];
      DType dt = op.result()->type.dtype;
      llvm::Type* t = registerType(ctx_, dt);
      if (isFloat(dt)) return roundToDType(b_, dt, b_.CreateSIToFP(i, t));
      return b_.CreateTrunc(i, t);
    }
    case OpCategory::Concat: return concat(op, oi);
    case OpCategory::Reduce: return reduce(op, oi);
    case OpCategory::ArgMax: return argmax(op, oi);
    case OpCategory::Matmul: return matmul(op, oi);
    default: break;
  }
  return llvm::PoisonValue::get(registerType(ctx_, op.result()->type.dtype));  // plan() refused these
}

// Records whether index `w` of gather `op` is outside [-D, D): beside the
// read (gatherDataSource, which reads element 0 for such an index), never
// instead of it, so the address stays inside the buffer and the loop keeps
// its shape (no branch).
void ElementGenerator::checkGather(const Operation& op, llvm::Value* w) {
  auto it = checkSlots_.find(&op);
  if (it == checkSlots_.end()) return;  // no prepareIndexing: the schedule holds no gather
  auto [flag, least] = it->second;
  const Value* x = op.operands[0];
  llvm::Value* D = dims_.at(x).at(opAxis(op, x->type.rank()));
  llvm::Value* wrapped = b_.CreateSelect(b_.CreateICmpSLT(w, b_.getInt64(0)), b_.CreateAdd(w, D), w);
  // gatherDataSource's own test: the two share one comparison.
  llvm::Value* bad = b_.CreateNot(b_.CreateICmpULT(wrapped, D), "gather.oob");
  b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), flag), bad), flag);
  // Indices the kernel reads from an operand: the CPU's host finds the bad
  // one (gatherChecks). The or above LLVM hoists out of a row that reads one
  // index; a min it keeps per element, and its i64 lanes would halve the
  // vector width of an f32 row on AVX2 (test/compile/generic-vector).
  if (!keepsLeast(op)) return;
  llvm::Value* cand = b_.CreateSelect(bad, w, b_.getInt64(std::numeric_limits<int64_t>::max()));
  b_.CreateStore(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateLoad(b_.getInt64Ty(), least), cand), least);
}

void emitBadIndex(llvm::IRBuilderBase& b, llvm::Value* words, llvm::Value* w, bool least) {
  const auto mono = llvm::AtomicOrdering::Monotonic;
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Or, words, b.getInt64(1), llvm::Align(8), mono);
  if (!least) return;
  // encodeLeastIndex: the unsigned max of the encodings is the smallest index.
  b.CreateAtomicRMW(llvm::AtomicRMWInst::UMax, b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), words, 1),
                    b.CreateXor(w, b.getInt64(INT64_MAX)), llvm::Align(8), mono);
}

bool ElementGenerator::keepsLeast(const Operation& gather) const {
  return leastIndices_ || !inputIndex_.count(gather.operands[1]);
}

void ElementGenerator::reportChecks() {
  if (checkSlots_.empty()) return;
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::Value* haveCell = b_.CreateIsNotNull(checkCell_);
  for (size_t g = 0; g < gathers_.size(); ++g) {
    auto [flag, least] = checkSlots_.at(gathers_[g]);
    auto* report = llvm::BasicBlock::Create(ctx_, "gather.report", fn);
    auto* next = llvm::BasicBlock::Create(ctx_, "gather.reported", fn);
    llvm::Value* bad = b_.CreateAnd(b_.CreateLoad(b_.getInt1Ty(), flag), haveCell);
    b_.CreateCondBr(bad, report, next, llvm::MDBuilder(ctx_).createBranchWeights(1, 1000));
    b_.SetInsertPoint(report);
    llvm::Value* words = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), checkCell_, 2 * g);
    bool keep = keepsLeast(*gathers_[g]);
    emitBadIndex(b_, words, keep ? b_.CreateLoad(b_.getInt64Ty(), least) : nullptr, keep);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
}

// Operand k for the output rows in [off[k], off[k+1]) along the axis; a
// branch per operand, so no operand is read outside its bounds.
llvm::Value* ElementGenerator::concat(const Operation& op, const ElementIndex& oi) {
  LlvmArith& a = *arith_;
  size_t axis = opAxis(op, op.result()->type.rank());
  ElementIndex off = concatOffsets(a, op);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* merge = llvm::BasicBlock::Create(ctx_, "concat.end", fn);
  std::vector<std::pair<llvm::Value*, llvm::BasicBlock*>> in;
  size_t n = op.operands.size();
  for (size_t k = 0; k < n; ++k) {
    llvm::BasicBlock* next = nullptr;
    if (k + 1 < n) {
      auto* take = llvm::BasicBlock::Create(ctx_, "concat.k" + std::to_string(k), fn);
      next = llvm::BasicBlock::Create(ctx_, "concat.not" + std::to_string(k), fn);
      b_.CreateCondBr(b_.CreateICmpSLT(oi[axis], off[k + 1]), take, next);
      b_.SetInsertPoint(take);
    }
    pushScope();
    llvm::Value* v = gen(op.operands[k], concatSource(a, op, off, k, oi));
    popScope();
    in.push_back({v, b_.GetInsertBlock()});
    b_.CreateBr(merge);
    if (next) b_.SetInsertPoint(next);
  }
  b_.SetInsertPoint(merge);
  llvm::PHINode* phi = b_.CreatePHI(registerType(ctx_, op.result()->type.dtype), static_cast<unsigned>(n));
  for (auto& [v, bb] : in) phi->addIncoming(v, bb);
  return phi;
}

// A loop nest over the reduced axes; body(ivs) at the innermost level.
template <class Body>
void ElementGenerator::reducedLoops(const Operation& op, Body body) {
  std::vector<size_t> axes = reducedAxes(op);
  ElementIndex ivs(axes.size());
  std::function<void(size_t)> level = [&](size_t k) {
    if (k == axes.size()) {
      body(ivs);
      return;
    }
    llvm::Value* n = arith_->dim(op.operands[0], axes[k]);
    forRange(b_.getInt64(0), n, "red." + op.result()->name + "." + std::to_string(k), [&](llvm::Value* i) {
      ivs[k] = i;
      level(k + 1);
    });
  };
  level(0);
}

llvm::Value* ElementGenerator::reduce(const Operation& op, const ElementIndex& oi) {
  DType in = op.operands[0]->type.dtype;
  bool fl = isFloat(in);
  bool mx = op.kind == OpKind::ReduceMax, mn = op.kind == OpKind::ReduceMin;
  llvm::Type* acc = fl ? ((mx || mn) ? registerType(ctx_, in) : b_.getDoubleTy()) : b_.getInt64Ty();
  llvm::Value* slot = entryAlloca(acc, "acc." + op.result()->name);
  llvm::Value* init;
  if (fl) {
    double inf = std::numeric_limits<double>::infinity();
    init = llvm::ConstantFP::get(acc, mx ? -inf : mn ? inf : op.kind == OpKind::ReduceProd ? 1.0 : 0.0);
  } else if (mx || mn) {
    unsigned bits = in == DType::I1 ? 1 : registerType(ctx_, in)->getIntegerBitWidth();
    llvm::APInt v = bits == 1 ? llvm::APInt(64, mx ? 0 : 1)
                              : (mx ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits));
    init = b_.getInt64(static_cast<uint64_t>(bits == 1 ? v.getZExtValue() : v.getSExtValue()));
  } else {
    init = b_.getInt64(op.kind == OpKind::ReduceProd ? 1 : 0);
  }
  b_.CreateStore(init, slot);
  reducedLoops(op, [&](const ElementIndex& ivs) {
    llvm::Value* x = gen(op.operands[0], reductionSource(*arith_, op, oi, ivs));
    if (x->getType() != acc)
      x = fl ? b_.CreateFPExt(x, acc) : in == DType::I1 ? b_.CreateZExt(x, acc) : b_.CreateSExt(x, acc);
    llvm::Value* s = b_.CreateLoad(acc, slot);
    llvm::Value* r;
    switch (op.kind) {
      case OpKind::ReduceMax:
        r = b_.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, s, x);
        break;
      case OpKind::ReduceMin:
        r = b_.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::minimum : llvm::Intrinsic::smin, s, x);
        break;
      case OpKind::ReduceProd: r = fl ? b_.CreateFMul(s, x) : b_.CreateMul(s, x); break;
      default: r = fl ? b_.CreateFAdd(s, x) : b_.CreateAdd(s, x); break;
    }
    b_.CreateStore(r, slot);
  });
  llvm::Value* s = b_.CreateLoad(acc, slot);
  llvm::Value* count = nullptr;
  if (op.kind == OpKind::ReduceMean) {
    count = b_.getInt64(1);
    for (size_t ax : reducedAxes(op)) count = b_.CreateMul(count, arith_->dim(op.operands[0], ax));
  }
  return finishReduction(b_, op, s, count);
}

// numpy's matmul at one output index: batch dims broadcast (a dim that is
// 1 at run time reads index 0), a 1-D operand a row (lhs) or column (rhs),
// the product summed over K in ascending order as the interpreter does:
// floats in f64, integers wrapping in 64 bits, then rounded to the dtype.
llvm::Value* ElementGenerator::matmul(const Operation& op, const ElementIndex& oi) {
  LlvmArith& a = *arith_;
  const Value *x = op.operands[0], *y = op.operands[1];
  bool ta = false, tb = false;
  if (const Attribute* t = op.attr("transpose_a")) ta = t->b;
  if (const Attribute* t = op.attr("transpose_b")) tb = t->b;
  size_t rx = x->type.rank(), ry = y->type.rank(), ro = op.result()->type.rank();
  bool xv = rx == 1, yv = ry == 1;
  size_t nb = ro - (xv ? 0 : 1) - (yv ? 0 : 1);  // output batch dims
  // An operand's batch index: its batch dims right-aligned against the output's.
  auto batchIndex = [&](const Value* v, size_t nbv) {
    ElementIndex idx;
    for (size_t d = 0; d < nbv; ++d) {
      llvm::Value* o = oi[nb - nbv + d];
      const DimExpr& vd = v->type.dims[d];
      if (vd.isConst() && vd.constValue() == 1) idx.push_back(b_.getInt64(0));
      else if (vd == op.result()->type.dims[nb - nbv + d]) idx.push_back(o);
      else idx.push_back(a.select(a.eq(a.dim(v, d), b_.getInt64(1)), b_.getInt64(0), o));
    }
    return idx;
  };
  llvm::Value* K = xv ? a.dim(x, 0) : a.dim(x, ta ? rx - 2 : rx - 1);
  DType dt = x->type.dtype;
  bool fl = isFloat(dt);
  llvm::Type* acc = fl ? b_.getDoubleTy() : b_.getInt64Ty();
  llvm::Value* slot = entryAlloca(acc, "acc." + op.result()->name);
  b_.CreateStore(llvm::Constant::getNullValue(acc), slot);
  auto widen = [&](llvm::Value* v) {
    if (v->getType() == acc) return v;
    if (fl) return b_.CreateFPExt(v, acc);
    return dt == DType::I1 ? b_.CreateZExt(v, acc) : b_.CreateSExt(v, acc);
  };
  forRange(b_.getInt64(0), K, "mm." + op.result()->name, [&](llvm::Value* k) {
    ElementIndex ix = xv ? ElementIndex{} : batchIndex(x, rx - 2), iy = yv ? ElementIndex{} : batchIndex(y, ry - 2);
    if (xv) ix.push_back(k);
    else if (ta) ix.push_back(k), ix.push_back(oi[nb]);
    else ix.push_back(oi[nb]), ix.push_back(k);
    llvm::Value* j = yv ? nullptr : oi[ro - 1];
    if (yv) iy.push_back(k);
    else if (tb) iy.push_back(j), iy.push_back(k);
    else iy.push_back(k), iy.push_back(j);
    llvm::Value* p = fl ? b_.CreateFMul(widen(gen(x, ix)), widen(gen(y, iy)))
                        : b_.CreateMul(widen(gen(x, ix)), widen(gen(y, iy)));
    llvm::Value* s = b_.CreateLoad(acc, slot);
    b_.CreateStore(fl ? b_.CreateFAdd(s, p) : b_.CreateAdd(s, p), slot);
  });
  llvm::Value* s = b_.CreateLoad(acc, slot);
  DType od = op.result()->type.dtype;
  llvm::Type* rt = registerType(ctx_, od);
  if (fl) return roundToDType(b_, od, rt == acc ? s : b_.CreateFPTrunc(s, rt));
  if (od == DType::I1) return b_.CreateICmpNE(s, b_.getInt64(0));
  return rt == acc ? s : b_.CreateTrunc(s, rt);
}

llvm::Value* ElementGenerator::argmax(const Operation& op, const ElementIndex& oi) {
  DType in = op.operands[0]->type.dtype;
  bool fl = isFloat(in);
  llvm::Type* vt = registerType(ctx_, in);
  llvm::Value* best = entryAlloca(vt, "best." + op.result()->name);
  llvm::Value* at = entryAlloca(b_.getInt64Ty(), "at." + op.result()->name);
  b_.CreateStore(llvm::Constant::getNullValue(vt), best);
  b_.CreateStore(b_.getInt64(0), at);
  reducedLoops(op, [&](const ElementIndex& ivs) {
    llvm::Value* x = gen(op.operands[0], reductionSource(*arith_, op, oi, ivs));
    llvm::Value* bv = b_.CreateLoad(vt, best);
    llvm::Value* first = b_.CreateICmpEQ(ivs[0], b_.getInt64(0));
    llvm::Value* better;
    if (fl) {
      // The first NaN is the maximum and stays it (numpy).
      llvm::Value* bvNaN = b_.CreateFCmpUNO(bv, bv);
      llvm::Value* xNaN = b_.CreateFCmpUNO(x, x);
      better = b_.CreateAnd(b_.CreateNot(bvNaN), b_.CreateOr(xNaN, b_.CreateFCmpOGT(x, bv)));
    } else {
      better = in == DType::I1 ? b_.CreateICmpUGT(x, bv) : b_.CreateICmpSGT(x, bv);
    }
    llvm::Value* take = b_.CreateOr(first, better);
    b_.CreateStore(b_.CreateSelect(take, x, bv), best);
    b_.CreateStore(b_.CreateSelect(take, ivs[0], b_.CreateLoad(b_.getInt64Ty(), at)), at);
  });
  llvm::Value* r = b_.CreateLoad(b_.getInt64Ty(), at);
  llvm::Type* t = registerType(ctx_, op.result()->type.dtype);
  return t == r->getType() ? r : b_.CreateTrunc(r, t);
}

}  // namespace dscc::codegen
