// The element generator: generic kernels of any ops, each element computed through the ops' index maps.
#include "codegen/ElementGenerator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementOps.h"
#include "codegen/Jit.h"
#include "codegen/KernelCommon.h"
#include "codegen/KernelLowering.h"
#include "ir/IndexMap.h"

namespace dscc::codegen {
namespace {

// What a generic kernel needs to know before emitting: inputs, symbols, units.
struct GenericPlan {
  const Operation* fusion = nullptr;
  KernelInterface iface;
  std::map<const Value*, size_t> inputIndex;
  std::map<const Value*, const Operation*> defOf;
  std::vector<DimExpr> offsets;  // per result: its first unit
  std::vector<bool> tiled;       // per result: its units are kTile x kTile tiles of the last two dims
};

// Tiles of the last two dims: a transpose then reads and writes whole cache
// lines (32 floats = two lines) instead of one element per line.
constexpr int64_t kTile = 32;

// True when `f` moves data across its last axis (a transpose that sends the
// operand's contiguous axis elsewhere): its results are walked in tiles.
bool movesLastAxis(const Operation& f) {
  for (const auto& op : f.body)
    if (op->kind == OpKind::Transpose) {
      std::vector<size_t> perm = transposePerm(*op);
      if (perm.size() >= 2 && perm.back() != perm.size() - 1) return true;
    }
  return false;
}

// The units of result `t`: elements, or tiles of its last two dims.
DimExpr unitsOf(const Type& t, bool tiled) {
  if (!tiled) return numel(t);
  DimExpr n(1);
  size_t r = t.rank();
  for (size_t d = 0; d + 2 < r; ++d) n = n * t.dims[d];
  return n * DimExpr::ceilDiv(t.dims[r - 2], DimExpr(kTile)) * DimExpr::ceilDiv(t.dims[r - 1], DimExpr(kTile));
}

std::string plan(const Operation& f, GenericPlan& p, bool tiles) {
  p.fusion = &f;
  if (f.kind != OpKind::Fusion) return err("op '" + std::string(f.name()) + "' is not a fusion");
  if (f.results.empty() || f.yields.size() != f.results.size()) return err("a kernel must yield its results");
  std::set<std::string> symbols;
  auto collect = [&](const Type& t) {
    for (const DimExpr& d : t.dims) d.collectSymbols(symbols);
  };
  for (const Value* v : f.operands) {
    if (!dtypeSupported(v->type.dtype))
      return err("dtype " + std::string(dtypeName(v->type.dtype)) + " of operand %" + v->name + " is not supported");
    p.inputIndex.emplace(v, p.iface.inputs.size());
    p.iface.inputs.push_back(v->type);
    collect(v->type);
  }
  DimExpr work(1);
  for (const auto& op : f.body) {
    for (const Value* v : op->operands)
      if (!p.inputIndex.count(v) && !p.defOf.count(v))
        return err("%" + v->name + " is used in the kernel body but is not a fusion operand");
    switch (opPattern(*op)) {
      case OpPattern::Elementwise: case OpPattern::Broadcast:
        if (isElementwise(*op))
          if (std::string why = checkElementwiseOp(*op); !why.empty()) return err(why);
        break;
      case OpPattern::Injective: break;
      case OpPattern::Reduction: {
        DimExpr n(1);
        for (size_t a : reducedAxes(*op)) n = n * op->operands[0]->type.dims[a];
        // The chunking estimate: the widest reduction's elements per output.
        if (!(n.isConst() && n.constValue() == 1)) work = n;
        break;
      }
      case OpPattern::Opaque:
        if (op->kind == OpKind::Matmul) {  // a loop over K per element (dtypes without a GEMM routine)
          const Type& at = op->operands[0]->type;
          bool ta = false;
          if (const Attribute* t = op->attr("transpose_a")) ta = t->b;
          work = at.rank() == 1 ? at.dims[0] : at.dims[at.rank() - (ta ? 2 : 1)];
          break;
        }
        return err("op '" + std::string(op->name()) + "' (%" + nameOf(*op) + ") cannot be part of a kernel");
    }
    if (op->kind == OpKind::Slice)
      for (const SliceAxis& s : sliceAxes(*op)) {
        s.start.collectSymbols(symbols);
        s.end.collectSymbols(symbols);
      }
    for (const auto& r : op->results) {
      if (!dtypeSupported(r->type.dtype))
        return err("dtype " + std::string(dtypeName(r->type.dtype)) + " of %" + r->name + " is not supported");
      p.defOf.emplace(r.get(), op.get());
      collect(r->type);
    }
  }
  DimExpr units(0);
  bool tile = tiles && movesLastAxis(f);
  for (size_t i = 0; i < f.results.size(); ++i) {
    const Value* y = f.yields[i];
    if (!p.inputIndex.count(y) && !p.defOf.count(y))
      return err("yielded value %" + y->name + " is not defined in the kernel");
    p.offsets.push_back(units);
    p.tiled.push_back(tile && f.result(i)->type.rank() >= 2);
    if (p.tiled.back()) work = DimExpr(kTile * kTile);
    units = units + unitsOf(f.result(i)->type, p.tiled.back());
    p.iface.outputs.push_back(f.result(i)->type);
    collect(f.result(i)->type);
  }
  p.iface.symbols.assign(symbols.begin(), symbols.end());
  p.iface.units = units;
  p.iface.workPerUnit = work;
  // The index32 version divides flat indices of every operand, body value and
  // result (and the units) in 32 bits: each count must fit in int32.
  std::vector<DimExpr>& counts = p.iface.guards.indexCounts;
  auto addCount = [&](const Type& t) {
    DimExpr n = numel(t);
    if (std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
  };
  counts.push_back(units);
  for (const Value* v : f.operands) addCount(v->type);
  for (const auto& op : f.body)
    for (const auto& r : op->results) addCount(r->type);
  return "";
}

// x / y or x % y of non-negative indices: in 32-bit arithmetic in an index32
// version (its guard bounds every flat count by INT32_MAX, so both fit in
// u32), where a division costs a fraction of a 64-bit one; i64 otherwise.
// Used for the per-row and per-tile splits of a result's flat index (outside
// the inner loop), not for the ops' maps (see LlvmArith).
llvm::Value* indexDivRem(llvm::IRBuilderBase& b, bool index32, llvm::Value* x, llvm::Value* y, bool rem) {
  if (!index32) return rem ? b.CreateURem(x, y) : b.CreateUDiv(x, y);
  llvm::Value* x32 = b.CreateTrunc(x, b.getInt32Ty()), *y32 = b.CreateTrunc(y, b.getInt32Ty());
  return b.CreateZExt(rem ? b.CreateURem(x32, y32) : b.CreateUDiv(x32, y32), b.getInt64Ty());
}

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
  V eq(V x, V y) { return b.CreateICmpEQ(x, y); }
  V select(V cnd, V x, V y) { return b.CreateSelect(cnd, x, y); }
  V dim(const Value* v, size_t d) { return dims.at(v).at(d); }
  // Every expression is emitted in the setup block first (see emitSetup), so
  // this finds it in DimEmitter's cache and emits nothing here.
  V expr(const DimExpr& e) { return exprs.emit(e); }
};

class Generator {
 public:
  using Index = std::vector<llvm::Value*>;
  using Key = std::pair<const Value*, Index>;

