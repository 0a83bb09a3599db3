// dscc_conv_f32, dscc_conv_transpose_f32 and dscc_pool_f32 against naive loops: groups, strides, dilations, asymmetric pads, ceil-mode sizes, threads, the shape cache, bad arguments.
//
// Tolerance: |got - want| <= 1e-5 + 1e-5 * sum |terms| per element (f32 sums
// against a double reference). Outputs are pre-filled with NaN so an element
// the call skips fails.
#include <gtest/gtest.h>

#include "test/unit/RandomData.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/dscc_generated.h"
#include "runtime/dscc_runtime.h"

namespace {

struct ContextDeleter {
  void operator()(dscc_context* ctx) const { dscc_context_release(ctx); }
};
using ContextPtr = std::unique_ptr<dscc_context, ContextDeleter>;

/// One window op's sizes: 2-D only here (the lit and Python tests cover 1-D and 3-D).
struct Win {
  int64_t N = 1, C = 1, H = 1, W = 1, M = 1, group = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // top, left, bottom, right
  bool ceil = false;
  int64_t out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t b, int64_t e) const {
    int64_t room = in + b + e - (d * (k - 1) + 1);
    int64_t fl = room / s + 1;
    if (!ceil) return fl;
    return std::min((room + s - 1) / s, (in + b - 1) / s) + 1;
  }
  int64_t OH() const { return out(H, kh, sh, dh, pt, pb); }
  int64_t OW() const { return out(W, kw, sw, dw, pl, pr); }
};

/// Runs dscc_conv_f32 on random data and compares with a naive loop. With `wIn`, the weight is that buffer and
/// the call is dscc_conv_f32_info with `key` (the generated code's call, whose constant weight the context keeps
/// reordered).
/// With `cl`, x and y are stored channels-last ([N, H, W, C]: the compiled code's channels_last layout).
void checkConv(dscc_context* ctx, const Win& c, bool bias, unsigned seed, const std::vector<float>* wIn = nullptr,
               uint64_t key = 0, bool cl = false) {
  const int64_t OH = c.OH(), OW = c.OW(), Cg = c.C / c.group, Mg = c.M / c.group;
  std::vector<float> x = randomData(size_t(c.N * c.C * c.H * c.W), seed);
  const std::vector<float> w = wIn ? *wIn : randomData(size_t(c.M * Cg * c.kh * c.kw), seed + 1);
  const float* wp = wIn ? wIn->data() : w.data();
  std::vector<float> b = randomData(size_t(c.M), seed + 2);
  std::vector<float> y(size_t(c.N * c.M * OH * OW), std::numeric_limits<float>::quiet_NaN());
  int64_t xd[] = {c.N, c.C, c.H, c.W}, wd[] = {c.M, Cg, c.kh, c.kw}, yd[] = {c.N, c.M, OH, OW};
  int64_t st[] = {c.sh, c.sw}, dl[] = {c.dh, c.dw}, pb[] = {c.pt, c.pl}, pe[] = {c.pb, c.pr};
  const dscc_status st0 =
      wIn || cl ? dscc_conv_f32_info(ctx, 2, xd, x.data(), wd, wp, bias ? b.data() : nullptr, yd, y.data(), c.group,
                                     st, dl, pb, pe, key, cl, nullptr)
          : dscc_conv_f32(ctx, 2, xd, x.data(), wd, wp, bias ? b.data() : nullptr, yd, y.data(), c.group, st, dl, pb, pe);
  ASSERT_EQ(st0, DSCC_OK) << dscc_status_message(ctx);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias ? b[size_t(m)] : 0, mag = std::fabs(acc);
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t h = oh * c.sh - c.pt + i * c.dh, ww = ow * c.sw - c.pl + j * c.dw;
                if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
                const int64_t ch = m / Mg * Cg + ci;
                double t = double(x[size_t(cl ? ((n * c.H + h) * c.W + ww) * c.C + ch : ((n * c.C + ch) * c.H + h) * c.W + ww)]) *
                           w[size_t(((m * Cg + ci) * c.kh + i) * c.kw + j)];
                acc += t, mag += std::fabs(t);
              }
          float got = y[size_t(cl ? ((n * OH + oh) * OW + ow) * c.M + m : ((n * c.M + m) * OH + oh) * OW + ow)];
          ASSERT_LE(std::fabs(got - acc), 1e-5 + 1e-5 * mag) << "n=" << n << " m=" << m << " oh=" << oh << " ow=" << ow;
        }
}

