// Accuracy of the compiled f32 exp (also for arguments known <= 0), tanh, erf, sigmoid and gelu (inline polynomials) over the whole float range, in ULPs against double precision.
//
// The kernels are the real generated code: a loop kernel over a long vector,
// optimised and vectorised by the JIT like any artifact. Inputs are every
// 251st float bit pattern (both signs, every exponent, denormals, infinities,
// NaNs) and the edge values of each function.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "codegen/Jit.h"
#include "codegen/KernelLowering.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"

using namespace dscc;
using namespace dscc::codegen;

namespace {

// Floats in an order where adjacent values differ by one: ULP distance is a subtraction.
int64_t ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t(INT32_MIN) - i : i;
}

int64_t ulps(float a, float b) { return std::llabs(ordered(a) - ordered(b)); }

std::vector<float> inputs() {
  std::vector<float> xs;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 251) {
    uint32_t u = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &u, 4);
    xs.push_back(f);
  }
  const float edges[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1.17549435e-38f, 1e-20f, 0.625f, -0.625f, 0.62499994f,
                         3.92f, 4.0f, -4.0f, 9.0f, 9.1f, -9.1f, 88.72283f, 88.72284f, 88.7f, -87.33654f, -87.33655f,
                         -87.0f, -87.3365402f, -87.3365479f, 7.9988117f, 8.0f, 0.0004f, 0.00039999998f, -103.9f, -1e4f, 1e4f, std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  xs.insert(xs.end(), std::begin(edges), std::end(edges));
  return xs;
}

struct Worst {
  int64_t ulp = 0;
  double abs = 0;
  float at = 0, got = 0, want = 0;
};

// Compiles exp, tanh, erf, sigmoid and gelu of one f32 vector, and exp of
// -|x| (an argument known to be <= 0: emitFastExpNonPositiveF32), and runs
// them on `xs`.
std::vector<std::vector<float>> runKernel(const std::vector<float>& xs) {
  const char* text = R"(
func @main(%x: f32[N]) -> (f32[N], f32[N], f32[N], f32[N], f32[N], f32[N]) {
  %e = exp %x
  %t = tanh %x
  %r = erf %x
  %s = sigmoid %x
  %a = abs %x
  %n = neg %a
  %f = exp %n
  %g = gelu %x
  return %e, %t, %r, %s, %f, %g
})";
  SourceMgr sm;
  std::ostringstream diagText;
  DiagEngine diags(sm, diagText);
  auto mod = parseModule(sm, sm.addBuffer("math.dsc", text), diags);
  EXPECT_TRUE(mod) << diagText.str();
  if (!mod) return {};
  std::ostringstream out;
  PipelineOptions popts;
  EXPECT_TRUE(runPasses(*mod, defaultPipeline(), diags, popts, out)) << diagText.str();
  // One kernel per function (siblings are not fused); results in the order
  // exp, tanh, erf, sigmoid, exp(-|x|), gelu.
  std::vector<const Operation*> kernels;
  for (const auto& op : mod->entry()->ops)
    if (op->kind == OpKind::Fusion) kernels.push_back(op.get());
  EXPECT_FALSE(kernels.empty());
  CodeModule cm("math");
  for (size_t k = 0; k < kernels.size(); ++k) {
    LoweredKernel lk = lowerLoopKernel(*kernels[k], cm, "k" + std::to_string(k));
    EXPECT_TRUE(lk.ok()) << lk.error;
    if (!lk.ok()) return {};
  }
  std::string err;
  auto jit = Jit::create(&err, 3);
  EXPECT_TRUE(jit) << err;
  if (!jit) return {};
  EXPECT_TRUE(jit->addModule(std::move(cm), &err)) << err;
  std::vector<std::vector<float>> res(6, std::vector<float>(xs.size()));
  const std::string names = "etrsfg";
  void* in[] = {const_cast<float*>(xs.data())};
  int64_t n = static_cast<int64_t>(xs.size());
  int covered = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    auto fn = reinterpret_cast<LoopKernelFn>(jit->lookup("k" + std::to_string(k), &err));
    EXPECT_TRUE(fn) << err;
    if (!fn) return {};
    std::vector<void*> outs;
    for (const auto& r : kernels[k]->results) {
      size_t at = names.find(r->name);
      EXPECT_TRUE(r->name.size() == 1 && at != std::string::npos) << r->name;
      if (r->name.size() != 1 || at == std::string::npos) return {};
      outs.push_back(res[at].data());
      ++covered;
    }
    fn(in, outs.data(), &n, 0, n);
  }
  EXPECT_EQ(covered, 6);
  return res;
}

// Checks `got` against `ref` (double precision) lane by lane: NaN for NaN,
// within `maxUlp` or `maxAbs`, results under FLT_MIN allowed to be 0.
Worst check(const char* name, const std::vector<float>& xs, const std::vector<float>& got, double (*ref)(double),
            int64_t maxUlp, double maxAbs) {
  Worst w;
  int bad = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    float want = static_cast<float>(ref(xs[i]));
    float g = got[i];
    if (std::isnan(want) || std::isnan(g)) {
      if (std::isnan(want) != std::isnan(g) && bad++ < 5)
        ADD_FAILURE() << name << "(" << xs[i] << ") = " << g << ", want " << want;
      continue;
    }
    if (std::fabs(want) < 1.17549435e-38f && std::fabs(g) < 1.17549435e-38f) continue;  // flushed
    int64_t u = ulps(g, want);
    double a = std::fabs(double(g) - double(want));
    if (u > w.ulp) w = {u, a, xs[i], g, want};
    if (u > maxUlp && a > maxAbs && bad++ < 5)
      ADD_FAILURE() << name << "(" << xs[i] << ") = " << g << ", want " << want << ": " << u << " ULP";
  }
  return w;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The exact gelu in double precision: erfc keeps Phi's tail accurate.
double gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

// gelu against `gelu` within `maxUlp`, or an absolute error of `phiErr` |x|:
// Phi's own (erf's rational is 5 ULP of values near 1, and for x < 0 Phi is
// 1/2 plus a term near -1/2; the formula's 0.5 x (1 + erf(x/sqrt2)) with
// the same erf had 2.4e-7 too, over 2M points of [-6, 6]). Returns the worst
// in ULP among the elements where Phi is at least 1/4 (x >= -0.675).
Worst checkGelu(const std::vector<float>& xs, const std::vector<float>& got, int64_t maxUlp, double phiErr) {
  Worst w;
  int bad = 0;
  double worstPhi = 0;  // the largest error over |x|: Phi's absolute error
  for (size_t i = 0; i < xs.size(); ++i) {
    double x = xs[i];
    float want = static_cast<float>(gelu(x));
    float g = got[i];
    if (std::isnan(want) || std::isnan(g)) {
      if (std::isnan(want) != std::isnan(g) && bad++ < 5) ADD_FAILURE() << "gelu(" << x << ") = " << g << ", want " << want;
      continue;
    }
    if (std::fabs(want) < 1.17549435e-38f && std::fabs(g) < 1.17549435e-38f) continue;  // flushed
    int64_t u = ulps(g, want);
    double a = std::fabs(double(g) - double(want));
    if (x >= -0.675 && u > w.ulp) w = {u, a, xs[i], g, want};
    if (x != 0 && std::isfinite(x)) worstPhi = std::max(worstPhi, a / std::fabs(x));
    if (u > maxUlp && a > phiErr * std::fabs(x) && bad++ < 5)
      ADD_FAILURE() << "gelu(" << x << ") = " << g << ", want " << want << ": " << u << " ULP, " << a / std::fabs(x)
                    << " |x|";
  }
  std::printf("gelu: Phi's largest absolute error %.3g (2^%.2f)\n", worstPhi, std::log2(worstPhi));
  return w;
}

TEST(VectorMath, WholeFloatRangeWithinStatedUlps) {
  std::vector<float> xs = inputs();
  auto res = runKernel(xs);
  ASSERT_EQ(res.size(), 6u);
  // The bounds codegen/cpu/VectorMath.h and docs/compile.md state.
  Worst e = check("exp", xs, res[0], [](double x) { return std::exp(x); }, 1, 0);
  Worst t = check("tanh", xs, res[1], [](double x) { return std::tanh(x); }, 5, 0);
  Worst r = check("erf", xs, res[2], [](double x) { return std::erf(x); }, 5, 0);
  Worst s = check("sigmoid", xs, res[3], sigmoid, 2, 0);
  Worst f = check("exp(-|x|)", xs, res[4], [](double x) { return std::exp(-std::fabs(x)); }, 1, 0);
  Worst g = checkGelu(xs, res[5], 5, 3e-7);
  for (auto [name, w] : {std::pair{"exp", e}, {"tanh", t}, {"erf", r}, {"sigmoid", s}, {"exp(-|x|)", f}, {"gelu", g}})
    std::printf("%-8s max %lld ULP at x=%.9g (got %.9g, want %.9g)\n", name, static_cast<long long>(w.ulp),
                double(w.at), double(w.got), double(w.want));
  // Special values exactly.
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] == inf) {
      EXPECT_EQ(res[0][i], inf);
      EXPECT_EQ(res[1][i], 1.0f);
      EXPECT_EQ(res[2][i], 1.0f);
      EXPECT_EQ(res[3][i], 1.0f);
      EXPECT_EQ(res[4][i], 0.0f);
      EXPECT_EQ(res[5][i], inf);
    } else if (xs[i] == -inf) {
      EXPECT_EQ(res[0][i], 0.0f);
      EXPECT_EQ(res[1][i], -1.0f);
      EXPECT_EQ(res[2][i], -1.0f);
      EXPECT_EQ(res[3][i], 0.0f);
      EXPECT_EQ(res[4][i], 0.0f);
      EXPECT_TRUE(std::isnan(res[5][i]));  // -inf * Phi(-inf) = -inf * 0, as the formula
    } else if (xs[i] == -1e4f) {
      EXPECT_EQ(res[0][i], 0.0f);  // a masked softmax's scores: no denormal slow path, exactly 0
      EXPECT_EQ(res[4][i], 0.0f);
    } else if (xs[i] == 0.0f) {
      EXPECT_EQ(res[4][i], 1.0f);  // softmax's maximum itself: exactly 1
      EXPECT_EQ(res[5][i], 0.0f);
    }
    // Bounded functions stay in their range (a fit may overshoot 1 where
    // the function rounds to it).
    if (!std::isnan(xs[i])) {
      EXPECT_LE(std::fabs(res[1][i]), 1.0f) << "tanh(" << xs[i] << ")";
      EXPECT_LE(std::fabs(res[2][i]), 1.0f) << "erf(" << xs[i] << ")";
      EXPECT_TRUE(res[3][i] >= 0.0f && res[3][i] <= 1.0f) << "sigmoid(" << xs[i] << ")";
    }
    // The two exps agree wherever both see the same argument (x <= 0).
    if (xs[i] <= 0.0f) {
      EXPECT_EQ(res[0][i], res[4][i]) << "x=" << xs[i];
    }
  }
}

}  // namespace
