// Symbolic dimension expressions, always kept in a polynomial normal form.
//
// A DimExpr is a polynomial with integer coefficients over "atoms"; an atom is
// a symbol (`S`) or an operation the polynomial ring cannot express
// (exact division that does not simplify, floordiv, ceildiv, mod, min, max,
// bcast). Constructing an expression normalises it, so two expressions that
// cheap normalisation can show equal compare equal with ==.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dscc {

struct DimAtom;
/// Shared, immutable atom of a polynomial.
using DimAtomPtr = std::shared_ptr<const DimAtom>;

/// One monomial with its coefficient; `atoms` is sorted by key (with repeats).
struct DimTerm {
  int64_t coeff = 0;
  std::vector<DimAtomPtr> atoms;
};

/// Concrete values of symbols, by name.
using DimBindings = std::map<std::string, int64_t>;

/// A dimension expression in normal form. Cheap to copy.
class DimExpr {
 public:
  /// The constant 0.
  DimExpr() = default;
  /// An integer constant.
  DimExpr(int64_t v);  // NOLINT: implicit on purpose, 4 is a dim.
  /// A named symbol. Names starting with '?' are anonymous and print as `?`.
  static DimExpr symbol(const std::string& name);

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  DimExpr operator-() const;
  /// Exact division `a / b` (the compiler must prove or guard divisibility).
  static DimExpr div(const DimExpr& a, const DimExpr& b);
  /// Floor division; `b` is expected positive.
  static DimExpr floorDiv(const DimExpr& a, const DimExpr& b);
  /// Ceiling division; `b` is expected positive.
  static DimExpr ceilDiv(const DimExpr& a, const DimExpr& b);
  /// Floor modulus (result has the sign of `b`).
  static DimExpr mod(const DimExpr& a, const DimExpr& b);
  static DimExpr min(const DimExpr& a, const DimExpr& b);
  static DimExpr max(const DimExpr& a, const DimExpr& b);
  /// The numpy broadcast of two dims: `a` if a == b, the other if one is 1.
  static DimExpr bcast(const DimExpr& a, const DimExpr& b);

  /// True if the expression is an integer constant.
  bool isConst() const;
  /// The constant value; only meaningful when isConst().
  int64_t constValue() const;
  /// True if the expression is exactly one symbol.
  bool isSymbol() const;
  /// The symbol's name; only meaningful when isSymbol().
  const std::string& symbolName() const;
  /// True if some atom is not a plain symbol (div, min, ...).
  bool hasOpaqueAtoms() const;

  /// Canonical text that re-parses to an equal expression, e.g. `B*S+1`.
  std::string str() const;
  /// Like str() but anonymous symbols keep their unique names.
  std::string key() const;

  /// Evaluates under `env`. On an unbound symbol, a non-exact division, a
  /// division by zero or incompatible bcast returns nullopt and sets `err`.
  std::optional<int64_t> evaluate(const DimBindings& env, std::string* err = nullptr) const;
  /// Replaces symbols by expressions (symbols not in `m` stay).
  DimExpr substitute(const std::map<std::string, DimExpr>& m) const;
  /// Adds the names of all symbols in the expression to `out`.
  void collectSymbols(std::set<std::string>& out) const;

  const std::vector<DimTerm>& terms() const { return terms_; }

  /// True if some arithmetic on this thread overflowed 64 bits since the last
  /// call (results saturate); clears the flag. The parser reports it.
  static bool takeOverflow();

  bool operator==(const DimExpr& o) const;
  bool operator!=(const DimExpr& o) const { return !(*this == o); }
  /// Deterministic total order (by key), for sorting and maps.
  bool operator<(const DimExpr& o) const { return key() < o.key(); }

 private:
  std::vector<DimTerm> terms_;  // sorted; no zero coefficients
  friend struct DimAtom;
  friend class DimExprBuilder;
};

/// Kinds of atoms.
enum class DimAtomKind { Sym, Div, FloorDiv, CeilDiv, Mod, Min, Max, Bcast };

/// An atom: a symbol, or an opaque function of two expressions.
struct DimAtom {
  DimAtomKind kind;
  std::string name;           // for Sym
  std::vector<DimExpr> args;  // for the others
  std::string key;            // canonical text with unique anonymous names
  std::string text;           // canonical text as printed
};

}  // namespace dscc
