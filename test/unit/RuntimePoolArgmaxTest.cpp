// dscc_pool_argmax_f32 (MaxPool's Indices) against a plain reference over every kernel point: ties, NaNs, pads, ceil mode, dilations, storage_order, windows with no input point, 1 and 3 threads, bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/dscc_runtime.h"

namespace {

struct ContextDeleter {
  void operator()(dscc_context* ctx) const { dscc_context_release(ctx); }
};
using ContextPtr = std::unique_ptr<dscc_context, ContextDeleter>;

struct Geometry {
  std::vector<int64_t> x, k, s, d, pb, pe;  // x: [N, C, spatial...]; the others per spatial dim
  bool ceil = false;
  int32_t order = 0;
};

// ONNX's output size (floor, or ceil with the last window starting inside the input or the begin padding).
int64_t outSize(const Geometry& g, size_t i) {
  const int64_t room = g.x[2 + i] + g.pb[i] + g.pe[i] - (g.d[i] * (g.k[i] - 1) + 1);
  if (!g.ceil) return room / g.s[i] + 1;
  int64_t o = (room + g.s[i] - 1) / g.s[i] + 1;
  if ((o - 1) * g.s[i] >= g.x[2 + i] + g.pb[i]) --o;
  return o;
}

// Every kernel point in row-major order, the padding skipped; the first point, then a NaN over a number, then a
// strictly greater number wins.
std::vector<int64_t> reference(const Geometry& g, const std::vector<float>& x, std::vector<int64_t>& ydims) {
  const size_t n = g.k.size();
  ydims = {g.x[0], g.x[1]};
  for (size_t i = 0; i < n; ++i) ydims.push_back(outSize(g, i));
  int64_t plane = 1, outPlane = 1, kpts = 1;
  for (size_t i = 0; i < n; ++i) plane *= g.x[2 + i], outPlane *= ydims[2 + i], kpts *= g.k[i];
  std::vector<int64_t> y;
  for (int64_t p = 0; p < g.x[0] * g.x[1]; ++p)
    for (int64_t q = 0; q < outPlane; ++q) {
      std::vector<int64_t> o(n);
      for (size_t i = n, r = size_t(q); i-- > 0;) o[i] = int64_t(r) % ydims[2 + i], r /= size_t(ydims[2 + i]);
      int64_t best = -1;
      float bv = 0;
      for (int64_t t = 0; t < kpts; ++t) {
        std::vector<int64_t> kk(n);
        for (size_t i = n, r = size_t(t); i-- > 0;) kk[i] = int64_t(r) % g.k[i], r /= size_t(g.k[i]);
        int64_t row = 0, col = 0, colStride = 1;
        bool inside = true;
        for (size_t i = 0; i < n; ++i) {
          const int64_t pos = o[i] * g.s[i] - g.pb[i] + kk[i] * g.d[i];
          inside = inside && pos >= 0 && pos < g.x[2 + i];
          row = row * g.x[2 + i] + pos;
          col += pos * colStride;
          colStride *= g.x[2 + i];
        }
        if (!inside) continue;
        const float v = x[size_t(p * plane + row)];
        if (best < 0 || (std::isnan(v) && !std::isnan(bv)) || (!std::isnan(bv) && v > bv))
          best = p * plane + (g.order == 1 ? col : row), bv = v;
      }
      y.push_back(best);
    }
  return y;
}

void check(const Geometry& g, int threads, uint32_t seed) {
  ContextPtr ctx(dscc_context_create(threads));
  ASSERT_TRUE(ctx);
  std::mt19937 rng(seed);
  int64_t numel = 1;
  for (int64_t v : g.x) numel *= v;
  std::vector<float> x(static_cast<size_t>(numel));
  for (float& v : x) {
    const uint32_t r = rng() % 16;
    v = r == 0 ? NAN : r == 1 ? -INFINITY : float(int(rng() % 5) - 2);  // few values: ties
  }
  std::vector<int64_t> ydims;
  const std::vector<int64_t> want = reference(g, x, ydims);
  std::vector<int64_t> y(want.size() + 8, 12345);
  ASSERT_EQ(dscc_pool_argmax_f32(ctx.get(), int32_t(g.k.size()), g.order, g.x.data(), x.data(), ydims.data(),
                                 y.data(), g.k.data(), g.s.data(), g.d.data(), g.pb.data(), g.pe.data()),
            DSCC_OK)
      << dscc_status_message(ctx.get());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(y[i], want[i]) << "element " << i;
  for (size_t i = want.size(); i < y.size(); ++i) ASSERT_EQ(y[i], 12345) << "write past the result";
}

TEST(RuntimePoolArgmax, MatchesReference) {
  std::vector<Geometry> gs = {
      // 2-D pads (ONNX's precomputed_pads), both storage orders.
      {{2, 3, 5, 5}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, false, 0},
      {{2, 3, 5, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, 1},
      // Strides and ceil mode past the end; dilations.
      {{1, 2, 7, 6}, {2, 3}, {2, 2}, {1, 1}, {0, 1}, {0, 0}, true, 1},
      {{1, 2, 6, 7}, {2, 2}, {1, 2}, {2, 3}, {2, 0}, {1, 2}, false, 0},
      // Pads beyond the dilated kernel's reach: windows with no input point (-1).
      {{1, 2, 3}, {2}, {1}, {2}, {3}, {3}, false, 0},
      // 3-D, ceil mode, column-major.
      {{1, 2, 3, 4, 5}, {2, 2, 3}, {1, 2, 2}, {1, 1, 1}, {1, 0, 1}, {0, 1, 1}, true, 1},
      // Large enough to be split over the threads (one image, many rows).
      {{1, 1, 300, 200}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, 0},
      {{2, 3, 61, 47}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {1, 1}, true, 1},
  };
  uint32_t seed = 1;
  for (const Geometry& g : gs)
    for (int threads : {1, 3}) {
      SCOPED_TRACE("geometry " + std::to_string(seed) + ", " + std::to_string(threads) + " threads");
      check(g, threads, seed++);
    }
}

TEST(RuntimePoolArgmax, EmptyInputGivesMinusOne) {
  ContextPtr ctx(dscc_context_create(1));
  const int64_t xd[] = {1, 2, 0}, yd[] = {1, 2, 2}, k[] = {1}, one[] = {1}, pb[] = {1}, pe[] = {1};
  std::vector<int64_t> y(4, 7);
  ASSERT_EQ(dscc_pool_argmax_f32(ctx.get(), 1, 0, xd, nullptr, yd, y.data(), k, one, one, pb, pe), DSCC_OK);
  for (int64_t v : y) EXPECT_EQ(v, -1);
}

TEST(RuntimePoolArgmax, BadArguments) {
  ContextPtr ctx(dscc_context_create(1));
  const int64_t xd[] = {1, 1, 4, 4}, yd[] = {1, 1, 2, 2}, k[] = {2, 2}, two[] = {2, 2}, one[] = {1, 1},
                zero[] = {0, 0};
  std::vector<float> x(16, 0.0f);
  std::vector<int64_t> y(4);
  EXPECT_EQ(dscc_pool_argmax_f32(ctx.get(), 2, 2, xd, x.data(), yd, y.data(), k, two, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("storage_order 0 or 1"), std::string::npos);
  const int64_t wrong[] = {1, 1, 3, 2};
  EXPECT_EQ(dscc_pool_argmax_f32(ctx.get(), 2, 0, xd, x.data(), wrong, y.data(), k, two, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("output size 3"), std::string::npos)
      << dscc_status_message(ctx.get());
  const int64_t big[] = {5, 5};
  EXPECT_EQ(dscc_pool_argmax_f32(ctx.get(), 2, 0, xd, x.data(), yd, y.data(), big, two, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_pool_argmax_f32(nullptr, 2, 0, xd, x.data(), yd, y.data(), k, two, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_pool_argmax_f32(ctx.get(), 4, 0, xd, x.data(), yd, y.data(), k, two, one, zero, zero),
            DSCC_INVALID_ARGUMENT);
}

}  // namespace
