// The sliding-window geometry of `conv`, `conv_transpose` and `pool`: their attributes and the size rules, shared by the verifier, the interpreter, the importer and codegen.
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
  int64_t group = 1;            ///< conv and conv_transpose only
  std::vector<int64_t> outputPadding;  ///< conv_transpose only: n (default zeros)
  std::vector<int64_t> outputShape;    ///< conv_transpose only: n spatial sizes, or empty when not given
  bool isMax = false;           ///< pool only: kind = "max" (else "avg" or "argmax")
  /// pool only: kind = "argmax", the i64 index of each window's maximum (isMax is then false); see docs/ir.md.
  bool isArgmax = false;
  int64_t storageOrder = 0;     ///< argmax only: 0 row-major, 1 column-major spatial indices (ONNX MaxPool's)
  std::vector<int64_t> kernel;  ///< pool only: kernel_shape
  bool ceilMode = false;        ///< pool only
  bool countIncludePad = false; ///< pool only (avg)
  /// conv and pool: operand and result hold the channel last ([N, spatial..., C]), as the layout pass
  /// (passes/ChannelsLast.cpp) writes them; the weight keeps [M, C/group, k...]. Dims in these attributes
  /// and in the size rules are always the spatial ones, in order.
  bool channelsLast = false;
};

/// True when `op` (conv or pool) has `channels_last = true`; its attributes are read (and checked) by readWindowAttrs.
bool isChannelsLast(const Operation& op);

/// Dims (or sizes) of a channels-last tensor, [N, spatial..., C], in channels-first order [N, C, spatial...].
template <class T>
std::vector<T> toChannelsFirst(const std::vector<T>& d) {
  if (d.size() < 2) return d;
  std::vector<T> r = {d[0], d.back()};
  r.insert(r.end(), d.begin() + 1, d.end() - 1);
  return r;
}

/// Dims (or sizes) [N, C, spatial...] in channels-last order [N, spatial..., C].
template <class T>
std::vector<T> toChannelsLast(const std::vector<T>& d) {
  if (d.size() < 2) return d;
  std::vector<T> r = {d[0]};
  r.insert(r.end(), d.begin() + 2, d.end());
  r.push_back(d[1]);
  return r;
}

/// The transpose permutations between the two orders for rank `r`: channels-first -> channels-last
/// ([0, 2, ..., r-1, 1]) and back ([0, r-1, 1, ..., r-2]).
std::vector<int64_t> channelsLastPerm(size_t r);
std::vector<int64_t> channelsFirstPerm(size_t r);

/// Reads the attributes of `op` (conv, conv_transpose or pool) for `spatialRank` spatial dims. Returns "" or a message; on
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
/// The padded extent a window must fit in: in + pb + pe (the relation windowLeastRoom <= this must hold).
DimExpr windowPaddedIn(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);
/// The least padded extent (windowPaddedIn) that has one window along spatial dim `i`: the span, or in ceil mode
/// (explicit pads) span - (stride - 1), for there the one window may hang past the end padding as long as the
/// rule above gives it (ceildiv(in + pb + pe - span, stride) >= 0): PyTorch and ONNX pool a 2-wide input with a
/// 3-wide window of stride 2 (SqueezeNet's and GoogLeNet's ceil-mode max pools at small images).
DimExpr windowLeastRoom(const WindowAttrs& a, size_t i, const DimExpr& k);

// conv_transpose (ONNX ConvTranspose): each input point scatters a window; the full result along spatial dim i
// has stride*(in-1) + span + output_padding points, of which pads[begin] are cut at the start and pads[end] at
// the end. With `output_shape` or auto_pad SAME_* the pads are derived from the sizes (ONNX's rule):
//   total = stride*(in-1) + output_padding + span - out,
//   same_upper: begin = floor(total/2), end = total - begin; otherwise begin = total - floor(total/2), end = floor(total/2)
// where out is output_shape[i] or in*stride (SAME). Derived pads may be negative: the result then has points no
// input reaches (they hold the bias).

/// The padding cut before spatial dim `i` of conv_transpose's full result (may be negative when derived).
DimExpr transposePadBegin(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);
/// The padding cut after spatial dim `i`, output_padding already subtracted (may be negative): the result size
/// is stride*(in-1) + span - transposePadBegin - transposePadEnd.
DimExpr transposePadEnd(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);
/// The result size of conv_transpose along spatial dim `i`.
DimExpr transposeOutDim(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);

}  // namespace dscc
