// Unit tests of the shape solver: fast paths, Z3 answers, counterexamples, time-outs.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ir/Parser.h"
#include "passes/ShapeSolver.h"

using namespace dscc;

namespace {
DimExpr P(const std::string& s) {
  std::string err;
  auto e = parseDimExpr(s, &err);
  EXPECT_TRUE(e.has_value()) << s << ": " << err;
  return e ? *e : DimExpr(-999);
}
Fact range(const char* sym, int64_t lo, int64_t hi) {
  Fact f;
  f.kind = Fact::Kind::Range;
  f.lhs = DimExpr::symbol(sym);
  f.rhs = DimExpr(lo);
  f.hi = DimExpr(hi);
  return f;
}
Fact cmp(const std::string& l, CmpOp op, const std::string& r) {
  Fact f;
  f.lhs = P(l);
  f.op = op;
  f.rhs = P(r);
  return f;
}
}  // namespace

TEST(ShapeSolver, NormalFormsAnswerWithoutZ3) {
  ShapeSolver s;
  s.addFact(range("S", 1, 512));
  EXPECT_EQ(s.equal(P("B*S"), P("S*B")).tri, Tri::Proved);
  EXPECT_EQ(s.stats().z3Checks, 0);
  EXPECT_EQ(s.stats().fastAnswers, 1);
}

TEST(ShapeSolver, DisprovedWithCounterexample) {
  ShapeSolver s;
  s.addFact(range("S", 1, 512));
  ASSERT_EQ(s.satisfiable().tri, Tri::Proved);
  Answer a = s.equal(P("S"), P("768"));
  EXPECT_EQ(a.tri, Tri::Disproved);
  EXPECT_NE(a.example.find("S = "), std::string::npos) << a.example;
  // In range, S may or may not be 64: neither proved nor disproved.
  Answer b = s.equal(P("S"), P("64"));
  EXPECT_EQ(b.tri, Tri::Unknown);
  EXPECT_NE(b.example.find("S = "), std::string::npos);
}

TEST(ShapeSolver, SameElementCount) {
  ShapeSolver s;
  s.addFact(range("S", 1, 512));
  EXPECT_EQ(s.sameElementCount({P("B"), P("S"), P("768")}, {P("B*S"), P("12"), P("64")}).tri, Tri::Proved);
  EXPECT_EQ(s.sameElementCount({P("S"), P("4")}, {P("S"), P("3")}).tri, Tri::Disproved);
  EXPECT_EQ(s.sameElementCount({P("S")}, {P("N"), P("4")}).tri, Tri::Unknown);
}

TEST(ShapeSolver, UnionFindFromEqualityFacts) {
  ShapeSolver s;
  s.addFact(cmp("T", CmpOp::Eq, "S"));
  EXPECT_EQ(s.equal(P("T"), P("S")).tri, Tri::Proved);
  EXPECT_EQ(s.stats().z3Checks, 0);
  auto cls = s.classes();
  ASSERT_EQ(cls.size(), 1u);
  EXPECT_EQ(cls[0].size(), 2u);
  EXPECT_EQ(s.representative(P("T")), P("S"));
}

TEST(ShapeSolver, Z3ProvesWhatNormalFormsCannot) {
  ShapeSolver s;
  s.addFact(range("S", 1, 512));
  s.addFact(cmp("S % 8", CmpOp::Eq, "0"));
  // Divisibility of a multiple of S by 8: the divisor fast path.
  EXPECT_EQ(s.divisible(P("3*B*S"), P("8")).tri, Tri::Proved);
  // 8*(S/8) == S needs Z3's integer reasoning.
  EXPECT_EQ(s.equal(P("8*(S/8)"), P("S")).tri, Tri::Proved);
  EXPECT_GT(s.stats().z3Checks, 0);
  EXPECT_EQ(s.lessEqual(P("S"), P("512")).tri, Tri::Proved);
  EXPECT_EQ(s.lessThan(P("S"), P("8")).tri, Tri::Disproved);  // S >= 8 as a positive multiple of 8
  EXPECT_EQ(s.broadcastable(P("S"), P("S+1")).tri, Tri::Disproved);
}

TEST(ShapeSolver, AnswersAreCached) {
  ShapeSolver s;
  s.addFact(range("S", 1, 512));
  s.addFact(range("T", 1, 512));
  Answer a = s.broadcastable(P("S"), P("T"));
  int checks = s.stats().z3Checks;
  Answer b = s.broadcastable(P("S"), P("T"));
  EXPECT_EQ(a.tri, Tri::Unknown);
  EXPECT_EQ(b.tri, Tri::Unknown);
  EXPECT_EQ(s.stats().z3Checks, checks);
  EXPECT_EQ(s.stats().cacheHits, 1);
}

