// Element type names and properties.
#include "ir/DType.h"

namespace dscc {

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F64: return "f64";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::I8: return "i8";
    case DType::I1: return "i1";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view s) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64,
                  DType::I32, DType::I8, DType::I1})
    if (dtypeName(t) == s) return t;
  return std::nullopt;
}

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::F64: case DType::I64: return 8;
    case DType::I8: case DType::I1: return 1;
  }
  return 0;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}
bool isInteger(DType t) { return t == DType::I64 || t == DType::I32 || t == DType::I8; }

}  // namespace dscc
