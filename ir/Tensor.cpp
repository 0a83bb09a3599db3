// Concrete tensors: element access in every dtype and exact f16/bf16 rounding.
#include "ir/Tensor.h"

#include "ir/Sizes.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <limits>

namespace dscc {

namespace {

/// Rounds the exact value (neg ? -1 : 1) * mag * 2^e to nearest even in a small
/// binary format with `E` exponent bits and `M` mantissa bits, returning its
/// bits. Doing it from an exact integer significand, rather than going through
/// an intermediate float, avoids double-rounding errors at midpoints.
uint16_t roundToSmallFloat(bool neg, uint64_t mag, int e, int E, int M) {
  const uint16_t sign = neg ? uint16_t(1u << (E + M)) : 0;
  const uint32_t infBits = ((1u << E) - 1) << M;
  if (mag == 0) return sign;
  const int bias = (1 << (E - 1)) - 1;
  const int msb = 63 - std::countl_zero(mag);
  // The quantum (weight of the last mantissa bit) is either set by the
  // normalized exponent or, for subnormals, pinned at the minimum.
  const int minQuantumExp = 1 - bias - M;
  int shift = std::max(msb - M, minQuantumExp - e);
  uint64_t q;
  if (shift <= 0) {
    q = mag << -shift;
  } else if (shift > 64) {
    q = 0;  // below half of the smallest subnormal
  } else {
    q = shift == 64 ? 0 : mag >> shift;
    uint64_t rem = shift == 64 ? mag : mag & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  // With q's quantum at exponent e + shift, the encoding is linear in q even
  // across the subnormal/normal boundary and a rounding carry.
  int64_t exponentSteps = int64_t(e) + shift - minQuantumExp;
  uint64_t bits = (uint64_t(exponentSteps) << M) + q;
  if (bits >= infBits) return uint16_t(sign | infBits);
  return uint16_t(sign | bits);
}

/// Splits a finite double into an exact integer significand and exponent.
void decompose(double d, bool& neg, uint64_t& mag, int& e) {
  uint64_t x = std::bit_cast<uint64_t>(d);
  neg = (x >> 63) != 0;
  int exp = int((x >> 52) & 0x7FF);
  uint64_t frac = x & ((uint64_t(1) << 52) - 1);
  if (exp == 0) {
    mag = frac;
    e = -1074;
  } else {
    mag = frac | (uint64_t(1) << 52);
    e = exp - 1075;
  }
}

uint16_t doubleToHalf(double d) {
  if (std::isnan(d)) {
    // Keep the sign and the top payload bits; force the quiet bit so the
    // result cannot collapse to infinity.
    uint64_t x = std::bit_cast<uint64_t>(d);
    return uint16_t(((x >> 48) & 0x8000) | 0x7E00 | ((x >> 42) & 0x3FF));
  }
  if (std::isinf(d)) return d < 0 ? 0xFC00 : 0x7C00;
  bool neg;
  uint64_t mag;
  int e;
  decompose(d, neg, mag, e);
  return roundToSmallFloat(neg, mag, e, 5, 10);
}

uint16_t doubleToBF16(double d) {
  if (std::isnan(d)) {
    uint32_t x = std::bit_cast<uint32_t>(static_cast<float>(d));
    return uint16_t((x >> 16) | 0x0040);
  }
  if (std::isinf(d)) return d < 0 ? 0xFF80 : 0x7F80;
  bool neg;
  uint64_t mag;
  int e;
  decompose(d, neg, mag, e);
  return roundToSmallFloat(neg, mag, e, 8, 7);
}

uint16_t int64ToSmallFloat(int64_t v, int E, int M) {
  bool neg = v < 0;
  uint64_t mag = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  return roundToSmallFloat(neg, mag, 0, E, M);
}

/// Truncates toward zero into int64 without UB: NaN and infinities give 0,
/// finite values beyond the int64 range saturate (and are wrapped later).
int64_t truncToInt64(double v) {
  if (!std::isfinite(v)) return 0;
  double t = std::trunc(v);
  constexpr double two63 = 9223372036854775808.0;
  if (t >= two63) return std::numeric_limits<int64_t>::max();
  if (t < -two63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(t);
}

template <typename T> T load(const std::vector<uint8_t>& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + size_t(i) * sizeof(T), sizeof(T));
  return v;
}

template <typename T> void store(std::vector<uint8_t>& bytes, int64_t i, T v) {
  std::memcpy(bytes.data() + size_t(i) * sizeof(T), &v, sizeof(T));
}

}  // namespace

uint16_t floatToHalf(float f) { return doubleToHalf(f); }

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t frac = h & 0x3FF;
  if (exp == 0) {
    // Subnormal halves are exact multiples of 2^-24, all representable in float.
    float mag = std::ldexp(static_cast<float>(frac), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (frac << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (frac << 13));
}

uint16_t floatToBF16(float f) { return doubleToBF16(f); }

float bf16ToFloat(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

namespace {
int64_t gMemoryLimit = kDefaultMemoryLimit;
}  // namespace

int64_t memoryLimit() { return gMemoryLimit; }
void setMemoryLimit(int64_t bytes) { gMemoryLimit = bytes; }

Tensor Tensor::zeros(DType dt, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dt;
  t.shape = std::move(shape);
  std::string why = sizeProblem(t.shape, int64_t(dtypeSize(dt)), gMemoryLimit);
  if (!why.empty()) throw TensorSizeError(std::string(dtypeName(dt)) + " " + why);
  size_t bytes = size_t(t.numel()) * dtypeSize(dt);
  try {
    t.bytes.assign(bytes, 0);
  } catch (const std::bad_alloc&) {
    throw TensorSizeError("cannot allocate " + std::to_string(bytes) + " bytes for " + t.typeStr() +
                          ": out of memory");
  }
  return t;
}

int64_t Tensor::numel() const { return checkedNumel(shape).value_or(-1); }

double Tensor::getF(int64_t i) const {
  assert(i >= 0 && i < numel());
  switch (dtype) {
    case DType::F32: return load<float>(bytes, i);
    case DType::F16: return halfToFloat(load<uint16_t>(bytes, i));
    case DType::BF16: return bf16ToFloat(load<uint16_t>(bytes, i));
    case DType::F64: return load<double>(bytes, i);
    case DType::I64: return static_cast<double>(load<int64_t>(bytes, i));
    case DType::I32: return load<int32_t>(bytes, i);
    case DType::I8: return load<int8_t>(bytes, i);
    case DType::I1: return load<uint8_t>(bytes, i) != 0 ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::setF(int64_t i, double v) {
  assert(i >= 0 && i < numel());
  switch (dtype) {
    case DType::F32: store<float>(bytes, i, static_cast<float>(v)); return;
    case DType::F16: store<uint16_t>(bytes, i, doubleToHalf(v)); return;
    case DType::BF16: store<uint16_t>(bytes, i, doubleToBF16(v)); return;
    case DType::F64: store<double>(bytes, i, v); return;
    case DType::I64: case DType::I32: case DType::I8: setI(i, truncToInt64(v)); return;
    case DType::I1: store<uint8_t>(bytes, i, v != 0 ? 1 : 0); return;
  }
}

int64_t Tensor::getI(int64_t i) const {
  assert(i >= 0 && i < numel());
  switch (dtype) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::F64:
      return truncToInt64(getF(i));
    case DType::I64: return load<int64_t>(bytes, i);
    case DType::I32: return load<int32_t>(bytes, i);
    case DType::I8: return load<int8_t>(bytes, i);
    case DType::I1: return load<uint8_t>(bytes, i) != 0 ? 1 : 0;
  }
  return 0;
}

void Tensor::setI(int64_t i, int64_t v) {
  assert(i >= 0 && i < numel());
  // Narrowing integer conversions are modular since C++20, which is exactly
  // the wrap the IR specifies.
  switch (dtype) {
    case DType::F32: store<float>(bytes, i, static_cast<float>(v)); return;
    case DType::F16: store<uint16_t>(bytes, i, int64ToSmallFloat(v, 5, 10)); return;
    case DType::BF16: store<uint16_t>(bytes, i, int64ToSmallFloat(v, 8, 7)); return;
    case DType::F64: store<double>(bytes, i, static_cast<double>(v)); return;
    case DType::I64: store<int64_t>(bytes, i, v); return;
    case DType::I32: store<int32_t>(bytes, i, static_cast<int32_t>(v)); return;
    case DType::I8: store<int8_t>(bytes, i, static_cast<int8_t>(v)); return;
    case DType::I1: store<uint8_t>(bytes, i, v != 0 ? 1 : 0); return;
  }
}

std::string Tensor::typeStr() const {
  std::string s(dtypeName(dtype));
  s += '[';
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k) s += ", ";
    s += std::to_string(shape[k]);
  }
  s += ']';
  return s;
}

}  // namespace dscc
