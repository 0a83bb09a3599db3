// The emitter of stitch and input kernels (internal to codegen/): values per element, accumulators, loops.
//
// One Emitter emits one version of a planned kernel (ReductionPlan.h); the
// loop nests of each kernel shape are in ReductionKernels.cpp, the entry
// points in ReductionLowering.cpp.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementGenerator.h"
#include "codegen/ElementOps.h"
#include "codegen/gpu/GpuReduce.h"
#include "codegen/KernelLowering.h"
#include "codegen/ReductionPlan.h"
#include "codegen/cpu/Streaming.h"
#include "ir/ValueFacts.h"

namespace dscc::codegen::reduction {

// Columns per block of the column path: 256 accumulators of f64 (2 KiB each
// reduction) stay in L1 while rows stream past.
constexpr int64_t kColumnBlock = 1024;

// The most unrolled blocks per thread a block's row cache may take, and a
// warp's. On an H200 a warp re-reading its row (L1 hits) beat the cached row
// at every length measured (f32 rows of 256-2048; f16 rows of 216-384 ran
// 2-3x slower with 12 cached blocks than with 4): the register row lowers
// occupancy. So the default warp range (rows under 3072) is never cached;
// --row-schedule=32,1024 gives the earlier cached versions (8 blocks of f32).
constexpr int kRowCacheIters = 16;
constexpr int kWarpRowCacheIters = 8;

// CPU stitch rows: the elements the loop vectoriser's main loop takes per
// iteration on AVX-512 (16 lanes, interleaved by 2); see Emitter::vecLoop.
constexpr int64_t kRowBulk = 32;

// CPU streaming versions: the elements of a row's final loop between
// prefetches of the next row (16 lines of f32).
constexpr int64_t kPrefetchChunk = 256;

// CPU stitch rows in explicit vectors: the longest row (f32 elements, 4 KiB)
// whose first phase runs ahead, in the previous row's iteration.
constexpr int64_t kRowsAheadMax = 4096 / 4;

// CPU peeled streaming versions: the longest row whose scratch value
// (outputScratch) is kept on the stack, in f32 elements (16 KiB; two rows).
constexpr int64_t kStreamScratchRow = 4096;

// Emits a planned kernel at the builder's insertion point.
class Emitter : public ElementSource {
 public:
  Emitter(const Plan& p, llvm::IRBuilderBase& b, const KernelVariant& v, int splitPhase = -1)
      : p_(p), b_(b), ctx_(b.getContext()), v_(v), W_(std::max(1, v.vectorWidth)), splitPhase_(splitPhase),
        gen_(*p.fusion, b, *this) {
    it_ = v.index32 ? b.getInt32Ty() : b.getInt64Ty();
    // CPU stitch kernels leave the rows' loops to LLVM's loop vectoriser,
    // in vector versions too: it widened W unrolled lanes each on its own
    // across iterations (strided loads, a shuffle per lane, W horizontal
    // folds per row), and the plain loop ran 1.4-1.7x faster on softmax
    // rows and 2x on layer_norm rows of 96 (bench/results/2026-12-04-
    // vector-width.md). The version's guard still holds; it is just not used.
    if (p.stitch && v.schedule == GpuSchedule::Thread && !isGpuModule(*b.GetInsertBlock()->getModule())) {
      W_ = 1;
      cpuRows_ = true;
    }
    // Tiles address their threads by row slice and column (rowLane_, colLane_).
    if (v.schedule != GpuSchedule::Tile && v.schedule != GpuSchedule::TileSplit) lanes_ = scheduleLanes(v.schedule);
    // A warp's or block's row of at most rowMax elements is at most `iters`
    // vector blocks per thread: unrolled, its loads are kept in registers
    // from the phase that first reads them to the last (kRowCacheIters
    // bounds the code).
    if ((v.schedule == GpuSchedule::Warp || v.schedule == GpuSchedule::Block) && W_ > 1 && v.rowMax > 0) {
      int64_t iters = (v.rowMax + int64_t(lanes_) * W_ - 1) / (int64_t(lanes_) * W_);
      if (iters <= (v.schedule == GpuSchedule::Warp ? kWarpRowCacheIters : kRowCacheIters))
        cacheIters_ = static_cast<int>(iters);
    }
  }

