// Unit tests for Tensor element access and the f16/bf16 conversions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "ir/Tensor.h"

using namespace dscc;

namespace {

float fbits(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }

uint16_t rawAt(const Tensor& t, int64_t i) { return t.data<uint16_t>()[i]; }

}  // namespace

TEST(HalfTest, KnownEncodings) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(0.5f), 0x3800);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(floatToHalf(0.1f), 0x2E66);
  EXPECT_EQ(floatToHalf(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(floatToHalf(fbits(1)), 0x0000);  // float subnormal underflows
}

TEST(HalfTest, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half: ties go to even (1).
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3*2^-11 lies halfway between 0x3C01 and 0x3C02: even is 0x3C02.
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above the midpoint rounds up.
  EXPECT_EQ(floatToHalf(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  // 65520 is halfway between 65504 (odd mantissa) and 65536, which overflows.
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);
  // Subnormal ties: 2^-25 ties to 0, 3*2^-25 ties to 2*2^-24.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalf(-std::ldexp(3.0f, -25)), 0x8002);
  // The largest subnormal plus half a step carries into the smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(2047.0f, -25)), 0x0400);
}

TEST(HalfTest, NaN) {
  uint16_t h = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  // A NaN whose payload lives only in the low float bits must not become inf.
  h = floatToHalf(fbits(0x7F800001));
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0xFC01)));
}

TEST(HalfTest, Decoding) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bitsOf(halfToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(bitsOf(halfToFloat(0x8001)), bitsOf(-std::ldexp(1.0f, -24)));
}

TEST(HalfTest, EveryHalfRoundTripsAndIsOrdered) {
  float prev = -std::numeric_limits<float>::infinity();
  // Walk the positive halves in increasing order; each decodes exactly and
  // re-encodes to itself, and the decoded values strictly increase.
  for (uint32_t h = 0; h <= 0x7C00; ++h) {
    float f = halfToFloat(uint16_t(h));
    ASSERT_EQ(floatToHalf(f), h) << std::hex << h;
    ASSERT_EQ(floatToHalf(-f), h | 0x8000) << std::hex << h;
    if (h > 0) {
      ASSERT_GT(f, prev) << std::hex << h;
    }
    prev = f;
  }
}

TEST(BF16Test, KnownEncodings) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBF16(-2.0f), 0xC000);
  EXPECT_EQ(floatToBF16(0.0f), 0x0000);
  EXPECT_EQ(floatToBF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(floatToBF16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(floatToBF16(3.140625f), 0x4049);
  // Ties to even: lower half exactly 0x8000.
  EXPECT_EQ(floatToBF16(fbits(0x3F808000)), 0x3F80);
  EXPECT_EQ(floatToBF16(fbits(0x3F818000)), 0x3F82);
  EXPECT_EQ(floatToBF16(fbits(0x3F808001)), 0x3F81);
  EXPECT_EQ(floatToBF16(fbits(0x3F807FFF)), 0x3F80);
  // FLT_MAX is above the largest bf16 plus half a step, so it rounds to inf.
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBF16(fbits(0x7F7F7FFF)), 0x7F7F);
  // Subnormals round too.
  EXPECT_EQ(floatToBF16(fbits(0x00000001)), 0x0000);
  EXPECT_EQ(floatToBF16(fbits(0x00018000)), 0x0002);
  EXPECT_EQ(floatToBF16(fbits(0x00008000)), 0x0000);
  EXPECT_EQ(floatToBF16(fbits(0x00008001)), 0x0001);
}

TEST(BF16Test, NaNStaysNaN) {
  // Naive rounding of these payloads would carry into infinity or zero them.
  for (uint32_t b : {0x7F800001u, 0x7FFFFFFFu, 0xFF800001u, 0x7FC00000u, 0x7F80FFFFu}) {
    uint16_t h = floatToBF16(fbits(b));
    EXPECT_EQ(h & 0x7F80, 0x7F80) << std::hex << b;
    EXPECT_NE(h & 0x007F, 0) << std::hex << b;
    EXPECT_EQ(h & 0x8000, (b >> 16) & 0x8000) << std::hex << b;
    EXPECT_TRUE(std::isnan(bf16ToFloat(h)));
  }
}

