// Verification and result-type inference for every op category.
#include "ir/Verifier.h"

#include "ir/KernelKind.h"
#include "ir/VerifierInternal.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace dscc {

namespace {

// Whether the finite literal `d` rounds to infinity in float dtype `t`
// (round to nearest even): from its largest finite value plus half an ulp up,
// since that largest value's mantissa is odd.
bool overflowsFloat(double d, DType t) {
  double m = std::fabs(d);
  switch (t) {
    case DType::F32: return m >= 0x1p128 - 0x1p103;
    case DType::F16: return m >= 65520.0;
    case DType::BF16: return m >= 0x1p128 - 0x1p119;
    default: return false;  // f64: the parser already refuses what strtod makes inf
  }
}

}  // namespace

Tri ShapeOracle::equal(const DimExpr& a, const DimExpr& b) {
  if (a == b) return Tri::Proved;
  DimExpr d = a - b;
  if (d.isConst()) return Tri::Disproved;
  return Tri::Unknown;
}

Tri ShapeOracle::broadcastable(const DimExpr& a, const DimExpr& b) {
  auto one = [](const DimExpr& e) { return e.isConst() && e.constValue() == 1; };
  if (a == b || one(a) || one(b)) return Tri::Proved;
  if (a.isConst() && b.isConst()) return Tri::Disproved;
  return Tri::Unknown;
}

std::optional<int64_t> normalizeAxis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

