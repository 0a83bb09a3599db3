// Interpreter kernels for the sliding-window ops, conv, conv_transpose and pool: plain direct loops, the reference the compiled code is tested against.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/InterpInternal.h"
#include "ir/Window.h"

namespace dscc::interp {
namespace {

// The concrete geometry of one window op on one input.
struct Geometry {
  WindowAttrs a;
  Shape in, kernel, out;           // spatial dims only
  Shape padBegin, padEnd;          // resolved (auto_pad applied)
};

bool readAttrs(OpCtx& c, size_t n, WindowAttrs& a) {
  Location where;
  std::string e = readWindowAttrs(c.op, n, a, where);
  if (e.empty()) return true;
  return c.fail(e);
}

// Fills `g` for the input of sizes `xs` (channels-first order) and (conv) weight `w`; false (reported) when a
// window does not fit.
bool geometry(OpCtx& c, const Shape& xs, Geometry& g) {
  const Tensor& x = *c.in[0];
  if (xs.size() < 3) return c.fail(c.name() + " needs an input of rank >= 3, got " + x.typeStr());
  size_t n = xs.size() - 2;
  if (!readAttrs(c, n, g.a)) return false;
  g.in.assign(xs.begin() + 2, xs.end());
  if (c.op.kind == OpKind::Conv) {
    const Tensor& w = *c.in[1];
    if (w.rank() != xs.size()) return c.fail("the weight of conv has rank " + std::to_string(w.rank()) + ", not " + std::to_string(xs.size()));
    g.kernel.assign(w.shape.begin() + 2, w.shape.end());
  } else {
    g.kernel = g.a.kernel;
  }
  for (size_t i = 0; i < n; ++i) {
    DimExpr in(g.in[i]), k(g.kernel[i]);
    // (a ceil-mode pool's one window may hang past the end padding: windowLeastRoom)
    int64_t span = windowLeastRoom(g.a, i, k).constValue(), room = windowPaddedIn(g.a, i, in, k).constValue();
    if (g.kernel[i] < 1) return c.fail("the kernel of " + c.name() + " is empty along spatial dim " + std::to_string(i));
    bool same = g.a.autoPad == AutoPad::SameUpper || g.a.autoPad == AutoPad::SameLower;
    if (!same && span > room)
      return c.fail("the window of " + c.name() + " along spatial dim " + std::to_string(i) + " spans " +
                    std::to_string(span) + " elements, more than the padded input's " + std::to_string(room) +
                    " (input " + std::to_string(g.in[i]) + ")");
    g.padBegin.push_back(windowPadBegin(g.a, i, in, k).constValue());
    g.padEnd.push_back(windowPadEnd(g.a, i, in, k).constValue());
    g.out.push_back(windowOutDim(g.a, i, in, k).constValue());
  }
  return true;
}

// Advances the multi-index `idx` over `shape` (row-major); false after the last one.
bool next(Shape& idx, const Shape& shape) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// The kernel offsets of output position `o` along spatial dim `d` that read the input (not the padding):
// [lo, hi), empty when lo >= hi. Only these are visited, so the work is bounded by the input, whatever the
// kernel and pads.
void insideRange(const Geometry& g, size_t d, int64_t o, int64_t& lo, int64_t& hi) {
  const int64_t start = o * g.a.strides[d] - g.padBegin[d], dil = g.a.dilations[d];
  lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
  hi = start >= g.in[d] ? 0 : std::min(g.kernel[d], (g.in[d] - 1 - start) / dil + 1);
}

// The window's input box at output position `op`: false when it is empty.
bool box(const Geometry& g, const Shape& op, Shape& lo, Shape& hi) {
  const size_t n = op.size();
  lo.assign(n, 0), hi.assign(n, 0);
  for (size_t d = 0; d < n; ++d) {
    insideRange(g, d, op[d], lo[d], hi[d]);
    if (lo[d] >= hi[d]) return false;
  }
  return true;
}

// Advances `idx` over the box [lo, hi) (row-major); false after the last one.
bool nextIn(Shape& idx, const Shape& lo, const Shape& hi) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < hi[d]) return true;
    idx[d] = lo[d];
  }
  return false;
}

