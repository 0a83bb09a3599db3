// The loops and loop nests of stitch and input kernels: rows by phase (CPU and GPU groups), split rows, row reductions, column blocks and tiles.
#include "codegen/ReductionEmitter.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"
#include "codegen/GpuReduce.h"

namespace dscc::codegen::reduction {

// --- loops ----------------------------------------------------------------
void Emitter::loop(llvm::Value* lo, llvm::Value* hi, int64_t step, const std::string& name,
                   const std::function<void(llvm::Value*)>& body, bool foldTail, int width) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, name, fn);
  auto* bodyBB = llvm::BasicBlock::Create(ctx_, name + ".body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, name + ".end", fn);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* iv = b_.CreatePHI(it_, 2, name + ".i");
  iv->addIncoming(lo, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  body(iv);
  iv->addIncoming(b_.CreateAdd(iv, idx(step), name + ".next", true, true), b_.GetInsertBlock());
  llvm::BranchInst* back = b_.CreateBr(head);
  if (foldTail || width > 0) {
    llvm::Metadata* on[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.predicate.enable"),
                            llvm::ConstantAsMetadata::get(b_.getTrue())};
    llvm::Metadata* w[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.width"),
                           llvm::ConstantAsMetadata::get(b_.getInt32(width))};
    llvm::Metadata* twice[] = {llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
                               llvm::ConstantAsMetadata::get(b_.getInt32(2))};
    std::vector<llvm::Metadata*> ops = {nullptr};  // the loop ID itself, set below
    if (foldTail) ops.push_back(llvm::MDNode::get(ctx_, on));
    else ops.insert(ops.end(), {llvm::MDNode::get(ctx_, w), llvm::MDNode::get(ctx_, twice)});
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);  // a loop ID names itself
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b_.SetInsertPoint(exit);
}

void Emitter::vecLoop(llvm::Value* n, bool exact, const std::string& name,
                      const std::function<void(llvm::Value*, int)>& body) {
  if (cpuRows_) {
    // A CPU stitch row: LLVM's loop vectoriser widens the loop to 16 lanes
    // interleaved by 2 on AVX-512 and finishes the row in a scalar
    // remainder of up to 31 elements (a row of 112 spent half its time
    // there, a row of 18 all of it). So the row is two loops: the whole
    // 32-element blocks, vectorised at 16 lanes interleaved by 2, then the
    // rest, with its tail predicated (masked loads and stores, no scalar
    // loop). The width is asked for: LLVM's cost model took 8 for loops
    // that sum in f64, which computed a softmax's exp at half the width
    // (rows of 256 ran 1.4x faster at 16); and the interleave, so that a
    // block is one iteration (at 4 a row of 32 went to the remainder).
    llvm::Value* bulk = b_.CreateAnd(n, idx(~int64_t(kRowBulk - 1)), name + ".bulk");
    auto plain = [&] { loop(idx(0), bulk, 1, name, [&](llvm::Value* j) { body(j, 0); }, false, kRowBulk / 2); };
    // A streaming version (see prefetchNextRow): before each chunk of
    // kPrefetchChunk elements, the lines of the next row's chunk. A
    // prefetch in the loop itself would keep it scalar.
    auto chunked = [&] {
      loop(idx(0), bulk, kPrefetchChunk, name + ".chunk", [&](llvm::Value* j0) {
        for (const Prefetch& p : prefetch_) {
          int64_t perLine = std::max<int64_t>(1, 64 / int64_t(dtypeSize(p.dtype)));
          for (int64_t e = 0; e < kPrefetchChunk; e += perLine) {
            llvm::Value* at = b_.CreateAdd(b_.CreateAdd(p.next, j0), idx(e));
            llvm::Value* ptr = b_.CreateGEP(storageType(ctx_, p.dtype), p.base, at);
            b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr->getType()},
                               {ptr, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
          }
        }
        llvm::Value* j1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(j0, idx(kPrefetchChunk)), bulk);
        loop(j0, j1, 1, name, [&](llvm::Value* j) { body(j, 0); }, false, kRowBulk / 2);
      });
    };
    if (prefetch_.empty()) {
      plain();
    } else if (!prefetchOn_) {
      chunked();
    } else {
      // Prefetching decided per row: the loop in both forms (the chunks
      // cost where nothing is prefetched: rows of 1024 ran 0.9x as fast).
      llvm::Function* fn = b_.GetInsertBlock()->getParent();
      auto* yes = llvm::BasicBlock::Create(ctx_, name + ".prefetching", fn);
      auto* no = llvm::BasicBlock::Create(ctx_, name + ".plain", fn);
      auto* join = llvm::BasicBlock::Create(ctx_, name + ".bulk.end", fn);
      b_.CreateCondBr(prefetchOn_, yes, no);
      b_.SetInsertPoint(yes);
      chunked();
      b_.CreateBr(join);
      b_.SetInsertPoint(no);
      plain();
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
    }
    loop(bulk, n, 1, name + ".tail", [&](llvm::Value* j) { body(j, 0); }, /*foldTail=*/true);
    return;
  }
  if (W_ == 1) {
    loop(idx(0), n, 1, name, [&](llvm::Value* j) { body(j, 0); });
    return;
  }
  llvm::Value* nW = exact ? n : b_.CreateSub(n, b_.CreateURem(n, idx(W_)));
  loop(idx(0), nW, W_, name, [&](llvm::Value* j0) {
    for (int l = 0; l < W_; ++l) body(l == 0 ? j0 : b_.CreateAdd(j0, idx(l), "", true, true), l);
  });
  if (!exact) loop(nW, n, 1, name + ".rest", [&](llvm::Value* j) { body(j, 0); });
}

