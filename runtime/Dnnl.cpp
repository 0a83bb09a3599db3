// dscc_conv_f32, dscc_conv_transpose_f32 and dscc_pool_f32: checked sizes, oneDNN primitives made for the sizes at run time and cached by shape, dense image or channel slices run on the context's threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef DSCC_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "runtime/Context.h"
#include "runtime/Dnnl.h"
#include "runtime/DnnlPrims.h"
#include "runtime/dscc_runtime.h"



using dscc::runtime::dnnlw::Axis;
using dscc::runtime::fail;

void dscc::runtime::applyPostOps(const PostOps& post, float* y, int64_t n) {
  for (int32_t j = 0; j < post.n; ++j) {
    const float a = post.args[2 * j], b = post.args[2 * j + 1];
    const float* src = post.srcs[j];
    switch (post.kinds[j]) {
      case DSCC_POST_RELU: for (int64_t q = 0; q < n; ++q) y[q] = y[q] < 0.0f ? 0.0f : y[q]; break;
      case DSCC_POST_LINEAR: for (int64_t q = 0; q < n; ++q) y[q] = a * y[q] + b; break;
      case DSCC_POST_CLIP: for (int64_t q = 0; q < n; ++q) y[q] = std::max(std::min(y[q], b), a); break;
      case DSCC_POST_HARDSWISH:
        for (int64_t q = 0; q < n; ++q) y[q] *= std::max(std::min(y[q] * (1.0f / 6) + 0.5f, 1.0f), 0.0f);
        break;
      case DSCC_POST_ADD: for (int64_t q = 0; q < n; ++q) y[q] += src[q]; break;
      default: break;
    }
  }
}

namespace {

/// Why `post` is not a valid post-op list ("" when it is).
std::string checkPostOps(const dscc::runtime::PostOps& post) {
  if (post.n == 0) return "";
  if (post.n < 0 || !post.kinds || !post.args || !post.srcs) return "post-ops need their kinds, arguments and tensors";
  for (int32_t j = 0; j < post.n; ++j) {
    const int32_t k = post.kinds[j];
    if (k < DSCC_POST_RELU || k > DSCC_POST_ADD) return "post-op " + std::to_string(j) + " has no kind " + std::to_string(k);
    if (k == DSCC_POST_ADD && !post.srcs[j]) return "post-op " + std::to_string(j) + " (add) has no tensor";
    if (k == DSCC_POST_CLIP && !(post.args[2 * j] <= post.args[2 * j + 1]))
      return "post-op " + std::to_string(j) + " clips to an empty range";
  }
  return "";
}

}  // namespace

dscc_status dscc::runtime::convF32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                   const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims,
                                   float* y, int64_t group, const int64_t* strides, const int64_t* dilations,
                                   const int64_t* pads_begin, const int64_t* pads_end, uint64_t w_key,
                                   bool channels_last, const PostOps& post) {
  const char* fn = "dscc_conv_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (std::string e = checkPostOps(post); !e.empty()) return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": " + e);
  if (n_spatial < 1 || n_spatial > 3 || !x_dims || !w_dims || !y_dims || !strides || !dilations || !pads_begin ||
      !pads_end)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": 1 to 3 spatial dims and every size array are needed");
  const int r = n_spatial + 2;
  const int64_t N = x_dims[0], C = x_dims[1], M = w_dims[0];
  const std::string shapes = " (input " + dscc::runtime::dnnlw::str(x_dims, r) + ", weight " + dscc::runtime::dnnlw::str(w_dims, r) +
                             ", output " + dscc::runtime::dnnlw::str(y_dims, r) + ", group " + std::to_string(group) + ")";
  if (group < 1 || N < 0 || C < 0 || M < 0 || C % group || M % group || w_dims[1] * group != C || y_dims[0] != N ||
      y_dims[1] != M)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": channels do not match" + shapes);
  std::vector<Axis> ax;
  int64_t inN = 0, outN = 0;
  if (std::string e = dscc::runtime::dnnlw::windowAxes(n_spatial, x_dims, y_dims, w_dims + 2, strides, dilations, pads_begin,
                                                pads_end, ax, inN, outN);
      !e.empty())
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": " + e + shapes);
  if (outN == 0) return DSCC_OK;
  // An empty input (no channels, or a spatial size of 0 that the padding makes up for): every window reads
  // only zeros of the padding, so each output is its bias; oneDNN takes no empty tensors.
  if (inN == 0) {
    const int64_t plane = outN / (N * M);
    for (int64_t q = 0; q < outN; ++q) y[q] = bias ? bias[channels_last ? q % M : q / plane % M] : 0.0f;
    applyPostOps(post, y, outN);
    return DSCC_OK;
  }
