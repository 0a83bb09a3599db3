// Z3-backed answers about dims, behind a union-find and normal-form fast path.
#include "passes/ShapeSolver.h"

#include <pthread.h>
#include <time.h>
#include <z3++.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

namespace dscc {

namespace {
// Saturating arithmetic for interval bounds (INT64_MAX is +infinity).
int64_t satAdd(int64_t a, int64_t b) {
  __int128 r = static_cast<__int128>(a) + b;
  return r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : static_cast<int64_t>(r);
}
int64_t satMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  __int128 r = static_cast<__int128>(a) * b;
  return r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : static_cast<int64_t>(r);
}
Interval mulI(Interval x, Interval y) {
  int64_t c[4] = {satMul(x.lo, y.lo), satMul(x.lo, y.hi), satMul(x.hi, y.lo), satMul(x.hi, y.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}
int64_t floorDivI(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
}  // namespace

/// Bounds each Z3 check by the CPU time of the thread that runs it, not by the wall clock: on a loaded machine a
/// check gets less of a core per second but the same seconds of one, so the answers (and with them the checks a
/// program keeps, and the compiled code) do not depend on what else the machine runs. Z3's own `timeout` is a
/// wall clock, and its resource limit (`rlimit`) does not count the nonlinear arithmetic that sizes need, so
/// neither gives that. One thread per solver watches the clock of the checking thread and interrupts the check
/// (`Z3_solver_interrupt`, which, unlike the context's interrupt, leaves later checks alone) when it passes.
class CpuBudget {
 public:
  CpuBudget(z3::context& ctx, z3::solver& solver, unsigned ms)
      : ctx_(ctx), solver_(solver), budgetNs_(int64_t(ms) * 1000000) {
    watcher_ = std::thread([this] { watch(); });
  }
  ~CpuBudget() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    watcher_.join();
  }
  CpuBudget(const CpuBudget&) = delete;
  CpuBudget& operator=(const CpuBudget&) = delete;

  /// solver.check(assumptions), interrupted (z3::unknown) once it has used the budget's CPU time;
  /// `*interrupted` says whether it was.
  z3::check_result check(const z3::expr_vector& assumptions, bool* interrupted) {
    clockid_t clock;
    const bool timed = pthread_getcpuclockid(pthread_self(), &clock) == 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      armed_ = timed;
      fired_ = false;
      clock_ = clock;
      deadlineNs_ = timed ? cpuNs(clock) + budgetNs_ : 0;
    }
    cv_.notify_all();
    z3::check_result r = solver_.check(assumptions);
    std::lock_guard<std::mutex> l(mu_);
    armed_ = false;
    *interrupted = fired_;
    return r;
  }

 private:
  static int64_t cpuNs(clockid_t c) {
    timespec ts{};
    clock_gettime(c, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
  void watch() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (!armed_) {
        cv_.wait(l, [&] { return stop_ || armed_; });
        continue;
      }
      // Every 2 ms of a check; a check that ends is seen at the next tick.
      cv_.wait_for(l, std::chrono::milliseconds(2));
      if (armed_ && !fired_ && cpuNs(clock_) >= deadlineNs_) {
        Z3_solver_interrupt(ctx_, solver_);
        fired_ = true;
      }
    }
  }

  z3::context& ctx_;
  z3::solver& solver_;
  const int64_t budgetNs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, fired_ = false, stop_ = false;
  clockid_t clock_{};
  int64_t deadlineNs_ = 0;
  std::thread watcher_;
};

struct ShapeSolver::Z3State {
  z3::context ctx;
  z3::solver solver{ctx};
  std::unique_ptr<CpuBudget> budget;  // made once the solver's parameters are set
  std::map<std::string, z3::expr> syms;  // by symbol name
  std::vector<z3::expr> trackers;         // one per fact, for unsat cores

  z3::expr sym(const std::string& n) {
    auto it = syms.find(n);
    if (it != syms.end()) return it->second;
    z3::expr v = ctx.int_const(n.c_str());
    syms.emplace(n, v);
    solver.add(v >= 0);  // every symbol is a size
    return v;
  }

