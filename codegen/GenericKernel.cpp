// Generic kernels: each result walked in rows (or tiles, for transposes) around the element generator.
#include "codegen/GenericKernel.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementGenerator.h"
#include "codegen/ElementOps.h"
#include "codegen/Jit.h"
#include "codegen/KernelCommon.h"
#include "codegen/KernelLowering.h"
#include "ir/IndexMap.h"

namespace dscc::codegen {
namespace {

// What a generic kernel needs to know before emitting: inputs, symbols, units.
struct GenericPlan : KernelForm {
  const Operation* fusion = nullptr;
  std::map<const Value*, size_t> inputIndex;
  std::map<const Value*, const Operation*> defOf;
  std::vector<DimExpr> offsets;  // per result: its first unit
  std::vector<bool> tiled;       // per result: its units are kTile x kTile tiles of the last two dims
  bool leastIndices = false;     // every gather keeps its smallest bad index (planGenericKernel)
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

std::string plan(const Operation& f, GenericPlan& p, bool tiles, bool vectors) {
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
  // The vector version blocks the rows of the first result (any length: a
  // scalar tail). Its guard asks for rows of at least one block. Not for
  // tiles: a transposed read has no stride-1 lanes, and a tile's rows are
  // short (LLVM's own vectorisation of the tile loop is kept).
  bool anyTiled = std::find(p.tiled.begin(), p.tiled.end(), true) != p.tiled.end();
  if (vectors && !anyTiled && laneModeTakes(f) && f.result(0)->type.rank() >= 1)
    p.iface.guards.vectorExtent = f.result(0)->type.dims.back();
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

// The generic schedule: rows (or tiles) of each result, an input element read
// at its full index linearised.
class GenericSchedule : public ElementSource {
 public:
  using Index = ElementIndex;

  GenericSchedule(const GenericPlan& p, llvm::IRBuilderBase& b, const KernelVariant& v)
      : p_(p), b_(b), ctx_(b.getContext()), index32_(v.index32), width_(v.vectorWidth), gen_(*p.fusion, b, *this) {
    if (width_ > 1) gen_.setLanes(width_);
    if (p.leastIndices) gen_.recordLeastIndices();
  }

  void emit(llvm::BasicBlock* entry, llvm::Value* inputs, llvm::Value* outputs, llvm::Value* sizes,
            llvm::Value* begin, llvm::Value* end) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* setup = llvm::BasicBlock::Create(ctx_, "setup", fn);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", fn);
    // An empty range touches no pointer, so callers may pass null buffers.
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), setup, done);
    b_.SetInsertPoint(setup);
    DimEmitter dims(b_, sizes, p_.iface.symbols);
    gen_.prepareIndexing(dims, entry, inputs, outputs);
    const Operation& f = *p_.fusion;
    for (size_t i = 0; i < f.results.size(); ++i) dims.emit(p_.offsets[i]);
    for (size_t i = 0; i < f.results.size(); ++i) {
      llvm::Value* off = dims.emit(p_.offsets[i]);
      llvm::Value* n = dims.emit(unitsOf(f.result(i)->type, p_.tiled[i]));
      // This result's units in [begin, end), counted from its first one.
      llvm::Value* lo = b_.CreateSub(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, begin, off), off);
      llvm::Value* hi = b_.CreateSub(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, end, b_.CreateAdd(off, n)), off);
      if (p_.tiled[i]) emitTiles(i, lo, hi);
      else emitRows(i, lo, hi);
    }
    gen_.reportChecks();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  llvm::Value* load(const Value* v, const Index& idx) override {
    llvm::Value* off = gen_.linearIndex(v, idx);
    llvm::Type* et = storageType(ctx_, v->type.dtype);
    // Inputs are only read, and no output shares their buffers: a load
    // whose index does not depend on the inner loop (a gather's index, a
    // broadcast operand) is hoisted out of it, and the row vectorises.
    return loadElement(b_, v->type.dtype, b_.CreateInBoundsGEP(et, gen_.inputBuffer(v), off), 0, /*invariant=*/true);
  }

