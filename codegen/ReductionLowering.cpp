// Stitch and input kernels (reductions) to LLVM IR: the row and column loop nests of every version, CPU and GPU schedules alike.
#include "codegen/ReductionLowering.h"

#include "codegen/KernelLowering.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementOps.h"
#include "codegen/ReductionPlan.h"
#include "codegen/GpuReduce.h"
#include "codegen/Jit.h"

namespace dscc::codegen {
namespace {

using namespace reduction;

// Columns per block of the column path: 256 accumulators of f64 (2 KiB each
// reduction) stay in L1 while rows stream past.
constexpr int64_t kColumnBlock = 256;

// The most unrolled blocks per lane a warp's row cache may take (with the
// default warp range, rows under 1024 and W = 4: 8 blocks, 32 registers per
// cached input).
constexpr int kRowCacheIters = 16;

// Emits a planned kernel at the builder's insertion point.
class Emitter {
 public:
  Emitter(const Plan& p, llvm::IRBuilderBase& b, const KernelVariant& v, int splitPhase = -1)
      : p_(p), b_(b), ctx_(b.getContext()), v_(v), W_(std::max(1, v.vectorWidth)), splitPhase_(splitPhase) {
    it_ = v.index32 ? b.getInt32Ty() : b.getInt64Ty();
    if (v.schedule != GpuSchedule::Tile) lanes_ = scheduleLanes(v.schedule);
    // A warp's or block's row of at most rowMax elements is at most `iters`
    // vector blocks per thread: unrolled, its loads are kept in registers
    // from the phase that first reads them to the last (kRowCacheIters
    // bounds the code).
    if ((v.schedule == GpuSchedule::Warp || v.schedule == GpuSchedule::Block) && W_ > 1 && v.rowMax > 0) {
      int64_t iters = (v.rowMax + int64_t(lanes_) * W_ - 1) / (int64_t(lanes_) * W_);
      if (iters <= kRowCacheIters) cacheIters_ = static_cast<int>(iters);
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
    if (v_.schedule != GpuSchedule::Thread) {
      // GPU schedules: where this thread stands in the group sharing a unit.
      llvm::Value* tid = emitThreadIdX(b_);
      if (v_.schedule == GpuSchedule::Tile) {
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
    std::vector<llvm::Value*> full, rows;
    std::map<std::pair<const Value*, Frame>, llvm::Value*> memo;
    Ctx* hoist = nullptr;
    llvm::BasicBlock* hoistBlock = nullptr;  // its terminator is the hoist point
    // The last full-frame index starts a vector block (lane 0 of a block of W):
    // in aligned versions its unit-stride accesses are aligned to the block.
    bool blockStart = false;
    // Row cache: which unrolled block (-1: none) and lane in it this element is.
    int cacheIter = -1, lane = 0;
  };

  llvm::Value* idx(int64_t c) { return llvm::ConstantInt::get(it_, c); }
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
    if (v_.schedule == GpuSchedule::Split) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, outputs, p_.fusion->results.size());
      ws_ = b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "workspace");
    }
  }