TEST(ShapeSolver, AssumedChecksBecomeFacts) {
  ShapeSolver s;
  s.addFact(range("S", 1, 512));
  s.addFact(range("T", 1, 512));
  EXPECT_EQ(s.broadcastable(P("S"), P("T")).tri, Tri::Unknown);
  s.assume({"broadcastable", P("S"), P("T"), ""});
  EXPECT_EQ(s.broadcastable(P("S"), P("T")).tri, Tri::Proved);
  s.assume({"eq", P("K"), P("64"), ""});
  EXPECT_EQ(s.equal(P("K"), P("64")).tri, Tri::Proved);
}

TEST(ShapeSolver, UnsatisfiableFactsNameTheConflict) {
  ShapeSolver s;
  s.addFact(range("S", 1, 10));
  s.addFact(range("B", 1, 10));
  s.addFact(cmp("S", CmpOp::Gt, "20"));
  std::vector<size_t> conflict;
  EXPECT_EQ(s.satisfiable(&conflict).tri, Tri::Disproved);
  EXPECT_EQ(conflict, (std::vector<size_t>{0, 2}));
}

TEST(ShapeSolver, BoundsByIntervals) {
  ShapeSolver s;
  s.addFact(range("B", 1, 64));
  s.addFact(range("S", 1, 512));
  Interval i = s.bounds(P("B*S*768"));
  EXPECT_EQ(i.lo, 768);
  EXPECT_EQ(i.hi, 64 * 512 * 768);
  EXPECT_LT(i.hi, INT32_MAX);  // every index of f32[B, S, 768] fits in 32 bits
  Interval j = s.bounds(P("S/2 + min(S, 4)"));
  EXPECT_EQ(j.hi, 256 + 4);
  EXPECT_EQ(s.bounds(P("T")).hi, INT64_MAX);  // no range: unbounded
}

TEST(ShapeSolver, SimplifyUsesFacts) {
  ShapeSolver s;
  s.addFact(range("S", 1, 64));
  EXPECT_EQ(s.simplify(P("max(-1, S-99)")), P("-1"));
  EXPECT_EQ(s.simplify(P("min(S, 100)")), P("S"));
}

// A query Z3 cannot finish in its time limit gives Unknown, not a hang:
// factoring a 62-bit semiprime.
TEST(ShapeSolver, TimeoutGivesUnknown) {
  ShapeSolver s(/*timeoutMs=*/200);
  s.addFact(range("P", 2, 3037000499));
  s.addFact(range("Q", 2, 3037000499));
  auto t0 = std::chrono::steady_clock::now();
  // 2147483647 * 2147483629 (both prime): P*Q == N is satisfiable but hard.
  Answer a = s.equal(P("P*Q"), P("4611685975477714963"));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(a.tri, Tri::Unknown);
  EXPECT_LT(ms, 5000);
  EXPECT_GE(s.stats().z3Unknown, 1);
  EXPECT_GE(s.stats().z3Interrupted, 1);
  // An interrupted check leaves the solver working (a context-wide interrupt would cancel every later one).
  Answer b = s.lessEqual(P("P"), P("P*Q"));
  EXPECT_EQ(b.tri, Tri::Proved);
}

// The budget is CPU time of the checking thread, not the wall clock: with three threads spinning on the same
// core the check gets a quarter of it, and still runs its whole budget before it is stopped. A wall-clock limit
// (Z3's `timeout`, as before) stops it after a quarter of the CPU time, so the answers depended on the load.
TEST(ShapeSolver, BudgetIsCpuTimeOfTheCheck) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < 3; ++i)
    spinners.emplace_back([&] {
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  ShapeSolver s(/*timeoutMs=*/150);
  s.addFact(range("P", 2, 3037000499));
  s.addFact(range("Q", 2, 3037000499));
  auto cpuMs = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  const double c0 = cpuMs();
  Answer a = s.equal(P("P*Q"), P("4611685975477714963"));
  const double used = cpuMs() - c0;
  stop = true;
  for (auto& t : spinners) t.join();
  EXPECT_EQ(a.tri, Tri::Unknown);
  EXPECT_GE(s.stats().z3Interrupted, 1);
  // At least the budget of one check (two checks may run, each bounded); a wall clock gives about a quarter.
  EXPECT_GE(used, 140) << "CPU ms used by the check under a 4-way shared core";
}
