// Interpreter kernels for reductions, argmax, softmax, layer_norm and matmul.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/InterpInternal.h"

namespace dscc::interp {
namespace {

// Splits `shape` around `axis` into the element counts before it, along it and after it.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisSplit splitAt(const Shape& shape, size_t axis) {
  AxisSplit s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.len = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

}  // namespace

bool runReduce(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  OpKind k = c.op.kind;
  size_t rank = x.rank();
  std::vector<int64_t> axes;
  bool present = false;
  bool keepdims = false;
  if (!c.intListAttr("axes", axes, present) || !c.boolAttr("keepdims", false, keepdims)) return false;
  std::vector<bool> reduced(rank, !present);
  for (int64_t a : axes) {
    auto n = normAxis(a, rank);
    if (!n) return c.fail("axis " + std::to_string(a) + " of " + c.name() + " is out of range for rank " + std::to_string(rank));
    if (reduced[static_cast<size_t>(*n)]) return c.fail("axis " + std::to_string(a) + " of " + c.name() + " is repeated");
    reduced[static_cast<size_t>(*n)] = true;
  }
  Shape keepShape = x.shape, outShape;
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      count *= x.shape[d];
      keepShape[d] = 1;
      if (keepdims) outShape.push_back(1);
    } else {
      outShape.push_back(x.shape[d]);
    }
  }
  Tensor r = Tensor::zeros(c.outDType(), outShape);
  int64_t outN = r.numel(), n = x.numel();
  bool isMaxMin = k == OpKind::ReduceMax || k == OpKind::ReduceMin;
  if (count == 0 && isMaxMin) return c.fail(c.name() + " over an empty dim");
  // Element i of x lands in output element dest[i]: the output read back with
  // the reduced dims stretched is exactly a broadcast.
  std::vector<int64_t> dest = broadcastIndex(keepShape, x.shape);

  if (isFloat(x.dtype)) {
    double init = k == OpKind::ReduceProd ? 1.0
                  : k == OpKind::ReduceMax ? -std::numeric_limits<double>::infinity()
                  : k == OpKind::ReduceMin ? std::numeric_limits<double>::infinity()
                                           : 0.0;
    std::vector<double> acc(static_cast<size_t>(outN), init);
    for (int64_t i = 0; i < n; ++i) {
      double v = x.getF(i);
      double& s = acc[static_cast<size_t>(dest[static_cast<size_t>(i)])];
      switch (k) {
        case OpKind::ReduceProd: s *= v; break;
        // NaN wins, as in numpy max/min.
        case OpKind::ReduceMax: if (std::isnan(v) || v > s) s = std::isnan(s) ? s : v; break;
        case OpKind::ReduceMin: if (std::isnan(v) || v < s) s = std::isnan(s) ? s : v; break;
        default: s += v; break;
      }
    }
    for (int64_t o = 0; o < outN; ++o) {
      double v = acc[static_cast<size_t>(o)];
      // 0/0 gives the NaN numpy returns for the mean of nothing.
      if (k == OpKind::ReduceMean) v = count == 0 ? std::numeric_limits<double>::quiet_NaN() : v / static_cast<double>(count);
      r.setF(o, v);
    }
  } else {
    if (k == OpKind::ReduceMean && count == 0 && outN > 0)
      return c.fail("reduce_mean of an integer tensor over an empty dim");
    int64_t init = k == OpKind::ReduceProd ? 1
                   : k == OpKind::ReduceMax ? std::numeric_limits<int64_t>::min()
                   : k == OpKind::ReduceMin ? std::numeric_limits<int64_t>::max()
                                            : 0;
    std::vector<uint64_t> acc(static_cast<size_t>(outN), static_cast<uint64_t>(init));
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = x.getI(i);
      uint64_t& s = acc[static_cast<size_t>(dest[static_cast<size_t>(i)])];
      switch (k) {
        case OpKind::ReduceProd: s *= static_cast<uint64_t>(v); break;
        case OpKind::ReduceMax: s = static_cast<uint64_t>(std::max(static_cast<int64_t>(s), v)); break;
        case OpKind::ReduceMin: s = static_cast<uint64_t>(std::min(static_cast<int64_t>(s), v)); break;
        default: s += static_cast<uint64_t>(v); break;
      }
    }
    for (int64_t o = 0; o < outN; ++o) {
      int64_t v = static_cast<int64_t>(acc[static_cast<size_t>(o)]);
      if (k == OpKind::ReduceMean) v /= count;  // truncates toward zero, like integer div
      r.setI(o, v);
    }
  }
  out.push_back(std::move(r));
  return true;
}

