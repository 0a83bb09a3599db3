// What each op is (its pattern: elementwise ... opaque) and how it maps an output index to its operands' indices.
//
// One definition of both facts, used by the fusion planner (passes/Fuse.cpp),
// the element generator of code generation (codegen/ElementGenerator.cpp) and
// the tests, which run the maps on concrete indices against the interpreter.
//
// The maps are templates over an index arithmetic `A` so that the same code
// computes concrete int64 indices (IntIndexArith, below) and emits LLVM IR
// (codegen's arithmetic). `A` provides:
//
//   using V = ...;                 an index value (booleans are V too)
//   V c(int64_t);                  a constant
//   V add(V, V), sub(V, V), mul(V, V);
//   V div(V, V), rem(V, V);        floor division / remainder of non-negative values
//   V lt(V, V), eq(V, V);          signed comparisons
//   V ult(V, V);                   unsigned x < y (0 <= x < y for y >= 0 in one comparison)
//   V select(V cond, V a, V b);
//   V dim(const Value* v, size_t d);   the run-time size of dim d of v's type
//   V expr(const DimExpr& e);          the run-time value of a dim expression
//
// Data-dependent and piecewise maps (gather's index, concat's operand) give
// the pieces; the caller branches or loads (only it can read data).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace dscc {

/// TVM's ordered op patterns: a group's pattern is the max of its ops'.
enum class OpPattern {
  Elementwise,  ///< same shape in and out, element i from element i (unary, binary without broadcast)
  Broadcast,    ///< numpy broadcasting of operands (binary, select, broadcast_to)
  Injective,    ///< each output element reads one element of each operand at a computed index (data movement)
  Reduction,    ///< output elements combine many input elements (reduce_*, argmax)
  Opaque        ///< not expressed by an index map (matmul, composites, constants, shape ops)
};

/// True for the ops that compute each element from their operands' elements
/// at the same output index, as is or numpy-broadcast: unary, cast, binary,
/// logical, compare and select (the elementwise and broadcast patterns less
/// broadcast_to, which computes nothing: it moves data). The one definition
/// of "pointwise" for the planner, the library epilogue and code generation.
bool isPointwise(const Operation& op);

/// The pattern of `op`.
OpPattern opPattern(const Operation& op);
/// "elementwise", "broadcast", ...
const char* patternName(OpPattern p);

/// True when `op` reads its operands at the kernel's own index (elementwise
/// or numpy broadcasting of its output index) or is a reduction of its
/// operand at that index (not argmax): what the loop, input and stitch
/// lowerings take. An op whose index map moves data (reshape, transpose,
/// slice, concat, gather, iota, broadcast_to) or an argmax needs the element
/// generator: a kernel holding one is a generic kernel. Opaque ops: false.
bool readsAtKernelIndex(const Operation& op);

/// The reduced axes of a reduce_* or argmax op, normalised and sorted; all
/// axes when a reduction has no `axes` attribute. Empty on a malformed op.
std::vector<size_t> reducedAxes(const Operation& op);
/// True when the reduction keeps its reduced dims as 1s.
bool keepsDims(const Operation& op);

/// The permutation of a transpose (the reversal when it has no `perm`).
std::vector<size_t> transposePerm(const Operation& op);

/// One sliced axis of a slice op: the bound expressions and the step.
struct SliceAxis {
  size_t axis = 0;
  DimExpr start, end;
  int64_t step = 1;
};
/// The sliced axes of a slice op, normalised.
std::vector<SliceAxis> sliceAxes(const Operation& op);

/// The axis attribute of concat, gather, iota, argmax and dim, normalised for `rank`.
size_t opAxis(const Operation& op, size_t rank, int64_t dflt = 0);