  z3::expr encode(const DimExpr& e) {
    z3::expr sum = ctx.int_val(0);
    for (const DimTerm& t : e.terms()) {
      z3::expr prod = ctx.int_val(static_cast<int64_t>(t.coeff));
      for (const auto& a : t.atoms) prod = prod * encodeAtom(*a);
      sum = sum + prod;
    }
    return sum.simplify();
  }

  z3::expr encodeAtom(const DimAtom& a) {
    if (a.kind == DimAtomKind::Sym) return sym(a.name);
    z3::expr x = encode(a.args[0]), y = encode(a.args[1]);
    // Z3's div and mod are Euclidean: for the positive divisors that sizes
    // have they are floor division and floor modulus.
    switch (a.kind) {
      case DimAtomKind::Div: case DimAtomKind::FloorDiv: return x / y;
      case DimAtomKind::CeilDiv: return -((-x) / y);
      case DimAtomKind::Mod: return z3::mod(x, y);
      case DimAtomKind::Min: return z3::ite(x <= y, x, y);
      case DimAtomKind::Max: return z3::ite(x >= y, x, y);
      case DimAtomKind::Bcast: return z3::ite(y == 1, x, z3::ite(x == 1, y, x));
      case DimAtomKind::Sym: break;
    }
    return x;
  }

  z3::expr encodeFact(const Fact& f) {
    z3::expr l = encode(f.lhs), r = encode(f.rhs);
    if (f.kind == Fact::Kind::Range) return r <= l && l <= encode(f.hi);
    switch (f.op) {
      case CmpOp::Eq: return l == r;
      case CmpOp::Ne: return l != r;
      case CmpOp::Lt: return l < r;
      case CmpOp::Le: return l <= r;
      case CmpOp::Gt: return l > r;
      case CmpOp::Ge: return l >= r;
    }
    return ctx.bool_val(true);
  }

  std::string example(const z3::model& m, const std::set<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
      if (!n.empty() && n[0] == '?') continue;
      auto it = syms.find(n);
      if (it == syms.end()) continue;
      z3::expr v = m.eval(it->second, true);
      out += (out.empty() ? "" : ", ") + n + " = " + v.to_string();
    }
    return out;
  }
};

ShapeSolver::ShapeSolver(unsigned timeoutMs) : timeoutMs_(timeoutMs) {}

ShapeSolver::Z3State& ShapeSolver::z3() {
  if (z3_) return *z3_;
  auto t0 = std::chrono::steady_clock::now();
  z3_ = std::make_unique<Z3State>();
  // The CPU-time budget decides; Z3's wall clock only backstops a check whose thread gets no CPU for minutes.
  z3::params p(z3_->ctx);
  p.set("timeout", std::max(60000u, timeoutMs_ * 40));
  z3_->solver.set(p);
  z3_->budget = std::make_unique<CpuBudget>(z3_->ctx, z3_->solver, timeoutMs_);
  // What was added before Z3 was needed, in the order it was added.
  for (const Added& a : added_) addToZ3(a);
  stats_.startupMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return *z3_;
}

void ShapeSolver::addToZ3(const Added& a) {
  Z3State& z = *z3_;
  if (a.fact) {
    z3::expr tracker = z.ctx.bool_const(("fact" + std::to_string(z.trackers.size())).c_str());
    z.trackers.push_back(tracker);
    z.solver.add(z3::implies(tracker, z.encodeFact(*a.fact)));
    return;
  }
  const CheckRelation& r = *a.relation;
  z3::expr x = z.encode(r.lhs), y = z.encode(r.rhs);
  if (r.kind == "divisible") z.solver.add(z3::mod(x, y) == 0);
  else if (r.kind == "broadcasts_to") z.solver.add(x == y || x == 1);
  else z.solver.add(x == y || x == 1 || y == 1);
}

ShapeSolver::~ShapeSolver() = default;