  // The value of `v` read in frame `f` at `c`.
  llvm::Value* eval(const Value* v, Frame f, Ctx& c) {
    f = p_.frameOf(v, f);
    auto key = std::make_pair(v, f);
    if (auto it = c.memo.find(key); it != c.memo.end()) return it->second;
    llvm::Value* x = nullptr;
    if (c.hoist && !p_.elem(v, f)) {
      // Constant over the unit: computed once per unit, not per element.
      llvm::IRBuilderBase::InsertPointGuard guard(b_);
      b_.SetInsertPoint(c.hoistBlock->getTerminator());
      x = eval(v, f, *c.hoist);
    } else if (auto in = p_.inputIndex.find(v); in != p_.inputIndex.end()) {
      x = load(in->second, f, c);
    } else {
      const Operation* op = p_.defOf.at(v);
      std::vector<llvm::Value*> args;
      for (const Value* o : op->operands) args.push_back(eval(o, f, c));
      if (op->kind == OpKind::Div && args[1]->getType()->isFloatingPointTy() && !p_.elem(op->operands[1], f) &&
          isFloat(v->type.dtype) && v->type.dtype != DType::F16 && v->type.dtype != DType::BF16) {
        // A division by a per-row value (a softmax's sum) is a multiplication
        // by its reciprocal, which LICM takes out of the loop: within 1.5 ULP
        // of the quotient, and a divide is the slowest vector instruction.
        x = b_.CreateFMul(args[0], b_.CreateFDiv(llvm::ConstantFP::get(args[1]->getType(), 1.0), args[1]));
      } else {
        x = emitElementwiseOp(b_, *op, args);
      }
      x->setName(v->name);
    }
    c.memo[key] = x;
    return x;
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
    // in f64 as the interpreter does.
    bool f32Lanes = dt == DType::F32 || dt == DType::F16 || dt == DType::BF16;
    if (maxMin || (W_ > 1 && f32Lanes)) return registerType(ctx_, dt);
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
    bool fl = acc->getType()->isFloatingPointTy();
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
  void loop(llvm::Value* lo, llvm::Value* hi, int64_t step, const std::string& name,
            const std::function<void(llvm::Value*)>& body) {
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
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }

  // body(j, lane) for j in [0, n). A vector version runs blocks of exactly W
  // elements, unrolled into W lanes (the lanes keep separate partial
  // accumulators, so the block is straight-line code the SLP vectoriser
  // widens); `exact` says n is a multiple of W, else a remainder loop follows.
  void vecLoop(llvm::Value* n, bool exact, const std::string& name,
               const std::function<void(llvm::Value*, int)>& body) {
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

  // True when yield `v` is computed from `of`.
  bool dependsOn(const Value* v, const Value* of) const {
    if (v == of) return true;
    auto d = p_.defOf.find(v);
    if (d == p_.defOf.end()) return false;
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
           !llvm::StringRef(entry_->getModule()->getTargetTriple()).starts_with("nvptx");
  }
  void accumulate(const Operation& r, llvm::Value* arr, llvm::Value* i, Ctx& c) {
    llvm::Value* s = slot(r, arr, i);
    llvm::Value* x = widen(r, eval(r.operands[0], Frame::Full, c));
    if (auto f = nanFlag_.find(arr); f != nanFlag_.end()) {
      b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), f->second), b_.CreateFCmpUNO(x, x)), f->second);
      auto id = r.kind == OpKind::ReduceMax ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
      // nnan: a NaN lane makes the accumulator poison, but the flag then
      // selects NaN in place of it, so no poison is ever used; and with it
      // the vectoriser takes the loop and x86 needs one vmaxps.
      llvm::FastMathFlags fmf;
      fmf.setNoNaNs();
      fmf.setNoSignedZeros();
      llvm::Value* m = b_.CreateBinaryIntrinsic(id, b_.CreateLoad(accType(r), s), x);
      llvm::cast<llvm::Instruction>(m)->setFastMathFlags(fmf);
      b_.CreateStore(m, s);
      return;
    }
    b_.CreateStore(combine(r, b_.CreateLoad(accType(r), s), x), s);
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
  void emitStitch(llvm::Value* lo, llvm::Value* hi) {
    llvm::Value* L = spaceDim_.back();
    auto [scratchValue, scratchOut] = outputScratch();
    // CPU: the kept indices of row r come from an odometer started at lo
    // and stepped per row, not from divisions per row (a row of 18
    // elements spent a third of its time dividing).
    std::vector<llvm::AllocaInst*> odometer;
    if (lanes_ == 1 && keptDim_.size() > 1 &&
        !llvm::StringRef(b_.GetInsertBlock()->getModule()->getTargetTriple()).starts_with("nvptx")) {
      std::vector<llvm::Value*> start = unflatten(lo, keptDim_);
      llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
      for (size_t q = 0; q < start.size(); ++q) {
        odometer.push_back(eb.CreateAlloca(it_, nullptr, "row.ix" + std::to_string(q)));
        b_.CreateStore(start[q], odometer.back());
      }
    }
    auto advance = [&] {
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
    };
    loop(lo, hi, 1, "row", [&](llvm::Value* r) {
      Ctx row;
      if (odometer.empty()) {
        row = rowCtx(r);
      } else {
        for (llvm::AllocaInst* a : odometer) row.rows.push_back(b_.CreateLoad(it_, a));
        row.full = row.rows;
        row.full.push_back(nullptr);
      }
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
        if (cacheIters_) cachedRowLoop(L, "phase" + std::to_string(ph) + ".j", acc);
        else rowLoop(L, "phase" + std::to_string(ph) + ".j", [&](llvm::Value* j, int lane) { acc(j, lane, -1); });
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
      if (cacheIters_) cachedRowLoop(L, "final.j", fin);
      else rowLoop(L, "final.j", [&](llvm::Value* j, int lane) { fin(j, lane, -1); });
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
  void emitStitchSplit(llvm::Value* lo, llvm::Value* hi) {
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
  void reducedNest(size_t d, std::vector<llvm::Value*>& full, const std::function<void()>& inner) {
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
  void emitRowReduce(llvm::Value* lo, llvm::Value* hi) {
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
  void emitColumns(llvm::Value* lo, llvm::Value* hi) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    Accs accs;
    for (const Operation* r : p_.reductions) accs.emplace_back(r, accArray(*r, kColumnBlock));
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
    n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, n, idx(kColumnBlock), nullptr, "n");
    std::vector<llvm::Value*> keptIx = unflatten(b_.CreateUDiv(o, cols), outer);
    keptIx.push_back(nullptr);  // the column, set per element
    loop(idx(0), n, 1, "init", [&](llvm::Value* c) {
      for (auto [r, arr] : accs) b_.CreateStore(accInit(*r), slot(*r, arr, c));
    });
    std::vector<llvm::Value*> full = spread(keptIx);
    reducedNest(0, full, [&]() {
      vecLoop(n, false, "cols", [&](llvm::Value* c, int) {
        Ctx e;
        e.full = full;
        e.full.back() = b_.CreateAdd(c0, c, "", true, true);
        for (auto [r, arr] : accs) accumulate(*r, arr, c, e);
      });
    });
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

  // --- input kernel, last axis kept, GPU Tile schedule ---------------------
  // The block's range (at most 32 outputs, given by the launch) is cut into
  // segments of consecutive columns as in emitColumns. Thread (s, c) of the
  // block's 8 x 32 reads column c of the rows s, s+8, ... (a warp reads 32
  // neighbouring floats of one row: coalesced); the 8 partials of a column
  // meet in shared memory and slice 0 combines them in order and stores.
  void emitColumnTile(llvm::Value* lo, llvm::Value* hi) {
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
    llvm::Value* c0 = b_.CreateURem(o, cols, "c0");
    llvm::Value* n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateSub(cols, c0), b_.CreateSub(hi, o), nullptr, "n");
    std::vector<llvm::Value*> keptIx = unflatten(b_.CreateUDiv(o, cols), outer);
    keptIx.push_back(b_.CreateAdd(c0, colLane_, "", true, true));
    llvm::Value* valid = b_.CreateICmpULT(colLane_, n, "valid");
    for (auto [r, arr] : accs) b_.CreateStore(accInit(*r), slot(*r, arr, idx(0)));
    // Rows of this thread's slice; threads past the segment's columns only
    // take part in the barriers.
    llvm::Value* start = b_.CreateSelect(valid, rowLane_, rows);
    loop(start, rows, slices, "rows", [&](llvm::Value* rr) {
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
      unit.memo[{r->result(), p_.frameOf(r->result(), Frame::Full)}] = finish(*r, a);
    }
    llvm::Value* at = b_.CreateAdd(o, colLane_, "", true, true);
    for (size_t i = 0; i < out_.size(); ++i) store(i, eval(p_.fusion->yields[i], p_.resultFrame[i], unit), at);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
    o->addIncoming(b_.CreateAdd(o, n), b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }

  const Plan& p_;
  llvm::IRBuilderBase& b_;
  llvm::LLVMContext& ctx_;
  KernelVariant v_;
  int W_;
  std::map<llvm::Value*, llvm::Value*> nanFlag_;  // splitNaN: accumulator array -> its NaN flag
  int splitPhase_ = -1;             // Split: the launch this body is (phase, or phases: the stores)
  llvm::Value* ws_ = nullptr;       // Split: the workspace of partials
  llvm::Value* chunks64_ = nullptr; // Split: chunks per row
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
};

LoweredKernel lower(const Operation& fusion, bool stitch, CodeModule& m, const std::string& name,
                    const KernelVariant& variant, int splitPhase = -1) {
  LoweredKernel res;
  Plan p;
  res.error = plan(fusion, stitch, p);
  if (!res.error.empty()) return res;
  if (variant.schedule == GpuSchedule::Split &&
      (p.iface.guards.phases == 0 || splitPhase < 0 || splitPhase > p.phases || variant.splitChunk <= 0 ||
       variant.splitChunk % std::max(1, variant.vectorWidth) != 0)) {
    res.error = err("a split version needs a stitch kernel or a reduction of the last axis only, a phase in [0, " +
                    std::to_string(p.phases) + "] and a chunk that is a multiple of the vector width");
    return res;
  }
  llvm::Function* fn = createKernelFunction(m, name, &res.error);
  if (!fn) return res;
  llvm::LLVMContext& ctx = m.context();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  Emitter(p, b, variant, splitPhase).emit(fn->getArg(0), fn->getArg(1), fn->getArg(2), fn->getArg(3), fn->getArg(4));
  b.CreateRetVoid();
  res.fn = fn;
  res.iface = p.iface;
  return res;
}

}  // namespace

std::string describeStitchKernel(const Operation& fusion, KernelInterface& out) {
  Plan p;
  std::string e = plan(fusion, true, p);
  if (e.empty()) out = p.iface;
  return e;
}

LoweredKernel lowerStitchKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                const KernelVariant& v, int splitPhase) {
  return lower(fusion, true, m, name, v, splitPhase);
}

std::string describeInputKernel(const Operation& fusion, KernelInterface& out) {
  Plan p;
  std::string e = plan(fusion, false, p);
  if (e.empty()) out = p.iface;
  return e;
}

LoweredKernel lowerInputKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                               const KernelVariant& v, int splitPhase) {
  return lower(fusion, false, m, name, v, splitPhase);
}

}  // namespace dscc::codegen