bool runArgMax(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  size_t axis = 0;
  bool keepdims = false;
  if (!c.axisAttr(x.rank(), 0, true, axis) || !c.boolAttr("keepdims", false, keepdims)) return false;
  AxisSplit s = splitAt(x.shape, axis);
  Shape outShape = x.shape;
  if (keepdims) outShape[axis] = 1;
  else outShape.erase(outShape.begin() + static_cast<std::ptrdiff_t>(axis));
  if (s.len == 0) return c.fail("argmax over an empty dim");
  Tensor r = Tensor::zeros(c.outDType(), outShape);
  bool fl = isFloat(x.dtype);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.len * s.inner + in, best = 0;
      if (fl) {
        // The first NaN is the maximum, as in numpy.
        double bv = x.getF(base);
        for (int64_t j = 1; j < s.len && !std::isnan(bv); ++j) {
          double v = x.getF(base + j * s.inner);
          if (std::isnan(v) || v > bv) bv = v, best = j;
        }
      } else {
        int64_t bv = x.getI(base);
        for (int64_t j = 1; j < s.len; ++j) {
          int64_t v = x.getI(base + j * s.inner);
          if (v > bv) bv = v, best = j;
        }
      }
      r.setI(o * s.inner + in, best);
    }
  out.push_back(std::move(r));
  return true;
}

bool runSoftmax(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  if (!isFloat(x.dtype)) return c.fail(c.name() + " is not defined on " + std::string(dtypeName(x.dtype)));
  size_t axis = 0;
  if (!c.axisAttr(x.rank(), -1, false, axis)) return false;
  bool logForm = c.op.kind == OpKind::LogSoftmax;
  AxisSplit s = splitAt(x.shape, axis);
  Tensor r = Tensor::zeros(c.outDType(), x.shape);
  std::vector<double> row(static_cast<size_t>(s.len));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.len * s.inner + in;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s.len; ++j) {
        row[static_cast<size_t>(j)] = x.getF(base + j * s.inner);
        mx = std::max(mx, row[static_cast<size_t>(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < s.len; ++j) sum += std::exp(row[static_cast<size_t>(j)] - mx);
      for (int64_t j = 0; j < s.len; ++j) {
        double d = row[static_cast<size_t>(j)] - mx;
        r.setF(base + j * s.inner, logForm ? d - std::log(sum) : std::exp(d) / sum);
      }
    }
  out.push_back(std::move(r));
  return true;
}

bool runLayerNorm(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  const Tensor& g = *c.in[1];
  const Tensor& b = *c.in[2];
  if (!isFloat(x.dtype)) return c.fail("layer_norm is not defined on " + std::string(dtypeName(x.dtype)));
  size_t axis = 0;
  if (!c.axisAttr(x.rank(), -1, false, axis)) return false;
  double eps = 1e-5;
  if (const Attribute* a = c.op.attr("epsilon")) {
    if (!a->isNumber()) return c.fail("attribute epsilon of layer_norm must be a number");
    eps = a->asDouble();
  }
  Shape tail(x.shape.begin() + static_cast<std::ptrdiff_t>(axis), x.shape.end());
  for (const Tensor* p : {&g, &b}) {
    auto bs = broadcastShapes(p->shape, tail);
    if (!bs || *bs != tail)
      return c.fail(std::string(p == &g ? "gamma" : "beta") + " of layer_norm is " + p->typeStr() +
                    ", which does not broadcast to the normalised dims " + shapeStr(tail));
  }
  std::vector<int64_t> ig = broadcastIndex(g.shape, tail), ib = broadcastIndex(b.shape, tail);
  int64_t len = numelOf(tail);
  int64_t rows = len == 0 ? 0 : x.numel() / len;
  Tensor r = Tensor::zeros(c.outDType(), x.shape);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t base = row * len;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < len; ++j) mean += x.getF(base + j);
    mean /= static_cast<double>(len);
    for (int64_t j = 0; j < len; ++j) {
      double d = x.getF(base + j) - mean;
      var += d * d;
    }
    var /= static_cast<double>(len);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < len; ++j) {
      size_t t = static_cast<size_t>(j);
      r.setF(base + j, (x.getF(base + j) - mean) * inv * g.getF(ig[t]) + b.getF(ib[t]));
    }
  }
  out.push_back(std::move(r));
  return true;
}

