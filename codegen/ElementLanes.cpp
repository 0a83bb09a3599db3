// The element generator's lane mode: a body value's elements at the W lanes of a vector block, for vector versions.
//
// A vector block is W consecutive elements of a result's row. Its index is
// a LaneIndex: each component is uniform (the row's outer dims), affine in
// the lane with a compile-time stride (the row's last dim: stride 1), or
// general (one scalar per lane). The ops' index maps (ir/IndexMap.h) run on
// these through LaneArith, which keeps strides where the arithmetic allows:
// sums and products by constants keep them; a division of an affine index
// (a reshape's delinearisation) is uniform, with an affine remainder, when
// the lanes do not cross a multiple of the divisor, which is checked per
// block (ElementSource::laneCheck: the schedule goes scalar where it fails).
// So an operand read along the row is one W-wide load, an operand constant
// along it one scalar, and only an index without a pattern (a transposed
// read, a gather by per-lane indices) reads lane by lane. Element values
// are computed per lane by the scalar rules (emitElementwiseOp), which
// LLVM's SLP vectoriser widens, as the loop kernels' vector blocks do.
#include <algorithm>
#include <functional>
#include <map>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementGenerator.h"
#include "codegen/ElementOps.h"
#include "codegen/KernelCommon.h"
#include "ir/IndexMap.h"

namespace dscc::codegen {

// Index arithmetic of ir/IndexMap.h over lanes.
struct LaneArith {
  using V = Lanes;
  ElementGenerator& g;
  llvm::IRBuilderBase& b;
  // Divisions whose lanes were checked not to wrap in this block: (x, y) -> checked.
  std::map<std::pair<llvm::Value*, llvm::Value*>, bool>& checked;

  int w() const { return g.lanes_; }
  static V uni(llvm::Value* x) { return V{x, 0, {}}; }
  static V aff(llvm::Value* x, int64_t s) { return V{x, s, {}}; }
  V perLane(const V& x, const V& y, const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& f) {
    V r;
    for (int l = 0; l < w(); ++l) r.each.push_back(f(g.lane(x, l), g.lane(y, l)));
    return r;
  }
  static int64_t constOf(const V& x, bool* ok) {
    auto* c = x.uniform() ? llvm::dyn_cast<llvm::ConstantInt>(x.base) : nullptr;
    *ok = c != nullptr;
    return c ? c->getSExtValue() : 0;
  }

