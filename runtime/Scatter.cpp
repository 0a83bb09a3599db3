// dscc_scatter and dscc_cumsum: the data-dependent write (a copy of the data, then rows replaced or combined at
// indices read from memory, every index checked first) and the running sum, for every dtype.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/Context.h"
#include "runtime/dscc_runtime.h"

namespace dscc::runtime {
namespace {

// f16/bf16 <-> double, rounding to nearest even exactly as the interpreter's Tensor does (ir/Tensor.cpp), so a
// compiled scatter or cumsum of 16-bit floats stores the interpreter's bits.
double halfBitsToDouble(uint16_t h, bool bf16) {
  if (bf16) return double(std::bit_cast<float>(uint32_t(h) << 16));
  const uint32_t sign = h & 0x8000, exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  double mag = exp == 0 ? std::ldexp(double(frac), -24)
               : exp == 31 ? (frac ? std::nan("") : INFINITY)
                           : std::ldexp(double(frac | 0x400), int(exp) - 25);
  return sign ? -mag : mag;
}

// Rounds `d` to the format of E exponent and M mantissa bits (to nearest, ties to even), overflowing to infinity.
uint16_t doubleToSmall(double d, bool bf16) {
  const int E = bf16 ? 8 : 5, M = bf16 ? 7 : 10;
  const uint16_t sign = std::signbit(d) ? uint16_t(1u << (E + M)) : 0, expMask = uint16_t(((1u << E) - 1) << M);
  if (std::isnan(d)) {
    if (bf16) return uint16_t((std::bit_cast<uint32_t>(float(d)) >> 16) | 0x0040);
    const uint64_t x = std::bit_cast<uint64_t>(d);
    return uint16_t(((x >> 48) & 0x8000) | 0x7E00 | ((x >> 42) & 0x3FF));
  }
  const int bias = (1 << (E - 1)) - 1, emin = 1 - bias;
  double a = std::fabs(d);
  if (std::isinf(a)) return sign | expMask;
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): a's exponent is e - 1
  const int ex = std::max(e - 1, emin);
  const double r = std::nearbyint(std::ldexp(a, M - ex));  // the significand in units of the last place
  double rounded = std::ldexp(r, ex - M);
  if (rounded >= std::ldexp(1.0, bias + 1)) return sign | expMask;
  if (rounded == 0) return sign;
  std::frexp(rounded, &e);
  const int ex2 = e - 1;
  if (ex2 < emin) return sign | uint16_t(std::ldexp(rounded, M - emin));  // subnormal
  return sign | uint16_t((ex2 + bias) << M) | uint16_t(uint64_t(std::ldexp(rounded, M - ex2)) - (uint64_t(1) << M));
}

// Element access by dtype: floats as double, integers as int64 (stores wrap to the width, i1 is != 0).
double loadF(int32_t dt, const void* p, int64_t i) {
  switch (dt) {
    case DSCC_F32: return static_cast<const float*>(p)[i];
    case DSCC_F64: return static_cast<const double*>(p)[i];
    case DSCC_F16: return halfBitsToDouble(static_cast<const uint16_t*>(p)[i], false);
    default: return halfBitsToDouble(static_cast<const uint16_t*>(p)[i], true);
  }
}

void storeF(int32_t dt, void* p, int64_t i, double v) {
  switch (dt) {
    case DSCC_F32: static_cast<float*>(p)[i] = float(v); return;
    case DSCC_F64: static_cast<double*>(p)[i] = v; return;
    case DSCC_F16: static_cast<uint16_t*>(p)[i] = doubleToSmall(v, false); return;
    default: static_cast<uint16_t*>(p)[i] = doubleToSmall(v, true); return;
  }
}

int64_t loadI(int32_t dt, const void* p, int64_t i) {
  switch (dt) {
    case DSCC_I64: return static_cast<const int64_t*>(p)[i];
    case DSCC_I32: return static_cast<const int32_t*>(p)[i];
    case DSCC_I8: return static_cast<const int8_t*>(p)[i];
    default: return static_cast<const uint8_t*>(p)[i] != 0;
  }
}

void storeI(int32_t dt, void* p, int64_t i, int64_t v) {
  switch (dt) {
    case DSCC_I64: static_cast<int64_t*>(p)[i] = v; return;
    case DSCC_I32: static_cast<int32_t*>(p)[i] = int32_t(uint32_t(uint64_t(v))); return;
    case DSCC_I8: static_cast<int8_t*>(p)[i] = int8_t(uint8_t(uint64_t(v))); return;
    default: static_cast<uint8_t*>(p)[i] = v != 0; return;
  }
}

bool isFloatType(int32_t dt) { return dt == DSCC_F32 || dt == DSCC_F16 || dt == DSCC_BF16 || dt == DSCC_F64; }

// One combination of a scatter with a reduction (1 add, 2 mul, 3 max, 4 min); max and min propagate NaN (the
// element already there first), as the IR's max and min.
double combineF(int32_t red, double a, double b) {
  switch (red) {
    case 1: return a + b;
    case 2: return a * b;
    default:
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      return red == 3 ? std::max(a, b) : std::min(a, b);
  }
}

int64_t combineI(int32_t red, int64_t a, int64_t b) {
  switch (red) {
    case 1: return int64_t(uint64_t(a) + uint64_t(b));
    case 2: return int64_t(uint64_t(a) * uint64_t(b));
    case 3: return std::max(a, b);
    default: return std::min(a, b);
  }
}

// Columns of one parallel task: enough work to pay for a task, few enough to split a row among the threads.
constexpr int64_t kColumns = 1024;

}  // namespace
}  // namespace dscc::runtime

