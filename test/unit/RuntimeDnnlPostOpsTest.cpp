// dscc_conv_f32_post_info (a conv with its elementwise epilogue as oneDNN post-ops) against a naive conv followed by the epilogue in double: each post-op kind, chains, residual adds read band by band, channels-last and -first, 1-3 threads, bad lists.
//
// Tolerance: |got - want| <= 1e-5 + 1e-5 * (sum |terms| + |residuals|) per element (f32 against double; every
// post-op here is 1-Lipschitz or scales by 1/2). Outputs are pre-filled with NaN so an element the call skips fails.
#include <gtest/gtest.h>

#include "test/unit/RandomData.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/dscc_generated.h"
#include "runtime/dscc_runtime.h"

namespace {

struct ContextDeleter {
  void operator()(dscc_context* ctx) const { dscc_context_release(ctx); }
};
using ContextPtr = std::unique_ptr<dscc_context, ContextDeleter>;

/// A 2-D conv's sizes (symmetric pads).
struct Conv {
  int64_t N = 1, C = 1, H = 1, W = 1, M = 1, group = 1, k = 1, s = 1, pad = 0;
  int64_t OH() const { return (H + 2 * pad - k) / s + 1; }
  int64_t OW() const { return (W + 2 * pad - k) / s + 1; }
};

/// One post-op as the test writes it: kind (DSCC_POST_*), arguments, and for an add the index of its tensor.
struct Post {
  int32_t kind;
  float a = 0, b = 0;
};

/// The epilogue in double, written from the ABI's definitions (dscc_generated.h), not from the runtime's code.
double reference(const std::vector<Post>& post, double v, const std::vector<const float*>& srcs, size_t q) {
  for (size_t j = 0; j < post.size(); ++j) {
    const Post& p = post[j];
    if (p.kind == DSCC_POST_RELU) v = std::max(v, 0.0);
    if (p.kind == DSCC_POST_LINEAR) v = double(p.a) * v + double(p.b);
    if (p.kind == DSCC_POST_CLIP) v = std::max(std::min(v, double(p.b)), double(p.a));
    if (p.kind == DSCC_POST_HARDSWISH) v = v * std::max(std::min(v / 6 + 0.5, 1.0), 0.0);
    if (p.kind == DSCC_POST_ADD) v += srcs[j][q];
  }
  return v;
}

/// Runs the conv with `post` on random data (layout `cl`: channels-last) and compares every element.
void check(dscc_context* ctx, const Conv& c, const std::vector<Post>& post, bool cl, unsigned seed) {
  const int64_t OH = c.OH(), OW = c.OW(), Cg = c.C / c.group, Mg = c.M / c.group;
  const size_t ySize = size_t(c.N * c.M * OH * OW);
  std::vector<float> x = randomData(size_t(c.N * c.C * c.H * c.W), seed);
  std::vector<float> w = randomData(size_t(c.M * Cg * c.k * c.k), seed + 1), b = randomData(size_t(c.M), seed + 2);
  std::vector<std::vector<float>> tensors;
  std::vector<int32_t> kinds;
  std::vector<float> args;
  std::vector<const float*> srcs;
  for (size_t j = 0; j < post.size(); ++j) {
    kinds.push_back(post[j].kind), args.push_back(post[j].a), args.push_back(post[j].b);
    tensors.push_back(post[j].kind == DSCC_POST_ADD ? randomData(ySize, seed + 10 + unsigned(j)) : std::vector<float>());
  }
  for (const auto& t : tensors) srcs.push_back(t.empty() ? nullptr : t.data());
  std::vector<float> y(ySize, std::numeric_limits<float>::quiet_NaN());
  int64_t xd[] = {c.N, c.C, c.H, c.W}, wd[] = {c.M, Cg, c.k, c.k}, yd[] = {c.N, c.M, OH, OW};
  int64_t st[] = {c.s, c.s}, dl[] = {1, 1}, pads[] = {c.pad, c.pad};
  ASSERT_EQ(dscc_conv_f32_post_info(ctx, 2, xd, x.data(), wd, w.data(), b.data(), yd, y.data(), c.group, st, dl, pads,
                                    pads, 0, cl, int32_t(post.size()), kinds.data(), args.data(), srcs.data(), nullptr),
            DSCC_OK)
      << dscc_status_message(ctx);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b[size_t(m)], mag = std::fabs(acc);
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t i = 0; i < c.k; ++i)
              for (int64_t j = 0; j < c.k; ++j) {
                const int64_t h = oh * c.s - c.pad + i, ww = ow * c.s - c.pad + j, ch = m / Mg * Cg + ci;
                if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
                const double t = double(x[size_t(cl ? ((n * c.H + h) * c.W + ww) * c.C + ch
                                                    : ((n * c.C + ch) * c.H + h) * c.W + ww)]) *
                                 w[size_t(((m * Cg + ci) * c.k + i) * c.k + j)];
                acc += t, mag += std::fabs(t);
              }
          const size_t q = size_t(cl ? ((n * OH + oh) * OW + ow) * c.M + m : ((n * c.M + m) * OH + oh) * OW + ow);
          for (const float* s : srcs) mag += s ? std::fabs(s[q]) : 0.0;
          const double want = reference(post, acc, srcs, q);
          ASSERT_LE(std::fabs(y[q] - want), 1e-5 + 1e-5 * mag)
              << (cl ? "channels-last" : "channels-first") << " post-ops " << post.size() << " n=" << n << " m=" << m << " oh=" << oh << " ow=" << ow << " got " << y[q] << " want " << want;
        }
}

