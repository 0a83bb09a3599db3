// Inline polynomial exp, tanh, sigmoid and erf for f32 on the CPU: plain arithmetic the vectorisers widen, no library calls.
//
// libmvec's vector functions are calls (the loop's registers are spilled
// around each) and take a slow scalar path for some lanes; these are a few
// FMAs each, inlined in the loop, with the interpreter's special values.
// Kernels that chain several of them are bound by the vector ports (two for
// 512-bit registers), so each is written for few instructions: no
// float-to-int conversion or NaN select in exp's core, a rational tanh.
// Accuracy, measured against double precision over the whole f32 range by
// test/unit/VectorMathTest.cpp: exp <= 1 ULP, tanh <= 5 ULP, erf <= 5 ULP,
// sigmoid (1/(1+exp(-x))) <= 2 ULP, gelu <= 5 ULP or 3e-7 |x| (its Phi's
// absolute error, as the formula's own 1 + erf with the same erf); results
// below FLT_MIN are flushed to 0.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace dscc::codegen {

/// e^x for a float or vector-of-float `x`: +inf above ln(FLT_MAX), 0 below
/// ln(FLT_MIN) (no denormal results), NaN for NaN.
llvm::Value* emitFastExpF32(llvm::IRBuilderBase& b, llvm::Value* x);

/// e^x where `x` is known to be <= 0 or NaN (softmax's x - max(x):
/// ir/ValueFacts.h nonPositive): emitFastExpF32's values there, with fewer
/// instructions (no overflow or NaN select). Meaningless for x > 0.
llvm::Value* emitFastExpNonPositiveF32(llvm::IRBuilderBase& b, llvm::Value* x);

/// tanh(x) for a float or vector-of-float `x`: odd, ±1 from ±9.2 on, NaN for NaN.
llvm::Value* emitFastTanhF32(llvm::IRBuilderBase& b, llvm::Value* x);

/// 1/(1+e^-x) for a float or vector-of-float `x`: 0 below ln(FLT_MIN), 1
/// from 17.4 on, NaN for NaN.
llvm::Value* emitFastSigmoidF32(llvm::IRBuilderBase& b, llvm::Value* x);

/// erf(x) for a float or vector-of-float `x`: odd, ±1 beyond ±3.92, NaN for NaN.
llvm::Value* emitFastErfF32(llvm::IRBuilderBase& b, llvm::Value* x);

/// The exact gelu, x * Phi(x) with Phi(x) = (1 + erf(x / sqrt(2))) / 2, for a
/// float or vector-of-float `x`: emitFastErfF32's rational with the scalings
/// folded into its coefficients; x from 5.54 on, -0 from -5.54 down, NaN for
/// NaN and -inf (as the formula).
llvm::Value* emitFastGeluF32(llvm::IRBuilderBase& b, llvm::Value* x);

}  // namespace dscc::codegen