using dscc::runtime::fail;

extern "C" dscc_status dscc_scatter(dscc_context* ctx, int32_t dtype, int32_t reduction, int32_t index_dtype,
                                    int64_t rows, int64_t count, int64_t inner, const void* data,
                                    const void* indices, const void* updates, void* out) {
  using namespace dscc::runtime;
  const char* fn = "dscc_scatter";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (dtype < DSCC_F32 || dtype > DSCC_I1 || reduction < 0 || reduction > 4 ||
      (index_dtype != DSCC_I64 && index_dtype != DSCC_I32) || (dtype == DSCC_I1 && reduction != 0))
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": dtype, index dtype or reduction out of range");
  if (rows < 0 || count < 0 || inner < 0 || (inner > 0 && (rows > INT64_MAX / inner || count > INT64_MAX / inner)))
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": sizes out of range");
  const size_t esize = dscc_dtype_size(static_cast<dscc_dtype>(dtype));
  const int64_t dataElems = rows * inner, updElems = count * inner;
  if ((dataElems > 0 && (!data || !out)) || (count > 0 && !indices) || (updElems > 0 && !updates))
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": a buffer with elements is NULL");
  // Every index first: one outside [-rows, rows) is an error before anything is written, never a write
  // outside the output (rows of zero elements included: they have no row to write either).
  for (int64_t m = 0; m < count; ++m) {
    const int64_t v = index_dtype == DSCC_I64 ? static_cast<const int64_t*>(indices)[m]
                                               : static_cast<const int32_t*>(indices)[m];
    if (v < -rows || v >= rows)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  "scatter index " + std::to_string(v) + " (update " + std::to_string(m) + ") is out of range for dim 0 of size " +
                      std::to_string(rows));
  }
  if (dataElems > 0 && out != data) std::memcpy(out, data, size_t(dataElems) * esize);
  if (updElems == 0) return DSCC_OK;
  auto rowOf = [&](int64_t m) {
    const int64_t v = index_dtype == DSCC_I64 ? static_cast<const int64_t*>(indices)[m]
                                               : static_cast<const int32_t*>(indices)[m];
    return v < 0 ? v + rows : v;
  };
  // Columns are independent: each task takes a block of them through every update in order, so duplicate
  // indices resolve in index order whatever the thread count (reduction none: the last update wins).
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t c0 = blk * kColumns, c1 = std::min(inner, c0 + kColumns);
      for (int64_t m = 0; m < count; ++m) {
        const int64_t dst = rowOf(m) * inner, src = m * inner;
        if (reduction == 0) {
          std::memcpy(static_cast<char*>(out) + size_t(dst + c0) * esize,
                      static_cast<const char*>(updates) + size_t(src + c0) * esize, size_t(c1 - c0) * esize);
        } else if (isFloatType(dtype)) {
          for (int64_t j = c0; j < c1; ++j)
            storeF(dtype, out, dst + j, combineF(reduction, loadF(dtype, out, dst + j), loadF(dtype, updates, src + j)));
        } else {
          for (int64_t j = c0; j < c1; ++j)
            storeI(dtype, out, dst + j, combineI(reduction, loadI(dtype, out, dst + j), loadI(dtype, updates, src + j)));
        }
      }
    }
  };
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
  return guarded(ctx, fn, [&] {
    if (blocks == 1 || updElems < (int64_t(1) << 16)) body(0, blocks);
    else ctx->pool.parallelFor(0, blocks, 1, body);
    return DSCC_OK;
  });
}