/// Runs dscc_pool_f32 (kind 0 max, 1 avg) and compares with a naive loop.
void checkPool(dscc_context* ctx, const Win& c, int kind, bool include, unsigned seed, bool cl = false) {
  const int64_t OH = c.OH(), OW = c.OW();
  std::vector<float> x = randomData(size_t(c.N * c.C * c.H * c.W), seed);
  std::vector<float> y(size_t(c.N * c.C * OH * OW), std::numeric_limits<float>::quiet_NaN());
  int64_t xd[] = {c.N, c.C, c.H, c.W}, yd[] = {c.N, c.C, OH, OW}, k[] = {c.kh, c.kw};
  int64_t st[] = {c.sh, c.sw}, dl[] = {c.dh, c.dw}, pb[] = {c.pt, c.pl}, pe[] = {c.pb, c.pr};
  ASSERT_EQ(cl ? dscc_pool_f32_info(ctx, 2, kind, include, xd, x.data(), yd, y.data(), k, st, dl, pb, pe, 1, nullptr)
               : dscc_pool_f32(ctx, 2, kind, include, xd, x.data(), yd, y.data(), k, st, dl, pb, pe),
            DSCC_OK)
      << dscc_status_message(ctx);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ch = 0; ch < c.C; ++ch)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = kind == 0 ? -INFINITY : 0;
          int64_t inside = 0, padded = 0;
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              int64_t h = oh * c.sh - c.pt + i * c.dh, ww = ow * c.sw - c.pl + j * c.dw;
              padded += h < c.H + c.pb && ww < c.W + c.pr;
              if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
              ++inside;
              double v = x[size_t(cl ? ((n * c.H + h) * c.W + ww) * c.C + ch : ((n * c.C + ch) * c.H + h) * c.W + ww)];
              acc = kind == 0 ? std::max(acc, v) : acc + v;
            }
          if (kind == 1) acc /= double(include ? padded : inside);
          float got = y[size_t(cl ? ((n * OH + oh) * OW + ow) * c.C + ch : ((n * c.C + ch) * OH + oh) * OW + ow)];
          ASSERT_LE(std::fabs(got - acc), 1e-5 + 1e-5 * std::fabs(acc))
              << "kind " << kind << " n=" << n << " c=" << ch << " oh=" << oh << " ow=" << ow;
        }
}

/// Runs dscc_conv_transpose_f32 (pads_end with output_padding subtracted, either pad possibly negative) on random
/// data and compares with a naive scatter: x [N, C, H, W], w [C, M/group, kh, kw].
void checkConvTranspose(dscc_context* ctx, const Win& c, bool bias, unsigned seed) {
  const int64_t OH = c.sh * (c.H - 1) + c.dh * (c.kh - 1) + 1 - c.pt - c.pb;
  const int64_t OW = c.sw * (c.W - 1) + c.dw * (c.kw - 1) + 1 - c.pl - c.pr;
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  std::vector<float> x = randomData(size_t(c.N * c.C * c.H * c.W), seed);
  std::vector<float> w = randomData(size_t(c.C * Mg * c.kh * c.kw), seed + 1);
  std::vector<float> b = randomData(size_t(c.M), seed + 2);
  std::vector<float> y(size_t(c.N * c.M * OH * OW), std::numeric_limits<float>::quiet_NaN());
  std::vector<double> want(y.size(), 0.0), mag(y.size(), 0.0);
  int64_t xd[] = {c.N, c.C, c.H, c.W}, wd[] = {c.C, Mg, c.kh, c.kw}, yd[] = {c.N, c.M, OH, OW};
  int64_t st[] = {c.sh, c.sw}, dl[] = {c.dh, c.dw}, pb[] = {c.pt, c.pl}, pe[] = {c.pb, c.pr};
  ASSERT_EQ(dscc_conv_transpose_f32(ctx, 2, xd, x.data(), wd, w.data(), bias ? b.data() : nullptr, yd, y.data(),
                                    c.group, st, dl, pb, pe),
            DSCC_OK)
      << dscc_status_message(ctx);
  for (size_t q = 0; q < want.size(); ++q) want[q] = bias ? b[q / size_t(OH * OW) % size_t(c.M)] : 0.0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ci = 0; ci < c.C; ++ci)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t ww = 0; ww < c.W; ++ww)
          for (int64_t mo = 0; mo < Mg; ++mo)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t oh = h * c.sh + i * c.dh - c.pt, ow = ww * c.sw + j * c.dw - c.pl, m = ci / Cg * Mg + mo;
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                double t = double(x[size_t(((n * c.C + ci) * c.H + h) * c.W + ww)]) *
                           w[size_t(((ci * Mg + mo) * c.kh + i) * c.kw + j)];
                size_t q = size_t(((n * c.M + m) * OH + oh) * OW + ow);
                want[q] += t, mag[q] += std::fabs(t);
              }
  for (size_t q = 0; q < y.size(); ++q)
    ASSERT_LE(std::fabs(y[q] - want[q]), 1e-5 + 1e-5 * mag[q]) << "element " << q << " of " << y.size();
}

