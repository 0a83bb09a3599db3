// Unit tests of the tuner: distribution draws (frequencies, determinism), the range-table DP against brute force, YAML round trips and merges.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/Parser.h"
#include "tuner/ShapeDistribution.h"
#include "tuner/TuningTable.h"

using namespace dscc;
using namespace dscc::tuner;

namespace {

struct Fn {
  SourceMgr sm;
  std::ostringstream diagText;
  DiagEngine diags{sm, diagText};
  std::unique_ptr<Module> mod;
  Function* f = nullptr;
};

std::unique_ptr<Fn> function(const std::string& text) {
  auto p = std::make_unique<Fn>();
  int id = p->sm.addBuffer("t.dsc", text);
  p->mod = parseModule(p->sm, id, p->diags);
  EXPECT_TRUE(p->mod) << p->diagText.str();
  if (p->mod) p->f = p->mod->entry();
  return p;
}

const char* kFn = "func @f(%x: f32[N, D]) -> f32[N, D] where N in [1, 100000], D in [0, 100000] {\n  return %x\n}\n";

std::vector<WeightedPoint> points(const std::string& yaml, std::string* errOut = nullptr) {
  auto fn = function(kFn);
  DistributionSpec spec;
  std::string err;
  std::vector<WeightedPoint> out;
  bool ok = parseDistribution("d.yaml", yaml, spec, err) && expandDistribution(spec, *fn->f, out, err);
  if (errOut) *errOut = ok ? "" : err;
  else EXPECT_TRUE(ok) << err;
  return out;
}

double weightWhere(const std::vector<WeightedPoint>& ps, const std::function<bool(const DimBindings&)>& pred) {
  double w = 0;
  for (const auto& p : ps)
    if (pred(p.dims)) w += p.weight;
  return w;
}

}  // namespace

// Weighted values: frequencies within 6 standard deviations (n = 20000).
TEST(ShapeDistribution, WeightedValuesFrequencies) {
  auto ps = points("seed: 1\ndraws: 20000\ndims:\n  N: {values: [1, 2, 4, 8], weights: [40, 30, 20, 10]}\n"
                   "  D: {values: [5]}\n");
  ASSERT_EQ(ps.size(), 4u);
  double want[] = {0.4, 0.3, 0.2, 0.1};
  int64_t vals[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    double got = weightWhere(ps, [&](const DimBindings& b) { return b.at("N") == vals[i]; }) / 20000;
    EXPECT_NEAR(got, want[i], 6 * std::sqrt(want[i] * (1 - want[i]) / 20000)) << "N=" << vals[i];
  }
}

// Uniform ranges include both ends, each value about equally often.
TEST(ShapeDistribution, UniformRangeEnds) {
  auto ps = points("seed: 2\ndraws: 10000\ndims:\n  N: {range: [3, 7]}\n  D: {range: [0, 0], dist: uniform}\n");
  ASSERT_EQ(ps.size(), 5u);
  for (const auto& p : ps) {
    EXPECT_EQ(p.dims.at("D"), 0);
    EXPECT_NEAR(p.weight / 10000, 0.2, 6 * std::sqrt(0.2 * 0.8 / 10000)) << pointText(p.dims);
  }
  EXPECT_EQ(ps.front().dims.at("N"), 3);
  EXPECT_EQ(ps.back().dims.at("N"), 7);
}

// Log-uniform over [1, 1000]: half the mass below ~31.6, every draw in range, 1 and 1000 reachable.
TEST(ShapeDistribution, LogUniform) {
  auto ps = points("seed: 3\ndraws: 20000\ndims:\n  N: {range: [1, 1000], dist: log-uniform}\n  D: {values: [1]}\n");
  double low = weightWhere(ps, [](const DimBindings& b) { return b.at("N") <= 31; });
  double want = std::log(32.0) / std::log(1001.0);
  EXPECT_NEAR(low / 20000, want, 6 * std::sqrt(want * (1 - want) / 20000));
  for (const auto& p : ps) {
    EXPECT_GE(p.dims.at("N"), 1);
    EXPECT_LE(p.dims.at("N"), 1000);
  }
  EXPECT_EQ(ps.front().dims.at("N"), 1);
}

