// The canonicalize pass.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Applies algebraic identities to a fixpoint, in every function and inside
/// fusion bodies: x*1, 1*x, x+0, 0+x, x-0 and x/1 become x (only when the
/// result has exactly x's type, so a constant that broadcasts x stays; the
/// constant must be a scalar literal, a splat or an all-equal dense literal);
/// neg(neg(x)) becomes x; transpose(transpose(x, p), q) becomes
/// transpose(x, p∘q), an identity transpose becomes x and one that moves
/// only dims of size 1 a reshape; reshape(reshape(x))
/// becomes reshape(x); reshape, broadcast_to or cast to x's own type becomes
/// x; select with a constant all-true (all-false) condition becomes its
/// second (third) operand when that has the result's type. Each rule is one
/// function with a one-line comment of its algebra. Uses are redirected with
/// replaceAllUses and the bypassed ops are left for dce. x+0 and x-0 ignore
/// the sign of a zero: x = -0.0 gives +0.0 for x + 0.0 but stays -0.0.
/// Inside a fusion body a yielded value is only replaced by another body
/// value (a yield must name one); the fusion's operands are recomputed.
/// With --stats prints how many rewrites it made per function.
bool canonicalize(Module& m, PassContext& ctx);

}  // namespace dscc