  // A vector block reads an input whose flat index has stride 1 along the
  // lanes as one W-wide load, one constant along them as one element; other
  // inputs lane by lane (the generator's default).
  Lanes loadLanes(const Value* v, const LaneIndex& idx) override {
    Lanes off = gen_.linearLanes(v, idx);
    if (off.general() || (off.stride != 0 && off.stride != 1)) return {};
    DType dt = v->type.dtype;
    llvm::Type* et = storageType(ctx_, dt);
    llvm::Value* at = b_.CreateInBoundsGEP(et, gen_.inputBuffer(v), off.base);
    if (off.stride == 0) return Lanes{loadElement(b_, dt, at, 0, /*invariant=*/true), 0, {}};
    auto* vt = llvm::FixedVectorType::get(et, static_cast<unsigned>(width_));
    llvm::LoadInst* x = b_.CreateAlignedLoad(vt, at, llvm::Align(dtypeSize(dt)));
    x->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
    Lanes r;
    for (int l = 0; l < width_; ++l) r.each.push_back(toRegister(b_, dt, b_.CreateExtractElement(x, l)));
    return r;
  }

  // A block whose lanes fail `ok` is left to the scalar loop, which finishes
  // the row from the block's first element.
  void laneCheck(llvm::Value* ok) override {
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(ok); c && c->isOne()) return;
    auto* cont = llvm::BasicBlock::Create(ctx_, "lanes.ok", b_.GetInsertBlock()->getParent());
    b_.CreateCondBr(ok, cont, rest_);
    restFrom_->addIncoming(blockStart_, b_.GetInsertBlock());
    b_.SetInsertPoint(cont);
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
      llvm::Value* n = gen_.dim(v, d);
      idx[d] = urem(flat, n);
      flat = udiv(flat, n);
    }
    return idx;
  }

  void storeAt(size_t i, const Index& idx, llvm::Value* flat) {
    const Value* res = p_.fusion->result(i);
    DType dt = res->type.dtype;
    llvm::Value* v = gen_.gen(p_.fusion->yields[i], idx);
    storeElement(b_, dt, v, b_.CreateInBoundsGEP(storageType(ctx_, dt), gen_.outputBuffer(i), flat));
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
      gen_.pushScope();
      storeAt(i, {}, b_.getInt64(0));
      gen_.popScope();
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
      return;
    }
    llvm::Value* L = gen_.dim(res, r - 1);
    gen_.forStep(lo, hi, name, [&](llvm::Value* flat) {
      llvm::Value* i0 = urem(flat, L);
      llvm::Value* n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateSub(L, i0), b_.CreateSub(hi, flat));
      llvm::Value* rowStart = b_.CreateSub(flat, i0);
      Index outer = prefixIndex(res, r - 1, udiv(flat, L));
      emitSegment(i, outer, rowStart, i0, b_.CreateAdd(i0, n), name);
      return b_.CreateAdd(flat, n);
    });
  }

  // Tiles [lo, hi) of result i: kTile x kTile blocks of its last two dims.
  void emitTiles(size_t i, llvm::Value* lo, llvm::Value* hi) {
    const Value* res = p_.fusion->result(i);
    size_t r = res->type.rank();
    llvm::Value* R = gen_.dim(res, r - 2);
    llvm::Value* C = gen_.dim(res, r - 1);
    llvm::Value* T = b_.getInt64(kTile);
    llvm::Value* tr = udiv(b_.CreateAdd(R, b_.getInt64(kTile - 1)), T);
    llvm::Value* tc = udiv(b_.CreateAdd(C, b_.getInt64(kTile - 1)), T);
    std::string name = "t" + std::to_string(i);
    gen_.forRange(lo, hi, name, [&](llvm::Value* u) {
      llvm::Value* jt = urem(u, tc);
      llvm::Value* rest = udiv(u, tc);
      llvm::Value* it = urem(rest, tr);
      Index outer = prefixIndex(res, r - 2, udiv(rest, tr));
      llvm::Value* i0 = b_.CreateMul(it, T);
      llvm::Value* j0 = b_.CreateMul(jt, T);
      llvm::Value* i1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(i0, T), R);
      llvm::Value* j1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(j0, T), C);
      llvm::Value* base = b_.getInt64(0);
      for (size_t d = 0; d + 2 < r; ++d) base = b_.CreateAdd(b_.CreateMul(base, gen_.dim(res, d)), outer[d]);
      gen_.forRange(i0, i1, name + ".i", [&](llvm::Value* ii) {
        llvm::Value* rowStart = b_.CreateMul(b_.CreateAdd(b_.CreateMul(base, R), ii), C);
        Index rowIdx = outer;
        rowIdx.push_back(ii);
        emitSegment(i, rowIdx, rowStart, j0, j1, name);
      });
    });
  }

  // Elements [jlo, jhi) of the row of result i at `outer` (its index but the
  // last dim), whose flat index is rowStart + j. The vector version: scalar
  // elements up to a multiple of W, then blocks of W lanes from the
  // generator's lane mode (a W-wide store each), then a scalar tail, which
  // also finishes the row from a block whose lanes fail a check
  // (ElementSource::laneCheck).
  void emitSegment(size_t i, const Index& outer, llvm::Value* rowStart, llvm::Value* jlo, llvm::Value* jhi,
                   const std::string& name) {
    auto scalar = [&](llvm::Value* from, llvm::Value* to, const std::string& what) {
      gen_.forRange(from, to, name + what, [&](llvm::Value* j) {
        Index idx = outer;
        idx.push_back(j);
        storeAt(i, idx, b_.CreateAdd(rowStart, j));
      });
    };
    if (width_ <= 1) return scalar(jlo, jhi, ".j");
    llvm::Value* W = b_.getInt64(width_);
    llvm::Value* up = b_.CreateAnd(b_.CreateAdd(jlo, b_.getInt64(width_ - 1)), b_.getInt64(~int64_t(width_ - 1)));
    if ((width_ & (width_ - 1)) != 0) up = b_.CreateMul(udiv(b_.CreateAdd(jlo, b_.getInt64(width_ - 1)), W), W);
    llvm::Value* aligned = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, up, jhi);
    scalar(jlo, aligned, ".pre");
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, name + ".v", fn);
    auto* body = llvm::BasicBlock::Create(ctx_, name + ".v.body", fn);
    auto* rest = llvm::BasicBlock::Create(ctx_, name + ".tail.from", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* j = b_.CreatePHI(b_.getInt64Ty(), 2, name + ".v.j");
    j->addIncoming(aligned, pre);
    b_.CreateCondBr(b_.CreateICmpSLE(b_.CreateAdd(j, W), jhi), body, rest);
    b_.SetInsertPoint(rest);
    llvm::PHINode* from = b_.CreatePHI(b_.getInt64Ty(), 2, name + ".tail.j");
    from->addIncoming(j, head);
    b_.SetInsertPoint(body);
    rest_ = rest, restFrom_ = from, blockStart_ = j;
    gen_.pushScope();
    LaneIndex idx;
    for (llvm::Value* x : outer) idx.push_back(Lanes{x, 0, {}});
    idx.push_back(Lanes{j, 1, {}});
    Lanes y = gen_.genLanes(p_.fusion->yields[i], idx);
    DType dt = p_.fusion->result(i)->type.dtype;
    llvm::Type* et = storageType(ctx_, dt);
    llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(et, static_cast<unsigned>(width_)));
    if (y.uniform()) {
      vec = b_.CreateVectorSplat(static_cast<unsigned>(width_), toStorage(b_, dt, y.base));
    } else {
      for (int l = 0; l < width_; ++l) vec = b_.CreateInsertElement(vec, toStorage(b_, dt, gen_.lane(y, l)), l);
    }
    b_.CreateAlignedStore(vec, b_.CreateInBoundsGEP(et, gen_.outputBuffer(i), b_.CreateAdd(rowStart, j)),
                          llvm::Align(dtypeSize(dt)));
    gen_.popScope();
    rest_ = nullptr, restFrom_ = nullptr, blockStart_ = nullptr;
    j->addIncoming(b_.CreateAdd(j, W, "", true, true), b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(rest);
    scalar(from, jhi, ".tail");
  }

  const GenericPlan& p_;
  llvm::IRBuilderBase& b_;
  llvm::LLVMContext& ctx_;
  bool index32_ = false;
  int width_ = 1;  // > 1: the vector version's lanes
  // While a vector block is generated: where a failed lane check goes, and
  // the block's first element, from which the scalar loop goes on.
  llvm::BasicBlock* rest_ = nullptr;
  llvm::PHINode* restFrom_ = nullptr;
  llvm::Value* blockStart_ = nullptr;
  ElementGenerator gen_;
};

}  // namespace

