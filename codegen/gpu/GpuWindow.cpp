// GPU bodies of conv, conv_transpose and pool: a thread per output element summing its window in f64 in the interpreter's order; see GpuWindow.h.
#include "codegen/gpu/GpuWindow.h"

#include <algorithm>
#include <functional>
#include <limits>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"
#include "codegen/gpu/GpuUnitLoop.h"

namespace dscc::codegen {

DimExpr gpuWindowUnits(const WindowPlan& p) {
  DimExpr u(1);
  for (const DimExpr& d : p.yDims) u = u * d;
  return u;
}

namespace {

// The channels-first dim each memory position holds: [N, C, S...] as is, or channels-last [N, S..., C].
std::vector<size_t> memoryOrder(size_t rank, bool channelsLast) {
  std::vector<size_t> order(rank);
  for (size_t q = 0; q < rank; ++q) order[q] = q;
  if (channelsLast)
    for (size_t q = 0; q < rank; ++q) order[q] = static_cast<size_t>(channelsLastPerm(rank)[q]);
  return order;
}

// Element strides, in channels-first order, of a tensor of channels-first dims `d` laid out in `order`.
std::vector<llvm::Value*> stridesOf(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& d,
                                    const std::vector<size_t>& order) {
  std::vector<llvm::Value*> s(d.size());
  llvm::Value* run = b.getInt64(1);
  for (size_t q = d.size(); q-- > 0;) {
    s[order[q]] = run;
    run = b.CreateMul(run, d[order[q]]);
  }
  return s;
}

// The channels-first coordinates of flat index `u` of a tensor of channels-first dims `d` laid out in `order`
// (every dim > 0 wherever there is a unit).
std::vector<llvm::Value*> coordsOf(llvm::IRBuilder<>& b, llvm::Value* u, const std::vector<llvm::Value*>& d,
                                   const std::vector<size_t>& order) {
  std::vector<llvm::Value*> at(d.size());
  llvm::Value* rest = u;
  for (size_t q = d.size(); q-- > 1;) {
    llvm::Value* next = b.CreateUDiv(rest, d[order[q]]);
    at[order[q]] = b.CreateSub(rest, b.CreateMul(next, d[order[q]]));
    rest = next;
  }
  at[order[0]] = rest;
  return at;
}

}  // namespace

std::string lowerGpuWindow(const WindowPlan& p, CodeModule& m, const std::string& name, DataKernel& out) {
  out = DataKernel();
  if (!p.op) return "codegen: an unplanned window kernel";
  const OpKind kind = p.op->kind;
  const WindowAttrs& a = p.attrs;
  const DType dt = p.dtype;
  if (!isFloat(dt))
    return "codegen: " + std::string(p.op->name()) + " of " + std::string(dtypeName(dt)) + " has no GPU kernel";
  const size_t rank = p.xDims.size(), n = rank - 2;
  std::vector<const DimExpr*> used;
  for (const auto* ds : {&p.xDims, &p.wDims, &p.yDims, &p.kernel, &p.padsBegin, &p.padsEnd})
    for (const DimExpr& d : *ds) used.push_back(&d);
  out.symbols = symbolsOf(used);
  const size_t nIn = std::max({p.x, p.w, p.bias.value_or(0)}) + 1;
  const std::vector<size_t> order = memoryOrder(rank, a.channelsLast);
  std::string e = unitLoop(m, name + ".window", nIn, 1, out.symbols, used, [&](Unit& c) {
    llvm::IRBuilder<>& b = c.b;
    llvm::Type* f64 = b.getDoubleTy();
    llvm::Type* st = storageType(b.getContext(), dt);
    auto vals = [&](const std::vector<DimExpr>& ds) {
      std::vector<llvm::Value*> v;
      for (const DimExpr& d : ds) v.push_back(c.dims.emit(d));
      return v;
    };
    const std::vector<llvm::Value*> X = vals(p.xDims), Y = vals(p.yDims), W = vals(p.wDims), K = vals(p.kernel),
                                    PB = vals(p.padsBegin), PE = vals(p.padsEnd);
    const std::vector<llvm::Value*> at = coordsOf(b, c.u, Y, order), xs = stridesOf(b, X, order);
    std::vector<llvm::Value*> ws;
    if (!W.empty()) ws = stridesOf(b, W, memoryOrder(rank, false));  // the weight is never channels-last
    auto i64 = [&](int64_t v) { return b.getInt64(v); };
    // An input element widened to f64 (exact), as Tensor::getF reads it.
    auto load = [&](llvm::Value* base, llvm::Value* i) -> llvm::Value* {
      llvm::Value* v = loadElement(b, dt, b.CreateInBoundsGEP(st, base, i), 0, /*invariant=*/true);
      return v->getType() == f64 ? v : b.CreateFPExt(v, f64);
    };
    // The running value lives in a stack slot (promoted to a register by the optimiser) across the nested loops.
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> eb(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    llvm::Value* acc = eb.CreateAlloca(f64, nullptr, "acc");
    llvm::Value* count = eb.CreateAlloca(b.getInt64Ty(), nullptr, "count");
    auto accumulate = [&](llvm::Value* v) { b.CreateStore(b.CreateFAdd(b.CreateLoad(f64, acc), v), acc); };
    const bool pool = kind == OpKind::Pool, argmax = pool && a.isArgmax;
    // argmax: the index of the best point so far (-1: none yet), its value in `acc`.
    llvm::Value* best = eb.CreateAlloca(b.getInt64Ty(), nullptr, "best");
    b.CreateStore(i64(-1), best);
    llvm::Value* init = llvm::ConstantFP::get(f64, pool && a.isMax ? -std::numeric_limits<double>::infinity() : 0.0);
    if (p.bias) init = load(c.ins[*p.bias], at[1]);
    b.CreateStore(init, acc);
    b.CreateStore(i64(0), count);
    if (kind == OpKind::ConvTranspose) {
      // Output channel m = g*Mg + mo gathers input channels g*Cg .. g*Cg + Cg - 1, each through w[c, mo, k...].
      llvm::Value* Mg = W[1];
      llvm::Value* Cg = b.CreateUDiv(X[1], i64(a.group));
      llvm::Value* g = b.CreateUDiv(at[1], Mg);
      llvm::Value* mo = b.CreateSub(at[1], b.CreateMul(g, Mg));
      // Dim d's kernel offsets from the last down: the input position i = (o + pb - k*dil) / stride, where exact
      // and inside the input, ascends, as the interpreter's scatter visits it.
      std::function<void(size_t, llvm::Value*, llvm::Value*)> level = [&](size_t d, llvm::Value* xo, llvm::Value* wo) {
        if (d == n) {
          accumulate(b.CreateFMul(load(c.ins[p.x], xo), load(c.ins[p.w], wo)));
          return;
        }
        forRange(b, i64(0), K[d], "tk", [&](llvm::Value* j) {
          llvm::Value* k = b.CreateSub(b.CreateSub(K[d], i64(1)), j);
          llvm::Value* t = b.CreateSub(b.CreateAdd(at[2 + d], PB[d]), b.CreateMul(k, i64(a.dilations[d])));
          llvm::Value* nonneg = b.CreateICmpSGE(t, i64(0));
          llvm::Value* tt = b.CreateSelect(nonneg, t, i64(0));
          llvm::Value* i = b.CreateUDiv(tt, i64(a.strides[d]));
          llvm::Value* exact = b.CreateICmpEQ(b.CreateURem(tt, i64(a.strides[d])), i64(0));
          llvm::Value* reach = b.CreateAnd(nonneg, b.CreateAnd(exact, b.CreateICmpULT(i, X[2 + d])));
          when(b, reach, "reach", [&] {
            level(d + 1, b.CreateAdd(xo, b.CreateMul(i, xs[2 + d])), b.CreateAdd(wo, b.CreateMul(k, ws[2 + d])));
          });
        });
      };
      forRange(b, i64(0), Cg, "ci", [&](llvm::Value* ci) {
        llvm::Value* ch = b.CreateAdd(b.CreateMul(g, Cg), ci);
        level(0, b.CreateAdd(b.CreateMul(at[0], xs[0]), b.CreateMul(ch, xs[1])),
              b.CreateAdd(b.CreateMul(ch, ws[0]), b.CreateMul(mo, ws[1])));
      });
    } else {
      // conv and pool: the window starts at o*stride - pb; offsets [lo, hi) of each dim read the input
      // (ir/InterpConv.cpp, insideRange): only those are visited, in row-major order.
      std::vector<llvm::Value*> start(n), lo(n), hi(n);
      for (size_t d = 0; d < n; ++d) {
        llvm::Value* dil = i64(a.dilations[d]);
        start[d] = b.CreateSub(b.CreateMul(at[2 + d], i64(a.strides[d])), PB[d]);
        llvm::Value* before = b.CreateICmpSLT(start[d], i64(0));
        llvm::Value* skip = b.CreateUDiv(b.CreateAdd(b.CreateSelect(before, b.CreateNeg(start[d]), i64(0)),
                                                     b.CreateSub(dil, i64(1))), dil);
        lo[d] = b.CreateSelect(before, skip, i64(0));
        llvm::Value* inside = b.CreateICmpSLT(start[d], X[2 + d]);
        llvm::Value* last =
            b.CreateAdd(b.CreateSDiv(b.CreateSub(b.CreateSub(X[2 + d], i64(1)), start[d]), dil), i64(1));
        hi[d] = b.CreateSelect(inside, b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, K[d], last), i64(0));
      }
      llvm::Value *Cg = nullptr, *cbase = nullptr;
      // argmax's index strides per spatial dim: the operand's row-major ones, or with storage_order = 1
      // column-major ones (the first spatial dim fastest), ONNX's numbering of MaxPool's Indices.
      std::vector<llvm::Value*> IS(n);
      llvm::Value* plane = i64(1);
      for (size_t d = 0; d < n; ++d) {
        IS[d] = a.storageOrder == 1 ? plane : xs[2 + d];
        plane = b.CreateMul(plane, X[2 + d]);
      }
      if (!pool) {
        Cg = W[1];
        llvm::Value* Mg = b.CreateUDiv(Y[1], i64(a.group));
        cbase = b.CreateMul(b.CreateUDiv(at[1], Mg), Cg);
      }
      // `wo` is the weight offset of a conv, or an argmax pool's index of the point (nullptr for other pools).
      std::function<void(size_t, llvm::Value*, llvm::Value*)> level = [&](size_t d, llvm::Value* xo, llvm::Value* wo) {
        if (d < n) {
          forRange(b, lo[d], hi[d], "k", [&](llvm::Value* k) {
            llvm::Value* pos = b.CreateAdd(start[d], b.CreateMul(k, i64(a.dilations[d])));
            level(d + 1, b.CreateAdd(xo, b.CreateMul(pos, xs[2 + d])),
                  !wo      ? nullptr
                  : argmax ? b.CreateAdd(wo, b.CreateMul(pos, IS[d]))
                           : b.CreateAdd(wo, b.CreateMul(k, ws[2 + d])));
          });
          return;
        }
        if (!pool) {
          forRange(b, i64(0), Cg, "ci", [&](llvm::Value* ci) {
            llvm::Value* xv = load(c.ins[p.x], b.CreateAdd(xo, b.CreateMul(b.CreateAdd(cbase, ci), xs[1])));
            accumulate(b.CreateFMul(xv, load(c.ins[p.w], b.CreateAdd(wo, b.CreateMul(ci, ws[1])))));
          });
          return;
        }
        llvm::Value* v = load(c.ins[p.x], xo);
        b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), count), i64(1)), count);
        if (argmax) {
          // The interpreter's rule (ir/InterpConv.cpp, argmaxOf): the first point, then a NaN over a number, then
          // a strictly greater number; so the first maximum and the first NaN win.
          llvm::Value* cur = b.CreateLoad(f64, acc);
          llvm::Value* none = b.CreateICmpSLT(b.CreateLoad(b.getInt64Ty(), best), i64(0));
          llvm::Value* nanOver = b.CreateAnd(b.CreateFCmpUNO(v, v), b.CreateFCmpORD(cur, cur));
          llvm::Value* takes = b.CreateOr(none, b.CreateOr(nanOver, b.CreateFCmpOGT(v, cur)));
          b.CreateStore(b.CreateSelect(takes, v, cur), acc);
          b.CreateStore(b.CreateSelect(takes, wo, b.CreateLoad(b.getInt64Ty(), best)), best);
          return;
        }
        if (!a.isMax) {
          accumulate(v);
          return;
        }
        // The interpreter's `if (isnan(v) || v > acc) acc = isnan(acc) ? acc : v`: NaN wins and stays.
        llvm::Value* cur = b.CreateLoad(f64, acc);
        llvm::Value* takes = b.CreateFCmpUGT(v, cur);
        b.CreateStore(b.CreateSelect(takes, b.CreateSelect(b.CreateFCmpUNO(cur, cur), cur, v), cur), acc);
      };
      level(0, b.CreateAdd(b.CreateMul(at[0], xs[0]), pool ? b.CreateMul(at[1], xs[1]) : i64(0)),
            argmax ? b.CreateMul(b.CreateAdd(b.CreateMul(at[0], X[1]), at[1]), plane)
            : pool ? nullptr
                   : b.CreateMul(at[1], ws[0]));
      if (pool && !a.isMax && !argmax) {
        llvm::Value* divisor = b.CreateLoad(b.getInt64Ty(), count);
        if (a.countIncludePad) {
          // The window's points inside [-pb, D + pe): a ceil-mode window past the end padding counts up to it.
          divisor = i64(1);
          for (size_t d = 0; d < n; ++d) {
            llvm::Value* dil = i64(a.dilations[d]);
            llvm::Value* room = b.CreateSub(b.CreateAdd(X[2 + d], PE[d]), start[d]);
            llvm::Value* fits = b.CreateBinaryIntrinsic(
                llvm::Intrinsic::smin, K[d], b.CreateSDiv(b.CreateAdd(room, b.CreateSub(dil, i64(1))), dil));
            divisor = b.CreateMul(divisor, b.CreateSelect(b.CreateICmpSLE(room, i64(0)), i64(0), fits));
          }
        }
        // A window with nothing counted is 0/0: NaN, as in the interpreter.
        b.CreateStore(b.CreateFDiv(b.CreateLoad(f64, acc), b.CreateSIToFP(divisor, f64)), acc);
      }
    }
    if (argmax) {
      b.CreateAlignedStore(b.CreateLoad(b.getInt64Ty(), best), b.CreateInBoundsGEP(b.getInt64Ty(), c.outs[0], c.u),
                           llvm::Align(8));
      return;
    }
    llvm::Value* r = b.CreateLoad(f64, acc);
    llvm::Value* stored = dt == DType::F16 || dt == DType::BF16 ? halfFromDouble(b, dt, r)
                          : dt == DType::F32                   ? b.CreateFPTrunc(r, st)
                                                               : r;
    b.CreateAlignedStore(stored, b.CreateInBoundsGEP(st, c.outs[0], c.u), llvm::Align(dtypeSize(dt)));
  });
  if (!e.empty()) return e;
  out.launches.push_back({name + ".window", "window", gpuWindowUnits(p)});
  return "";
}

}  // namespace dscc::codegen