// --- stitch: one row per unit, one loop per phase -------------------------
std::vector<llvm::AllocaInst*> Emitter::startOdometer(llvm::Value* lo) {
  std::vector<llvm::AllocaInst*> odometer;
  if (lanes_ != 1 || keptDim_.size() <= 1 || isGpuModule(*b_.GetInsertBlock()->getModule())) return odometer;
  std::vector<llvm::Value*> start = unflatten(lo, keptDim_);
  llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
  for (size_t q = 0; q < start.size(); ++q) {
    odometer.push_back(eb.CreateAlloca(it_, nullptr, "row.ix" + std::to_string(q)));
    b_.CreateStore(start[q], odometer.back());
  }
  return odometer;
}

void Emitter::advanceOdometer(const std::vector<llvm::AllocaInst*>& odometer) {
  if (odometer.empty()) return;
  llvm::Value* carry = b_.getTrue();
  for (size_t q = odometer.size(); q-- > 0;) {
    llvm::Value* i = b_.CreateLoad(it_, odometer[q]);
    llvm::Value* next = b_.CreateAdd(i, b_.CreateZExt(carry, it_), "", true, true);
    if (q == 0) {
      b_.CreateStore(next, odometer[q]);
      break;
    }
    llvm::Value* wrap = b_.CreateICmpEQ(next, keptDim_[q]);
    b_.CreateStore(b_.CreateSelect(wrap, idx(0), next), odometer[q]);
    carry = wrap;
  }
}

Emitter::Ctx Emitter::stitchRowCtx(llvm::Value* r, const std::vector<llvm::AllocaInst*>& odometer) {
  if (odometer.empty()) return rowCtx(r);
  Ctx row;
  for (llvm::AllocaInst* a : odometer) row.rows.push_back(b_.CreateLoad(it_, a));
  row.full = row.rows;
  row.full.push_back(nullptr);
  return row;
}

