// CPU stitch rows in explicit vectors: blocks of 16 lanes, a masked last block, one horizontal fold per reduction.
#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"
#include "codegen/ReductionEmitter.h"

namespace dscc::codegen::reduction {

bool Emitter::vectorRowsOk() const {
  if (!cpuRows_ || v_.stream || lanes_ != 1 || cacheIters_ != 0) return false;
  auto f32 = [](const Value* v) { return v->type.dtype == DType::F32; };
  for (const auto& [v, k] : p_.inputIndex)
    if (!f32(v)) return false;
  for (size_t i = 0; i < p_.fusion->results.size(); ++i)
    if (!f32(p_.fusion->result(i))) return false;
  for (const auto& [v, op] : p_.defOf) {
    if (!f32(v) && v->type.dtype != DType::I1) return false;
    if (!isReduction(*op)) continue;
    OpKind k = op->kind;
    if (k != OpKind::ReduceSum && k != OpKind::ReduceMean && k != OpKind::ReduceProd && k != OpKind::ReduceMax &&
        k != OpKind::ReduceMin)
      return false;
  }
  // A value varying along the row is read as one vector per block: the
  // inputs holding such values must have unit stride along the row (a
  // dynamic stride, a dim that may be 1 at run time, keeps the element form).
  for (const auto& [v, k] : p_.inputIndex) {
    if (!p_.elem(v, Frame::Full)) continue;
    auto it = stride_.find({k, Frame::Full});
    if (it == stride_.end()) continue;  // not read in the full frame
    const std::vector<llvm::Value*>& st = it->second;
    auto* one = st.empty() ? nullptr : llvm::dyn_cast_or_null<llvm::ConstantInt>(st.back());
    if (!one || !one->isOne()) return false;
  }
  return true;
}

void Emitter::emitStitchVec(llvm::Value* lo, llvm::Value* hi) {
  llvm::Value* L = spaceDim_.back();
  auto [scratchValue, scratchOut] = outputScratch();
  std::vector<llvm::AllocaInst*> odometer;  // started once the range is known to hold a row
  auto ctx = [&](Ctx& row, llvm::Value* j, llvm::Value* mask, llvm::BasicBlock* hb) {
    Ctx e = elemCtx(row, j, hb, 0);
    e.vec = true;
    e.mask = mask;
    return e;
  };
  // One phase of a row: its reductions' loop, then their folds into the row's memo.
  auto phase = [&](Ctx& row, llvm::Value* rowBase, int ph) {
    std::vector<const Operation*> reds;
    for (const Operation* red : p_.reductions)
      if (p_.phase.at(red) == ph) reds.push_back(red);
    std::vector<VecAcc> accs = vecAccs(reds);
    llvm::BasicBlock* hb = hoistBlock("phase" + std::to_string(ph));
    bool pairs = false;
    for (const Operation* red : reds) pairs |= chainBound(*red);
    vecRowLoop(L, "phase" + std::to_string(ph) + ".j", pairs, [&](llvm::Value* j, llvm::Value* mask, int part) {
      Ctx e = ctx(row, j, mask, hb);
      for (const VecAcc& a : accs) vecAccumulate(a, part, e);
      // The value the last phase reduces, kept in the output row (see outputScratch).
      if (scratchValue && ph == p_.phases - 1)
        vecStore(scratchOut, eval(scratchValue, Frame::Full, e), b_.CreateAdd(rowBase, j, "", true, true), mask);
    });
    vecFold(accs, row);
  };
  // Phase 0 of a row runs in the previous row's iteration, between that
  // row's last phase and its final loop: the row's last folds (a softmax's
  // sum and its reciprocal) and the next row's max fold then overlap
  // independent work instead of stalling their loops (softmax rows of
  // 8-113 ran 1.05-1.1x, layer_norm rows of 100 1.2x faster). Phase 0's
  // results wait in `carry` for the row's own iteration. Rows two at a time (each
  // block loop taking both rows' blocks) were tried too: softmax rows of
  // 113-128 ran 3-7% faster, of 18-38 and 380 10-30% slower.
  std::vector<std::pair<Ctx::Key, llvm::AllocaInst*>> carry;
  auto phase0 = [&](llvm::Value* r) {
    Ctx row = stitchRowCtx(r, odometer);
    phase(row, b_.CreateMul(r, L, "rowbase", true, true), 0);
    bool first = carry.empty();
    size_t n = 0;
    for (const Operation* red : p_.reductions) {
      if (p_.phase.at(red) != 0) continue;
      Ctx::Key key{red->result(), p_.frameOf(red->result(), Frame::Full)};
      llvm::Value* v = row.memo.at(key);
      if (first) {
        llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
        carry.emplace_back(key, eb.CreateAlloca(v->getType(), nullptr, "carry." + red->result()->name));
      }
      b_.CreateStore(v, carry[n++].second);
    }
  };
  // The per-row results, then the final loop writing the row's elements.
  auto finish = [&](Ctx& row, llvm::Value* r, llvm::Value* rowBase) {
    bool anyElem = false;
    for (size_t k = 0; k < out_.size(); ++k) {
      if (p_.resultElem[k]) anyElem = true;
      else storeOnce(k, eval(p_.fusion->yields[k], p_.resultFrame[k], row), r);
    }
    if (!anyElem) return;
    llvm::BasicBlock* hb = hoistBlock("final");
    vecRowLoop(L, "final.j", false, [&](llvm::Value* j, llvm::Value* mask, int) {
      Ctx e = ctx(row, j, mask, hb);
      llvm::Value* at = b_.CreateAdd(rowBase, j, "", true, true);
      if (scratchValue) e.memo[{scratchValue, Frame::Full}] = vecLoadOut(scratchOut, at, mask);
      for (size_t k = 0; k < out_.size(); ++k)
        if (p_.resultElem[k]) vecStore(k, eval(p_.fusion->yields[k], Frame::Full, e), at, mask);
    });
  };
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* ahead = llvm::BasicBlock::Create(ctx_, "rows.ahead", fn);
  auto* inOrder = llvm::BasicBlock::Create(ctx_, "rows.inorder", fn);
  auto* done = llvm::BasicBlock::Create(ctx_, "rows.done", fn);
  // Only rows of at most 4 KiB: a longer row is no longer in L1 when its
  // final loop comes after the next row's phase 0 (rms_norm rows of 16 KiB
  // ran 1.15x slower ahead; softmax rows of 1.5 KiB 1.06x faster).
  const int64_t rowMax = 4096 / 4;  // f32 elements (vectorRowsOk)
  auto* some = llvm::BasicBlock::Create(ctx_, "rows.some", fn);
  // The range is clamped to the rows: it may be empty here, where the
  // odometer's divisions may be by 0 and the prologue below would run row lo.
  b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), some, done);
  b_.SetInsertPoint(some);
  odometer = startOdometer(lo);
  b_.CreateCondBr(b_.CreateICmpSLE(L, idx(rowMax)), ahead, inOrder);
  b_.SetInsertPoint(ahead);
  phase0(lo);
  loop(lo, hi, 1, "row", [&](llvm::Value* r) {
    Ctx row = stitchRowCtx(r, odometer);
    advanceOdometer(odometer);
    for (auto [key, slot] : carry) row.memo[key] = b_.CreateLoad(slot->getAllocatedType(), slot);
    llvm::Value* rowBase = b_.CreateMul(r, L, "rowbase", true, true);
    for (int ph = 1; ph < p_.phases; ++ph) phase(row, rowBase, ph);
    llvm::Value* next = b_.CreateAdd(r, idx(1), "row.next1", true, true);
    auto* pre = llvm::BasicBlock::Create(ctx_, "row.ahead", fn);
    auto* after = llvm::BasicBlock::Create(ctx_, "row.ahead.done", fn);
    b_.CreateCondBr(b_.CreateICmpSLT(next, hi), pre, after);
    b_.SetInsertPoint(pre);
    phase0(next);
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
    finish(row, r, rowBase);
  });
  b_.CreateBr(done);
  b_.SetInsertPoint(inOrder);
  loop(lo, hi, 1, "row", [&](llvm::Value* r) {
    Ctx row = stitchRowCtx(r, odometer);
    advanceOdometer(odometer);
    llvm::Value* rowBase = b_.CreateMul(r, L, "rowbase", true, true);
    for (int ph = 0; ph < p_.phases; ++ph) phase(row, rowBase, ph);
    finish(row, r, rowBase);
  });
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void Emitter::vecRowLoop(llvm::Value* n, const std::string& name, bool pairs,
                         const std::function<void(llvm::Value*, llvm::Value*, int)>& body) {
  // `pairs`: two blocks per iteration into two accumulators, for sums in
  // f64 (two registers a block, a chain of adds of three cycles each:
  // layer_norm rows of 768 ran 1.1-1.2x slower in one); elsewhere the pairs
  // cost (softmax rows of 128: 1.1x slower).
  llvm::Value* pairEnd = idx(0);
  if (pairs) {
    pairEnd = b_.CreateAnd(n, idx(~int64_t(2 * vw_ - 1)), name + ".pairs");
    loop(idx(0), pairEnd, 2 * vw_, name + ".pair", [&](llvm::Value* j) {
      body(j, nullptr, 0);
      body(b_.CreateAdd(j, idx(vw_), "", true, true), nullptr, 1);
    });
  }
  llvm::Value* bulk = b_.CreateAnd(n, idx(~int64_t(vw_ - 1)), name + ".bulk");
  loop(pairEnd, bulk, vw_, name, [&](llvm::Value* j) { body(j, nullptr, 0); });
  llvm::Value* rem = b_.CreateSub(n, bulk, name + ".rem", true, true);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* last = llvm::BasicBlock::Create(ctx_, name + ".last", fn);
  auto* after = llvm::BasicBlock::Create(ctx_, name + ".done", fn);
  b_.CreateCondBr(b_.CreateICmpNE(rem, idx(0)), last, after);
  b_.SetInsertPoint(last);
  std::vector<llvm::Constant*> lanes;
  for (int l = 0; l < vw_; ++l) lanes.push_back(llvm::cast<llvm::Constant>(idx(l)));
  llvm::Value* mask = b_.CreateICmpULT(llvm::ConstantVector::get(lanes), b_.CreateVectorSplat(vw_, rem), name + ".mask");
  body(bulk, mask, 1);
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

bool Emitter::chainBound(const Operation& r) const {
  if (r.kind == OpKind::ReduceMax || r.kind == OpKind::ReduceMin) return false;
  // Whether the reduced value costs more than a few instructions a block:
  // a transcendental function's polynomial hides the chain.
  std::vector<const Value*> pending{r.operands[0]};
  std::set<const Value*> seen;
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    if (!seen.insert(v).second) continue;
    auto d = p_.defOf.find(v);
    if (d == p_.defOf.end() || isReduction(*d->second)) continue;
    switch (d->second->kind) {
      case OpKind::Exp: case OpKind::Log: case OpKind::Tanh: case OpKind::Erf: case OpKind::Sigmoid:
      case OpKind::Gelu: case OpKind::Pow: case OpKind::Sin: case OpKind::Cos:
        return false;
      default: break;
    }
    for (const Value* o : d->second->operands) pending.push_back(o);
  }
  return true;
}