TEST(BF16Test, MatchesReferenceRoundingOnRandomFloats) {
  std::mt19937 rng(7);
  for (int k = 0; k < 200000; ++k) {
    uint32_t b = rng();
    float f = fbits(b);
    if (std::isnan(f)) continue;
    // The well-known integer trick; valid for all non-NaN inputs.
    uint16_t ref = uint16_t((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
    ASSERT_EQ(floatToBF16(f), ref) << std::hex << b;
    ASSERT_EQ(bitsOf(bf16ToFloat(ref)), uint32_t(ref) << 16);
  }
}

TEST(TensorTest, ZerosAndNumel) {
  Tensor t = Tensor::zeros(DType::F32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.rank(), 2u);
  EXPECT_EQ(t.bytes.size(), 24u);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.getF(i), 0.0);

  Tensor s = Tensor::zeros(DType::I64, {});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.bytes.size(), 8u);

  Tensor e = Tensor::zeros(DType::BF16, {4, 0, 5});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.bytes.empty());

  EXPECT_EQ(Tensor::zeros(DType::I1, {7}).bytes.size(), 7u);
  EXPECT_EQ(Tensor::zeros(DType::F16, {7}).bytes.size(), 14u);
}

TEST(TensorTest, TypeStr) {
  EXPECT_EQ(Tensor::zeros(DType::F32, {2, 3}).typeStr(), "f32[2, 3]");
  EXPECT_EQ(Tensor::zeros(DType::F32, {}).typeStr(), "f32[]");
  EXPECT_EQ(Tensor::zeros(DType::BF16, {7}).typeStr(), "bf16[7]");
  EXPECT_EQ(Tensor::zeros(DType::I1, {1, 0, 2}).typeStr(), "i1[1, 0, 2]");
}

TEST(TensorTest, FloatStorage) {
  Tensor t = Tensor::zeros(DType::F32, {3});
  t.setF(0, 0.1);
  EXPECT_EQ(t.data<float>()[0], 0.1f);
  EXPECT_EQ(t.getF(0), double(0.1f));
  t.setF(1, -2.7);
  EXPECT_EQ(t.getI(1), -2);
  t.setF(2, 1e300);
  EXPECT_TRUE(std::isinf(t.getF(2)));

  Tensor h = Tensor::zeros(DType::F16, {3});
  h.setF(0, 1.0);
  EXPECT_EQ(rawAt(h, 0), 0x3C00);
  h.setF(1, 1.0 / 3.0);
  EXPECT_EQ(rawAt(h, 1), 0x3555);
  EXPECT_EQ(h.getF(1), 0.333251953125);  // widened exactly
  // Rounding straight from the double: going through float would first land
  // on the midpoint 1 + 2^-11 and then tie down to 1.
  h.setF(2, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40));
  EXPECT_EQ(rawAt(h, 2), 0x3C01);

  Tensor b = Tensor::zeros(DType::BF16, {3});
  b.setF(0, 1.0);
  EXPECT_EQ(rawAt(b, 0), 0x3F80);
  b.setF(1, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40));
  EXPECT_EQ(rawAt(b, 1), 0x3F81);
  b.setF(2, std::nan(""));
  EXPECT_TRUE(std::isnan(b.getF(2)));

  Tensor d = Tensor::zeros(DType::F64, {1});
  d.setF(0, 0.1);
  EXPECT_EQ(d.getF(0), 0.1);
  EXPECT_EQ(d.data<double>()[0], 0.1);
}

TEST(TensorTest, SetFTruncatesAndWraps) {
  Tensor t = Tensor::zeros(DType::I32, {1});
  t.setF(0, 3.9);
  EXPECT_EQ(t.getI(0), 3);
  t.setF(0, -3.9);
  EXPECT_EQ(t.getI(0), -3);
  t.setF(0, 4294967301.0);  // 2^32 + 5
  EXPECT_EQ(t.getI(0), 5);
  t.setF(0, 2147483648.0);  // 2^31
  EXPECT_EQ(t.getI(0), std::numeric_limits<int32_t>::min());

  Tensor b = Tensor::zeros(DType::I8, {1});
  b.setF(0, 300.0);
  EXPECT_EQ(b.getI(0), 44);
  b.setF(0, -129.0);
  EXPECT_EQ(b.getI(0), 127);
  b.setF(0, -0.99);
  EXPECT_EQ(b.getI(0), 0);
  // Out of int64 range saturates first, then wraps: INT64_MAX's low byte is 0xFF.
  b.setF(0, 1e30);
  EXPECT_EQ(b.getI(0), -1);
  b.setF(0, -1e30);
  EXPECT_EQ(b.getI(0), 0);

  Tensor l = Tensor::zeros(DType::I64, {1});
  l.setF(0, 1e30);
  EXPECT_EQ(l.getI(0), std::numeric_limits<int64_t>::max());
  l.setF(0, -1e30);
  EXPECT_EQ(l.getI(0), std::numeric_limits<int64_t>::min());
  l.setF(0, 9223372036854775808.0);
  EXPECT_EQ(l.getI(0), std::numeric_limits<int64_t>::max());
  l.setF(0, -9223372036854775808.0);
  EXPECT_EQ(l.getI(0), std::numeric_limits<int64_t>::min());
  l.setF(0, -123456789012.75);
  EXPECT_EQ(l.getI(0), -123456789012);
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    l.setI(0, 99);
    l.setF(0, bad);
    EXPECT_EQ(l.getI(0), 0);
  }

  Tensor p = Tensor::zeros(DType::I1, {1});
  p.setF(0, 0.5);
  EXPECT_EQ(p.bytes[0], 1);
  p.setF(0, 0.0);
  EXPECT_EQ(p.bytes[0], 0);
  p.setF(0, -3.0);
  EXPECT_EQ(p.getI(0), 1);
  EXPECT_EQ(p.getF(0), 1.0);
}