std::string ShapeSolver::Rel::key() const {
  static const char* names[] = {"eq", "bcast", "div", "le", "lt"};
  return std::string(names[kind]) + "|" + a.key() + "|" + b.key();
}

std::string ShapeSolver::find(const std::string& k) const {
  auto it = parent_.find(k);
  if (it == parent_.end() || it->second == k) return k;
  std::string r = find(it->second);
  parent_[k] = r;
  return r;
}

void ShapeSolver::unite(const DimExpr& a, const DimExpr& b) {
  for (const DimExpr* e : {&a, &b}) {
    exprs_.emplace(e->key(), *e);
    parent_.emplace(e->key(), e->key());
  }
  std::string ra = find(a.key()), rb = find(b.key());
  if (ra == rb) return;
  // The simpler expression represents the class: fewer terms, then by text.
  const DimExpr& ea = exprs_.at(ra);
  const DimExpr& eb = exprs_.at(rb);
  bool aFirst = ea.terms().size() != eb.terms().size() ? ea.terms().size() < eb.terms().size() : ra < rb;
  if (aFirst) parent_[rb] = ra;
  else parent_[ra] = rb;
}

void ShapeSolver::noteRange(const DimExpr& e, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (!e.isSymbol()) return;
  Interval& r = ranges_[e.symbolName()];
  if (lo) r.lo = std::max(r.lo, *lo);
  if (hi) r.hi = std::min(r.hi, *hi);
}

void ShapeSolver::addFact(const Fact& f) {
  factTexts_.push_back(f.str());
  added_.push_back({f, std::nullopt});
  if (z3_) addToZ3(added_.back());
  cache_.clear();
  auto c = [](const DimExpr& e) { return e.isConst() ? std::optional<int64_t>(e.constValue()) : std::nullopt; };
  if (f.kind == Fact::Kind::Range) {
    noteRange(f.lhs, c(f.rhs), c(f.hi));
    return;
  }
  // `S % k == 0` makes every multiple of S a multiple of k (fast divisibility).
  if (f.op == CmpOp::Eq && f.rhs.isConst() && f.rhs.constValue() == 0 && f.lhs.terms().size() == 1 &&
      f.lhs.terms()[0].coeff == 1 && f.lhs.terms()[0].atoms.size() == 1) {
    const DimAtom& m = *f.lhs.terms()[0].atoms[0];
    if (m.kind == DimAtomKind::Mod && m.args[0].isSymbol() && m.args[1].isConst() && m.args[1].constValue() > 0) {
      int64_t& k = divisors_[m.args[0].symbolName()];
      k = k ? std::lcm(k, m.args[1].constValue()) : m.args[1].constValue();
    }
  }
  switch (f.op) {
    case CmpOp::Eq:
      unite(f.lhs, f.rhs);
      noteRange(f.lhs, c(f.rhs), c(f.rhs));
      noteRange(f.rhs, c(f.lhs), c(f.lhs));
      break;
    case CmpOp::Le: noteRange(f.lhs, std::nullopt, c(f.rhs)); noteRange(f.rhs, c(f.lhs), std::nullopt); break;
    case CmpOp::Lt:
      noteRange(f.lhs, std::nullopt, c(f.rhs) ? std::optional<int64_t>(*c(f.rhs) - 1) : std::nullopt);
      noteRange(f.rhs, c(f.lhs) ? std::optional<int64_t>(*c(f.lhs) + 1) : std::nullopt, std::nullopt);
      break;
    case CmpOp::Ge: noteRange(f.lhs, c(f.rhs), std::nullopt); noteRange(f.rhs, std::nullopt, c(f.lhs)); break;
    case CmpOp::Gt:
      noteRange(f.lhs, c(f.rhs) ? std::optional<int64_t>(*c(f.rhs) + 1) : std::nullopt, std::nullopt);
      noteRange(f.rhs, std::nullopt, c(f.lhs) ? std::optional<int64_t>(*c(f.lhs) - 1) : std::nullopt);
      break;
    case CmpOp::Ne: break;
  }
}