std::vector<Emitter::VecAcc> Emitter::vecAccs(const std::vector<const Operation*>& reds) {
  std::vector<VecAcc> accs;
  llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
  for (const Operation* r : reds) {
    auto* vt = llvm::FixedVectorType::get(accType(*r), vw_);
    VecAcc a{r, {}, {}};
    bool nan = r->kind == OpKind::ReduceMax || r->kind == OpKind::ReduceMin;
    auto* mt = llvm::FixedVectorType::get(b_.getInt1Ty(), vw_);
    for (int part = 0; part < 2; ++part) {
      a.acc[part] = eb.CreateAlloca(vt, nullptr, "vacc." + r->result()->name);
      b_.CreateStore(b_.CreateVectorSplat(vw_, accInit(*r)), a.acc[part]);
      if (!nan) continue;
      a.nan[part] = eb.CreateAlloca(mt, nullptr, "vnan." + r->result()->name);
      b_.CreateStore(llvm::Constant::getNullValue(mt), a.nan[part]);
    }
    accs.push_back(a);
  }
  return accs;
}

void Emitter::vecAccumulate(const VecAcc& a, int part, Ctx& e) {
  const Operation& r = *a.r;
  llvm::Type* at = accType(r);
  auto* vt = llvm::FixedVectorType::get(at, vw_);
  llvm::Value* x = eval(r.operands[0], Frame::Full, e);
  // A value constant along the row (a reduction of a broadcast) is hoisted.
  if (!x->getType()->isVectorTy()) x = b_.CreateVectorSplat(vw_, x);
  if (x->getType() != vt) x = b_.CreateFPExt(x, vt);
  if (e.mask) x = b_.CreateSelect(e.mask, x, b_.CreateVectorSplat(vw_, accInit(r)));
  llvm::Value* acc = b_.CreateLoad(vt, a.acc[part]);
  if (a.nan[part]) {
    // As splitNaN: the maximum of the others with maxnum (one vmaxps), and
    // the lanes that saw a NaN kept apart; the fold makes the row NaN.
    auto* mt = llvm::FixedVectorType::get(b_.getInt1Ty(), vw_);
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(mt, a.nan[part]), b_.CreateFCmpUNO(x, x)), a.nan[part]);
    b_.CreateStore(flaggedMinMax(r, acc, x), a.acc[part]);
    return;
  }
  b_.CreateStore(combine(r, acc, x), a.acc[part]);
}