  Generator(const GenericPlan& p, llvm::IRBuilderBase& b, bool index32)
      : p_(p), b_(b), ctx_(b.getContext()), index32_(index32) {}

  void emit(llvm::BasicBlock* entry, llvm::Value* inputs, llvm::Value* outputs, llvm::Value* sizes,
            llvm::Value* begin, llvm::Value* end) {
    entry_ = entry;
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* setup = llvm::BasicBlock::Create(ctx_, "setup", fn);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", fn);
    // An empty range touches no pointer, so callers may pass null buffers.
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), setup, done);
    b_.SetInsertPoint(setup);
    DimEmitter dims(b_, sizes, p_.iface.symbols);
    LlvmArith a{b_, dims_, dims, {}};
    arith_ = &a;
    emitSetup(dims, inputs, outputs);
    const Operation& f = *p_.fusion;
    for (size_t i = 0; i < f.results.size(); ++i) {
      llvm::Value* off = dims.emit(p_.offsets[i]);
      llvm::Value* n = dims.emit(unitsOf(f.result(i)->type, p_.tiled[i]));
      // This result's units in [begin, end), counted from its first one.
      llvm::Value* lo = b_.CreateSub(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, begin, off), off);
      llvm::Value* hi = b_.CreateSub(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, end, b_.CreateAdd(off, n)), off);
      if (p_.tiled[i]) emitTiles(i, lo, hi);
      else emitRows(i, lo, hi);
    }
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

 private:
  llvm::Value* udiv(llvm::Value* x, llvm::Value* y) { return indexDivRem(b_, index32_, x, y, false); }
  llvm::Value* urem(llvm::Value* x, llvm::Value* y) { return indexDivRem(b_, index32_, x, y, true); }

  // The first `k` dims of `v`'s index from the row-major flat index `flat` of those dims.
  Index prefixIndex(const Value* v, size_t k, llvm::Value* flat) {
    Index idx(k, nullptr);
    for (size_t d = k; d-- > 0;) {
      if (d == 0) {
        idx[0] = flat;
        break;
      }
      llvm::Value* n = dims_.at(v)[d];
      idx[d] = urem(flat, n);
      flat = udiv(flat, n);
    }
    return idx;
  }

  void storeAt(size_t i, const Index& idx, llvm::Value* flat) {
    const Value* res = p_.fusion->result(i);
    DType dt = res->type.dtype;
    llvm::Value* v = gen(p_.fusion->yields[i], idx);
    storeElement(b_, dt, v, b_.CreateInBoundsGEP(storageType(ctx_, dt), out_[i], flat));
  }

  // Elements [lo, hi) of result i, a row of its last dim at a time: the
  // outer index is computed once per row and the inner one is the loop
  // variable, so addresses along the row are affine in it.
  void emitRows(size_t i, llvm::Value* lo, llvm::Value* hi) {
    const Value* res = p_.fusion->result(i);
    size_t r = res->type.rank();
    std::string name = "r" + std::to_string(i);
    if (r == 0) {
      llvm::Function* fn = b_.GetInsertBlock()->getParent();
      auto* one = llvm::BasicBlock::Create(ctx_, name + ".elem", fn);
      auto* next = llvm::BasicBlock::Create(ctx_, name + ".end", fn);
      b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), one, next);
      b_.SetInsertPoint(one);
      scopes_.emplace_back();
      storeAt(i, {}, b_.getInt64(0));
      scopes_.pop_back();
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
      return;
    }
    llvm::Value* L = dims_.at(res)[r - 1];
    forStep(lo, hi, name, [&](llvm::Value* flat) {
      llvm::Value* i0 = urem(flat, L);
      llvm::Value* n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateSub(L, i0), b_.CreateSub(hi, flat));
      llvm::Value* rowStart = b_.CreateSub(flat, i0);
      Index outer = prefixIndex(res, r - 1, udiv(flat, L));
      forRange(i0, b_.CreateAdd(i0, n), name + ".j", [&](llvm::Value* j) {
        Index idx = outer;
        idx.push_back(j);
        storeAt(i, idx, b_.CreateAdd(rowStart, j));
      });
      return b_.CreateAdd(flat, n);
    });
  }

  // Tiles [lo, hi) of result i: kTile x kTile blocks of its last two dims.
  void emitTiles(size_t i, llvm::Value* lo, llvm::Value* hi) {
    const Value* res = p_.fusion->result(i);
    size_t r = res->type.rank();
    llvm::Value* R = dims_.at(res)[r - 2];
    llvm::Value* C = dims_.at(res)[r - 1];
    llvm::Value* T = b_.getInt64(kTile);
    llvm::Value* tr = udiv(b_.CreateAdd(R, b_.getInt64(kTile - 1)), T);
    llvm::Value* tc = udiv(b_.CreateAdd(C, b_.getInt64(kTile - 1)), T);
    std::string name = "t" + std::to_string(i);
    forRange(lo, hi, name, [&](llvm::Value* u) {
      llvm::Value* jt = urem(u, tc);
      llvm::Value* rest = udiv(u, tc);
      llvm::Value* it = urem(rest, tr);
      Index outer = prefixIndex(res, r - 2, udiv(rest, tr));
      llvm::Value* i0 = b_.CreateMul(it, T);
      llvm::Value* j0 = b_.CreateMul(jt, T);
      llvm::Value* i1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(i0, T), R);
      llvm::Value* j1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(j0, T), C);
      llvm::Value* base = b_.getInt64(0);
      for (size_t d = 0; d + 2 < r; ++d) base = b_.CreateAdd(b_.CreateMul(base, dims_.at(res)[d]), outer[d]);
      forRange(i0, i1, name + ".i", [&](llvm::Value* ii) {
        llvm::Value* rowStart = b_.CreateMul(b_.CreateAdd(b_.CreateMul(base, R), ii), C);
        forRange(j0, j1, name + ".j", [&](llvm::Value* jj) {
          Index idx = outer;
          idx.push_back(ii);
          idx.push_back(jj);
          storeAt(i, idx, b_.CreateAdd(rowStart, jj));
        });
      });
    });
  }

  // for (x = lo; x < hi; x = body(x)), with its own memo scope.
  template <class Body>
  void forStep(llvm::Value* lo, llvm::Value* hi, const std::string& name, Body body) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, name, fn);
    auto* loop = llvm::BasicBlock::Create(ctx_, name + ".body", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, name + ".end", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* x = b_.CreatePHI(b_.getInt64Ty(), 2, name + ".x");
    x->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(x, hi), loop, exit);
    b_.SetInsertPoint(loop);
    scopes_.emplace_back();
    llvm::Value* next = body(x);
    scopes_.pop_back();
    x->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }

  void emitSetup(DimEmitter& dims, llvm::Value* inputs, llvm::Value* outputs) {
    const Operation& f = *p_.fusion;
    auto dimsOf = [&](const Value* v) {
      std::vector<llvm::Value*>& d = dims_[v];
      for (const DimExpr& e : v->type.dims) d.push_back(dims.emit(e));
    };
    llvm::Type* ptrTy = b_.getPtrTy();
    for (size_t k = 0; k < f.operands.size(); ++k) {
      dimsOf(f.operands[k]);
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, inputs, k);
      in_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "in." + f.operands[k]->name));
    }
    for (const auto& op : f.body) {
      for (const auto& r : op->results) dimsOf(r.get());
      if (op->kind == OpKind::Slice)
        for (const SliceAxis& s : sliceAxes(*op)) dims.emit(s.start);
    }
    for (size_t i = 0; i < f.results.size(); ++i) {
      dimsOf(f.result(i));
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, outputs, i);
      out_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "out." + f.result(i)->name));
    }
    for (size_t i = 0; i < f.results.size(); ++i) dims.emit(p_.offsets[i]);
  }

  // for (i = lo; i < hi; ++i) body(i), with its own memo scope.
  template <class Body>
  void forRange(llvm::Value* lo, llvm::Value* hi, const std::string& name, Body body) {
    forStep(lo, hi, name, [&](llvm::Value* i) {
      body(i);
      return b_.CreateAdd(i, b_.getInt64(1), "", true, true);
    });
  }

  llvm::Value* entryAlloca(llvm::Type* t, const std::string& name) {
    llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
    return eb.CreateAlloca(t, nullptr, name);
  }

  // The value of `v` at index `idx`, in register form.
  llvm::Value* gen(const Value* v, const Index& idx) {
    Key key{v, idx};
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      if (auto it = s->find(key); it != s->end()) return it->second;
    llvm::Value* r = compute(v, idx);
    scopes_.back()[key] = r;
    return r;
  }

  llvm::Value* load(const Value* v, const Index& idx) {
    size_t k = p_.inputIndex.at(v);
    llvm::Value* off = linearize(*arith_, v, idx);
    llvm::Type* et = storageType(ctx_, v->type.dtype);
    // Inputs are only read, and no output shares their buffers: a load
    // whose index does not depend on the inner loop (a gather's index, a
    // broadcast operand) is hoisted out of it, and the row vectorises.
    return loadElement(b_, v->type.dtype, b_.CreateInBoundsGEP(et, in_[k], off), 0, /*invariant=*/true);
  }

  llvm::Value* compute(const Value* v, const Index& oi) {
    if (p_.inputIndex.count(v)) return load(v, oi);
    const Operation& op = *p_.defOf.at(v);
    LlvmArith& a = *arith_;
    const std::vector<DimExpr>& out = op.result()->type.dims;
    switch (op.info().category) {
      case OpCategory::Unary: case OpCategory::Cast: case OpCategory::Binary: case OpCategory::Logical:
      case OpCategory::Compare: case OpCategory::Select: {
        std::vector<llvm::Value*> args;
        for (const Value* x : op.operands) args.push_back(gen(x, broadcastSource(a, x, out, oi)));
        llvm::Value* r = emitElementwiseOp(b_, op, args);
        r->setName(op.result()->name);
        return r;
      }
      case OpCategory::BroadcastTo: return gen(op.operands[0], broadcastSource(a, op.operands[0], out, oi));
      case OpCategory::Reshape: return gen(op.operands[0], reshapeSource(a, op, oi));
      case OpCategory::Transpose: return gen(op.operands[0], transposeSource(a, op, oi));
      case OpCategory::Slice: return gen(op.operands[0], sliceSource(a, op, oi));
      case OpCategory::Gather: {
        const Value* ix = op.operands[1];
        llvm::Value* w = gen(ix, gatherIndexSource(a, op, oi));
        w = b_.CreateSExt(w, b_.getInt64Ty());
        return gen(op.operands[0], gatherDataSource(a, op, oi, w));
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

  // Operand k for the output rows in [off[k], off[k+1]) along the axis; a
  // branch per operand, so no operand is read outside its bounds.
  llvm::Value* concat(const Operation& op, const Index& oi) {
    LlvmArith& a = *arith_;
    size_t axis = opAxis(op, op.result()->type.rank());
    Index off = concatOffsets(a, op);
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
      scopes_.emplace_back();
      llvm::Value* v = gen(op.operands[k], concatSource(a, op, off, k, oi));
      scopes_.pop_back();
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
  void reducedLoops(const Operation& op, Body body) {
    std::vector<size_t> axes = reducedAxes(op);
    Index ivs(axes.size());
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

  llvm::Value* reduce(const Operation& op, const Index& oi) {
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
    reducedLoops(op, [&](const Index& ivs) {
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
  llvm::Value* matmul(const Operation& op, const Index& oi) {
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
      Index idx;
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
      Index ix = xv ? Index{} : batchIndex(x, rx - 2), iy = yv ? Index{} : batchIndex(y, ry - 2);
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

  llvm::Value* argmax(const Operation& op, const Index& oi) {
    DType in = op.operands[0]->type.dtype;
    bool fl = isFloat(in);
    llvm::Type* vt = registerType(ctx_, in);
    llvm::Value* best = entryAlloca(vt, "best." + op.result()->name);
    llvm::Value* at = entryAlloca(b_.getInt64Ty(), "at." + op.result()->name);
    b_.CreateStore(llvm::Constant::getNullValue(vt), best);
    b_.CreateStore(b_.getInt64(0), at);
    reducedLoops(op, [&](const Index& ivs) {
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

  const GenericPlan& p_;
  llvm::IRBuilderBase& b_;
  llvm::LLVMContext& ctx_;
  llvm::BasicBlock* entry_ = nullptr;
  LlvmArith* arith_ = nullptr;
  std::map<const Value*, std::vector<llvm::Value*>> dims_;
  std::vector<llvm::Value*> in_, out_;
  std::vector<std::map<Key, llvm::Value*>> scopes_{1};
  bool index32_ = false;
};

}  // namespace

std::string describeGenericKernel(const Operation& fusion, KernelInterface& out, bool tiles) {
  GenericPlan p;
  std::string e = plan(fusion, p, tiles);
  if (e.empty()) out = p.iface;
  return e;
}

LoweredKernel lowerGenericKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                 const KernelVariant& v, bool tiles) {
  LoweredKernel res;
  GenericPlan p;
  res.error = plan(fusion, p, tiles);
  if (!res.error.empty()) return res;
  llvm::Function* fn = createKernelFunction(m, name, &res.error);
  if (!fn) return res;
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(m.context(), "entry", fn));
  Generator(p, b, v.index32).emit(&fn->getEntryBlock(), fn->getArg(0), fn->getArg(1), fn->getArg(2), fn->getArg(3),
                       fn->getArg(4));
  b.CreateRetVoid();
  res.fn = fn;
  res.iface = p.iface;
  return res;
}

}  // namespace dscc::codegen
