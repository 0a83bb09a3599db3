// GPU bodies of rnn: an input projection up front, then one or two launches per time step, a thread per
// (direction, batch row, hidden unit), in f64 in the interpreter's order; see GpuRecurrent.h.
#include "codegen/gpu/GpuRecurrent.h"

#include <algorithm>
#include <functional>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementOps.h"
#include "codegen/gpu/GpuUnitLoop.h"

namespace dscc::codegen {

namespace {

bool gruResetFirst(const RnnPlan& p) { return p.attrs.cell == RnnCell::Gru && !p.attrs.linearBeforeReset; }

// Per-(d, n, k) arrays of the workspace before the projection: h twice, then c (lstm) or z and r*h (gru, reset
// first).
int64_t stateArrays(const RnnPlan& p) {
  return p.attrs.cell == RnnCell::Lstm ? 3 : gruResetFirst(p) ? 4 : 2;
}

// The values one unit's emitter works with: sizes as i64 values, the operands, the workspace's arrays.
struct Rnn {
  const RnnPlan& p;
  Unit& c;
  llvm::IRBuilder<>& b;
  llvm::Type* f64;
  llvm::Value *S, *N, *I, *H, *D, *GH, *DNH, *step;

  Rnn(const RnnPlan& plan, Unit& unit, size_t nSymbols) : p(plan), c(unit), b(unit.b), f64(unit.b.getDoubleTy()) {
    S = c.dims.emit(p.seq);
    N = c.dims.emit(p.batch);
    I = c.dims.emit(p.input);
    H = b.getInt64(p.attrs.hidden);
    D = b.getInt64(p.attrs.dirs());
    GH = b.getInt64(p.attrs.gates() * p.attrs.hidden);
    DNH = b.CreateMul(b.CreateMul(D, N), H);
    // The step index follows the symbols' values in `sizes` (DataKernel::takesStep).
    llvm::Value* sizes = b.GetInsertBlock()->getParent()->getArg(2);
    step = b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), sizes, nSymbols), "step");
  }
  llvm::Value* i64(int64_t v) { return b.getInt64(v); }
  llvm::Value* f(double v) { return llvm::ConstantFP::get(f64, v); }
  // Operand `idx`'s element i widened to f64 (exact), as Tensor::getF reads it; inputs never change in a launch.
  llvm::Value* in(size_t idx, llvm::Value* i) {
    llvm::Type* st = storageType(b.getContext(), p.dtype);
    llvm::Value* v = loadElement(b, p.dtype, b.CreateInBoundsGEP(st, c.ins[idx], i), 0, /*invariant=*/true);
    return v->getType() == f64 ? v : b.CreateFPExt(v, f64);
  }
  // The workspace's f64 slot i (written by this kernel's launches, so never invariant).
  llvm::Value* wsPtr(llvm::Value* i) { return b.CreateInBoundsGEP(f64, c.outs[1], i); }
  llvm::Value* ws(llvm::Value* i) { return b.CreateAlignedLoad(f64, wsPtr(i), llvm::Align(8)); }
  void setWs(llvm::Value* i, llvm::Value* v) { b.CreateAlignedStore(v, wsPtr(i), llvm::Align(8)); }
  // Slot of array `a` (0, 1: h by parity; 2: c or z; 3: r*h) at (d, n, k) flat index `dnk`.
  llvm::Value* state(llvm::Value* a, llvm::Value* dnk) { return b.CreateAdd(b.CreateMul(a, DNH), dnk); }
  // The projection's slot of (t, d, n, gate row g): after the state arrays, [S, D, N, G*H].
  llvm::Value* proj(llvm::Value* t, llvm::Value* d, llvm::Value* n, llvm::Value* g) {
    llvm::Value* row = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(t, D), d), N), n);
    return b.CreateAdd(b.CreateMul(i64(stateArrays(p)), DNH), b.CreateAdd(b.CreateMul(row, GH), g));
  }
  // The bias's element: Wb (recurrence false) or Rb of gate row g of direction d; 0 without a bias.
  llvm::Value* bias(llvm::Value* d, llvm::Value* g, bool recurrence) {
    if (!p.b) return f(0.0);
    llvm::Value* at = b.CreateAdd(b.CreateMul(d, b.CreateMul(i64(2), GH)), recurrence ? b.CreateAdd(GH, g) : g);
    return in(*p.b, at);
  }
  llvm::Value* exp(llvm::Value* v) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, v); }
  // tanh has no LLVM intrinsic: libm's (GpuKernels.cpp's useLibdevice makes it __nv_tanh), pure.
  llvm::Value* tanh(llvm::Value* v) {
    llvm::FunctionCallee fn =
        b.GetInsertBlock()->getModule()->getOrInsertFunction("tanh", llvm::FunctionType::get(f64, {f64}, false));
    if (auto* decl = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
      decl->setDoesNotThrow();
      decl->setDoesNotAccessMemory();
      decl->setWillReturn();
    }
    return b.CreateCall(fn, {v});
  }
  // The interpreter's 1 / (1 + exp(-v)).
  llvm::Value* sigmoid(llvm::Value* v) { return b.CreateFDiv(f(1.0), b.CreateFAdd(f(1.0), exp(b.CreateFNeg(v)))); }
  // Rounds `v` (f64) once to the result's dtype and stores it as element i of the result.
  void store(llvm::Value* i, llvm::Value* v) {
    const DType dt = p.dtype;
    llvm::Type* st = storageType(b.getContext(), dt);
    llvm::Value* s = dt == DType::F16 || dt == DType::BF16 ? halfFromDouble(b, dt, v)
                     : dt == DType::F32                   ? b.CreateFPTrunc(v, st)
                                                          : v;
    b.CreateAlignedStore(s, b.CreateInBoundsGEP(st, c.outs[0], i), llvm::Align(dtypeSize(dt)));
  }
  // A running sum in a stack slot (promoted to a register) across a loop.
  llvm::Value* slot(llvm::Value* init) {
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> eb(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    llvm::Value* a = eb.CreateAlloca(f64);
    b.CreateStore(init, a);
    return a;
  }
  llvm::Value* get(llvm::Value* a) { return b.CreateLoad(f64, a); }
  void add(llvm::Value* a, llvm::Value* v) { b.CreateStore(b.CreateFAdd(get(a), v), a); }
  // The time position step s takes in direction d: s, or S-1-s for a reverse direction.
  llvm::Value* timeOf(llvm::Value* d) {
    llvm::Value* back = b.CreateSub(b.CreateSub(S, i64(1)), step);
    if (p.attrs.direction == RnnDirection::Reverse) return back;
    if (p.attrs.direction == RnnDirection::Forward) return step;
    return b.CreateSelect(b.CreateICmpEQ(d, i64(1)), back, step);
  }
};