void ShapeSolver::assume(const CheckRelation& r) {
  // eq and le are ordinary facts (they feed union-find and the ranges too).
  if (r.kind == "eq" || r.kind == "le") {
    Fact f;
    f.lhs = r.lhs;
    f.rhs = r.rhs;
    f.op = r.kind == "eq" ? CmpOp::Eq : CmpOp::Le;
    addFact(f);
    return;
  }
  factTexts_.push_back(r.str());
  cache_.clear();
  added_.push_back({std::nullopt, r});
  if (z3_) addToZ3(added_.back());
}

Answer ShapeSolver::fast(const Rel& r) const {
  DimExpr d = r.a - r.b;
  auto isOne = [&](const DimExpr& e) {
    return (e.isConst() && e.constValue() == 1) ||
           (parent_.count(e.key()) && parent_.count("1") && find(e.key()) == find("1"));
  };
  bool same = d.isConst() ? d.constValue() == 0
                          : (parent_.count(r.a.key()) && parent_.count(r.b.key()) &&
                             find(r.a.key()) == find(r.b.key()));
  // A relation the facts force false is broken by any assignment they allow.
  auto never = [&]() {
    std::set<std::string> names;
    r.a.collectSymbols(names);
    r.b.collectSymbols(names);
    std::string ex;
    for (const auto& n : names)
      if (auto it = model_.find(n); it != model_.end())
        ex += (ex.empty() ? "" : ", ") + n + " = " + it->second;
    return Answer{Tri::Disproved, ex};
  };
  switch (r.kind) {
    case Rel::Eq:
      if (same) return {Tri::Proved, ""};
      if (d.isConst()) return never();
      break;
    case Rel::Bcast:
      if (same || isOne(r.a) || isOne(r.b)) return {Tri::Proved, ""};
      if (r.a.isConst() && r.b.isConst()) return never();
      break;
    case Rel::Divisible:
      if (r.b.isConst() && r.b.constValue() > 0) {
        bool all = true;
        for (const auto& t : r.a.terms()) {
          // A term is a multiple of coeff times the known divisors of its symbols.
          __int128 m = t.coeff;
          for (const auto& a : t.atoms)
            if (a->kind == DimAtomKind::Sym)
              if (auto it = divisors_.find(a->name); it != divisors_.end()) m *= it->second;
          all &= m % r.b.constValue() == 0;
        }
        if (all) return {Tri::Proved, ""};
        if (r.a.isConst()) return never();
      }
      break;
    case Rel::Le:
      if (d.isConst()) return d.constValue() <= 0 ? Answer{Tri::Proved, ""} : never();
      break;
    case Rel::Lt:
      if (d.isConst()) return d.constValue() < 0 ? Answer{Tri::Proved, ""} : never();
      break;
  }
  return {Tri::Unknown, ""};
}

namespace {
// The highest degree of a relation sent to Z3 (see decide).
constexpr size_t kMaxZ3Degree = 16;
}  // namespace

