// The fold-conv-affine pass: per-channel affine ops after a conv folded into its weight and bias.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Folds the chain of per-output-channel affine ops that follows a `conv`
/// into the conv's weight and bias at compile time; an inference batch norm
/// (imported as sub, mul, add with per-channel constants) is one such chain,
/// so its kernels vanish and the conv's library call computes it.
///
/// The chain grows while the current result (first the conv's) has exactly
/// one user and is not returned, and that user is an `add`, `sub`, `mul` or
/// `div` outside any fusion whose result has the same type, and whose other
/// operand is computed from constants alone (constantValue: constants and
/// ops on them, file constants included) and varies along the channel, dim
/// 1 of the result, only: [M] at that dim with every other dim 1, or a
/// scalar. `c - y` folds too (weights negated); `c / y` does not. The conv's
/// weight and bias (if it has one) must be constants too, of the result's
/// dtype, f32 or f64 (f16/bf16 are left alone: their unfused rounding would
/// change), and the conv must carry no attribute beyond strides, dilations,
/// pads, group and auto_pad (a layout attribute could move the channel).
/// conv_transpose is left alone.
///
/// The chain's scale a[m] and shift b[m] are composed in double; the conv
/// then reads new constants, never the old ones rewritten (a weight may be
/// shared): w'[m, ...] = a[m] * w[m, ...] and bias'[m] = a[m] * bias[m] +
/// b[m], each rounded once to the dtype (a conv without bias gets one only
/// when some b[m] is not 0). A chain whose folded values are not all finite
/// is left unfolded. The new constants are literals up to 1024 elements,
/// else file constants holding their data under a fresh name
/// (`W.folded.npy`). Uses of the chain's last result read the conv's
/// result; the chain's ops are erased, the old constants are left for dce.
/// With --stats prints how many ops it folded into how many convs per
/// function.
bool foldConvAffine(Module& m, PassContext& ctx);

}  // namespace dscc
