// GPU bodies of scatter (copy, last-writer marks, atomic writes) and cumsum (a running sum per column); see GpuScatter.h.
#include "codegen/gpu/GpuScatter.h"
#include "codegen/gpu/GpuUnitLoop.h"

#include <functional>
#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementGenerator.h"
#include "codegen/ElementOps.h"
#include "codegen/KernelLowering.h"

namespace dscc::codegen {

namespace {

llvm::Value* elementPtr(llvm::IRBuilder<>& b, DType dt, llvm::Value* base, llvm::Value* i) {
  return b.CreateInBoundsGEP(storageType(b.getContext(), dt), base, i);
}

// Index m of `indices` as i64, wrapped once into [0, rows) when negative; `valid` is false outside [-rows, rows).
// With `checks` (the scatter's check words), an index outside is reported there (emitBadIndex), where `reports`
// holds (null: always).
llvm::Value* rowOf(llvm::IRBuilder<>& b, DType indexDType, llvm::Value* indices, llvm::Value* m, llvm::Value* rows,
                   llvm::Value*& valid, llvm::Value* checks = nullptr, llvm::Value* reports = nullptr) {
  llvm::Type* it = indexDType == DType::I32 ? b.getInt32Ty() : b.getInt64Ty();
  llvm::Value* v = b.CreateSExt(b.CreateAlignedLoad(it, b.CreateInBoundsGEP(it, indices, m),
                                                    llvm::Align(it->getPrimitiveSizeInBits() / 8)),
                                b.getInt64Ty());
  llvm::Value* w = b.CreateSelect(b.CreateICmpSLT(v, b.getInt64(0)), b.CreateAdd(v, rows), v);
  valid = b.CreateICmpULT(w, rows);  // a negative w is a huge unsigned value
  if (checks) {
    llvm::Value* bad = b.CreateNot(valid);
    if (reports) bad = b.CreateAnd(bad, reports);
    when(b, bad, "bad.index", [&] { emitBadIndex(b, checks, v, true); });
  }
  return w;
}

// One combination of the interpreter's (ir/InterpScatter.cpp) in registers: floats in their register type (f16
// and bf16 in f32: one rounding of an exact or 24-bit result to 11 or 8 bits is the interpreter's single rounding
// from f64), integers wrapping in their width, max/min keeping a NaN already there, else taking the update's.
llvm::Value* combine(llvm::IRBuilder<>& b, ScatterReduction r, DType dt, llvm::Value* a, llvm::Value* x) {
  if (isFloat(dt)) {
    switch (r) {
      case ScatterReduction::Add: return b.CreateFAdd(a, x);
      case ScatterReduction::Mul: return b.CreateFMul(a, x);
      default: {
        // std::max(a, x) is a < x ? x : a; std::min(a, x) is x < a ? x : a.
        llvm::Value* pick = r == ScatterReduction::Max ? b.CreateSelect(b.CreateFCmpOLT(a, x), x, a)
                                                        : b.CreateSelect(b.CreateFCmpOLT(x, a), x, a);
        return b.CreateSelect(b.CreateFCmpUNO(a, a), a, b.CreateSelect(b.CreateFCmpUNO(x, x), x, pick));
      }
    }
  }
  switch (r) {
    case ScatterReduction::Add: return b.CreateAdd(a, x);
    case ScatterReduction::Mul: return b.CreateMul(a, x);
    case ScatterReduction::Max: return b.CreateSelect(b.CreateICmpSLT(a, x), x, a);
    default: return b.CreateSelect(b.CreateICmpSLT(x, a), x, a);
  }
}

// Combines register value `x` into the element at `ptr` atomically: a native read-modify-write where the dtype
// has one on every target (add of f32/f64/i32/i64: atom.add; max/min of i32/i64: atom.max/min.s*), else a
// compare-and-swap loop on the element's bits (mul; f16/bf16; i8; float max/min, whose NaN rule no
// instruction has). A loop for max/min stops without writing when the element already wins.
void atomicCombine(llvm::IRBuilder<>& b, ScatterReduction r, DType dt, llvm::Value* ptr, llvm::Value* x) {
  const auto mono = llvm::AtomicOrdering::Monotonic;
  const llvm::Align align(dtypeSize(dt));
  const bool wide = dt == DType::F32 || dt == DType::F64 || dt == DType::I32 || dt == DType::I64;
  if (wide && r == ScatterReduction::Add) {
    b.CreateAtomicRMW(isFloat(dt) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add, ptr, x, align, mono);
    return;
  }
  if (wide && !isFloat(dt) && (r == ScatterReduction::Max || r == ScatterReduction::Min)) {
    b.CreateAtomicRMW(r == ScatterReduction::Max ? llvm::AtomicRMWInst::Max : llvm::AtomicRMWInst::Min, ptr, x, align,
                      mono);
    return;
  }
  llvm::Type* st = storageType(b.getContext(), dt);
  llvm::Type* bits = b.getIntNTy(static_cast<unsigned>(dtypeSize(dt) * 8));
  llvm::LoadInst* first = b.CreateAlignedLoad(bits, ptr, align);
  first->setAtomic(mono);
  llvm::BasicBlock* from = b.GetInsertBlock();
  llvm::Function* fn = from->getParent();
  auto* loop = llvm::BasicBlock::Create(b.getContext(), "cas", fn);
  auto* swap = llvm::BasicBlock::Create(b.getContext(), "cas.swap", fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "cas.done", fn);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* cur = b.CreatePHI(bits, 2, "cur");
  cur->addIncoming(first, from);
  llvm::Value* now = toRegister(b, dt, b.CreateBitCast(cur, st));
  llvm::Value* next = b.CreateBitCast(toStorage(b, dt, combine(b, r, dt, now, x)), bits);
  bool keepsOften = r == ScatterReduction::Max || r == ScatterReduction::Min;
  b.CreateCondBr(keepsOften ? b.CreateICmpEQ(next, cur) : b.getFalse(), done, swap);
  b.SetInsertPoint(swap);
  llvm::Value* res = b.CreateAtomicCmpXchg(ptr, cur, next, align, mono, mono);
  cur->addIncoming(b.CreateExtractValue(res, 0), swap);
  b.CreateCondBr(b.CreateExtractValue(res, 1), done, loop);
  b.SetInsertPoint(done);
}

}  // namespace

bool gpuScatterNeedsWorkspace(const ScatterPlan& p) { return p.reduction == ScatterReduction::None; }
DimExpr gpuScatterWorkspace(const ScatterPlan& p) { return gpuScatterNeedsWorkspace(p) ? p.rows : DimExpr(0); }

std::string lowerGpuScatter(const ScatterPlan& p, CodeModule& m, const std::string& name, DataKernel& out) {
  out = DataKernel();
  if (p.dtype == DType::I1 && p.reduction != ScatterReduction::None)
    return "codegen: scatter of i1 takes reduction none only";
  out.symbols = symbolsOf({&p.rows, &p.count, &p.inner});
  out.workspace = gpuScatterWorkspace(p);
  out.hasWorkspace = gpuScatterNeedsWorkspace(p);
  const bool none = out.hasWorkspace;
  // The check words follow the result (and workspace): every launch takes them, the one that reads each index
  // once reports there (mark without reduction, else write's first column).
  out.checks = 1;
  const size_t nIn = std::max({p.data, p.indices, p.updates}) + 1, nOut = none ? 3 : 2;
  const DType dt = p.dtype;
  // copy: result = data element by element (nothing where they are one buffer); the winners' slots start at -1.
  std::string e = unitLoop(m, name + ".copy", nIn, nOut, out.symbols, {&p.rows}, [&](Unit& c) {
    llvm::IRBuilder<>& b = c.b;
    llvm::Value* data = c.ins[p.data];
    llvm::Value* res = c.outs[0];
    when(b, b.CreateICmpNE(data, res), "copy", [&] {
      llvm::Type* st = storageType(b.getContext(), dt);
      llvm::Value* v = b.CreateAlignedLoad(st, elementPtr(b, dt, data, c.u), llvm::Align(dtypeSize(dt)));
      b.CreateAlignedStore(v, elementPtr(b, dt, res, c.u), llvm::Align(dtypeSize(dt)));
    });
    if (none)
      when(b, b.CreateICmpULT(c.u, c.dims.emit(p.rows)), "init", [&] {
        b.CreateAlignedStore(b.getInt64(-1), b.CreateInBoundsGEP(b.getInt64Ty(), c.outs[1], c.u), llvm::Align(8));
      });
  });
  if (!e.empty()) return e;
  out.launches.push_back({name + ".copy", "copy", p.rows * p.inner});
  if (none) {
    // mark: each row's slot ends as the number of its last update (atomic max: any order gives the same).
    e = unitLoop(m, name + ".mark", nIn, nOut, out.symbols, {&p.rows}, [&](Unit& c) {
      llvm::IRBuilder<>& b = c.b;
      llvm::Value* valid = nullptr;
      llvm::Value* row = rowOf(b, p.indexDType, c.ins[p.indices], c.u, c.dims.emit(p.rows), valid, c.outs[2]);
      when(b, valid, "mark", [&] {
        b.CreateAtomicRMW(llvm::AtomicRMWInst::Max, b.CreateInBoundsGEP(b.getInt64Ty(), c.outs[1], row), c.u,
                          llvm::Align(8), llvm::AtomicOrdering::Monotonic);
      });
    });
    if (!e.empty()) return e;
    out.launches.push_back({name + ".mark", "mark", p.count});
  }
  // write: update element u = (m, j) into row idx[m], column j.
  e = unitLoop(m, name + ".write", nIn, nOut, out.symbols, {&p.rows, &p.inner}, [&](Unit& c) {
    llvm::IRBuilder<>& b = c.b;
    llvm::Value* inner = c.dims.emit(p.inner);
    llvm::Value* mi = b.CreateUDiv(c.u, inner);  // inner > 0 wherever there is a unit
    llvm::Value* j = b.CreateSub(c.u, b.CreateMul(mi, inner));
    llvm::Value* valid = nullptr;
    llvm::Value* row = nullptr;
    if (none) {
      row = rowOf(b, p.indexDType, c.ins[p.indices], mi, c.dims.emit(p.rows), valid);
    } else {
      // The first column's thread reports its update's index (once per update, as the CPU checks each).
      row = rowOf(b, p.indexDType, c.ins[p.indices], mi, c.dims.emit(p.rows), valid, c.outs[1],
                  b.CreateICmpEQ(j, b.getInt64(0)));
    }
    if (none) {
      when(b, valid, "valid", [&] {
        llvm::Value* winner = b.CreateAlignedLoad(b.getInt64Ty(), b.CreateInBoundsGEP(b.getInt64Ty(), c.outs[1], row),
                                                  llvm::Align(8));
        when(b, b.CreateICmpEQ(winner, mi), "wins", [&] {
          llvm::Type* st = storageType(b.getContext(), dt);
          llvm::Value* v = b.CreateAlignedLoad(st, elementPtr(b, dt, c.ins[p.updates], c.u), llvm::Align(dtypeSize(dt)));
          b.CreateAlignedStore(v, elementPtr(b, dt, c.outs[0], b.CreateAdd(b.CreateMul(row, inner), j)),
                               llvm::Align(dtypeSize(dt)));
        });
      });
      return;
    }
    when(b, valid, "valid", [&] {
      llvm::Value* x = loadElement(b, dt, elementPtr(b, dt, c.ins[p.updates], c.u));
      atomicCombine(b, p.reduction, dt, elementPtr(b, dt, c.outs[0], b.CreateAdd(b.CreateMul(row, inner), j)), x);
    });
  });
  if (!e.empty()) return e;
  out.launches.push_back({name + ".write", "write", p.count * p.inner});
  return "";
}

DimExpr gpuScanChunks(const ScanPlan& p, int64_t chunk) { return DimExpr::ceilDiv(p.len, DimExpr(chunk)); }
DimExpr gpuScanWorkspace(const ScanPlan& p, int64_t chunk) { return p.outer * p.inner * gpuScanChunks(p, chunk); }

namespace {

// Walks steps [from, to) of column (o, i) of cumsum `p` from the running sum `start` (f64 for floats, i64 for
// integers), storing each output when `store`; returns the sum after the last step. Step s is element
// t = s (t = len - 1 - s when reverse) of the axis.
llvm::Value* walkColumn(Unit& c, const ScanPlan& p, llvm::Value* o, llvm::Value* i, llvm::Value* from, llvm::Value* to,
                        llvm::Value* start, bool store) {
  llvm::IRBuilder<>& b = c.b;
  const DType dt = p.dtype;
  const bool fl = isFloat(dt);
  llvm::Value* inner = c.dims.emit(p.inner);
  llvm::Value* len = c.dims.emit(p.len);
  llvm::Value* base = b.CreateAdd(b.CreateMul(b.CreateMul(o, len), inner), i);
  llvm::Type* st = storageType(b.getContext(), dt);
  llvm::BasicBlock* entry = b.GetInsertBlock();
  llvm::Function* fn = entry->getParent();
  auto* loop = llvm::BasicBlock::Create(b.getContext(), "step", fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "walk.done", fn);
  b.CreateCondBr(b.CreateICmpSLT(from, to), loop, done);
  b.SetInsertPoint(loop);
  llvm::PHINode* s = b.CreatePHI(b.getInt64Ty(), 2, "s");
  llvm::PHINode* sum = b.CreatePHI(start->getType(), 2, "sum");
  s->addIncoming(from, entry);
  sum->addIncoming(start, entry);
  llvm::Value* t = p.attrs.reverse ? b.CreateSub(b.CreateSub(len, b.getInt64(1)), s) : s;
  llvm::Value* at = b.CreateAdd(base, b.CreateMul(t, inner));
  llvm::Value* x = loadElement(b, dt, b.CreateInBoundsGEP(st, c.ins[p.x], at), 0, /*invariant=*/true);
  x = fl ? b.CreateFPExt(x, start->getType()) : b.CreateSExt(x, start->getType());
  llvm::Value* next = fl ? b.CreateFAdd(sum, x) : b.CreateAdd(sum, x);
  if (store) {
    llvm::Value* y = p.attrs.exclusive ? static_cast<llvm::Value*>(sum) : next;
    llvm::Value* stored;
    if (dt == DType::F16 || dt == DType::BF16) stored = halfFromDouble(b, dt, y);
    else if (fl) stored = b.CreateFPTrunc(y, st);  // f64: itself
    else stored = b.CreateTrunc(y, st);
    b.CreateAlignedStore(stored, b.CreateInBoundsGEP(st, c.outs[0], at), llvm::Align(dtypeSize(dt)));
  }
  llvm::Value* s1 = b.CreateAdd(s, b.getInt64(1));
  llvm::BasicBlock* latch = b.GetInsertBlock();
  s->addIncoming(s1, latch);
  sum->addIncoming(next, latch);
  b.CreateCondBr(b.CreateICmpSLT(s1, to), loop, done);
  b.SetInsertPoint(done);
  llvm::PHINode* last = b.CreatePHI(start->getType(), 2, "walked");
  last->addIncoming(start, entry);
  last->addIncoming(next, latch);
  return last;
}

// Column `col` of cumsum `p` as (o, i): consecutive columns are consecutive i, so neighbouring threads touch
// neighbouring elements.
std::pair<llvm::Value*, llvm::Value*> columnOf(Unit& c, const ScanPlan& p, llvm::Value* col) {
  llvm::Value* inner = c.dims.emit(p.inner);
  llvm::Value* o = c.b.CreateUDiv(col, inner);
  return {o, c.b.CreateSub(col, c.b.CreateMul(o, inner))};
}

}  // namespace

std::string lowerGpuScan(const ScanPlan& p, CodeModule& m, const std::string& name, DataKernel& out, int64_t chunk) {
  out = DataKernel();
  if (p.dtype == DType::I1) return "codegen: cumsum of i1 has no sum";
  if (chunk < 1) return "codegen: a cumsum chunk needs at least one element";
  out.symbols = symbolsOf({&p.outer, &p.len, &p.inner});
  out.hasWorkspace = true;
  out.chunk = chunk;
  out.workspace = gpuScanWorkspace(p, chunk);
  const bool fl = isFloat(p.dtype);
  const DimExpr columns = p.outer * p.inner, chunks = gpuScanChunks(p, chunk);
  auto zero = [&](llvm::IRBuilder<>& b) -> llvm::Value* {
    return fl ? llvm::ConstantFP::get(b.getDoubleTy(), 0.0) : static_cast<llvm::Value*>(b.getInt64(0));
  };
  // Columns: a thread walks a whole column.
  std::string e = unitLoop(m, name + ".scan", p.x + 1, 2, out.symbols, {&p.len, &p.inner}, [&](Unit& c) {
    auto [o, i] = columnOf(c, p, c.u);
    walkColumn(c, p, o, i, c.b.getInt64(0), c.dims.emit(p.len), zero(c.b), true);
  });
  if (!e.empty()) return e;
  out.launches.push_back({name + ".scan", "scan", columns});
  // Chunks: unit u = (chunk k, column col), col fastest; partial sums in the workspace at col * chunks + k.
  auto chunkUnit = [&](Unit& c, bool store) {
    llvm::IRBuilder<>& b = c.b;
    llvm::Value* cols = c.dims.emit(columns);
    llvm::Value* k = b.CreateUDiv(c.u, cols);
    llvm::Value* col = b.CreateSub(c.u, b.CreateMul(k, cols));
    auto [o, i] = columnOf(c, p, col);
    llvm::Value* from = b.CreateMul(k, b.getInt64(chunk));
    llvm::Value* to = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(from, b.getInt64(chunk)),
                                              c.dims.emit(p.len));
    llvm::Value* slot = b.CreateInBoundsGEP(b.getInt64Ty(), c.outs[1],
                                            b.CreateAdd(b.CreateMul(col, c.dims.emit(chunks)), k));
    if (!store) {
      llvm::Value* sum = walkColumn(c, p, o, i, from, to, zero(b), false);
      b.CreateAlignedStore(fl ? b.CreateBitCast(sum, b.getInt64Ty()) : sum, slot, llvm::Align(8));
      return;
    }
    llvm::Value* start = b.CreateAlignedLoad(b.getInt64Ty(), slot, llvm::Align(8));
    walkColumn(c, p, o, i, from, to, fl ? b.CreateBitCast(start, b.getDoubleTy()) : start, true);
  };
  e = unitLoop(m, name + ".sums", p.x + 1, 2, out.symbols, {&p.len, &p.inner, &columns, &chunks},
               [&](Unit& c) { chunkUnit(c, false); });
  if (!e.empty()) return e;
  // offsets: a thread per column turns its chunks' sums into the running sum before each chunk, in chunk order.
  e = unitLoop(m, name + ".offsets", p.x + 1, 2, out.symbols, {&chunks}, [&](Unit& c) {
    llvm::IRBuilder<>& b = c.b;
    llvm::Value* n = c.dims.emit(chunks);
    llvm::Value* first = b.CreateInBoundsGEP(b.getInt64Ty(), c.outs[1], b.CreateMul(c.u, n));
    llvm::BasicBlock* entry = b.GetInsertBlock();
    llvm::Function* fn = entry->getParent();
    auto* loop = llvm::BasicBlock::Create(b.getContext(), "chunk", fn);
    auto* done = llvm::BasicBlock::Create(b.getContext(), "chunks.done", fn);
    b.CreateCondBr(b.CreateICmpSGT(n, b.getInt64(0)), loop, done);
    b.SetInsertPoint(loop);
    llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2, "k");
    llvm::PHINode* run = b.CreatePHI(fl ? b.getDoubleTy() : b.getInt64Ty(), 2, "run");
    k->addIncoming(b.getInt64(0), entry);
    run->addIncoming(zero(b), entry);
    llvm::Value* slot = b.CreateInBoundsGEP(b.getInt64Ty(), first, k);
    llvm::Value* v = b.CreateAlignedLoad(b.getInt64Ty(), slot, llvm::Align(8));
    b.CreateAlignedStore(fl ? b.CreateBitCast(run, b.getInt64Ty()) : static_cast<llvm::Value*>(run), slot, llvm::Align(8));
    llvm::Value* next = fl ? b.CreateFAdd(run, b.CreateBitCast(v, b.getDoubleTy())) : b.CreateAdd(run, v);
    llvm::Value* k1 = b.CreateAdd(k, b.getInt64(1));
    k->addIncoming(k1, loop);
    run->addIncoming(next, loop);
    b.CreateCondBr(b.CreateICmpSLT(k1, n), loop, done);
    b.SetInsertPoint(done);
  });
  if (!e.empty()) return e;
  e = unitLoop(m, name + ".chunks", p.x + 1, 2, out.symbols, {&p.len, &p.inner, &columns, &chunks},
               [&](Unit& c) { chunkUnit(c, true); });
  if (!e.empty()) return e;
  out.longLaunches = {{name + ".sums", "sums", columns * chunks},
                      {name + ".offsets", "offsets", columns},
                      {name + ".chunks", "chunks", columns * chunks}};
  return "";
}

}  // namespace dscc::codegen
