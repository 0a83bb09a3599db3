// Constant folding: small computations on constants run at compile time.
#include "passes/FoldConstants.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/Interpreter.h"
#include "ir/Rewrite.h"
#include "ir/Tensor.h"

namespace dscc {
namespace {

// Larger constants would bloat the IR text for little gain.
constexpr int64_t kMaxElements = 1024;

// The element count of a type whose dims are all integers, if it is at most
// `limit` (checked as it multiplies, so huge dims cannot overflow).
std::optional<int64_t> staticNumel(const Type& t, int64_t limit) {
  int64_t n = 1;
  for (const auto& d : t.dims) {
    if (!d.isConst() || d.constValue() < 0) return std::nullopt;
    if (d.constValue() == 0) n = 0;
    else if (n > limit / d.constValue()) n = limit + 1;
    else n *= d.constValue();
  }
  if (n > limit) return std::nullopt;
  return n;
}

// A constant the interpreter evaluates without reading a file, small enough to fold.
bool isSmallInlineConstant(const Value* v) {
  if (!v->def || v->def->kind != OpKind::Constant) return false;
  const Attribute* a = v->def->attr("value");
  return a && a->kind != Attribute::Kind::File && staticNumel(v->type, kMaxElements);
}

bool isFoldable(const Operation& op) {
  switch (op.kind) {
    case OpKind::Check: case OpKind::Fusion: case OpKind::Constant: case OpKind::Dim: case OpKind::Iota:
      return false;
    default:
      break;
  }
  if (op.operands.empty() || op.results.size() != 1 || !op.body.empty()) return false;
  for (const Value* v : op.operands)
    if (!isSmallInlineConstant(v)) return false;
  return staticNumel(op.result()->type, kMaxElements).has_value();
}

// A copy of `op` (which has no body) reading `operands`, in function `f`.
Operation* cloneInto(Function& f, const Operation& op, std::vector<Value*> operands) {
  auto c = std::make_unique<Operation>();
  c->kind = op.kind;
  c->operands = std::move(operands);
  c->attrs = op.attrs;
  c->loc = op.loc;
  c->hasExplicitType = true;
  for (const auto& r : op.results) {
    auto v = std::make_unique<Value>();
    v->name = r->name;
    v->type = r->type;
    v->loc = r->loc;
    v->def = c.get();
    v->index = r->index;
    c->results.push_back(std::move(v));
  }
  f.ops.push_back(std::move(c));
  return f.ops.back().get();
}

// Appends to `order`, operands first, the ops `v` is computed from (`seen`
// holds those already there); false if one of them is not a constant
// computation (see constantValue).
bool collectConstantOps(const Value* v, int64_t maxElements, std::set<const Operation*>& seen,
                        std::vector<const Operation*>& order) {
  const Operation* op = v->def;
  if (!op) return false;  // an argument
  if (seen.count(op)) return true;
  switch (op->kind) {
    case OpKind::Check: case OpKind::Fusion: case OpKind::Dim:
      return false;
    default:
      break;
  }
  if (op->results.size() != 1 || !op->body.empty() || !staticNumel(v->type, maxElements)) return false;
  if (op->kind == OpKind::Constant) {
    // A file not read yet stays unread: a pass does not touch the file system.
    const Attribute* a = op->attr("value");
    if (!a || (a->kind == Attribute::Kind::File && !a->data)) return false;
  }
  for (const Value* o : op->operands)
    if (!collectConstantOps(o, maxElements, seen, order)) return false;
  seen.insert(op);
  order.push_back(op);
  return true;
}

// The shortest decimal (as a double) that stores back to the same bits in
// `dt`: folded f32 values then print as 0.1 rather than 0.10000000149011612.
double shortestFor(DType dt, double v) {
  if (!std::isfinite(v)) return v;
  Tensor want = Tensor::zeros(dt, {}), got = Tensor::zeros(dt, {});
  want.setF(0, v);
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    auto r = std::to_chars(buf, buf + sizeof buf - 1, v, std::chars_format::general, digits);
    *r.ptr = '\0';
    double d = std::strtod(buf, nullptr);
    got.setF(0, d);
    if (got.bytes == want.bytes) return d;
  }
  return v;
}

// Element `i` of `t` as an IR literal of its dtype.
Attribute element(const Tensor& t, int64_t i) {
  if (isFloat(t.dtype)) return Attribute::makeFloat(shortestFor(t.dtype, t.getF(i)));
  if (isBool(t.dtype)) return Attribute::makeBool(t.getI(i) != 0);
  return Attribute::makeInt(t.getI(i));
}

// The nested list of dims `level`.. of `t`, starting at flat index `at`.
Attribute nested(const Tensor& t, size_t level, int64_t& at) {
  std::vector<Attribute> xs;
  for (int64_t k = 0; k < t.shape[level]; ++k)
    xs.push_back(level + 1 == t.rank() ? element(t, at++) : nested(t, level + 1, at));
  return Attribute::makeList(std::move(xs));
}

}  // namespace