// Window points inside the padded extent [-pb, in + pe) (count_include_pad's divisor): a ceil-mode window
// reaching past the end padding counts only up to it. Starts are never before -pb.
int64_t paddedCount(const Geometry& g, const Shape& op) {
  int64_t cnt = 1;
  for (size_t d = 0; d < op.size(); ++d) {
    const int64_t start = op[d] * g.a.strides[d] - g.padBegin[d], room = g.in[d] + g.padEnd[d] - start;
    const int64_t dil = g.a.dilations[d];
    cnt *= room <= 0 ? 0 : std::min(g.kernel[d], (room + dil - 1) / dil);
  }
  return cnt;
}

// conv_transpose's concrete sizes on its operands: the begin pads (derived ones resolved) and the result's
// spatial dims; false (reported) when the operands do not fit or a size is negative.
bool transposeGeometry(OpCtx& c, WindowAttrs& a, Shape& padBegin, Shape& out) {
  const Tensor &x = *c.in[0], &w = *c.in[1];
  if (x.rank() < 3) return c.fail(c.name() + " needs an input of rank >= 3, got " + x.typeStr());
  if (w.rank() != x.rank())
    return c.fail("the weight of conv_transpose has rank " + std::to_string(w.rank()) + ", not " + std::to_string(x.rank()));
  const size_t n = x.rank() - 2;
  if (!readAttrs(c, n, a)) return false;
  for (size_t i = 0; i < n; ++i) {
    DimExpr in(x.shape[2 + i]), k(w.shape[2 + i]);
    if (w.shape[2 + i] < 1) return c.fail("the kernel of " + c.name() + " is empty along spatial dim " + std::to_string(i));
    const int64_t o = transposeOutDim(a, i, in, k).constValue();
    if (o < 0)
      return c.fail("the result of " + c.name() + " along spatial dim " + std::to_string(i) + " would have size " +
                    std::to_string(o) + " (input " + std::to_string(x.shape[2 + i]) + ")");
    padBegin.push_back(transposePadBegin(a, i, in, k).constValue());
    out.push_back(o);
  }
  return true;
}

}  // namespace

bool windowFitsAtRunTime(OpCtx& c) {
  if (c.op.kind == OpKind::ConvTranspose) {
    WindowAttrs a;
    Shape pb, o;
    return transposeGeometry(c, a, pb, o);
  }
  if (c.op.kind != OpKind::Conv && c.op.kind != OpKind::Pool) return true;
  Geometry g;
  const Shape& xs = c.in[0]->shape;
  return geometry(c, isChannelsLast(c.op) ? toChannelsFirst(xs) : xs, g);
}

// The adjoint of conv: every input point scatters its window, x[n, ci, i] * w[ci, m % (M/group), k] added at
// i*stride + k*dilation - pad_begin of output channel m of ci's group (points outside the result dropped).
bool runConvTranspose(OpCtx& c, std::vector<Tensor>& out) {
  WindowAttrs a;
  Shape pb, os;
  if (!transposeGeometry(c, a, pb, os)) return false;
  const Tensor &x = *c.in[0], &w = *c.in[1];
  const Tensor* bias = c.in.size() > 2 ? c.in[2] : nullptr;
  const int64_t N = x.shape[0], C = x.shape[1], G = a.group, Mg = w.shape[1], M = Mg * G;
  if (C % G != 0 || w.shape[0] != C)
    return c.fail("conv_transpose with group " + std::to_string(G) + " cannot take input " + x.typeStr() +
                  " and weight " + w.typeStr());
  if (bias && (bias->rank() != 1 || bias->shape[0] != M))
    return c.fail("the bias of conv_transpose is " + bias->typeStr() + ", expected " + std::to_string(M) + " values");
  const int64_t Cg = C / G;
  const size_t n = os.size();
  Shape outShape = {N, M};
  outShape.insert(outShape.end(), os.begin(), os.end());
  Tensor r = Tensor::zeros(c.outDType(), outShape);
  if (r.numel() == 0) {
    out.push_back(std::move(r));
    return true;
  }
  const Shape inSp(x.shape.begin() + 2, x.shape.end()), ks(w.shape.begin() + 2, w.shape.end());
  const Shape xs = stridesOf(x.shape), ws = stridesOf(w.shape), ys = stridesOf(outShape);
  int64_t plane = 1;
  for (int64_t o : os) plane *= o;
  std::vector<double> acc(static_cast<size_t>(r.numel()));  // f64 sums, stored in the result's dtype at the end
  for (size_t q = 0; q < acc.size(); ++q) acc[q] = bias ? bias->getF(static_cast<int64_t>(q) / plane % M) : 0.0;
  bool anyIn = true;
  for (int64_t d : inSp) anyIn = anyIn && d > 0;
  for (int64_t b = 0; b < N && anyIn; ++b)
    for (int64_t ci = 0; ci < C; ++ci) {
      const int64_t grp = ci / Cg;
      Shape ip(n, 0);
      do {
        int64_t xoff = b * xs[0] + ci * xs[1];
        for (size_t d = 0; d < n; ++d) xoff += ip[d] * xs[2 + d];
        const double xv = x.getF(xoff);
        Shape kk(n, 0);
        do {
          int64_t yoff = b * ys[0], woff = ci * ws[0];
          bool inside = true;
          for (size_t d = 0; d < n && inside; ++d) {
            const int64_t o = ip[d] * a.strides[d] + kk[d] * a.dilations[d] - pb[d];
            inside = o >= 0 && o < os[d];
            yoff += o * ys[2 + d];
            woff += kk[d] * ws[2 + d];
          }
          if (!inside) continue;
          for (int64_t mo = 0; mo < Mg; ++mo)
            acc[static_cast<size_t>(yoff + (grp * Mg + mo) * ys[1])] += xv * w.getF(woff + mo * ws[1]);
        } while (next(kk, ks));
      } while (next(ip, inSp));
    }
  for (size_t q = 0; q < acc.size(); ++q) r.setF(static_cast<int64_t>(q), acc[q]);
  out.push_back(std::move(r));
  return true;
}

