// Interpreter kernels of `scatter` (copy, then rows written in index order) and `cumsum` (a running sum in f64
// for floats, wrapping 64-bit integers), the oracle the compiled dscc_scatter and dscc_cumsum are tested against.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/InterpInternal.h"
#include "ir/Scatter.h"

namespace dscc::interp {

bool runScatter(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& data = *c.in[0];
  const Tensor& idx = *c.in[1];
  const Tensor& upd = *c.in[2];
  ScatterReduction red;
  Location where;
  if (std::string e = readScatterReduction(c.op, red, where); !e.empty()) return c.fail(e);
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    return c.fail("indices of scatter must be i32 or i64, not " + std::string(dtypeName(idx.dtype)));
  if (data.rank() == 0 || upd.dtype != data.dtype) return c.fail("scatter needs data of rank >= 1 and updates of its dtype");
  Shape want = idx.shape;
  want.insert(want.end(), data.shape.begin() + 1, data.shape.end());
  if (upd.shape != want)
    return c.fail("the updates of scatter are " + shapeStr(upd.shape) + ", but indices " + shapeStr(idx.shape) +
                  " and data " + shapeStr(data.shape) + " need " + shapeStr(want));
  const int64_t N = data.shape[0], count = idx.numel(), inner = numelOf(Shape(data.shape.begin() + 1, data.shape.end()));
  // Every index before any write, as compiled code does: one outside [-N, N) is an error.
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t m = 0; m < count; ++m) {
    int64_t v = idx.getI(m), w = v < 0 ? v + N : v;
    if (w < 0 || w >= N)
      return c.fail("scatter index " + std::to_string(v) + " (update " + std::to_string(m) +
                    ") is out of range for dim 0 of size " + std::to_string(N));
    rows[static_cast<size_t>(m)] = w;
  }
  Tensor r = data;
  const bool fl = isFloat(data.dtype);
  for (int64_t m = 0; m < count; ++m) {
    const int64_t dst = rows[static_cast<size_t>(m)] * inner, src = m * inner;
    for (int64_t j = 0; j < inner; ++j) {
      // Floats combine in f64 and round once per update; integers wrap. Max and min keep a NaN already there,
      // else take the update's (NaN propagates, as the IR's max and min).
      if (red == ScatterReduction::None) {
        if (fl) r.setF(dst + j, upd.getF(src + j));
        else r.setI(dst + j, upd.getI(src + j));
      } else if (fl) {
        double a = r.getF(dst + j), b = upd.getF(src + j), v = 0;
        switch (red) {
          case ScatterReduction::Add: v = a + b; break;
          case ScatterReduction::Mul: v = a * b; break;
          default: v = std::isnan(a) ? a : std::isnan(b) ? b : red == ScatterReduction::Max ? std::max(a, b) : std::min(a, b);
        }
        r.setF(dst + j, v);
      } else {
        uint64_t a = static_cast<uint64_t>(r.getI(dst + j)), b = static_cast<uint64_t>(upd.getI(src + j));
        int64_t sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
        switch (red) {
          case ScatterReduction::Add: r.setI(dst + j, static_cast<int64_t>(a + b)); break;
          case ScatterReduction::Mul: r.setI(dst + j, static_cast<int64_t>(a * b)); break;
          case ScatterReduction::Max: r.setI(dst + j, std::max(sa, sb)); break;
          default: r.setI(dst + j, std::min(sa, sb)); break;
        }
      }
    }
  }
  out.push_back(std::move(r));
  return true;
}

bool runCumSum(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  if (x.rank() == 0) return c.fail("cumsum needs an operand of rank >= 1");
  ScanAttrs a;
  Location where;
  if (std::string e = readScanAttrs(c.op, x.rank(), a, where); !e.empty()) return c.fail(e);
  int64_t outer = 1, len = x.shape[a.axis], inner = 1;
  for (size_t d = 0; d < a.axis; ++d) outer *= x.shape[d];
  for (size_t d = a.axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  Tensor r = Tensor::zeros(x.dtype, x.shape);
  const bool fl = isFloat(x.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sf = 0;
      uint64_t si = 0;
      for (int64_t s = 0; s < len; ++s) {
        int64_t t = a.reverse ? len - 1 - s : s, e = (o * len + t) * inner + i;
        if (fl) {
          double v = x.getF(e);
          if (a.exclusive) r.setF(e, sf);
          sf += v;
          if (!a.exclusive) r.setF(e, sf);
        } else {
          uint64_t v = static_cast<uint64_t>(x.getI(e));
          if (a.exclusive) r.setI(e, static_cast<int64_t>(si));
          si += v;
          if (!a.exclusive) r.setI(e, static_cast<int64_t>(si));
        }
      }
    }
  out.push_back(std::move(r));
  return true;
}

}  // namespace dscc::interp
