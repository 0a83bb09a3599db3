// The cse pass.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Removes an op that repeats an earlier op of the same block: same kind, same
/// operands (in either order for add, mul, max, min, and, or, eq, ne), same
/// attributes (compared by text, in any order) and same result types. Uses of
/// the later result are redirected to the earlier one and the later op is
/// erased. A check op repeating an earlier check of the same relation is
/// erased too (the earlier one already guarded the run); other checks stay.
/// Fusion ops are never merged, but each fusion body is a block of its own
/// and is cleaned the same way; a body op is not matched against outer ops.
/// With --stats prints how many ops it removed per function.
bool cse(Module& m, PassContext& ctx);

}  // namespace dscc