std::optional<Attribute> literalOf(const Tensor& t) {
  if (t.dtype == DType::I64)
    for (int64_t i = 0; i < t.numel(); ++i)
      if (t.getI(i) == std::numeric_limits<int64_t>::min()) return std::nullopt;
  if (t.rank() == 0) return element(t, 0);
  int64_t at = 0;
  Attribute a = nested(t, 0, at);
  a.kind = Attribute::Kind::Dense;
  return a;
}

std::optional<Tensor> constantValue(const Value* v, const SourceMgr& sm, int64_t maxElements) {
  std::set<const Operation*> seen;
  std::vector<const Operation*> order;
  if (!collectConstantOps(v, maxElements, seen, order)) return std::nullopt;
  // The ops, in dependency order, in a function of their own that returns `v`.
  Function fn;
  fn.name = "fold";
  fn.loc = v->def->loc;
  std::map<const Value*, Value*> copies;  // looked up only
  for (const Operation* op : order) {
    std::vector<Value*> operands;
    for (const Value* o : op->operands) operands.push_back(copies.at(o));
    copies.emplace(op->result(), cloneInto(fn, *op, std::move(operands))->result());
  }
  fn.returns.push_back(copies.at(v));
  fn.resultTypes.push_back(v->type);
  std::ostringstream sink;
  DiagEngine quiet(sm, sink);
  quiet.setCapture(true);
  std::vector<Tensor> out;
  if (!interpret(fn, {}, out, quiet) || out.size() != 1) return std::nullopt;
  return std::move(out[0]);
}

// Every file path the module's constants name, so new ones do not collide.
std::set<std::string> filePaths(const Module& m) {
  std::set<std::string> paths;
  for (const auto& f : m.funcs)
    walkOps(f->ops, [&](Operation& op) {
      const Attribute* v = op.kind == OpKind::Constant ? op.attr("value") : nullptr;
      if (v && v->kind == Attribute::Kind::File) paths.insert(v->s);
    });
  return paths;
}

// A constant holding `t`, named after `like` (its file, when it has one):
// a literal when small, else a file constant whose data is `t` already
// (its path is fresh; nothing is written).
std::unique_ptr<Operation> makeTensorConstant(Function& f, Tensor t, const Value& like, const std::string& name,
                                              Location loc, std::set<std::string>& paths, DiagEngine& diags) {
  Type type{t.dtype, {}};
  for (int64_t d : t.shape) type.dims.push_back(DimExpr(d));
  std::optional<Attribute> value;
  if (t.numel() <= kMaxElements) value = literalOf(t);
  if (!value) {
    std::string base = like.name;
    const Attribute* v = like.def && like.def->kind == OpKind::Constant ? like.def->attr("value") : nullptr;
    if (v && v->kind == Attribute::Kind::File) {
      base = v->s;
      if (base.size() > 4 && base.compare(base.size() - 4, 4, ".npy") == 0) base.resize(base.size() - 4);
    }
    std::string path = base + ".folded.npy";
    for (int k = 1; paths.count(path); ++k) path = base + ".folded." + std::to_string(k) + ".npy";
    paths.insert(path);
    Attribute a;
    a.kind = Attribute::Kind::File;
    a.s = path;
    a.loc = loc;
    a.data = std::make_shared<const Tensor>(std::move(t));
    value = a;
  }
  return makeOp(f, OpKind::Constant, {}, {{"value", *value}}, name, loc, diags, type);
}

bool foldConstants(Module& m, PassContext& ctx) {
  for (auto& f : m.funcs) {
    int folded = 0;
    for (auto& op : f->ops) {
      if (!isFoldable(*op)) continue;
      auto t = constantValue(op->result(), ctx.diags.sources(), kMaxElements);
      if (!t) continue;
      auto lit = literalOf(*t);
      if (!lit) continue;
      // In place: the result keeps its name, type and uses.
      op->kind = OpKind::Constant;
      op->operands.clear();
      op->attrs = {{"value", *lit}};
      op->hasExplicitType = true;
      ++folded;
    }
    if (ctx.opts.stats) ctx.os << "// fold-constants stats of @" << f->name << ": " << folded << " ops folded\n";
  }
  return true;
}

}  // namespace dscc
