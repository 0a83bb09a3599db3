// Loop kernels to LLVM IR: planning (iteration space, operand access, merged dims) and the row loop nest around the element generator.
#include "codegen/KernelLowering.h"

#include <map>
#include <set>

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementGenerator.h"
#include "codegen/ElementOps.h"
#include "codegen/Jit.h"
#include "codegen/KernelCommon.h"
#include "codegen/cpu/Streaming.h"

namespace dscc::codegen {
namespace {

struct OperandPlan {
  const Value* value = nullptr;
  std::vector<Access> access;  // per dim of the iteration space
  bool scalar() const {        // read at one place for the whole kernel
    for (Access a : access)
      if (a != Access::Bcast) return false;
    return true;
  }
};

// A run of adjacent iteration dims that every operand reads alike
// (all Contig or all Bcast), looped over as one dim.
struct DimGroup {
  size_t first = 0, last = 0;  // inclusive
};

struct KernelPlan : KernelForm {
  const Operation* fusion = nullptr;
  std::vector<DimExpr> space;   // the iteration space: the results' dims
  std::vector<DimGroup> groups;  // merged dims, outermost first
  std::vector<OperandPlan> operands;
  KernelVariant variant;
};

// Merges adjacent dims read alike by every operand: same-shape operands then
// see one flat dim, a row bias [N, D] + [D] two.
void mergeGroups(KernelPlan& p) {
  p.groups.clear();
  for (size_t j = 0; j < p.space.size(); ++j) {
    bool merge = j > 0;
    for (const OperandPlan& op : p.operands)
      merge = merge && op.access[j] != Access::Dynamic && op.access[j] == op.access[j - 1];
    if (merge) p.groups.back().last = j;
    else p.groups.push_back({j, j});
  }
}

// The form as version `variant` reads it: a broadcast-free version reads the
// operands that may broadcast at run time at full size (the host called it
// only because the two dims are equal), which changes the merged dims.
KernelPlan forVariant(const KernelPlan& form, const KernelVariant& variant) {
  KernelPlan p = form;
  p.variant = variant;
  if (variant.broadcastFree) {
    for (OperandPlan& op : p.operands)
      for (Access& a : op.access)
        if (a == Access::Dynamic) a = Access::Contig;
    mergeGroups(p);
  }
  return p;
}

std::string plan(const Operation& f, KernelPlan& p) {
  p.fusion = &f;
  if (f.kind != OpKind::Fusion) return err("op '" + std::string(f.name()) + "' is not a fusion");
  if (kernelKindOf(f) != KernelKind::Loop)
    return err("only loop kernels are lowered so far; %" + nameOf(f) + " is a '" + kindText(f) + "' kernel");
  if (f.results.empty() || f.yields.size() != f.results.size()) return err("a loop kernel must yield its results");
  p.space = f.result()->type.dims;
  for (const auto& r : f.results) {
    if (r->type.dims != p.space)
      return err("results of a loop kernel must share one shape; %" + r->name + " is " + r->type.str() + ", %" +
                 f.result()->name + " is " + f.result()->type.str());
    if (!dtypeSupported(r->type.dtype))
      return err("dtype " + std::string(dtypeName(r->type.dtype)) + " of %" + r->name + " is not supported");
  }
  std::set<const Value*> known;
  std::set<std::string> symbols;
  for (const DimExpr& d : p.space) d.collectSymbols(symbols);
  for (const Value* v : f.operands) {
    if (!dtypeSupported(v->type.dtype))
      return err("dtype " + std::string(dtypeName(v->type.dtype)) + " of operand %" + v->name + " is not supported");
    if (v->type.rank() > p.space.size())
      return err("operand %" + v->name + " of type " + v->type.str() + " has a higher rank than the kernel's " +
                 "iteration space " + f.result()->type.str());
    OperandPlan op;
    op.value = v;
    for (size_t j = 0; j < p.space.size(); ++j) {
      Access a = accessOf(v->type, p.space, j);
      if (a == Access::Dynamic) {
        size_t u = j - (p.space.size() - v->type.rank());
        p.iface.guards.broadcastPairs.push_back({v->type.dims[u], p.space[j]});
      }
      op.access.push_back(a);
    }
    for (size_t j = 0; j < v->type.rank(); ++j) {
      const DimExpr& d = v->type.dims[j];
      const DimExpr& s = p.space[j + p.space.size() - v->type.rank()];
      if (d.isConst() && s.isConst() && d.constValue() != 1 && d.constValue() != s.constValue())
        return err("operand %" + v->name + " of type " + v->type.str() + " does not broadcast to " +
                   f.result()->type.str());
      d.collectSymbols(symbols);
    }
    p.operands.push_back(op);
    known.insert(v);
    p.iface.inputs.push_back(v->type);
  }
  for (const auto& op : f.body) {
    if (!isElementwise(*op))
      return err("op '" + std::string(op->name()) + "' (%" + nameOf(*op) +
                 ") in a loop kernel is not supported yet; only elementwise ops are");
    if (std::string why = checkElementwiseOp(*op); !why.empty()) return err(why);
    for (const Value* v : op->operands)
      if (!known.count(v)) return err("%" + v->name + " is used in the kernel body but is not a fusion operand");
    known.insert(op->result());
  }
  for (const Value* v : f.yields)
    if (!known.count(v)) return err("yielded value %" + v->name + " is not defined in the kernel");
  for (const auto& r : f.results) p.iface.outputs.push_back(r->type);
  p.iface.symbols.assign(symbols.begin(), symbols.end());
  p.iface.units = product(p.space);
  p.iface.workPerUnit = DimExpr(1);
  // Guards: the innermost dim for vector blocks (every merged row is a
  // multiple of it), the element counts whose offsets index32 computes.
  if (!p.space.empty()) p.iface.guards.vectorExtent = p.space.back();
  p.iface.guards.indexCounts.push_back(p.iface.units);

  mergeGroups(p);
  return "";
}

// Emits the plan's loop nest at the builder's insertion point.
class LoopEmitter : public ElementSource {
 public:
  LoopEmitter(const KernelPlan& p, llvm::IRBuilderBase& b) : p_(p), b_(b), ctx_(b.getContext()), gen_(*p.fusion, b, *this) {
    for (size_t k = 0; k < p.operands.size(); ++k) operandIndex_.emplace(p.operands[k].value, k);
  }