void Emitter::emitStitch(llvm::Value* lo, llvm::Value* hi) {
  // 16 lanes: one AVX-512 register of f32 (two on AVX2), the width the loop
  // vectoriser's form took too.
  vw_ = vectorRowsOk() ? 16 : 0;
  if (vw_) return emitStitchVec(lo, hi);
  llvm::Value* L = spaceDim_.back();
  auto [scratchValue, scratchOut] = outputScratch();
  // CPU: the kept indices of row r come from an odometer started at lo
  // and stepped per row, not from divisions per row (a row of 18
  // elements spent a third of its time dividing).
  std::vector<llvm::AllocaInst*> odometer = startOdometer(lo);
  auto advance = [&] { advanceOdometer(odometer); };
  loop(lo, hi, 1, "row", [&](llvm::Value* r) {
    Ctx row = stitchRowCtx(r, odometer);
    llvm::Value* rowBase = b_.CreateMul(r, L, "rowbase", true, true);
    for (int ph = 0; ph < p_.phases; ++ph) {
      std::vector<const Operation*> reds;
      for (const Operation* red : p_.reductions)
        if (p_.phase.at(red) == ph) reds.push_back(red);
      auto accs = laneAccs(reds);
      llvm::BasicBlock* hb = hoistBlock("phase" + std::to_string(ph));
      auto acc = [&](llvm::Value* j, int lane, int it) {
        Ctx e = elemCtx(row, j, hb, lane, it);
        for (auto [red, arr] : accs) accumulate(*red, arr, idx(lane), e);
        if (scratchValue && ph == p_.phases - 1)
          store(scratchOut, eval(scratchValue, Frame::Full, e), b_.CreateAdd(rowBase, j, "", true, true),
                e.blockStart);
      };
      // A kernel that keeps a scratch value in its output (softmax) spends
      // its final loop reading it back: the next row is prefetched during
      // the phases instead, rows of at most 4 KiB in the first phase, longer
      // ones in the last. Beyond the cache, softmax rows of 1024 f32 ran at
      // 89-94% of the copy rate prefetching in the first phase, 72-77% in
      // the last, 71-74% in the final loop; rows of 2048 at 78-82% in the
      // last phase, 68-72% in the first, 69-73% in the final loop. Chosen per
      // row, 78% and 81-87% (bench/results/2026-12-04-fast-math.md).
      bool prefetchHere = scratchValue && (ph == 0 || ph == p_.phases - 1);
      if (prefetchHere) {
        int64_t perPage = 4096 / static_cast<int64_t>(dtypeSize(p_.iface.inputs[0].dtype));
        llvm::Value* shortRow = b_.CreateICmpSLE(L, idx(perPage));
        llvm::Value* here = p_.phases == 1 ? b_.getTrue() : ph == 0 ? shortRow : b_.CreateNot(shortRow);
        prefetchNextRow(b_.CreateAdd(rowBase, L), here);
      }
      if (cacheIters_) cachedRowLoop(L, "phase" + std::to_string(ph) + ".j", acc);
      else rowLoop(L, "phase" + std::to_string(ph) + ".j", [&](llvm::Value* j, int lane) { acc(j, lane, -1); });
      if (prefetchHere) prefetch_.clear();
      foldLanes(accs, row);
    }
    bool anyElem = false;
    for (size_t i = 0; i < out_.size(); ++i) {
      if (p_.resultElem[i]) anyElem = true;
      else storeOnce(i, eval(p_.fusion->yields[i], p_.resultFrame[i], row), r);
    }
    if (!anyElem) return advance();
    llvm::BasicBlock* hb = hoistBlock("final");
    auto fin = [&](llvm::Value* j, int lane, int it) {
      Ctx e = elemCtx(row, j, hb, lane, it);
      llvm::Value* at = b_.CreateAdd(rowBase, j, "", true, true);
      if (scratchValue) e.memo[{scratchValue, Frame::Full}] = loadOut(scratchOut, at, e.blockStart);
      for (size_t i = 0; i < out_.size(); ++i)
        if (p_.resultElem[i]) store(i, eval(p_.fusion->yields[i], Frame::Full, e), at, e.blockStart);
    };
    if (!scratchValue) prefetchNextRow(b_.CreateAdd(rowBase, L));
    if (cacheIters_) cachedRowLoop(L, "final.j", fin);
    else rowLoop(L, "final.j", [&](llvm::Value* j, int lane) { fin(j, lane, -1); });
    prefetch_.clear();
    rowCache_.clear();  // the next row's loads fill new registers
    advance();
  });
}