// The same seed gives the same points; another seed other points; listed points merge with drawn ones.
TEST(ShapeDistribution, DeterministicAndMerged) {
  std::string y = "seed: 9\ndraws: 50\ndims:\n  N: {range: [1, 100000], dist: log-uniform}\n  D: {range: [0, 9]}\n";
  auto a = points(y), b = points(y);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].dims, b[i].dims);
  auto c = points("seed: 10" + y.substr(7));
  bool differ = a.size() != c.size();
  for (size_t i = 0; !differ && i < a.size(); ++i) differ = a[i].dims != c[i].dims;
  EXPECT_TRUE(differ);
  auto m = points("points:\n  - {N: 2, D: 3, weight: 2.5}\n  - {D: 3, N: 2}\n  - {N: 1, D: 0}\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].dims, (DimBindings{{"D", 0}, {"N", 1}}));
  EXPECT_DOUBLE_EQ(m[1].weight, 3.5);
}

TEST(ShapeDistribution, LocatedErrors) {
  std::string err;
  points("draws: 3\ndims:\n  N: {values: [1]}\n  D: {values: [1], weights: [0]}\n", &err);
  EXPECT_EQ(err, "d.yaml:4:30: error: a weight of dims.D must be positive, not 0");
  points("points:\n  - {N: 0, D: 1}\n", &err);
  EXPECT_EQ(err, "d.yaml:2:5: error: points[0] {D: 1, N: 0} breaks the fact 'N in [1, 100000]' of @f");
  points("points:\n  - {N: 1}\n", &err);
  EXPECT_EQ(err, "d.yaml:2:5: error: points[0] gives no size for symbol 'D' of @f");
}

namespace {

Measurement meas(int64_t size, double weight, const std::vector<double>& times) {
  Measurement m;
  m.at = {{"N", size}};
  m.size = m.units = size;
  m.work = 1;
  m.weight = weight;
  auto cfgs = cpuConfigs();
  for (size_t c = 0; c < cfgs.size(); ++c) m.timesNs[cfgs[c].name()] = times[c];
  return m;
}

// The least expected cost of `ms` (sorted by size, distinct sizes) in at most K intervals, by trying every split.
double bruteForce(const std::vector<Measurement>& ms, size_t K) {
  size_t M = ms.size();
  auto cfgs = cpuConfigs();
  double best = INFINITY, totalW = 0;
  for (const auto& m : ms) totalW += m.weight;
  for (uint32_t mask = 0; mask < (1u << (M - 1)); ++mask) {  // bit i: a boundary after size i
    if (static_cast<size_t>(__builtin_popcount(mask)) + 1 > K) continue;
    double cost = 0;
    size_t start = 0;
    for (size_t i = 0; i < M; ++i) {
      if (i + 1 < M && !(mask >> i & 1)) continue;
      double segBest = INFINITY;
      for (const auto& c : cfgs) {
        double s = 0;
        for (size_t j = start; j <= i; ++j) s += ms[j].weight * ms[j].timesNs.at(c.name());
        segBest = std::min(segBest, s);
      }
      cost += segBest;
      start = i + 1;
    }
    best = std::min(best, cost);
  }
  return best / totalW;
}

}  // namespace

// The DP's table is optimal (brute force over every split), and oracle <= tuned <= best single.
TEST(RangeTable, DpMatchesBruteForce) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 60; ++trial) {
    size_t M = 1 + rng() % 9, K = 1 + rng() % 4;
    TuningFile t;
    t.maxVersions = static_cast<int>(K);
    KernelTuning k;
    int64_t size = 0;
    for (size_t i = 0; i < M; ++i) {
      std::vector<double> times;
      for (size_t c = 0; c < cpuConfigs().size(); ++c) times.push_back(1 + static_cast<double>(rng() % 1000));
      size += 1 + static_cast<int64_t>(rng() % 50);
      k.measurements.push_back(meas(size, 1 + static_cast<double>(rng() % 5), times));
    }
    t.kernels.push_back(k);
    buildTables(t);
    const KernelTuning& r = t.kernels[0];
    EXPECT_NEAR(r.expect.tuned, bruteForce(r.measurements, K), 1e-9 * r.expect.tuned) << "trial " << trial;
    EXPECT_LE(r.expect.oracle, r.expect.tuned + 1e-9);
    EXPECT_LE(r.expect.tuned, r.expect.bestSingle + 1e-9);
    EXPECT_LE(r.expect.bestSingle, r.expect.defaults + 1e-9);
    EXPECT_LE(r.ranges.size(), K);
    // The ranges are sorted, disjoint, adjacent, cover every measured size, and give the table's cost.
    ASSERT_FALSE(r.ranges.empty());
    EXPECT_EQ(r.ranges.front().from, r.measurements.front().size);
    EXPECT_EQ(r.ranges.back().to, r.measurements.back().size);
    for (size_t q = 1; q < r.ranges.size(); ++q) EXPECT_EQ(r.ranges[q].from, r.ranges[q - 1].to + 1);
    double cost = 0, w = 0;
    for (const auto& m : r.measurements) {
      cost += m.weight * m.timesNs.at(configAt(r, m.size).name());
      w += m.weight;
    }
    EXPECT_NEAR(cost / w, r.expect.tuned, 1e-9 * cost / w);
  }
}

