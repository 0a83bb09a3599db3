// The infer-shapes pass: symbolic shape analysis of every function.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Infers every dim of every value as an expression over the function's
/// symbols, proving relations with ShapeSolver (normal forms, union-find, Z3)
/// under the `where` facts. A relation an op needs that is disproved is an
/// error with a counterexample; unsatisfiable facts are an error; a relation
/// neither proved nor disproved becomes a `check` op before the op that needs
/// it. Reshape `?` dims are replaced by what the element count implies. After
/// the pass every result type is explicit. Prints facts (--print-shape-facts)
/// and solver counters (--stats) to the context's stream.
bool inferShapes(Module& m, PassContext& ctx);

}  // namespace dscc