// --- stitch, GPU Split schedule: a block per (row, chunk), one launch per phase
// Launch k < phases: the earlier phases' per-row values from all chunks'
// partials (combined in chunk order: every block gets the same bits), then
// this chunk's partial of each phase-k reduction into the workspace.
// Launch k = phases: all per-row values, then this chunk's elements of the
// full-size results; chunk 0 stores the per-row results.
void Emitter::emitStitchSplit(llvm::Value* lo, llvm::Value* hi) {
  llvm::Value* L = spaceDim_.back();
  llvm::Value* S = toIdx(chunks64_);
  const int64_t R = static_cast<int64_t>(p_.reductions.size());
  const int k = splitPhase_;
  auto wsSlot = [&](llvm::Value* unit, size_t ri) {
    llvm::Value* at = b_.CreateAdd(b_.CreateMul(unit, idx(R), "", true, true), idx(static_cast<int64_t>(ri)));
    return b_.CreateInBoundsGEP(b_.getInt64Ty(), ws_, at);
  };
  loop(lo, hi, 1, "chunk", [&](llvm::Value* g) {
    llvm::Value* r = b_.CreateUDiv(g, S, "row");
    llvm::Value* part = b_.CreateURem(g, S, "part");
    llvm::Value* c0 = b_.CreateMul(part, idx(v_.splitChunk), "c0", true, true);
    llvm::Value* c1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, L, b_.CreateAdd(c0, idx(v_.splitChunk)), nullptr, "c1");
    Ctx row = rowCtx(r);
    llvm::Value* rowBase = b_.CreateMul(r, L, "rowbase", true, true);
    llvm::Value* rowUnit0 = b_.CreateMul(r, S, "", true, true);
    for (size_t ri = 0; ri < p_.reductions.size(); ++ri) {
      const Operation& red = *p_.reductions[ri];
      if (p_.phase.at(&red) >= k) continue;
      llvm::Value* acc = accArray(red, 1);
      b_.CreateStore(accInit(red), acc);
      loop(idx(0), S, 1, "partials", [&](llvm::Value* q) {
        llvm::Value* x = b_.CreateLoad(accType(red), wsSlot(b_.CreateAdd(rowUnit0, q, "", true, true), ri));
        b_.CreateStore(combine(red, b_.CreateLoad(accType(red), acc), x), acc);
      });
      row.memo[{red.result(), p_.frameOf(red.result(), Frame::Full)}] = finish(red, b_.CreateLoad(accType(red), acc));
    }
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    if (k < p_.phases) {
      std::vector<const Operation*> reds;
      for (const Operation* red : p_.reductions)
        if (p_.phase.at(red) == k) reds.push_back(red);
      auto accs = laneAccs(reds);
      llvm::BasicBlock* hb = hoistBlock("phase" + std::to_string(k));
      rowLoop(c1, "phase.j", [&](llvm::Value* j, int lane) {
        Ctx e = elemCtx(row, j, hb, lane);
        for (auto [red, arr] : accs) accumulate(*red, arr, idx(lane), e);
      }, c0);
      std::vector<std::pair<size_t, llvm::Value*>> partials;
      for (auto [red, arr] : accs) {
        size_t ri = std::find(p_.reductions.begin(), p_.reductions.end(), red) - p_.reductions.begin();
        partials.emplace_back(ri, combinedLanes(*red, arr));
      }
      auto* st = llvm::BasicBlock::Create(ctx_, "partial.store", fn);
      auto* after = llvm::BasicBlock::Create(ctx_, "partial.done", fn);
      b_.CreateCondBr(b_.CreateICmpEQ(lane_, idx(0)), st, after);
      b_.SetInsertPoint(st);
      for (auto [ri, a] : partials) b_.CreateStore(a, wsSlot(g, ri));
      b_.CreateBr(after);
      b_.SetInsertPoint(after);
      return;
    }
    // The last launch: per-row results once (chunk 0, lane 0), then the elements.
    std::vector<std::pair<size_t, llvm::Value*>> perRow;
    for (size_t i = 0; i < out_.size(); ++i)
      if (!p_.resultElem[i]) perRow.emplace_back(i, eval(p_.fusion->yields[i], p_.resultFrame[i], row));
    if (!perRow.empty()) {
      auto* st = llvm::BasicBlock::Create(ctx_, "row.store", fn);
      auto* after = llvm::BasicBlock::Create(ctx_, "row.done", fn);
      b_.CreateCondBr(b_.CreateAnd(b_.CreateICmpEQ(part, idx(0)), b_.CreateICmpEQ(lane_, idx(0))), st, after);
      b_.SetInsertPoint(st);
      for (auto [i, v] : perRow) store(i, v, r);
      b_.CreateBr(after);
      b_.SetInsertPoint(after);
    }
    if (perRow.size() == out_.size()) return;
    llvm::BasicBlock* hb = hoistBlock("final");
    rowLoop(c1, "final.j", [&](llvm::Value* j, int lane) {
      Ctx e = elemCtx(row, j, hb, lane);
      llvm::Value* at = b_.CreateAdd(rowBase, j, "", true, true);
      for (size_t i = 0; i < out_.size(); ++i)
        if (p_.resultElem[i]) store(i, eval(p_.fusion->yields[i], Frame::Full, e), at, e.blockStart);
    }, c0);
  });
}

