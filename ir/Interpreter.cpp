// The reference interpreter's driver: symbol binding, fact and shape checks, op dispatch.
#include "ir/Interpreter.h"

#include <limits>
#include <map>
#include <new>
#include <set>
#include <stdexcept>

#include "ir/InterpInternal.h"
#include "ir/Sizes.h"

namespace dscc {
namespace interp {

int64_t numelOf(const Shape& s) { return checkedNumel(s).value_or(-1); }

Shape stridesOf(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::string shapeStr(const Shape& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

std::string typeStr(DType dt, const Shape& s) { return std::string(dtypeName(dt)) + shapeStr(s); }

std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    // Trailing dims line up; a missing leading dim acts as 1.
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x == y || y == 1) out[i] = x;
    else if (x == 1) out[i] = y;
    else return std::nullopt;
  }
  return out;
}

std::vector<int64_t> broadcastIndex(const Shape& in, const Shape& out) {
  size_t r = out.size(), off = r - in.size();
  Shape inStrides = stridesOf(in);
  // Stride 0 along stretched or missing dims makes the walk below re-read them.
  Shape st(r, 0);
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : inStrides[i];
  int64_t n = numelOf(out);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  Shape pos(r, 0);
  int64_t src = 0;
  for (int64_t k = 0; k < n; ++k) {
    idx[static_cast<size_t>(k)] = src;
    for (size_t d = r; d-- > 0;) {
      if (++pos[d] < out[d]) {
        src += st[d];
        break;
      }
      src -= st[d] * (out[d] - 1);
      pos[d] = 0;
    }
  }
  return idx;
}

std::optional<int64_t> normAxis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

bool allBound(const DimExpr& d, const DimBindings& env) {
  std::set<std::string> syms;
  d.collectSymbols(syms);
  for (const auto& s : syms)
    if (!env.count(s)) return false;
  return true;
}

DimFit fitDim(const DimExpr& d, int64_t actual, DimBindings& env, std::optional<int64_t>& value,
              std::string* err) {
  value.reset();
  std::set<std::string> syms;
  d.collectSymbols(syms);
  std::vector<std::string> unbound;
  for (const auto& s : syms)
    if (!env.count(s)) unbound.push_back(s);
  std::string e;
  if (unbound.empty()) {
    value = d.evaluate(env, &e);
    if (!value) {
      if (err) *err = e;
      return DimFit::Error;
    }
    return *value == actual ? DimFit::Ok : DimFit::Mismatch;
  }
  if (unbound.size() != 1) return DimFit::Unsolvable;
  const std::string& x = unbound[0];
  // Only c*X + rest can be solved: X at most once per term and never inside
  // an opaque atom (a division, min, ... hides how X moves the value).
  for (const auto& t : d.terms()) {
    int count = 0;
    for (const auto& a : t.atoms) {
      if (a->kind == DimAtomKind::Sym) {
        count += a->name == x;
      } else {
        std::set<std::string> inner;
        for (const auto& arg : a->args) arg.collectSymbols(inner);
        if (inner.count(x)) return DimFit::Unsolvable;
      }
    }
    if (count > 1) return DimFit::Unsolvable;
  }
  DimBindings e0 = env, e1 = env;
  e0[x] = 0;
  e1[x] = 1;
  auto r0 = d.evaluate(e0, &e), r1 = d.evaluate(e1, &e);
  if (!r0 || !r1) {
    if (err) *err = e;
    return DimFit::Error;
  }
  auto coefC = checkedSub(*r1, *r0), numC = checkedSub(actual, *r0);
  if (!coefC || !numC) {
    if (err) *err = d.str() + " overflows 64-bit integers";
    return DimFit::Error;
  }
  int64_t coef = *coefC, num = *numC;
  if (coef == 0 || (coef == -1 && num == std::numeric_limits<int64_t>::min()) || num % coef != 0 ||
      num / coef < 0)
    return DimFit::Mismatch;
  env[x] = num / coef;
  value = actual;
  return DimFit::Ok;
}

bool OpCtx::fail(const std::string& msg) const {
  diags.error(op.loc, msg);
  return false;
}

bool OpCtx::intAttr(std::string_view n, int64_t dflt, int64_t& out) const {
  const Attribute* a = op.attr(n);
  if (!a) {
    out = dflt;
    return true;
  }
  if (!a->isIntLike()) return fail("attribute " + std::string(n) + " of " + name() + " must be an integer");
  std::string e;
  auto v = a->asDim().evaluate(env, &e);
  if (!v) return fail("attribute " + std::string(n) + " of " + name() + ": " + e);
  out = *v;
  return true;
}

bool OpCtx::boolAttr(std::string_view n, bool dflt, bool& out) const {
  const Attribute* a = op.attr(n);
  if (!a) {
    out = dflt;
    return true;
  }
  if (a->kind != Attribute::Kind::Bool)
    return fail("attribute " + std::string(n) + " of " + name() + " must be true or false");
  out = a->b;
  return true;
}

bool OpCtx::axisAttr(size_t rank, int64_t dflt, bool required, size_t& axis) const {
  if (required && !op.attr("axis")) return fail(name() + " needs an axis attribute");
  int64_t a = 0;
  if (!intAttr("axis", dflt, a)) return false;
  auto n = normAxis(a, rank);
  if (!n) return fail("axis " + std::to_string(a) + " of " + name() + " is out of range for rank " + std::to_string(rank));
  axis = static_cast<size_t>(*n);
  return true;
}

bool OpCtx::intListAttr(std::string_view n, std::vector<int64_t>& out, bool& present) const {
  out.clear();
  const Attribute* a = op.attr(n);
  present = a != nullptr;
  if (!a) return true;
  if (a->kind != Attribute::Kind::List)
    return fail("attribute " + std::string(n) + " of " + name() + " must be a list of integers");
  for (const auto& x : a->list) {
    if (!x.isIntLike())
      return fail("attribute " + std::string(n) + " of " + name() + " must be a list of integers");
    std::string e;
    auto v = x.asDim().evaluate(env, &e);
    if (!v) return fail("attribute " + std::string(n) + " of " + name() + ": " + e);
    out.push_back(*v);
  }
  return true;
}

bool OpCtx::typeShape(size_t i, std::vector<std::optional<int64_t>>& out) const {
  out.clear();
  const Type& t = op.result(i)->type;
  for (size_t k = 0; k < t.rank(); ++k) {
    const DimExpr& d = t.dims[k];
    if (!allBound(d, env)) {
      out.push_back(std::nullopt);
      continue;
    }
    std::string e;
    auto v = d.evaluate(env, &e);
    if (!v) return fail("dim " + std::to_string(k) + " of the type of " + name() + " (" + d.str() + "): " + e);
    if (*v < 0)
      return fail("dim " + std::to_string(k) + " of the type of " + name() + " is " + d.str() + " = " +
                  std::to_string(*v) + ", which is negative");
    out.push_back(*v);
  }
  return true;
}

bool runCheck(OpCtx& c, std::vector<Tensor>&) {
  auto rel = checkRelation(c.op);
  if (!rel) return c.fail("malformed check (it needs kind, lhs and rhs)");
  std::string e;
  auto ok = rel->holds(c.env, &e);
  std::string head = "run-time check" + (rel->what.empty() ? std::string() : " (" + rel->what + ")");
  if (!ok) return c.fail(head + " cannot be evaluated: " + e);
  if (*ok) return true;
  std::set<std::string> syms;
  rel->lhs.collectSymbols(syms);
  rel->rhs.collectSymbols(syms);
  std::string vals;
  for (const auto& s : syms)
    if (auto it = c.env.find(s); it != c.env.end())
      vals += (vals.empty() ? "" : ", ") + s + " = " + std::to_string(it->second);
  return c.fail(head + " failed: '" + rel->str() + "' does not hold" + (vals.empty() ? "" : " (" + vals + ")"));
}

namespace {

// Checks a computed tensor against a declared type, binding symbols the type
// introduces (anonymous `?` dims, symbols that only appear in results).
bool checkAgainstType(const Type& t, const Tensor& x, DimBindings& env, DiagEngine& diags, Location loc,
                      const std::string& what) {
  if (x.dtype != t.dtype || x.rank() != t.rank()) {
    diags.error(loc, what + " is " + typeStr(x.dtype, x.shape) + " but its type says " + t.str());
    return false;
  }
  // Plain symbols first, so `[N, 2*N]` is checked against the N bound here.
  for (size_t i = 0; i < t.rank(); ++i)
    if (t.dims[i].isSymbol() && !env.count(t.dims[i].symbolName())) env[t.dims[i].symbolName()] = x.shape[i];
  for (size_t i = 0; i < t.rank(); ++i) {
    const DimExpr& d = t.dims[i];
    std::optional<int64_t> v;
    std::string e;
    DimFit r = fitDim(d, x.shape[i], env, v, &e);
    std::string head = what + " has dim " + std::to_string(i) + " = " + std::to_string(x.shape[i]);
    switch (r) {
      case DimFit::Ok: continue;
      case DimFit::Mismatch:
        if (v) diags.error(loc, head + " but its type says " + d.str() + (d.isConst() ? "" : " = " + std::to_string(*v)));
        else diags.error(loc, head + ", which its type " + d.str() + " cannot equal");
        return false;
      case DimFit::Error: diags.error(loc, head + " but its type says " + d.str() + ", and " + e); return false;
      case DimFit::Unsolvable:
        diags.error(loc, head + " but its type says " + d.str() + ", whose symbols cannot be determined");
        return false;
    }
  }
  return true;
}

// Facts whose symbols are not all known yet wait until they are; a fact over
// symbols that nothing ever binds constrains nothing that ran.
bool checkReadyFacts(const Function& f, const DimBindings& env, std::vector<bool>& checked, DiagEngine& diags) {
  bool ok = true;
  for (size_t i = 0; i < f.facts.size(); ++i) {
    if (checked[i]) continue;
    const Fact& fact = f.facts[i];
    if (!allBound(fact.lhs, env) || !allBound(fact.rhs, env) ||
        (fact.kind == Fact::Kind::Range && !allBound(fact.hi, env)))
      continue;
    checked[i] = true;
    std::string e;
    if (!fact.holds(env, &e)) {
      diags.error(fact.loc, "fact violated: " + e);
      ok = false;
    }
  }
  return ok;
}

bool dispatch(OpCtx& c, std::vector<Tensor>& out) {
  switch (c.op.info().category) {
    case OpCategory::Unary: return runUnary(c, out);
    case OpCategory::Cast: return runCast(c, out);
    case OpCategory::Binary:
    case OpCategory::Logical:
    case OpCategory::Compare: return runBinary(c, out);
    case OpCategory::Select: return runSelect(c, out);
    case OpCategory::Reduce: return runReduce(c, out);
    case OpCategory::ArgMax: return runArgMax(c, out);
    case OpCategory::Scan: return runCumSum(c, out);
    case OpCategory::Softmax: return runSoftmax(c, out);
    case OpCategory::LayerNorm: return runLayerNorm(c, out);
    case OpCategory::Matmul: return runMatmul(c, out);
    case OpCategory::Conv: return runConv(c, out);
    case OpCategory::Pool: return runPool(c, out);
    case OpCategory::Recurrent: return runRnn(c, out);
    case OpCategory::Reshape: return runReshape(c, out);
    case OpCategory::Transpose: return runTranspose(c, out);
    case OpCategory::BroadcastTo: return runBroadcastTo(c, out);
    case OpCategory::Concat: return runConcat(c, out);
    case OpCategory::Slice: return runSlice(c, out);
    case OpCategory::Gather: return runGather(c, out);
    case OpCategory::Scatter: return runScatter(c, out);
    case OpCategory::Iota: return runIota(c, out);
    case OpCategory::Constant: return runConstant(c, out);
    case OpCategory::Dim: return runDim(c, out);
    case OpCategory::Check: return runCheck(c, out);
  }
  return c.fail("the interpreter does not know " + c.name());
}

// Runs `ops` in order into `vals`; a fusion runs its body, then binds its
// results to the yielded values.
bool runOps(const Function& f, const std::vector<std::unique_ptr<Operation>>& ops,
            std::map<const Value*, Tensor>& vals, DimBindings& env, std::vector<bool>& factChecked,
            DiagEngine& diags, int64_t& liveBytes) {
  for (const auto& opPtr : ops) {
    const Operation& op = *opPtr;
    OpCtx ctx{op, {}, env, diags};
    for (const Value* v : op.operands) {
      auto it = vals.find(v);
      if (it == vals.end()) return ctx.fail("operand %" + (v ? v->name : std::string("?")) + " of " + ctx.name() + " has no value");
      ctx.in.push_back(&it->second);
    }
    std::vector<Tensor> res;
    if (op.kind == OpKind::Fusion) {
      if (!runOps(f, op.body, vals, env, factChecked, diags, liveBytes)) return false;
      for (const Value* y : op.yields) res.push_back(vals.at(y));
    } else {
      // A window larger than its padded input has no size: say so before the result type is evaluated.
      if (!windowFitsAtRunTime(ctx)) return false;
      // Sizes first: a result whose declared shape is already known and too
      // large for the memory left is an error before the kernel allocates it.
      for (size_t r = 0; r < op.results.size(); ++r) {
        std::vector<std::optional<int64_t>> known;
        if (!ctx.typeShape(r, known)) return false;
        Shape shape;
        for (const auto& d : known)
          if (d) shape.push_back(*d);
        if (shape.size() != known.size()) continue;
        std::string why = sizeProblem(shape, int64_t(dtypeSize(op.result(r)->type.dtype)), memoryLimit() - liveBytes);
        if (!why.empty())
          return ctx.fail("cannot allocate the result of " + ctx.name() + " %" + op.result(r)->name + ": " +
                          op.result(r)->type.str() + " " + why + (liveBytes ? " (with " + std::to_string(liveBytes) +
                          " bytes already held)" : ""));
      }
      // What is not known in advance (broadcast shapes, gathers) is checked
      // when Tensor::zeros allocates; an allocation failure anywhere in a
      // kernel ends the run with an error at the op, never an abort.
      try {
        if (!dispatch(ctx, res)) return false;
      } catch (const TensorSizeError& e) {
        return ctx.fail("cannot allocate a tensor for " + ctx.name() + ": " + e.what());
      } catch (const std::bad_alloc&) {
        return ctx.fail("out of memory in " + ctx.name());
      } catch (const std::length_error&) {
        return ctx.fail("out of memory in " + ctx.name() + " (a buffer size overflows)");
      }
      for (const Tensor& t : res) liveBytes += int64_t(t.bytes.size());
      if (liveBytes > memoryLimit())
        return ctx.fail("the interpreter holds " + std::to_string(liveBytes) + " bytes after " + ctx.name() +
                        ", over the memory limit of " + std::to_string(memoryLimit()) +
                        " bytes (--max-memory raises it)");
    }
    if (res.size() != op.results.size())
      return ctx.fail(ctx.name() + " produced " + std::to_string(res.size()) + " results but declares " +
                      std::to_string(op.results.size()));
    for (size_t r = 0; r < res.size(); ++r) {
      std::string what = op.results.size() == 1 ? "result of " + ctx.name()
                                                : "result " + std::to_string(r) + " of " + ctx.name();
      if (!checkAgainstType(op.result(r)->type, res[r], env, diags, op.loc, what)) return false;
    }
    if (!checkReadyFacts(f, env, factChecked, diags)) return false;
    for (size_t r = 0; r < res.size(); ++r) vals[op.result(r)] = std::move(res[r]);
  }

  return true;
}

std::string argDesc(const Value& v) { return "%" + v.name; }

}  // namespace
}  // namespace interp

