// The in-memory IR: types, attributes, values, operations, functions, modules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/DType.h"
#include "ir/DimExpr.h"
#include "ir/Diagnostics.h"

namespace dscc {

/// Op kinds, generated from Ops.def.
enum class OpKind {
#define DSCC_OP(E, N, C, D, MIN, MAX, ATTRS, SUM) E,
#include "ir/Ops.def"
};

/// Groups of ops that share verification, inference and printing rules.
enum class OpCategory {
  Unary, Cast, Binary, Logical, Compare, Select, Reduce, ArgMax, Scan, Softmax, LayerNorm,
  Matmul, Conv, Pool, Recurrent, Reshape, Transpose, BroadcastTo, Concat, Slice, Gather, Scatter, Iota, Constant, Dim, Check, Fusion
};

/// The element dtypes an op is defined on (its first operand's): the
/// Domain column of Ops.def.
enum class ElemDomain {
  Any,       ///< every dtype
  Float,     ///< f32, f64, f16, bf16
  Numeric,   ///< floats and integers, not i1
  Integral,  ///< i1 and integers
};

/// Static facts about one op kind, from Ops.def.
struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpCategory category;
  ElemDomain domain;
  int minOperands, maxOperands;  // maxOperands < 0: unbounded
  std::string_view attrs;        // comma-separated allowed attribute names
  std::string_view summary;
};

/// All ops in table order.
const std::vector<OpInfo>& allOps();
const OpInfo& opInfo(OpKind k);
/// True when op `k` is defined on elements of `dt` (its Ops.def domain): the
/// one definition the verifier, the interpreter and the code generator ask.
bool definedOn(OpKind k, DType dt);
/// The dtypes of `d` in words, for messages ("a floating-point", "a
/// non-i1", "an i1 or integer").
std::string_view domainWords(ElemDomain d);
/// Looks an op up by its IR name.
std::optional<OpKind> lookupOp(std::string_view name);
/// True if `attr` is an allowed attribute name of `k`.
bool opAllowsAttr(OpKind k, std::string_view attr);

/// A tensor type: dtype and a list of dims (empty for a scalar).
struct Type {
  DType dtype = DType::F32;
  std::vector<DimExpr> dims;
  size_t rank() const { return dims.size(); }
  /// `f32[B, S, 768]`.
  std::string str() const;
  bool operator==(const Type& o) const { return dtype == o.dtype && dims == o.dims; }
  bool operator!=(const Type& o) const { return !(*this == o); }
};

struct Tensor;

/// An attribute value.
struct Attribute {
  enum class Kind {
    Int, Float, String, Bool, DType, List, Dim,
    Dense,  // constant dense<[...]>: `list` holds the nested literal; b: scalar form dense<5>
    Splat,  // constant splat<v>: `list[0]` holds the value
    File    // constant file("x.npy"): `s` holds the path
  };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  DType dtype = DType::F32;
  DimExpr dim;
  std::vector<Attribute> list;
  Location loc;
  /// File: the file's contents once read (loadFileConstants); codegen and the
  /// interpreter use them instead of reading the file again.
  std::shared_ptr<const Tensor> data;

  static Attribute makeInt(int64_t v) { Attribute a; a.kind = Kind::Int; a.i = v; return a; }
  static Attribute makeFloat(double v) { Attribute a; a.kind = Kind::Float; a.f = v; return a; }
  static Attribute makeBool(bool v) { Attribute a; a.kind = Kind::Bool; a.b = v; return a; }
  static Attribute makeString(std::string v) { Attribute a; a.kind = Kind::String; a.s = std::move(v); return a; }
  static Attribute makeDType(DType t) { Attribute a; a.kind = Kind::DType; a.dtype = t; return a; }
  static Attribute makeList(std::vector<Attribute> v) { Attribute a; a.kind = Kind::List; a.list = std::move(v); return a; }
  /// A dim expression; constant expressions become Int.
  static Attribute makeDim(const DimExpr& d);

  /// True for Int, or Dim (an integer-valued expression).
  bool isIntLike() const { return kind == Kind::Int || kind == Kind::Dim; }
  /// The value as a dim expression (Int or Dim).
  DimExpr asDim() const { return kind == Kind::Int ? DimExpr(i) : dim; }
  /// True for Int or Float.
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  double asDouble() const { return kind == Kind::Float ? f : kind == Kind::Bool ? b : static_cast<double>(i); }
  /// Text that re-parses to the same attribute.
  std::string str() const;
};

struct Operation;

