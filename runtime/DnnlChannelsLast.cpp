// conv and pool on channels-last tensors ([N, spatial..., C], the layout passes/ChannelsLast.cpp gives them): oneDNN primitives on the caller's buffers as they are, split over images or bands of output rows.
//
// Why a layout of its own: on channels-first tensors each call reordered its input into the blocked layout
// oneDNN's direct kernels want and its result back (bench/results/2026-12-06-vision-blocked.md: MobileNetV3's
// early depthwise convs were bound by those reorders). oneDNN's brgconv and brdgmm kernels read and write
// channels-last tensors directly, so a chain of convs kept channels-last reorders only its constant weights
// (once per context) and nothing per call.
#include "runtime/DnnlPrims.h"

#include <algorithm>
#include <cstring>

#include "runtime/Context.h"

#ifdef DSCC_HAVE_DNNL

namespace dscc::runtime::dnnlw {
namespace {

using dnnl::memory;

memory::format_tag lastTag(int n) {
  return n == 1 ? memory::format_tag::nwc : n == 2 ? memory::format_tag::nhwc : memory::format_tag::ndhwc;
}

/// One thread's share of a call: `nb` images from `n0`, output rows [r0, r0 + rows) of the first spatial dim,
/// which read input rows [in0, in0 + inRows) with padTop / padBottom rows of padding around them. In the
/// channels-last layout both are dense sub-tensors, so each share is an ordinary oneDNN call.
struct Band {
  int64_t n0, nb, r0, rows, in0, inRows, padTop, padBottom;
};

/// Whole images per thread when the batch has several; else bands of output rows of the one image (a
/// channel slice of a channels-last tensor would be strided: oneDNN's reference kernels).
std::vector<Band> bands(int64_t N, const Axis& a, int threads) {
  std::vector<Band> out;
  if (N > 1 || threads <= 1 || a.out < 2) {
    const Split sp = split(N, 1, threads);
    for (int64_t t = 0; t < sp.count; ++t) out.push_back({t * sp.per, sp.size(t), 0, a.out, 0, a.in, a.pb, a.peUsed});
    return out;
  }
  const int64_t count = std::min<int64_t>(threads, a.out), per = (a.out + count - 1) / count;
  const int64_t span = a.d * (a.k - 1) + 1;
  for (int64_t r0 = 0; r0 < a.out; r0 += per) {
    const int64_t r1 = std::min(a.out, r0 + per), start = r0 * a.s - a.pb, end = (r1 - 1) * a.s - a.pb + span;
    const int64_t in0 = std::max<int64_t>(0, start), inEnd = std::min(a.in, end);
    // A band wholly in the padding (tiny inputs, large pads): one band of the whole image instead.
    if (inEnd <= in0) return {{0, 1, 0, a.out, 0, a.in, a.pb, a.peUsed}};
    out.push_back({0, 1, r0, r1 - r0, in0, inEnd - in0, in0 - start, end - inEnd});
  }
  return out;
}

/// The key part and descriptor dims of one band: the first spatial dim is the band's, the others whole.
struct BandGeometry {
  memory::dims inSp, outSp, st, dil, pl, pr, ks;
  Dims key;
};

BandGeometry geometryOf(const std::vector<Axis>& ax, const Band& b) {
  BandGeometry g;
  for (size_t i = 0; i < ax.size(); ++i) {
    const Axis& a = ax[i];
    g.inSp.push_back(i ? a.in : b.inRows), g.outSp.push_back(i ? a.out : b.rows);
    g.pl.push_back(i ? a.pb : b.padTop), g.pr.push_back(i ? a.peUsed : b.padBottom);
    g.st.push_back(a.s), g.dil.push_back(a.d - 1), g.ks.push_back(a.k);
    g.key.insert(g.key.end(), {g.inSp.back(), g.outSp.back(), a.k, a.s, a.d, g.pl.back(), g.pr.back()});
  }
  return g;
}

memory::desc lastDesc(int64_t nb, int64_t c, const memory::dims& sp) {
  memory::dims d = {nb, c};
  d.insert(d.end(), sp.begin(), sp.end());
  return memory::desc(d, memory::data_type::f32, lastTag(int(sp.size())));
}

/// Elements per image and per row of the first spatial dim of a channels-last tensor.
std::pair<int64_t, int64_t> pitches(int64_t c, const std::vector<Axis>& ax, bool out) {
  int64_t row = c;
  for (size_t i = 1; i < ax.size(); ++i) row *= out ? ax[i].out : ax[i].in;
  return {row * (out ? ax[0].out : ax[0].in), row};
}

/// True when an eltwise kind (all but DSCC_POST_ADD) occurs twice in `post`.
bool repeatsEltwise(const PostOps& post) {
  for (int32_t i = 0; i < post.n; ++i)
    for (int32_t j = 0; j < i; ++j)
      if (post.kinds[i] == post.kinds[j] && post.kinds[i] != DSCC_POST_ADD) return true;
  return false;
}

/// `post` as oneDNN post-ops on a result of descriptor `dst` (an add's tensor has the result's layout), and
/// their part of the primitive's key.
dnnl::post_ops postOpsOf(const PostOps& post, const memory::desc& dst, Dims& key) {
  dnnl::post_ops ops;
  for (int32_t j = 0; j < post.n; ++j) {
    const float a = post.args[2 * j], b = post.args[2 * j + 1];
    uint32_t bits[2];
    std::memcpy(bits, &post.args[2 * j], sizeof bits);
    key.insert(key.end(), {post.kinds[j], bits[0], bits[1]});
    switch (post.kinds[j]) {
      case DSCC_POST_RELU: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f); break;
      case DSCC_POST_LINEAR: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, a, b); break;
      case DSCC_POST_CLIP: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, a, b); break;
      // oneDNN 2.x's hardswish takes no arguments; later ones read alpha and beta as v * clip(alpha*v + beta).
      case DSCC_POST_HARDSWISH: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 1.0f / 6, 0.5f); break;
      case DSCC_POST_ADD: ops.append_binary(dnnl::algorithm::binary_add, dst); break;
      default: break;
    }
  }
  return ops;
}

}  // namespace