#ifndef DSCC_HAVE_DNNL
  (void)x, (void)w, (void)bias, (void)y, (void)w_key;
  return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": this runtime was built without oneDNN");
#else
  return dscc::runtime::guarded(ctx, fn, [&]() -> dscc_status {
    using namespace dscc::runtime;
    using namespace dscc::runtime::dnnlw;
    using dnnl::memory;
    if (channels_last) {
      convChannelsLast(ctx, ax, N, C, M, group, x, w, bias, y, w_key, post);
      return DSCC_OK;
    }
    const int64_t G = group, Cg = C / G, Mg = M / G;
    // Channel units of one image's slices: whole groups, or output channels of an ungrouped conv.
    const int64_t units = G > 1 ? G : M;
    const Split sp = split(N, units, ctx->pool.numThreads());
    memory::dims st, dil, pl, pr, ks, inSp, outSp;
    for (const Axis& a : ax) {
      inSp.push_back(a.in), outSp.push_back(a.out), ks.push_back(a.k), st.push_back(a.s);
      dil.push_back(a.d - 1), pl.push_back(a.pb), pr.push_back(a.peUsed);
    }
    memory::dims xFull = {N, C}, yFull = {N, M};
    xFull.insert(xFull.end(), inSp.begin(), inSp.end());
    yFull.insert(yFull.end(), outSp.begin(), outSp.end());
    const memory::dims xStr = denseStrides(xFull), yStr = denseStrides(yFull);
    int64_t kvol = 1;
    for (int64_t k : ks) kvol *= k;
    // One slice's primitive: `nb` images of `u` units (groups or output channels), dense.
    auto primFor = [&](int64_t nb, int64_t u) {
      Dims key = {int64_t(n_spatial), nb, C, M, G, u, bias != nullptr};
      for (const Axis& a : ax) key.insert(key.end(), {a.in, a.out, a.k, a.s, a.d, a.pb, a.peUsed});
      return cache().get(key, [&] {
        const int64_t cin = G > 1 ? u * Cg : C, cout = G > 1 ? u * Mg : u, g = G > 1 ? u : 1;
        memory::dims xd = {nb, cin}, yd = {nb, cout}, wd;
        xd.insert(xd.end(), inSp.begin(), inSp.end());
        yd.insert(yd.end(), outSp.begin(), outSp.end());
        if (G > 1) wd = {g, Mg, Cg};
        else wd = {u, C};
        wd.insert(wd.end(), ks.begin(), ks.end());
        memory::desc xm(xd, memory::data_type::f32, denseStrides(xd)), ym(yd, memory::data_type::f32, denseStrides(yd));
        memory::desc wm(wd, memory::data_type::f32, denseStrides(wd));
        memory::desc bm = bias ? memory::desc({cout}, memory::data_type::f32, memory::dims{1}) : memory::desc();
        bool pointwise = G == 1;
        for (const Axis& a : ax) pointwise = pointwise && a.k == 1 && a.s == 1 && a.pb == 0 && a.peUsed == 0;
        return makeConvPrim(xm, wm, bm, ym, st, dil, pl, pr, pointwise);
      });
    };
    auto sliceShape = [&](int64_t t) { return sp.batch ? std::make_pair(sp.size(t), units) : std::make_pair(int64_t(1), sp.size(t)); };
    std::shared_ptr<Prim> full = primFor(sliceShape(0).first, sliceShape(0).second);
    std::shared_ptr<Prim> last = primFor(sliceShape(sp.count - 1).first, sliceShape(sp.count - 1).second);
    ctx->pool.parallelFor(0, sp.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const Prim& p = t + 1 < sp.count ? *full : *last;
        // Offsets of the slice: images n0.., or units u0.. of image 0.
        const int64_t n0 = sp.batch ? t * sp.per : 0, u0 = sp.batch ? 0 : t * sp.per;
        const int64_t c0 = G > 1 ? u0 * Cg : 0, m0 = G > 1 ? u0 * Mg : u0;
        const int64_t wPer = w_dims[1] * kvol;  // weight elements per output channel
        const float* ws = w + m0 * wPer;
        // A constant weight (w_key) is reordered once per context and slice shape; the copy is kept.
        const void* ready = readyWeight(ctx, p, ws, w_key);
        executeWeighted(p, x + n0 * xStr[0] + c0 * xStr[1], ws, bias ? bias + m0 : nullptr,
                        y + n0 * yStr[0] + m0 * yStr[1], ready);
      }
    });
    // Channels-first slices are channel units, which a post-op's tensor would have to follow: the epilogue
    // runs afterwards here (compiled models fuse epilogues into channels-last convs only).
    applyPostOps(post, y, outN);
    return DSCC_OK;
  });
