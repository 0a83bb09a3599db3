// The default optimisation pipeline: read it top to bottom.
#include "passes/DefaultPipeline.h"

namespace dscc {

std::vector<const PassInfo*> defaultPipeline() {
  return {
      // Every dim becomes an expression over the symbols; what the solver
      // cannot prove becomes an explicit run-time check.
      lookupPass("infer-shapes"),
      // Composites into primitives, so the planner can fuse their parts.
      lookupPass("decompose"),
      // Cleanup: identities, constants, repeats, dead code.
      lookupPass("canonicalize"),
      lookupPass("fold-constants"),
      // An inference batch norm after a conv into the conv's weight and bias.
      lookupPass("fold-conv-affine"),
      // A recurrent layer's weights rearranged from constants (PyTorch's LSTM export) into constants.
      lookupPass("fold-weights"),
      lookupPass("cse"),
      lookupPass("dce"),
      // Layout: CPU convs and pools channels-last (oneDNN's direct kernels read it without reorders), the
      // transposes it needs sunk to the network's edges; then the cleanup again (pairs of transposes cancel,
      // transposed constants fold).
      lookupPass("channels-last"),
      lookupPass("canonicalize"),
      lookupPass("fold-constants"),
      lookupPass("cse"),
      lookupPass("dce"),
      // Kernels: library calls, loop, input and stitch fusion.
      lookupPass("fuse"),
  };
}

}  // namespace dscc