void convChannelsLast(dscc_context* ctx, const std::vector<Axis>& ax, int64_t N, int64_t C, int64_t M, int64_t G,
                      const float* x, const float* w, const float* bias, float* y, uint64_t w_key,
                      const PostOps& post) {
  if (repeatsEltwise(post)) {
    // oneDNN 2.6 gives a repeated eltwise kind the first one's arguments (RuntimeDnnlPostOps.AgainstReference
    // failed with linear, relu, linear): the conv alone, then the epilogue in one pass here. The compiler's
    // chains never repeat one (ir/ConvEpilogue.h).
    convChannelsLast(ctx, ax, N, C, M, G, x, w, bias, y, w_key, PostOps{});
    int64_t outN = N * M;
    for (const Axis& a : ax) outN *= a.out;
    applyPostOps(post, y, outN);
    return;
  }
  const int n = int(ax.size());
  const std::vector<Band> bs = bands(N, ax[0], ctx->pool.numThreads());
  std::vector<std::shared_ptr<Prim>> prims;
  for (const Band& b : bs) {
    BandGeometry g = geometryOf(ax, b);
    Dims key = {0x434c, int64_t(n), b.nb, C, M, G, bias != nullptr};
    key.insert(key.end(), g.key.begin(), g.key.end());
    const dnnl::post_ops ops = postOpsOf(post, lastDesc(b.nb, M, g.outSp), key);
    prims.push_back(cache().get(key, [&] {
      memory::dims wd = G > 1 ? memory::dims{G, M / G, C / G} : memory::dims{M, C};
      wd.insert(wd.end(), g.ks.begin(), g.ks.end());
      memory::desc wm(wd, memory::data_type::f32, denseStrides(wd));
      memory::desc wAny(wd, memory::data_type::f32, memory::format_tag::any);
      memory::desc bm = bias ? memory::desc({M}, memory::data_type::f32, memory::dims{1}) : memory::desc();
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                        lastDesc(b.nb, C, g.inSp), wAny, bm, lastDesc(b.nb, M, g.outSp), g.st, g.dil,
                                        g.pl, g.pr);
      std::shared_ptr<Prim> p = makeWeightedPrim<dnnl::convolution_forward>(d, post.n ? &ops : nullptr);
      p->wPlain = wm;
      p->wIn = reorderFor(wm, p->weights);
      return p;
    }));
  }
  const auto [xImg, xRow] = pitches(C, ax, false);
  const auto [yImg, yRow] = pitches(M, ax, true);
  ctx->pool.parallelFor(0, int64_t(bs.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const Band& b = bs[size_t(t)];
      const Prim& p = *prims[size_t(t)];
      // A post-op's tensor has the result's layout: the band's part of it starts where the band's result does.
      std::unordered_map<int, memory> extra;
      for (int32_t j = 0; j < post.n; ++j)
        if (post.kinds[j] == DSCC_POST_ADD)
          extra.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(j) | DNNL_ARG_SRC_1,
                        memory(p.dst, cpu(), const_cast<float*>(post.srcs[j]) + b.n0 * yImg + b.r0 * yRow));
      executeWeighted(p, x + b.n0 * xImg + b.in0 * xRow, w, bias, y + b.n0 * yImg + b.r0 * yRow,
                      readyWeight(ctx, p, w, w_key), std::move(extra));
    }
  });
}

void poolChannelsLast(dscc_context* ctx, const std::vector<Axis>& ax, int64_t N, int64_t C, bool avg,
                      const float* x, float* y) {
  const int n = int(ax.size());
  const std::vector<Band> bs = bands(N, ax[0], ctx->pool.numThreads());
  // Averages are oneDNN's include-padding ones, rescaled by fixPoolEdges (see dscc_pool_f32).
  const dnnl::algorithm alg = avg ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_max;
  std::vector<std::shared_ptr<Prim>> prims;
  for (const Band& b : bs) {
    BandGeometry g = geometryOf(ax, b);
    Dims key = {0x504c, int64_t(n), int64_t(avg), b.nb, C};
    key.insert(key.end(), g.key.begin(), g.key.end());
    prims.push_back(cache().get(key, [&] {
      return makePoolPrim(dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, alg,
                                                         lastDesc(b.nb, C, g.inSp), lastDesc(b.nb, C, g.outSp), g.st,
                                                         g.ks, g.dil, g.pl, g.pr));
    }));
  }
  const auto [xImg, xRow] = pitches(C, ax, false);
  const auto [yImg, yRow] = pitches(C, ax, true);
  ctx->pool.parallelFor(0, int64_t(bs.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const Band& b = bs[size_t(t)];
      const Prim& p = *prims[size_t(t)];
      std::unordered_map<int, memory> args;
      args.emplace(DNNL_ARG_SRC, memory(p.src, cpu(), const_cast<float*>(x) + b.n0 * xImg + b.in0 * xRow));
      args.emplace(DNNL_ARG_DST, memory(p.dst, cpu(), y + b.n0 * yImg + b.r0 * yRow));
      execute(p, std::move(args));
    }
  });
}

}  // namespace dscc::runtime::dnnlw

#endif
