// The foldConstants pass.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Evaluates, in program order, every op (not check, fusion, constant, dim, nor
/// the operand-less iota, which is already as cheap as a constant) whose
/// operands all come from inline `constant` ops (a literal, splat or dense
/// value; not a file) with fully static types of at most 1024 elements, and
/// whose static result has at most 1024 elements. The op runs alone in the
/// reference interpreter and becomes, in place (same name, same type), a
/// `constant` holding the result: a scalar literal for rank 0, else
/// dense<...>. Floats print as the shortest decimal that rounds back to the
/// same element. An op the interpreter rejects (integer division by zero, an
/// out-of-range gather index, ...) is kept so the error still happens at run
/// time. Folded ops feed later folds; the constants they read are left for
/// dce. Fusion ops and their bodies are skipped: a fusion is a kernel already
/// planned, so fold before fusing. With --stats prints how many ops it folded
/// per function.
bool foldConstants(Module& m, PassContext& ctx);

}  // namespace dscc
