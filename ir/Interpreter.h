// The reference interpreter: executes any IR function on concrete tensors.
//
// It is the oracle for every numerical test, so it favours clarity over speed.
// Symbols are bound from input shapes; every `where` fact and every shape the
// program states or implies is checked, and a violation is reported as a
// located error naming it.
#pragma once

#include <vector>

#include "ir/Diagnostics.h"
#include "ir/IR.h"
#include "ir/Tensor.h"

namespace dscc {

/// Binds the function's symbols from the shapes of its inputs (plain symbol
/// dims bind directly; a dim like `2*N` or `S+1` with one unbound symbol of
/// degree one is solved) and checks every input dim and every `where` fact.
/// Reports errors to `diags` (at the argument's or fact's location) and returns
/// false on any violation.
bool bindSymbols(const Function& f, const std::vector<std::vector<int64_t>>& shapes,
                 DimBindings& env, DiagEngine& diags);

/// Runs `f` on `inputs` (one per argument, in order). On success fills
/// `outputs` (one per returned value) and returns true; on any error (bad
/// input dtype or shape, violated fact or shape relation, unreadable constant
/// file, out-of-range gather index) reports it to `diags` and returns false.
/// `env` receives the symbol bindings.
bool interpret(const Function& f, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
               DiagEngine& diags, DimBindings* env = nullptr);

/// Reads every `constant file("x.npy")` of `m` (a relative path names a file
/// next to the program) and checks it against the constant's type; each
/// failure is an error at the constant. The contents are kept in the
/// attribute (Attribute::data), so code generation embeds them without
/// touching the file system. `baseDir`, when given, is the folder relative
/// paths name instead (a compiled model's program, read back from the
/// artifact). Returns false after reporting errors.
bool loadFileConstants(Module& m, DiagEngine& diags, const std::string& baseDir = "");

}  // namespace dscc