namespace {

// A channels_last conv or pool: the channels-first loops below on the input permuted to [N, C, spatial...],
// the result permuted back to [N, spatial..., C] (the reference needs no loops of its own for the layout).
bool runChannelsLast(OpCtx& c, std::vector<Tensor>& out, bool (*run)(OpCtx&, std::vector<Tensor>&)) {
  const Tensor& x = *c.in[0];
  if (x.rank() < 3) return c.fail(c.name() + " needs an input of rank >= 3, got " + x.typeStr());
  Tensor first = permuted(x, channelsFirstPerm(x.rank()));
  OpCtx inner = c;
  inner.in[0] = &first;
  std::vector<Tensor> r;
  if (!run(inner, r)) return false;
  out.push_back(permuted(r[0], channelsLastPerm(r[0].rank())));
  return true;
}

bool runConvFirst(OpCtx& c, std::vector<Tensor>& out);
bool runPoolFirst(OpCtx& c, std::vector<Tensor>& out);

}  // namespace

bool runConv(OpCtx& c, std::vector<Tensor>& out) {
  if (c.op.kind == OpKind::ConvTranspose) return runConvTranspose(c, out);  // the same category, its own loops
  return isChannelsLast(c.op) ? runChannelsLast(c, out, runConvFirst) : runConvFirst(c, out);
}

bool runPool(OpCtx& c, std::vector<Tensor>& out) {
  return isChannelsLast(c.op) ? runChannelsLast(c, out, runPoolFirst) : runPoolFirst(c, out);
}

namespace {

bool runConvFirst(OpCtx& c, std::vector<Tensor>& out) {
  Geometry g;
  if (!geometry(c, c.in[0]->shape, g)) return false;
  const Tensor &x = *c.in[0], &w = *c.in[1];
  const Tensor* bias = c.in.size() > 2 ? c.in[2] : nullptr;
  const int64_t N = x.shape[0], C = x.shape[1], M = w.shape[0], G = g.a.group;
  if (C % G != 0 || M % G != 0 || w.shape[1] * G != C)
    return c.fail("conv with group " + std::to_string(G) + " cannot take input " + x.typeStr() + " and weight " + w.typeStr());
  if (bias && (bias->rank() != 1 || bias->shape[0] != M))
    return c.fail("the bias of conv is " + bias->typeStr() + ", expected " + std::to_string(M) + " values");
  const int64_t Cg = C / G, Mg = M / G;
  const size_t n = g.in.size();
  Shape outShape = {N, M};
  outShape.insert(outShape.end(), g.out.begin(), g.out.end());
  Tensor r = Tensor::zeros(c.outDType(), outShape);
  if (r.numel() == 0) {
    out.push_back(std::move(r));
    return true;
  }
  const Shape xs = stridesOf(x.shape), ws = stridesOf(w.shape);
  int64_t o = 0;  // flat output index, row-major like the loops
  for (int64_t b = 0; b < N; ++b)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / Mg;
      Shape op(n, 0);
      do {
        double acc = bias ? bias->getF(m) : 0.0;
        Shape lo, hi;
        if (box(g, op, lo, hi)) {
          Shape kk = lo;
          do {
            int64_t xoff = b * xs[0], woff = m * ws[0];
            for (size_t d = 0; d < n; ++d) {
              xoff += (op[d] * g.a.strides[d] - g.padBegin[d] + kk[d] * g.a.dilations[d]) * xs[2 + d];
              woff += kk[d] * ws[2 + d];
            }
            for (int64_t ci = 0; ci < Cg; ++ci)
              acc += x.getF(xoff + (grp * Cg + ci) * xs[1]) * w.getF(woff + ci * ws[1]);
          } while (nextIn(kk, lo, hi));
        }
        r.setF(o++, acc);
      } while (next(op, g.out));
    }
  out.push_back(std::move(r));
  return true;
}

