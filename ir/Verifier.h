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
class ShapeOracle {
 public:
  virtual ~ShapeOracle() = default;
  /// Is a == b for every assignment allowed by the function's facts?
  virtual Tri equal(const DimExpr& a, const DimExpr& b);
};

/// Checks `op` (arity, attributes, operand dtypes and ranks) and sets its
/// result types: inferred, or the explicit ones after checking them against
/// what can be inferred. Reports errors to `diags`; returns false on error
/// (result types are then set to a best guess so parsing can continue).
bool inferOpTypes(Function& f, Operation& op, DiagEngine& diags, ShapeOracle* oracle = nullptr);

/// Checks a function after parsing: facts, return values vs declared result
/// types, and every op again (after passes rewrite the IR).
bool verifyFunction(Function& f, DiagEngine& diags, ShapeOracle* oracle = nullptr);
/// verifyFunction on every function; also rejects duplicate function names.
bool verifyModule(Module& m, DiagEngine& diags, ShapeOracle* oracle = nullptr);

/// Normalises an axis attribute against `rank` (negative counts from the end);
/// nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, size_t rank);

}  // namespace dscc
