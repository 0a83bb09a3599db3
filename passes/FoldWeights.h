// The fold-weights pass: the weights of recurrent layers computed from constants become constants at compile time.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Replaces each weight operand (w, r, b) of an `rnn` op that is computed
/// from constants alone (the slices, concats, reshapes and transposes with
/// which PyTorch's exporter rearranges an LSTM's parameters into ONNX's
/// layout) by a constant holding its value: a literal up to 1024 elements,
/// else a file constant whose data the artifact embeds. Why: the runtime
/// call takes its weights dense, so each rearrangement was a kernel run on
/// every call (a fifth of a CRNN's time). Only file constants already read
/// are evaluated (as fold-constants); the rearranging ops are left for dce.
/// With --stats prints how many operands it folded per function.
bool foldWeights(Module& m, PassContext& ctx);

}  // namespace dscc
