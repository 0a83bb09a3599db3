// CPU stitch rows in explicit vectors: blocks of 16 lanes, a masked last block, one horizontal fold per reduction.
#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"
#include "codegen/ReductionEmitter.h"
#include "codegen/cpu/Streaming.h"

namespace dscc::codegen::reduction {

bool Emitter::vectorRowsOk() const {
  // A strict streaming version (rows of whole lines, aligned outputs) leaves
  // its stores to the loop vectoriser and the late pass; a peeled one's
  // stores are this form's (emitStitchVec).
  if (!cpuRows_ || (v_.stream && !v_.streamPeeled) || lanes_ != 1 || cacheIters_ != 0) return false;
  if (!rowVectorValues(*p_.fusion)) return false;
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
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::Type* f32 = b_.getFloatTy();
  // A peeled streaming version streams the whole lines of each row
  // (streamRow). Its scratch row (outputScratch: a value the last phase
  // reduces and the final loop reads back) is on the stack: in the output it
  // would be read back from memory after the streaming stores. Two rows, as
  // the next row's first phase may run before this row's final loop; a
  // longer row keeps it in the output, and ordinary stores.
  const bool nt = v_.stream && v_.streamPeeled;
  llvm::Value* stack = nullptr;
  llvm::Value* streamable = nullptr;  // i1: this call's rows may stream
  LineCarry line;
  if (nt) {
    markStreaming(*fn);
    streamable = b_.getTrue();
    llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
    line.count = eb.CreateAlloca(it_, nullptr, "carry.count");
    line.at = eb.CreateAlloca(it_, nullptr, "carry.at");
    b_.CreateStore(idx(0), line.count);
    b_.CreateStore(idx(0), line.at);
    for (size_t k = 0; k < out_.size(); ++k) {
      auto* a = eb.CreateAlloca(llvm::ArrayType::get(f32, vw_), nullptr, "carry.line");
      a->setAlignment(llvm::Align(64));
      line.buf.push_back(a);
    }
    if (scratchValue) {
      auto* a = eb.CreateAlloca(llvm::ArrayType::get(f32, 2 * kStreamScratchRow), nullptr, "scratch.rows");
      a->setAlignment(llvm::Align(64));
      stack = a;
      streamable = b_.CreateICmpULE(L, idx(kStreamScratchRow));
    }
    // The element outputs' rows start at the same place in a line only
    // when their buffers do.
    llvm::Value* first = nullptr;
    for (size_t k = 0; k < out_.size(); ++k) {
      if (!p_.resultElem[k]) continue;
      llvm::Value* a = b_.CreatePtrToInt(out_[k], b_.getInt64Ty());
      if (!first) first = a;
      else
        streamable = b_.CreateAnd(streamable, b_.CreateICmpEQ(b_.CreateAnd(b_.CreateSub(a, first), 63), b_.getInt64(0)));
    }
  }
  // Where row r keeps its scratch value.
  auto scratchRow = [&](llvm::Value* r, llvm::Value* rowBase) {
    llvm::Value* inOut = b_.CreateInBoundsGEP(f32, out_[scratchOut], rowBase);
    if (!stack) return inOut;
    llvm::Value* slot = b_.CreateMul(b_.CreateAnd(r, idx(1)), idx(kStreamScratchRow));
    return b_.CreateSelect(streamable, b_.CreateInBoundsGEP(f32, stack, slot), inOut);
  };
  auto ctx = [&](Ctx& row, llvm::Value* j, llvm::Value* mask, llvm::BasicBlock* hb) {
    Ctx e = elemCtx(row, j, hb, 0);
    e.vec = true;
    e.mask = mask;
    return e;
  };
  // One phase of a row: its reductions' loop, then their folds into the row's memo.
  auto phase = [&](Ctx& row, llvm::Value* r, llvm::Value* rowBase, int ph) {
    std::vector<const Operation*> reds;
    for (const Operation* red : p_.reductions)
      if (p_.phase.at(red) == ph) reds.push_back(red);
    std::vector<VecAcc> accs = vecAccs(reds);
    llvm::BasicBlock* hb = hoistBlock("phase" + std::to_string(ph));
    llvm::Value* scratch = scratchValue && ph == p_.phases - 1 ? scratchRow(r, rowBase) : nullptr;
    bool pairs = false;
    for (const Operation* red : reds) pairs |= chainBound(*red);
    vecRowLoop(L, "phase" + std::to_string(ph) + ".j", pairs, [&](llvm::Value* j, llvm::Value* mask, int part) {
      Ctx e = ctx(row, j, mask, hb);
      for (const VecAcc& a : accs) vecAccumulate(a, part, e);
      // The value the last phase reduces, kept in the output row (see outputScratch).
      if (scratch) vecStoreAt(eval(scratchValue, Frame::Full, e), b_.CreateInBoundsGEP(f32, scratch, j), mask);
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
    phase(row, r, b_.CreateMul(r, L, "rowbase", true, true), 0);
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
  auto finish = [&](Ctx& row, llvm::Value* r, llvm::Value* rowBase, bool rowsAhead) {
    bool anyElem = false;
    for (size_t k = 0; k < out_.size(); ++k) {
      if (p_.resultElem[k]) anyElem = true;
      else storeOnce(k, eval(p_.fusion->yields[k], p_.resultFrame[k], row), r);
    }
    if (!anyElem) return;
    llvm::BasicBlock* hb = hoistBlock("final");
    llvm::Value* scratch = scratchValue ? scratchRow(r, rowBase) : nullptr;
    RowBlock block = [&](llvm::Value* j, llvm::Value* mask, bool streamed, const RowDest& dest) {
      Ctx e = ctx(row, j, mask, hb);
      if (scratch) e.memo[{scratchValue, Frame::Full}] = vecLoad(f32, b_.CreateInBoundsGEP(f32, scratch, j), mask);
      for (size_t k = 0; k < out_.size(); ++k) {
        if (!p_.resultElem[k]) continue;
        llvm::Value* ptr = dest ? dest(k, j) : b_.CreateInBoundsGEP(f32, out_[k], b_.CreateAdd(rowBase, j, "", true, true));
        vecStoreAt(eval(p_.fusion->yields[k], Frame::Full, e), ptr, mask, streamed);
      }
    };
    if (!nt)
      return vecRowLoop(L, "final.j", false, [&](llvm::Value* j, llvm::Value* mask, int) { block(j, mask, false, nullptr); });
    streamRow(rowBase, L, streamable, line, rowsAhead, block);
  };
  auto* ahead = llvm::BasicBlock::Create(ctx_, "rows.ahead", fn);
  auto* inOrder = llvm::BasicBlock::Create(ctx_, "rows.inorder", fn);
  auto* done = llvm::BasicBlock::Create(ctx_, "rows.done", fn);
  // Only rows of at most 4 KiB: a longer row is no longer in L1 when its
  // final loop comes after the next row's phase 0 (rms_norm rows of 16 KiB
  // ran 1.15x slower ahead; softmax rows of 1.5 KiB 1.06x faster).
  auto* some = llvm::BasicBlock::Create(ctx_, "rows.some", fn);
  // The range is clamped to the rows: it may be empty here, where the
  // odometer's divisions may be by 0 and the prologue below would run row lo.
  b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), some, done);
  b_.SetInsertPoint(some);
  odometer = startOdometer(lo);
  b_.CreateCondBr(b_.CreateICmpSLE(L, idx(kRowsAheadMax)), ahead, inOrder);
  b_.SetInsertPoint(ahead);
  phase0(lo);
  loop(lo, hi, 1, "row", [&](llvm::Value* r) {
    Ctx row = stitchRowCtx(r, odometer);
    advanceOdometer(odometer);
    for (auto [key, slot] : carry) row.memo[key] = b_.CreateLoad(slot->getAllocatedType(), slot);
    llvm::Value* rowBase = b_.CreateMul(r, L, "rowbase", true, true);
    for (int ph = 1; ph < p_.phases; ++ph) phase(row, r, rowBase, ph);
    llvm::Value* next = b_.CreateAdd(r, idx(1), "row.next1", true, true);
    auto* pre = llvm::BasicBlock::Create(ctx_, "row.ahead", fn);
    auto* after = llvm::BasicBlock::Create(ctx_, "row.ahead.done", fn);
    b_.CreateCondBr(b_.CreateICmpSLT(next, hi), pre, after);
    b_.SetInsertPoint(pre);
    phase0(next);
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
    finish(row, r, rowBase, true);
  });
  b_.CreateBr(done);
  b_.SetInsertPoint(inOrder);
  loop(lo, hi, 1, "row", [&](llvm::Value* r) {
    Ctx row = stitchRowCtx(r, odometer);
    advanceOdometer(odometer);
    llvm::Value* rowBase = b_.CreateMul(r, L, "rowbase", true, true);
    for (int ph = 0; ph < p_.phases; ++ph) phase(row, r, rowBase, ph);
    finish(row, r, rowBase, false);
  });
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  if (nt) flushCarry(line);
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
  vecSpan(pairEnd, n, name, [&](llvm::Value* j, llvm::Value* mask) { body(j, mask, mask ? 1 : 0); });
}

void Emitter::vecSpan(llvm::Value* from, llvm::Value* to, const std::string& name,
                      const std::function<void(llvm::Value*, llvm::Value*)>& body) {
  auto* zero = llvm::dyn_cast<llvm::ConstantInt>(from);
  llvm::Value* bulk = zero && zero->isZero()
                          ? b_.CreateAnd(to, idx(~int64_t(vw_ - 1)), name + ".bulk")
                          : b_.CreateAdd(from, b_.CreateAnd(b_.CreateSub(to, from), idx(~int64_t(vw_ - 1))),
                                         name + ".bulk", true, true);
  loop(from, bulk, vw_, name, [&](llvm::Value* j) { body(j, nullptr); });
  llvm::Value* rem = b_.CreateSub(to, bulk, name + ".rem", true, true);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* last = llvm::BasicBlock::Create(ctx_, name + ".last", fn);
  auto* after = llvm::BasicBlock::Create(ctx_, name + ".done", fn);
  b_.CreateCondBr(b_.CreateICmpNE(rem, idx(0)), last, after);
  b_.SetInsertPoint(last);
  std::vector<llvm::Constant*> lanes;
  for (int l = 0; l < vw_; ++l) lanes.push_back(llvm::cast<llvm::Constant>(idx(l)));
  llvm::Value* mask = b_.CreateICmpULT(llvm::ConstantVector::get(lanes), b_.CreateVectorSplat(vw_, rem), name + ".mask");
  body(bulk, mask);
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

void Emitter::streamRow(llvm::Value* rowBase, llvm::Value* L, llvm::Value* streamable, const LineCarry& carry,
                        bool rowsAhead, const RowBlock& block) {
  // The row's first element output decides where its lines start (the
  // others start at the same place: `streamable`). Elements up to the first
  // line boundary (the head), then whole lines streamed, then the rest (the
  // tail). A line shared by two rows is gathered in `carry` from the tail of
  // the one and the head of the next and streamed once whole: stored as
  // usual, its read for ownership made the prefetchers fetch the lines
  // around it, which the streaming stores then wrote over (softmax rows of
  // 343 f32 ran 1.3x slower than with no streaming at all). A buffer not
  // even 4-byte aligned streams nothing.
  llvm::Type* f32 = b_.getFloatTy();
  size_t k0 = 0;
  while (!p_.resultElem[k0]) ++k0;
  llvm::Value* addr = b_.CreatePtrToInt(b_.CreateInBoundsGEP(f32, out_[k0], rowBase), b_.getInt64Ty());
  llvm::Value* toLine = toIdx(b_.CreateLShr(b_.CreateAnd(b_.CreateNeg(addr), 63), 2));
  llvm::Value* ok = b_.CreateAnd(streamable, b_.CreateICmpEQ(b_.CreateAnd(addr, 3), b_.getInt64(0)));
  llvm::Value* head = b_.CreateSelect(ok, b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, toLine, L), L, "head");
  llvm::Value* lines =
      b_.CreateAdd(head, b_.CreateAnd(b_.CreateSub(L, head), idx(~int64_t(vw_ - 1))), "lines.end", true, true);
  // The head continues the carried line when there is one (the rows are
  // consecutive, so it ends the line or this row); else, in the range's
  // first row, it shares its line with the previous range's rows.
  llvm::Value* pending = b_.CreateLoad(it_, carry.count, "carried");
  llvm::Value* joins = b_.CreateICmpNE(pending, idx(0));
  vecSpan(idx(0), head, "final.head", [&](llvm::Value* j, llvm::Value* mask) {
    block(j, mask, false, [&](size_t k, llvm::Value* jj) {
      llvm::Value* own = b_.CreateInBoundsGEP(f32, out_[k], b_.CreateAdd(rowBase, jj, "", true, true));
      llvm::Value* into = b_.CreateInBoundsGEP(f32, carry.buf[k], b_.CreateAdd(pending, jj, "", true, true));
      return b_.CreateSelect(joins, into, own);
    });
  });
  llvm::Value* filled = b_.CreateAdd(pending, head, "", true, true);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* full = llvm::BasicBlock::Create(ctx_, "carry.full", fn);
  auto* kept = llvm::BasicBlock::Create(ctx_, "carry.kept", fn);
  b_.CreateStore(b_.CreateSelect(joins, filled, idx(0)), carry.count);
  b_.CreateCondBr(b_.CreateAnd(joins, b_.CreateICmpEQ(filled, idx(vw_))), full, kept);
  b_.SetInsertPoint(full);
  llvm::Value* at = b_.CreateLoad(it_, carry.at);
  auto* vt = llvm::FixedVectorType::get(f32, vw_);
  for (size_t k = 0; k < out_.size(); ++k)
    if (p_.resultElem[k])
      streamStore(b_, b_.CreateAlignedLoad(vt, carry.buf[k], llvm::Align(64)), b_.CreateInBoundsGEP(f32, out_[k], at));
  b_.CreateStore(idx(0), carry.count);
  b_.CreateBr(kept);
  b_.SetInsertPoint(kept);
  // Each line written, a line of the inputs' row after the next when rows
  // run ahead (the next one was read already by its first phase), else of
  // the next row. Without the prefetches, layer_norm and rms_norm beyond
  // the cache ran 1.1x slower than the loop vectoriser's streaming form,
  // which prefetches. Into L1, but for longer rows (in order) with two or
  // more phases, which re-read the row from L1 meanwhile: into L2 layer_norm
  // rows of 4096 and 16384 ran 1.1x faster, rms_norm rows of 4096 (one
  // phase) 1.05x slower, rows of 1000-1024 (ahead) 1.06-1.1x slower.
  llvm::Value* next = b_.CreateAdd(rowBase, b_.CreateMul(L, idx(rowsAhead ? 2 : 1)));
  const int locality = rowsAhead || p_.phases <= 1 ? 3 : 2;
  loop(head, lines, vw_, "final.lines", [&](llvm::Value* j) {
    for (size_t k = 0; k < p_.iface.inputs.size(); ++k) {
      if (p_.iface.inputs[k].dims != p_.space) continue;
      llvm::Value* ptr = b_.CreateGEP(b_.getFloatTy(), base_[k], b_.CreateAdd(next, j));
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr->getType()},
                         {ptr, b_.getInt32(0), b_.getInt32(locality), b_.getInt32(1)});
    }
    block(j, nullptr, true, nullptr);
  });
  // The tail starts a line (or is empty): it is carried to the next row.
  vecSpan(lines, L, "final.tail", [&](llvm::Value* j, llvm::Value* mask) {
    block(j, mask, false, [&](size_t k, llvm::Value* jj) {
      return b_.CreateInBoundsGEP(f32, carry.buf[k], b_.CreateSub(jj, lines, "", true, true));
    });
  });
  llvm::Value* tail = b_.CreateSub(L, lines, "", true, true);
  auto* starts = llvm::BasicBlock::Create(ctx_, "carry.start", fn);
  auto* after = llvm::BasicBlock::Create(ctx_, "carry.done", fn);
  b_.CreateCondBr(b_.CreateICmpNE(tail, idx(0)), starts, after);
  b_.SetInsertPoint(starts);
  b_.CreateStore(tail, carry.count);
  b_.CreateStore(b_.CreateAdd(rowBase, lines, "", true, true), carry.at);
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

void Emitter::flushCarry(const LineCarry& carry) {
  // The range's last line, shared with the next range's first row: stored
  // as usual.
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* n = b_.CreateLoad(it_, carry.count);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* some = llvm::BasicBlock::Create(ctx_, "carry.flush", fn);
  auto* after = llvm::BasicBlock::Create(ctx_, "carry.flushed", fn);
  b_.CreateCondBr(b_.CreateICmpNE(n, idx(0)), some, after);
  b_.SetInsertPoint(some);
  std::vector<llvm::Constant*> lanes;
  for (int l = 0; l < vw_; ++l) lanes.push_back(llvm::cast<llvm::Constant>(idx(l)));
  llvm::Value* mask = b_.CreateICmpULT(llvm::ConstantVector::get(lanes), b_.CreateVectorSplat(vw_, n));
  llvm::Value* at = b_.CreateLoad(it_, carry.at);
  auto* vt = llvm::FixedVectorType::get(f32, vw_);
  for (size_t k = 0; k < out_.size(); ++k)
    if (p_.resultElem[k])
      vecStoreAt(b_.CreateAlignedLoad(vt, carry.buf[k], llvm::Align(64)), b_.CreateInBoundsGEP(f32, out_[k], at), mask);
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

void Emitter::vecStoreAt(llvm::Value* v, llvm::Value* ptr, llvm::Value* mask, bool streamed) {
  if (!v->getType()->isVectorTy()) v = b_.CreateVectorSplat(vw_, v);
  llvm::Align al(v->getType()->getScalarSizeInBits() / 8);
  if (mask) {
    b_.CreateMaskedStore(v, ptr, al, mask);
    return;
  }
  if (streamed) return streamStore(b_, v, ptr);
  b_.CreateAlignedStore(v, ptr, al);
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
