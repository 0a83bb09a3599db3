// The elementwise tail of a conv that oneDNN applies as post-ops inside the conv: which chains of ops are one, shared by the fusion planner (which forms such kernels) and codegen (which passes the list to the runtime).
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace dscc {

/// One step of a conv's epilogue, applied in order to each output element v (after the bias). The numeric
/// values of `Kind` are the runtime's (DSCC_POST_*, runtime/dscc_generated.h).
struct ConvPostOp {
  enum class Kind : int32_t {
    Relu = 0,       ///< v = max(v, 0)
    Linear = 1,     ///< v = a*v + b
    Clip = 2,       ///< v = max(min(v, b), a), a <= b (either may be infinite)
    Hardswish = 3,  ///< v = v * max(min(v/6 + 1/2, 1), 0): ONNX HardSwish as the importer writes it
    Add = 4,        ///< v = v + src[i], src a tensor of the conv result's dims and layout
  };
  Kind kind = Kind::Relu;
  double a = 0, b = 0;
  const Value* src = nullptr;  ///< Add: the other operand
};

/// Matches `ops` (elementwise ops in program order) as one chain of post-ops from `convOut` (an f32 conv's
/// result): every op takes the chain's value so far, with a scalar f32 constant or (add) a tensor of
/// `convOut`'s dims as its other operand, and the five ops of a HardSwish count as one. Every op's result
/// is then the chain's value at that step, the last one the epilogue's result; no kind but Add occurs twice
/// (consecutive clips merge into one). "" and `out` filled, or why
/// not. The planner absorbs a conv's consumers only where this holds, and codegen lowers the kernel by it.
std::string matchConvEpilogue(const Value* convOut, const std::vector<const Operation*>& ops,
                              std::vector<ConvPostOp>& out);

/// The value of a rank-0 f32 `constant` (or a scalar splat) `v`, if it is one.
bool scalarConstant(const Value* v, double& out);

}  // namespace dscc
