// Normalisation, printing and evaluation of symbolic dimension expressions.
#include "ir/DimExpr.h"

#include <algorithm>
#include <limits>

namespace dscc {
namespace {

thread_local bool gOverflow = false;

// Coefficient arithmetic saturates and raises the overflow flag.
int64_t addC(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    gOverflow = true;
    return a > 0 ? INT64_MAX : INT64_MIN + 1;
  }
  return r == INT64_MIN ? (gOverflow = true, INT64_MIN + 1) : r;
}
int64_t mulC(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    gOverflow = true;
    return (a < 0) != (b < 0) ? INT64_MIN + 1 : INT64_MAX;
  }
  return r == INT64_MIN ? (gOverflow = true, INT64_MIN + 1) : r;
}

// Monomial order: higher degree first, then by atom keys; constant last.
bool monoLess(const std::vector<DimAtomPtr>& a, const std::vector<DimAtomPtr>& b) {
  if (a.size() != b.size()) return a.size() > b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i]->key != b[i]->key) return a[i]->key < b[i]->key;
  return false;
}

bool monoEq(const std::vector<DimAtomPtr>& a, const std::vector<DimAtomPtr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i]->key != b[i]->key) return false;
  return true;
}

std::vector<DimTerm> normalize(std::vector<DimTerm> ts) {
  for (auto& t : ts)
    std::sort(t.atoms.begin(), t.atoms.end(),
              [](const DimAtomPtr& x, const DimAtomPtr& y) { return x->key < y->key; });
  std::stable_sort(ts.begin(), ts.end(),
                   [](const DimTerm& x, const DimTerm& y) { return monoLess(x.atoms, y.atoms); });
  std::vector<DimTerm> out;
  for (auto& t : ts) {
    if (!out.empty() && monoEq(out.back().atoms, t.atoms))
      out.back().coeff = addC(out.back().coeff, t.coeff);
    else
      out.push_back(t);
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const DimTerm& t) { return t.coeff == 0; }),
            out.end());
  return out;
}

// Floor division and modulus of integers (b != 0).
int64_t floorDivI(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t ceilDivI(int64_t a, int64_t b) { return -floorDivI(-a, b); }
int64_t floorModI(int64_t a, int64_t b) { return a - floorDivI(a, b) * b; }

// Removes the atoms of `sub` (a sub-multiset) from `from`; false if not a sub-multiset.
bool removeAtoms(const std::vector<DimAtomPtr>& from, const std::vector<DimAtomPtr>& sub,
                 std::vector<DimAtomPtr>& out) {
  out.clear();
  size_t j = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    if (j < sub.size() && from[i]->key == sub[j]->key) {
      ++j;
      continue;
    }
    out.push_back(from[i]);
  }
  return j == sub.size();
}

}  // namespace

/// Builds expressions from terms; the one place that creates atoms.
class DimExprBuilder {
 public:
  static DimExpr fromTerms(std::vector<DimTerm> ts) {
    DimExpr e;
    e.terms_ = normalize(std::move(ts));
    return e;
  }
  static DimExpr fromAtom(DimAtomPtr a) {
    DimTerm t;
    t.coeff = 1;
    t.atoms.push_back(std::move(a));
    return fromTerms({t});
  }
  static DimAtomPtr makeAtom(DimAtomKind k, std::string name, std::vector<DimExpr> args) {
    auto a = std::make_shared<DimAtom>();
    a->kind = k;
    a->name = std::move(name);
    a->args = std::move(args);
    a->key = render(*a, true);
    a->text = render(*a, false);
    return a;
  }
  static std::string render(const DimAtom& a, bool key);
  static std::string render(const DimExpr& e, bool key);
  // Exact quotient of a by b when cheap normalisation can show it; nullopt otherwise.
  static std::optional<DimExpr> exactQuotient(const DimExpr& a, const DimExpr& b);
  // floordiv / ceildiv (k) of a by a positive constant b in a simpler form, when an identity gives one.
  static std::optional<DimExpr> byPositiveConstant(DimAtomKind k, const DimExpr& a, const DimExpr& b);
};

namespace {
bool isSimple(const DimExpr& e) { return e.isConst() || e.isSymbol(); }

std::string wrap(const DimExpr& e, bool key) {
  std::string s = DimExprBuilder::render(e, key);
  return isSimple(e) && (!e.isConst() || e.constValue() >= 0) ? s : "(" + s + ")";
}
}  // namespace