extern "C" dscc_status dscc_cumsum(dscc_context* ctx, int32_t dtype, int32_t exclusive, int32_t reverse, int64_t outer,
                                   int64_t len, int64_t inner, const void* x, void* y) {
  using namespace dscc::runtime;
  const char* fn = "dscc_cumsum";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (dtype < DSCC_F32 || dtype >= DSCC_I1)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": dtype out of range (i1 has no sum)");
  if (outer < 0 || len < 0 || inner < 0 || (inner > 0 && len > 0 && (outer > INT64_MAX / inner / len)))
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": sizes out of range");
  const int64_t elems = outer * len * inner;
  if (elems == 0) return DSCC_OK;
  if (!x || !y) return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": x and y must not be NULL");
  const bool fl = isFloatType(dtype);
  const int64_t blocksPerRow = (inner + kColumns - 1) / kColumns, units = outer * blocksPerRow;
  // A unit is one block of columns of one outer index, walked along the axis with one running sum per column:
  // floats in f64 (the interpreter's reduce_sum and cumsum accumulate so), integers wrapping in 64 bits.
  auto body = [&](int64_t b, int64_t e) {
    double accF[kColumns];
    uint64_t accI[kColumns];
    for (int64_t u = b; u < e; ++u) {
      const int64_t o = u / blocksPerRow, c0 = (u % blocksPerRow) * kColumns, w = std::min(inner, c0 + kColumns) - c0;
      std::fill(accF, accF + w, 0.0);
      std::fill(accI, accI + w, 0);
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s, base = (o * len + t) * inner + c0;
        if (fl) {
          for (int64_t j = 0; j < w; ++j) {
            const double v = loadF(dtype, x, base + j);
            if (exclusive) storeF(dtype, y, base + j, accF[j]);
            accF[j] += v;
            if (!exclusive) storeF(dtype, y, base + j, accF[j]);
          }
        } else {
          for (int64_t j = 0; j < w; ++j) {
            const uint64_t v = uint64_t(loadI(dtype, x, base + j));
            if (exclusive) storeI(dtype, y, base + j, int64_t(accI[j]));
            accI[j] += v;
            if (!exclusive) storeI(dtype, y, base + j, int64_t(accI[j]));
          }
        }
      }
    }
  };
  return guarded(ctx, fn, [&] {
    if (units == 1 || elems < (int64_t(1) << 15)) body(0, units);
    else ctx->pool.parallelFor(0, units, std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, len * kColumns)), body);
    return DSCC_OK;
  });
}
