// The decompose pass: rewrites softmax, log_softmax, layer_norm, tanh (and f16/bf16) gelu and reduce_mean into primitive ops.
#include "passes/Decompose.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/Rewrite.h"
#include "ir/Verifier.h"

namespace dscc {
namespace {

using Attrs = std::vector<std::pair<std::string, Attribute>>;

// Correctly rounded doubles; the printer writes the shortest text that reads
// back to the same double, so the constants survive a print/parse round trip.
constexpr double kInvSqrt2 = 0.7071067811865476;    // 1/sqrt(2)
constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluCubic = 0.044715;

// Counts of the ops rewritten in one function, for --stats.
struct Counts {
  int softmax = 0, logSoftmax = 0, layerNorm = 0, gelu = 0, reduceMean = 0, created = 0;
};

// Emits the replacement of one composite op. Each new op goes in front of the
// composite as soon as it is built: program order holds, and freshName sees
// the names already taken by the earlier new ops.
class Emitter {
 public:
  Emitter(Function& f, size_t pos, const Operation& op, DiagEngine& diags, Counts& counts)
      : f_(f), pos_(pos), base_(op.result()->name), loc_(op.loc), diags_(diags), counts_(counts) {}

  // The name `%base.suffix` (made fresh by makeOp).
  std::string name(const std::string& suffix) const { return base_ + "." + suffix; }
  const std::string& base() const { return base_; }

  // A new op, or null once anything failed (later calls then do nothing, so
  // callers can chain without checking each step).
  Value* op(OpKind kind, std::vector<Value*> operands, Attrs attrs, const std::string& name,
            std::optional<Type> type = std::nullopt) {
    if (failed_) return nullptr;
    for (Value* v : operands)
      if (!v) return fail();
    auto o = makeOp(f_, kind, std::move(operands), std::move(attrs), name, loc_, diags_, std::move(type));
    return insert(std::move(o));
  }

  Value* constant(DType dt, double v, const std::string& name) {
    if (failed_) return nullptr;
    return insert(makeScalarConstant(f_, dt, v, name, loc_, diags_));
  }

  bool failed() const { return failed_; }

  // `dim` reads only a shape: of a widened copy, it reads the original, so
  // the copy (a cast) stays free to fuse into its one real consumer.
  void sameShape(Value* wide, Value* original) { shapeOf_[wide] = original; }
  Value* shapeSource(Value* v) const {
    auto it = shapeOf_.find(v);
    return it == shapeOf_.end() ? v : it->second;
  }
  // Where the composite op now sits.
  size_t pos() const { return pos_; }

 private:
  Value* insert(std::unique_ptr<Operation> o) {
    if (!o) return fail();
    Value* r = o->result();
    f_.ops.insert(f_.ops.begin() + static_cast<std::ptrdiff_t>(pos_), std::move(o));
    ++pos_;
    ++counts_.created;
    return r;
  }
  Value* fail() {
    failed_ = true;
    return nullptr;
  }

