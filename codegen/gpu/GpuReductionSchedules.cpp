// GPU schedules of stitch and input kernels: the Split stitch (a block per row chunk, a launch per phase) and the column Tile (8 x 32 threads per block of outputs).
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"
#include "codegen/ReductionEmitter.h"
#include "codegen/gpu/GpuReduce.h"

namespace dscc::codegen::reduction {

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