#endif
}

extern "C" dscc_status dscc_conv_f32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                     const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims,
                                     float* y, int64_t group, const int64_t* strides, const int64_t* dilations,
                                     const int64_t* pads_begin, const int64_t* pads_end) {
  return dscc::runtime::convF32(ctx, n_spatial, x_dims, x, w_dims, w, bias, y_dims, y, group, strides, dilations,
                                pads_begin, pads_end, 0, false);
}

extern "C" dscc_status dscc_conv_transpose_f32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims,
                                               const float* x, const int64_t* w_dims, const float* w,
                                               const float* bias, const int64_t* y_dims, float* y, int64_t group,
                                               const int64_t* strides, const int64_t* dilations,
                                               const int64_t* pads_begin, const int64_t* pads_end) {
  const char* fn = "dscc_conv_transpose_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (n_spatial < 1 || n_spatial > 3 || !x_dims || !w_dims || !y_dims || !strides || !dilations || !pads_begin ||
      !pads_end)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": 1 to 3 spatial dims and every size array are needed");
  const int r = n_spatial + 2;
  const int64_t N = x_dims[0], C = x_dims[1], Mg = w_dims[1], G = group, M = Mg * std::max<int64_t>(G, 1);
  const std::string shapes = " (input " + dscc::runtime::dnnlw::str(x_dims, r) + ", weight " + dscc::runtime::dnnlw::str(w_dims, r) +
                             ", output " + dscc::runtime::dnnlw::str(y_dims, r) + ", group " + std::to_string(group) + ")";
  if (G < 1 || N < 0 || C < 0 || Mg < 0 || C % G || w_dims[0] != C || y_dims[0] != N || y_dims[1] != M)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": channels do not match" + shapes);
  // Per spatial dim: the size rule (docs/ir.md), and the pads clamped at 0 for oneDNN: a negative pad adds result
  // points no input reaches, which hold the bias (written around oneDNN's result below).
  int64_t inN = 1, outN = 1, innerN = 1;
  bool inner = true, clamped = false;
  std::vector<int64_t> in(r), out(r), k(r), st(r), dl(r), pl(r), pr(r), sub(r), off(r, 0);
  for (int i = 0; i < n_spatial; ++i) {
    in[i] = x_dims[2 + i], out[i] = y_dims[2 + i], k[i] = w_dims[2 + i], st[i] = strides[i], dl[i] = dilations[i];
    const std::string at = " (spatial dim " + std::to_string(i) + ")" + shapes;
    if (in[i] < 0 || out[i] < 0 || k[i] < 1 || st[i] < 1 || dl[i] < 1)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  std::string(fn) + ": sizes must be >= 0, kernel, strides and dilations >= 1" + at);
    const int64_t full = st[i] * (in[i] - 1) + dl[i] * (k[i] - 1) + 1, want = full - pads_begin[i] - pads_end[i];
    if (out[i] != want)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  std::string(fn) + ": output size " + std::to_string(out[i]) + " is not " + std::to_string(want) + at);
    pl[i] = std::max<int64_t>(pads_begin[i], 0), pr[i] = std::max<int64_t>(pads_end[i], 0);
    off[i] = pl[i] - pads_begin[i];
    sub[i] = full - pl[i] - pr[i];  // the points oneDNN computes
    clamped = clamped || pl[i] != pads_begin[i] || pr[i] != pads_end[i];
    inner = inner && sub[i] > 0;
    inN *= in[i], outN *= out[i], innerN *= std::max<int64_t>(sub[i], 0);
  }
  const int64_t plane = outN;
  inN *= N * C, outN *= N * M, innerN *= N * M;
  if (outN == 0) return DSCC_OK;
  auto fillBias = [&] {
    for (int64_t q = 0; q < outN; ++q) y[q] = bias ? bias[q / plane % M] : 0.0f;
  };
  // No input point (an empty input, or every computed point cut by the pads): the result is its bias.
  if (inN == 0 || !inner) {
    fillBias();
    return DSCC_OK;
  }