bool haveDnnl(dscc_context* ctx) {
  int64_t d[] = {1, 1, 1, 1}, one[] = {1, 1}, zero[] = {0, 0};
  float x = 1, w = 1, y = 0;
  return dscc_conv_f32(ctx, 2, d, &x, d, &w, nullptr, d, &y, 1, one, one, zero, zero) != DSCC_UNAVAILABLE;
}

TEST(RuntimeDnnl, ConvShapes) {
  for (int threads : {1, 3}) {
    ContextPtr ctx(dscc_context_create(threads));
    if (!haveDnnl(ctx.get())) GTEST_SKIP() << "runtime built without oneDNN";
    Win a;  // plain 3x3, no padding
    a.N = 2, a.C = 3, a.H = 7, a.W = 6, a.M = 5, a.kh = a.kw = 3;
    checkConv(ctx.get(), a, true, 1);
    Win b = a;  // stride, dilation, asymmetric pads
    b.sh = 2, b.dw = 2, b.pt = 1, b.pb = 0, b.pl = 2, b.pr = 1;
    checkConv(ctx.get(), b, false, 2);
    Win g = a;  // groups: 2 groups of 3 input and 2 output channels
    g.C = 6, g.M = 4, g.group = 2, g.pt = g.pb = g.pl = g.pr = 1;
    checkConv(ctx.get(), g, true, 3);
    Win dw = a;  // depthwise with a channel multiplier of 2
    dw.C = 4, dw.M = 8, dw.group = 4, dw.sh = dw.sw = 2, dw.pt = dw.pl = 1;
    checkConv(ctx.get(), dw, true, 4);
    Win one = a;  // the smallest input the window takes
    one.H = 3, one.W = 3;
    checkConv(ctx.get(), one, true, 5);
  }
}

// A constant weight (a nonzero key) used at many sizes and batch counts in one context: oneDNN's primitive for
// another size may want the weight in another blocked layout, and for one image the weight is sliced by output
// channels, so every (layout, slice) needs its own kept copy. Keying the copies by the weight's dims alone gave
// wrong results for ResNet-50 at 193x257 after 224x224 (bench_vision.py).
TEST(RuntimeDnnl, ConstantWeightAcrossSizes) {
  for (int threads : {1, 2, 3}) {
    ContextPtr ctx(dscc_context_create(threads));
    if (!haveDnnl(ctx.get())) GTEST_SKIP() << "runtime built without oneDNN";
    for (int64_t group : {int64_t(1), int64_t(64)}) {
      Win c;
      c.C = c.M = 64, c.group = group, c.kh = c.kw = 3, c.pt = c.pb = c.pl = c.pr = 1;
      const std::vector<float> w = randomData(size_t(c.M * (c.C / group) * 9), 77);
      unsigned seed = 100;
      for (auto [n, h, wd] : {std::tuple{1, 7, 7}, {4, 7, 7}, {1, 56, 56}, {1, 49, 65}, {3, 56, 56}, {1, 7, 7},
                              {2, 13, 29}, {1, 97, 129}}) {
        c.N = n, c.H = h, c.W = wd;
        checkConv(ctx.get(), c, true, seed++, &w, 0x1234);
      }
    }
    // ResNet-50's 256-channel 3x3 conv: for one image on two threads, oneDNN 2.6 (brgconv) blocks the 128-channel
    // slice's weight by 32 output channels at 14x14 and by 64 at 13x17 (ONEDNN_VERBOSE).
    Win r;
    r.C = r.M = 256, r.kh = r.kw = 3, r.pt = r.pb = r.pl = r.pr = 1;
    const std::vector<float> w = randomData(size_t(r.M * r.C * 9), 78);
    unsigned seed = 200;
    for (auto [h, wd] : {std::pair{14, 14}, {13, 17}, {14, 14}}) {
      r.H = h, r.W = wd;
      checkConv(ctx.get(), r, true, seed++, &w, 0x5678);
    }
  }
}