// Loops over the reduced dims in order; the innermost is the last axis
// when it is reduced (vectorised), else the caller's body loops itself.
void Emitter::reducedNest(size_t d, std::vector<llvm::Value*>& full, const std::function<void()>& inner) {
  while (d < p_.space.size() && !p_.reduced[d]) ++d;
  if (d == p_.space.size()) {
    inner();
    return;
  }
  loop(idx(0), spaceDim_[d], 1, "red" + std::to_string(d), [&](llvm::Value* i) {
    full[d] = i;
    reducedNest(d + 1, full, inner);
  });
}

// --- input kernel, last axis reduced: one output element per unit --------
void Emitter::emitRowReduce(llvm::Value* lo, llvm::Value* hi) {
  size_t last = p_.space.size() - 1;
  loop(lo, hi, 1, "out", [&](llvm::Value* o) {
    Ctx unit;
    unit.rows = unflatten(o, keptDim_);
    unit.full = spread(unit.rows);
    auto accs = laneAccs(p_.reductions);
    llvm::BasicBlock* hb = hoistBlock("reduce");
    std::vector<llvm::Value*> full = unit.full;
    auto body = [&]() {
      rowLoop(spaceDim_[last], "lastaxis", [&](llvm::Value* j, int lane) {
        Ctx e;
        e.blockStart = lane == 0;
        e.full = full;
        e.full[last] = j;
        e.hoist = &unit;
        e.hoistBlock = hb;
        for (auto [red, arr] : accs) accumulate(*red, arr, idx(lane), e);
      });
    };
    if (p_.space.empty()) {  // a rank-0 "reduction": one element
      Ctx e;
      for (auto [red, arr] : accs) accumulate(*red, arr, idx(0), e);
    } else {
      // Loops over the reduced dims before the last axis, then the row.
      std::function<void(size_t)> nest = [&](size_t d) {
        while (d < last && !p_.reduced[d]) ++d;
        if (d >= last) return body();
        loop(idx(0), spaceDim_[d], 1, "red" + std::to_string(d), [&](llvm::Value* i) {
          full[d] = i;
          nest(d + 1);
        });
      };
      nest(0);
    }
    foldLanes(accs, unit);
    for (size_t i = 0; i < out_.size(); ++i) storeOnce(i, eval(p_.fusion->yields[i], p_.resultFrame[i], unit), o);
  });
}

// --- input kernel, last axis kept: blocks of columns ---------------------
// A range of outputs is cut into blocks of at most kColumnBlock
// consecutive outputs along the last axis; for each block the reduced dims
// loop outside and the block's columns inside, accumulating into a stack
// array, so every read streams along a row.
void Emitter::emitColumns(llvm::Value* lo, llvm::Value* hi) {
  columnBlocks(lo, hi, [&](const Accs& accs, std::vector<llvm::Value*>& full, llvm::Value* c0, llvm::Value* n,
                           llvm::Value*) {
    reducedNest(0, full, [&]() {
      vecLoop(n, false, "cols", [&](llvm::Value* c, int) {
        Ctx e;
        e.full = full;
        e.full.back() = b_.CreateAdd(c0, c, "", true, true);
        for (auto [r, arr] : accs) accumulate(*r, arr, c, e);
      });
    });
  });
}