#ifndef DSCC_HAVE_DNNL
  (void)x, (void)w, (void)innerN, (void)clamped;
  return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": this runtime was built without oneDNN");
#else
  return dscc::runtime::guarded(ctx, fn, [&]() -> dscc_status {
    using namespace dscc::runtime;
    using namespace dscc::runtime::dnnlw;
    using dnnl::memory;
    const int64_t Cg = C / G;
    std::vector<float> tmp(clamped ? static_cast<size_t>(innerN) : 0);
    float* dst = clamped ? tmp.data() : y;
    const int64_t units = G > 1 ? G : M;  // one image's slices: whole groups, or output channels
    const Split sp = split(N, units, ctx->pool.numThreads());
    memory::dims inSp(in.begin(), in.begin() + n_spatial), subSp(sub.begin(), sub.begin() + n_spatial);
    memory::dims ks(k.begin(), k.begin() + n_spatial), stv(st.begin(), st.begin() + n_spatial), dil, plv, prv;
    for (int i = 0; i < n_spatial; ++i) dil.push_back(dl[i] - 1), plv.push_back(pl[i]), prv.push_back(pr[i]);
    memory::dims xFull = {N, C}, yFull = {N, M};
    xFull.insert(xFull.end(), inSp.begin(), inSp.end());
    yFull.insert(yFull.end(), subSp.begin(), subSp.end());
    const memory::dims xStr = denseStrides(xFull), yStr = denseStrides(yFull);
    int64_t kvol = 1;
    for (int64_t v : ks) kvol *= v;
    // One slice's primitive: `nb` images of `u` units. The weight is ONNX's [C, M/group, k...] read in place:
    // oneDNN's (group,) output channel, input channel, k... order with the strides of that layout.
    auto primFor = [&](int64_t nb, int64_t u) {
      Dims key = {-1, int64_t(n_spatial), nb, C, M, G, u, bias != nullptr};
      for (int i = 0; i < n_spatial; ++i) key.insert(key.end(), {in[i], sub[i], k[i], st[i], dl[i], pl[i], pr[i]});
      return cache().get(key, [&] {
        const int64_t cin = G > 1 ? u * Cg : C, cout = G > 1 ? u * Mg : u;
        memory::dims xd = {nb, cin}, yd = {nb, cout}, wd, ws;
        xd.insert(xd.end(), inSp.begin(), inSp.end());
        yd.insert(yd.end(), subSp.begin(), subSp.end());
        if (G > 1) wd = {u, Mg, Cg}, ws = {Cg * Mg * kvol, kvol, Mg * kvol};
        else wd = {u, C}, ws = {kvol, Mg * kvol};
        wd.insert(wd.end(), ks.begin(), ks.end());
        const memory::dims kStr = denseStrides(ks);
        ws.insert(ws.end(), kStr.begin(), kStr.end());
        memory::desc xm(xd, memory::data_type::f32, denseStrides(xd)), ym(yd, memory::data_type::f32, denseStrides(yd));
        memory::desc wm(wd, memory::data_type::f32, ws);
        memory::desc bm = bias ? memory::desc({cout}, memory::data_type::f32, memory::dims{1}) : memory::desc();
        dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                            xm, wm, bm, ym, stv, dil, plv, prv);
        return makeWeightedPrim<dnnl::deconvolution_forward>(d);
      });
    };
    auto sliceShape = [&](int64_t t) { return sp.batch ? std::make_pair(sp.size(t), units) : std::make_pair(int64_t(1), sp.size(t)); };
    std::shared_ptr<Prim> full = primFor(sliceShape(0).first, sliceShape(0).second);
    std::shared_ptr<Prim> last = primFor(sliceShape(sp.count - 1).first, sliceShape(sp.count - 1).second);
    ctx->pool.parallelFor(0, sp.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const Prim& p = t + 1 < sp.count ? *full : *last;
        const int64_t n0 = sp.batch ? t * sp.per : 0, u0 = sp.batch ? 0 : t * sp.per;
        const int64_t c0 = G > 1 ? u0 * Cg : 0, m0 = G > 1 ? u0 * Mg : u0;
        // The slice's first weight: group u0's first row (grouped), or output channel u0's column (ungrouped).
        const int64_t w0 = G > 1 ? u0 * Cg * Mg * kvol : u0 * kvol;
        std::unordered_map<int, memory> args;
        args.emplace(DNNL_ARG_SRC, memory(p.src, cpu(), const_cast<float*>(x) + n0 * xStr[0] + c0 * xStr[1]));
        args.emplace(DNNL_ARG_WEIGHTS, memory(p.weights, cpu(), const_cast<float*>(w) + w0));
        if (bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias, cpu(), const_cast<float*>(bias) + m0));
        args.emplace(DNNL_ARG_DST, memory(p.dst, cpu(), dst + n0 * yStr[0] + m0 * yStr[1]));
        execute(p, std::move(args));
      }
    });
    if (clamped) {
      // oneDNN's points sit at `off` inside the result; the rest hold the bias.
      fillBias();
      // Strides of the result [N, M, out...].
      std::vector<int64_t> ys(r, 1), yd = {N, M};
      yd.insert(yd.end(), out.begin(), out.begin() + n_spatial);
      for (int i = r; i-- > 0;) ys[i] = i == r - 1 ? 1 : ys[i + 1] * yd[i + 1];
      std::vector<int64_t> sd = {N, M};
      sd.insert(sd.end(), sub.begin(), sub.begin() + n_spatial);
      for (int64_t q = 0; q < innerN; ++q) {
        int64_t rem = q, at = 0;
        for (int i = r; i-- > 0;) {
          const int64_t idx = rem % sd[i];
          rem /= sd[i];
          at += (idx + (i >= 2 ? off[i - 2] : 0)) * ys[i];
        }
        y[at] = tmp[static_cast<size_t>(q)];
      }
    }
    return DSCC_OK;
  });