// argmax pool: the flat index into [N, C, spatial...] of the first point of the window (row-major order of kernel
// offsets) holding its maximum; padding never wins, NaN counts as greater than any number and the first NaN wins;
// -1 for a window holding no input point. `base` is the image plane's first index.
int64_t argmaxOf(const Geometry& g, const Tensor& x, const Shape& xs, int64_t b, int64_t ch, const Shape& op,
                 int64_t base, const Shape& colStrides) {
  const size_t n = op.size();
  Shape lo, hi;
  if (!box(g, op, lo, hi)) return -1;
  int64_t best = -1;
  double bestV = 0;
  Shape kk = lo;
  do {
    int64_t xoff = b * xs[0] + ch * xs[1], at = base;
    for (size_t d = 0; d < n; ++d) {
      const int64_t pos = op[d] * g.a.strides[d] - g.padBegin[d] + kk[d] * g.a.dilations[d];
      xoff += pos * xs[2 + d];
      at += pos * (g.a.storageOrder == 1 ? colStrides[d] : xs[2 + d]);
    }
    const double v = x.getF(xoff);
    if (best < 0 || (std::isnan(v) && !std::isnan(bestV)) || v > bestV) best = at, bestV = v;
  } while (nextIn(kk, lo, hi));
  return best;
}

bool runPoolFirst(OpCtx& c, std::vector<Tensor>& out) {
  Geometry g;
  if (!geometry(c, c.in[0]->shape, g)) return false;
  const Tensor& x = *c.in[0];
  const int64_t N = x.shape[0], C = x.shape[1];
  const size_t n = g.in.size();
  Shape outShape = {N, C};
  outShape.insert(outShape.end(), g.out.begin(), g.out.end());
  Tensor r = Tensor::zeros(c.outDType(), outShape);
  if (r.numel() == 0) {
    out.push_back(std::move(r));
    return true;
  }
  const Shape xs = stridesOf(x.shape);
  // argmax's index of spatial position `pos` within its image plane: row-major, or with storage_order = 1
  // column-major (the first spatial dim fastest), as ONNX's MaxPool numbers its Indices.
  Shape colStrides(n, 1);
  for (size_t d = 1; d < n; ++d) colStrides[d] = colStrides[d - 1] * g.in[d - 1];
  int64_t plane = 1;
  for (int64_t d : g.in) plane *= d;
  int64_t o = 0;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t ch = 0; ch < C; ++ch) {
      Shape op(n, 0);
      if (g.a.isArgmax) {
        do {
          r.setI(o++, argmaxOf(g, x, xs, b, ch, op, (b * C + ch) * plane, colStrides));
        } while (next(op, g.out));
        continue;
      }
      do {
        double acc = g.a.isMax ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t inside = 0;  // window points in the input
        Shape lo, hi;
        if (box(g, op, lo, hi)) {
          Shape kk = lo;
          do {
            int64_t xoff = b * xs[0] + ch * xs[1];
            for (size_t d = 0; d < n; ++d)
              xoff += (op[d] * g.a.strides[d] - g.padBegin[d] + kk[d] * g.a.dilations[d]) * xs[2 + d];
            ++inside;
            double v = x.getF(xoff);
            if (!g.a.isMax) acc += v;
            else if (std::isnan(v) || v > acc) acc = std::isnan(acc) ? acc : v;  // NaN wins, as in PyTorch
          } while (nextIn(kk, lo, hi));
        }
        // A window with no point counted is 0/0: NaN.
        if (!g.a.isMax) acc /= static_cast<double>(g.a.countIncludePad ? paddedCount(g, op) : inside);
        r.setF(o++, acc);
      } while (next(op, g.out));
    }
  out.push_back(std::move(r));
  return true;
}

}  // namespace
}  // namespace dscc::interp
