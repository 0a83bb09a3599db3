// The printer of the textual IR: output re-parses to the same program and is a
// fixpoint (print . parse . print == print).
#pragma once

#include <string>

#include "ir/IR.h"

namespace dscc {

/// Prints one function, result types always explicit, dims in canonical form.
std::string printFunction(const Function& f);
/// Prints the result list of a signature: `T, ...`, or `(name: T, ...)` when a result is named.
std::string printResultTypes(const Function& f);
/// Prints every function of the module, separated by blank lines.
std::string printModule(const Module& m);
/// Prints one operation (without indentation or newline).
std::string printOp(const Operation& op);

}  // namespace dscc