#endif
}

extern "C" dscc_status dscc_pool_f32(dscc_context* ctx, int32_t n_spatial, int32_t kind, int32_t count_include_pad,
                                     const int64_t* x_dims, const float* x, const int64_t* y_dims, float* y,
                                     const int64_t* kernel, const int64_t* strides, const int64_t* dilations,
                                     const int64_t* pads_begin, const int64_t* pads_end) {
  return dscc::runtime::poolF32(ctx, n_spatial, kind, count_include_pad, x_dims, x, y_dims, y, kernel, strides,
                                dilations, pads_begin, pads_end, false);
}

dscc_status dscc::runtime::poolF32(dscc_context* ctx, int32_t n_spatial, int32_t kind, int32_t count_include_pad,
                                   const int64_t* x_dims, const float* x, const int64_t* y_dims, float* y,
                                   const int64_t* kernel, const int64_t* strides, const int64_t* dilations,
                                   const int64_t* pads_begin, const int64_t* pads_end, bool channels_last) {
  const char* fn = "dscc_pool_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (n_spatial < 1 || n_spatial > 3 || (kind != 0 && kind != 1) || !x_dims || !y_dims || !kernel || !strides ||
      !dilations || !pads_begin || !pads_end)
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                std::string(fn) + ": 1 to 3 spatial dims, kind 0 (max) or 1 (avg) and every size array are needed");
  const int r = n_spatial + 2;
  const int64_t N = x_dims[0], C = x_dims[1];
  const std::string shapes = " (input " + dscc::runtime::dnnlw::str(x_dims, r) + ", output " + dscc::runtime::dnnlw::str(y_dims, r) +
                             ", kernel " + dscc::runtime::dnnlw::str(kernel, n_spatial) + ")";
  if (N < 0 || C < 0 || y_dims[0] != N || y_dims[1] != C)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": batch or channels differ" + shapes);
  std::vector<Axis> ax;
  int64_t inN = 0, outN = 0;
  if (std::string e = dscc::runtime::dnnlw::windowAxes(n_spatial, x_dims, y_dims, kernel, strides, dilations, pads_begin,
                                                pads_end, ax, inN, outN);
      !e.empty())
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": " + e + shapes);
  if (outN == 0) return DSCC_OK;
  // An empty input (a spatial size of 0 the padding makes up for): windows hold no input point, so a max is
  // -inf, an average 0/0 (NaN), or 0 over the padded points it counts with count_include_pad.
  if (inN == 0) {
    const float v = kind == 0 ? -INFINITY : count_include_pad ? 0.0f : NAN;
    for (int64_t q = 0; q < outN; ++q) y[q] = v;
    return DSCC_OK;
  }