bool genericVectorPays(const Operation& fusion, int width) {
  if (width < 2 || fusion.results.empty()) return false;
  auto wholeBlocks = [&](const DimExpr& d) { return d.isConst() && d.constValue() % width == 0; };
  const DimExpr* row = nullptr;
  for (const auto& r : fusion.results) {
    if (r->type.rank() == 0) return false;
    const DimExpr& d = r->type.dims.back();
    if (row && !(d == *row)) return false;
    row = &d;
  }
  if (!wholeBlocks(*row) || row->constValue() < width || row->constValue() > 2 * width) return false;
  for (const auto& op : fusion.body) {
    if (op->kind != OpKind::Concat) continue;
    size_t rank = op->result()->type.rank();
    if (opAxis(*op, rank) + 1 != rank) continue;
    for (const Value* v : op->operands)
      if (!wholeBlocks(v->type.dims.back())) return false;
  }
  return true;
}

std::shared_ptr<const KernelForm> planGenericKernel(const Operation& fusion, bool tiles, bool vectors,
                                                    std::string* error, bool leastIndices) {
  auto p = std::make_shared<GenericPlan>();
  *error = plan(fusion, *p, tiles, vectors);
  if (!error->empty()) return nullptr;
  p->leastIndices = leastIndices;
  return p;
}

