// Helpers every kernel lowering shares (internal to codegen/): error text, operand access along a space, element counts, operand strides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "codegen/Kernel.h"
#include "ir/IR.h"
#include "ir/KernelKind.h"

namespace llvm {
class IRBuilderBase;
class Type;
class Value;
}  // namespace llvm

namespace dscc::codegen {

class DimEmitter;

/// "codegen: " + m, the prefix of every error code generation returns.
inline std::string err(const std::string& m) { return "codegen: " + m; }

/// The name of op's first result ("?" when it has none), for messages.
inline std::string nameOf(const Operation& op) { return op.results.empty() ? "?" : op.result()->name; }

/// The `kind` attribute of a fusion op as written ("" when it has none), for
/// messages only: code compares kernelKindOf (ir/KernelKind.h), and this
/// text also names a kind no lowering knows (an unverified op's).
inline std::string kindText(const Operation& f) {
  const Attribute* kind = f.attr("kind");
  return kind && kind->kind == Attribute::Kind::String ? kind->s : "";
}

/// How an operand is read along one dim of the space its dims right-align to
/// (a loop kernel's iteration space, a reduction's frame).
enum class Access {
  Contig,  ///< the operand has this dim at full size: its natural stride
  Bcast,   ///< the operand lacks the dim or has the literal 1: stride 0
  Dynamic  ///< a symbolic size that may be 1 at run time: chosen at run time
};

/// How an operand of type `t` is read along dim `j` of `space`.
inline Access accessOf(const Type& t, const std::vector<DimExpr>& space, size_t j) {
  size_t lead = space.size() - t.rank();
  if (j < lead) return Access::Bcast;
  const DimExpr& d = t.dims[j - lead];
  if (d.isConst() && d.constValue() == 1) return Access::Bcast;
  // Equal to the space's dim, or a constant other than 1 (which a valid
  // broadcast can only stretch to itself): always read at full size.
  if (d == space[j] || d.isConst()) return Access::Contig;
  return Access::Dynamic;
}

/// The product of dims[begin, end) (end clamped to the size), folded left
/// from 1: equal inputs give equal expressions, which DimEmitter caches.
inline DimExpr product(const std::vector<DimExpr>& dims, size_t begin = 0, size_t end = SIZE_MAX) {
  DimExpr p(1);
  for (size_t k = begin; k < end && k < dims.size(); ++k) p = p * dims[k];
  return p;
}

/// The number of elements of `t`.
inline DimExpr numel(const Type& t) { return product(t.dims); }

/// The bytes of every buffer of the types in `groups` together (dtype size
/// times dims, summed in order): a launch's traffic for the profiles, its
/// outputs' size for the stream guard.
inline DimExpr totalBytes(std::initializer_list<const std::vector<Type>*> groups) {
  DimExpr bytes(0);
  for (const std::vector<Type>* types : groups)
    for (const Type& t : *types) {
      DimExpr n(static_cast<int64_t>(dtypeSize(t.dtype)));
      for (const DimExpr& d : t.dims) n = n * d;
      bytes = bytes + n;
    }
  return bytes;
}

/// RowSplit versions (CPU column reductions): rows of the outermost reduced
/// dim (extent `n`) per chunk. At least 256, so a unit reads enough to
/// cover its workspace slice, and at most 64 chunks, so the workspace stays
/// a few percent of the input; the chunks depend on the sizes only, never
/// on the threads, so the partials combine in the same order on every
/// machine (the same bits).
inline DimExpr rowSplitChunkRows(const DimExpr& n) {
  return DimExpr::max(DimExpr::ceilDiv(n, DimExpr(64)), DimExpr(256));
}

/// RowSplit versions: the number of chunks of `n` rows (at least 1).
inline DimExpr rowSplitChunks(const DimExpr& n) {
  return DimExpr::max(DimExpr::ceilDiv(n, rowSplitChunkRows(n)), DimExpr(1));
}

/// RowSplit versions: the 8-byte slots of the workspace, one partial per
/// chunk, reduction and output of a kernel with interface `iface`.
inline DimExpr rowSplitWorkspaceElements(const KernelInterface& iface) {
  return rowSplitChunks(iface.guards.splitRows) * DimExpr(iface.guards.reductions) * iface.units;
}

/// Vector math per element of the loop or stitch kernel `fusion`, in
/// exponentials: our polynomial exp (and log) is one; tanh, sigmoid, erf,
/// sin, cos and pow add a division or a second polynomial (2); gelu is an
/// erf or a tanh and more (3) (codegen/cpu/VectorMath.cpp, libm). What decides
/// whether streaming stores pay (streamingPays) and how many elements make
/// a parallel task (kernelChunkElements).
int vectorMathCost(const Operation& fusion);

/// Elements per parallel task of an untuned CPU launch of `fusion`:
/// kChunkElements (~16K, a few µs of plain arithmetic) divided by 4 for a
/// kernel with vector math, so a task stays a few µs: a softmax row of
/// 18 f32 costs ~1.7 ns an element on one Zen 4 core, and a call of 864 such
/// rows (15.5K elements, one task of 16K) ran on one thread.
int64_t kernelChunkElements(const Operation& fusion);

/// Whether a CPU stitch kernel of `fusion` can take its rows as explicit
/// vectors (codegen/cpu/CpuRowVector.cpp) as far as its values go: f32 inputs,
/// results and body values (i1 in between), and reductions that are sums,
/// means, products, max or min. The emitter also needs rows read at unit
/// stride (codegen/cpu/CpuRowVector.cpp, vectorRowsOk).
bool rowVectorValues(const Operation& fusion);

/// The element stride, in `idxTy`, of dim `d` of a row-major operand of type
/// `t` read with access `a` (not Bcast): its natural stride, and for Dynamic
/// 0 where the dim is 1 at run time (a broadcast the plan could not prove).
llvm::Value* emitOperandStride(llvm::IRBuilderBase& b, DimEmitter& dims, const Type& t, size_t d, Access a,
                               llvm::Type* idxTy);

/// The value of reduction `r` (register form of its result dtype) from its
/// accumulator `acc` (floating point, or i64): reduce_mean divides by `count`
/// (i64; 0/0 is NaN in floating point as numpy, 0 in integers), then the
/// value is rounded or truncated to the dtype.
llvm::Value* finishReduction(llvm::IRBuilderBase& b, const Operation& r, llvm::Value* acc, llvm::Value* count);

}  // namespace dscc::codegen
