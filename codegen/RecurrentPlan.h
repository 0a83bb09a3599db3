// Plans a library kernel holding an `rnn`: one runtime call on the CPU (dscc_rnn_f32, runtime/Recurrent.cpp), kernels
// of ours launched per time step on the GPU (codegen/gpu/GpuRecurrent.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "ir/Recurrent.h"

namespace dscc::codegen {

/// One rnn call: where its operands come from and the sizes it is called with.
struct RnnPlan {
  const Operation* op = nullptr;  ///< the rnn inside the fusion's body
  /// Fusion operand indices of x, w, r, and of b, initial_h, initial_c when the op has them.
  size_t x = 0, w = 0, r = 0;
  std::optional<size_t> b, h0, c0;
  DimExpr seq, batch, input;  ///< x's dims
  RnnAttrs attrs;
  DType dtype = DType::F32;  ///< of every operand and the result
  bool gpu = false;          ///< planned for a GPU target (codegen/gpu/GpuRecurrent.h) rather than dscc_rnn_f32
};

/// True when `fusion`'s body holds an rnn (its planner kind is then library).
bool isRnnKernel(const Operation& fusion);

/// Plans `fusion` (a library kernel holding an rnn) for the CPU or (`gpu`) a GPU target; "" or why not (the CPU:
/// f32 only; the GPU: floats only).
std::string planRnnKernel(const Operation& fusion, bool gpu, RnnPlan& out);

}  // namespace dscc::codegen