TEST(TensorTest, SetIWraps) {
  Tensor t = Tensor::zeros(DType::I32, {1});
  t.setI(0, (int64_t(1) << 32) + 5);
  EXPECT_EQ(t.getI(0), 5);
  t.setI(0, 0x80000000LL);
  EXPECT_EQ(t.getI(0), std::numeric_limits<int32_t>::min());
  t.setI(0, -1);
  EXPECT_EQ(t.data<int32_t>()[0], -1);

  Tensor b = Tensor::zeros(DType::I8, {1});
  b.setI(0, 255);
  EXPECT_EQ(b.getI(0), -1);
  b.setI(0, 128);
  EXPECT_EQ(b.getI(0), -128);
  b.setI(0, -1000);
  EXPECT_EQ(b.getI(0), 24);
  EXPECT_EQ(b.getF(0), 24.0);

  Tensor l = Tensor::zeros(DType::I64, {1});
  l.setI(0, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(l.getI(0), std::numeric_limits<int64_t>::min());

  Tensor p = Tensor::zeros(DType::I1, {1});
  p.setI(0, -7);
  EXPECT_EQ(p.bytes[0], 1);
  p.setI(0, 256);  // nonzero even though its low byte is zero
  EXPECT_EQ(p.bytes[0], 1);
  p.setI(0, 0);
  EXPECT_EQ(p.bytes[0], 0);
}

TEST(TensorTest, SetIIntoFloats) {
  Tensor h = Tensor::zeros(DType::F16, {1});
  h.setI(0, 2049);  // halfway between 2048 and 2050: even is 2048
  EXPECT_EQ(rawAt(h, 0), 0x6800);
  h.setI(0, 2051);  // halfway between 2050 and 2052: even is 2052
  EXPECT_EQ(rawAt(h, 0), 0x6802);
  h.setI(0, -65504);
  EXPECT_EQ(rawAt(h, 0), 0xFBFF);
  h.setI(0, 70000);
  EXPECT_EQ(rawAt(h, 0), 0x7C00);
  h.setI(0, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(rawAt(h, 0), 0xFC00);

  Tensor b = Tensor::zeros(DType::BF16, {1});
  b.setI(0, 257);
  EXPECT_EQ(rawAt(b, 0), 0x4380);
  b.setI(0, 259);
  EXPECT_EQ(rawAt(b, 0), 0x4382);
  b.setI(0, std::numeric_limits<int64_t>::max());  // rounds up to 2^63
  EXPECT_EQ(rawAt(b, 0), 0x5F00);
  b.setI(0, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(rawAt(b, 0), 0xDF00);

  Tensor f = Tensor::zeros(DType::F32, {1});
  f.setI(0, 16777217);  // 2^24 + 1 ties to 2^24
  EXPECT_EQ(f.getF(0), 16777216.0);
  Tensor d = Tensor::zeros(DType::F64, {1});
  d.setI(0, -42);
  EXPECT_EQ(d.getF(0), -42.0);
}

TEST(TensorTest, GetIFromFloats) {
  Tensor t = Tensor::zeros(DType::F32, {4});
  t.setF(0, -2.7);
  t.setF(1, std::nan(""));
  t.setF(2, 1e30);
  t.setF(3, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(t.getI(0), -2);
  EXPECT_EQ(t.getI(1), 0);
  EXPECT_EQ(t.getI(2), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.getI(3), 0);

  Tensor h = Tensor::zeros(DType::F16, {2});
  h.setF(0, 65504.0);
  h.setF(1, -0.75);
  EXPECT_EQ(h.getI(0), 65504);
  EXPECT_EQ(h.getI(1), 0);

  Tensor b = Tensor::zeros(DType::BF16, {1});
  b.setF(0, -300.0);
  EXPECT_EQ(b.getI(0), -300);
}
