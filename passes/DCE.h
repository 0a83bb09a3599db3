// The dce pass, and the fusion-operand bookkeeping the cleanup passes share.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Removes ops whose results are never used, to a fixpoint, in every function
/// (an op used only by dead ops is dead too). Check ops always stay: they
/// guard the run. A fusion op with no used result goes as a whole; inside a
/// live fusion's body, ops that are neither yielded nor used by a live body op
/// go, and the fusion's operands shrink to the outer values the body still
/// uses. With --stats prints how many ops it removed per function.
bool dce(Module& m, PassContext& ctx);

/// Recomputes the operands of `fusion` as the verifier requires them: the
/// outer values its body uses, each once, in order of first use. A pass that
/// changes what a body uses (rewriting a body op, or replacing an outer value
/// the body reads) calls this afterwards. Non-fusion ops are left alone.
void refreshFusionOperands(Operation& fusion);

/// refreshFusionOperands on every fusion op of `f`.
void refreshAllFusionOperands(Function& f);

}  // namespace dscc
