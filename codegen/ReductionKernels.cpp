// The loops and loop nests of stitch and input kernels both targets share: rows by phase (CPU and GPU thread groups), row reductions, column blocks, the combine of split partials. Target-only schedules: cpu/CpuReductionSchedules.cpp, gpu/GpuReductionSchedules.cpp.
#include "codegen/ReductionEmitter.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"

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

}  // namespace dscc::codegen::reduction
