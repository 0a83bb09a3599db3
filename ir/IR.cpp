// Op table lookups and small IR helpers (type and attribute text, facts).
#include "ir/IR.h"

#include <charconv>
#include <cmath>

namespace dscc {

const std::vector<OpInfo>& allOps() {
  static const std::vector<OpInfo> ops = {
#define DSCC_OP(E, N, C, D, MIN, MAX, ATTRS, SUM) {OpKind::E, N, OpCategory::C, ElemDomain::D, MIN, MAX, ATTRS, SUM},
#include "ir/Ops.def"
  };
  return ops;
}

const OpInfo& opInfo(OpKind k) { return allOps()[static_cast<size_t>(k)]; }

bool definedOn(OpKind k, DType dt) {
  switch (opInfo(k).domain) {
    case ElemDomain::Any: return true;
    case ElemDomain::Float: return isFloat(dt);
    case ElemDomain::Numeric: return !isBool(dt);
    case ElemDomain::Integral: return !isFloat(dt);
  }
  return false;
}

std::string_view domainWords(ElemDomain d) {
  switch (d) {
    case ElemDomain::Any: return "any";
    case ElemDomain::Float: return "a floating-point";
    case ElemDomain::Numeric: return "a non-i1";
    case ElemDomain::Integral: return "an i1 or integer";
  }
  return "";
}

std::optional<OpKind> lookupOp(std::string_view name) {
  for (const auto& o : allOps())
    if (o.name == name) return o.kind;
  return std::nullopt;
}

bool opAllowsAttr(OpKind k, std::string_view attr) {
  std::string_view list = opInfo(k).attrs;
  while (!list.empty()) {
    size_t c = list.find(',');
    std::string_view item = list.substr(0, c);
    if (item == attr) return true;
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  return false;
}

std::string Type::str() const {
  std::string s(dtypeName(dtype));
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].str();
  }
  return s + "]";
}

Attribute Attribute::makeDim(const DimExpr& d) {
  if (d.isConst()) return makeInt(d.constValue());
  Attribute a;
  a.kind = Kind::Dim;
  a.dim = d;
  return a;
}

namespace {
// Shortest text that reads back to the same double, always with '.', 'e', "inf" or "nan".
std::string floatText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string escape(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    o += c;
  }
  return o + "\"";
}
}  // namespace

std::string Attribute::str() const {
  switch (kind) {
    case Kind::Int: return std::to_string(i);
    case Kind::Float: return floatText(f);
    case Kind::String: return escape(s);
    case Kind::Bool: return b ? "true" : "false";
    case Kind::DType: return std::string(dtypeName(dtype));
    case Kind::Dim: return dim.str();
    case Kind::List: {
      std::string o = "[";
      for (size_t k = 0; k < list.size(); ++k) o += (k ? ", " : "") + list[k].str();
      return o + "]";
    }
    case Kind::Dense: {
      if (b && list.size() == 1) return "dense<" + list[0].str() + ">";  // scalar form
      Attribute l = *this;
      l.kind = Kind::List;
      return "dense<" + l.str() + ">";
    }
    case Kind::Splat: return "splat<" + (list.empty() ? std::string("0") : list[0].str()) + ">";
    case Kind::File: return "file(" + escape(s) + ")";
  }
  return "";
}

const Attribute* Operation::attr(std::string_view n) const {
  for (const auto& [k, v] : attrs)
    if (k == n) return &v;
  return nullptr;
}

bool isTanhGelu(const Operation& op) {
  const Attribute* a = op.kind == OpKind::Gelu ? op.attr("approximate") : nullptr;
  return a && a->kind == Attribute::Kind::String && a->s == "tanh";
}

void Operation::setAttr(const std::string& n, Attribute a) {
  for (auto& [k, v] : attrs)
    if (k == n) {
      v = std::move(a);
      return;
    }
  attrs.emplace_back(n, std::move(a));
}

void walkOps(const std::vector<std::unique_ptr<Operation>>& ops, const std::function<void(Operation&)>& fn) {
  for (const auto& op : ops) {
    fn(*op);
    walkOps(op->body, fn);
  }
}

std::string_view cmpOpText(CmpOp op) {
  switch (op) {
    case CmpOp::Eq: return "==";
    case CmpOp::Ne: return "!=";
    case CmpOp::Lt: return "<";
    case CmpOp::Le: return "<=";
    case CmpOp::Gt: return ">";
    case CmpOp::Ge: return ">=";
  }
  return "?";
}

