// Constant folding: small computations on constants run at compile time.
#include "passes/FoldConstants.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ir/Interpreter.h"
#include "ir/Tensor.h"

namespace dscc {
namespace {

// Larger constants would bloat the IR text for little gain.
constexpr int64_t kMaxElements = 1024;

// The element count of a type whose dims are all integers, if it is at most
// kMaxElements (checked as it multiplies, so huge dims cannot overflow).
std::optional<int64_t> smallStaticNumel(const Type& t) {
  int64_t n = 1;
  for (const auto& d : t.dims) {
    if (!d.isConst() || d.constValue() < 0) return std::nullopt;
    if (d.constValue() == 0) n = 0;
    else if (n > kMaxElements / d.constValue()) n = kMaxElements + 1;
    else n *= d.constValue();
  }
  if (n > kMaxElements) return std::nullopt;
  return n;
}

// A constant the interpreter evaluates without reading a file, small enough to fold.
bool isSmallInlineConstant(const Value* v) {
  if (!v->def || v->def->kind != OpKind::Constant) return false;
  const Attribute* a = v->def->attr("value");
  return a && a->kind != Attribute::Kind::File && smallStaticNumel(v->type);
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
  return smallStaticNumel(op.result()->type).has_value();
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

// Runs `op` on its constant operands in a function of its own: the constants
// (each once), then the op, returning its result. nullopt if the interpreter
// rejects it; its diagnostics are swallowed, the op then stays as it is.
std::optional<Tensor> evaluate(const Operation& op, const SourceMgr& sm) {
  Function fn;
  fn.name = "fold";
  fn.loc = op.loc;
  std::map<const Value*, Value*> copies;  // looked up only
  std::vector<Value*> operands;
  for (Value* v : op.operands) {
    auto it = copies.find(v);
    if (it == copies.end()) it = copies.emplace(v, cloneInto(fn, *v->def, {})->result()).first;
    operands.push_back(it->second);
  }
  Operation* c = cloneInto(fn, op, operands);
  fn.returns.push_back(c->result());
  fn.resultTypes.push_back(c->result()->type);
  std::ostringstream sink;
  DiagEngine quiet(sm, sink);
  quiet.setCapture(true);
  std::vector<Tensor> out;
  if (!interpret(fn, {}, out, quiet) || out.size() != 1) return std::nullopt;
  return std::move(out[0]);
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

// The `value` of a constant holding `t`; nullopt if some element has no
// literal that re-parses (the most negative i64: `-` then an i64 overflow).
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

}  // namespace

bool foldConstants(Module& m, PassContext& ctx) {
  for (auto& f : m.funcs) {
    int folded = 0;
    for (auto& op : f->ops) {
      if (!isFoldable(*op)) continue;
      auto t = evaluate(*op, ctx.diags.sources());
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