  Function& f_;
  size_t pos_;
  std::string base_;
  Location loc_;
  DiagEngine& diags_;
  Counts& counts_;
  bool failed_ = false;
  std::map<Value*, Value*> shapeOf_;
};

Attribute intList(const std::vector<int64_t>& v) {
  std::vector<Attribute> l;
  for (int64_t x : v) l.push_back(Attribute::makeInt(x));
  return Attribute::makeList(std::move(l));
}

// Reduction attributes over `axes`, keeping the reduced dims so the result
// broadcasts back against the operand.
Attrs keepAxes(const std::vector<int64_t>& axes) {
  return {{"axes", intList(axes)}, {"keepdims", Attribute::makeBool(true)}};
}

// The normalised axes a reduce op reduces (absent `axes`: all of them), or
// nullopt when the attribute is malformed (the verifier reports that).
std::optional<std::vector<int64_t>> reducedAxes(const Operation& op, size_t rank) {
  std::vector<int64_t> out;
  const Attribute* a = op.attr("axes");
  if (!a) {
    for (size_t i = 0; i < rank; ++i) out.push_back(static_cast<int64_t>(i));
    return out;
  }
  if (a->kind != Attribute::Kind::List) return std::nullopt;
  for (const auto& x : a->list) {
    if (x.kind != Attribute::Kind::Int) return std::nullopt;
    auto n = normalizeAxis(x.i, rank);
    if (!n) return std::nullopt;
    out.push_back(*n);
  }
  // In dim order, so the count's `dim` ops read the same however the axes were listed.
  std::sort(out.begin(), out.end());
  return out;
}

// The normalised `axis` attribute of softmax / log_softmax / layer_norm
// (default -1), or nullopt when malformed.
std::optional<int64_t> axisOf(const Operation& op, size_t rank) {
  const Attribute* a = op.attr("axis");
  if (a && a->kind != Attribute::Kind::Int) return std::nullopt;
  return normalizeAxis(a ? a->i : -1, rank);
}

// The number of elements of `x` over `axes`, as a scalar of x's dtype. Static
// dims fold into one constant; symbolic ones are read with `dim` at run time,
// multiplied as i64 (exact) and converted once at the end.
Value* elementCount(Emitter& e, Value* x, const std::vector<int64_t>& axes) {
  const Type& t = x->type;
  uint64_t staticCount = 1;  // unsigned: wraps instead of overflowing on absurd types
  std::vector<int64_t> symbolic;
  for (int64_t a : axes) {
    const DimExpr& d = t.dims[static_cast<size_t>(a)];
    if (d.isConst()) staticCount *= static_cast<uint64_t>(d.constValue());
    else symbolic.push_back(a);
  }
  if (symbolic.empty()) return e.constant(t.dtype, static_cast<double>(staticCount), e.name("count"));
  Value* n = nullptr;
  for (int64_t a : symbolic) {
    Value* d = e.op(OpKind::Dim, {e.shapeSource(x)}, {{"axis", Attribute::makeInt(a)}}, e.name("dim" + std::to_string(a)));
    n = n ? e.op(OpKind::Mul, {n, d}, {}, e.name("numel")) : d;
  }
  if (staticCount != 1) {
    Value* c = e.constant(DType::I64, static_cast<double>(staticCount), e.name("static_count"));
    n = e.op(OpKind::Mul, {n, c}, {}, e.name("numel"));
  }
  return e.op(OpKind::Cast, {n}, {{"to", Attribute::makeDType(t.dtype)}}, e.name("count"));
}

// mean = reduce_sum(x, attrs) / count. `count` is built on first use and
// shared by later means over the same axes (layer_norm's mean and variance).
Value* mean(Emitter& e, Value* x, Attrs attrs, const std::vector<int64_t>& axes, Value*& count,
            const std::string& name, std::optional<Type> type = std::nullopt) {
  Value* s = e.op(OpKind::ReduceSum, {x}, std::move(attrs), name + ".sum");
  if (!count) count = elementCount(e, x, axes);
  return e.op(OpKind::Div, {s, count}, {}, name, std::move(type));
}

// Each lowering returns the value that replaces the composite's result, built
// with the composite's result type so every user sees the same type as before.

Value* lowerSoftmax(Emitter& e, const Operation& op) {
  Value* x = op.operands[0];
  auto ax = axisOf(op, x->type.rank());
  if (!ax) return nullptr;
  Attrs keep = keepAxes({*ax});
  // Subtracting the maximum keeps exp() from overflowing; it cancels exactly.
  Value* m = e.op(OpKind::ReduceMax, {x}, keep, e.name("max"));
  Value* d = e.op(OpKind::Sub, {x, m}, {}, e.name("shift"));
  Value* ex = e.op(OpKind::Exp, {d}, {}, e.name("exp"));
  Value* s = e.op(OpKind::ReduceSum, {ex}, keep, e.name("sum"));
  const Type& ty = op.result()->type;
  if (op.kind == OpKind::Softmax) return e.op(OpKind::Div, {ex, s}, {}, e.base(), ty);
  // log_softmax as (x - m) - log(sum): never the log of a tiny quotient.
  Value* l = e.op(OpKind::Log, {s}, {}, e.name("logsum"));
  return e.op(OpKind::Sub, {d, l}, {}, e.base(), ty);
}

Value* lowerLayerNorm(Emitter& e, const Operation& op) {
  Value* x = op.operands[0];
  Value* g = op.operands[1];
  Value* b = op.operands[2];
  size_t rank = x->type.rank();
  auto ax = axisOf(op, rank);
  if (!ax) return nullptr;
  double eps = 1e-5;
  if (const Attribute* a = op.attr("epsilon")) {
    if (!a->isNumber()) return nullptr;
    eps = a->asDouble();
  }
  std::vector<int64_t> axes;
  for (int64_t i = *ax; i < static_cast<int64_t>(rank); ++i) axes.push_back(i);
  Attrs keep = keepAxes(axes);
  Value* count = nullptr;
  Value* mu = mean(e, x, keep, axes, count, e.name("mean"));
  // Variance of the centred values (two passes), not E[x^2] - E[x]^2, which
  // cancels catastrophically when the mean is large against the spread.
  Value* d = e.op(OpKind::Sub, {x, mu}, {}, e.name("centered"));
  Value* sq = e.op(OpKind::Mul, {d, d}, {}, e.name("sq"));
  Value* var = mean(e, sq, keep, axes, count, e.name("var"));
  Value* ep = e.constant(x->type.dtype, eps, e.name("eps"));
  Value* ve = e.op(OpKind::Add, {var, ep}, {}, e.name("var_eps"));
  Value* r = e.op(OpKind::Rsqrt, {ve}, {}, e.name("rstd"));
  Value* n = e.op(OpKind::Mul, {d, r}, {}, e.name("norm"));
  Value* sc = e.op(OpKind::Mul, {n, g}, {}, e.name("scaled"));
  return e.op(OpKind::Add, {sc, b}, {}, e.base(), op.result()->type);
}

Value* lowerGelu(Emitter& e, const Operation& op) {
  Value* x = op.operands[0];
  DType dt = x->type.dtype;
  bool tanhForm = isTanhGelu(op);
  Value* inner = nullptr;  // 1 + erf(...) or 1 + tanh(...)
  if (tanhForm) {
    // x^3 as two multiplies: pow would need a negative-base rule and is slower.
    Value* x2 = e.op(OpKind::Mul, {x, x}, {}, e.name("sq"));
    Value* x3 = e.op(OpKind::Mul, {x2, x}, {}, e.name("cube"));
    Value* k = e.constant(dt, kGeluCubic, e.name("coef"));
    Value* t = e.op(OpKind::Mul, {x3, k}, {}, e.name("cubic"));
    Value* poly = e.op(OpKind::Add, {x, t}, {}, e.name("poly"));
    Value* c = e.constant(dt, kSqrt2OverPi, e.name("sqrt_2_pi"));
    Value* arg = e.op(OpKind::Mul, {poly, c}, {}, e.name("arg"));
    Value* th = e.op(OpKind::Tanh, {arg}, {}, e.name("tanh"));
    Value* one = e.constant(dt, 1.0, e.name("one"));
    inner = e.op(OpKind::Add, {th, one}, {}, e.name("plus1"));
  } else {
    Value* c = e.constant(dt, kInvSqrt2, e.name("rsqrt2"));
    Value* arg = e.op(OpKind::Mul, {x, c}, {}, e.name("arg"));
    Value* er = e.op(OpKind::Erf, {arg}, {}, e.name("erf"));
    Value* one = e.constant(dt, 1.0, e.name("one"));
    inner = e.op(OpKind::Add, {er, one}, {}, e.name("plus1"));
  }
  Value* half = e.constant(dt, 0.5, e.name("half"));
  Value* hx = e.op(OpKind::Mul, {x, half}, {}, e.name("halfx"));
  return e.op(OpKind::Mul, {hx, inner}, {}, e.base(), op.result()->type);
}

Value* lowerReduceMean(Emitter& e, const Operation& op) {
  Value* x = op.operands[0];
  auto axes = reducedAxes(op, x->type.rank());
  if (!axes) return nullptr;
  Value* count = nullptr;
  // reduce_sum takes the same attributes, so keepdims and the axes as written carry over.
  return mean(e, x, op.attrs, *axes, count, e.base(), op.result()->type);
}

bool isComposite(const Operation& op) {
  switch (op.kind) {
    case OpKind::Softmax: case OpKind::LogSoftmax: case OpKind::LayerNorm:
    case OpKind::ReduceMean:
      return true;
    case OpKind::Gelu: {
      // The exact form in f32 and f64 stays one op: codegen computes
      // x * Phi(x) as one rational (codegen/cpu/VectorMath.h), two vector
      // multiplies shorter than its decomposition, which kept gelu_bias
      // bound by its FMA pipes. The tanh form, and f16 and bf16 (computed
      // in f32, as the interpreter does), are decomposed.
      DType dt = op.results.empty() ? DType::F32 : op.result()->type.dtype;
      return isTanhGelu(op) || dt == DType::F16 || dt == DType::BF16;
    }
    default:
      return false;
  }
}

bool isSymbolicSplat(const Operation& op) {
  const Attribute* v = op.attr("value");
  if (op.kind != OpKind::Constant || op.results.size() != 1 || !v || v->kind != Attribute::Kind::Splat) return false;
  for (const DimExpr& d : op.result()->type.dims)
    if (!d.isConst()) return true;
  return false;
}

void tally(Counts& c, OpKind k) {
  switch (k) {
    case OpKind::Softmax: ++c.softmax; break;
    case OpKind::LogSoftmax: ++c.logSoftmax; break;
    case OpKind::LayerNorm: ++c.layerNorm; break;
    case OpKind::Gelu: ++c.gelu; break;
    default: ++c.reduceMean; break;
  }
}

// Rewrites the composites among the function's top-level ops. Fusion bodies
// are left alone: decompose runs before fusion, and a body is one kernel.
bool decomposeFunction(Function& f, PassContext& ctx) {
  Counts counts;
  for (size_t i = 0; i < f.ops.size(); ++i) {
    Operation& op = *f.ops[i];
    if (isSymbolicSplat(op)) {
      // A splat whose size is known only at run time: a scalar broadcast,
      // which any kernel can hold (the host has no buffer of that size).
      Value* old = op.result();
      std::string base = old->name;
      Emitter e(f, i, op, ctx.diags, counts);
      const Type t = old->type;
      Value* s = e.op(OpKind::Constant, {}, {{"value", *op.attr("value")}}, e.name("scalar"), Type{t.dtype, {}});
      Value* repl = e.op(OpKind::BroadcastTo, {s}, {}, base, t);
      if (!repl) return false;
      replaceAllUses(f, old, repl);
      f.ops.erase(f.ops.begin() + static_cast<std::ptrdiff_t>(e.pos()));
      repl->name = base;
      i = e.pos() - 1;
      continue;
    }
    if (!isComposite(op) || op.results.size() != 1) continue;
    // Copy what is needed after the composite is gone.
    Value* old = op.result();
    std::string base = old->name;
    Location loc = op.loc;
    std::string opName(op.name());
    Emitter e(f, i, op, ctx.diags, counts);
    // f16/bf16 are computed in f32 (as the interpreter does): sums, counts
    // and epsilons would overflow or round away in the narrow type.
    DType dt = op.result()->type.dtype;
    bool narrow = dt == DType::F16 || dt == DType::BF16;
    Operation wide;
    const Operation* src = &op;
    if (narrow) {
      wide.kind = op.kind;
      wide.attrs = op.attrs;
      wide.loc = op.loc;
      for (Value* v : op.operands) {
        wide.operands.push_back(e.op(OpKind::Cast, {v}, {{"to", Attribute::makeDType(DType::F32)}}, e.name("f32")));
        e.sameShape(wide.operands.back(), v);
      }
      auto r = std::make_unique<Value>();
      r->name = base;
      r->type = Type{DType::F32, op.result()->type.dims};
      wide.results.push_back(std::move(r));
      src = &wide;
    }
    Value* repl = nullptr;
    switch (op.kind) {
      case OpKind::Softmax: case OpKind::LogSoftmax: repl = lowerSoftmax(e, *src); break;
      case OpKind::LayerNorm: repl = lowerLayerNorm(e, *src); break;
      case OpKind::Gelu: repl = lowerGelu(e, *src); break;
      default: repl = lowerReduceMean(e, *src); break;
    }
    if (narrow && repl)
      repl = e.op(OpKind::Cast, {repl}, {{"to", Attribute::makeDType(dt)}}, e.base(), op.result()->type);
    if (!repl) {
      // makeOp has reported why; a malformed attribute was reported by the verifier.
      if (e.failed()) {
        ctx.diags.note(loc, "while decomposing '" + opName + "' into primitive ops");
        return false;
      }
      continue;
    }
    tally(counts, op.kind);
    replaceAllUses(f, old, repl);
    f.ops.erase(f.ops.begin() + static_cast<std::ptrdiff_t>(e.pos()));
    // The composite's name is free again: the replacement takes it, so the
    // function's results and later ops read as before.
    repl->name = base;
    i = e.pos() - 1;
  }
  if (ctx.opts.stats)
    ctx.os << "// decompose stats of @" << f.name << ": " << counts.softmax << " softmax, " << counts.logSoftmax
           << " log_softmax, " << counts.layerNorm << " layer_norm, " << counts.gelu << " gelu, "
           << counts.reduceMean << " reduce_mean rewritten into " << counts.created << " ops\n";
  return true;
}

}  // namespace

bool decompose(Module& m, PassContext& ctx) {
  bool ok = true;
  for (auto& f : m.funcs) ok &= decomposeFunction(*f, ctx);
  return ok;
}

}  // namespace dscc