void Emitter::vecFold(const std::vector<VecAcc>& accs, Ctx& row) {
  for (const VecAcc& a : accs) {
    const Operation& r = *a.r;
    llvm::Type* at = accType(r);
    auto* vt = llvm::FixedVectorType::get(at, vw_);
    llvm::Value* v0 = b_.CreateLoad(vt, a.acc[0]);
    llvm::Value* v1 = b_.CreateLoad(vt, a.acc[1]);
    llvm::Value* s = nullptr;
    if (a.nan[0]) {
      // A lane that saw a NaN may be poison; the flag then selects NaN.
      llvm::Value* v = flaggedMinMax(r, v0, v1);
      s = r.kind == OpKind::ReduceMax ? b_.CreateFPMaxReduce(v) : b_.CreateFPMinReduce(v);
      llvm::cast<llvm::Instruction>(s)->setFastMathFlags(nanApart());
      auto* mt = llvm::FixedVectorType::get(b_.getInt1Ty(), vw_);
      llvm::Value* any = b_.CreateOrReduce(b_.CreateOr(b_.CreateLoad(mt, a.nan[0]), b_.CreateLoad(mt, a.nan[1])));
      s = b_.CreateSelect(any, llvm::ConstantFP::getNaN(at), s);
    } else {
      // The lanes' partial sums in a tree (reassociated, as the loop
      // vectoriser's form was).
      llvm::Value* v = combine(r, v0, v1);
      llvm::FastMathFlags fmf;
      fmf.setAllowReassoc();
      // The start is the identity (-0.0 for a sum), which LLVM drops: 0.0
      // would be one more dependent add before the row's next phase.
      s = r.kind == OpKind::ReduceProd ? b_.CreateFMulReduce(llvm::ConstantFP::get(at, 1.0), v)
                                       : b_.CreateFAddReduce(llvm::ConstantFP::getNegativeZero(at), v);
      llvm::cast<llvm::Instruction>(s)->setFastMathFlags(fmf);
    }
    row.memo[{r.result(), p_.frameOf(r.result(), Frame::Full)}] = finish(r, s);
  }
}