void Emitter::columnBlocks(llvm::Value* lo, llvm::Value* hi, const ColumnFill& fill) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  // A tile split's combine takes one output per GPU thread: one accumulator
  // each, not a block's array in local memory.
  const int64_t block = v_.schedule == GpuSchedule::TileSplit ? 1 : kColumnBlock;
  Accs accs;
  for (const Operation* r : p_.reductions) accs.emplace_back(r, accArray(*r, block));
  llvm::Value* cols = keptDim_.back();
  std::vector<llvm::Value*> outer(keptDim_.begin(), keptDim_.end() - 1);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "block", fn);
  auto* body = llvm::BasicBlock::Create(ctx_, "block.body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "block.end", fn);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* o = b_.CreatePHI(it_, 2, "o");
  o->addIncoming(lo, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(o, hi), body, exit);
  b_.SetInsertPoint(body);
  llvm::Value* c0 = b_.CreateURem(o, cols, "c0");
  llvm::Value* n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateSub(cols, c0), b_.CreateSub(hi, o));
  n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, n, idx(block), nullptr, "n");
  std::vector<llvm::Value*> keptIx = unflatten(b_.CreateUDiv(o, cols), outer);
  keptIx.push_back(nullptr);  // the column, set per element
  loop(idx(0), n, 1, "init", [&](llvm::Value* c) {
    for (auto [r, arr] : accs) b_.CreateStore(accInit(*r), slot(*r, arr, c));
  });
  std::vector<llvm::Value*> full = spread(keptIx);
  fill(accs, full, c0, n, o);
  loop(idx(0), n, 1, "epilogue", [&](llvm::Value* c) {
    Ctx unit;
    unit.rows = keptIx;
    unit.rows.back() = b_.CreateAdd(c0, c, "", true, true);
    unit.full = spread(unit.rows);
    for (auto [r, arr] : accs)
      unit.memo[{r->result(), p_.frameOf(r->result(), Frame::Full)}] =
          finish(*r, b_.CreateLoad(accType(*r), slot(*r, arr, c)));
    llvm::Value* at = b_.CreateAdd(o, c, "", true, true);
    for (size_t i = 0; i < out_.size(); ++i) store(i, eval(p_.fusion->yields[i], p_.resultFrame[i], unit), at);
  });
  o->addIncoming(b_.CreateAdd(o, n), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

// --- input kernel, last axis kept, CPU RowSplit ---------------------------
// The workspace holds, per chunk and reduction, a slice of one accumulator
// per output (8-byte slots, the accumulator type from the slot's start).
llvm::Value* Emitter::rowSplitSlice(llvm::Value* part, size_t ri) {
  llvm::Value* at = b_.CreateMul(b_.CreateAdd(b_.CreateMul(part, idx(static_cast<int64_t>(p_.reductions.size()))),
                                              idx(static_cast<int64_t>(ri))),
                                 keptCount_);
  return b_.CreateInBoundsGEP(b_.getInt64Ty(), ws_, at);
}

// Launch 0: unit u is (chunk u / O, row of outputs u % O), O = the outputs
// over the last axis' length C. It sums the chunk's rows, whole, into its
// C accumulators, which stay in L1 or L2 while the rows stream past.
void Emitter::emitColumnPartials(llvm::Value* lo, llvm::Value* hi) {
  size_t d0 = 0;
  while (!p_.reduced[d0]) ++d0;
  llvm::Value* C = keptDim_.back();
  std::vector<llvm::Value*> outer(keptDim_.begin(), keptDim_.end() - 1);
  llvm::Value* O = splitOuter_;
  loop(lo, hi, 1, "unit", [&](llvm::Value* u) {
    llvm::Value* part = b_.CreateUDiv(u, O, "part");
    llvm::Value* orow = b_.CreateURem(u, O, "orow");
    llvm::Value* r0 = b_.CreateMul(part, chunkRows_, "r0", true, true);
    llvm::Value* r1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(r0, chunkRows_), spaceDim_[d0],
                                               nullptr, "r1");
    std::vector<llvm::Value*> keptIx = unflatten(orow, outer);
    keptIx.push_back(nullptr);
    std::vector<llvm::Value*> full = spread(keptIx);
    llvm::Value* first = b_.CreateMul(orow, C, "", true, true);
    Accs accs;
    for (size_t ri = 0; ri < p_.reductions.size(); ++ri) {
      const Operation& r = *p_.reductions[ri];
      accs.emplace_back(&r, b_.CreateInBoundsGEP(accType(r), rowSplitSlice(part, ri), first));
    }
    loop(idx(0), C, 1, "init", [&](llvm::Value* c) {
      for (auto [r, arr] : accs) b_.CreateStore(accInit(*r), slot(*r, arr, c));
    });
    loop(r0, r1, 1, "rows", [&](llvm::Value* i) {
      full[d0] = i;
      reducedNest(d0 + 1, full, [&]() {
        vecLoop(C, W_ > 1, "cols", [&](llvm::Value* c, int) {
          Ctx e;
          e.full = full;
          e.full.back() = c;
          for (auto [r, arr] : accs) accumulate(*r, arr, c, e);
        });
      });
    });
  });
}