namespace verifier_detail {

std::optional<int64_t> OpChecker::intAttr(const char* n, std::optional<int64_t> dflt) {
  const Attribute* a = op_.attr(n);
  if (!a) {
    if (!dflt) err("'" + opName() + "' needs attribute '" + n + "'");
    return dflt;
  }
  if (a->kind != Attribute::Kind::Int) {
    err(a->loc, "attribute '" + std::string(n) + "' of '" + opName() + "' must be an integer");
    return std::nullopt;
  }
  return a->i;
}

std::optional<bool> OpChecker::boolAttr(const char* n, bool dflt) {
  const Attribute* a = op_.attr(n);
  if (!a) return dflt;
  if (a->kind != Attribute::Kind::Bool) {
    err(a->loc, "attribute '" + std::string(n) + "' of '" + opName() + "' must be true or false");
    return std::nullopt;
  }
  return a->b;
}

std::optional<std::vector<int64_t>> OpChecker::intListAttr(const char* n) {
  const Attribute* a = op_.attr(n);
  if (!a) return std::nullopt;
  std::vector<int64_t> out;
  if (a->kind == Attribute::Kind::List) {
    for (const auto& x : a->list) {
      if (x.kind != Attribute::Kind::Int) {
        err(a->loc, "attribute '" + std::string(n) + "' of '" + opName() + "' must be a list of integers");
        return std::nullopt;
      }
      out.push_back(x.i);
    }
    return out;
  }
  err(a->loc, "attribute '" + std::string(n) + "' of '" + opName() + "' must be a list of integers");
  return std::nullopt;
}

std::optional<int64_t> OpChecker::axisAttr(const char* n, size_t rank, std::optional<int64_t> dflt) {
  auto v = intAttr(n, dflt);
  if (!v) return std::nullopt;
  auto ax = normalizeAxis(*v, rank);
  if (!ax) {
    const Attribute* a = op_.attr(n);
    err(a ? a->loc : op_.loc, "axis " + std::to_string(*v) + " is out of range for rank " +
                                  std::to_string(rank) + " in '" + opName() + "'");
  }
  return ax;
}

bool OpChecker::sameDType(size_t a, size_t b) {
  if (in(a).dtype == in(b).dtype) return true;
  return err("operands of '" + opName() + "' have different dtypes: " + operandName(a) + " is " +
             std::string(dtypeName(in(a).dtype)) + ", " + operandName(b) + " is " +
             std::string(dtypeName(in(b).dtype)));
}

bool OpChecker::requireFloat(size_t i) {
  if (isFloat(in(i).dtype)) return true;
  return err("'" + opName() + "' needs a floating-point operand, but " + operandName(i) + " is " +
             in(i).str());
}

bool OpChecker::requireDomain() {
  ElemDomain d = op_.info().domain;
  if (d == ElemDomain::Any || op_.operands.empty() || definedOn(op_.kind, in(0).dtype)) return true;
  if (d == ElemDomain::Float) return requireFloat(0);
  if (d == ElemDomain::Numeric) return requireNumeric(0);
  return err("'" + opName() + "' needs " + std::string(domainWords(d)) + " operand, but " + operandName(0) + " is " +
             in(0).str());
}

bool OpChecker::requireNumeric(size_t i) {
  if (!isBool(in(i).dtype)) return true;
  return err("'" + opName() + "' does not accept i1 operands (" + operandName(i) + " is " +
             in(i).str() + ")");
}

bool OpChecker::checkEqualDims(const DimExpr& a, const DimExpr& b, const std::string& what, const std::string& need) {
  Tri t = oracle_.equal(a, b);
  if (t == Tri::Proved) return true;
  if (t == Tri::Unknown) {
    oracle_.requireAtRuntime({"eq", a, b, need}, &op_);
    return true;
  }
  err(what + ": " + a.str() + " vs " + b.str());
  exampleNote();
  return false;
}

bool OpChecker::checkBroadcastsTo(const DimExpr& d, const DimExpr& want, const std::string& what, const std::string& need) {
  Tri eq = oracle_.equal(d, want);
  if (eq == Tri::Proved) return true;
  std::string ex = oracle_.counterexample();
  Tri one = oracle_.equal(d, DimExpr(1));
  if (one == Tri::Proved) return true;
  if (eq == Tri::Disproved && one == Tri::Disproved) {
    err(what + ": " + d.str() + " vs " + want.str());
    if (!ex.empty()) diags_.note(op_.loc, "e.g. " + ex);
    return false;
  }
  oracle_.requireAtRuntime({"broadcasts_to", d, want, need}, &op_);
  return true;
}

void OpChecker::exampleNote() {
  std::string ex = oracle_.counterexample();
  if (!ex.empty()) diags_.note(op_.loc, "e.g. " + ex);
}

std::optional<std::vector<DimExpr>> OpChecker::broadcast(const std::vector<std::vector<DimExpr>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<DimExpr> out(rank, DimExpr(1));
  bool good = true;
  for (size_t k = 0; k < rank; ++k) {
    bool first = true;
    for (const auto& s : shapes) {
      if (k + s.size() < rank) continue;
      const DimExpr& d = s[k + s.size() - rank];
      if (first) {
        out[k] = d;
        first = false;
        continue;
      }
      const DimExpr& cur = out[k];
      auto one = [&](const DimExpr& e) {
        return (e.isConst() && e.constValue() == 1) || (!e.isConst() && oracle_.equal(e, DimExpr(1)) == Tri::Proved);
      };
      if (oracle_.equal(cur, d) == Tri::Proved || one(d)) continue;
      if (one(cur)) {
        out[k] = d;
        continue;
      }
      Tri bt = oracle_.broadcastable(cur, d);
      if (bt == Tri::Disproved) {
        err("operands of '" + opName() + "' cannot be broadcast: dim " + std::to_string(k) +
            " is " + cur.str() + " in one and " + d.str() + " in another");
        exampleNote();
        good = false;
        continue;
      }
      if (bt == Tri::Unknown)
        oracle_.requireAtRuntime({"broadcastable", cur, d, "operands of '" + opName() + "' broadcast in dim " + std::to_string(k)}, &op_);
      out[k] = DimExpr::bcast(cur, d);
    }
  }
  if (!good) return std::nullopt;
  return out;
}

void OpChecker::setResult(Type t) {
  Value* r = op_.results[0].get();
  if (!op_.hasExplicitType) {
    r->type = t;
    return;
  }
  const Type& d = r->type;
  std::string msg = "declared result type " + d.str() + " does not match the inferred " + t.str();
  if (d.dtype != t.dtype || d.rank() != t.rank()) {
    err(msg);
    r->type = t;
    return;
  }
  for (size_t i = 0; i < d.rank(); ++i) {
    Tri eq = oracle_.equal(d.dims[i], t.dims[i]);
    if (eq == Tri::Disproved) {
      err(msg);
      exampleNote();
      r->type = t;
      return;
    }
    if (eq == Tri::Unknown)
      oracle_.requireAtRuntime({"eq", d.dims[i], t.dims[i], "declared dim " + std::to_string(i) + " of %" + r->name}, &op_);
  }
  // The declared type stays: it is what the user means, and it is checked at run time.
}

bool OpChecker::run() {
  const OpInfo& info = op_.info();
  size_t n = op_.operands.size();
  if (static_cast<int>(n) < info.minOperands ||
      (info.maxOperands >= 0 && static_cast<int>(n) > info.maxOperands)) {
    std::string want = info.minOperands == info.maxOperands ? std::to_string(info.minOperands)
                       : info.maxOperands < 0 ? "at least " + std::to_string(info.minOperands)
                       : std::to_string(info.minOperands) + " to " + std::to_string(info.maxOperands);
    err("'" + opName() + "' expects " + want + " operand" + (want == "1" ? "" : "s") + ", got " +
        std::to_string(n));
  }
  size_t wantResults = info.category == OpCategory::Check ? 0 : 1;
  if (info.category != OpCategory::Fusion && op_.results.size() != wantResults)
    err("'" + opName() + "' has " + std::to_string(wantResults) + " result" + (wantResults == 1 ? "" : "s") +
        ", but " + std::to_string(op_.results.size()) + (op_.results.size() == 1 ? " is" : " are") + " named");
  for (const auto& [name, a] : op_.attrs) {
    if (op_.kind == OpKind::Constant && name == "value") continue;
    if (!opAllowsAttr(op_.kind, name)) {
      std::string allowed(info.attrs);
      err(a.loc, "unknown attribute '" + name + "' for '" + opName() + "'" +
                     (allowed.empty() ? " (it takes none)" : " (expected one of: " + allowed + ")"));
    }
  }
  if (!ok_) return false;
  if (info.category == OpCategory::Check) {
    if (op_.hasExplicitType) return err("'check' has no result type");
    if (!checkRelation(op_))
      return err("'check' needs kind = \"eq\", \"le\", \"divisible\", \"broadcastable\" or \"broadcasts_to\", and dims lhs and rhs");
    return true;
  }
  if (!requireDomain()) return false;
  switch (info.category) {
    case OpCategory::Unary: case OpCategory::Cast: return inferUnary() && ok_;
    case OpCategory::Binary: case OpCategory::Logical: case OpCategory::Compare: return inferBinary() && ok_;
    case OpCategory::Select: return inferSelect() && ok_;
    case OpCategory::Reduce: return inferReduce() && ok_;
    case OpCategory::ArgMax: return inferArgMax() && ok_;
    case OpCategory::Scan: return inferCumSum() && ok_;
    case OpCategory::Softmax: return inferSoftmax() && ok_;
    case OpCategory::LayerNorm: return inferLayerNorm() && ok_;
    case OpCategory::Matmul: return inferMatmul() && ok_;
    case OpCategory::Conv: return inferConv() && ok_;
    case OpCategory::Pool: return inferPool() && ok_;
    case OpCategory::Recurrent: return inferRnn() && ok_;
    case OpCategory::Reshape: return inferReshape() && ok_;
    case OpCategory::Transpose: return inferTranspose() && ok_;
    case OpCategory::BroadcastTo: return inferBroadcastTo() && ok_;
    case OpCategory::Concat: return inferConcat() && ok_;
    case OpCategory::Slice: return inferSlice() && ok_;
    case OpCategory::Gather: return inferGather() && ok_;
    case OpCategory::Scatter: return inferScatter() && ok_;
    case OpCategory::Iota: return inferIota() && ok_;
    case OpCategory::Constant: return inferConstant() && ok_;
    case OpCategory::Dim: return inferDim() && ok_;
    case OpCategory::Check: return ok_;
    case OpCategory::Fusion: return inferFusion() && ok_;
  }
  return ok_;
}

bool OpChecker::inferUnary() {
  Type t = in(0);
  switch (op_.kind) {
    case OpKind::Cast: {
      const Attribute* to = op_.attr("to");
      if (!to) return err("'cast' needs attribute 'to' (e.g. {to = f16})");
      if (to->kind != Attribute::Kind::DType) return err(to->loc, "attribute 'to' of 'cast' must be a dtype");
      t.dtype = to->dtype;
      break;
    }
    case OpKind::Gelu: {
      const Attribute* a = op_.attr("approximate");
      if (a && (a->kind != Attribute::Kind::String || (a->s != "tanh" && a->s != "none")))
        return err(a->loc, "attribute 'approximate' of 'gelu' must be \"tanh\" or \"none\"");
      break;
    }
    default: break;  // the domain (Ops.def) was checked before
  }
  setResult(t);
  return true;
}

bool OpChecker::inferBinary() {
  std::vector<std::vector<DimExpr>> shapes;
  for (size_t i = 0; i < op_.operands.size(); ++i) shapes.push_back(in(i).dims);
  if (!sameDType(0, 1)) return false;
  OpCategory c = op_.info().category;
  auto dims = broadcast(shapes);
  if (!dims) return false;
  Type t{c == OpCategory::Compare ? DType::I1 : in(0).dtype, *dims};
  setResult(t);
  return true;
}

bool OpChecker::inferSelect() {
  if (in(0).dtype != DType::I1)
    return err("the condition of 'select' must be i1, but " + operandName(0) + " is " + in(0).str());
  if (!sameDType(1, 2)) return false;
  auto dims = broadcast({in(0).dims, in(1).dims, in(2).dims});
  if (!dims) return false;
  setResult(Type{in(1).dtype, *dims});
  return true;
}


bool OpChecker::inferReduce() {
  const Type& x = in(0);
  auto keep = boolAttr("keepdims", false);
  if (!keep) return false;
  std::set<int64_t> axes;
  if (const Attribute* a = op_.attr("axes")) {
    auto list = intListAttr("axes");
    if (!list) return false;
    for (int64_t v : *list) {
      auto ax = normalizeAxis(v, x.rank());
      if (!ax) return err(a->loc, "axis " + std::to_string(v) + " is out of range for rank " + std::to_string(x.rank()));
      if (!axes.insert(*ax).second) return err(a->loc, "axis " + std::to_string(v) + " is listed twice");
    }
  } else {
    for (size_t i = 0; i < x.rank(); ++i) axes.insert(static_cast<int64_t>(i));
  }
  Type t{x.dtype, {}};
  for (size_t i = 0; i < x.rank(); ++i) {
    if (!axes.count(static_cast<int64_t>(i))) t.dims.push_back(x.dims[i]);
    else if (*keep) t.dims.push_back(DimExpr(1));
  }
  setResult(t);
  return true;
}

bool OpChecker::inferArgMax() {
  const Type& x = in(0);
  if (x.rank() == 0) return err("'argmax' needs an operand of rank >= 1");
  auto ax = axisAttr("axis", x.rank(), std::nullopt);
  auto keep = boolAttr("keepdims", false);
  if (!ax || !keep) return false;
  Type t{DType::I64, {}};
  for (size_t i = 0; i < x.rank(); ++i) {
    if (static_cast<int64_t>(i) != *ax) t.dims.push_back(x.dims[i]);
    else if (*keep) t.dims.push_back(DimExpr(1));
  }
  setResult(t);
  return true;
}

bool OpChecker::inferSoftmax() {
  if (in(0).rank() == 0) return err("'" + opName() + "' needs an operand of rank >= 1");
  if (!axisAttr("axis", in(0).rank(), -1)) return false;
  setResult(in(0));
  return true;
}

bool OpChecker::inferLayerNorm() {
  const Type& x = in(0);
  if (!sameDType(0, 1) || !sameDType(0, 2)) return false;
  if (x.rank() == 0) return err("'layer_norm' needs an operand of rank >= 1");
  auto ax = axisAttr("axis", x.rank(), -1);
  if (!ax) return false;
  if (const Attribute* e = op_.attr("epsilon")) {
    if (!e->isNumber() || e->asDouble() < 0)
      return err(e->loc, "attribute 'epsilon' of 'layer_norm' must be a non-negative number");
  }
  std::vector<DimExpr> norm(x.dims.begin() + *ax, x.dims.end());
  for (size_t i = 1; i <= 2; ++i) {
    const Type& p = in(i);
    if (p.rank() > norm.size())
      return err(std::string(i == 1 ? "gamma" : "beta") + " " + operandName(i) + " has rank " +
                 std::to_string(p.rank()) + ", more than the " + std::to_string(norm.size()) +
                 " normalised dims of the input");
    for (size_t k = 0; k < p.rank(); ++k) {
      const DimExpr& d = p.dims[k];
      const DimExpr& want = norm[norm.size() - p.rank() + k];
      std::string pname = i == 1 ? "gamma" : "beta";
      if (!checkBroadcastsTo(d, want, pname + " does not match the normalised dims",
                             pname + " matches the normalised dims"))
        return false;
    }
  }
  setResult(x);
  return true;
}

bool OpChecker::inferMatmul() {
  Type a = in(0), b = in(1);
  if (!sameDType(0, 1)) return false;
  if (a.rank() == 0 || b.rank() == 0) return err("'matmul' operands must have rank >= 1");
  auto ta = boolAttr("transpose_a", false), tb = boolAttr("transpose_b", false);
  if (!ta || !tb) return false;
  if (*ta && a.rank() < 2) return err("'transpose_a' needs a left operand of rank >= 2");
  if (*tb && b.rank() < 2) return err("'transpose_b' needs a right operand of rank >= 2");
  if (*ta) std::swap(a.dims[a.rank() - 1], a.dims[a.rank() - 2]);
  if (*tb) std::swap(b.dims[b.rank() - 1], b.dims[b.rank() - 2]);
  bool aVec = a.rank() == 1, bVec = b.rank() == 1;
  if (aVec) a.dims.insert(a.dims.begin(), DimExpr(1));
  if (bVec) b.dims.push_back(DimExpr(1));
  const DimExpr& ka = a.dims[a.rank() - 1];
  const DimExpr& kb = b.dims[b.rank() - 2];
  if (!checkEqualDims(ka, kb, "matmul contraction dims differ", "matmul contraction dims are equal"))
    return false;
  std::vector<DimExpr> ba(a.dims.begin(), a.dims.end() - 2), bb(b.dims.begin(), b.dims.end() - 2);
  auto batch = broadcast({ba, bb});
  if (!batch) return false;
  Type t{a.dtype, *batch};
  if (!aVec) t.dims.push_back(a.dims[a.rank() - 2]);
  if (!bVec) t.dims.push_back(b.dims[b.rank() - 1]);
  setResult(t);
  return true;
}

bool OpChecker::inferConstant() {
  if (!op_.hasExplicitType) return err("'constant' needs a result type (e.g. ': f32[]')");
  const Type& r = op_.result()->type;
  const Attribute* v = op_.attr("value");
  auto checkScalar = [&](const Attribute& a) {
    if (a.kind == Attribute::Kind::Float && !isFloat(r.dtype))
      return err(a.loc, "float literal in a constant of type " + r.str());
    if (a.kind == Attribute::Kind::Bool && r.dtype != DType::I1)
      return err(a.loc, "boolean literal in a constant of type " + r.str());
    if (a.kind == Attribute::Kind::Int && r.dtype == DType::I1 && a.i != 0 && a.i != 1)
      return err(a.loc, "i1 constant must be 0, 1, true or false");
    if (a.kind == Attribute::Kind::Int && (r.dtype == DType::I8 || r.dtype == DType::I32)) {
      int64_t lim = r.dtype == DType::I8 ? 127 : 2147483647;
      if (a.i > lim || a.i < -lim - 1)
        return err(a.loc, "integer literal " + std::to_string(a.i) + " is out of range for " +
                              std::string(dtypeName(r.dtype)));
    }
    // A finite literal that rounds to infinity in the constant's dtype would
    // silently become inf (as 300 would wrap in i8); `inf` itself is spelt inf.
    if ((a.kind == Attribute::Kind::Float || a.kind == Attribute::Kind::Int) && isFloat(r.dtype)) {
      double d = a.kind == Attribute::Kind::Float ? a.f : static_cast<double>(a.i);
      if (std::isfinite(d) && overflowsFloat(d, r.dtype))
        return err(a.loc, std::string(a.kind == Attribute::Kind::Float ? "float" : "integer") + " literal " +
                              a.str() + " is out of range for " + std::string(dtypeName(r.dtype)) +
                              " (it would become inf; write inf for that)");
    }
    return true;
  };
  switch (v->kind) {
    case Attribute::Kind::Splat: return checkScalar(v->list[0]);
    case Attribute::Kind::File:
      if (v->s.empty()) return err("empty file name in constant");
      return true;
    case Attribute::Kind::Dense: {
      // Walk the nesting against the (static) dims.
      std::function<bool(const Attribute&, size_t)> walk = [&](const Attribute& a, size_t depth) -> bool {
        if (depth == r.rank()) {
          if (a.kind == Attribute::Kind::List) return err(a.loc, "dense literal is nested deeper than the rank of " + r.str());
          return checkScalar(a);
        }
        const DimExpr& d = r.dims[depth];
        if (!d.isConst()) return err("dense constant needs static dims, but " + r.str() + " has " + d.str());
        if (a.kind != Attribute::Kind::List && a.kind != Attribute::Kind::Dense)
          return err("dense literal does not match " + r.str() + ": expected a list at depth " + std::to_string(depth));
        if (static_cast<int64_t>(a.list.size()) != d.constValue())
          return err("dense literal does not match " + r.str() + ": dim " + std::to_string(depth) + " has " +
                     std::to_string(a.list.size()) + " elements, expected " + d.str());
        for (const auto& x : a.list)
          if (!walk(x, depth + 1)) return false;
        return true;
      };
      if (r.rank() == 0) {
        if (!v->b || v->list.size() != 1)
          return err("dense literal does not match " + r.str() + ": a scalar needs dense<VALUE>, not a list");
        return checkScalar(v->list[0]);
      }
      if (v->b) return err("dense literal does not match " + r.str() + ": expected a list, found a scalar");
      return walk(*v, 0);
    }
    default: return checkScalar(*v);
  }
}

bool OpChecker::inferDim() {
  if (!axisAttr("axis", in(0).rank(), std::nullopt)) return false;
  setResult(Type{DType::I64, {}});
  return true;
}

bool OpChecker::inferFusion() {
  const Attribute* k = op_.attr("kind");
  if (!k || k->kind != Attribute::Kind::String || !parseKernelKind(k->s))
    return err("'fusion' needs kind = \"loop\", \"input\", \"stitch\", \"library\" or \"generic\"");
  if (!op_.hasExplicitType) return err("'fusion' needs its result types");
  bool bodyOk = true;
  std::set<const Value*> inner;
  std::vector<const Value*> freeVals;
  for (auto& b : op_.body) {
    if (b->kind == OpKind::Fusion) return err(b->loc, "a fusion body cannot hold another fusion");
    if (b->kind == OpKind::Check) return err(b->loc, "a fusion body cannot hold a check");
    bodyOk &= inferOpTypes(f_, *b, diags_, &oracle_);
    for (const Value* v : b->operands)
      if (!inner.count(v) && std::find(freeVals.begin(), freeVals.end(), v) == freeVals.end()) freeVals.push_back(v);
    for (auto& r : b->results) inner.insert(r.get());
  }
  if (!bodyOk) return false;
  if (op_.body.empty()) return err("a fusion body needs at least one op");
  std::vector<const Value*> given(op_.operands.begin(), op_.operands.end());
  if (given != freeVals) {
    std::string want;
    for (const Value* v : freeVals) want += (want.empty() ? "%" : ", %") + v->name;
    return err("the operands of 'fusion' must be the outer values its body uses, in order of first use: " + want);
  }
  if (op_.yields.size() != op_.results.size())
    return err(op_.yieldLoc, "'fusion' has " + std::to_string(op_.results.size()) + " result(s) but yields " +
                                 std::to_string(op_.yields.size()));
  for (size_t i = 0; i < op_.yields.size(); ++i) {
    if (!inner.count(op_.yields[i])) return err(op_.yieldLoc, "'yield' must name values defined in the body");
    const Type& y = op_.yields[i]->type;
    const Type& r = op_.results[i]->type;
    bool bad = y.dtype != r.dtype || y.rank() != r.rank();
    for (size_t d = 0; !bad && d < y.rank(); ++d) bad = oracle_.equal(y.dims[d], r.dims[d]) == Tri::Disproved;
    if (bad) return err("result " + std::to_string(i) + " of 'fusion' is " + r.str() + " but the body yields " + y.str());
  }
  return true;
}

}  // namespace verifier_detail

