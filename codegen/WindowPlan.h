// Plans a library kernel holding a `conv`, `conv_transpose` or `pool`: on the CPU one oneDNN-backed runtime call
// (dscc_conv_f32, dscc_conv_transpose_f32, dscc_pool_f32; an argmax pool calls dscc_pool_argmax_f32, loops of ours),
// on the GPU a kernel of ours (codegen/gpu/GpuWindow.h).
//
// The kernel is the window op, and for a conv an elementwise epilogue that
// oneDNN applies as post-ops (ir/ConvEpilogue.h, the match the planner formed
// it by); its operands are fusion operands, its last value the fusion's only
// result. Sizes
// and pads (auto_pad resolved by the size rule of ir/Window.h) are dim
// expressions the host code evaluates at run time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ConvEpilogue.h"
#include "ir/IR.h"
#include "ir/Window.h"

namespace dscc::codegen {

/// One conv, conv_transpose or pool call: where its operands come from and the sizes it is called with.
struct WindowPlan {
  const Operation* op = nullptr;             ///< the conv, conv_transpose or pool inside the fusion's body
  size_t x = 0, w = 0;                       ///< fusion operand indices of the input and (conv) weight
  std::optional<size_t> bias;                ///< fusion operand index of the bias (conv), if any
  std::vector<DimExpr> xDims, wDims, yDims;  ///< full dims of input, weight (conv) and result, channels first
                                             ///< ([N, C, spatial...]) whatever the layout (attrs.channelsLast)
  std::vector<DimExpr> kernel;               ///< spatial kernel sizes
  std::vector<DimExpr> padsBegin, padsEnd;   ///< resolved pads per spatial dim (conv_transpose: cut from its full
                                             ///< result, output_padding subtracted from the end one)
  WindowAttrs attrs;
  DType dtype = DType::F32;  ///< the operands' and result's (an argmax pool's result is i64; the CPU takes f32
                             ///< operands only, the GPU every float dtype)
  bool gpu = false;          ///< planned for a GPU target: a launch of codegen/gpu/GpuWindow.h, no runtime call
  std::vector<ConvPostOp> post;  ///< conv: the epilogue's post-ops, in order (empty: none)
  std::vector<size_t> postSrc;   ///< per post-op: fusion operand index of an Add's tensor (0 for the others)
};

/// True when `fusion`'s body holds a conv, conv_transpose or pool (its planner kind is then library).
bool isWindowKernel(const Operation& fusion);

/// Plans `fusion` (a library kernel holding a conv, conv_transpose or pool) for the CPU or (`gpu`) a GPU target; ""
/// or why not. On failure `out` is left in an unspecified state.
std::string planWindowKernel(const Operation& fusion, bool gpu, WindowPlan& out);

}  // namespace dscc::codegen