#ifndef DSCC_HAVE_DNNL
  (void)x, (void)y, (void)count_include_pad;
  return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": this runtime was built without oneDNN");
#else
  return dscc::runtime::guarded(ctx, fn, [&]() -> dscc_status {
    using namespace dscc::runtime;
    using namespace dscc::runtime::dnnlw;
    using dnnl::memory;
    const bool avg = kind == 1, include = avg && count_include_pad;
    if (channels_last) {
      poolChannelsLast(ctx, ax, N, C, avg, x, y);
      fixPoolEdges(ax, avg, include, true, C, outN, y);
      return DSCC_OK;
    }
    const Split sp = split(N, C, ctx->pool.numThreads());
    memory::dims st, dil, pl, pr, ks, inSp, outSp;
    for (const Axis& a : ax) {
      inSp.push_back(a.in), outSp.push_back(a.out), ks.push_back(a.k), st.push_back(a.s);
      dil.push_back(a.d - 1), pl.push_back(a.pb), pr.push_back(a.peUsed);
    }
    memory::dims xFull = {N, C}, yFull = {N, C};
    xFull.insert(xFull.end(), inSp.begin(), inSp.end());
    yFull.insert(yFull.end(), outSp.begin(), outSp.end());
    const memory::dims xStr = denseStrides(xFull), yStr = denseStrides(yFull);
    // Averages are oneDNN's include-padding ones (the sum over the whole kernel) rescaled below: its
    // exclude-padding form refuses sizes where a window lies (nearly) all in the padding.
    const dnnl::algorithm alg = avg ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_max;
    // One slice's primitive: `nb` images of `u` channels, dense.
    auto primFor = [&](int64_t nb, int64_t u) {
      Dims key = {int64_t(n_spatial), kind, nb, u};
      for (const Axis& a : ax) key.insert(key.end(), {a.in, a.out, a.k, a.s, a.d, a.pb, a.peUsed});
      return cache().get(key, [&] {
        memory::dims xd = {nb, u}, yd = {nb, u};
        xd.insert(xd.end(), inSp.begin(), inSp.end());
        yd.insert(yd.end(), outSp.begin(), outSp.end());
        memory::desc xm(xd, memory::data_type::f32, denseStrides(xd)), ym(yd, memory::data_type::f32, denseStrides(yd));
        return makePoolPrim(dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, alg, xm, ym, st, ks, dil,
                                                           pl, pr));
      });
    };
    auto sliceShape = [&](int64_t t) { return sp.batch ? std::make_pair(sp.size(t), C) : std::make_pair(int64_t(1), sp.size(t)); };
    std::shared_ptr<Prim> full = primFor(sliceShape(0).first, sliceShape(0).second);
    std::shared_ptr<Prim> last = primFor(sliceShape(sp.count - 1).first, sliceShape(sp.count - 1).second);
    ctx->pool.parallelFor(0, sp.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const Prim& p = t + 1 < sp.count ? *full : *last;
        const int64_t n0 = sp.batch ? t * sp.per : 0, c0 = sp.batch ? 0 : t * sp.per;
        std::unordered_map<int, memory> args;
        args.emplace(DNNL_ARG_SRC, memory(p.src, cpu(), const_cast<float*>(x) + n0 * xStr[0] + c0 * xStr[1]));
        args.emplace(DNNL_ARG_DST, memory(p.dst, cpu(), y + n0 * yStr[0] + c0 * yStr[1]));
        execute(p, std::move(args));
      }
    });
    fixPoolEdges(ax, avg, include, false, C, outN, y);
    return DSCC_OK;
  });
#endif
}