using verifier_detail::OpChecker;

bool inferOpTypes(Function& f, Operation& op, DiagEngine& diags, ShapeOracle* oracle) {
  // An operand whose own op failed would only produce follow-on noise.
  for (const Value* v : op.operands)
    if (v->poisoned) {
      for (auto& r : op.results) r->poisoned = true;
      return false;
    }
  ShapeOracle dflt;
  OpChecker c(f, op, diags, oracle ? *oracle : dflt);
  bool ok = c.run();
  for (auto& r : op.results) r->poisoned = !ok;
  return ok;
}

bool verifyFunction(Function& f, DiagEngine& diags, ShapeOracle* oracle) {
  ShapeOracle dflt;
  ShapeOracle& o = oracle ? *oracle : dflt;
  int before = diags.errorCount();
  std::set<std::string> used;
  for (const auto& a : f.args)
    for (const auto& d : a->type.dims) d.collectSymbols(used);
  for (const Fact& fact : f.facts) {
    std::set<std::string> syms;
    fact.lhs.collectSymbols(syms);
    fact.rhs.collectSymbols(syms);
    fact.hi.collectSymbols(syms);
    for (const auto& s : syms)
      if (!used.count(s)) diags.error(fact.loc, "fact mentions symbol '" + s + "', which no argument type uses");
    if (syms.empty()) {
      std::string why;
      if (!fact.holds({}, &why)) diags.error(fact.loc, "fact '" + fact.str() + "' is always false");
    }
    if (fact.kind == Fact::Kind::Range && fact.rhs.isConst() && fact.hi.isConst() &&
        fact.rhs.constValue() > fact.hi.constValue())
      diags.error(fact.loc, "empty range in fact '" + fact.str() + "'");
  }
  for (auto& op : f.ops) {
    inferOpTypes(f, *op, diags, &o);
    if (op->kind == OpKind::Check)
      if (auto r = checkRelation(*op)) o.assume(*r);
  }
  verifyReturns(f, diags, o);
  return diags.errorCount() == before;
}

