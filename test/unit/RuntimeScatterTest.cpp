// dscc_scatter and dscc_cumsum against plain references: the parallel paths (column blocks on 1 and 3 threads,
// repeated rows still in index order), f16 and bf16 rounding to nearest even (ties, overflow to infinity,
// subnormals), an out-of-range index refused before any write, and bad arguments with their messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
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

uint16_t halfBits(float f) {  // exact for the values used here (all representable in f16)
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int e = int((x >> 23) & 0xFF) - 127;
  if (f == 0) return uint16_t(sign);
  if (e < -14) return uint16_t(sign | uint32_t(std::ldexp(std::fabs(f), 24)));  // subnormal
  return uint16_t(sign | uint32_t(e + 15) << 10 | ((x >> 13) & 0x3FF));
}

// Large enough for the parallel paths: more than one block of 1024 columns and at least 2^16 update elements.
TEST(RuntimeScatter, ParallelAddMatchesSerialOrder) {
  const int64_t rows = 7, count = 30, inner = 3000;
  std::mt19937 g(36);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> data(rows * inner), upd(count * inner);
  for (float& v : data) v = u(g);
  for (float& v : upd) v = u(g);
  std::vector<int64_t> idx(count);
  for (int64_t m = 0; m < count; ++m) idx[m] = int64_t(g() % (2 * rows)) - rows;
  for (int reduction : {0, 1, 3}) {
    std::vector<float> want = data;
    for (int64_t m = 0; m < count; ++m) {
      const int64_t r = idx[m] < 0 ? idx[m] + rows : idx[m];
      for (int64_t j = 0; j < inner; ++j) {
        float& o = want[r * inner + j];
        const float v = upd[m * inner + j];
        o = reduction == 0 ? v : reduction == 1 ? o + v : std::max(o, v);
      }
    }
    for (int threads : {1, 3}) {
      ContextPtr ctx(dscc_context_create(threads));
      std::vector<float> out(rows * inner, NAN);
      ASSERT_EQ(dscc_scatter(ctx.get(), DSCC_F32, reduction, DSCC_I64, rows, count, inner, data.data(), idx.data(),
                             upd.data(), out.data()),
                DSCC_OK);
      EXPECT_EQ(std::memcmp(out.data(), want.data(), out.size() * 4), 0) << "reduction " << reduction << ", threads " << threads;
    }
  }
}

TEST(RuntimeScatter, OutOfRangeWritesNothing) {
  ContextPtr ctx(dscc_context_create(2));
  std::vector<int32_t> data{1, 2, 3, 4}, upd{9, 9}, out(4, -1);
  std::vector<int32_t> idx{-4, 0};  // both row 0
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_I32, 0, DSCC_I32, 4, 2, 1, data.data(), idx.data(), upd.data(), out.data()),
            DSCC_OK);
  EXPECT_EQ(out, (std::vector<int32_t>{9, 2, 3, 4}));
  idx = {0, 5};
  std::fill(out.begin(), out.end(), -1);
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_I32, 1, DSCC_I32, 4, 2, 1, data.data(), idx.data(), upd.data(), out.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("scatter index 5 (update 1) is out of range for dim 0 of size 4"),
            std::string::npos);
  EXPECT_EQ(out, (std::vector<int32_t>(4, -1)));
  // No rows: any index is out of range, even for rows without elements.
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_F32, 0, DSCC_I64, 0, 1, 0, nullptr, std::vector<int64_t>{0}.data(), nullptr,
                         nullptr),
            DSCC_INVALID_ARGUMENT);
}