  void emit(llvm::Value* inputs, llvm::Value* outputs, llvm::Value* sizes, llvm::Value* begin, llvm::Value* end) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    entry_ = &fn->getEntryBlock();
    auto* setup = llvm::BasicBlock::Create(ctx_, "setup", fn);
    done_ = llvm::BasicBlock::Create(ctx_, "done", fn);
    // An empty range touches no pointer, so callers may pass null buffers.
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), setup, done_);
    b_.SetInsertPoint(setup);
    emitSetup(inputs, outputs, sizes);
    // A tile split's combine launch (1) takes a thread per output.
    bool tiles = v_.schedule == GpuSchedule::Tile || (v_.schedule == GpuSchedule::TileSplit && splitPhase_ == 0);
    if (v_.schedule != GpuSchedule::Thread && v_.schedule != GpuSchedule::RowSplit &&
        (v_.schedule != GpuSchedule::TileSplit || tiles)) {
      // GPU schedules: where this thread stands in the group sharing a unit.
      llvm::Value* tid = emitThreadIdX(b_);
      if (tiles) {
        colLane_ = toIdx(b_.CreateAnd(tid, 31));
        rowLane_ = toIdx(b_.CreateLShr(tid, 5));
      } else {
        lane_ = toIdx(v_.schedule == GpuSchedule::Warp ? b_.CreateAnd(tid, 31) : tid);
      }
    }
    if (v_.schedule == GpuSchedule::Split) {
      // Units are (row, chunk) pairs.
      llvm::Value* L = b_.CreateZExt(spaceDim_.back(), b_.getInt64Ty());
      llvm::Value* chunks = b_.CreateUDiv(b_.CreateAdd(L, b_.getInt64(v_.splitChunk - 1)), b_.getInt64(v_.splitChunk));
      chunks64_ = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, chunks, b_.getInt64(1), nullptr, "chunks");
      units64_ = b_.CreateMul(units64_, chunks64_);
    }
    llvm::Value* lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, begin, b_.getInt64(0), nullptr, "lo");
    llvm::Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, end, units64_, nullptr, "hi");
    lo = b_.CreateTrunc(lo, it_);
    hi = b_.CreateTrunc(hi, it_);
    if (v_.schedule == GpuSchedule::Split) emitStitchSplit(lo, hi);
    else if (p_.stitch) emitStitch(lo, hi);
    else if (p_.column && v_.schedule == GpuSchedule::Tile) emitColumnTile(lo, hi);
    else if (p_.column && v_.schedule == GpuSchedule::TileSplit && splitPhase_ == 0) emitColumnTile(lo, hi);
    else if (p_.column && v_.schedule == GpuSchedule::RowSplit && splitPhase_ == 0) emitColumnPartials(lo, hi);
    else if (p_.column && (v_.schedule == GpuSchedule::RowSplit || v_.schedule == GpuSchedule::TileSplit))
      emitColumnCombine(lo, hi);
    else if (p_.column) emitColumns(lo, hi);
    else emitRowReduce(lo, hi);
    b_.CreateBr(done_);
    b_.SetInsertPoint(done_);
  }

 private:
  // Where values are evaluated: an index per dim of each frame (null: the
  // value does not vary there, read index 0), the values already emitted,
  // and the per-unit context that unit-level values are hoisted to.
  struct Ctx {
    using Key = std::pair<const Value*, Frame>;
    std::vector<llvm::Value*> full, rows;
    std::map<Key, llvm::Value*> memo;
    Ctx* hoist = nullptr;
    llvm::BasicBlock* hoistBlock = nullptr;  // its terminator is the hoist point
    // The last full-frame index starts a vector block (lane 0 of a block of W):
    // in aligned versions its unit-stride accesses are aligned to the block.
    bool blockStart = false;
    // Row cache: which unrolled block (-1: none) and lane in it this element is.
    int cacheIter = -1, lane = 0;
    // Explicit vector rows (vw_): the index is a block's first element and
    // values along the row are vectors of vw_ lanes; `mask` (<vw_ x i1>)
    // keeps the lanes inside the row in the last, partial block.
    bool vec = false;
    llvm::Value* mask = nullptr;
  };

  llvm::Value* idx(int64_t c) { return llvm::ConstantInt::get(it_, c); }
  // Whether `m` is compiled for NVPTX (the GPU), not the CPU.
  static bool isGpuModule(const llvm::Module& m) { return llvm::StringRef(m.getTargetTriple()).starts_with("nvptx"); }
  llvm::Value* toIdx(llvm::Value* v) { return b_.CreateZExtOrTrunc(v, it_); }

  void emitSetup(llvm::Value* inputs, llvm::Value* outputs, llvm::Value* sizes) {
    DimEmitter dims(b_, sizes, p_.iface.symbols);
    for (const DimExpr& d : p_.space) spaceDim_.push_back(toIdx(dims.emit(d)));
    for (const DimExpr& d : p_.kept) keptDim_.push_back(toIdx(dims.emit(d)));
    units64_ = dims.emit(p_.iface.units);
    count64_ = dims.emit(p_.iface.workPerUnit);
    llvm::Type* ptrTy = b_.getPtrTy();
    for (size_t k = 0; k < p_.iface.inputs.size(); ++k) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, inputs, k);
      base_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "in." + p_.fusion->operands[k]->name));
    }
    for (auto [k, fr] : p_.reads) {
      const Type& t = p_.iface.inputs[k];
      const std::vector<DimExpr>& fd = p_.dims(fr);
      std::vector<llvm::Value*>& s = stride_[{k, fr}];
      for (size_t d = 0; d < t.rank(); ++d) {
        Access a = accessOf(t, fd, d + fd.size() - t.rank());
        if (a == Access::Bcast) {
          s.push_back(nullptr);
          continue;
        }
        // The broadcast-free version was called only where the dims are equal.
        if (a == Access::Dynamic && v_.broadcastFree) a = Access::Contig;
        s.push_back(emitOperandStride(b_, dims, t, d, a, it_));
      }
    }
    for (size_t i = 0; i < p_.fusion->results.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, outputs, i);
      out_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "out." + p_.fusion->result(i)->name));
    }
    // A streaming version whose output holds a scratch value between
    // phases (a softmax's exp) keeps ordinary stores: streamed, the scratch
    // would be read back from memory, and recomputing it instead made
    // softmax beyond the cache 1.2x slower than keeping it in the cache
    // (bench/results/2026-12-04-stream-nt.md). It still prefetches.
    if (v_.stream && !v_.streamPeeled && !outputScratch().first)
      assumeStreamGuard(b_, out_, dims.emit(p_.iface.guards.vectorExtent), streamLineElements(p_.iface));
    if (phasedSchedule(v_.schedule)) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, outputs, p_.fusion->results.size());
      ws_ = b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "workspace");
    }
    if (v_.schedule == GpuSchedule::RowSplit || v_.schedule == GpuSchedule::TileSplit) {
      const DimExpr& n = p_.iface.guards.splitRows;
      chunks_ = toIdx(dims.emit(rowSplitChunks(n)));
      chunkRows_ = toIdx(dims.emit(rowSplitChunkRows(n)));
      splitOuter_ = toIdx(dims.emit(p_.iface.guards.splitOuter));
      keptCount_ = toIdx(units64_);
      // Launch 0's units are (chunk, row of outputs) pairs on the CPU,
      // (chunk, output) pairs for GPU tiles.
      if (splitPhase_ == 0)
        units64_ = dims.emit(rowSplitChunks(n) * (v_.schedule == GpuSchedule::TileSplit ? p_.iface.units
                                                                                          : p_.iface.guards.splitOuter));
    }
  }

  // The value of `v` read in frame `f` at `c`: the element generator's, with
  // this emitter as its source (below); `c` is the context its loads, memo
  // and hoisting use while it generates.
  llvm::Value* eval(const Value* v, Frame f, Ctx& c) {
    Ctx* outer = cur_;
    cur_ = &c;
    llvm::Value* x = gen_.gen(v, frameAt(f));
    cur_ = outer;
    return x;
  }

 public:
  // ElementSource. The generator's index here names a frame (frameAt); the
  // context in effect (cur_) holds that frame's indices.
  bool aligned() const override { return true; }
  ElementIndex canonical(const Value* v, const ElementIndex& at) override {
    return frameAt(p_.frameOf(v, frameIn(at)));
  }
  bool ownsMemo() const override { return true; }
  llvm::Value* recall(const Value* v, const ElementIndex& at) override {
    auto it = cur_->memo.find({v, frameIn(at)});
    return it == cur_->memo.end() ? nullptr : it->second;
  }
  void remember(const Value* v, const ElementIndex& at, llvm::Value* x) override { cur_->memo[{v, frameIn(at)}] = x; }
  llvm::Value* place(const Value* v, const ElementIndex& at) override {
    Frame f = frameIn(at);
    Ctx& c = *cur_;
    if (!c.hoist || p_.elem(v, f)) return nullptr;
    // Constant over the unit: computed once per unit, not per element.
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    b_.SetInsertPoint(c.hoistBlock->getTerminator());
    return eval(v, f, *c.hoist);
  }
  llvm::Value* load(const Value* v, const ElementIndex& at) override {
    return load(p_.inputIndex.at(v), frameIn(at), *cur_);
  }
  llvm::Value* combine(const Operation& op, const ElementIndex& at, std::vector<llvm::Value*>& args) override {
    const Value* v = op.result();
    if (op.kind == OpKind::Div && args[1]->getType()->isFloatingPointTy() && !p_.elem(op.operands[1], frameIn(at)) &&
        isFloat(v->type.dtype) && v->type.dtype != DType::F16 && v->type.dtype != DType::BF16) {
      // A division by a per-row value (a softmax's sum) is a multiplication
      // by its reciprocal, which LICM takes out of the loop: within 1.5 ULP
      // of the quotient, and a divide is the slowest vector instruction.
      llvm::Value* rcp = b_.CreateFDiv(llvm::ConstantFP::get(args[1]->getType(), 1.0), args[1]);
      return b_.CreateFMul(args[0], sameShape(rcp, args[0]));
    }
    if (cur_->vec) splatScalars(args);
    return nullptr;
  }

 private:
  // The generator's index of frame `f`, and the frame an index names.
  ElementIndex frameAt(Frame f) { return {b_.getInt64(static_cast<uint64_t>(f))}; }
  static Frame frameIn(const ElementIndex& at) {
    return static_cast<Frame>(llvm::cast<llvm::ConstantInt>(at[0])->getZExtValue());
  }

  llvm::Value* load(size_t k, Frame f, Ctx& c) {
    const Type& t = p_.iface.inputs[k];
    const std::vector<llvm::Value*>& ix = f == Frame::Rows ? c.rows : c.full;
    const std::vector<llvm::Value*>& st = stride_.at({k, f});
    // Row cache: an element along the row read again in a later phase comes
    // from the register (an alloca SROA promotes) the first read filled.
    if (c.cacheIter >= 0 && f == Frame::Full && !ix.empty() && ix.back() && !st.empty() && st.back()) {
      auto key = std::make_tuple(k, c.cacheIter, c.lane);
      if (auto it = rowCache_.find(key); it != rowCache_.end())
        return b_.CreateLoad(registerType(ctx_, t.dtype), it->second);
      Ctx plain = c;
      plain.cacheIter = -1;
      llvm::Value* x = load(k, f, plain);
      llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
      llvm::Value* slot = eb.CreateAlloca(registerType(ctx_, t.dtype), nullptr, "rowcache");
      b_.CreateStore(x, slot);
      rowCache_[key] = slot;
      return x;
    }
    size_t lead = ix.size() - t.rank();
    llvm::Value* off = nullptr;
    for (size_t d = 0; d < t.rank(); ++d) {
      llvm::Value* i = ix[lead + d];
      if (!i || !st[d]) continue;
      auto* one = llvm::dyn_cast<llvm::ConstantInt>(st[d]);
      // Offsets are non-negative and fit their type (index32 is guarded), so
      // nuw/nsw let the vectorisers see neighbouring lanes as consecutive.
      llvm::Value* term = one && one->isOne() ? i : b_.CreateMul(i, st[d], "", true, true);
      off = off ? b_.CreateAdd(off, term, "", true, true) : term;
    }
    llvm::Value* ptr = off ? b_.CreateInBoundsGEP(storageType(ctx_, t.dtype), base_[k], off) : base_[k];
    // vectorRowsOk: an element varying along the row has unit stride there.
    if (c.vec && f == Frame::Full && !ix.empty() && ix.back() && !st.empty() && st.back())
      return vecLoad(registerType(ctx_, t.dtype), ptr, c.mask);
    // Every stride but the last is a multiple of the row length, which the
    // vector guard makes a multiple of W; so a unit-stride block start is
    // aligned to the block when the buffer is (GPU: one 128-bit load).
    uint64_t align = 0;
    auto* unit = t.rank() > 0 && !st.empty() ? llvm::dyn_cast_or_null<llvm::ConstantInt>(st.back()) : nullptr;
    if (c.blockStart && v_.alignedBlocks && W_ > 1 && f == Frame::Full && ix.back() && unit && unit->isOne())
      align = static_cast<uint64_t>(W_) * dtypeSize(t.dtype);
    return loadElement(b_, t.dtype, ptr, align);
  }

  // --- accumulators -------------------------------------------------------
  llvm::Type* accType(const Operation& r) {
    DType dt = r.result()->type.dtype;
    if (!isFloat(dt)) return b_.getInt64Ty();
    bool maxMin = r.kind == OpKind::ReduceMax || r.kind == OpKind::ReduceMin;
    // Vector versions sum f32 in W f32 lanes (each lane sees 1/W of the
    // values, which bounds the rounding error well inside the tests'
    // tolerances and keeps the loop at full vector width); the fallback sums
    // in f64 as the interpreter does. Column kernels sum each column in one
    // accumulator in every version, so their fallback may as well use f32:
    // with f64 its vectorised loop did half the columns per instruction
    // (col_reduce at D=511, no vector version, ran at 0.4-0.6x torch eager).
    bool f32Lanes = dt == DType::F32 || dt == DType::F16 || dt == DType::BF16;
    // CPU stitch rows sum terms that are never negative (softmax's exp,
    // layer_norm's squares: ir/ValueFacts.h) in 16 or 32 f32 partial sums
    // (lanes): no cancellation, so the error stays relative to the sum
    // (at most (n/16 + 6) ulp), and the f64 form spent a third of the exp
    // loop converting and adding halves (softmax 1.2x, layer_norm 1.45x
    // faster in cache on Zen 4). Other sums keep f64, where cancellation
    // would leave the f32 error larger than the result.
    bool benignSum = cpuRows_ && r.kind == OpKind::ReduceSum && nonNegative(r.operands[0]);
    if (maxMin || ((W_ > 1 || benignSum || (p_.column && !isGpuModule(*b_.GetInsertBlock()->getModule()))) && f32Lanes))
      return registerType(ctx_, dt);
    return b_.getDoubleTy();
  }

  llvm::Value* accInit(const Operation& r) {
    DType dt = r.result()->type.dtype;
    llvm::Type* t = accType(r);
    bool mx = r.kind == OpKind::ReduceMax, mn = r.kind == OpKind::ReduceMin;
    if (isFloat(dt)) {
      double inf = std::numeric_limits<double>::infinity();
      return llvm::ConstantFP::get(t, mx ? -inf : mn ? inf : r.kind == OpKind::ReduceProd ? 1.0 : 0.0);
    }
    if (mx || mn) {
      if (dt == DType::I1) return b_.getInt64(mx ? 0 : 1);
      unsigned bits = registerType(ctx_, dt)->getIntegerBitWidth();
      llvm::APInt v = mx ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits);
      return b_.getInt64(static_cast<uint64_t>(v.getSExtValue()));
    }
    return b_.getInt64(r.kind == OpKind::ReduceProd ? 1 : 0);
  }

  llvm::Value* combine(const Operation& r, llvm::Value* acc, llvm::Value* x) {
    bool fl = acc->getType()->isFPOrFPVectorTy();
    llvm::Value* res = nullptr;
    switch (r.kind) {
      case OpKind::ReduceMax:
        return b_.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, acc, x);
      case OpKind::ReduceMin:
        return b_.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::minimum : llvm::Intrinsic::smin, acc, x);
      case OpKind::ReduceProd: res = fl ? b_.CreateFMul(acc, x) : b_.CreateMul(acc, x); break;
      default: res = fl ? b_.CreateFAdd(acc, x) : b_.CreateAdd(acc, x); break;
    }
    // Reassociation lets the vectoriser split the sum into lanes; the
    // accumulation in f64 keeps the result within rounding of the f32 value.
    if (fl) llvm::cast<llvm::Instruction>(res)->setHasAllowReassoc(true);
    return res;
  }

  // Converts an element (register form) to the accumulator type.
  llvm::Value* widen(const Operation& r, llvm::Value* x) {
    llvm::Type* t = accType(r);
    if (x->getType() == t) return x;
    if (t->isFloatingPointTy()) return b_.CreateFPExt(x, t);
    return r.result()->type.dtype == DType::I1 ? b_.CreateZExt(x, t) : b_.CreateSExt(x, t);
  }

  // The reduction's value (register form) from its accumulator.
  llvm::Value* finish(const Operation& r, llvm::Value* acc) { return finishReduction(b_, r, acc, count64_); }

  // An entry-block stack array of `n` accumulators for reduction `r`.
  llvm::Value* accArray(const Operation& r, int64_t n) {
    llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
    return eb.CreateAlloca(accType(r), eb.getInt64(n), "acc." + r.result()->name);
  }
  llvm::Value* slot(const Operation& r, llvm::Value* arr, llvm::Value* i) {
    return b_.CreateInBoundsGEP(accType(r), arr, i);
  }

  // --- loops ----------------------------------------------------------------
  // for (iv = lo; iv < hi; iv += step) body(iv); leaves the builder after it.
  // `foldTail`: ask LLVM's loop vectoriser to predicate the loop's last
  // partial vector (masked loads and stores) instead of a scalar remainder
  // loop; `width` > 0: to widen the loop to `width` lanes interleaved by 2
  // (see vecLoop).
  void loop(llvm::Value* lo, llvm::Value* hi, int64_t step, const std::string& name,
            const std::function<void(llvm::Value*)>& body, bool foldTail = false, int width = 0);

  // body(j, lane) for j in [0, n). A vector version runs blocks of exactly W
  // elements, unrolled into W lanes (the lanes keep separate partial
  // accumulators, so the block is straight-line code the SLP vectoriser
  // widens); `exact` says n is a multiple of W, else a remainder loop follows.
  void vecLoop(llvm::Value* n, bool exact, const std::string& name,
               const std::function<void(llvm::Value*, int)>& body);

  // A new block that the builder falls into; its terminator (the branch into
  // the loop emitted next) is where unit-level values get hoisted.
  llvm::BasicBlock* hoistBlock(const std::string& name) {
    auto* bb = llvm::BasicBlock::Create(ctx_, name, b_.GetInsertBlock()->getParent());
    b_.CreateBr(bb);
    b_.SetInsertPoint(bb);
    return bb;
  }

  // Row-major indices of flat `i` over `dims`.
  std::vector<llvm::Value*> unflatten(llvm::Value* i, const std::vector<llvm::Value*>& dims) {
    std::vector<llvm::Value*> out(dims.size());
    for (size_t q = dims.size(); q-- > 0;) {
      out[q] = q == 0 ? i : b_.CreateURem(i, dims[q]);
      if (q > 0) i = b_.CreateUDiv(i, dims[q]);
    }
    return out;
  }

  // The full-frame index with the kept dims from `kept` and the reduced ones null.
  std::vector<llvm::Value*> spread(const std::vector<llvm::Value*>& kept) {
    std::vector<llvm::Value*> full;
    size_t q = 0;
    for (size_t d = 0; d < p_.space.size(); ++d) full.push_back(p_.reduced[d] ? nullptr : kept[q++]);
    return full;
  }

  // `blockStart`: `at` starts a vector block of a row (aligned in aligned versions).
  void store(size_t i, llvm::Value* v, llvm::Value* at, bool blockStart = false) {
    DType dt = p_.fusion->result(i)->type.dtype;
    uint64_t align = blockStart && v_.alignedBlocks && W_ > 1 ? static_cast<uint64_t>(W_) * dtypeSize(dt) : 0;
    storeElement(b_, dt, v, b_.CreateInBoundsGEP(storageType(ctx_, dt), out_[i], at), align);
  }

  // Reads back an element of result i that this unit stored.
  llvm::Value* loadOut(size_t i, llvm::Value* at, bool blockStart) {
    DType dt = p_.fusion->result(i)->type.dtype;
    uint64_t align = blockStart && v_.alignedBlocks && W_ > 1 ? static_cast<uint64_t>(W_) * dtypeSize(dt) : 0;
    return loadElement(b_, dt, b_.CreateInBoundsGEP(storageType(ctx_, dt), out_[i], at), align);
  }

  // True when yield `v` reads `of` element by element: through elementwise
  // ops, not through a reduction (whose result is one value per row; a
  // layer norm's variance reads (x - mean)^2, its output does not).
  bool dependsOn(const Value* v, const Value* of) const {
    if (v == of) return true;
    auto d = p_.defOf.find(v);
    if (d == p_.defOf.end()) return false;
    if (std::find(p_.reductions.begin(), p_.reductions.end(), d->second) != p_.reductions.end()) return false;
    for (const Value* o : d->second->operands)
      if (dependsOn(o, of)) return true;
    return false;
  }

  // The value the last phase reduces and the final loop reads again (a
  // softmax's exp(x - max)), and the element result whose row can hold it in
  // between: the last phase stores it there, the final loop loads it back
  // before overwriting the element, instead of computing it twice. CPU only
  // (a GPU thread's row cache keeps it in registers), and only where the
  // result holds the value exactly (the same f32 or f64 dtype).
  std::pair<const Value*, size_t> outputScratch() const {
    if (lanes_ != 1 || p_.phases < 1) return {nullptr, 0};
    for (const Operation* red : p_.reductions) {
      if (p_.phase.at(red) != p_.phases - 1) continue;
      const Value* v = red->operands[0];
      DType dt = v->type.dtype;
      if ((dt != DType::F32 && dt != DType::F64) || p_.inputIndex.count(v) || !p_.defOf.count(v) ||
          !p_.elem(v, Frame::Full))
        continue;
      bool used = false;
      for (size_t i = 0; i < out_.size(); ++i)
        if (p_.resultElem[i] && dependsOn(p_.fusion->yields[i], v)) used = true;
      if (!used) continue;
      for (size_t i = 0; i < out_.size(); ++i)
        if (p_.resultElem[i] && p_.fusion->result(i)->type.dtype == dt) return {v, i};
    }
    return {nullptr, 0};
  }

  // Lane accumulators for a set of reductions: init, accumulate, fold.
  // Accumulator arrays in the order of the reductions (so the IR is deterministic).
  using Accs = std::vector<std::pair<const Operation*, llvm::Value*>>;
  Accs laneAccs(const std::vector<const Operation*>& reds) {
    Accs accs;
    for (const Operation* r : reds) {
      accs.emplace_back(r, accArray(*r, W_));
      for (int l = 0; l < W_; ++l) b_.CreateStore(accInit(*r), slot(*r, accs.back().second, idx(l)));
      if (splitNaN(*r)) {
        llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
        llvm::Value* flag = eb.CreateAlloca(b_.getInt1Ty(), nullptr, "nan." + r->result()->name);
        b_.CreateStore(b_.getFalse(), flag);
        nanFlag_[accs.back().second] = flag;
      }
    }
    return accs;
  }
  // A float max/min of a scalar CPU version keeps "some element was NaN" in
  // a flag of its own and the maximum of the others in maxnum/minnum: both
  // are reductions LLVM's loop vectoriser widens, where the NaN-propagating
  // llvm.maximum leaves the loop scalar (half the time of a softmax of short
  // rows went there). The result is NaN when the flag is set, as in numpy.
  bool splitNaN(const Operation& r) const {
    return W_ == 1 && lanes_ == 1 && (r.kind == OpKind::ReduceMax || r.kind == OpKind::ReduceMin) &&
           isFloat(r.result()->type.dtype) &&
           !isGpuModule(*entry_->getModule());
  }
  void accumulate(const Operation& r, llvm::Value* arr, llvm::Value* i, Ctx& c) {
    llvm::Value* s = slot(r, arr, i);
    llvm::Value* x = widen(r, eval(r.operands[0], Frame::Full, c));
    if (auto f = nanFlag_.find(arr); f != nanFlag_.end()) {
      b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), f->second), b_.CreateFCmpUNO(x, x)), f->second);
      b_.CreateStore(flaggedMinMax(r, b_.CreateLoad(accType(r), s), x), s);
      return;
    }
    b_.CreateStore(combine(r, b_.CreateLoad(accType(r), s), x), s);
  }
  // The max (min) of `a` and `b` (scalars or vectors) where NaNs are kept
  // in a flag apart: maxnum (minnum) marked nnan. A NaN makes the result
  // poison, but the flag then selects NaN in place of it, so no poison is
  // ever used; and with it the vectoriser takes the loop and x86 needs one
  // vmaxps. `nnan` also gives the flags of a horizontal max of such values.
  llvm::FastMathFlags nanApart() const {
    llvm::FastMathFlags fmf;
    fmf.setNoNaNs();
    fmf.setNoSignedZeros();
    return fmf;
  }
  llvm::Value* flaggedMinMax(const Operation& r, llvm::Value* a, llvm::Value* b) {
    auto id = r.kind == OpKind::ReduceMax ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
    llvm::Value* m = b_.CreateBinaryIntrinsic(id, a, b);
    llvm::cast<llvm::Instruction>(m)->setFastMathFlags(nanApart());
    return m;
  }
  // The accumulator of `r` over this thread's W lanes and, with a GPU group,
  // over the threads sharing the unit (every thread gets the same bits).
  llvm::Value* combinedLanes(const Operation& r, llvm::Value* arr) {
    llvm::Value* a = b_.CreateLoad(accType(r), slot(r, arr, idx(0)));
    for (int l = 1; l < W_; ++l) a = combine(r, a, b_.CreateLoad(accType(r), slot(r, arr, idx(l))));
    if (auto f = nanFlag_.find(arr); f != nanFlag_.end())
      a = b_.CreateSelect(b_.CreateLoad(b_.getInt1Ty(), f->second), llvm::ConstantFP::getNaN(a->getType()), a);
    if (lanes_ == 1) return a;
    Combine c = [&](llvm::Value* x, llvm::Value* y) { return combine(r, x, y); };
    return lanes_ == 32 ? emitWarpAllReduce(b_, a, c)
                        : emitBlockAllReduce(b_, a, lanes_, c, "shared." + r.result()->name);
  }
  void foldLanes(const Accs& accs, Ctx& unit) {
    for (auto [r, arr] : accs)
      unit.memo[{r->result(), p_.frameOf(r->result(), Frame::Full)}] = finish(*r, combinedLanes(*r, arr));
  }

  // body(j, lane) over [from, n) (from: 0 when null, else a multiple of W):
  // vecLoop on one thread; with a GPU group, each thread takes blocks of W at
  // from + lane*W, from + lane*W + lanes*W, ... (neighbouring threads read
  // neighbouring blocks: coalesced). n is a multiple of W.
  void rowLoop(llvm::Value* n, const std::string& name, const std::function<void(llvm::Value*, int)>& body,
               llvm::Value* from = nullptr) {
    if (lanes_ == 1) return vecLoop(n, true, name, body);  // the split schedule (from) always has a group
    llvm::Value* start = W_ == 1 ? lane_ : b_.CreateMul(lane_, idx(W_), "", true, true);
    if (from) start = b_.CreateAdd(from, start);
    loop(start, n, int64_t(lanes_) * W_, name, [&](llvm::Value* j0) {
      for (int l = 0; l < W_; ++l) body(l == 0 ? j0 : b_.CreateAdd(j0, idx(l), "", true, true), l);
    });
  }

  // rowLoop for the row cache: the thread's blocks at lane*W + it*lanes*W for it
  // in [0, cacheIters_), each emitted once (unrolled) behind `j0 < n`, so
  // each element has a fixed register from phase to phase.
  void cachedRowLoop(llvm::Value* n, const std::string& name, const std::function<void(llvm::Value*, int, int)>& body) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    for (int it = 0; it < cacheIters_; ++it) {
      llvm::Value* j0 = b_.CreateAdd(b_.CreateMul(lane_, idx(W_), "", true, true), idx(int64_t(it) * lanes_ * W_), "", true, true);
      auto* in = llvm::BasicBlock::Create(ctx_, name + ".b" + std::to_string(it), fn);
      auto* next = llvm::BasicBlock::Create(ctx_, name + ".b" + std::to_string(it) + ".end", fn);
      b_.CreateCondBr(b_.CreateICmpSLT(j0, n), in, next);
      b_.SetInsertPoint(in);
      for (int l = 0; l < W_; ++l) body(l == 0 ? j0 : b_.CreateAdd(j0, idx(l), "", true, true), l, it);
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
    }
  }

  // The per-row context of stitch row `r` (kept indices, the last axis open).
  Ctx rowCtx(llvm::Value* r) {
    Ctx row;
    row.rows = unflatten(r, keptDim_);
    row.full = row.rows;
    row.full.push_back(nullptr);
    return row;
  }
  // Element `j` of `row`: row-level values hoist to `hb`; `lane` and `it`
  // place it in its vector block and row cache.
  Ctx elemCtx(Ctx& row, llvm::Value* j, llvm::BasicBlock* hb, int lane, int it = -1) {
    Ctx e;
    e.blockStart = lane == 0;
    e.cacheIter = it;
    e.lane = lane;
    e.rows = row.rows;
    e.full = row.full;
    e.full.back() = j;
    e.hoist = &row;
    e.hoistBlock = hb;
    return e;
  }

  // Stores a per-unit result: with a GPU group every thread holds it, the first stores it.
  void storeOnce(size_t i, llvm::Value* v, llvm::Value* at) {
    if (lanes_ == 1) return store(i, v, at);
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* st = llvm::BasicBlock::Create(ctx_, "leader", fn);
    auto* after = llvm::BasicBlock::Create(ctx_, "leader.end", fn);
    b_.CreateCondBr(b_.CreateICmpEQ(lane_, idx(0)), st, after);
    b_.SetInsertPoint(st);
    store(i, v, at);
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
  }

  // --- stitch: one row per unit, one loop per phase -------------------------
  void emitStitch(llvm::Value* lo, llvm::Value* hi);
  // CPU: the kept indices of row r come from an odometer started at lo and
  // stepped per row, not from divisions per row (a row of 18 elements spent
  // a third of its time dividing). Empty where rows have one kept dim, and
  // on the GPU.
  std::vector<llvm::AllocaInst*> startOdometer(llvm::Value* lo);
  void advanceOdometer(const std::vector<llvm::AllocaInst*>& odometer);
  // Row r's context: from the odometer when there is one.
  Ctx stitchRowCtx(llvm::Value* r, const std::vector<llvm::AllocaInst*>& odometer);
  // --- CPU stitch rows in explicit vectors (CpuRowVector.cpp) ---------------
  // Blocks of vw_ lanes and one masked last block per loop, so a reduction
  // folds its lanes once per row; the loop vectoriser's form (a bulk loop
  // and a predicated tail loop) folds twice and set up two loops, ~24 ns a
  // row on Zen 4 (bench/results/2026-12-04-epyc-experiments.md, section 6).
  struct VecAcc {
    const Operation* r;
    llvm::Value* acc[2];  // allocas <vw_ x accType>, one per block of a pair
    llvm::Value* nan[2];  // max/min: allocas <vw_ x i1>, lanes that saw a NaN; else null
  };
  // Whether this kernel's rows can be vectors: f32 values (i1 in between),
  // sums, means, products, max and min (rowVectorValues), rows read at unit
  // stride; of the streaming versions only the peeled ones.
  bool vectorRowsOk() const;
  // emitStitch in explicit vectors.
  void emitStitchVec(llvm::Value* lo, llvm::Value* hi);
  // body(j, mask, part) for the blocks of [0, n): with `pairs`, full ones
  // in pairs first (part 0 and 1: the accumulator to use), then full ones
  // (part 0), then the partial one if any (part 1, mask: its lanes inside
  // the row; else null).
  void vecRowLoop(llvm::Value* n, const std::string& name, bool pairs,
                  const std::function<void(llvm::Value*, llvm::Value*, int)>& body);
  // body(j, mask) for the blocks of [from, to): full ones, then the partial
  // one if any (mask: its lanes before `to`; else null).
  void vecSpan(llvm::Value* from, llvm::Value* to, const std::string& name,
               const std::function<void(llvm::Value*, llvm::Value*)>& body);
  // Where a final-loop block stores element j of output k (null: in the row).
  using RowDest = std::function<llvm::Value*(size_t k, llvm::Value* j)>;
  // One block of a row's final loop: block(j, mask, streamed, dest).
  using RowBlock = std::function<void(llvm::Value*, llvm::Value*, bool, const RowDest&)>;
  // A peeled streaming version's line shared by consecutive rows, gathered
  // on the stack until whole: its elements so far (0: none), the flat index
  // of its first element, and one line per output.
  struct LineCarry {
    llvm::Value* count = nullptr;
    llvm::Value* at = nullptr;
    std::vector<llvm::Value*> buf;
  };
  // A peeled streaming version's final loop over the row at `rowBase` of
  // `L` elements: whole 64-byte lines of the outputs streamed (none unless
  // `streamable`), the partial ones at the ends gathered in `carry`;
  // `rowsAhead`: the next row's first phase ran already (emitStitchVec).
  void streamRow(llvm::Value* rowBase, llvm::Value* L, llvm::Value* streamable, const LineCarry& carry,
                 bool rowsAhead, const RowBlock& block);
  // After the range's last row: what `carry` holds, stored as usual.
  void flushCarry(const LineCarry& carry);
  // Whether reduction `r`'s loop is bound by its chain of adds (a sum of
  // cheap terms: layer_norm's mean and variance), so it takes pairs.
  bool chainBound(const Operation& r) const;
  std::vector<VecAcc> vecAccs(const std::vector<const Operation*>& reds);
  void vecAccumulate(const VecAcc& a, int part, Ctx& e);
  void vecFold(const std::vector<VecAcc>& accs, Ctx& row);
  llvm::Value* vecLoad(llvm::Type* elt, llvm::Value* ptr, llvm::Value* mask);
  // Stores `v` (splatted if scalar) at `ptr`: masked, streamed (a whole
  // aligned line) or ordinary.
  void vecStoreAt(llvm::Value* v, llvm::Value* ptr, llvm::Value* mask, bool streamed = false);
  // `x` splatted to `like`'s lanes when `like` is a vector and `x` is not.
  llvm::Value* sameShape(llvm::Value* x, llvm::Value* like);
  // An op's operands of which some are vectors: the scalars splatted.
  void splatScalars(std::vector<llvm::Value*>& args);
  // A CPU streaming version (outputs beyond the cache, so its inputs come
  // from memory too): the final loop of a row prefetches the next row's
  // elements of each input of the row's shape, so that memory works while
  // the row's phases compute from the cache (`next`: the flat index of the
  // next row; past the last row the prefetches touch nothing, and never fault).
  // With `on` (i1), only in rows where it holds.
  void prefetchNextRow(llvm::Value* next, llvm::Value* on = nullptr) {
    if (!v_.stream || !cpuRows_) return;
    prefetchOn_ = on;
    for (size_t k = 0; k < p_.iface.inputs.size(); ++k)
      if (p_.iface.inputs[k].dims == p_.space) prefetch_.push_back({base_[k], p_.iface.inputs[k].dtype, next});
  }
  // --- stitch, GPU Split schedule: a block per (row, chunk), one launch per phase
  // Launch k < phases: the earlier phases' per-row values from all chunks'
  // partials (combined in chunk order: every block gets the same bits), then
  // this chunk's partial of each phase-k reduction into the workspace.
  // Launch k = phases: all per-row values, then this chunk's elements of the
  // full-size results; chunk 0 stores the per-row results.
  void emitStitchSplit(llvm::Value* lo, llvm::Value* hi);
  // Loops over the reduced dims in order; the innermost is the last axis
  // when it is reduced (vectorised), else the caller's body loops itself.
  void reducedNest(size_t d, std::vector<llvm::Value*>& full, const std::function<void()>& inner);
  // --- input kernel, last axis reduced: one output element per unit --------
  void emitRowReduce(llvm::Value* lo, llvm::Value* hi);
  // --- input kernel, last axis kept: blocks of columns ---------------------
  // A range of outputs is cut into blocks of at most kColumnBlock
  // consecutive outputs along the last axis; for each block the reduced dims
  // loop outside and the block's columns inside, accumulating into a stack
  // array, so every read streams along a row.
  void emitColumns(llvm::Value* lo, llvm::Value* hi);
  // The block structure emitColumns and emitColumnCombine share: `fill`
  // accumulates a block of n outputs (flat index o, last-axis index c0) into
  // accs, whose elements are then finished, evaluated and stored.
  using ColumnFill = std::function<void(const std::vector<std::pair<const Operation*, llvm::Value*>>& accs,
                                        std::vector<llvm::Value*>& full, llvm::Value* c0, llvm::Value* n,
                                        llvm::Value* o)>;
  void columnBlocks(llvm::Value* lo, llvm::Value* hi, const ColumnFill& fill);
  // --- input kernel, last axis kept, CPU RowSplit: two launches ------------
  // Launch 0 (emitColumnPartials) sums chunks of whole rows into the
  // workspace, launch 1 (emitColumnCombine) combines the chunks' partials
  // per output and stores the results.
  llvm::Value* rowSplitSlice(llvm::Value* part, size_t ri);
  void emitColumnPartials(llvm::Value* lo, llvm::Value* hi);
  void emitColumnCombine(llvm::Value* lo, llvm::Value* hi);
  // --- input kernel, last axis kept, GPU Tile schedule ---------------------
  // The block's range (at most 32 outputs, given by the launch) is cut into
  // segments of consecutive columns as in emitColumns. Thread (s, c) of the
  // block's 8 x 32 reads column c of the rows s, s+8, ... (a warp reads 32
  // neighbouring floats of one row: coalesced); the 8 partials of a column
  // meet in shared memory and slice 0 combines them in order and stores.
  void emitColumnTile(llvm::Value* lo, llvm::Value* hi);

  const Plan& p_;
  llvm::IRBuilderBase& b_;
  llvm::LLVMContext& ctx_;
  KernelVariant v_;
  int W_;
  // A CPU stitch kernel: its rows are explicit vectors (vw_), else left to the loop vectoriser.
  bool cpuRows_ = false;
  int vw_ = 0;  // CPU stitch rows in explicit vectors of vw_ lanes (vectorRowsOk); 0: elements
  // CPU streaming versions, in the final loop over a row: inputs of the
  // row's shape whose next row is prefetched (prefetchNextRow).
  struct Prefetch {
    llvm::Value* base;
    DType dtype;
    llvm::Value* next;  // the flat index of the next row's first element
  };
  std::vector<Prefetch> prefetch_;
  llvm::Value* prefetchOn_ = nullptr;  // null, or whether this row prefetches (i1)
  std::map<llvm::Value*, llvm::Value*> nanFlag_;  // splitNaN: accumulator array -> its NaN flag
  int splitPhase_ = -1;             // Split: the launch this body is (phase, or phases: the stores)
  llvm::Value* ws_ = nullptr;       // Split: the workspace of partials
  llvm::Value* chunks64_ = nullptr; // Split: chunks per row
  llvm::Value* chunks_ = nullptr;    // RowSplit: chunks, rows per chunk, outputs (index type)
  llvm::Value* chunkRows_ = nullptr;
  llvm::Value* splitOuter_ = nullptr;
  llvm::Value* keptCount_ = nullptr;
  int lanes_ = 1;                  // threads sharing a row (GPU Warp and Block schedules)
  int cacheIters_ = 0;             // Warp row cache: unrolled blocks per lane (0: no cache)
  std::map<std::tuple<size_t, int, int>, llvm::Value*> rowCache_;  // (input, block, lane) -> its register
  llvm::Value* lane_ = nullptr;    // this thread's place among them
  llvm::Value* colLane_ = nullptr; // Tile: this thread's column in the tile, and row slice
  llvm::Value* rowLane_ = nullptr;
  llvm::Type* it_ = nullptr;  // the index type: i64, or i32 for index32
  llvm::BasicBlock* entry_ = nullptr;
  llvm::BasicBlock* done_ = nullptr;
  llvm::Value* units64_ = nullptr;
  llvm::Value* count64_ = nullptr;  // elements per unit (the mean's divisor)
  std::vector<llvm::Value*> spaceDim_, keptDim_;
  std::vector<llvm::Value*> base_, out_;
  std::map<std::pair<size_t, Frame>, std::vector<llvm::Value*>> stride_;  // null: broadcast
  ElementGenerator gen_;  // every body value's element, read through this emitter
  Ctx* cur_ = nullptr;    // the context eval generates in
};

}  // namespace dscc::codegen::reduction