namespace {

// One matmul operand seen as a stack of row-major matrices: batch dims, then
// rows x cols after any transpose flag is applied.
struct MatView {
  Shape batch;
  int64_t rows = 1, cols = 1;
  bool trans = false;  // stored as [cols, rows]
  bool vector = false;
};

MatView viewOf(const Tensor& t, bool trans, bool isLhs) {
  MatView v;
  if (t.rank() == 1) {
    // numpy: a 1-D lhs is a row [1, K]; a 1-D rhs is a column [K, 1].
    v.vector = true;
    if (isLhs) v.cols = t.shape[0];
    else v.rows = t.shape[0];
    return v;
  }
  v.batch.assign(t.shape.begin(), t.shape.end() - 2);
  int64_t r0 = t.shape[t.rank() - 2], r1 = t.shape[t.rank() - 1];
  v.trans = trans;
  v.rows = trans ? r1 : r0;
  v.cols = trans ? r0 : r1;
  return v;
}

// Copies every matrix of `t` into contiguous [rows][cols] order, so the inner
// loop of the product runs over plain memory.
template <class T, class Get>
std::vector<T> packMatrices(const Tensor& t, const MatView& v, Get get) {
  int64_t per = v.rows * v.cols, batches = numelOf(v.batch);
  std::vector<T> buf(static_cast<size_t>(per * batches));
  for (int64_t p = 0; p < batches; ++p)
    for (int64_t i = 0; i < v.rows; ++i)
      for (int64_t j = 0; j < v.cols; ++j) {
        int64_t src = p * per + (v.trans ? j * v.rows + i : i * v.cols + j);
        buf[static_cast<size_t>(p * per + i * v.cols + j)] = get(t, src);
      }
  return buf;
}

// C[M, N] = A[M, K] * B[K, N] for every output batch, i-k-j order with a row accumulator.
template <class T, class Store>
void multiply(const std::vector<T>& A, const std::vector<T>& B, const std::vector<int64_t>& ia,
              const std::vector<int64_t>& ib, int64_t M, int64_t K, int64_t N, Store store) {
  std::vector<T> acc(static_cast<size_t>(N));
  int64_t batches = static_cast<int64_t>(ia.size());
  for (int64_t t = 0; t < batches; ++t) {
    const T* a = A.data() + ia[static_cast<size_t>(t)] * M * K;
    const T* b = B.data() + ib[static_cast<size_t>(t)] * K * N;
    for (int64_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.end(), T(0));
      T* __restrict accp = acc.data();
      for (int64_t k = 0; k < K; ++k) {
        T aik = a[i * K + k];
        const T* __restrict brow = b + k * N;
        for (int64_t j = 0; j < N; ++j) accp[j] += aik * brow[j];
      }
      for (int64_t j = 0; j < N; ++j) store((t * M + i) * N + j, acc[static_cast<size_t>(j)]);
    }
  }
}

}  // namespace

bool runMatmul(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& a = *c.in[0];
  const Tensor& b = *c.in[1];
  if (a.dtype != b.dtype)
    return c.fail("operands of matmul have different dtypes " + std::string(dtypeName(a.dtype)) + " and " +
                  std::string(dtypeName(b.dtype)));
  if (a.rank() == 0 || b.rank() == 0) return c.fail("operands of matmul must have rank 1 or more");
  bool ta = false, tb = false;
  if (!c.boolAttr("transpose_a", false, ta) || !c.boolAttr("transpose_b", false, tb)) return false;
  MatView va = viewOf(a, ta, true), vb = viewOf(b, tb, false);
  if (va.cols != vb.rows)
    return c.fail("matmul contracts " + std::to_string(va.cols) + " columns of " + a.typeStr() + " with " +
                  std::to_string(vb.rows) + " rows of " + b.typeStr());
  auto batch = broadcastShapes(va.batch, vb.batch);
  if (!batch)
    return c.fail("batch dims of matmul do not broadcast: " + shapeStr(va.batch) + " and " + shapeStr(vb.batch));
  std::vector<int64_t> ia = broadcastIndex(va.batch, *batch), ib = broadcastIndex(vb.batch, *batch);
  Shape outShape = *batch;
  if (!va.vector) outShape.push_back(va.rows);
  if (!vb.vector) outShape.push_back(vb.cols);
  Tensor r = Tensor::zeros(c.outDType(), outShape);
  int64_t M = va.rows, K = va.cols, N = vb.cols;
  if (isFloat(a.dtype)) {
    auto get = [](const Tensor& t, int64_t i) { return t.getF(i); };
    std::vector<double> A = packMatrices<double>(a, va, get), B = packMatrices<double>(b, vb, get);
    multiply<double>(A, B, ia, ib, M, K, N, [&](int64_t i, double v) { r.setF(i, v); });
  } else {
    // Unsigned arithmetic wraps like the fixed-width integers it stands for.
    auto get = [](const Tensor& t, int64_t i) { return static_cast<uint64_t>(t.getI(i)); };
    std::vector<uint64_t> A = packMatrices<uint64_t>(a, va, get), B = packMatrices<uint64_t>(b, vb, get);
    multiply<uint64_t>(A, B, ia, ib, M, K, N, [&](int64_t i, uint64_t v) { r.setI(i, static_cast<int64_t>(v)); });
  }
  out.push_back(std::move(r));
  return true;
}

}  // namespace dscc::interp