/// Numpy broadcasting: the index into `x` (whose dims right-align to `out`)
/// of output element `oi`. A dim of x that is the literal 1 reads 0; one equal
/// to the output's (or any other constant) reads the output index; a symbolic
/// dim that may be 1 at run time selects.
template <class A>
std::vector<typename A::V> broadcastSource(A& a, const Value* x, const std::vector<DimExpr>& out,
                                           const std::vector<typename A::V>& oi) {
  std::vector<typename A::V> r;
  size_t lead = out.size() - x->type.rank();
  for (size_t j = 0; j < x->type.rank(); ++j) {
    const DimExpr& d = x->type.dims[j];
    if (d.isConst() && d.constValue() == 1) r.push_back(a.c(0));
    else if (d == out[j + lead] || d.isConst()) r.push_back(oi[j + lead]);
    else r.push_back(a.select(a.eq(a.dim(x, j), a.c(1)), a.c(0), oi[j + lead]));
  }
  return r;
}

/// The row-major flat index of `idx` in the dims of `v`.
template <class A>
typename A::V linearize(A& a, const Value* v, const std::vector<typename A::V>& idx) {
  typename A::V flat = a.c(0);
  for (size_t d = 0; d < idx.size(); ++d) flat = d == 0 ? idx[0] : a.add(a.mul(flat, a.dim(v, d)), idx[d]);
  return flat;
}

/// The multi-index of row-major flat index `flat` in the dims of `v`.
template <class A>
std::vector<typename A::V> delinearize(A& a, const Value* v, typename A::V flat) {
  size_t r = v->type.rank();
  std::vector<typename A::V> idx(r, a.c(0));
  for (size_t d = r; d-- > 0;) {
    if (d == 0) {
      idx[0] = flat;
      break;
    }
    typename A::V n = a.dim(v, d);
    idx[d] = a.rem(flat, n);
    flat = a.div(flat, n);
  }
  return idx;
}

/// Reshape: the same flat index in the operand's dims.
template <class A>
std::vector<typename A::V> reshapeSource(A& a, const Operation& op, const std::vector<typename A::V>& oi) {
  return delinearize(a, op.operands[0], linearize(a, op.result(), oi));
}

/// Transpose: operand index perm[i] is output index i.
template <class A>
std::vector<typename A::V> transposeSource(A& a, const Operation& op, const std::vector<typename A::V>& oi) {
  std::vector<size_t> perm = transposePerm(op);
  std::vector<typename A::V> r(oi.size(), a.c(0));
  for (size_t i = 0; i < perm.size(); ++i) r[perm[i]] = oi[i];
  return r;
}

/// Slice: start + i * step along each sliced axis, with numpy's clamped
/// bounds computed from the run-time dim (as ir/InterpData.cpp runSlice).
template <class A>
std::vector<typename A::V> sliceSource(A& a, const Operation& op, const std::vector<typename A::V>& oi) {
  std::vector<typename A::V> r = oi;
  const Value* x = op.operands[0];
  for (const SliceAxis& s : sliceAxes(op)) {
    typename A::V D = a.dim(x, s.axis), st = a.expr(s.start);
    st = a.select(a.lt(st, a.c(0)), a.add(st, D), st);
    typename A::V lo = s.step > 0 ? a.c(0) : a.c(-1), hi = s.step > 0 ? D : a.sub(D, a.c(1));
    st = a.select(a.lt(st, lo), lo, st);
    st = a.select(a.lt(hi, st), hi, st);
    r[s.axis] = a.add(st, a.mul(oi[s.axis], a.c(s.step)));
  }
  return r;
}

/// Concat: operand k covers [offsets[k], offsets[k+1]) along the axis; its
/// index is the output's, less offsets[k] there. Returns the k+1 offsets.
template <class A>
std::vector<typename A::V> concatOffsets(A& a, const Operation& op) {
  size_t axis = opAxis(op, op.result()->type.rank());
  std::vector<typename A::V> off{a.c(0)};
  for (const Value* v : op.operands) off.push_back(a.add(off.back(), a.dim(v, axis)));
  return off;
}
template <class A>
std::vector<typename A::V> concatSource(A& a, const Operation& op, const std::vector<typename A::V>& offsets, size_t k,
                                        const std::vector<typename A::V>& oi) {
  std::vector<typename A::V> r = oi;
  size_t axis = opAxis(op, op.result()->type.rank());
  r[axis] = a.sub(oi[axis], offsets[k]);
  return r;
}