using namespace interp;

bool bindSymbols(const Function& f, const std::vector<std::vector<int64_t>>& shapes, DimBindings& env,
                 DiagEngine& diags) {
  if (shapes.size() != f.args.size()) {
    diags.error(f.loc, "@" + f.name + " takes " + std::to_string(f.args.size()) + " arguments but got " +
                           std::to_string(shapes.size()));
    return false;
  }
  bool ok = true;
  std::vector<bool> rankOk(f.args.size());
  for (size_t a = 0; a < f.args.size(); ++a) {
    const Value& v = *f.args[a];
    rankOk[a] = v.type.rank() == shapes[a].size();
    if (!rankOk[a]) {
      diags.error(v.loc, "argument " + argDesc(v) + " expects " + v.type.str() + " but got " +
                             typeStr(v.type.dtype, shapes[a]));
      ok = false;
    }
  }
  // Plain symbols bind first; dims like `S+1` or `2*N` are solved from them
  // afterwards, repeating while that binds something new.
  for (size_t a = 0; a < f.args.size(); ++a) {
    if (!rankOk[a]) continue;
    for (size_t i = 0; i < shapes[a].size(); ++i) {
      const DimExpr& d = f.args[a]->type.dims[i];
      if (d.isSymbol() && !env.count(d.symbolName())) env[d.symbolName()] = shapes[a][i];
    }
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t a = 0; a < f.args.size(); ++a) {
      if (!rankOk[a]) continue;
      for (size_t i = 0; i < shapes[a].size(); ++i) {
        const DimExpr& d = f.args[a]->type.dims[i];
        if (allBound(d, env)) continue;
        std::optional<int64_t> v;
        if (fitDim(d, shapes[a][i], env, v, nullptr) == DimFit::Ok) progress = true;
      }
    }
  }
  for (size_t a = 0; a < f.args.size(); ++a) {
    if (!rankOk[a]) continue;
    const Value& arg = *f.args[a];
    for (size_t i = 0; i < shapes[a].size(); ++i) {
      const DimExpr& d = arg.type.dims[i];
      int64_t actual = shapes[a][i];
      std::optional<int64_t> v;
      std::string e;
      DimFit r = fitDim(d, actual, env, v, &e);
      std::string head = "dim " + std::to_string(i) + " of " + argDesc(arg) + " is " + std::to_string(actual);
      switch (r) {
        case DimFit::Ok: break;
        case DimFit::Mismatch:
          if (!v) diags.error(arg.loc, head + ", which " + d.str() + " cannot equal");
          else if (d.isConst()) diags.error(arg.loc, head + " but its type says " + d.str());
          else diags.error(arg.loc, head + " but " + d.str() + " = " + std::to_string(*v) + " here");
          ok = false;
          break;
        case DimFit::Error:
          diags.error(arg.loc, head + " but " + d.str() + " cannot be evaluated: " + e);
          ok = false;
          break;
        case DimFit::Unsolvable:
          diags.error(arg.loc, head + " but the symbols of " + d.str() + " cannot be determined from the inputs");
          ok = false;
          break;
      }
    }
  }
  if (!ok) return false;
  std::vector<bool> checked(f.facts.size(), false);
  return checkReadyFacts(f, env, checked, diags);
}

