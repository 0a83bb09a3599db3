// Result-type inference of the data-movement ops: reshape, transpose, broadcast_to, concat, slice, gather, iota.
#include <algorithm>
#include <functional>
#include <set>

#include "ir/VerifierInternal.h"

namespace dscc::verifier_detail {

namespace {
DimExpr product(const std::vector<DimExpr>& dims) {
  DimExpr p(1);
  for (const auto& d : dims) p = p * d;
  return p;
}
int countAnon(const Type& t) {
  int n = 0;
  for (const auto& d : t.dims) {
    std::set<std::string> syms;
    d.collectSymbols(syms);
    for (const auto& s : syms) n += s[0] == '?';
  }
  return n;
}
}  // namespace

bool OpChecker::inferReshape() {
  if (!op_.hasExplicitType) return err("'reshape' needs a result type (': f32[...]')");
  const Type& r = op_.result()->type;
  if (r.dtype != in(0).dtype)
    return err("'reshape' cannot change the dtype (" + std::string(dtypeName(in(0).dtype)) + " to " +
               std::string(dtypeName(r.dtype)) + "); use 'cast'");
  if (countAnon(r) > 1) return err("'reshape' result type may have at most one '?' dim");
  if (countAnon(r) == 1) {
    // Static sizes that cannot split evenly are an error right away.
    DimExpr count = product(in(0).dims), others(1);
    for (const auto& d : r.dims)
      if (!(d.isSymbol() && d.symbolName()[0] == '?')) others = others * d;
    if (count.isConst() && others.isConst() && others.constValue() != 0 && count.constValue() % others.constValue() != 0)
      return err("'reshape' cannot split " + count.str() + " elements into " + r.str() + ": " + count.str() +
                 " is not a multiple of " + others.str());
  }
  if (countAnon(r) == 1 && oracle_.solveAnonymousDims()) {
    // The one `?` is the element count divided by the other dims.
    std::string anon;
    DimExpr others(1);
    for (const auto& d : r.dims) {
      if (d.isSymbol() && d.symbolName()[0] == '?') anon = d.symbolName();
      else others = others * d;
    }
    // With a zero among the other dims the `?` is not determined.
    if (!anon.empty() && !(others.isConst() && others.constValue() == 0)) {
      DimExpr solved = DimExpr::div(product(in(0).dims), others);
      Type t = r;
      for (auto& d : t.dims) d = d.substitute({{anon, solved}});
      op_.result()->type = t;
      if (solved.hasOpaqueAtoms())
        oracle_.requireAtRuntime({"divisible", product(in(0).dims), others, "element count of 'reshape' divides into " + t.str()}, &op_);
      return true;
    }
  }
  if (countAnon(r) == 0) {
    Tri t = oracle_.equal(product(in(0).dims), product(r.dims));
    if (t == Tri::Disproved) {
      err("'reshape' changes the element count: " + in(0).str() + " has " +
          product(in(0).dims).str() + " elements, " + r.str() + " has " + product(r.dims).str());
      exampleNote();
      return false;
    }
    if (t == Tri::Unknown)
      oracle_.requireAtRuntime({"eq", product(in(0).dims), product(r.dims), "element count of 'reshape'"}, &op_);
  }
  return true;
}

bool OpChecker::inferTranspose() {
  const Type& x = in(0);
  std::vector<int64_t> perm;
  if (op_.attr("perm")) {
    auto p = intListAttr("perm");
    if (!p) return false;
    perm = *p;
  } else {
    for (size_t i = x.rank(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool isPerm = sorted.size() == x.rank();
  for (size_t i = 0; isPerm && i < sorted.size(); ++i) isPerm = sorted[i] == static_cast<int64_t>(i);
  if (!isPerm) {
    std::string want = x.rank() == 0 ? "empty" : "a permutation of 0.." + std::to_string(x.rank() - 1);
    return err(op_.attr("perm")->loc, "'perm' must be " + want + " for an operand of rank " + std::to_string(x.rank()));
  }
  Type t{x.dtype, {}};
  for (int64_t p : perm) t.dims.push_back(x.dims[p]);
  setResult(t);
  return true;
}

bool OpChecker::inferBroadcastTo() {
  if (!op_.hasExplicitType) return err("'broadcast_to' needs a result type (': f32[...]')");
  const Type& r = op_.result()->type;
  const Type& x = in(0);
  if (r.dtype != x.dtype) return err("'broadcast_to' cannot change the dtype; use 'cast'");
  if (x.rank() > r.rank())
    return err("'broadcast_to' cannot lower the rank from " + std::to_string(x.rank()) + " to " + std::to_string(r.rank()));
  for (size_t k = 0; k < x.rank(); ++k) {
    const DimExpr& d = x.dims[k];
    const DimExpr& t = r.dims[r.rank() - x.rank() + k];
    std::string dimName = "'broadcast_to' dim " + std::to_string(r.rank() - x.rank() + k);
    if (!checkBroadcastsTo(d, t, dimName + " cannot be broadcast", dimName + " stretches to the result"))
      return false;
  }
  return true;
}

bool OpChecker::inferConcat() {
  const Type& x = in(0);
  if (x.rank() == 0) return err("'concat' operands must have rank >= 1");
  auto ax = axisAttr("axis", x.rank(), std::nullopt);
  if (!ax) return false;
  Type t = x;
  for (size_t i = 1; i < op_.operands.size(); ++i) {
    if (!sameDType(0, i)) return false;
    if (in(i).rank() != x.rank())
      return err("'concat' operands must have the same rank: " + operandName(0) + " is " + x.str() +
                 ", " + operandName(i) + " is " + in(i).str());
    for (size_t k = 0; k < x.rank(); ++k) {
      if (static_cast<int64_t>(k) == *ax) continue;
      if (!checkEqualDims(x.dims[k], in(i).dims[k], "'concat' operands differ in dim " + std::to_string(k),
                          "'concat' operands agree in dim " + std::to_string(k)))
        return false;
    }
    t.dims[*ax] = t.dims[*ax] + in(i).dims[*ax];
  }
  setResult(t);
  return true;
}

bool OpChecker::inferSlice() {
  const Type& x = in(0);
  auto getList = [&](const char* n, bool required) -> std::optional<std::vector<Attribute>> {
    const Attribute* a = op_.attr(n);
    if (!a) {
      if (required) err("'slice' needs attribute '" + std::string(n) + "'");
      return std::nullopt;
    }
    if (a->kind != Attribute::Kind::List) {
      err(a->loc, "attribute '" + std::string(n) + "' of 'slice' must be a list");
      return std::nullopt;
    }
    for (const auto& e : a->list)
      if (!e.isIntLike()) {
        err(a->loc, "attribute '" + std::string(n) + "' of 'slice' must hold integers or dim expressions");
        return std::nullopt;
      }
    return a->list;
  };
  auto starts = getList("starts", true);
  auto ends = getList("ends", true);
  if (!starts || !ends) return false;
  size_t n = starts->size();
  if (ends->size() != n) return err("'starts' and 'ends' of 'slice' have different lengths");
  std::vector<int64_t> axes, steps(n, 1);
  if (op_.attr("axes")) {
    auto a = intListAttr("axes");
    if (!a) return false;
    axes = *a;
    if (axes.size() != n) return err("'axes' and 'starts' of 'slice' have different lengths");
  } else {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (op_.attr("steps")) {
    auto s = intListAttr("steps");
    if (!s) return false;
    steps = *s;
    if (steps.size() != n) return err("'steps' and 'starts' of 'slice' have different lengths");
  }
  Type t = x;
  std::set<int64_t> seen;
  for (size_t i = 0; i < n; ++i) {
    auto ax = normalizeAxis(axes[i], x.rank());
    if (!ax) return err("slice axis " + std::to_string(axes[i]) + " is out of range for rank " + std::to_string(x.rank()));
    if (!seen.insert(*ax).second) return err("slice axis " + std::to_string(axes[i]) + " is listed twice");
    int64_t st = steps[i];
    if (st == 0) return err("slice step must not be 0");
    const DimExpr& D = x.dims[*ax];
    DimExpr s = (*starts)[i].asDim(), e = (*ends)[i].asDim();
    // A symbolic bound counts from the start: it must not be negative.
    for (const DimExpr* b : {&s, &e})
      if (!b->isConst() && oracle_.equal(DimExpr::max(*b, DimExpr(0)), *b) != Tri::Proved)
        oracle_.requireAtRuntime({"le", DimExpr(0), *b, "symbolic slice bound " + b->str() + " is not negative"}, &op_);
    // numpy: negative constant bounds count from the end, then clamp.
    auto norm = [&](const DimExpr& v, int64_t lo, const DimExpr& hi) {
      if (v.isConst() && v.constValue() < 0) return DimExpr::max(v + D, DimExpr(lo));
      return DimExpr::min(v, hi);
    };
    DimExpr len;
    if (st > 0) {
      DimExpr s2 = norm(s, 0, D), e2 = norm(e, 0, D);
      len = DimExpr::max(DimExpr(0), DimExpr::ceilDiv(e2 - s2, DimExpr(st)));
    } else {
      DimExpr s2 = norm(s, -1, D - 1), e2 = norm(e, -1, D - 1);
      len = DimExpr::max(DimExpr(0), DimExpr::ceilDiv(s2 - e2, DimExpr(-st)));
    }
    t.dims[*ax] = len;
  }
  setResult(t);
  return true;
}

bool OpChecker::inferGather() {
  const Type& x = in(0);
  const Type& idx = in(1);
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    return err("the indices of 'gather' must be i32 or i64, but " + operandName(1) + " is " + idx.str());
  if (x.rank() == 0) return err("'gather' needs an operand of rank >= 1");
  auto ax = axisAttr("axis", x.rank(), 0);
  if (!ax) return false;
  Type t{x.dtype, {}};
  t.dims.insert(t.dims.end(), x.dims.begin(), x.dims.begin() + *ax);
  t.dims.insert(t.dims.end(), idx.dims.begin(), idx.dims.end());
  t.dims.insert(t.dims.end(), x.dims.begin() + *ax + 1, x.dims.end());
  setResult(t);
  return true;
}

bool OpChecker::inferIota() {
  if (!op_.hasExplicitType) return err("'iota' needs a result type (': i64[...]')");
  const Type& r = op_.result()->type;
  if (r.rank() == 0) return err("'iota' needs a result of rank >= 1");
  if (r.dtype == DType::I1) return err("'iota' cannot produce i1");
  return axisAttr("axis", r.rank(), std::nullopt).has_value();
}

}  // namespace dscc::verifier_detail