std::string DimExprBuilder::render(const DimAtom& a, bool key) {
  switch (a.kind) {
    case DimAtomKind::Sym:
      return (!key && !a.name.empty() && a.name[0] == '?') ? "?" : a.name;
    case DimAtomKind::Div:
    case DimAtomKind::Mod: {
      // The numerator needs no parentheses when it is one product (left-assoc).
      const DimExpr& n = a.args[0];
      bool nSimple = n.terms().size() == 1 && n.terms()[0].coeff > 0 &&
                     std::all_of(n.terms()[0].atoms.begin(), n.terms()[0].atoms.end(),
                                 [](const DimAtomPtr& x) { return x->kind != DimAtomKind::Div &&
                                                                  x->kind != DimAtomKind::Mod; });
      std::string ns = nSimple ? render(n, key) : "(" + render(n, key) + ")";
      // ` % ` keeps `S%8` from lexing as the value name `%8`.
      return ns + (a.kind == DimAtomKind::Div ? "/" : " % ") + wrap(a.args[1], key);
    }
    default: {
      static const char* names[] = {"", "", "floordiv", "ceildiv", "", "min", "max", "bcast"};
      return std::string(names[static_cast<int>(a.kind)]) + "(" + render(a.args[0], key) + ", " +
             render(a.args[1], key) + ")";
    }
  }
}

std::string DimExprBuilder::render(const DimExpr& e, bool key) {
  if (e.terms_.empty()) return "0";
  std::string out;
  bool first = true;
  for (const DimTerm& t : e.terms_) {
    int64_t c = t.coeff;
    if (!first) out += c < 0 ? "-" : "+";
    else if (c < 0) out += "-";
    first = false;
    int64_t ac = c < 0 ? -c : c;
    if (t.atoms.empty()) {
      out += std::to_string(ac);
      continue;
    }
    bool single = ac == 1 && t.atoms.size() == 1;
    std::string prod;
    if (ac != 1) prod = std::to_string(ac);
    for (const auto& a : t.atoms) {
      if (!prod.empty()) prod += "*";
      bool infix = a->kind == DimAtomKind::Div || a->kind == DimAtomKind::Mod;
      std::string s = key ? a->key : a->text;
      // An infix atom inside a product, or after a minus sign, needs parentheses.
      prod += (infix && (!single || c < 0)) ? "(" + s + ")" : s;
    }
    out += prod;
  }
  return out;
}

std::optional<DimExpr> DimExprBuilder::exactQuotient(const DimExpr& a, const DimExpr& b) {
  if (b.terms_.size() != 1) {
    if (a == b && !b.terms_.empty()) return DimExpr(1);
    return std::nullopt;
  }
  const DimTerm& d = b.terms_[0];
  if (d.coeff == 0) return std::nullopt;
  std::vector<DimTerm> q;
  for (const DimTerm& t : a.terms_) {
    if (t.coeff % d.coeff != 0) return std::nullopt;
    DimTerm r;
    r.coeff = t.coeff / d.coeff;
    if (!removeAtoms(t.atoms, d.atoms, r.atoms)) return std::nullopt;
    q.push_back(r);
  }
  return fromTerms(q);
}

bool DimExpr::takeOverflow() {
  bool o = gOverflow;
  gOverflow = false;
  return o;
}

DimExpr::DimExpr(int64_t v) {
  if (v != 0) terms_.push_back(DimTerm{v, {}});
}

DimExpr DimExpr::symbol(const std::string& name) {
  return DimExprBuilder::fromAtom(DimExprBuilder::makeAtom(DimAtomKind::Sym, name, {}));
}

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  std::vector<DimTerm> ts = a.terms_;
  ts.insert(ts.end(), b.terms_.begin(), b.terms_.end());
  return DimExprBuilder::fromTerms(ts);
}

DimExpr DimExpr::operator-() const {
  std::vector<DimTerm> ts = terms_;
  for (auto& t : ts) t.coeff = mulC(t.coeff, -1);
  return DimExprBuilder::fromTerms(ts);
}

DimExpr operator-(const DimExpr& a, const DimExpr& b) { return a + (-b); }

DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  std::vector<DimTerm> ts;
  for (const auto& x : a.terms_)
    for (const auto& y : b.terms_) {
      DimTerm t;
      t.coeff = mulC(x.coeff, y.coeff);
      t.atoms = x.atoms;
      t.atoms.insert(t.atoms.end(), y.atoms.begin(), y.atoms.end());
      ts.push_back(t);
    }
  return DimExprBuilder::fromTerms(ts);
}