std::string describeGenericKernel(const Operation& fusion, KernelInterface& out, bool tiles, bool vectors) {
  std::string e;
  std::shared_ptr<const KernelForm> form = planGenericKernel(fusion, tiles, vectors, &e);
  if (form) out = form->iface;
  return e;
}

LoweredKernel lowerGenericKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                                 const KernelVariant& v) {
  LoweredKernel res;
  const auto* p = dynamic_cast<const GenericPlan*>(&form);
  if (!p) {
    res.error = "codegen: lowerGenericKernel was given another kind's form";
    return res;
  }
  if (v.vectorWidth > 1 && p->iface.guards.vectorExtent == DimExpr(0)) {
    res.error = "codegen: no vector version of this generic kernel (it was planned without one, or it holds a "
                "reduction, argmax or matmul)";
    return res;
  }
  llvm::Function* fn = createKernelFunction(m, name, &res.error);
  if (!fn) return res;
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(m.context(), "entry", fn));
  GenericSchedule(*p, b, v).emit(&fn->getEntryBlock(), fn->getArg(0), fn->getArg(1), fn->getArg(2), fn->getArg(3),
                                 fn->getArg(4));
  b.CreateRetVoid();
  res.fn = fn;
  res.iface = p->iface;
  return res;
}

LoweredKernel lowerGenericKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                                 const KernelVariant& v, bool tiles) {
  std::string e;
  std::shared_ptr<const KernelForm> form = planGenericKernel(fusion, tiles, v.vectorWidth > 1, &e);
  if (!form) {
    LoweredKernel res;
    res.error = e;
    return res;
  }
  return lowerGenericKernel(*form, m, name, v);
}

}  // namespace dscc::codegen
