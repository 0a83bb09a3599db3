// Reading and writing NumPy `.npy` files (format 1.0-3.0, little-endian, C order).
#pragma once

#include <optional>
#include <string>

#include "ir/Tensor.h"

namespace dscc {

/// Reads `path`. Supported descrs: <f4 <f2 <f8 <i8 <i4 |i1 (also <i1) |b1 (bool -> i1),
/// and <V2 (raw 2-byte, read as bf16). Big-endian data, Fortran order, other dtypes,
/// a malformed header or a truncated body give nullopt and a message in `err`.
std::optional<Tensor> readNpy(const std::string& path, std::string* err);
/// Writes `t` as a version 1.0 file (bf16 is written with descr <V2).
bool writeNpy(const std::string& path, const Tensor& t, std::string* err);

}  // namespace dscc