bool interpret(const Function& f, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
               DiagEngine& diags, DimBindings* envOut) {
  outputs.clear();
  DimBindings local;
  DimBindings& env = envOut ? *envOut : local;
  env.clear();
  if (inputs.size() != f.args.size()) {
    diags.error(f.loc, "@" + f.name + " takes " + std::to_string(f.args.size()) + " arguments but got " +
                           std::to_string(inputs.size()));
    return false;
  }
  bool ok = true;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t a = 0; a < inputs.size(); ++a) {
    const Value& v = *f.args[a];
    if (inputs[a].dtype != v.type.dtype) {
      diags.error(v.loc, "argument " + argDesc(v) + " expects " + v.type.str() + " but got " + inputs[a].typeStr());
      ok = false;
    }
    shapes.push_back(inputs[a].shape);
  }
  if (!ok || !bindSymbols(f, shapes, env, diags)) return false;
  std::vector<bool> factChecked(f.facts.size(), false);
  // bindSymbols has checked (and passed) every fact it could evaluate.
  for (size_t i = 0; i < f.facts.size(); ++i) {
    const Fact& fact = f.facts[i];
    factChecked[i] = allBound(fact.lhs, env) && allBound(fact.rhs, env) &&
                     (fact.kind != Fact::Kind::Range || allBound(fact.hi, env));
  }

  std::map<const Value*, Tensor> vals;
  int64_t liveBytes = 0;  // every value stays alive until the end
  for (size_t a = 0; a < inputs.size(); ++a) {
    vals[f.args[a].get()] = inputs[a];
    liveBytes += int64_t(inputs[a].bytes.size());
  }

  if (!runOps(f, f.ops, vals, env, factChecked, diags, liveBytes)) return false;

  if (f.returns.size() != f.resultTypes.size()) {
    diags.error(f.returnLoc, "@" + f.name + " returns " + std::to_string(f.returns.size()) +
                                 " values but declares " + std::to_string(f.resultTypes.size()) + " results");
    return false;
  }
  for (size_t r = 0; r < f.returns.size(); ++r) {
    auto it = vals.find(f.returns[r]);
    if (it == vals.end()) {
      diags.error(f.returnLoc, "returned value %" + f.returns[r]->name + " has no value");
      return false;
    }
    if (!checkAgainstType(f.resultTypes[r], it->second, env, diags, f.returnLoc,
                          "result " + std::to_string(r) + " of @" + f.name))
      return false;
    outputs.push_back(it->second);
  }
  if (!checkReadyFacts(f, env, factChecked, diags)) return false;
  return true;
}

}  // namespace dscc