// Thread unit u of the per-(d, n, k) launches: k = u % H, n = (u / H) % N, d = u / (N*H).
struct Dnk {
  llvm::Value *d, *n, *k, *row;  // row: (d*N + n), the offset of the row's state is row*H
};
Dnk dnkOf(Rnn& r, llvm::Value* u) {
  llvm::IRBuilder<>& b = r.b;
  Dnk x;
  llvm::Value* rest = b.CreateUDiv(u, r.H);
  x.k = b.CreateSub(u, b.CreateMul(rest, r.H));
  x.row = rest;
  x.d = b.CreateUDiv(rest, r.N);
  x.n = b.CreateSub(rest, b.CreateMul(x.d, r.N));
  return x;
}

// sums[q] := Rb(gate rows[q]) + sum_j h_{t-1}[j] * R[d, rows[q], j], all in one walk over j (each sum in the
// interpreter's order).
std::vector<llvm::Value*> recurrence(Rnn& r, const Dnk& x, llvm::Value* prevRow, const std::vector<llvm::Value*>& rows) {
  llvm::IRBuilder<>& b = r.b;
  std::vector<llvm::Value*> sums, rBase;
  for (llvm::Value* g : rows) {
    sums.push_back(r.slot(r.bias(x.d, g, true)));
    rBase.push_back(b.CreateMul(b.CreateAdd(b.CreateMul(x.d, r.GH), g), r.H));
  }
  forRange(b, r.i64(0), r.H, "j", [&](llvm::Value* j) {
    llvm::Value* hj = r.ws(b.CreateAdd(prevRow, j));
    for (size_t q = 0; q < rows.size(); ++q) r.add(sums[q], b.CreateFMul(hj, r.in(r.p.r, b.CreateAdd(rBase[q], j))));
  });
  for (llvm::Value*& s : sums) s = r.get(s);
  return sums;
}

}  // namespace

DimExpr gpuRnnWorkspace(const RnnPlan& p) {
  const DimExpr dnh = DimExpr(p.attrs.dirs()) * p.batch * DimExpr(p.attrs.hidden);
  return DimExpr(stateArrays(p)) * dnh + p.seq * dnh * DimExpr(p.attrs.gates());
}