TEST(RuntimeDnnl, ConvTransposeShapes) {
  for (int threads : {1, 3}) {
    ContextPtr ctx(dscc_context_create(threads));
    if (!haveDnnl(ctx.get())) GTEST_SKIP() << "runtime built without oneDNN";
    Win a;  // plain 3x3
    a.N = 2, a.C = 3, a.H = 4, a.W = 5, a.M = 5, a.kh = a.kw = 3;
    checkConvTranspose(ctx.get(), a, true, 21);
    Win b = a;  // upsampling: stride 2, pads 1, output_padding 1 (end pads 0)
    b.sh = b.sw = 2, b.pt = b.pl = 1, b.kh = b.kw = 4;
    checkConvTranspose(ctx.get(), b, false, 22);
    Win g = a;  // groups and dilation, asymmetric pads
    g.C = 6, g.M = 4, g.group = 2, g.dh = 2, g.pt = 2, g.pr = 1;
    checkConvTranspose(ctx.get(), g, true, 23);
    Win neg = a;  // negative pads: output_padding beyond the stride, a derived negative begin pad
    neg.N = 1, neg.sh = 2, neg.sw = 3, neg.pb = -3, neg.pl = -1, neg.pr = -2;
    checkConvTranspose(ctx.get(), neg, true, 24);
    Win dw = a;  // one image, depthwise: slices of groups
    dw.N = 1, dw.C = 4, dw.M = 8, dw.group = 4, dw.sh = 2;
    checkConvTranspose(ctx.get(), dw, true, 25);
  }
  // A size the rule does not give is an error naming both.
  ContextPtr ctx(dscc_context_create(1));
  int64_t xd[] = {1, 1, 2, 2}, wd[] = {1, 1, 2, 2}, yd[] = {1, 1, 3, 4}, one[] = {1, 1}, zero[] = {0, 0};
  std::vector<float> x(4, 1.0f), w(4, 1.0f), y(12);
  EXPECT_EQ(dscc_conv_transpose_f32(ctx.get(), 2, xd, x.data(), wd, w.data(), nullptr, yd, y.data(), 1, one, one, zero,
                                    zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("output size 4 is not 3"), std::string::npos);
}

TEST(RuntimeDnnl, PoolShapes) {
  ContextPtr ctx(dscc_context_create(2));
  if (!haveDnnl(ctx.get())) GTEST_SKIP() << "runtime built without oneDNN";
  Win a;
  a.N = 2, a.C = 5, a.H = 7, a.W = 8, a.kh = a.kw = 3, a.sh = a.sw = 2, a.pt = a.pl = a.pb = a.pr = 1;
  for (int kind : {0, 1})
    for (bool inc : {false, true}) {
      checkPool(ctx.get(), a, kind, inc, 10);
      Win c = a;  // ceil mode: the last window reaches past the end padding
      c.ceil = true, c.H = 8, c.kh = 2, c.pb = 0;
      checkPool(ctx.get(), c, kind, inc, 11);
      Win d = a;  // dilated, a window mostly in the padding
      d.dh = 2, d.kw = 2, d.dw = 3, d.pt = 2, d.pr = 2, d.pl = 0, d.H = 3, d.W = 2;
      checkPool(ctx.get(), d, kind, inc, 12);
    }
}

// Channels-last calls (the layout pass's): one image split into bands of output rows over 1-4 threads (pads
// only at the true edges, a band reading rows its neighbour reads too), batches split by image, depthwise,
// strided and dilated windows, ceil-mode pools, and inputs so small that a band would lie in the padding.
TEST(RuntimeDnnl, ChannelsLast) {
  for (int threads : {1, 2, 3, 4}) {
    ContextPtr ctx(dscc_context_create(threads));
    unsigned seed = 500;
    Win a;  // 3x3, pad 1, odd sizes: bands of 3, 4 or 5 rows
    a.N = 1, a.C = 5, a.H = 13, a.W = 9, a.M = 7, a.kh = a.kw = 3, a.pt = a.pl = a.pb = a.pr = 1;
    checkConv(ctx.get(), a, true, seed++, nullptr, 0, true);
    Win s = a;  // stride 2, asymmetric pads, batch of 3
    s.N = 3, s.sh = s.sw = 2, s.pb = 0, s.pr = 2;
    checkConv(ctx.get(), s, false, seed++, nullptr, 0, true);
    Win dw;  // depthwise 5x5 stride 2, dilation 2 along H
    dw.N = 1, dw.C = dw.M = dw.group = 16, dw.H = 17, dw.W = 12, dw.kh = dw.kw = 5, dw.sh = dw.sw = 2, dw.dh = 2;
    dw.pt = dw.pb = 4, dw.pl = dw.pr = 2;
    checkConv(ctx.get(), dw, true, seed++, nullptr, 0, true);
    Win g = a;  // groups of 2 channels, 1x1 pointwise
    g.C = 8, g.M = 12, g.group = 4, g.kh = g.kw = 1, g.pt = g.pl = g.pb = g.pr = 0;
    checkConv(ctx.get(), g, true, seed++, nullptr, 0, true);
    Win tiny;  // 2 rows, pads larger than the input: bands would read only padding
    tiny.N = 1, tiny.C = 3, tiny.H = 2, tiny.W = 3, tiny.M = 4, tiny.kh = tiny.kw = 3, tiny.sh = 1;
    tiny.pt = tiny.pb = 2, tiny.pl = tiny.pr = 1;
    checkConv(ctx.get(), tiny, true, seed++, nullptr, 0, true);
    std::vector<float> w = randomData(size_t(a.M * a.C * 9), seed++);
    for (int rep = 0; rep < 2; ++rep) checkConv(ctx.get(), a, true, seed++, &w, 0x9abc, true);  // kept weight
    for (int kind : {0, 1})
      for (bool inc : {false, true}) {
        if (kind == 0 && inc) continue;
        Win p;  // 3x3 stride 2 pad 1, ceil mode: the last window reaches past the end padding
        p.N = 1, p.C = 6, p.H = 14, p.W = 11, p.kh = p.kw = 3, p.sh = p.sw = 2, p.pt = p.pl = p.pb = p.pr = 1;
        p.ceil = true;
        checkPool(ctx.get(), p, kind, inc, seed++, true);
        Win q = p;
        q.N = 2, q.ceil = false, q.pb = 0;
        checkPool(ctx.get(), q, kind, inc, seed++, true);
      }
  }
}

TEST(RuntimeDnnl, BadArguments) {
  ContextPtr ctx(dscc_context_create(1));
  int64_t xd[] = {1, 2, 4, 4}, wd[] = {3, 2, 3, 3}, yd[] = {1, 3, 2, 2}, one[] = {1, 1}, zero[] = {0, 0};
  std::vector<float> x(32, 1.0f), w(54, 1.0f), y(12);
  EXPECT_EQ(dscc_conv_f32(nullptr, 2, xd, x.data(), wd, w.data(), nullptr, yd, y.data(), 1, one, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_conv_f32(ctx.get(), 4, xd, x.data(), wd, w.data(), nullptr, yd, y.data(), 1, one, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  // Channels: 2 input channels, group 2 needs weights of 1 channel.
  EXPECT_EQ(dscc_conv_f32(ctx.get(), 2, xd, x.data(), wd, w.data(), nullptr, yd, y.data(), 2, one, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("channels do not match"), std::string::npos);
  // An output size the rule does not give.
  int64_t bad[] = {1, 3, 3, 2};
  EXPECT_EQ(dscc_conv_f32(ctx.get(), 2, xd, x.data(), wd, w.data(), nullptr, bad, y.data(), 1, one, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("output size 3 is neither 2"), std::string::npos);
  // A window larger than the padded input.
  int64_t small[] = {1, 2, 2, 4}, ys[] = {1, 3, 0, 2};
  EXPECT_EQ(dscc_conv_f32(ctx.get(), 2, small, x.data(), wd, w.data(), nullptr, ys, y.data(), 1, one, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("the window spans 3 elements, more than the padded input's 2"),
            std::string::npos);
  int64_t k[] = {3, 3};
  EXPECT_EQ(dscc_pool_f32(ctx.get(), 2, 2, 0, xd, x.data(), xd, y.data(), k, one, one, zero, zero), DSCC_INVALID_ARGUMENT);
  // An empty output computes nothing and reads no pointer.
  int64_t e[] = {0, 2, 4, 4}, ye[] = {0, 3, 2, 2};
  EXPECT_EQ(dscc_conv_f32(ctx.get(), 2, e, nullptr, wd, nullptr, nullptr, ye, nullptr, 1, one, one, zero, zero), DSCC_OK);
}

// Inputs with no elements whose padding still makes windows: conv gives its bias, max -inf, average NaN (0/0)
// or 0 with count_include_pad; no oneDNN call is made (it takes no empty tensors).
TEST(RuntimeDnnl, EmptyInputs) {
  ContextPtr ctx(dscc_context_create(2));
  int64_t xd[] = {1, 2, 0, 3}, wd[] = {2, 2, 2, 1}, yd[] = {1, 2, 1, 3}, one[] = {1, 1}, pb[] = {1, 0}, pe[] = {1, 0};
  float bias[] = {0.5f, -2.0f};
  std::vector<float> y(6, NAN);
  ASSERT_EQ(dscc_conv_f32(ctx.get(), 2, xd, nullptr, wd, nullptr, bias, yd, y.data(), 1, one, one, pb, pe), DSCC_OK)
      << dscc_status_message(ctx.get());
  EXPECT_EQ(y, (std::vector<float>{0.5f, 0.5f, 0.5f, -2.0f, -2.0f, -2.0f}));
  int64_t k[] = {2, 1};
  ASSERT_EQ(dscc_pool_f32(ctx.get(), 2, 0, 0, xd, nullptr, yd, y.data(), k, one, one, pb, pe), DSCC_OK);
  EXPECT_TRUE(std::isinf(y[0]) && y[0] < 0);
  ASSERT_EQ(dscc_pool_f32(ctx.get(), 2, 1, 0, xd, nullptr, yd, y.data(), k, one, one, pb, pe), DSCC_OK);
  EXPECT_TRUE(std::isnan(y[5]));
  ASSERT_EQ(dscc_pool_f32(ctx.get(), 2, 1, 1, xd, nullptr, yd, y.data(), k, one, one, pb, pe), DSCC_OK);
  EXPECT_EQ(y[3], 0.0f);
}

// Contexts on several threads at once, over more shapes than the cache holds (128): every result stays right.
TEST(RuntimeDnnl, ConcurrentCallsAndEviction) {
  {
    ContextPtr probe(dscc_context_create(1));
    if (!haveDnnl(probe.get())) GTEST_SKIP() << "runtime built without oneDNN";
  }
  std::vector<std::thread> ts;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t, &failures] {
      ContextPtr ctx(dscc_context_create(2));
      for (int i = 0; i < 40; ++i) {
        Win a;
        a.N = 1, a.C = 2, a.H = 3 + (i + 7 * t) % 37, a.W = 4 + (3 * i + t) % 5, a.M = 3, a.kh = a.kw = 3, a.pt = a.pl = 1;
        checkConv(ctx.get(), a, i % 2 == 0, unsigned(100 * t + i));
        failures[size_t(t)] += ::testing::Test::HasFailure();
      }
    });
  for (auto& th : ts) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
