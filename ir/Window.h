// The sliding-window geometry of `conv` and `pool`: their attributes and the size rule, shared by the verifier, the interpreter, the importer and codegen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/DimExpr.h"
#include "ir/IR.h"

namespace dscc {

/// How the pads of a window op are chosen: as written (`pads`), or from the sizes as ONNX's `auto_pad`.
enum class AutoPad { Explicit, SameUpper, SameLower, Valid };

/// The attributes of one `conv` or `pool`, read and checked.
struct WindowAttrs {
  size_t n = 0;  ///< spatial rank (operand rank - 2)
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;  ///< n each
  AutoPad autoPad = AutoPad::Explicit;
  int64_t group = 1;            ///< conv only
  bool isMax = false;           ///< pool only: kind = "max" (else "avg")
  std::vector<int64_t> kernel;  ///< pool only: kernel_shape
  bool ceilMode = false;        ///< pool only
  bool countIncludePad = false; ///< pool only (avg)
};

/// Reads the attributes of `op` (conv or pool) for `spatialRank` spatial dims. Returns "" or a message; on
/// error `where` is the offending attribute's location (or the op's).
std::string readWindowAttrs(const Operation& op, size_t spatialRank, WindowAttrs& out, Location& where);

/// The attribute value spelling of `p` ("same_upper", ...; "" for Explicit).
const char* autoPadName(AutoPad p);

/// The extent one window covers along spatial dim `i`: dilation*(k-1)+1.
DimExpr windowSpan(const WindowAttrs& a, size_t i, const DimExpr& k);
/// The padding before spatial dim `i` of an input of size `in`, with kernel size `k` (auto_pad resolved).
DimExpr windowPadBegin(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);
/// The padding after spatial dim `i` as the attributes state it (auto_pad resolved); ceil mode may read
/// past it, see windowOutDim.
DimExpr windowPadEnd(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);
/// The result size along spatial dim `i`:
///   floor((in + pb + pe - span) / s) + 1, or in ceil mode
///   min(ceil((in + pb + pe - span) / s), floor((in + pb - 1) / s)) + 1
/// (the last window starts inside the input or the left padding, as ONNX and PyTorch say);
/// SAME: ceil(in / s); VALID: floor((in - span) / s) + 1.
DimExpr windowOutDim(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);
/// The padded extent a window must fit in: in + pb + pe (the relation span <= this must hold).
DimExpr windowPaddedIn(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);

}  // namespace dscc
