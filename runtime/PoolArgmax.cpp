// dscc_pool_argmax_f32: the index of each window's maximum (the IR's `pool {kind = "argmax"}`, ONNX MaxPool's Indices) with plain loops over the windows on the context's threads.
//
// Not oneDNN: its max-pool workspace holds positions within the kernel in its own layout, not ONNX's flat indices,
// and it has no notion of storage_order. The loops visit only the kernel offsets that read the input (the
// interpreter's insideRange, ir/InterpConv.cpp), in row-major order, so the first maximum is the interpreter's.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/Context.h"
#include "runtime/DnnlPrims.h"
#include "runtime/dscc_runtime.h"

namespace dscc::runtime {
namespace {

// Work (window points) a chunk of units should hold at least before it is worth handing to another thread.
constexpr int64_t kMinChunkPoints = int64_t(1) << 15;

// One spatial dim's geometry as the loops need it.
struct Dim {
  int64_t in, out, k, s, d, pb;
  int64_t xStride;  // row-major element stride of this dim within an image plane
  int64_t idxStride;  // the index's stride for this dim: row-major, or column-major with storage_order = 1
};

// The kernel offsets [lo, hi) of output position o that read the input (not the padding); empty when lo >= hi.
void inside(const Dim& a, int64_t o, int64_t& start, int64_t& lo, int64_t& hi) {
  start = o * a.s - a.pb;
  lo = start >= 0 ? 0 : (-start + a.d - 1) / a.d;
  hi = start >= a.in ? 0 : std::min(a.k, (a.in - 1 - start) / a.d + 1);
}

// The argmax of the window at output position `op` of the image plane at `x` (whose first flat index is `base`):
// the first point, in row-major order of kernel offsets, holding the maximum; NaN beats every number and the first
// NaN wins; -1 for a window with no input point.
int64_t windowArgmax(const std::vector<Dim>& ax, const int64_t* op, const float* x, int64_t base) {
  const size_t n = ax.size();
  int64_t start[3], lo[3], hi[3], kk[3];
  for (size_t d = 0; d < n; ++d) {
    inside(ax[d], op[d], start[d], lo[d], hi[d]);
    if (lo[d] >= hi[d]) return -1;
    kk[d] = lo[d];
  }
  int64_t best = -1;
  float bestV = 0;
  while (true) {
    int64_t off = 0, at = base;
    for (size_t d = 0; d < n; ++d) {
      const int64_t pos = start[d] + kk[d] * ax[d].d;
      off += pos * ax[d].xStride;
      at += pos * ax[d].idxStride;
    }
    const float v = x[off];
    if (best < 0 || (std::isnan(v) && !std::isnan(bestV)) || v > bestV) best = at, bestV = v;
    size_t d = n;
    while (d-- > 0) {
      if (++kk[d] < hi[d]) break;
      kk[d] = lo[d];
    }
    if (d == size_t(-1)) return best;
  }
}

}  // namespace
}  // namespace dscc::runtime

extern "C" dscc_status dscc_pool_argmax_f32(dscc_context* ctx, int32_t n_spatial, int32_t storage_order,
                                            const int64_t* x_dims, const float* x, const int64_t* y_dims, int64_t* y,
                                            const int64_t* kernel, const int64_t* strides, const int64_t* dilations,
                                            const int64_t* pads_begin, const int64_t* pads_end) {
  using namespace dscc::runtime;
  namespace dw = dscc::runtime::dnnlw;
  const char* fn = "dscc_pool_argmax_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (n_spatial < 1 || n_spatial > 3 || (storage_order != 0 && storage_order != 1) || !x_dims || !y_dims ||
      !kernel || !strides || !dilations || !pads_begin || !pads_end)
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                std::string(fn) + ": 1 to 3 spatial dims, storage_order 0 or 1 and every size array are needed");
  const int r = n_spatial + 2;
  const int64_t N = x_dims[0], C = x_dims[1];
  const std::string shapes = " (input " + dw::str(x_dims, r) + ", output " + dw::str(y_dims, r) + ", kernel " +
                             dw::str(kernel, n_spatial) + ")";
  if (N < 0 || C < 0 || y_dims[0] != N || y_dims[1] != C)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": batch or channels differ" + shapes);
  // The same size checks as dscc_pool_f32 (the size rule of docs/ir.md, floor or ceil mode).
  std::vector<dw::Axis> axes;
  int64_t inN = 0, outN = 0;
  if (std::string e = dw::windowAxes(n_spatial, x_dims, y_dims, kernel, strides, dilations, pads_begin, pads_end,
                                     axes, inN, outN);
      !e.empty())
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": " + e + shapes);
  if (outN == 0) return DSCC_OK;
  if (!y || (inN > 0 && !x)) return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": x or y is NULL");
  std::vector<Dim> ax(static_cast<size_t>(n_spatial));
  int64_t plane = 1, outPlane = 1, rowStride = 1, colStride = 1;
  for (int i = n_spatial; i-- > 0;) {
    ax[i] = {axes[i].in, axes[i].out, axes[i].k, axes[i].s, axes[i].d, axes[i].pb, rowStride, 0};
    rowStride *= axes[i].in;
  }
  for (int i = 0; i < n_spatial; ++i) {
    ax[i].idxStride = storage_order == 1 ? colStride : ax[i].xStride;
    colStride *= axes[i].in;
    plane *= axes[i].in;
    outPlane *= axes[i].out;
  }
  // A unit is one row of outputs along the last spatial dim of one image plane: N*C*out[0..n-2] units, enough to
  // split a single image's plane over the threads.
  const int64_t rowLen = ax.back().out, units = outN / rowLen;
  int64_t kpts = 1;
  for (const Dim& a : ax) kpts *= a.k;
  const int64_t grain = std::max<int64_t>(1, kMinChunkPoints / std::max<int64_t>(1, rowLen * kpts));
  auto body = [&](int64_t b, int64_t e) {
    int64_t op[3] = {0, 0, 0};
    for (int64_t u = b; u < e; ++u) {
      // u = p*outer + the row's position in the leading output dims (row-major), p the image plane n*C + c.
      int64_t rest = u;
      for (int d = n_spatial - 1; d-- > 0;) {
        op[d] = rest % ax[d].out;
        rest /= ax[d].out;
      }
      const int64_t p = rest;
      int64_t* out = y + u * rowLen;
      for (int64_t j = 0; j < rowLen; ++j) {
        op[n_spatial - 1] = j;
        out[j] = windowArgmax(ax, op, x + p * plane, p * plane);
      }
    }
  };
  return guarded(ctx, fn, [&] {
    if (units <= grain || ctx->pool.numThreads() <= 1) body(0, units);
    else ctx->pool.parallelFor(0, units, grain, body);
    return DSCC_OK;
  });
}
