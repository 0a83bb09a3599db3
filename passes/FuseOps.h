// The fusion planner's view of single ops: its classes, and the op shapes the kernel lowerings take.
#pragma once

#include <set>
#include <vector>

#include "ir/IR.h"

namespace dscc::fuseops {

/// The planner's classes of an op.
enum class Cls { Free, Elementwise, Reduction, Composite, Matmul };

/// True for ops that need no kernel: constants, dims, checks, reshapes
/// (views) and scalar host arithmetic over other free ops in `freeSet`.
bool isFreeOp(const Operation& op, const std::set<const Operation*>& freeSet);

/// The planner's class of `op`, from the op patterns of ir/IndexMap.h:
/// reductions, the opaque ops it knows (matmul, composites not yet
/// decomposed), and everything an index map describes (elementwise to
/// injective).
Cls classify(const Operation& op, const std::set<const Operation*>& freeSet);

/// The element count of `t`, as a dim expression.
DimExpr numel(const Type& t);

/// The stitch lowering's form: argmax aside, a reduction of the last axis alone.
bool lastAxisReduction(const Operation& op);

/// Reduced axes are the trailing ones: a row reduction.
bool isRowReduction(const Operation& op);

/// A transpose the BLAS can read or write through strides (the contiguous
/// input axis stays among the two innermost output axes), or a reshape.
bool layoutCompatible(const Operation& op);

/// Data movement: an injective op other than a reshape (a view), or broadcast_to.
bool movesData(const Operation& op);

/// A shape without its literal 1s: broadcasting, and a reshape that only adds
/// or drops 1s, map an index to the element at the same other indices.
std::vector<DimExpr> squeezed(const std::vector<DimExpr>& d);

/// Points each `dim` of a computed value at an argument with the same dim: a
/// dim reads only a shape, so the value stays free to fuse (a mean's count no
/// longer ties its sum's producer to a kernel of its own).
void redirectDims(Function& f);

}  // namespace dscc::fuseops