const float kInf = std::numeric_limits<float>::infinity();

// Each kind alone and in the chains models have (MobileNetV3: hardswish, relu, a projection plus its residual;
// ResNet: add then relu; HardSigmoid as linear then clip), on one image (bands of rows: a residual read band by
// band), a batch (split by image), depthwise and strided convs, over 1-3 threads and both layouts.
TEST(RuntimeDnnlPostOps, AgainstReference) {
  const std::vector<std::vector<Post>> chains = {
      {{DSCC_POST_RELU}},
      {{DSCC_POST_HARDSWISH}},
      {{DSCC_POST_ADD}},
      {{DSCC_POST_ADD}, {DSCC_POST_RELU}},
      {{DSCC_POST_LINEAR, 1.0f / 6, 0.5f}, {DSCC_POST_CLIP, 0.0f, 1.0f}},
      {{DSCC_POST_CLIP, -kInf, 0.25f}, {DSCC_POST_LINEAR, 0.5f, -0.125f}, {DSCC_POST_CLIP, -0.2f, kInf}},
      // A kind repeated (oneDNN 2.6 gave the second linear the first one's arguments: the runtime's fallback).
      {{DSCC_POST_LINEAR, 0.5f, -0.125f}, {DSCC_POST_RELU}, {DSCC_POST_LINEAR, 2.0f, 0.1f}, {DSCC_POST_RELU}},
      {{DSCC_POST_HARDSWISH}, {DSCC_POST_ADD}, {DSCC_POST_ADD}},
  };
  Conv one;  // 3x3 pad 1 on one image: bands of output rows
  one.C = 5, one.H = 13, one.W = 9, one.M = 7, one.k = 3, one.pad = 1;
  Conv batch = one;  // stride 2, a batch of 3
  batch.N = 3, batch.s = 2;
  Conv dw;  // depthwise 3x3 stride 2, 16 channels
  dw.C = dw.M = dw.group = 16, dw.H = 15, dw.W = 12, dw.k = 3, dw.s = 2, dw.pad = 1;
  Conv pw;  // 1x1 projection
  pw.N = 2, pw.C = 24, pw.M = 40, pw.H = 7, pw.W = 6;
  unsigned seed = 900;
  for (int threads : {1, 2, 3}) {
    ContextPtr ctx(dscc_context_create(threads));
    for (const auto& chain : chains)
      for (const Conv& c : {one, batch, dw, pw})
        for (bool cl : {true, false}) check(ctx.get(), c, chain, cl, seed++);
  }
}

// An input with no elements (the padding makes the windows): the output is the bias with the epilogue applied.
TEST(RuntimeDnnlPostOps, EmptyInput) {
  ContextPtr ctx(dscc_context_create(2));
  Conv c;
  c.C = 0, c.H = 2, c.W = 2, c.M = 3, c.k = 3, c.pad = 1;
  check(ctx.get(), c, {{DSCC_POST_HARDSWISH}, {DSCC_POST_ADD}}, true, 7);
}

TEST(RuntimeDnnlPostOps, BadLists) {
  ContextPtr ctx(dscc_context_create(1));
  int64_t xd[] = {1, 2, 4, 4}, wd[] = {3, 2, 3, 3}, yd[] = {1, 3, 2, 2}, one[] = {1, 1}, zero[] = {0, 0};
  std::vector<float> x(32, 1.0f), w(54, 1.0f), y(12);
  auto call = [&](int32_t kind, float a, float b, const float* src) {
    int32_t kinds[] = {kind};
    float args[] = {a, b};
    const float* srcs[] = {src};
    return dscc_conv_f32_post_info(ctx.get(), 2, xd, x.data(), wd, w.data(), nullptr, yd, y.data(), 1, one, one, zero,
                                   zero, 0, 1, 1, kinds, args, srcs, nullptr);
  };
  EXPECT_EQ(call(DSCC_POST_ADD, 0, 0, nullptr), DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("(add) has no tensor"), std::string::npos);
  EXPECT_EQ(call(99, 0, 0, nullptr), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(call(DSCC_POST_CLIP, 1, 0, nullptr), DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("empty range"), std::string::npos);
  EXPECT_EQ(call(DSCC_POST_RELU, 0, 0, nullptr), DSCC_OK) << dscc_status_message(ctx.get());
  for (float v : y) EXPECT_EQ(v, 18.0f);
}

}  // namespace
