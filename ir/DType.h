// Element types of the IR (f32 f16 bf16 f64 i64 i32 i8 i1): names, sizes, classes.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace dscc {

/// The element types of the spec, in the order the spec lists them.
enum class DType { F32, F16, BF16, F64, I64, I32, I8, I1 };

/// The spelling used in the IR text, e.g. "f32".
std::string_view dtypeName(DType t);
/// Parses an IR spelling; nullopt if `s` is not a dtype name.
std::optional<DType> parseDType(std::string_view s);
/// Bytes per element as stored (i1 is stored as one byte).
size_t dtypeSize(DType t);
/// True for f32, f16, bf16, f64.
bool isFloat(DType t);
/// True for i64, i32, i8 (not i1).
bool isInteger(DType t);
/// True for i1.
inline bool isBool(DType t) { return t == DType::I1; }

}  // namespace dscc