DimExpr DimExpr::div(const DimExpr& a, const DimExpr& b) {
  if (!(b.isConst() && b.constValue() == 0))
    if (auto q = DimExprBuilder::exactQuotient(a, b)) return *q;
  return DimExprBuilder::fromAtom(DimExprBuilder::makeAtom(DimAtomKind::Div, "", {a, b}));
}

DimExpr DimExpr::floorDiv(const DimExpr& a, const DimExpr& b) {
  if (a.isConst() && b.isConst() && b.constValue() != 0)
    return floorDivI(a.constValue(), b.constValue());
  if (!(b.isConst() && b.constValue() == 0))
    if (auto q = DimExprBuilder::exactQuotient(a, b)) return *q;
  if (auto r = DimExprBuilder::byPositiveConstant(DimAtomKind::FloorDiv, a, b)) return *r;
  return DimExprBuilder::fromAtom(DimExprBuilder::makeAtom(DimAtomKind::FloorDiv, "", {a, b}));
}

DimExpr DimExpr::ceilDiv(const DimExpr& a, const DimExpr& b) {
  if (a.isConst() && b.isConst() && b.constValue() != 0)
    return ceilDivI(a.constValue(), b.constValue());
  if (!(b.isConst() && b.constValue() == 0))
    if (auto q = DimExprBuilder::exactQuotient(a, b)) return *q;
  if (auto r = DimExprBuilder::byPositiveConstant(DimAtomKind::CeilDiv, a, b)) return *r;
  return DimExprBuilder::fromAtom(DimExprBuilder::makeAtom(DimAtomKind::CeilDiv, "", {a, b}));
}

// Two identities of rounding division by positive integer constants, exact for every integer numerator, so
// the normal form (and with it the fast path of the solver) sees that a network's chain of stride-2 layers,
// floordiv(floordiv(floordiv(H-1, 2), 2), 2), is floordiv(H-1, 8) without asking Z3:
//   floor(floor(x / c) / d) = floor(x / (c*d))   (and the same for ceil), and
//   floor((q*d + r) / d) = q + floor(r / d)      for integer-valued q (every dim expression is one).
std::optional<DimExpr> DimExprBuilder::byPositiveConstant(DimAtomKind k, const DimExpr& a, const DimExpr& b) {
  if (!b.isConst() || b.constValue() <= 0) return std::nullopt;
  const int64_t d = b.constValue();
  if (a.terms_.size() == 1 && a.terms_[0].coeff == 1 && a.terms_[0].atoms.size() == 1) {
    const DimAtom& inner = *a.terms_[0].atoms[0];
    int64_t cd = 0;
    if (inner.kind == k && inner.args[1].isConst() && inner.args[1].constValue() > 0 &&
        !__builtin_mul_overflow(inner.args[1].constValue(), d, &cd))
      return k == DimAtomKind::FloorDiv ? DimExpr::floorDiv(inner.args[0], DimExpr(cd))
                                        : DimExpr::ceilDiv(inner.args[0], DimExpr(cd));
  }
  if (d == 1) return a;
  std::vector<DimTerm> whole, rest;
  for (const DimTerm& t : a.terms_) {
    if (t.coeff % d == 0) {
      DimTerm w = t;
      w.coeff = t.coeff / d;
      whole.push_back(std::move(w));
    } else {
      rest.push_back(t);
    }
  }
  if (whole.empty() || rest.empty()) return std::nullopt;
  DimExpr r = fromTerms(std::move(rest));
  return fromTerms(std::move(whole)) +
         (k == DimAtomKind::FloorDiv ? DimExpr::floorDiv(r, b) : DimExpr::ceilDiv(r, b));
}

DimExpr DimExpr::mod(const DimExpr& a, const DimExpr& b) {
  if (a.isConst() && b.isConst() && b.constValue() != 0)
    return floorModI(a.constValue(), b.constValue());
  if (!(b.isConst() && b.constValue() == 0))
    if (DimExprBuilder::exactQuotient(a, b)) return DimExpr(0);
  return DimExprBuilder::fromAtom(DimExprBuilder::makeAtom(DimAtomKind::Mod, "", {a, b}));
}