/// An SSA value: a function argument or an op result.
struct Value {
  std::string name;  // without '%'
  Type type;
  Location loc;
  Operation* def = nullptr;  // null for arguments
  int index = 0;             // argument or result index
  bool poisoned = false;     // its op failed to verify: uses are not checked again
};

/// One operation `%r = op %a, %b {attrs} : type`.
struct Operation {
  OpKind kind;
  std::vector<Value*> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::vector<std::pair<std::string, Attribute>> attrs;  // in source order
  Location loc;
  bool hasExplicitType = false;  // the source gave `: TYPE`
  // A fusion's body: ops in order, and the values it yields as its results.
  // Body ops use outer values directly; the fusion's operands list them.
  std::vector<std::unique_ptr<Operation>> body;
  std::vector<Value*> yields;
  Location yieldLoc;

  const OpInfo& info() const { return opInfo(kind); }
  std::string_view name() const { return info().name; }
  /// The attribute named `n`, or null.
  const Attribute* attr(std::string_view n) const;
  /// Sets (or replaces) an attribute.
  void setAttr(const std::string& n, Attribute a);
  Value* result(size_t i = 0) const { return results[i].get(); }
};

/// A gelu in its tanh form (`{approximate = "tanh"}`); otherwise the exact
/// erf form ("none" or no attribute; the verifier refuses other values).
bool isTanhGelu(const Operation& op);

/// Calls `fn` on every op of `ops` and, recursively, of fusion bodies (pre-order).
void walkOps(const std::vector<std::unique_ptr<Operation>>& ops, const std::function<void(Operation&)>& fn);

/// A comparison operator in a `where` fact.
enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge };
std::string_view cmpOpText(CmpOp op);

/// The relation a `check` op asserts: kind "eq" (lhs == rhs), "le"
/// (lhs <= rhs), "divisible" (lhs % rhs == 0), "broadcastable"
/// (lhs == rhs || lhs == 1 || rhs == 1) or "broadcasts_to" (lhs == rhs ||
/// lhs == 1: a dim of an operand stretched to a dim of the result).
struct CheckRelation {
  std::string kind;
  DimExpr lhs, rhs;
  std::string what;  // what the relation is for, for messages
  /// `S == T`, `S % 2 == 0`, `broadcastable(S, T)`.
  std::string str() const;
  /// Evaluates under `env`; nullopt (with `err`) if a dim cannot be evaluated.
  std::optional<bool> holds(const DimBindings& env, std::string* err) const;
};
/// The relation of a `check` op; nullopt if its attributes are malformed.
std::optional<CheckRelation> checkRelation(const Operation& op);
/// Builds a `check` op for `r` at `loc`.
std::unique_ptr<Operation> makeCheckOp(const CheckRelation& r, Location loc);

/// A `where` fact: `S in [lo, hi]` or `lhs OP rhs` (e.g. `S % 8 == 0`).
struct Fact {
  enum class Kind { Range, Compare } kind = Kind::Compare;
  DimExpr lhs, rhs;  // Compare: lhs OP rhs; Range: lhs in [rhs, hi]
  DimExpr hi;
  CmpOp op = CmpOp::Eq;
  Location loc;
  /// The fact as written in canonical form, e.g. `S in [1, 512]`.
  std::string str() const;
  /// Checks the fact under concrete bindings; false with `err` set if violated
  /// or not evaluable.
  bool holds(const DimBindings& env, std::string* err) const;
};

/// A function `func @name(args) -> results where facts { body }`.
struct Function {
  std::string name;  // without '@'
  std::vector<std::unique_ptr<Value>> args;
  std::vector<Type> resultTypes;
  /// The results' names, one per result ("" where unnamed): the model's output
  /// names, used for `dscc run -o DIR` files and the generated C header.
  std::vector<std::string> resultNames;
  std::vector<Fact> facts;
  std::vector<std::unique_ptr<Operation>> ops;
  std::vector<Value*> returns;
  Location loc, returnLoc;
  int anonCounter = 0;  // for fresh `?` symbols

  /// The name of result `i`: its given name, or "" when unnamed.
  const std::string& resultName(size_t i) const {
    static const std::string none;
    return i < resultNames.size() ? resultNames[i] : none;
  }

  /// A fresh anonymous symbol (prints as `?`).
  DimExpr freshSymbol() { return DimExpr::symbol("?" + std::to_string(++anonCounter)); }
};

/// A parsed file: one or more functions.
struct Module {
  std::vector<std::unique_ptr<Function>> funcs;
  int file = -1;  // source buffer id
  /// `@main`, or the only function; null if neither exists.
  Function* entry() const;
  /// The function named `name`, or null.
  Function* lookup(std::string_view name) const;
};

}  // namespace dscc