Answer ShapeSolver::decide(const Rel& r) {
  ++stats_.queries;
  Answer f = fast(r);
  if (f.tri != Tri::Unknown) {
    ++stats_.fastAnswers;
    return f;
  }
  std::string key = r.key();
  if (auto it = cache_.find(key); it != cache_.end()) {
    ++stats_.cacheHits;
    return it->second;
  }
  // Z3's nonlinear arithmetic does not honour its time limit: a guard on the
  // element count of f32[N0, ..., N27] (a product of 28 symbols) ran for
  // minutes in one check. Relations of higher degree than real shapes have
  // stay Unknown (a run-time guard or check) without asking Z3.
  size_t degree = 0;
  for (const DimExpr* e : {&r.a, &r.b})
    for (const DimTerm& t : e->terms()) degree = std::max(degree, t.atoms.size());
  if (degree > kMaxZ3Degree) return cache_[key] = {Tri::Unknown, ""};
  Z3State& z = z3();
  z3::expr a = z.encode(r.a), b = z.encode(r.b);
  z3::expr rel = z.ctx.bool_val(true);
  switch (r.kind) {
    case Rel::Eq: rel = a == b; break;
    case Rel::Bcast: rel = a == b || a == 1 || b == 1; break;
    case Rel::Divisible: rel = z3::mod(a, b) == 0; break;
    case Rel::Le: rel = a <= b; break;
    case Rel::Lt: rel = a < b; break;
  }
  std::set<std::string> names;
  r.a.collectSymbols(names);
  r.b.collectSymbols(names);
  z3::expr_vector assumptions(z.ctx);
  for (const auto& t : z.trackers) assumptions.push_back(t);
  auto check = [&](const z3::expr& e) {
    auto t0 = std::chrono::steady_clock::now();
    z.solver.push();
    z.solver.add(e);
    bool interrupted = false;
    z3::check_result res = z.budget->check(assumptions, &interrupted);
    if (interrupted) ++stats_.z3Interrupted;
    std::string ex;
    if (res == z3::sat) ex = z.example(z.solver.get_model(), names);
    z.solver.pop();
    ++stats_.z3Checks;
    if (res == z3::unknown) ++stats_.z3Unknown;
    stats_.z3Ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(res, ex);
  };
  Answer ans;
  auto [notRel, ex] = check(!rel);
  if (notRel == z3::unsat) {
    ans = {Tri::Proved, ""};
    if (r.kind == Rel::Eq) unite(r.a, r.b);
  } else {
    auto [isRel, ex2] = check(rel);
    if (isRel == z3::unsat) ans = {Tri::Disproved, ex};
    else ans = {Tri::Unknown, ex};
  }
  cache_[key] = ans;
  return ans;
}

Answer ShapeSolver::equal(const DimExpr& a, const DimExpr& b) { return decide({Rel::Eq, a, b}); }
Answer ShapeSolver::broadcastable(const DimExpr& a, const DimExpr& b) { return decide({Rel::Bcast, a, b}); }
Answer ShapeSolver::sameElementCount(const std::vector<DimExpr>& a, const std::vector<DimExpr>& b) {
  DimExpr pa(1), pb(1);
  for (const auto& d : a) pa = pa * d;
  for (const auto& d : b) pb = pb * d;
  return equal(pa, pb);
}

Answer ShapeSolver::divisible(const DimExpr& a, const DimExpr& b) { return decide({Rel::Divisible, a, b}); }
Answer ShapeSolver::lessEqual(const DimExpr& a, const DimExpr& b) { return decide({Rel::Le, a, b}); }
Answer ShapeSolver::lessThan(const DimExpr& a, const DimExpr& b) { return decide({Rel::Lt, a, b}); }

Answer ShapeSolver::holds(const CheckRelation& r) {
  if (r.kind == "eq") return equal(r.lhs, r.rhs);
  if (r.kind == "le") return lessEqual(r.lhs, r.rhs);
  if (r.kind == "divisible") return divisible(r.lhs, r.rhs);
  if (r.kind == "broadcasts_to") {
    Answer eq = equal(r.lhs, r.rhs);
    if (eq.tri == Tri::Proved) return eq;
    Answer one = equal(r.lhs, DimExpr(1));
    if (one.tri == Tri::Proved) return one;
    return {eq.tri == Tri::Disproved && one.tri == Tri::Disproved ? Tri::Disproved : Tri::Unknown, eq.example};
  }
  return broadcastable(r.lhs, r.rhs);
}

