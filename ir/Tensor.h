// A concrete tensor (dtype, shape, bytes) for the interpreter and `.npy` files,
// with f16/bf16 conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
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

/// Thrown by Tensor::zeros when a shape cannot be allocated: its element count
/// overflows, it is over the limits of ir/Sizes.h, or the allocation failed.
/// The interpreter turns it into an error at the op that asked for it.
struct TensorSizeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The bytes the interpreter and `dscc run` may hold in tensors at once
/// (default kDefaultMemoryLimit, 2^40). Set once by the command line
/// (`--max-memory`) before anything runs.
int64_t memoryLimit();
void setMemoryLimit(int64_t bytes);

/// A dense row-major tensor. f16/bf16 are stored as 2-byte values; i1 as one
/// byte 0 or 1.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  /// A zero-filled tensor. Throws TensorSizeError when the shape has a
  /// negative dim, overflows, is over the limits, or memory runs out.
  static Tensor zeros(DType dt, std::vector<int64_t> shape);
  /// Number of elements (1 for a scalar, 0 if any dim is 0); -1 for a shape
  /// whose count overflows int64 (no allocated tensor has one).
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