std::string lowerGpuRnn(const RnnPlan& p, CodeModule& m, const std::string& name, DataKernel& out) {
  out = DataKernel();
  if (!p.op) return "codegen: an unplanned rnn kernel";
  if (!isFloat(p.dtype)) return "codegen: rnn of " + std::string(dtypeName(p.dtype)) + " has no GPU kernel";
  const std::vector<const DimExpr*> used{&p.seq, &p.batch, &p.input};
  out.symbols = symbolsOf(used);
  out.hasWorkspace = true;
  out.takesStep = true;
  out.workspace = gpuRnnWorkspace(p);
  const size_t nIn = std::max({p.x, p.w, p.r, p.b.value_or(0), p.h0.value_or(0), p.c0.value_or(0)}) + 1;
  const size_t nSym = out.symbols.size();
  const bool lstm = p.attrs.cell == RnnCell::Lstm, gru = p.attrs.cell == RnnCell::Gru, resetFirst = gruResetFirst(p);
  const DimExpr dnh = DimExpr(p.attrs.dirs()) * p.batch * DimExpr(p.attrs.hidden);
  auto body = [&](const std::string& step, DimExpr units, DataLaunchWhen when,
                  const std::function<void(Rnn&, llvm::Value*)>& unit) {
    std::string e = unitLoop(m, name + "." + step, nIn, 2, out.symbols, used, [&](Unit& c) {
      Rnn r(p, c, nSym);
      unit(r, c.u);
    });
    if (e.empty()) out.launches.push_back({name + "." + step, step, units, when});
    return e;
  };

  // init: h (buffer 0) and c from the initial states, or 0.
  std::string e = body("init", dnh, DataLaunchWhen::Once, [&](Rnn& r, llvm::Value* u) {
    r.setWs(u, p.h0 ? r.in(*p.h0, u) : r.f(0.0));
    if (lstm) r.setWs(r.state(r.i64(2), u), p.c0 ? r.in(*p.c0, u) : r.f(0.0));
  });
  if (!e.empty()) return e;

  // proj: Wb + x_t W^T per (t, d, n, gate row), summed up the input index as the interpreter does.
  e = body("proj", p.seq * dnh * DimExpr(p.attrs.gates()), DataLaunchWhen::Once, [&](Rnn& r, llvm::Value* u) {
    llvm::IRBuilder<>& b = r.b;
    llvm::Value* rest = b.CreateUDiv(u, r.GH);
    llvm::Value* g = b.CreateSub(u, b.CreateMul(rest, r.GH));
    llvm::Value* tdn = rest;
    llvm::Value* td = b.CreateUDiv(tdn, r.N);
    llvm::Value* n = b.CreateSub(tdn, b.CreateMul(td, r.N));
    llvm::Value* t = b.CreateUDiv(td, r.D);
    llvm::Value* d = b.CreateSub(td, b.CreateMul(t, r.D));
    llvm::Value* acc = r.slot(r.bias(d, g, false));
    llvm::Value* xBase = b.CreateMul(b.CreateAdd(b.CreateMul(t, r.N), n), r.I);
    llvm::Value* wBase = b.CreateMul(b.CreateAdd(b.CreateMul(d, r.GH), g), r.I);
    forRange(b, r.i64(0), r.I, "i", [&](llvm::Value* i) {
      r.add(acc, b.CreateFMul(r.in(p.x, b.CreateAdd(xBase, i)), r.in(p.w, b.CreateAdd(wBase, i))));
    });
    r.setWs(r.proj(t, d, n, g), r.get(acc));
  });
  if (!e.empty()) return e;

  // The unit's buffers at this step: the previous h's row and the unit's slot in the next h.
  auto buffers = [](Rnn& r, const Dnk& x, llvm::Value*& prevRow, llvm::Value*& next) {
    llvm::IRBuilder<>& b = r.b;
    llvm::Value* parity = b.CreateAnd(r.step, r.i64(1));
    prevRow = r.state(parity, b.CreateMul(x.row, r.H));
    next = r.state(b.CreateXor(parity, r.i64(1)), b.CreateAdd(b.CreateMul(x.row, r.H), x.k));
  };
  // The gate row of gate q for the unit.
  auto gateRow = [](Rnn& r, const Dnk& x, int64_t q) { return r.b.CreateAdd(r.b.CreateMul(r.i64(q), r.H), x.k); };

  if (resetFirst) {
    // gates: z into array 2, r*h_{t-1} into array 3, for the step's (r*h) R_h^T.
    e = body("gates", dnh, DataLaunchWhen::EachStep, [&](Rnn& r, llvm::Value* u) {
      llvm::IRBuilder<>& b = r.b;
      Dnk x = dnkOf(r, u);
      llvm::Value *prevRow, *next;
      buffers(r, x, prevRow, next);
      llvm::Value* t = r.timeOf(x.d);
      std::vector<llvm::Value*> gh = recurrence(r, x, prevRow, {gateRow(r, x, 0), gateRow(r, x, 1)});
      llvm::Value* z = r.sigmoid(b.CreateFAdd(r.ws(r.proj(t, x.d, x.n, gateRow(r, x, 0))), gh[0]));
      llvm::Value* rg = r.sigmoid(b.CreateFAdd(r.ws(r.proj(t, x.d, x.n, gateRow(r, x, 1))), gh[1]));
      r.setWs(r.state(r.i64(2), u), z);
      r.setWs(r.state(r.i64(3), u), b.CreateFMul(rg, r.ws(b.CreateAdd(prevRow, x.k))));
    });
    if (!e.empty()) return e;
  }

  // step: the cell's equations for the unit (ir/InterpRecurrent.cpp), the new state, y at t.
  e = body("step", dnh, DataLaunchWhen::EachStep, [&](Rnn& r, llvm::Value* u) {
    llvm::IRBuilder<>& b = r.b;
    Dnk x = dnkOf(r, u);
    llvm::Value *prevRow, *next;
    buffers(r, x, prevRow, next);
    llvm::Value* t = r.timeOf(x.d);
    llvm::Value* hk = r.ws(b.CreateAdd(prevRow, x.k));
    auto gx = [&](int64_t q) { return r.ws(r.proj(t, x.d, x.n, gateRow(r, x, q))); };
    llvm::Value* h = nullptr;
    if (lstm) {  // gates i, o, f, c
      std::vector<llvm::Value*> gh =
          recurrence(r, x, prevRow, {gateRow(r, x, 0), gateRow(r, x, 1), gateRow(r, x, 2), gateRow(r, x, 3)});
      llvm::Value* ig = r.sigmoid(b.CreateFAdd(gx(0), gh[0]));
      llvm::Value* og = r.sigmoid(b.CreateFAdd(gx(1), gh[1]));
      llvm::Value* fg = r.sigmoid(b.CreateFAdd(gx(2), gh[2]));
      llvm::Value* cg = r.tanh(b.CreateFAdd(gx(3), gh[3]));
      llvm::Value* cAt = r.state(r.i64(2), u);
      llvm::Value* cNew = b.CreateFAdd(b.CreateFMul(fg, r.ws(cAt)), b.CreateFMul(ig, cg));
      r.setWs(cAt, cNew);
      h = b.CreateFMul(og, r.tanh(cNew));
    } else if (gru) {  // gates z, r, h
      llvm::Value *z, *rec;
      if (resetFirst) {
        // (r*h_{t-1}) R_h^T + Rb_h, from the gates launch's r*h of every unit of the row.
        z = r.ws(r.state(r.i64(2), u));
        llvm::Value* acc = r.slot(r.bias(x.d, gateRow(r, x, 2), true));
        llvm::Value* rhRow = r.state(r.i64(3), b.CreateMul(x.row, r.H));
        llvm::Value* rBase = b.CreateMul(b.CreateAdd(b.CreateMul(x.d, r.GH), gateRow(r, x, 2)), r.H);
        forRange(b, r.i64(0), r.H, "j", [&](llvm::Value* j) {
          r.add(acc, b.CreateFMul(r.ws(b.CreateAdd(rhRow, j)), r.in(p.r, b.CreateAdd(rBase, j))));
        });
        rec = r.get(acc);
      } else {
        // r * (h_{t-1} R_h^T + Rb_h).
        std::vector<llvm::Value*> gh = recurrence(r, x, prevRow, {gateRow(r, x, 0), gateRow(r, x, 1), gateRow(r, x, 2)});
        z = r.sigmoid(b.CreateFAdd(gx(0), gh[0]));
        rec = b.CreateFMul(r.sigmoid(b.CreateFAdd(gx(1), gh[1])), gh[2]);
      }
      llvm::Value* hh = r.tanh(b.CreateFAdd(gx(2), rec));
      h = b.CreateFAdd(b.CreateFMul(b.CreateFSub(r.f(1.0), z), hh), b.CreateFMul(z, hk));
    } else {
      std::vector<llvm::Value*> gh = recurrence(r, x, prevRow, {gateRow(r, x, 0)});
      h = r.tanh(b.CreateFAdd(gx(0), gh[0]));
    }
    r.setWs(next, h);
    if (p.attrs.output == RnnOutput::Y)  // y [S, D, N, H]: (t*D + d)*N*H + n*H + k
      r.store(b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(t, r.D), x.d), b.CreateMul(r.N, r.H)),
                          b.CreateAdd(b.CreateMul(x.n, r.H), x.k)),
              h);
  });
  if (!e.empty()) return e;

  if (p.attrs.output != RnnOutput::Y) {
    // final: y_h is the buffer the last step wrote (step S's parity; buffer 0 when S = 0), y_c the cell state.
    e = body("final", dnh, DataLaunchWhen::AfterSteps, [&](Rnn& r, llvm::Value* u) {
      llvm::Value* from = p.attrs.output == RnnOutput::YC ? r.i64(2) : r.b.CreateAnd(r.step, r.i64(1));
      r.store(u, r.ws(r.state(from, u)));
    });
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace dscc::codegen
