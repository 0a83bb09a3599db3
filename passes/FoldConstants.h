// The foldConstants pass.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Evaluates ops whose operands are all constants (small ones: at most 1024 elements) with the reference interpreter and replaces them by a constant.
bool foldConstants(Module& m, PassContext& ctx);

}  // namespace dscc
