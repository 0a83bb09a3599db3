// A concrete tensor (dtype, shape, bytes) for the interpreter and `.npy` files,
// with f16/bf16 conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/DType.h"

namespace dscc {

/// IEEE binary16 <-> float (round to nearest even).
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
/// bfloat16 <-> float (round to nearest even; NaN stays NaN).
uint16_t floatToBF16(float f);
float bf16ToFloat(uint16_t h);

/// A dense row-major tensor. f16/bf16 are stored as 2-byte values; i1 as one
/// byte 0 or 1.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  /// A zero-filled tensor.
  static Tensor zeros(DType dt, std::vector<int64_t> shape);
  /// Number of elements (1 for a scalar, 0 if any dim is 0).
  int64_t numel() const;
  size_t rank() const { return shape.size(); }

  /// Element `i` (flat index) as a double; f16/bf16 widened exactly.
  double getF(int64_t i) const;
  /// Stores `v` into element `i`, converting to the dtype: floats round,
  /// integers truncate toward zero (wrapping to the width), i1 is v != 0.
  void setF(int64_t i, double v);
  /// Element `i` as an integer (floats truncate toward zero).
  int64_t getI(int64_t i) const;
  /// Stores an integer, wrapping to the dtype's width (i1: v != 0).
  void setI(int64_t i, int64_t v);

  /// Typed access to the raw storage (caller picks the matching C type).
  template <typename T> T* data() { return reinterpret_cast<T*>(bytes.data()); }
  template <typename T> const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }

  /// `f32[2, 3]`.
  std::string typeStr() const;
};

}  // namespace dscc
