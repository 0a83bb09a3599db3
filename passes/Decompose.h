// The decompose pass.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Rewrites softmax, log_softmax, layer_norm, gelu (erf and tanh forms) and reduce_mean into primitive ops; softmax subtracts the row maximum first. A splat constant of symbolic shape becomes a scalar constant and broadcast_to.
bool decompose(Module& m, PassContext& ctx);

}  // namespace dscc