  void emit(llvm::Value* inputs, llvm::Value* outputs, llvm::Value* sizes, llvm::Value* begin, llvm::Value* end) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* setup = llvm::BasicBlock::Create(ctx_, "setup", fn);
    done_ = llvm::BasicBlock::Create(ctx_, "done", fn);
    // An empty range touches no pointer, so callers may pass null buffers.
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), setup, done_);
    b_.SetInsertPoint(setup);
    emitSetup(inputs, outputs, sizes);
    llvm::Value* lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, begin, b_.getInt64(0), nullptr, "lo");
    llvm::Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, end, numel_, nullptr, "hi");
    if (vw() > 1 && !p_.groups.empty()) {
      // Whole blocks only: with rows a multiple of the width, rounding both
      // ends down keeps the ranges of adjacent chunks disjoint and covering.
      llvm::Value* mask = b_.getInt64(~static_cast<int64_t>(vw() - 1));
      lo = b_.CreateAnd(lo, mask, "lo.block");
      hi = b_.CreateAnd(hi, mask, "hi.block");
    }
    if (p_.groups.empty()) emitScalarSpace(lo, hi);
    else emitRows(lo, hi);
    b_.SetInsertPoint(done_);
  }

 private:
  // How the current inner loop reads each operand.
  struct Reader {
    llvm::Value* value = nullptr;  // loaded once (scalar or row-invariant)
    llvm::Value* rowPtr = nullptr;  // else: the row's first element
    llvm::Value* step = nullptr;    // element step along the row; null: 1
  };

  llvm::Type* i64() { return b_.getInt64Ty(); }
  int vw() const { return p_.variant.vectorWidth > 1 ? p_.variant.vectorWidth : 1; }
  // Index arithmetic of the index32 version: 32-bit divisions and products,
  // widened for addressing.
  llvm::Value* narrow(llvm::Value* v) { return p_.variant.index32 ? b_.CreateTrunc(v, b_.getInt32Ty()) : v; }
  // In an aligned vector version every unit-stride row starts at a multiple
  // of the width (rows are multiples of it, chunks start on blocks), so with
  // aligned buffers it is aligned to a whole block: the GPU's 128-bit accesses.
  void assumeBlockAligned(llvm::Value* ptr, DType dt) {
    if (!p_.variant.alignedBlocks || vw() <= 1) return;
    const llvm::DataLayout& dl = b_.GetInsertBlock()->getModule()->getDataLayout();
    b_.CreateAlignmentAssumption(dl, ptr, static_cast<uint64_t>(vw()) * dtypeSize(dt));
  }
  llvm::Value* widen(llvm::Value* v) { return p_.variant.index32 ? b_.CreateZExt(v, i64()) : v; }

  // Everything computed once per call: sizes, merged dims, strides, buffer
  // pointers and the operands read at a single place.
  void emitSetup(llvm::Value* inputs, llvm::Value* outputs, llvm::Value* sizes) {
    DimEmitter dims(b_, sizes, p_.iface.symbols);
    for (const DimGroup& g : p_.groups) groupSize_.push_back(dims.emit(product(p_.space, g.first, g.last + 1)));
    numel_ = dims.emit(p_.iface.units);
    llvm::Type* ptrTy = b_.getPtrTy();
    size_t r = p_.space.size();
    for (size_t k = 0; k < p_.operands.size(); ++k) {
      const OperandPlan& op = p_.operands[k];
      const Type& t = op.value->type;
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, inputs, k);
      base_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "in." + op.value->name));
      // The stride of a merged dim is that of its innermost member.
      std::vector<llvm::Value*> strides;
      for (const DimGroup& g : p_.groups) {
        Access a = op.access[g.last];
        if (a == Access::Bcast) {
          strides.push_back(b_.getInt64(0));
          continue;
        }
        strides.push_back(emitOperandStride(b_, dims, t, g.last - (r - t.rank()), a, i64()));
      }
      stride_.push_back(strides);
      scalar_.push_back(op.scalar() ? loadElement(b_, t.dtype, base_.back()) : nullptr);
    }
    for (size_t i = 0; i < p_.fusion->results.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, outputs, i);
      out_.push_back(b_.CreateAlignedLoad(ptrTy, slot, llvm::Align(8), "out." + p_.fusion->result(i)->name));
    }
    if (p_.variant.stream)
      assumeStreamGuard(b_, out_, dims.emit(p_.iface.guards.vectorExtent), streamLineElements(p_.iface));
  }

  // A rank-0 iteration space: one element, at flat index 0.
  void emitScalarSpace(llvm::Value* lo, llvm::Value* hi) {
    auto* one = llvm::BasicBlock::Create(ctx_, "element", b_.GetInsertBlock()->getParent());
    b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), one, done_);
    b_.SetInsertPoint(one);
    std::vector<Reader> readers(p_.operands.size());
    for (size_t k = 0; k < readers.size(); ++k) readers[k].value = scalar_[k];
    computeAndStore(readers, nullptr, out_);
    b_.CreateBr(done_);
  }

  // The loop over rows of the innermost merged dim. Each trip covers
  // [flat, flat + n): the rest of the row that holds `flat`, cut at `hi`, so
  // a chunk may start and end mid-row and divisions happen once per row.
  void emitRows(llvm::Value* lo, llvm::Value* hi) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "row", fn);
    auto* body = llvm::BasicBlock::Create(ctx_, "row.body", fn);
    auto* latch = llvm::BasicBlock::Create(ctx_, "row.next", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* flat = b_.CreatePHI(i64(), 2, "flat");
    flat->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(flat, hi), body, done_);

    b_.SetInsertPoint(body);
    size_t c = p_.groups.size();
    llvm::Value* rowLen = groupSize_[c - 1];
    // Sizes and indices are non-negative: unsigned division is exact and cheaper.
    llvm::Value* i0 = c == 1 ? static_cast<llvm::Value*>(flat)
                             : widen(b_.CreateURem(narrow(flat), narrow(rowLen), "i0"));
    std::vector<llvm::Value*> idx(c - 1);
    if (c > 1) {
      llvm::Value* rest = b_.CreateUDiv(narrow(flat), narrow(rowLen), "rowidx");
      for (size_t q = c - 1; q-- > 0;) {
        idx[q] = q == 0 ? rest : b_.CreateURem(rest, narrow(groupSize_[q]));
        if (q > 0) rest = b_.CreateUDiv(rest, narrow(groupSize_[q]));
      }
    }
    llvm::Value* n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateSub(rowLen, i0),
                                              b_.CreateSub(hi, flat), nullptr, "n");

    std::vector<Reader> readers(p_.operands.size());
    std::vector<size_t> dynamic;  // operands whose row step is decided at run time
    for (size_t k = 0; k < p_.operands.size(); ++k) {
      const OperandPlan& op = p_.operands[k];
      if (scalar_[k]) {
        readers[k].value = scalar_[k];
        continue;
      }
      // The offset of the row's first element; broadcast dims add nothing.
      llvm::Value* off = nullptr;
      auto plus = [&](llvm::Value* term) { off = off ? b_.CreateAdd(off, term) : term; };
      for (size_t q = 0; q + 1 < c; ++q) {
        auto* constant = llvm::dyn_cast<llvm::ConstantInt>(stride_[k][q]);
        if (!constant || !constant->isZero()) plus(widen(b_.CreateMul(idx[q], narrow(stride_[k][q]))));
      }
      llvm::Type* et = storageType(ctx_, op.value->type.dtype);
      Access inner = op.access[p_.groups.back().last];
      if (inner == Access::Bcast) {  // one element for the whole row: load it outside the row loop
        llvm::Value* at = off ? b_.CreateInBoundsGEP(et, base_[k], off) : base_[k];
        readers[k].value = loadElement(b_, op.value->type.dtype, at);
        continue;
      }
      if (inner == Access::Dynamic) {
        readers[k].step = stride_[k][c - 1];
        plus(b_.CreateMul(i0, readers[k].step));
        dynamic.push_back(k);
      } else {
        plus(i0);
      }
      readers[k].rowPtr = b_.CreateInBoundsGEP(et, base_[k], off, "row." + op.value->name);
      if (!readers[k].step) assumeBlockAligned(readers[k].rowPtr, op.value->type.dtype);
    }
    std::vector<llvm::Value*> outRow;
    for (size_t i = 0; i < out_.size(); ++i) {
      llvm::Type* et = storageType(ctx_, p_.fusion->result(i)->type.dtype);
      outRow.push_back(b_.CreateInBoundsGEP(et, out_[i], flat, "orow." + p_.fusion->result(i)->name));
      assumeBlockAligned(outRow.back(), p_.fusion->result(i)->type.dtype);
      // A streaming version's outputs are 64-byte aligned and its rows and
      // chunk ends whole blocks, so each row starts a block's bytes (at most
      // a line) into its buffer: its stores are aligned (codegen/cpu/Streaming.h).
      if (p_.variant.stream && vw() > 1)
        b_.CreateAlignmentAssumption(b_.GetInsertBlock()->getModule()->getDataLayout(), outRow.back(),
                                     std::min<uint64_t>(64, uint64_t(vw()) * dtypeSize(p_.fusion->result(i)->type.dtype)));
    }

    if (dynamic.empty()) {
      emitInnerLoop(readers, outRow, n, "inner", latch);
    } else {
      // Operands whose innermost size is a symbol step 0 along the row when it
      // is 1 and 1 otherwise. The common case, no broadcast, gets a
      // unit-stride copy of the loop the vectoriser can widen; the other
      // copy multiplies by the run-time step.
      llvm::Value* allUnit = b_.getTrue();
      for (size_t k : dynamic) allUnit = b_.CreateAnd(allUnit, b_.CreateICmpNE(readers[k].step, b_.getInt64(0)));
      auto* fast = llvm::BasicBlock::Create(ctx_, "unit", fn);
      auto* slow = llvm::BasicBlock::Create(ctx_, "strided", fn);
      b_.CreateCondBr(allUnit, fast, slow);
      b_.SetInsertPoint(fast);
      std::vector<Reader> unit = readers;
      for (size_t k : dynamic) unit[k].step = nullptr;
      emitInnerLoop(unit, outRow, n, "inner.unit", latch);
      b_.SetInsertPoint(slow);
      emitInnerLoop(readers, outRow, n, "inner.strided", latch);
    }

    b_.SetInsertPoint(latch);
    llvm::Value* next = b_.CreateAdd(flat, n, "flat.next");
    flat->addIncoming(next, latch);
    b_.CreateBr(head);
  }

  // for (j = 0; j < n; ++j) over one row, entered with n >= 1 (so the test
  // is at the bottom); branches to `exit` when done.
  void emitInnerLoop(const std::vector<Reader>& readers, const std::vector<llvm::Value*>& outRow, llvm::Value* n,
                     const std::string& name, llvm::BasicBlock* exit) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    if (vw() > 1) {
      // The vector version: n is a multiple of the width, so the row is
      // blocks of exactly vw() elements with no remainder loop.
      auto* outer = llvm::BasicBlock::Create(ctx_, name + ".block", fn);
      b_.CreateBr(outer);
      b_.SetInsertPoint(outer);
      llvm::PHINode* c = b_.CreatePHI(i64(), 2, "blk");
      c->addIncoming(b_.getInt64(0), pre);
      // One block: whole-vector loads of the unit-stride operands, the body
      // per lane, whole-vector stores; neighbouring lanes share one access.
      auto vecOf = [&](DType dt) -> llvm::FixedVectorType* {
        if (dt == DType::I1) return nullptr;  // stored as bytes, computed as i1
        return llvm::FixedVectorType::get(storageType(ctx_, dt), vw());
      };
      auto align = [&](DType dt) {
        return llvm::Align(p_.variant.alignedBlocks ? vw() * dtypeSize(dt) : dtypeSize(dt));
      };
      std::vector<std::vector<llvm::Value*>> laneVals(readers.size());
      for (size_t k = 0; k < readers.size(); ++k) {
        const Reader& r = readers[k];
        DType dt = p_.operands[k].value->type.dtype;
        if (r.value || r.step || !vecOf(dt)) continue;
        llvm::Value* at = b_.CreateInBoundsGEP(storageType(ctx_, dt), r.rowPtr, c);
        llvm::Value* v = b_.CreateAlignedLoad(vecOf(dt), at, align(dt));
        for (int l = 0; l < vw(); ++l) laneVals[k].push_back(toRegister(b_, dt, b_.CreateExtractElement(v, l)));
      }
      std::vector<std::vector<llvm::Value*>> outLanes(outRow.size());
      for (int l = 0; l < vw(); ++l) {
        std::vector<Reader> lane = readers;
        for (size_t k = 0; k < readers.size(); ++k)
          if (!laneVals[k].empty()) lane[k].value = laneVals[k][l];
        llvm::Value* j = b_.CreateAdd(c, b_.getInt64(l), "j", true, true);
        std::vector<llvm::Value*> res;
        computeAndStore(lane, j, outRow, &res);
        for (size_t i = 0; i < res.size(); ++i) outLanes[i].push_back(res[i]);
      }
      for (size_t i = 0; i < outRow.size(); ++i) {
        DType dt = p_.fusion->result(i)->type.dtype;
        if (!vecOf(dt)) {
          for (int l = 0; l < vw(); ++l) {
            llvm::Value* j = b_.CreateAdd(c, b_.getInt64(l), "j", true, true);
            storeElement(b_, dt, outLanes[i][l], b_.CreateInBoundsGEP(storageType(ctx_, dt), outRow[i], j));
          }
          continue;
        }
        llvm::Value* v = llvm::PoisonValue::get(vecOf(dt));
        for (int l = 0; l < vw(); ++l) v = b_.CreateInsertElement(v, toStorage(b_, dt, outLanes[i][l]), l);
        b_.CreateAlignedStore(v, b_.CreateInBoundsGEP(storageType(ctx_, dt), outRow[i], c), align(dt));
      }
      llvm::Value* c1 = b_.CreateAdd(c, b_.getInt64(vw()), "blk.next", true, true);
      c->addIncoming(c1, b_.GetInsertBlock());
      b_.CreateCondBr(b_.CreateICmpSLT(c1, n), outer, exit);
      return;
    }
    auto* loop = llvm::BasicBlock::Create(ctx_, name, fn);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* j = b_.CreatePHI(i64(), 2, "j");
    j->addIncoming(b_.getInt64(0), pre);
    computeAndStore(readers, j, outRow);
    llvm::Value* j1 = b_.CreateAdd(j, b_.getInt64(1), "j.next", /*HasNUW=*/true, /*HasNSW=*/true);
    j->addIncoming(j1, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(j1, n), loop, exit);
  }

  // The kernel body for one element: element `j` of the row (null: the
  // single element of a rank-0 space), from the element generator with the
  // readers as its source. Body ops are generated in order (each operand
  // loads when first used), then the yields stored or, for a vector block,
  // returned in `results`.
  void computeAndStore(const std::vector<Reader>& readers, llvm::Value* j, const std::vector<llvm::Value*>& outs,
                       std::vector<llvm::Value*>* results = nullptr) {
    readers_ = &readers;
    ElementIndex at = j ? ElementIndex{j} : ElementIndex{};
    gen_.pushScope();
    for (const auto& op : p_.fusion->body) gen_.gen(op->result(), at);
    for (size_t i = 0; i < outs.size(); ++i) {
      llvm::Value* y = gen_.gen(p_.fusion->yields[i], at);
      if (results) {
        results->push_back(y);
        continue;
      }
      DType dt = p_.fusion->result(i)->type.dtype;
      llvm::Value* ptr = j ? b_.CreateInBoundsGEP(storageType(ctx_, dt), outs[i], j) : outs[i];
      storeElement(b_, dt, y, ptr);
    }
    gen_.popScope();
    readers_ = nullptr;
  }

 public:
  // ElementSource: every value is read at the row's element; an operand
  // through its reader (a value loaded once, or its row pointer and step).
  bool aligned() const override { return true; }
  llvm::Value* load(const Value* v, const ElementIndex& at) override {
    const Reader& r = (*readers_)[operandIndex_.at(v)];
    if (r.value) return r.value;
    llvm::Type* et = storageType(ctx_, v->type.dtype);
    llvm::Value* j = at.empty() ? nullptr : at[0];
    llvm::Value* off = r.step ? b_.CreateMul(j, r.step) : j;
    return loadElement(b_, v->type.dtype, b_.CreateInBoundsGEP(et, r.rowPtr, off));
  }

 private:
  const KernelPlan& p_;
  llvm::IRBuilderBase& b_;
  llvm::LLVMContext& ctx_;
  llvm::BasicBlock* done_ = nullptr;
  llvm::Value* numel_ = nullptr;
  std::vector<llvm::Value*> groupSize_;             // per merged dim
  std::vector<llvm::Value*> base_;                  // per operand
  std::vector<std::vector<llvm::Value*>> stride_;   // per operand, per merged dim
  std::vector<llvm::Value*> scalar_;                // per operand: loaded value or null
  std::vector<llvm::Value*> out_;                   // per result
  ElementGenerator gen_;
  std::map<const Value*, size_t> operandIndex_;
  const std::vector<Reader>* readers_ = nullptr;  // of the element being generated
};

}  // namespace

