// Shared internals of the reference interpreter: the per-op context, shape helpers and kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Diagnostics.h"
#include "ir/IR.h"
#include "ir/Tensor.h"

namespace dscc::interp {

/// A concrete shape.
using Shape = std::vector<int64_t>;

/// Product of the dims (1 for a scalar).
int64_t numelOf(const Shape& s);
/// Row-major strides in elements.
Shape stridesOf(const Shape& s);
/// `[2, 3]`.
std::string shapeStr(const Shape& s);
/// `f32[2, 3]`.
std::string typeStr(DType dt, const Shape& s);
/// The numpy broadcast of two shapes; nullopt if they are incompatible.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);
/// For every element of `out` (row-major), the flat index of the element of a
/// tensor of shape `in` that numpy broadcasting reads. `in` must broadcast to `out`.
std::vector<int64_t> broadcastIndex(const Shape& in, const Shape& out);
/// Normalises `axis` against `rank` (negative counts from the end).
std::optional<int64_t> normAxis(int64_t axis, size_t rank);

/// How trying to give a dim expression a concrete value went.
enum class DimFit { Ok, Mismatch, Error, Unsolvable };
/// Makes `d` equal `actual` under `env`: a fully bound `d` is evaluated and
/// compared (Mismatch / Error with `err` set); a `d` with exactly one unbound
/// symbol appearing linearly (c*X + rest) binds that symbol when the solution is
/// an exact non-negative integer (else Mismatch); anything else is Unsolvable.
/// `value` receives what `d` evaluates to when that is known.
DimFit fitDim(const DimExpr& d, int64_t actual, DimBindings& env, std::optional<int64_t>& value,
              std::string* err);
/// True if every symbol of `d` is bound in `env`.
bool allBound(const DimExpr& d, const DimBindings& env);

/// What an op kernel works with: the op, its operand tensors, the bindings, and
/// where errors go.
struct OpCtx {
  const Operation& op;
  std::vector<const Tensor*> in;
  DimBindings& env;
  DiagEngine& diags;

  /// Reports `msg` at the op's location and returns false, so kernels can
  /// `return ctx.fail(...)`.
  bool fail(const std::string& msg) const;
  /// The op's IR name, e.g. "reduce_sum".
  std::string name() const { return std::string(op.name()); }
  /// The declared dtype of result `i`.
  DType outDType(size_t i = 0) const { return op.result(i)->type.dtype; }
  /// An integer attribute, `dflt` if absent; false (reported) if not an integer.
  bool intAttr(std::string_view n, int64_t dflt, int64_t& out) const;
  /// A boolean attribute, `dflt` if absent; false (reported) if not a bool.
  bool boolAttr(std::string_view n, bool dflt, bool& out) const;
  /// The `axis` attribute normalised against `rank`; `dflt` when absent unless
  /// `required`. False (reported) if missing or out of range.
  bool axisAttr(size_t rank, int64_t dflt, bool required, size_t& axis) const;
  /// A list of integers (Dim entries evaluated with the bindings); `present`
  /// tells whether the attribute exists. False (reported) on a malformed list.
  bool intListAttr(std::string_view n, std::vector<int64_t>& out, bool& present) const;
  /// The shape the declared type of result `i` states, with dims that are not
  /// yet known (they hold an unbound symbol) as nullopt. False (reported) if a
  /// bound dim cannot be evaluated.
  bool typeShape(size_t i, std::vector<std::optional<int64_t>>& out) const;
};

// Kernels: each computes the op's results into `out` (one per result) or
// reports an error and returns false. The driver checks result shapes after.

/// Elementwise kernels (InterpElementwise.cpp); runBinary also serves the
/// Logical and Compare categories.
bool runUnary(OpCtx& c, std::vector<Tensor>& out);
bool runCast(OpCtx& c, std::vector<Tensor>& out);
bool runBinary(OpCtx& c, std::vector<Tensor>& out);
bool runSelect(OpCtx& c, std::vector<Tensor>& out);

/// Reductions, normalisations and matmul (InterpReduce.cpp).
bool runReduce(OpCtx& c, std::vector<Tensor>& out);
bool runArgMax(OpCtx& c, std::vector<Tensor>& out);
bool runSoftmax(OpCtx& c, std::vector<Tensor>& out);
bool runLayerNorm(OpCtx& c, std::vector<Tensor>& out);
bool runMatmul(OpCtx& c, std::vector<Tensor>& out);

/// Data-dependent writes and scans (InterpScatter.cpp): scatter (an index
/// outside [-N, N) is an error) and cumsum (floats accumulate in f64, as reduce_sum).
bool runScatter(OpCtx& c, std::vector<Tensor>& out);
bool runCumSum(OpCtx& c, std::vector<Tensor>& out);

/// Sliding windows, conv and pool (InterpConv.cpp): direct loops, computed in f64.
bool runConv(OpCtx& c, std::vector<Tensor>& out);
bool runPool(OpCtx& c, std::vector<Tensor>& out);
/// For a conv or pool: false (reported) when a window is larger than the padded input; true for other ops.
bool windowFitsAtRunTime(OpCtx& c);

/// Recurrent layers (InterpRecurrent.cpp): ONNX LSTM/GRU/RNN time loops, computed in f64.
bool runRnn(OpCtx& c, std::vector<Tensor>& out);

/// Data movement and values (InterpData.cpp).
bool runReshape(OpCtx& c, std::vector<Tensor>& out);
bool runTranspose(OpCtx& c, std::vector<Tensor>& out);
/// The elements of `x` in `perm` order: the transpose op's rule (a permutation, not checked here).
Tensor permuted(const Tensor& x, const std::vector<int64_t>& perm);
bool runBroadcastTo(OpCtx& c, std::vector<Tensor>& out);
bool runConcat(OpCtx& c, std::vector<Tensor>& out);
bool runSlice(OpCtx& c, std::vector<Tensor>& out);
bool runGather(OpCtx& c, std::vector<Tensor>& out);
bool runIota(OpCtx& c, std::vector<Tensor>& out);
bool runConstant(OpCtx& c, std::vector<Tensor>& out);
bool runDim(OpCtx& c, std::vector<Tensor>& out);

/// A `check` op (Interpreter.cpp): no results, an error if its relation fails.
bool runCheck(OpCtx& c, std::vector<Tensor>& out);

}  // namespace dscc::interp
