// Facts about the elements of a value that follow from the ops computing it (not from its data).
#pragma once

#include "ir/IR.h"

namespace dscc {

/// True when every element of `v` is >= 0 or NaN, whatever the inputs: an
/// exp, abs, sqrt, sigmoid or relu; a square (mul of a value by itself); a
/// sum, product, quotient or reduction of such values; a maximum with one;
/// data movement (reshape, transpose, broadcast_to) of one. False where it
/// cannot tell (arguments, constants, anything else). A sum of such terms
/// has no cancellation, so its rounding error is relative to the sum itself:
/// CPU stitch kernels sum them in f32 lanes (codegen/ReductionEmitter.h).
bool nonNegative(const Value* v);

/// True when every element of `v` is <= 0 or NaN, whatever the inputs: a
/// value less the maximum over some of its axes (`sub %x, %m` with `%m =
/// reduce_max %x {keepdims = true}`: each element less a maximum it took
/// part in; softmax's shift), or the negation of a non-negative value.
bool nonPositive(const Value* v);

}  // namespace dscc