// A table with two regimes splits where the winner changes.
TEST(RangeTable, SplitsWhereTheWinnerChanges) {
  TuningFile t;
  KernelTuning k;
  std::vector<double> smallWins(9, 100.0), bigWins(9, 100.0);
  smallWins[8] = 10;  // v16.c65536
  bigWins[0] = 10;    // v4.c4096
  for (int64_t s : {1, 2, 3}) k.measurements.push_back(meas(s, 1, smallWins));
  for (int64_t s : {100, 200}) k.measurements.push_back(meas(s, 1, bigWins));
  t.kernels.push_back(k);
  buildTables(t);
  const KernelTuning& r = t.kernels[0];
  ASSERT_EQ(r.ranges.size(), 2u);
  EXPECT_EQ(r.ranges[0].from, 1);
  EXPECT_EQ(r.ranges[0].to, 99);
  EXPECT_EQ(r.ranges[0].config.name(), "v16.c65536");
  EXPECT_EQ(r.ranges[1].to, 200);
  EXPECT_EQ(r.ranges[1].config.name(), "v4.c4096");
  EXPECT_EQ(r.fallback.name(), "v16.c65536");
  EXPECT_DOUBLE_EQ(r.expect.tuned, 10);
  EXPECT_DOUBLE_EQ(r.expect.defaults, 100);
}

// Write, read, write gives the same bytes; merging halves in either order gives the whole.
TEST(RangeTable, RoundTripAndMerge) {
  TuningFile whole;
  whole.device = "cpu \"x\"";
  whole.func = "f";
  KernelTuning k;
  k.fingerprint = "0123456789abcdef";
  k.size = "N";
  k.kind = KernelKind::Loop;
  k.symbol = "f.k0";
  std::mt19937_64 rng(7);
  for (int64_t s = 1; s <= 12; ++s) {
    std::vector<double> times;
    for (int c = 0; c < 9; ++c) times.push_back(static_cast<double>(1 + rng() % 100000) / 10);
    k.measurements.push_back(meas(s * 3, static_cast<double>(1 + rng() % 3), times));
  }
  k.pointsTotal = 12;
  whole.kernels.push_back(k);
  buildTables(whole);
  std::string text = writeTuning(whole);
  std::string dir = ::testing::TempDir();
  auto save = [&](const std::string& name, const TuningFile& t) {
    std::ofstream(dir + name) << writeTuning(t);
    TuningFile back;
    std::string err;
    EXPECT_TRUE(readTuning(dir + name, back, err)) << err;
    return back;
  };
  TuningFile back = save("whole.yaml", whole);
  buildTables(back);
  EXPECT_EQ(writeTuning(back), text);
  TuningFile a = whole, b = whole;
  a.shard = "0/2";
  b.shard = "1/2";
  a.kernels[0].measurements.clear();
  b.kernels[0].measurements.clear();
  for (size_t i = 0; i < k.measurements.size(); ++i)
    (i % 2 ? b : a).kernels[0].measurements.push_back(k.measurements[i]);
  buildTables(a);
  buildTables(b);
  TuningFile ra = save("a.yaml", a), rb = save("b.yaml", b), m1, m2;
  std::string err;
  ASSERT_TRUE(mergeTunings({ra, rb}, m1, err)) << err;
  ASSERT_TRUE(mergeTunings({rb, ra}, m2, err)) << err;
  EXPECT_EQ(writeTuning(m1), text);
  EXPECT_EQ(writeTuning(m2), text);
  rb.kernels[0].fingerprint = "ffffffffffffffff";
  EXPECT_FALSE(mergeTunings({ra, rb}, m1, err));
  EXPECT_NE(err.find("fingerprint"), std::string::npos) << err;
}