llvm::Value* Emitter::vecLoad(llvm::Type* elt, llvm::Value* ptr, llvm::Value* mask) {
  auto* vt = llvm::FixedVectorType::get(elt, vw_);
  llvm::Align al(elt->getPrimitiveSizeInBits() / 8);
  // The lanes past the row read zeros; what they compute is never used.
  if (mask) return b_.CreateMaskedLoad(vt, ptr, al, mask, llvm::Constant::getNullValue(vt));
  return b_.CreateAlignedLoad(vt, ptr, al);
}

void Emitter::vecStore(size_t i, llvm::Value* v, llvm::Value* at, llvm::Value* mask) {
  llvm::Type* elt = registerType(ctx_, p_.fusion->result(i)->type.dtype);
  if (!v->getType()->isVectorTy()) v = b_.CreateVectorSplat(vw_, v);
  llvm::Value* ptr = b_.CreateInBoundsGEP(elt, out_[i], at);
  llvm::Align al(elt->getPrimitiveSizeInBits() / 8);
  if (mask) b_.CreateMaskedStore(v, ptr, al, mask);
  else b_.CreateAlignedStore(v, ptr, al);
}

llvm::Value* Emitter::vecLoadOut(size_t i, llvm::Value* at, llvm::Value* mask) {
  llvm::Type* elt = registerType(ctx_, p_.fusion->result(i)->type.dtype);
  return vecLoad(elt, b_.CreateInBoundsGEP(elt, out_[i], at), mask);
}

llvm::Value* Emitter::sameShape(llvm::Value* x, llvm::Value* like) {
  auto* vt = llvm::dyn_cast<llvm::VectorType>(like->getType());
  if (!vt || x->getType()->isVectorTy()) return x;
  return b_.CreateVectorSplat(vt->getElementCount(), x);
}

void Emitter::splatScalars(std::vector<llvm::Value*>& args) {
  llvm::Value* like = nullptr;
  for (llvm::Value* a : args)
    if (a->getType()->isVectorTy()) like = a;
  if (!like) return;
  for (llvm::Value*& a : args) a = sameShape(a, like);
}

}  // namespace dscc::codegen::reduction
