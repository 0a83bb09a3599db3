// Symbolic shape analysis: the Z3-backed oracle for the verifier, and the pass.
#include "passes/InferShapes.h"

#include <cstdio>
#include <set>

#include "ir/Verifier.h"
#include "passes/ShapeSolver.h"

namespace dscc {
namespace {

// Answers the verifier's questions with the solver and records the relations
// that must be checked at run time, with the op that needs each.
class SolverOracle : public ShapeOracle {
 public:
  explicit SolverOracle(ShapeSolver& s) : s_(s) {}

  Tri equal(const DimExpr& a, const DimExpr& b) override { return remember(s_.equal(a, b)); }
  Tri broadcastable(const DimExpr& a, const DimExpr& b) override { return remember(s_.broadcastable(a, b)); }
  std::string counterexample() override { return example_; }
  bool solveAnonymousDims() override { return true; }
  void assume(const CheckRelation& r) override { s_.assume(r); }
  void requireAtRuntime(const CheckRelation& r, const Operation* op) override {
    if (!seen_.insert(r.str()).second) return;
    pending.push_back({r, op});
    s_.assume(r);
  }

  struct Pending {
    CheckRelation rel;
    const Operation* op;  // null: before the return
  };
  std::vector<Pending> pending;

 private:
  Tri remember(const Answer& a) {
    example_ = a.example;
    return a.tri;
  }
  ShapeSolver& s_;
  std::string example_;
  std::set<std::string> seen_;
};

// Every exact division in `e`, as (numerator, denominator).
void collectDivs(const DimExpr& e, std::vector<std::pair<DimExpr, DimExpr>>& out) {
  for (const auto& t : e.terms())
    for (const auto& a : t.atoms) {
      if (a->kind == DimAtomKind::Div) out.push_back({a->args[0], a->args[1]});
      for (const auto& x : a->args) collectDivs(x, out);
    }
}

void printFacts(const Function& f, const ShapeSolver& s, const SolverOracle& o, const SourceMgr& sm,
                std::ostream& os) {
  os << "// shape facts of @" << f.name << "\n";
  os << "//   facts:\n";
  for (const auto& t : s.factTexts()) os << "//     " << t << "\n";
  os << "//   classes:\n";
  for (const auto& c : s.classes()) {
    os << "//     {";
    for (size_t i = 0; i < c.size(); ++i) os << (i ? ", " : "") << c[i].str();
    os << "}\n";
  }
  os << "//   checks:\n";
  for (const auto& p : o.pending) {
    os << "//     " << p.rel.str() << "  // " << p.rel.what;
    if (p.op) os << " at line " << p.op->loc.line;
    os << "\n";
  }
  (void)sm;
}

bool inferFunction(Function& f, PassContext& ctx) {
  DiagEngine& diags = ctx.diags;
  int before = diags.errorCount();
  // The session's solver when there is one (the planner and codegen ask it
  // later, with what this pass proved and assumed), else one of its own.
  std::unique_ptr<ShapeSolver> own;
  bool fresh = true;
  if (!ctx.solvers) {
    own = std::make_unique<ShapeSolver>(ctx.opts.solverTimeoutMs);
    for (const Fact& fact : f.facts) own->addFact(fact);
  }
  ShapeSolver& solver = own ? *own : ctx.solvers->of(f, &fresh);
  if (fresh) ctx.startupMs += solver.stats().startupMs;
  std::vector<size_t> conflict;
  if (solver.satisfiable(&conflict).tri == Tri::Disproved) {
    diags.error(f.loc, "the facts of '@" + f.name + "' can never all hold");
    for (size_t k : conflict)
      if (k < f.facts.size()) diags.note(f.facts[k].loc, "'" + f.facts[k].str() + "' is part of the conflict");
    return false;
  }
  SolverOracle oracle(solver);
  // Arguments' exact divisions (f32[S/2]) must divide.
  auto requireDivs = [&](const Type& t, const Operation* op, Location loc) {
    std::vector<std::pair<DimExpr, DimExpr>> divs;
    for (const auto& d : t.dims) collectDivs(d, divs);
    for (const auto& [n, dd] : divs) {
      Answer a = solver.divisible(n, dd);
      if (a.tri == Tri::Disproved) {
        diags.error(loc, DimExpr::div(n, dd).str() + " can never divide exactly");
        if (!a.example.empty()) diags.note(loc, "e.g. " + a.example);
      } else if (a.tri == Tri::Unknown) {
        oracle.requireAtRuntime({"divisible", n, dd, "exact division in " + t.str()}, op);
      }
    }
  };
  for (const auto& a : f.args) requireDivs(a->type, nullptr, a->loc);
  size_t argChecks = oracle.pending.size();
  for (auto& op : f.ops) {
    if (op->kind == OpKind::Check) {
      if (auto r = checkRelation(*op)) oracle.assume(*r);
      continue;
    }
    // Divisions the user wrote come first: they say what the op then relies on.
    if (op->hasExplicitType)
      for (auto& r : op->results) requireDivs(r->type, op.get(), op->loc);
    if (!inferOpTypes(f, *op, diags, &oracle)) continue;
    for (auto& r : op->results) {
      for (auto& d : r->type.dims) d = solver.simplify(d);
      requireDivs(r->type, op.get(), op->loc);
    }
  }
  verifyReturns(f, diags, oracle);
  if (diags.errorCount() != before) return false;
  // A check that holds only where a size is 0 (a reshape of [S, 4] to
  // [S, 5]) compiles, but the program fails at every other size: say so.
  for (const auto& p : oracle.pending) {
    Answer a = solver.holdsAtNonZeroSizes(p.rel);
    if (a.tri != Tri::Disproved) continue;
    Location loc = p.op ? p.op->loc : f.loc;
    diags.warning(loc, "run-time check (" + p.rel.what + ") '" + p.rel.str() +
                           "' holds only where a size is 0" + (a.example.empty() ? "" : " (" + a.example + ")") +
                           ": the program fails at every other size");
  }

  // Print each result dim with class representatives: `where T == S` makes
  // every T an S, so equal dims look equal.
  std::map<std::string, DimExpr> reps;
  for (const auto& cls : solver.classes())
    for (const auto& e : cls)
      if (e.isSymbol()) {
        DimExpr r = solver.representative(e);
        if (r != e && (r.isSymbol() || r.isConst())) reps[e.symbolName()] = r;
      }
  if (!reps.empty())
    for (auto& op : f.ops)
      for (auto& r : op->results)
        for (auto& d : r->type.dims) d = d.substitute(reps);

  // Insert the checks before the ops that need them, in order.
  std::vector<std::unique_ptr<Operation>> ops;
  for (size_t i = 0; i < argChecks; ++i) ops.push_back(makeCheckOp(oracle.pending[i].rel, f.loc));
  for (auto& op : f.ops) {
    for (size_t i = argChecks; i < oracle.pending.size(); ++i)
      if (oracle.pending[i].op == op.get()) ops.push_back(makeCheckOp(oracle.pending[i].rel, op->loc));
    if (op->kind != OpKind::Check) op->hasExplicitType = true;
    ops.push_back(std::move(op));
  }
  for (size_t i = argChecks; i < oracle.pending.size(); ++i)
    if (!oracle.pending[i].op) ops.push_back(makeCheckOp(oracle.pending[i].rel, f.returnLoc));
  f.ops = std::move(ops);

  if (ctx.opts.printShapeFacts) printFacts(f, solver, oracle, diags.sources(), ctx.os);
  if (ctx.opts.stats) {
    const SolverStats& st = solver.stats();
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "// shape solver stats of @%s: %d queries, %d fast, %d cached, %d z3 checks (%d unknown, %d out of time), "
                  "%.3f ms in z3, %.3f ms z3 start-up\n",
                  f.name.c_str(), st.queries, st.fastAnswers, st.cacheHits, st.z3Checks, st.z3Unknown, st.z3Interrupted, st.z3Ms,
                  st.startupMs);
    ctx.os << buf;
  }
  return true;
}

}  // namespace

bool inferShapes(Module& m, PassContext& ctx) {
  bool ok = true;
  for (auto& f : m.funcs) ok &= inferFunction(*f, ctx);
  return ok;
}

}  // namespace dscc
