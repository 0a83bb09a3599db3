// Plans a library kernel (`fusion {kind = "library"}`: one matmul, a layout prologue, an elementwise epilogue) as BLAS calls.
//
// A library kernel becomes, at run time:
//   1. for each matmul operand whose layout no strided matrix can describe,
//      one dscc_copy_strided into a dense scratch buffer;
//   2. one dscc_sgemm_nd call over strided views of the operands (or of
//      their dense copies), writing C dense as [batchDims..., M, N];
//   3. when the kernel has an epilogue, a loop kernel (GemmPlan::epilogue,
//      lowered like any `fusion {kind = "loop"}`) reading C and the
//      epilogue's other operands and writing the kernel's results.
// Every size, pitch and stride is a DimExpr over the function's symbols; the
// host code evaluates them at run time. The plan holds no LLVM types, so
// tests and host-code generators alike can use it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace dscc {
class ShapeSolver;
}  // namespace dscc

namespace dscc::codegen {

/// One matmul operand as a strided matrix view of a buffer.
struct GemmOperandPlan {
  size_t operand = 0;  ///< the fusion operand it reads
  /// If copyDims is non-empty, the operand is first densified: scratch[i...] = src[sum_k i_k*copyStrides[k]]
  /// (dscc_copy_strided), and the view below is of that dense scratch buffer, not of the operand.
  std::vector<DimExpr> copyDims, copyStrides;
  bool trans = false;                 ///< stored transposed (A: K x M, B: N x K)
  DimExpr ld;                         ///< row pitch in elements
  std::vector<DimExpr> batchStrides;  ///< one per GemmPlan::batchDims (0 = broadcast)
};

/// A library kernel as one dscc_sgemm_nd call plus an optional elementwise epilogue.
struct GemmPlan {
  const Operation* matmul = nullptr;  ///< the matmul inside the fusion's body
  DimExpr M, N, K;                    ///< the sizes of each matrix product
  std::vector<DimExpr> batchDims;     ///< the result's batch dims (possibly empty)
  GemmOperandPlan a, b;               ///< the left and right operands
  DimExpr ldc;  ///< = N; C is dense [batchDims..., M, N] (rank-1 operands: the dropped dim is 1)
  std::vector<DimExpr> batchStridesC;  ///< dense strides of C's batch dims
  /// The epilogue as a standalone `fusion {kind = "loop"}` op (owned here): its operand 0 is the matmul's
  /// result value, operands 1.. are fusion operands (listed in epilogueOperands), its body the epilogue ops,
  /// its results the library fusion's results. Null when the matmul result is the fusion's only result.
  std::unique_ptr<Operation> epilogue;
  std::vector<size_t> epilogueOperands;  ///< fusion operand index of epilogue operand k+1
  /// True when the epilogue can run in place on C (its result has the matmul result's type), so C can be
  /// the fusion's result buffer; else C needs a scratch buffer.
  bool epilogueInPlace = true;
};

/// Plans `fusion` (kind "library"); "" or why not (e.g. "codegen: matmul of f64 is not supported yet").
/// `solver` (may be null) proves symbolic stride equalities when merging dims; DimExpr normal-form equality first.
/// On failure `out` is left in an unspecified state.
std::string planLibraryKernel(const Operation& fusion, ShapeSolver* solver, GemmPlan& out);

}  // namespace dscc::codegen