bool verifyReturns(Function& f, DiagEngine& diags, ShapeOracle& o) {
  int before = diags.errorCount();
  if (f.returns.size() != f.resultTypes.size()) {
    diags.error(f.returnLoc.valid() ? f.returnLoc : f.loc,
                "function '@" + f.name + "' returns " + std::to_string(f.returns.size()) +
                    " value(s) but its signature declares " + std::to_string(f.resultTypes.size()));
  } else {
    for (size_t i = 0; i < f.returns.size(); ++i) {
      if (f.returns[i]->poisoned) continue;  // its op's error says it all
      const Type& got = f.returns[i]->type;
      const Type& want = f.resultTypes[i];
      bool bad = got.dtype != want.dtype || got.rank() != want.rank();
      for (size_t k = 0; !bad && k < got.rank(); ++k) {
        Tri eq = o.equal(got.dims[k], want.dims[k]);
        bad = eq == Tri::Disproved;
        std::set<std::string> syms;
        want.dims[k].collectSymbols(syms);
        bool anon = std::any_of(syms.begin(), syms.end(), [](const std::string& n) { return n[0] == '?'; });
        // A declared `?` is whatever the value's size is: nothing to check.
        if (eq == Tri::Unknown && !anon)
          o.requireAtRuntime({"eq", got.dims[k], want.dims[k], "dim " + std::to_string(k) + " of result " + std::to_string(i)}, nullptr);
      }
      if (bad) {
        diags.error(f.returnLoc, "returned value %" + f.returns[i]->name + " has type " + got.str() +
                                     " but the signature declares " + want.str());
        if (!o.counterexample().empty()) diags.note(f.returnLoc, "e.g. " + o.counterexample());
        diags.note(f.returns[i]->loc, "%" + f.returns[i]->name + " is defined here");
      }
    }
  }
  return diags.errorCount() == before;
}

bool verifyModule(Module& m, DiagEngine& diags, ShapeOracle* oracle) {
  bool ok = true;
  for (auto& f : m.funcs) ok &= verifyFunction(*f, diags, oracle);
  return ok;
}

}  // namespace dscc
