// The verifier: arity, attributes, dtypes, ranks and dims of every op, with
// result-type inference. Symbolic reasoning is delegated to a ShapeOracle
// hook that the shape-analysis pass provides; the default one only compares
// normal forms.
#pragma once

#include "ir/Diagnostics.h"
#include "ir/IR.h"

namespace dscc {

/// The answer to a question about dims.
enum class Tri { Proved, Disproved, Unknown };

/// Answers relations between dims of one function. The default answers from
/// normal forms alone: equal forms are Proved, different constants Disproved.
/// The shape-analysis pass supplies one backed by union-find and Z3.
class ShapeOracle {
 public:
  virtual ~ShapeOracle() = default;
  /// Is a == b for every assignment allowed by the function's facts?
  /// (Disproved: never.)
  virtual Tri equal(const DimExpr& a, const DimExpr& b);
  /// Is a == b || a == 1 || b == 1 always? (Disproved: never.)
  virtual Tri broadcastable(const DimExpr& a, const DimExpr& b);
  /// An assignment of the symbols that breaks the last relation answered
  /// Disproved, e.g. "S = 1" ("" if none is known).
  virtual std::string counterexample() { return ""; }
  /// A relation `op` needs that is neither proved nor disproved: the oracle
  /// may record it as a run-time check (and assume it from then on).
  virtual void requireAtRuntime(const CheckRelation& r, const Operation* op) {}
  /// A `check` op seen while verifying: its relation holds after it.
  virtual void assume(const CheckRelation& r) {}
  /// Replace reshape's `?` dims by the expression the element count implies.
  virtual bool solveAnonymousDims() { return false; }
};

/// Checks `op` (arity, attributes, operand dtypes and ranks) and sets its
/// result types: inferred, or the explicit ones after checking them against
/// what can be inferred. Reports errors to `diags`; returns false on error
/// (result types are then set to a best guess so parsing can continue).
bool inferOpTypes(Function& f, Operation& op, DiagEngine& diags, ShapeOracle* oracle = nullptr);

/// Checks a function after parsing: facts, return values vs declared result
/// types, and every op again (after passes rewrite the IR).
bool verifyFunction(Function& f, DiagEngine& diags, ShapeOracle* oracle = nullptr);
/// Checks the returned values against the declared result types.
bool verifyReturns(Function& f, DiagEngine& diags, ShapeOracle& oracle);
/// verifyFunction on every function; also rejects duplicate function names.
bool verifyModule(Module& m, DiagEngine& diags, ShapeOracle* oracle = nullptr);

/// Normalises an axis attribute against `rank` (negative counts from the end);
/// nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, size_t rank);

}  // namespace dscc