// Launch 1: blocks of outputs as emitColumns, each combining the chunks'
// partials in chunk order (the same bits whichever thread computed them).
void Emitter::emitColumnCombine(llvm::Value* lo, llvm::Value* hi) {
  columnBlocks(lo, hi, [&](const Accs& accs, std::vector<llvm::Value*>&, llvm::Value*, llvm::Value* n,
                           llvm::Value* o) {
    loop(idx(0), chunks_, 1, "part", [&](llvm::Value* part) {
      for (size_t ri = 0; ri < accs.size(); ++ri) {
        const Operation& r = *accs[ri].first;
        llvm::Value* src = b_.CreateInBoundsGEP(accType(r), rowSplitSlice(part, ri), o);
        vecLoop(n, false, "parts", [&](llvm::Value* c, int) {
          llvm::Value* s = slot(r, accs[ri].second, c);
          llvm::Value* x = b_.CreateLoad(accType(r), b_.CreateInBoundsGEP(accType(r), src, c));
          b_.CreateStore(combine(r, b_.CreateLoad(accType(r), s), x), s);
        });
      }
    });
  });
}

// --- input kernel, last axis kept, GPU Tile schedule ---------------------
// The block's range (at most 32 outputs, given by the launch) is cut into
// segments of consecutive columns as in emitColumns. Thread (s, c) of the
// block's 8 x 32 reads column c of the rows s, s+8, ... (a warp reads 32
// neighbouring floats of one row: coalesced); the 8 partials of a column
// meet in shared memory and slice 0 combines them in order and stores.
// TileSplit's launch 0 is the same over (chunk, output) units: the rows of
// the chunk only, and slice 0 stores the combined partial to the workspace
// (launch 1, emitColumnCombine, finishes).
void Emitter::emitColumnTile(llvm::Value* lo, llvm::Value* hi) {
  const bool partials = v_.schedule == GpuSchedule::TileSplit;
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  const int slices = kGpuBlockSize / 32;
  Accs accs;
  std::vector<llvm::GlobalVariable*> shared;
  for (const Operation* r : p_.reductions) {
    accs.emplace_back(r, accArray(*r, 1));
    shared.push_back(emitSharedArray(b_, accType(*r), kGpuBlockSize, "tile." + r->result()->name));
  }
  llvm::Value* cols = keptDim_.back();
  std::vector<llvm::Value*> outer(keptDim_.begin(), keptDim_.end() - 1);
  std::vector<llvm::Value*> redDims;
  for (size_t d = 0; d < p_.space.size(); ++d)
    if (p_.reduced[d]) redDims.push_back(spaceDim_[d]);
  llvm::Value* rows = idx(1);
  for (llvm::Value* d : redDims) rows = b_.CreateMul(rows, d, "", true, true);
  // A chunk's rows of the outermost reduced dim are a range of the flat
  // reduced index: times the inner reduced dims' extent.
  llvm::Value* inner = idx(1);
  for (size_t q = 1; q < redDims.size(); ++q) inner = b_.CreateMul(inner, redDims[q], "", true, true);
  llvm::Value* sharedAt = b_.CreateAdd(b_.CreateMul(rowLane_, idx(32)), colLane_);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "seg", fn);
  auto* body = llvm::BasicBlock::Create(ctx_, "seg.body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "seg.end", fn);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* o = b_.CreatePHI(it_, 2, "o");
  o->addIncoming(lo, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(o, hi), body, exit);
  b_.SetInsertPoint(body);
  // Segments end at a row of outputs, so at a chunk's end too.
  llvm::Value* part = partials ? b_.CreateUDiv(o, keptCount_, "part") : nullptr;
  llvm::Value* oo = partials ? b_.CreateURem(o, keptCount_, "oo") : o;
  llvm::Value* c0 = b_.CreateURem(oo, cols, "c0");
  llvm::Value* n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateSub(cols, c0), b_.CreateSub(hi, o), nullptr, "n");
  std::vector<llvm::Value*> keptIx = unflatten(b_.CreateUDiv(oo, cols), outer);
  keptIx.push_back(b_.CreateAdd(c0, colLane_, "", true, true));
  llvm::Value* valid = b_.CreateICmpULT(colLane_, n, "valid");
  for (auto [r, arr] : accs) b_.CreateStore(accInit(*r), slot(*r, arr, idx(0)));
  llvm::Value* rBegin = idx(0);
  llvm::Value* rEnd = rows;
  if (partials) {
    llvm::Value* r0 = b_.CreateMul(part, chunkRows_, "r0", true, true);
    llvm::Value* r1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(r0, chunkRows_), redDims[0], nullptr, "r1");
    rBegin = b_.CreateMul(r0, inner, "", true, true);
    rEnd = b_.CreateMul(r1, inner, "", true, true);
  }
  // Rows of this thread's slice; threads past the segment's columns only
  // take part in the barriers.
  llvm::Value* start = b_.CreateSelect(valid, b_.CreateAdd(rBegin, rowLane_, "", true, true), rEnd);
  loop(start, rEnd, slices, "rows", [&](llvm::Value* rr) {
    std::vector<llvm::Value*> red = unflatten(rr, redDims);
    Ctx e;
    e.full = spread(keptIx);
    size_t q = 0;
    for (size_t d = 0; d < p_.space.size(); ++d)
      if (p_.reduced[d]) e.full[d] = red[q++];
    for (auto [r, arr] : accs) accumulate(*r, arr, idx(0), e);
  });
  emitBarrier(b_);  // the previous segment's readers are done with the arrays
  for (size_t k = 0; k < accs.size(); ++k) {
    auto [r, arr] = accs[k];
    b_.CreateStore(b_.CreateLoad(accType(*r), slot(*r, arr, idx(0))),
                   b_.CreateInBoundsGEP(shared[k]->getValueType(), shared[k], {idx(0), sharedAt}));
  }
  emitBarrier(b_);
  auto* fin = llvm::BasicBlock::Create(ctx_, "tile.store", fn);
  auto* next = llvm::BasicBlock::Create(ctx_, "tile.next", fn);
  b_.CreateCondBr(b_.CreateAnd(valid, b_.CreateICmpEQ(rowLane_, idx(0))), fin, next);
  b_.SetInsertPoint(fin);
  Ctx unit;
  unit.rows = keptIx;
  unit.full = spread(unit.rows);
  for (size_t k = 0; k < accs.size(); ++k) {
    const Operation* r = accs[k].first;
    llvm::Value* a = nullptr;
    for (int sl = 0; sl < slices; ++sl) {
      llvm::Value* at = b_.CreateAdd(idx(int64_t(sl) * 32), colLane_);
      llvm::Value* x = b_.CreateLoad(accType(*r), b_.CreateInBoundsGEP(shared[k]->getValueType(), shared[k], {idx(0), at}));
      a = a ? combine(*r, a, x) : x;
    }
    if (partials)
      b_.CreateStore(a, b_.CreateInBoundsGEP(accType(*r), rowSplitSlice(part, k), b_.CreateAdd(oo, colLane_, "", true, true)));
    else
      unit.memo[{r->result(), p_.frameOf(r->result(), Frame::Full)}] = finish(*r, a);
  }
  llvm::Value* at = b_.CreateAdd(o, colLane_, "", true, true);
  if (!partials)
    for (size_t i = 0; i < out_.size(); ++i) store(i, eval(p_.fusion->yields[i], p_.resultFrame[i], unit), at);
  b_.CreateBr(next);
  b_.SetInsertPoint(next);
  o->addIncoming(b_.CreateAdd(o, n), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

}  // namespace dscc::codegen::reduction
