// GPU kernels of `conv`, `conv_transpose` and `pool` (the library kernels of codegen/WindowPlan.h): one launch, a
// thread per output element, bodies in the KernelFn convention that codegen/gpu/GpuKernels.cpp wraps in a
// grid-stride PTX entry and tests run on the CPU (test/unit/GpuWindowTest.cpp).
//
// Thread unit u is the result's element at flat index u in its memory order ([N, M, O...], or [N, O..., M] for
// channels_last), so consecutive threads write consecutive elements. Each sums in f64 in the interpreter's order
// (ir/InterpConv.cpp) and rounds once when it stores (f16/bf16 as Tensor::setF: through f32 rounded to odd), so a
// result has the interpreter's bits:
//   conv            bias, then the window's points inside the input (padding contributes nothing) in row-major
//                   order of kernel offsets, each over the group's input channels in order;
//   conv_transpose  the adjoint gathered: bias, then over the group's input channels in order, the input points
//                   that reach this output in row-major order (the interpreter scatters them in that order), each
//                   through its one kernel offset (walked backwards: input positions ascend as offsets descend);
//   pool            max (padding never wins; NaN propagates: the interpreter's rule) or the sum of the points inside,
//                   divided by their count or, with count_include_pad, by the window's points inside
//                   [-pad_begin, D + pad_end) (a ceil-mode window past the end padding counts only up to it);
//                   argmax the i64 index (into [N, C, spatial...], storage_order's spatial order) of the first point
//                   holding the maximum, the first NaN winning; -1 for a window with no input point.
// Sizes and pads are the plan's dim expressions, evaluated in the body from the kernel's symbols.
#pragma once

#include <string>

#include "codegen/Jit.h"
#include "codegen/WindowPlan.h"
#include "codegen/gpu/GpuScatter.h"

namespace dscc::codegen {

/// Thread units of window kernel `p`: its result's elements.
DimExpr gpuWindowUnits(const WindowPlan& p);

/// Adds the body of window kernel `p` to `m` as function `name` + ".window" (inputs: the fusion's operands in
/// order; outputs: the result); `out` gets its one launch ("window") and its symbols. Returns "" or an error.
std::string lowerGpuWindow(const WindowPlan& p, CodeModule& m, const std::string& name, DataKernel& out);

}  // namespace dscc::codegen
