// Canonicalization: algebraic identities that make later passes see simpler IR.
#include "passes/Canonicalize.h"

#include <optional>
#include <vector>

#include "ir/IndexMap.h"
#include "ir/Rewrite.h"
#include "passes/DCE.h"

namespace dscc {
namespace {

// ---------------------------------------------------------------------------
// Matching helpers.

// Collects the scalar leaves of a (nested) dense literal.
void denseLeaves(const Attribute& a, std::vector<const Attribute*>& out) {
  if (a.kind == Attribute::Kind::List || a.kind == Attribute::Kind::Dense) {
    for (const auto& x : a.list) denseLeaves(x, out);
    return;
  }
  out.push_back(&a);
}

// The one value every element of `v` holds, when `v` comes from a `constant`
// that states it: a scalar literal, a splat, or a dense literal whose
// (non-zero number of) elements are all equal. Bools read as 0 and 1.
std::optional<double> splatValue(const Value* v) {
  if (!v->def || v->def->kind != OpKind::Constant) return std::nullopt;
  const Attribute* a = v->def->attr("value");
  if (!a) return std::nullopt;
  switch (a->kind) {
    case Attribute::Kind::Int: case Attribute::Kind::Float: case Attribute::Kind::Bool:
      return a->asDouble();
    case Attribute::Kind::Splat:
      if (a->list.empty() || a->list[0].kind == Attribute::Kind::List) return std::nullopt;
      return a->list[0].asDouble();
    case Attribute::Kind::Dense: {
      std::vector<const Attribute*> leaves;
      denseLeaves(*a, leaves);
      if (leaves.empty()) return std::nullopt;
      double first = leaves[0]->asDouble();
      for (const Attribute* l : leaves) {
        bool scalar = l->isNumber() || l->kind == Attribute::Kind::Bool;
        if (!scalar || l->asDouble() != first) return std::nullopt;  // NaN never matches
      }
      return first;
    }
    default:
      return std::nullopt;
  }
}

bool isSplatOf(const Value* v, double x) {
  auto s = splatValue(v);
  return s && *s == x;
}

// Operand `i` of `op`, if it has exactly the result's type and so can stand
// for the result: a constant that broadcasts it to a bigger shape rules it out.
Value* sameTypeOperand(const Operation& op, size_t i) {
  if (i >= op.operands.size() || op.results.size() != 1) return nullptr;
  Value* x = op.operands[i];
  return x->type == op.result()->type ? x : nullptr;
}

// The op defining `v` if it is of kind `k`.
Operation* defOfKind(const Value* v, OpKind k) { return v->def && v->def->kind == k ? v->def : nullptr; }

// The permutation a transpose applies: `perm`, or the reversed dims without it.
std::optional<std::vector<int64_t>> permOf(const Operation& t) {
  size_t rank = t.operands[0]->type.rank();
  std::vector<int64_t> perm;
  const Attribute* a = t.attr("perm");
  if (!a) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    return perm;
  }
  if (a->kind != Attribute::Kind::List || a->list.size() != rank) return std::nullopt;
  for (const auto& x : a->list) {
    if (x.kind != Attribute::Kind::Int || x.i < 0 || x.i >= static_cast<int64_t>(rank)) return std::nullopt;
    perm.push_back(x.i);
  }
  return perm;
}

// ---------------------------------------------------------------------------
// Rules that find a value to stand for the op's result (null: no match).

// x * 1 -> x, 1 * x -> x
Value* mulByOne(const Operation& op) {
  if (op.kind != OpKind::Mul) return nullptr;
  if (isSplatOf(op.operands[1], 1))
    if (Value* x = sameTypeOperand(op, 0)) return x;
  return isSplatOf(op.operands[0], 1) ? sameTypeOperand(op, 1) : nullptr;
}

// x + 0 -> x, 0 + x -> x
Value* addZero(const Operation& op) {
  if (op.kind != OpKind::Add) return nullptr;
  if (isSplatOf(op.operands[1], 0))
    if (Value* x = sameTypeOperand(op, 0)) return x;
  return isSplatOf(op.operands[0], 0) ? sameTypeOperand(op, 1) : nullptr;
}

// x - 0 -> x
Value* subZero(const Operation& op) {
  return op.kind == OpKind::Sub && isSplatOf(op.operands[1], 0) ? sameTypeOperand(op, 0) : nullptr;
}

// x / 1 -> x
Value* divByOne(const Operation& op) {
  return op.kind == OpKind::Div && isSplatOf(op.operands[1], 1) ? sameTypeOperand(op, 0) : nullptr;
}

// neg(neg(x)) -> x
Value* negNeg(const Operation& op) {
  if (op.kind != OpKind::Neg) return nullptr;
  Operation* inner = defOfKind(op.operands[0], OpKind::Neg);
  return inner && inner->operands[0]->type == op.result()->type ? inner->operands[0] : nullptr;
}

// transpose(x, identity) -> x
Value* identityTranspose(const Operation& op) {
  if (op.kind != OpKind::Transpose) return nullptr;
  auto perm = permOf(op);
  if (!perm) return nullptr;
  for (size_t i = 0; i < perm->size(); ++i)
    if ((*perm)[i] != static_cast<int64_t>(i)) return nullptr;
  return sameTypeOperand(op, 0);
}

// reshape(x) : type(x) -> x, broadcast_to(x) : type(x) -> x
Value* reshapeOrBroadcastToSameType(const Operation& op) {
  if (op.kind != OpKind::Reshape && op.kind != OpKind::BroadcastTo) return nullptr;
  return sameTypeOperand(op, 0);
}

// cast(x, to = dtype(x)) -> x
Value* castToSameDType(const Operation& op) {
  return op.kind == OpKind::Cast ? sameTypeOperand(op, 0) : nullptr;
}

// select(true, a, b) -> a, select(false, a, b) -> b
Value* selectConstantCondition(const Operation& op) {
  if (op.kind != OpKind::Select) return nullptr;
  auto c = splatValue(op.operands[0]);
  if (!c) return nullptr;
  return sameTypeOperand(op, *c != 0 ? 1 : 2);
}

// ---------------------------------------------------------------------------
// Rules that rewrite the op in place (true: changed). The result keeps its
// name and type, so no use needs redirecting.

// transpose(transpose(x, p), q) -> transpose(x, p∘q), where (p∘q)[i] = p[q[i]]
bool composeTransposes(Operation& op) {
  if (op.kind != OpKind::Transpose) return false;
  Operation* inner = defOfKind(op.operands[0], OpKind::Transpose);
  if (!inner) return false;
  auto p = permOf(*inner), q = permOf(op);
  if (!p || !q) return false;
  std::vector<Attribute> composed;
  for (int64_t i : *q) composed.push_back(Attribute::makeInt((*p)[static_cast<size_t>(i)]));
  op.operands[0] = inner->operands[0];
  op.setAttr("perm", Attribute::makeList(std::move(composed)));
  return true;
}

// transpose(x, p) -> reshape(x) when p moves only dims of size 1 (the others keep their order): the elements
// stay in place, so the transpose is a view (the channels-last pass leaves them at [N, 1, 1, C]).
bool transposeOfOnesToReshape(Operation& op) {
  if (op.kind != OpKind::Transpose) return false;
  auto p = permOf(op);
  if (!p) return false;
  bool identity = true;
  for (size_t i = 0; i < p->size(); ++i) identity = identity && (*p)[i] == int64_t(i);
  if (identity) return false;  // identityTranspose's case
  const std::vector<DimExpr>& d = op.operands[0]->type.dims;
  auto one = [&](int64_t i) { return d[size_t(i)].isConst() && d[size_t(i)].constValue() == 1; };
  int64_t last = -1;
  for (int64_t i : *p) {
    if (one(i)) continue;
    if (i < last) return false;
    last = i;
  }
  op.kind = OpKind::Reshape;
  op.attrs.clear();
  op.hasExplicitType = true;  // a reshape states its result type
  return true;
}

// reshape(reshape(x)) -> reshape(x): only the element order matters, and
// reshapes keep it.
bool reshapeOfReshape(Operation& op) {
  if (op.kind != OpKind::Reshape) return false;
  Operation* inner = defOfKind(op.operands[0], OpKind::Reshape);
  if (!inner) return false;
  op.operands[0] = inner->operands[0];
  return true;
}

// pow(x, 2) -> x * x and pow(x, 3) -> x * (x * x) for floats, the exponent a
// splat constant. Why: glibc's vector powf takes a scalar path for negative
// bases, so the x^3 of a tanh gelu (every PyTorch export of one) ran about 100x
// slower than two multiplications. The products have pow's special values
// (NaN, infinities, signed zeros, overflow) and stay within 2 ULP of the
// correctly rounded power. Returns the new op for x * x to insert before `op`,
// or null; `changed` says whether `op` was rewritten.
std::unique_ptr<Operation> powToMul(Function& f, Operation& op, DiagEngine& diags, bool& changed) {
  changed = false;
  if (op.kind != OpKind::Pow || op.operands.size() != 2 || !isFloat(op.result()->type.dtype)) return nullptr;
  auto e = splatValue(op.operands[1]);
  Value* x = sameTypeOperand(op, 0);
  if (!e || !x || (*e != 2 && *e != 3)) return nullptr;
  if (*e == 2) {
    op.kind = OpKind::Mul;
    op.operands = {x, x};
    changed = true;
    return nullptr;
  }
  auto sq = makeOp(f, OpKind::Mul, {x, x}, {}, freshName(f, op.result()->name + ".sq"), op.loc, diags, x->type);
  if (!sq) return nullptr;
  op.kind = OpKind::Mul;
  op.operands = {x, sq->result()};
  changed = true;
  return sq;
}

// True when every axis `op` reduces has extent 1.
bool unitAxesOnly(const Operation& op) {
  std::vector<size_t> axes = reducedAxes(op);
  const std::vector<DimExpr>& dims = op.operands[0]->type.dims;
  if (axes.empty()) return false;
  for (size_t a : axes)
    if (a >= dims.size() || !dims[a].isConst() || dims[a].constValue() != 1) return false;
  return true;
}

// A reduction over axes of extent 1 only -> its operand (keepdims) or a
// reshape to its result (dropping the 1s): each output element reduces one
// element, which every reduction (sum, mean, max, min, prod) returns as is.
// Why: a reduction of a reduced value over its kept 1s (random seed 6007
// program 197) is no reduction, and the planner need not place it as one.
Value* reduceOverOnes(const Operation& op) {
  if (op.info().category != OpCategory::Reduce || !keepsDims(op)) return nullptr;
  return unitAxesOnly(op) ? sameTypeOperand(op, 0) : nullptr;
}

// Without keepdims: the reduction becomes a reshape in place.
bool reduceOverOnesToReshape(Operation& op) {
  if (op.info().category != OpCategory::Reduce || keepsDims(op) || !unitAxesOnly(op)) return false;
  op.kind = OpKind::Reshape;
  op.attrs.clear();
  op.hasExplicitType = true;  // a reshape states its result type
  return true;
}

using ReplaceRule = Value* (*)(const Operation&);
using UpdateRule = bool (*)(Operation&);

constexpr ReplaceRule kReplaceRules[] = {mulByOne, addZero, subZero, divByOne, negNeg, identityTranspose,
                                         reshapeOrBroadcastToSameType, castToSameDType, selectConstantCondition,
                                         reduceOverOnes};
constexpr UpdateRule kUpdateRules[] = {composeTransposes, transposeOfOnesToReshape, reshapeOfReshape,
                                        reduceOverOnesToReshape};

// ---------------------------------------------------------------------------
// The driver.

// True if `v` is defined by an op of `body`.
bool definedIn(const std::vector<std::unique_ptr<Operation>>& body, const Value* v) {
  for (const auto& op : body)
    if (v->def == op.get()) return true;
  return false;
}

// A yield must name a value of the body, so a yielded body value may only be
// replaced by another body value.
bool canReplace(const Operation* fusion, const Value* from, const Value* to) {
  if (!fusion) return true;
  bool yielded = false;
  for (const Value* y : fusion->yields) yielded |= y == from;
  return !yielded || definedIn(fusion->body, to);
}

// One sweep over a block in program order; `fusion` owns the block (null at
// the top level). Returns the number of rewrites.
int sweep(Function& f, std::vector<std::unique_ptr<Operation>>& ops, const Operation* fusion, DiagEngine& diags) {
  int changes = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    Operation& op = *ops[i];
    if (op.kind == OpKind::Fusion) {
      changes += sweep(f, op.body, &op, diags);
      continue;
    }
    if (op.kind == OpKind::Check || op.results.size() != 1 || op.operands.empty()) continue;
    bool powChanged = false;
    if (auto sq = powToMul(f, op, diags, powChanged)) {
      // x * x goes right before the op that reads it; the loop then meets
      // the op again at i + 1 (now a mul) for the other rules.
      ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(i), std::move(sq));
      ++changes;
      continue;
    }
    changes += powChanged;
    // Each update moves an operand to an earlier value, so this ends.
    for (bool again = true; again;) {
      again = false;
      for (UpdateRule rule : kUpdateRules)
        if (rule(op)) {
          again = true;
          ++changes;
        }
    }
    for (ReplaceRule rule : kReplaceRules) {
      Value* to = rule(op);
      if (!to) continue;
      // A bypassed op matches again on the next sweep; only a replacement
      // that moves uses is progress.
      if (!isUnused(f, op.result()) && canReplace(fusion, op.result(), to)) {
        replaceAllUses(f, op.result(), to);
        ++changes;
      }
      break;
    }
  }
  return changes;
}

}  // namespace

bool canonicalize(Module& m, PassContext& ctx) {
  for (auto& f : m.funcs) {
    int total = 0;
    for (int n = sweep(*f, f->ops, nullptr, ctx.diags); n > 0; n = sweep(*f, f->ops, nullptr, ctx.diags)) total += n;
    // Rewritten body ops may read other outer values than before.
    if (total) refreshAllFusionOperands(*f);
    if (ctx.opts.stats) ctx.os << "// canonicalize stats of @" << f->name << ": " << total << " rewrites\n";
  }
  return true;
}

}  // namespace dscc