std::shared_ptr<const KernelForm> planLoopKernel(const Operation& fusion, std::string* error) {
  auto p = std::make_shared<KernelPlan>();
  *error = plan(fusion, *p);
  if (!error->empty()) return nullptr;
  return p;
}

std::string describeLoopKernel(const Operation& fusion, KernelInterface& out) {
  std::string e;
  if (auto form = planLoopKernel(fusion, &e)) out = form->iface;
  return e;
}

std::string emitLoopKernelRange(const Operation& fusion, llvm::IRBuilderBase& b, llvm::Value* inputs,
                                llvm::Value* outputs, llvm::Value* sizes, llvm::Value* begin, llvm::Value* end,
                                const KernelVariant& variant) {
  KernelPlan form;
  if (std::string e = plan(fusion, form); !e.empty()) return e;
  KernelPlan p = forVariant(form, variant);
  LoopEmitter(p, b).emit(inputs, outputs, sizes, begin, end);
  return "";
}

llvm::Function* createKernelFunction(CodeModule& m, const std::string& name, std::string* error) {
  llvm::Module& mod = m.module();
  if (mod.getNamedValue(name)) {
    *error = err("the module already defines '" + name + "'");
    return nullptr;
  }
  llvm::LLVMContext& ctx = m.context();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, ptr, i64, i64}, false);
  auto* fn = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, name, mod);
  const char* argNames[] = {"inputs", "outputs", "sizes", "begin", "end"};
  for (unsigned a = 0; a < 5; ++a) fn->getArg(a)->setName(argNames[a]);
  // The three arrays are only read, and the kernel keeps no pointer to them.
  for (unsigned a = 0; a < 3; ++a) {
    fn->addParamAttr(a, llvm::Attribute::ReadOnly);
    fn->addParamAttr(a, llvm::Attribute::NoCapture);
  }
  fn->setDoesNotThrow();
  return fn;
}

LoweredKernel lowerLoopKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                              const KernelVariant& variant) {
  LoweredKernel res;
  const auto* planned = dynamic_cast<const KernelPlan*>(&form);
  if (!planned) {
    res.error = err("lowerLoopKernel was given another kind's form");
    return res;
  }
  KernelPlan p = forVariant(*planned, variant);
  llvm::Function* fn = createKernelFunction(m, name, &res.error);
  if (!fn) return res;
  llvm::LLVMContext& ctx = m.context();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  LoopEmitter(p, b).emit(fn->getArg(0), fn->getArg(1), fn->getArg(2), fn->getArg(3), fn->getArg(4));
  b.CreateRetVoid();
  res.fn = fn;
  res.iface = p.iface;
  return res;
}

LoweredKernel lowerLoopKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                              const KernelVariant& variant) {
  std::string e;
  std::shared_ptr<const KernelForm> form = planLoopKernel(fusion, &e);
  if (!form) {
    LoweredKernel res;
    res.error = e;
    return res;
  }
  return lowerLoopKernel(*form, m, name, variant);
}

}  // namespace dscc::codegen
