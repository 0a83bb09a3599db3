// Checked size arithmetic: element counts, byte sizes and dim values that report overflow instead of wrapping.
//
// Every place that turns dims into an element count or a byte size (the
// interpreter, `dscc run`, `dscc explain`, the planner's guards, the runtime)
// goes through these, so a size too large for 64 bits, or over the documented
// limits (docs/limits.md), is an error naming it rather than a wrapped number.
// Header-only and free of other dscc headers so the runtime can use it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dscc {

/// Most elements one tensor may have (2^40). Far beyond any real model, yet
/// small enough that an element count times the widest element (8 bytes) and
/// any flat index stay well inside int64.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

/// Most dims one type may have (64, numpy's limit). Element counts, index
/// maps and shape analysis all work per dim, and a type of thousands of dims
/// made the verifier and the pipeline take minutes.
inline constexpr int64_t kMaxRank = 64;

/// Default limit on the bytes the interpreter (and `dscc run`'s inputs) may
/// hold at once: 2^40 (1 TiB). `dscc run --max-memory` changes it.
inline constexpr int64_t kDefaultMemoryLimit = int64_t(1) << 40;

/// a * b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a + b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a - b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checkedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// The product of `dims` (1 for none), or nullopt when a dim is negative or
/// the product does not fit in int64. A zero dim makes the count 0 whatever
/// the others are, as the tensor then holds nothing.
inline std::optional<int64_t> checkedNumel(const int64_t* dims, size_t rank) {
  int64_t n = 1;
  bool zero = false;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return std::nullopt;
    if (dims[i] == 0) zero = true;
  }
  if (zero) return 0;
  for (size_t i = 0; i < rank; ++i)
    if (__builtin_mul_overflow(n, dims[i], &n)) return std::nullopt;
  return n;
}

inline std::optional<int64_t> checkedNumel(const std::vector<int64_t>& dims) {
  return checkedNumel(dims.data(), dims.size());
}

/// Why a tensor of `dims` with `elemSize`-byte elements cannot be allocated
/// under `memoryLimit` bytes, or "" when it can. The message states the
/// shape and size, for the caller to prefix with what the tensor is.
inline std::string sizeProblem(const std::vector<int64_t>& dims, int64_t elemSize,
                               int64_t memoryLimit = kDefaultMemoryLimit) {
  std::string shape = "[";
  for (size_t i = 0; i < dims.size(); ++i) shape += (i ? ", " : "") + std::to_string(dims[i]);
  shape += "]";
  for (int64_t d : dims)
    if (d < 0) return "shape " + shape + " has a negative dim";
  auto n = checkedNumel(dims);
  if (!n) return "shape " + shape + " has more elements than fit in 64 bits";
  if (*n > kMaxTensorElements)
    return "shape " + shape + " has " + std::to_string(*n) + " elements, over the limit of 2^40 per tensor";
  int64_t bytes = *n * elemSize;  // cannot overflow: n <= 2^40, elemSize <= 8
  if (bytes > memoryLimit)
    return "shape " + shape + " needs " + std::to_string(bytes) + " bytes, over the memory limit of " +
           std::to_string(memoryLimit) + " bytes (--max-memory raises it)";
  return "";
}

}  // namespace dscc