Answer ShapeSolver::holdsAtNonZeroSizes(const CheckRelation& r) {
  ++stats_.queries;
  size_t degree = 0;
  for (const DimExpr* e : {&r.lhs, &r.rhs})
    for (const DimTerm& t : e->terms()) degree = std::max(degree, t.atoms.size());
  if (degree > kMaxZ3Degree) return {Tri::Unknown, ""};
  Z3State& z = z3();
  z3::expr a = z.encode(r.lhs), b = z.encode(r.rhs);
  z3::expr rel = r.kind == "eq" ? a == b
                 : r.kind == "le" ? a <= b
                 : r.kind == "divisible" ? z3::mod(a, b) == 0
                 : r.kind == "broadcasts_to" ? (a == b || a == 1)
                                             : (a == b || a == 1 || b == 1);
  std::set<std::string> names;
  r.lhs.collectSymbols(names);
  r.rhs.collectSymbols(names);
  z3::expr_vector assumptions(z.ctx);
  for (const auto& t : z.trackers) assumptions.push_back(t);
  auto check = [&](bool nonZero) {
    auto t0 = std::chrono::steady_clock::now();
    z.solver.push();
    z.solver.add(rel);
    if (nonZero)
      for (const auto& n : names) z.solver.add(z.sym(n) >= 1);
    bool interrupted = false;
    z3::check_result res = z.budget->check(assumptions, &interrupted);
    if (interrupted) ++stats_.z3Interrupted;
    std::string ex = res == z3::sat ? z.example(z.solver.get_model(), names) : "";
    z.solver.pop();
    ++stats_.z3Checks;
    if (res == z3::unknown) ++stats_.z3Unknown;
    stats_.z3Ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(res, ex);
  };
  auto [res, ex] = check(true);
  if (res == z3::sat) return {Tri::Proved, ex};
  if (res == z3::unknown) return {Tri::Unknown, ""};
  return {Tri::Disproved, check(false).second};
}

Answer ShapeSolver::satisfiable(std::vector<size_t>* conflict) {
  // Facts that only bound symbols by constants (the usual `where S in [1, 512]`) hold together exactly when each
  // symbol's range has a size in it: answered without starting Z3, each symbol at its least size.
  if (!z3_) {
    bool bounds = true;
    for (const Added& a : added_)
      bounds &= a.fact && a.fact->kind == Fact::Kind::Range && a.fact->lhs.isSymbol() && a.fact->rhs.isConst() &&
                a.fact->hi.isConst();
    bool nonEmpty = true;
    for (const auto& [n, r] : ranges_) nonEmpty &= std::max<int64_t>(r.lo, 0) <= r.hi;
    if (bounds && nonEmpty) {
      std::string ex;
      for (const auto& [n, r] : ranges_) {
        model_[n] = std::to_string(std::max<int64_t>(r.lo, 0));
        ex += (ex.empty() ? "" : ", ") + n + " = " + model_[n];
      }
      return {Tri::Proved, ex};
    }
  }
  Z3State& z = z3();
  z3::expr_vector assumptions(z.ctx);
  for (const auto& t : z.trackers) assumptions.push_back(t);
  auto t0 = std::chrono::steady_clock::now();
  bool interrupted = false;
  z3::check_result res = z.budget->check(assumptions, &interrupted);
  if (interrupted) ++stats_.z3Interrupted;
  ++stats_.z3Checks;
  stats_.z3Ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (res == z3::sat) {
    z3::model m = z.solver.get_model();
    std::set<std::string> names;
    for (const auto& [n, e] : z.syms) {
      names.insert(n);
      model_[n] = m.eval(e, true).to_string();
    }
    return {Tri::Proved, z.example(m, names)};
  }
  if (res == z3::unknown) {
    ++stats_.z3Unknown;
    return {Tri::Unknown, ""};
  }
  if (conflict) {
    z3::expr_vector core = z.solver.unsat_core();
    for (unsigned i = 0; i < core.size(); ++i)
      for (size_t k = 0; k < z.trackers.size(); ++k)
        if (z3::eq(core[i], z.trackers[k])) conflict->push_back(k);
    std::sort(conflict->begin(), conflict->end());
  }
  return {Tri::Disproved, ""};
}