std::string Fact::str() const {
  if (kind == Kind::Range) return lhs.str() + " in [" + rhs.str() + ", " + hi.str() + "]";
  return lhs.str() + " " + std::string(cmpOpText(op)) + " " + rhs.str();
}

bool Fact::holds(const DimBindings& env, std::string* err) const {
  std::string e;
  auto l = lhs.evaluate(env, &e);
  auto r = rhs.evaluate(env, &e);
  std::optional<int64_t> h = kind == Kind::Range ? hi.evaluate(env, &e) : std::optional<int64_t>(0);
  if (!l || !r || !h) {
    if (err) *err = e;
    return false;
  }
  bool ok = false;
  if (kind == Kind::Range) {
    ok = *r <= *l && *l <= *h;
  } else {
    switch (op) {
      case CmpOp::Eq: ok = *l == *r; break;
      case CmpOp::Ne: ok = *l != *r; break;
      case CmpOp::Lt: ok = *l < *r; break;
      case CmpOp::Le: ok = *l <= *r; break;
      case CmpOp::Gt: ok = *l > *r; break;
      case CmpOp::Ge: ok = *l >= *r; break;
    }
  }
  if (!ok && err) {
    std::set<std::string> syms;
    lhs.collectSymbols(syms);
    rhs.collectSymbols(syms);
    std::string vals;
    for (const auto& s : syms) {
      auto it = env.find(s);
      if (it != env.end()) vals += (vals.empty() ? "" : ", ") + s + " = " + std::to_string(it->second);
    }
    *err = "'" + str() + "' does not hold" + (vals.empty() ? "" : " (" + vals + ")");
  }
  return ok;
}

std::string CheckRelation::str() const {
  if (kind == "eq") return lhs.str() + " == " + rhs.str();
  if (kind == "le") return lhs.str() + " <= " + rhs.str();
  if (kind == "divisible") return lhs.str() + " % " + rhs.str() + " == 0";
  if (kind == "broadcasts_to") return "broadcasts_to(" + lhs.str() + ", " + rhs.str() + ")";
  return "broadcastable(" + lhs.str() + ", " + rhs.str() + ")";
}

std::optional<bool> CheckRelation::holds(const DimBindings& env, std::string* err) const {
  auto l = lhs.evaluate(env, err);
  auto r = rhs.evaluate(env, err);
  if (!l || !r) return std::nullopt;
  if (kind == "eq") return *l == *r;
  if (kind == "le") return *l <= *r;
  if (kind == "divisible") return *r != 0 && *l % *r == 0;
  if (kind == "broadcasts_to") return *l == *r || *l == 1;
  return *l == *r || *l == 1 || *r == 1;
}

std::optional<CheckRelation> checkRelation(const Operation& op) {
  const Attribute* k = op.attr("kind");
  const Attribute* l = op.attr("lhs");
  const Attribute* r = op.attr("rhs");
  const Attribute* w = op.attr("what");
  if (!k || k->kind != Attribute::Kind::String || !l || !l->isIntLike() || !r || !r->isIntLike())
    return std::nullopt;
  if (k->s != "eq" && k->s != "le" && k->s != "divisible" && k->s != "broadcastable" && k->s != "broadcasts_to")
    return std::nullopt;
  if (w && w->kind != Attribute::Kind::String) return std::nullopt;
  return CheckRelation{k->s, l->asDim(), r->asDim(), w ? w->s : ""};
}

std::unique_ptr<Operation> makeCheckOp(const CheckRelation& r, Location loc) {
  auto op = std::make_unique<Operation>();
  op->kind = OpKind::Check;
  op->loc = loc;
  op->setAttr("kind", Attribute::makeString(r.kind));
  op->setAttr("lhs", Attribute::makeDim(r.lhs));
  op->setAttr("rhs", Attribute::makeDim(r.rhs));
  if (!r.what.empty()) op->setAttr("what", Attribute::makeString(r.what));
  return op;
}

Function* Module::entry() const {
  if (auto* f = lookup("main")) return f;
  return funcs.size() == 1 ? funcs[0].get() : nullptr;
}

Function* Module::lookup(std::string_view name) const {
  for (const auto& f : funcs)
    if (f->name == name) return f.get();
  return nullptr;
}

}  // namespace dscc