/// Gather (numpy take along `axis`): the index into the indices operand,
/// and the index into the data operand once the index value `w` is read.
/// `w` is wrapped once if negative; one still outside [0, D) reads element
/// 0 of the dim, so the address stays in the buffer (the interpreter and
/// compiled CPU code report such an index: ElementGenerator's gather check,
/// whose comparison is this one; the GPU targets read element 0).
template <class A>
std::vector<typename A::V> gatherIndexSource(A&, const Operation& op, const std::vector<typename A::V>& oi) {
  size_t axis = opAxis(op, op.operands[0]->type.rank());
  size_t ri = op.operands[1]->type.rank();
  return std::vector<typename A::V>(oi.begin() + static_cast<std::ptrdiff_t>(axis),
                                    oi.begin() + static_cast<std::ptrdiff_t>(axis + ri));
}
template <class A>
std::vector<typename A::V> gatherDataSource(A& a, const Operation& op, const std::vector<typename A::V>& oi,
                                            typename A::V w) {
  const Value* x = op.operands[0];
  size_t axis = opAxis(op, x->type.rank());
  size_t ri = op.operands[1]->type.rank();
  typename A::V D = a.dim(x, axis);
  w = a.select(a.lt(w, a.c(0)), a.add(w, D), w);
  w = a.select(a.ult(w, D), w, a.c(0));
  std::vector<typename A::V> r(oi.begin(), oi.begin() + static_cast<std::ptrdiff_t>(axis));
  r.push_back(w);
  r.insert(r.end(), oi.begin() + static_cast<std::ptrdiff_t>(axis + ri), oi.end());
  return r;
}

/// Reductions and argmax: the operand index from the output index and the
/// loop variables of the reduced axes (`red[k]` for reducedAxes(op)[k]).
template <class A>
std::vector<typename A::V> reductionSource(A& a, const Operation& op, const std::vector<typename A::V>& oi,
                                           const std::vector<typename A::V>& red) {
  const Type& in = op.operands[0]->type;
  std::vector<size_t> axes = reducedAxes(op);
  bool keep = keepsDims(op);
  std::vector<typename A::V> r;
  size_t o = 0, k = 0;
  for (size_t d = 0; d < in.rank(); ++d) {
    if (k < axes.size() && axes[k] == d) {
      r.push_back(red[k++]);
      if (keep) ++o;
    } else {
      r.push_back(oi[o++]);
    }
  }
  (void)a;
  return r;
}

/// Concrete index arithmetic over a map of value shapes, for tests and tools.
struct IntIndexArith {
  using V = int64_t;
  std::map<const Value*, std::vector<int64_t>> shapes;
  DimBindings env;
  V c(int64_t v) { return v; }
  V add(V x, V y) { return x + y; }
  V sub(V x, V y) { return x - y; }
  V mul(V x, V y) { return x * y; }
  V div(V x, V y) { return y == 0 ? 0 : x / y; }
  V rem(V x, V y) { return y == 0 ? 0 : x % y; }
  V lt(V x, V y) { return x < y; }
  V ult(V x, V y) { return static_cast<uint64_t>(x) < static_cast<uint64_t>(y); }
  V eq(V x, V y) { return x == y; }
  V select(V c, V x, V y) { return c ? x : y; }
  V dim(const Value* v, size_t d) { return shapes.at(v).at(d); }
  V expr(const DimExpr& e) { return e.evaluate(env).value_or(0); }
};

}  // namespace dscc
