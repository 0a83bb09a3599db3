// The solver layer of shape analysis: normal forms and union-find answer the
// easy questions about dims, Z3 answers the rest; answers are cached.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/IR.h"
#include "ir/Verifier.h"

namespace dscc {

/// An answer to "does R hold for every assignment the facts allow?".
/// Proved: always; Disproved: never (the facts force R false); Unknown: it
/// depends on the sizes, or Z3 gave up. `example` is an assignment of the
/// symbols under which R is false (for Disproved and, when found, Unknown),
/// e.g. "S = 1, T = 2".
struct Answer {
  Tri tri = Tri::Unknown;
  std::string example;
};

/// Counters for `--stats`.
struct SolverStats {
  int queries = 0;       // every question asked
  int fastAnswers = 0;   // answered by normal forms or union-find
  int cacheHits = 0;     // answered from the cache
  int z3Checks = 0;      // calls to Z3's check()
  int z3Unknown = 0;     // of which Z3 could not decide (incl. time-outs)
  int z3Interrupted = 0; // of which stopped by the CPU-time budget
  double z3Ms = 0;       // time inside Z3
  double startupMs = 0;  // creating the Z3 context and solver (once a question needs Z3)
};

/// An inclusive integer interval; hi == INT64_MAX means unbounded.
struct Interval {
  int64_t lo = 0, hi = INT64_MAX;
};

/// Facts and queries about the dims of one function.
class ShapeSolver {
 public:
  /// `timeoutMs` bounds every Z3 check: milliseconds of CPU time of the thread that runs it (so the answers
  /// do not depend on the machine's load), with a wall clock of 40 times that, at least a minute, as a backstop.
  explicit ShapeSolver(unsigned timeoutMs = 250);
  ~ShapeSolver();
  ShapeSolver(const ShapeSolver&) = delete;
  ShapeSolver& operator=(const ShapeSolver&) = delete;

  /// Adds a `where` fact.
  void addFact(const Fact& f);
  /// Adds a relation known to hold from here on (a run-time check guards it).
  void assume(const CheckRelation& r);

  Answer equal(const DimExpr& a, const DimExpr& b);
  /// a == b || a == 1 || b == 1.
  Answer broadcastable(const DimExpr& a, const DimExpr& b);
  /// Do tensors of these shapes hold the same number of elements?
  Answer sameElementCount(const std::vector<DimExpr>& a, const std::vector<DimExpr>& b);
  /// a % b == 0 (b > 0).
  Answer divisible(const DimExpr& a, const DimExpr& b);
  /// a <= b.
  Answer lessEqual(const DimExpr& a, const DimExpr& b);
  /// a < b.
  Answer lessThan(const DimExpr& a, const DimExpr& b);
  /// The relation of a `check` op.
  Answer holds(const CheckRelation& r);
  /// Can relation `r` hold at sizes that are all at least 1 (under the
  /// facts)? Disproved: it holds only where some size it names is 0 (a
  /// reshape of [S, 4] to [S, 5]); `example` is then an assignment where it
  /// holds, if any. Proved with one such assignment; Unknown if Z3 gives up.
  Answer holdsAtNonZeroSizes(const CheckRelation& r);
  /// Can all facts hold at once? Proved: yes (`example` is one assignment);
  /// Disproved: never (`conflict` lists the indices of facts in a conflict).
  Answer satisfiable(std::vector<size_t>* conflict = nullptr);

  /// Rebuilds `e` deciding what the facts decide: min/max whose order is
  /// proved, bcast whose operands are proved equal or 1.
  DimExpr simplify(const DimExpr& e);
  /// A sound interval for `e` over the facts' ranges (interval arithmetic).
  Interval bounds(const DimExpr& e) const;

  /// Equivalence classes with two or more members, each sorted, by first member.
  std::vector<std::vector<DimExpr>> classes() const;
  /// The representative of e's class (e itself if alone).
  DimExpr representative(const DimExpr& e) const;
  /// The facts and assumptions in the order they were added, as text.
  const std::vector<std::string>& factTexts() const { return factTexts_; }
  const SolverStats& stats() const { return stats_; }

 private:
  struct Z3State;
  /// A fact or an assumed relation, as added: Z3 is started only when a question needs it (creating a context
  /// costs tens of milliseconds, and most functions' questions never reach it), and then given these in order.
  struct Added {
    std::optional<Fact> fact;
    std::optional<CheckRelation> relation;
  };
  Z3State& z3();
  void addToZ3(const Added& a);
  /// A relation between two dims, as asked.
  struct Rel {
    enum Kind { Eq, Bcast, Divisible, Le, Lt } kind;
    DimExpr a, b;
    std::string key() const;
  };
  Answer decide(const Rel& r);
  Answer fast(const Rel& r) const;
  std::string find(const std::string& k) const;
  void unite(const DimExpr& a, const DimExpr& b);
  void noteRange(const DimExpr& e, std::optional<int64_t> lo, std::optional<int64_t> hi);

  unsigned timeoutMs_;
  std::vector<Added> added_;
  std::unique_ptr<Z3State> z3_;
  std::map<std::string, Answer> cache_;
  mutable std::map<std::string, std::string> parent_;
  std::map<std::string, DimExpr> exprs_;
  std::map<std::string, Interval> ranges_;  // per symbol
  std::map<std::string, int64_t> divisors_;  // S -> k from facts `S % k == 0`
  std::vector<std::string> factTexts_;
  std::map<std::string, std::string> model_;  // one assignment the facts allow
  SolverStats stats_;
};

/// One shape solver per function for a whole compile session: created on
/// first use with the function's `where` facts; infer-shapes adds the checks
/// it proves or keeps, and the fusion planner and the code generator ask the
/// same solver (at most one Z3 start-up per function, when a question needs
/// it; each relation decided once).
/// A key is a Function's address: the pool must not outlive the module.
class SolverPool {
 public:
  explicit SolverPool(unsigned timeoutMs = 250) : timeoutMs_(timeoutMs) {}
  /// f's solver, with f's facts; `created` (optional) says whether this call made it.
  ShapeSolver& of(const Function& f, bool* created = nullptr);

 private:
  unsigned timeoutMs_;
  std::map<const Function*, std::unique_ptr<ShapeSolver>> solvers_;
};

}  // namespace dscc