namespace {
DimExpr minMax(DimAtomKind k, const DimExpr& a, const DimExpr& b) {
  if (a == b) return a;
  // Symbols are >= 0, so a difference whose symbolic terms all share one sign
  // is bounded by its constant term: enough to order a and b cheaply.
  DimExpr d = a - b;
  bool allPos = true, allNeg = true;
  int64_t c0 = 0;
  for (const DimTerm& t : d.terms()) {
    if (t.atoms.empty()) { c0 = t.coeff; continue; }
    for (const auto& x : t.atoms)
      if (x->kind != DimAtomKind::Sym) allPos = allNeg = false;
    if (t.coeff < 0) allPos = false;
    if (t.coeff > 0) allNeg = false;
  }
  if ((allPos && c0 >= 0) || (allNeg && c0 <= 0)) {
    bool aGe = allPos && c0 >= 0;  // a >= b; otherwise a <= b
    return (k == DimAtomKind::Max) == aGe ? a : b;
  }
  // Commutative: order the arguments so equal pairs print the same.
  std::vector<DimExpr> args = b < a ? std::vector<DimExpr>{b, a} : std::vector<DimExpr>{a, b};
  return DimExprBuilder::fromAtom(DimExprBuilder::makeAtom(k, "", args));
}
}  // namespace

DimExpr DimExpr::min(const DimExpr& a, const DimExpr& b) { return minMax(DimAtomKind::Min, a, b); }
DimExpr DimExpr::max(const DimExpr& a, const DimExpr& b) { return minMax(DimAtomKind::Max, a, b); }

DimExpr DimExpr::bcast(const DimExpr& a, const DimExpr& b) {
  if (a == b) return a;
  if (a.isConst() && a.constValue() == 1) return b;
  if (b.isConst() && b.constValue() == 1) return a;
  // bcast(a, bcast(a, c)) = bcast(a, c): broadcasting is idempotent.
  auto absorbs = [](const DimExpr& outer, const DimExpr& x) {
    if (outer.terms().size() != 1 || outer.terms()[0].coeff != 1 || outer.terms()[0].atoms.size() != 1) return false;
    const DimAtom& at = *outer.terms()[0].atoms[0];
    return at.kind == DimAtomKind::Bcast && (at.args[0] == x || at.args[1] == x);
  };
  if (absorbs(b, a)) return b;
  if (absorbs(a, b)) return a;
  std::vector<DimExpr> args = b < a ? std::vector<DimExpr>{b, a} : std::vector<DimExpr>{a, b};
  return DimExprBuilder::fromAtom(DimExprBuilder::makeAtom(DimAtomKind::Bcast, "", args));
}

bool DimExpr::isConst() const { return terms_.empty() || (terms_.size() == 1 && terms_[0].atoms.empty()); }
int64_t DimExpr::constValue() const { return terms_.empty() ? 0 : terms_[0].coeff; }
bool DimExpr::isSymbol() const {
  return terms_.size() == 1 && terms_[0].coeff == 1 && terms_[0].atoms.size() == 1 &&
         terms_[0].atoms[0]->kind == DimAtomKind::Sym;
}
const std::string& DimExpr::symbolName() const { return terms_[0].atoms[0]->name; }
bool DimExpr::hasOpaqueAtoms() const {
  for (const auto& t : terms_)
    for (const auto& a : t.atoms)
      if (a->kind != DimAtomKind::Sym) return true;
  return false;
}

std::string DimExpr::str() const { return DimExprBuilder::render(*this, false); }
std::string DimExpr::key() const { return DimExprBuilder::render(*this, true); }

bool DimExpr::operator==(const DimExpr& o) const {
  if (terms_.size() != o.terms_.size()) return false;
  for (size_t i = 0; i < terms_.size(); ++i)
    if (terms_[i].coeff != o.terms_[i].coeff || !monoEq(terms_[i].atoms, o.terms_[i].atoms))
      return false;
  return true;
}