TEST(RuntimeScatter, SmallFloatsRoundToNearestEven) {
  ContextPtr ctx(dscc_context_create(1));
  // f16 running sums: 1 + 2^-11 is a tie (stays 1), 1 + 3*2^-11 rounds up to even, 65504 + 16 (a tie with
  // 65536) overflows, and subnormals add exactly.
  struct Sum { float a, b, want; };
  const Sum sums[] = {{1.0f, std::ldexp(1.0f, -11), 1.0f}, {1.0f, 3 * std::ldexp(1.0f, -11), 1.0f + std::ldexp(1.0f, -9)},
                      {65504.0f, 16.0f, INFINITY}, {std::ldexp(1.0f, -24), std::ldexp(3.0f, -24), std::ldexp(1.0f, -22)}};
  for (const Sum& s : sums) {
    std::vector<uint16_t> x{halfBits(s.a), halfBits(s.b)}, y(2);
    ASSERT_EQ(dscc_cumsum(ctx.get(), DSCC_F16, 0, 0, 1, 2, 1, x.data(), y.data()), DSCC_OK);
    EXPECT_EQ(y[1], std::isinf(s.want) ? uint16_t(0x7C00) : halfBits(s.want)) << s.a << " + " << s.b;
  }
  // bf16: 1 + 2^-8 is a tie (stays 1), 1 + 3*2^-8 rounds up to 1 + 2^-6.
  std::vector<uint16_t> x{0x3F80, 0x3B80}, y(2);  // 1, 2^-8
  ASSERT_EQ(dscc_cumsum(ctx.get(), DSCC_BF16, 0, 0, 1, 2, 1, x.data(), y.data()), DSCC_OK);
  EXPECT_EQ(y[1], 0x3F80);
  x = {0x3F80, 0x3C40};  // 1, 3*2^-8
  ASSERT_EQ(dscc_cumsum(ctx.get(), DSCC_BF16, 0, 0, 1, 2, 1, x.data(), y.data()), DSCC_OK);
  EXPECT_EQ(y[1], 0x3F82);
}

TEST(RuntimeCumsum, ParallelMatchesReference) {
  const int64_t outer = 5, len = 300, inner = 2500;
  std::mt19937 g(37);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(outer * len * inner);
  for (float& v : x) v = u(g);
  for (int excl = 0; excl < 2; ++excl)
    for (int rev = 0; rev < 2; ++rev) {
      std::vector<float> want(x.size());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double s = 0;
          for (int64_t k = 0; k < len; ++k) {
            const int64_t t = rev ? len - 1 - k : k, e = (o * len + t) * inner + i;
            if (excl) want[e] = float(s);
            s += x[e];
            if (!excl) want[e] = float(s);
          }
        }
      for (int threads : {1, 3}) {
        ContextPtr ctx(dscc_context_create(threads));
        std::vector<float> y(x.size(), NAN);
        ASSERT_EQ(dscc_cumsum(ctx.get(), DSCC_F32, excl, rev, outer, len, inner, x.data(), y.data()), DSCC_OK);
        EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * 4), 0) << excl << rev << " threads " << threads;
      }
    }
  // Integers wrap: i8 100 + 100 = -56.
  ContextPtr ctx(dscc_context_create(1));
  std::vector<int8_t> a{100, 100}, b(2);
  ASSERT_EQ(dscc_cumsum(ctx.get(), DSCC_I8, 0, 0, 1, 2, 1, a.data(), b.data()), DSCC_OK);
  EXPECT_EQ(b[1], int8_t(-56));
}

TEST(RuntimeScatter, BadArguments) {
  ContextPtr ctx(dscc_context_create(1));
  std::vector<float> d(4), u(2), o(4);
  std::vector<int64_t> i{0, 1};
  EXPECT_EQ(dscc_scatter(nullptr, DSCC_F32, 0, DSCC_I64, 4, 2, 1, d.data(), i.data(), u.data(), o.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_F32, 5, DSCC_I64, 4, 2, 1, d.data(), i.data(), u.data(), o.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_I1, 1, DSCC_I64, 4, 2, 1, d.data(), i.data(), u.data(), o.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_F32, 0, DSCC_F32, 4, 2, 1, d.data(), i.data(), u.data(), o.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("out of range"), std::string::npos);
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_F32, 0, DSCC_I64, -1, 2, 1, d.data(), i.data(), u.data(), o.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_scatter(ctx.get(), DSCC_F32, 0, DSCC_I64, 4, 2, 1, d.data(), i.data(), nullptr, o.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("is NULL"), std::string::npos);
  EXPECT_EQ(dscc_cumsum(ctx.get(), DSCC_I1, 0, 0, 1, 4, 1, d.data(), o.data()), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_cumsum(ctx.get(), DSCC_F32, 0, 0, 1, -4, 1, d.data(), o.data()), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_cumsum(ctx.get(), DSCC_F32, 0, 0, 1, 4, 1, nullptr, o.data()), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_cumsum(ctx.get(), DSCC_F32, 0, 0, 1, 0, 1, nullptr, nullptr), DSCC_OK);  // empty
}

}  // namespace