  V c(int64_t v) { return uni(b.getInt64(static_cast<uint64_t>(v))); }
  V add(const V& x, const V& y) {
    if (!x.general() && !y.general()) return aff(b.CreateAdd(x.base, y.base), x.stride + y.stride);
    return perLane(x, y, [&](llvm::Value* p, llvm::Value* q) { return b.CreateAdd(p, q); });
  }
  V sub(const V& x, const V& y) {
    if (!x.general() && !y.general()) return aff(b.CreateSub(x.base, y.base), x.stride - y.stride);
    return perLane(x, y, [&](llvm::Value* p, llvm::Value* q) { return b.CreateSub(p, q); });
  }
  V mul(const V& x, const V& y) {
    bool cx = false, cy = false;
    int64_t kx = constOf(x, &cx), ky = constOf(y, &cy);
    if (x.uniform() && y.uniform()) return uni(b.CreateMul(x.base, y.base));
    if (!x.general() && cy) return aff(b.CreateMul(x.base, y.base), x.stride * ky);
    if (!y.general() && cx) return aff(b.CreateMul(x.base, y.base), y.stride * kx);
    return perLane(x, y, [&](llvm::Value* p, llvm::Value* q) { return b.CreateMul(p, q); });
  }
  // x / y and x % y (y a dim: uniform). With x affine of stride s > 0 and
  // lane 0's remainder r0: no lane crosses a multiple of y when
  // r0 + s*(W-1) < y; then the quotient is uniform and the remainder affine.
  // Stride 1 takes a cheaper test first: x0 and y multiples of W (the
  // schedule starts blocks at multiples of W along the row), then the exact one.
  V divRem(const V& x, const V& y, bool rem) {
    auto scalar = [&](llvm::Value* p, llvm::Value* q) {
      q = g.nonZeroDivisor(q);
      return rem ? b.CreateURem(p, q) : b.CreateUDiv(p, q);
    };
    if (x.uniform() && y.uniform()) return uni(scalar(x.base, y.base));
    if (x.general() || !y.uniform() || x.stride < 0) return perLane(x, y, scalar);
    llvm::Value* yv = g.nonZeroDivisor(y.base);
    if (!checked.count({x.base, yv})) {
      checked[{x.base, yv}] = true;
      int64_t span = x.stride * (w() - 1);
      auto exact = [&] { return b.CreateICmpULT(b.CreateAdd(b.CreateURem(x.base, yv), b.getInt64(span)), yv); };
      if (x.stride == 1 && (w() & (w() - 1)) == 0) {
        // The cheap test first; the remainder only where it fails (a row
        // length not a multiple of W), so those blocks stay vectors too.
        llvm::Value* m = b.CreateAnd(b.CreateOr(x.base, yv), b.getInt64(w() - 1));
        llvm::Function* fn = b.GetInsertBlock()->getParent();
        auto* slow = llvm::BasicBlock::Create(b.getContext(), "lanes.rem", fn);
        auto* fine = llvm::BasicBlock::Create(b.getContext(), "lanes.nowrap", fn);
        b.CreateCondBr(b.CreateICmpEQ(m, b.getInt64(0)), fine, slow);
        b.SetInsertPoint(slow);
        g.src_.laneCheck(exact());
        b.CreateBr(fine);
        b.SetInsertPoint(fine);
      } else {
        g.src_.laneCheck(exact());
      }
    }
    if (rem) return aff(b.CreateURem(x.base, yv), x.stride);
    return uni(b.CreateUDiv(x.base, yv));
  }
  V div(const V& x, const V& y) { return divRem(x, y, false); }
  V rem(const V& x, const V& y) { return divRem(x, y, true); }
  V cmp(const V& x, const V& y, llvm::CmpInst::Predicate p) {
    if (x.uniform() && y.uniform()) return uni(b.CreateICmp(p, x.base, y.base));
    return perLane(x, y, [&](llvm::Value* u, llvm::Value* v) { return b.CreateICmp(p, u, v); });
  }
  V lt(const V& x, const V& y) { return cmp(x, y, llvm::CmpInst::ICMP_SLT); }
  V eq(const V& x, const V& y) { return cmp(x, y, llvm::CmpInst::ICMP_EQ); }
  V select(const V& cnd, const V& x, const V& y) {
    if (cnd.uniform() && !x.general() && !y.general() && x.stride == y.stride)
      return aff(b.CreateSelect(cnd.base, x.base, y.base), x.stride);
    V r;
    for (int l = 0; l < w(); ++l) r.each.push_back(b.CreateSelect(g.lane(cnd, l), g.lane(x, l), g.lane(y, l)));
    return r;
  }
  V dim(const Value* v, size_t d) { return uni(g.dim(v, d)); }
  V expr(const DimExpr& e) { return uni(g.exprValue(e)); }
};

bool laneModeTakes(const Operation& fusion) {
  for (const auto& op : fusion.body)
    // A gather's index check (ElementGenerator::checkGather, run-time errors of docs/ir.md) is scalar: a kernel
    // holding one keeps the scalar rows, so no out-of-range index goes unreported.
    if (op->info().category == OpCategory::Reduce || op->info().category == OpCategory::ArgMax ||
        op->info().category == OpCategory::Matmul || op->info().category == OpCategory::Gather)
      return false;
  return true;
}

llvm::Value* ElementGenerator::lane(const Lanes& x, int l) {
  if (x.general()) return x.each.at(static_cast<size_t>(l));
  if (x.stride == 0 || l == 0) return x.base;
  return b_.CreateAdd(x.base, b_.getInt64(static_cast<uint64_t>(x.stride * l)));
}

Lanes ElementGenerator::linearLanes(const Value* v, const LaneIndex& idx) {
  std::map<std::pair<llvm::Value*, llvm::Value*>, bool> none;
  LaneArith a{*this, b_, none};
  return linearize(a, v, idx);
}

Lanes ElementGenerator::genLanes(const Value* v, const LaneIndex& idx) {
  LaneKey key{v, {}};
  for (const Lanes& x : idx) {
    if (!x.general()) key.second.push_back({x.base, x.stride});
    else
      for (llvm::Value* e : x.each) key.second.push_back({e, INT64_MIN});
  }
  for (auto s = laneScopes_.rbegin(); s != laneScopes_.rend(); ++s)
    if (auto it = s->find(key); it != s->end()) return it->second;
  Lanes r = computeLanes(v, idx);
  laneScopes_.back()[key] = r;
  return r;
}

Lanes ElementGenerator::computeLanes(const Value* v, const LaneIndex& oi) {
  if (inputIndex_.count(v)) {
    Lanes r = src_.loadLanes(v, oi);
    if (r.base || r.general()) return r;
    // The source reads lane by lane: once, where every lane is the same element.
    bool uniform = std::all_of(oi.begin(), oi.end(), [](const Lanes& x) { return x.uniform(); });
    for (int l = 0; l < (uniform ? 1 : lanes_); ++l) {
      ElementIndex at;
      for (const Lanes& x : oi) at.push_back(lane(x, l));
      llvm::Value* e = src_.load(v, at);
      if (uniform) r.base = e;
      else r.each.push_back(e);
    }
    return r;
  }
  std::map<std::pair<llvm::Value*, llvm::Value*>, bool> checked;
  LaneArith a{*this, b_, checked};
  const Operation& op = *defOf_.at(v);
  const std::vector<DimExpr>& out = op.result()->type.dims;
  auto each = [&](const Lanes& x, int l) { return lane(x, l); };
  switch (op.info().category) {
    case OpCategory::Unary: case OpCategory::Cast: case OpCategory::Binary: case OpCategory::Logical:
    case OpCategory::Compare: case OpCategory::Select: {
      std::vector<Lanes> args;
      bool uniform = true;
      for (const Value* x : op.operands) {
        args.push_back(genLanes(x, broadcastSource(a, x, out, oi)));
        uniform = uniform && args.back().uniform();
      }
      Lanes r;
      for (int l = 0; l < (uniform ? 1 : lanes_); ++l) {
        std::vector<llvm::Value*> at;
        for (const Lanes& x : args) at.push_back(each(x, l));
        llvm::Value* e = emitElementwiseOp(b_, op, at);
        e->setName(op.result()->name);
        if (uniform) r.base = e;
        else r.each.push_back(e);
      }
      return r;
    }
    case OpCategory::BroadcastTo: return genLanes(op.operands[0], broadcastSource(a, op.operands[0], out, oi));
    case OpCategory::Reshape: return genLanes(op.operands[0], reshapeSource(a, op, oi));
    case OpCategory::Transpose: return genLanes(op.operands[0], transposeSource(a, op, oi));
    case OpCategory::Slice: return genLanes(op.operands[0], sliceSource(a, op, oi));
    case OpCategory::Iota: {
      const Lanes& i = oi[opAxis(op, out.size())];
      DType dt = op.result()->type.dtype;
      llvm::Type* t = registerType(ctx_, dt);
      auto one = [&](llvm::Value* x) -> llvm::Value* {
        if (isFloat(dt)) return roundToDType(b_, dt, b_.CreateSIToFP(x, t));
        return b_.CreateTrunc(x, t);
      };
      Lanes r;
      if (i.uniform()) r.base = one(i.base);
      else
        for (int l = 0; l < lanes_; ++l) r.each.push_back(one(lane(i, l)));
      return r;
    }
    case OpCategory::Concat: return concatLanes(op, oi);
    default: break;
  }
  // laneModeTakes refused these: no block reaches here.
  src_.laneCheck(b_.getFalse());
  return Lanes{llvm::PoisonValue::get(registerType(ctx_, op.result()->type.dtype)), 0, {}};
}

// Operand k for the lanes in [off[k], off[k+1]) along the axis, as the
// scalar rule. Along a uniform axis the block takes one branch; along an
// affine one (the concat's axis is the row's) the block must lie in one
// operand, which is checked (the schedule goes scalar where it straddles).
Lanes ElementGenerator::concatLanes(const Operation& op, const LaneIndex& oi) {
  std::map<std::pair<llvm::Value*, llvm::Value*>, bool> checked;
  LaneArith a{*this, b_, checked};
  size_t axis = opAxis(op, op.result()->type.rank());
  std::vector<Lanes> off = concatOffsets(a, op);
  const Lanes& x = oi[axis];
  if (x.general() || x.stride < 0) {
    src_.laneCheck(b_.getFalse());
    return Lanes{llvm::PoisonValue::get(registerType(ctx_, op.result()->type.dtype)), 0, {}};
  }
  llvm::Value* last = lane(x, lanes_ - 1);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* merge = llvm::BasicBlock::Create(ctx_, "concat.end", fn);
  std::vector<std::pair<Lanes, llvm::BasicBlock*>> in;
  size_t n = op.operands.size();
  bool uniform = true;
  for (size_t k = 0; k < n; ++k) {
    llvm::BasicBlock* next = nullptr;
    if (k + 1 < n) {
      auto* take = llvm::BasicBlock::Create(ctx_, "concat.k" + std::to_string(k), fn);
      next = llvm::BasicBlock::Create(ctx_, "concat.not" + std::to_string(k), fn);
      b_.CreateCondBr(b_.CreateICmpSLT(x.base, off[k + 1].base), take, next);
      b_.SetInsertPoint(take);
      if (!x.uniform()) src_.laneCheck(b_.CreateICmpSLT(last, off[k + 1].base));
    }
    pushScope();
    Lanes v = genLanes(op.operands[k], concatSource(a, op, off, k, oi));
    popScope();
    uniform = uniform && v.uniform();
    in.push_back({v, b_.GetInsertBlock()});
    if (next) b_.SetInsertPoint(next);
  }
  // Each branch ends where its value is known; the lanes are made there.
  // Lanes that differ meet as one vector phi, not W scalar ones, so a
  // branch's W-wide load reaches the store as one value.
  llvm::Type* t = registerType(ctx_, op.result()->type.dtype);
  llvm::Type* vt = uniform ? t : llvm::FixedVectorType::get(t, static_cast<unsigned>(lanes_));
  b_.SetInsertPoint(merge);
  llvm::PHINode* phi = b_.CreatePHI(vt, static_cast<unsigned>(n));
  for (auto& [v, bb] : in) {
    b_.SetInsertPoint(bb);
    llvm::Value* x = uniform ? v.base : llvm::PoisonValue::get(vt);
    if (!uniform)
      for (int l = 0; l < lanes_; ++l) x = b_.CreateInsertElement(x, lane(v, l), l);
    phi->addIncoming(x, bb);
    b_.CreateBr(merge);
  }
  b_.SetInsertPoint(merge);
  Lanes r;
  if (uniform) r.base = phi;
  else
    for (int l = 0; l < lanes_; ++l) r.each.push_back(b_.CreateExtractElement(phi, l));
  return r;
}

}  // namespace dscc::codegen