namespace {
std::optional<int64_t> evalAtom(const DimAtom& a, const DimBindings& env, std::string* err) {
  auto fail = [&](const std::string& m) -> std::optional<int64_t> {
    if (err && err->empty()) *err = m;
    return std::nullopt;
  };
  if (a.kind == DimAtomKind::Sym) {
    auto it = env.find(a.name);
    if (it == env.end()) return fail("symbol " + a.text + " has no value");
    return it->second;
  }
  auto x = a.args[0].evaluate(env, err);
  auto y = a.args[1].evaluate(env, err);
  if (!x || !y) return std::nullopt;
  int64_t p = *x, q = *y;
  // INT64_MIN / -1 does not fit, and ceil-division negates its dividend.
  if (p == std::numeric_limits<int64_t>::min() && a.kind != DimAtomKind::Min &&
      a.kind != DimAtomKind::Max && a.kind != DimAtomKind::Bcast)
    return fail(a.text + " overflows 64-bit integers");
  switch (a.kind) {
    case DimAtomKind::Div:
      if (q == 0) return fail("division by zero in " + a.text);
      if (p % q != 0)
        return fail(a.text + " is not exact: " + std::to_string(p) + " is not divisible by " +
                    std::to_string(q));
      return p / q;
    case DimAtomKind::FloorDiv:
      if (q == 0) return fail("division by zero in " + a.text);
      return floorDivI(p, q);
    case DimAtomKind::CeilDiv:
      if (q == 0) return fail("division by zero in " + a.text);
      return ceilDivI(p, q);
    case DimAtomKind::Mod:
      if (q == 0) return fail("modulus by zero in " + a.text);
      return floorModI(p, q);
    case DimAtomKind::Min: return std::min(p, q);
    case DimAtomKind::Max: return std::max(p, q);
    case DimAtomKind::Bcast:
      if (p == q || q == 1) return p;
      if (p == 1) return q;
      return fail("cannot broadcast " + std::to_string(p) + " with " + std::to_string(q) +
                  " in " + a.text);
    case DimAtomKind::Sym: break;
  }
  return std::nullopt;
}
}  // namespace

std::optional<int64_t> DimExpr::evaluate(const DimBindings& env, std::string* err) const {
  // Checked: a wrapped value here would size a tensor or pass a guard wrongly.
  auto overflow = [&]() -> std::optional<int64_t> {
    if (err && err->empty()) {
      std::string vals;
      std::set<std::string> syms;
      collectSymbols(syms);
      for (const auto& s : syms)
        if (auto it = env.find(s); it != env.end())
          vals += (vals.empty() ? "" : ", ") + s + " = " + std::to_string(it->second);
      *err = str() + " overflows 64-bit integers" + (vals.empty() ? "" : " (" + vals + ")");
    }
    return std::nullopt;
  };
  int64_t sum = 0;
  for (const auto& t : terms_) {
    int64_t prod = t.coeff;
    for (const auto& a : t.atoms) {
      auto v = evalAtom(*a, env, err);
      if (!v) return std::nullopt;
      if (__builtin_mul_overflow(prod, *v, &prod)) return overflow();
    }
    if (__builtin_add_overflow(sum, prod, &sum)) return overflow();
  }
  return sum;
}

namespace {
DimExpr rebuildAtom(const DimAtom& a, const std::vector<DimExpr>& args) {
  switch (a.kind) {
    case DimAtomKind::Div: return DimExpr::div(args[0], args[1]);
    case DimAtomKind::FloorDiv: return DimExpr::floorDiv(args[0], args[1]);
    case DimAtomKind::CeilDiv: return DimExpr::ceilDiv(args[0], args[1]);
    case DimAtomKind::Mod: return DimExpr::mod(args[0], args[1]);
    case DimAtomKind::Min: return DimExpr::min(args[0], args[1]);
    case DimAtomKind::Max: return DimExpr::max(args[0], args[1]);
    case DimAtomKind::Bcast: return DimExpr::bcast(args[0], args[1]);
    case DimAtomKind::Sym: break;
  }
  return DimExpr::symbol(a.name);
}
}  // namespace

DimExpr DimExpr::substitute(const std::map<std::string, DimExpr>& m) const {
  DimExpr sum(0);
  for (const auto& t : terms_) {
    DimExpr prod(t.coeff);
    for (const auto& a : t.atoms) {
      if (a->kind == DimAtomKind::Sym) {
        auto it = m.find(a->name);
        prod = prod * (it == m.end() ? DimExpr::symbol(a->name) : it->second);
      } else {
        prod = prod * rebuildAtom(*a, {a->args[0].substitute(m), a->args[1].substitute(m)});
      }
    }
    sum = sum + prod;
  }
  return sum;
}

void DimExpr::collectSymbols(std::set<std::string>& out) const {
  for (const auto& t : terms_)
    for (const auto& a : t.atoms) {
      if (a->kind == DimAtomKind::Sym) out.insert(a->name);
      for (const auto& x : a->args) x.collectSymbols(out);
    }
}

}  // namespace dscc