DimExpr ShapeSolver::simplify(const DimExpr& e) {
  if (!e.hasOpaqueAtoms()) return e;
  DimExpr sum(0);
  for (const DimTerm& t : e.terms()) {
    DimExpr prod(t.coeff);
    for (const auto& a : t.atoms) {
      if (a->kind == DimAtomKind::Sym) {
        prod = prod * DimExpr::symbol(a->name);
        continue;
      }
      DimExpr x = simplify(a->args[0]), y = simplify(a->args[1]);
      DimExpr r;
      switch (a->kind) {
        case DimAtomKind::Min:
        case DimAtomKind::Max: {
          bool isMin = a->kind == DimAtomKind::Min;
          if (lessEqual(x, y).tri == Tri::Proved) r = isMin ? x : y;
          else if (lessEqual(y, x).tri == Tri::Proved) r = isMin ? y : x;
          else r = isMin ? DimExpr::min(x, y) : DimExpr::max(x, y);
          break;
        }
        case DimAtomKind::Bcast:
          if (equal(x, y).tri == Tri::Proved || equal(y, DimExpr(1)).tri == Tri::Proved) r = x;
          else if (equal(x, DimExpr(1)).tri == Tri::Proved) r = y;
          else r = DimExpr::bcast(x, y);
          break;
        case DimAtomKind::Div: r = DimExpr::div(x, y); break;
        case DimAtomKind::FloorDiv: r = DimExpr::floorDiv(x, y); break;
        case DimAtomKind::CeilDiv: r = DimExpr::ceilDiv(x, y); break;
        case DimAtomKind::Mod: r = DimExpr::mod(x, y); break;
        case DimAtomKind::Sym: break;
      }
      prod = prod * r;
    }
    sum = sum + prod;
  }
  return sum;
}

Interval ShapeSolver::bounds(const DimExpr& e) const {
  Interval sum{0, 0};
  for (const DimTerm& t : e.terms()) {
    Interval prod{t.coeff, t.coeff};
    for (const auto& a : t.atoms) {
      Interval x;
      if (a->kind == DimAtomKind::Sym) {
        auto it = ranges_.find(a->name);
        if (it != ranges_.end()) x = it->second;
      } else {
        Interval p = bounds(a->args[0]), q = bounds(a->args[1]);
        bool posConst = q.lo == q.hi && q.lo > 0;
        switch (a->kind) {
          case DimAtomKind::Div: case DimAtomKind::FloorDiv: case DimAtomKind::CeilDiv:
            if (posConst) {
              x = {floorDivI(p.lo, q.lo), p.hi == INT64_MAX ? INT64_MAX : -floorDivI(-p.hi, q.lo)};
            } else {
              x = {INT64_MIN, INT64_MAX};
            }
            break;
          case DimAtomKind::Mod: x = posConst ? Interval{0, q.lo - 1} : Interval{INT64_MIN, INT64_MAX}; break;
          case DimAtomKind::Min: x = {std::min(p.lo, q.lo), std::min(p.hi, q.hi)}; break;
          case DimAtomKind::Max: x = {std::max(p.lo, q.lo), std::max(p.hi, q.hi)}; break;
          case DimAtomKind::Bcast: x = {std::min(p.lo, q.lo), std::max(p.hi, q.hi)}; break;
          case DimAtomKind::Sym: break;
        }
      }
      prod = mulI(prod, x);
    }
    sum = {satAdd(sum.lo, prod.lo), satAdd(sum.hi, prod.hi)};
  }
  return sum;
}

std::vector<std::vector<DimExpr>> ShapeSolver::classes() const {
  std::map<std::string, std::vector<DimExpr>> groups;
  for (const auto& [k, e] : exprs_) groups[find(k)].push_back(e);
  std::vector<std::vector<DimExpr>> out;
  for (auto& [root, members] : groups) {
    if (members.size() < 2) continue;
    std::sort(members.begin(), members.end());
    out.push_back(members);
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x[0] < y[0]; });
  return out;
}

DimExpr ShapeSolver::representative(const DimExpr& e) const {
  auto it = parent_.find(e.key());
  if (it == parent_.end()) return e;
  return exprs_.at(find(e.key()));
}

ShapeSolver& SolverPool::of(const Function& f, bool* created) {
  auto& s = solvers_[&f];
  if (created) *created = !s;
  if (!s) {
    s = std::make_unique<ShapeSolver>(timeoutMs_);
    for (const Fact& fact : f.facts) s->addFact(fact);
  }
  return *s;
}

}  // namespace dscc
