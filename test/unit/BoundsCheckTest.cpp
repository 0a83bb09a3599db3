// Bounds checks in generated kernels (codegen/cpu/BoundsCheck.h, `dscc compile --check-bounds`): a real out-of-bounds read is caught.
//
// The broadcast-free version of a loop kernel reads every operand with its
// natural strides; the host only calls it when its guard holds (no operand
// dim is stretched). Called with a broadcast operand anyway, it reads past
// that operand's end: without the checks silently, with them it must stop
// with a message naming the kernel, the buffer, the element and the size.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "codegen/cpu/BoundsCheck.h"
#include "codegen/Jit.h"
#include "codegen/KernelLowering.h"
#include "codegen/ReductionLowering.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"

using namespace dscc;
using namespace dscc::codegen;

namespace {

using KernelFnPtr = void (*)(void**, void**, const int64_t*, int64_t, int64_t);

const char* kProgram = R"(
func @main(%x: f32[N, D], %y: f32[M, D]) -> f32[N, D] where M in [1, 1000] {
  %a = add %x, %y
  return %a
}
)";

// A softmax over the rows of %x + %y: one stitch kernel, whose CPU rows are
// explicit vectors with a masked last block (codegen/cpu/CpuRowVector.cpp).
const char* kStitchProgram = R"(
func @main(%x: f32[N, D], %y: f32[M, D]) -> f32[N, D] where M in [1, 1000] {
  %a = add %x, %y
  %p = softmax %a {axis = -1}
  return %p
}
)";

// The program's one kernel (a loop kernel, or a stitch kernel with
// `stitch`), lowered as version `v` with (or without) bounds checks and JIT-compiled.
struct Lowered {
  SourceMgr sm;
  std::ostringstream out;
  std::unique_ptr<DiagEngine> diags;
  std::unique_ptr<Module> module;
  std::unique_ptr<Jit> jit;
  KernelFnPtr fn = nullptr;
  BoundsCheckStats stats;
  std::string error;

  Lowered(const KernelVariant& v, bool checks, bool stitch = false) {
    diags = std::make_unique<DiagEngine>(sm, out);
    module = parseModule(sm, sm.addBuffer("bounds.dsc", stitch ? kStitchProgram : kProgram), *diags);
    if (!module) {
      error = "parse: " + out.str();
      return;
    }
    std::vector<const PassInfo*> passes = {lookupPass("infer-shapes")};
    for (const PassInfo* p : defaultPipeline())
      if (p != passes[0]) passes.push_back(p);
    PipelineOptions opts;
    if (!runPasses(*module, passes, *diags, opts, out)) {
      error = "pipeline: " + out.str();
      return;
    }
    const Operation* fusion = nullptr;
    for (const auto& op : module->entry()->ops)
      if (op->kind == OpKind::Fusion) fusion = op.get();
    if (!fusion) {
      error = "no kernel";
      return;
    }
    CodeModule cm("bounds");
    LoweredKernel lk = stitch ? lowerStitchKernel(*fusion, cm, "k", v) : lowerLoopKernel(*fusion, cm, "k", v);
    if (!lk.ok()) {
      error = lk.error;
      return;
    }
    if (checks) stats = addBoundsChecks(*lk.fn, lk.iface, "main.k0.a.nobcast");
    jit = Jit::create(&error);
    if (!jit || !jit->addModule(std::move(cm), &error)) return;
    fn = reinterpret_cast<KernelFnPtr>(jit->lookup("k", &error));
  }
};

KernelVariant noBroadcast() {
  KernelVariant v;
  v.broadcastFree = true;
  return v;
}

// Runs the kernel at N=4, D=8 with %y of M rows; returns the first output element.
float run(KernelFnPtr fn, int64_t m) {
  std::vector<float> x(4 * 8, 1.0f), y(m * 8, 2.0f), a(4 * 8, 0.0f);
  void* in[] = {x.data(), y.data()};
  void* out[] = {a.data()};
  int64_t sizes[] = {8, m, 4};  // D, M, N: the symbols in byte order
  fn(in, out, sizes, 0, 4 * 8);
  return a[31];
}

}  // namespace

TEST(BoundsCheckTest, EveryBufferAccessIsChecked) {
  Lowered l(noBroadcast(), true);
  ASSERT_TRUE(l.fn) << l.error;
  // Loads of %x and %y and the store of %a, at least one each; none untraced.
  EXPECT_GE(l.stats.checked, 3);
  EXPECT_EQ(l.stats.unchecked, 0);
  // Where the version's guard holds, the checks change nothing.
  EXPECT_EQ(run(l.fn, 4), 3.0f);
}

TEST(BoundsCheckTest, GenericVersionReadsABroadcastOperandInBounds) {
  Lowered l(KernelVariant{}, true);
  ASSERT_TRUE(l.fn) << l.error;
  EXPECT_EQ(run(l.fn, 1), 3.0f);
}

TEST(BoundsCheckTest, OutOfBoundsReadStopsWithItsKernelBufferIndexAndSize) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Lowered l(noBroadcast(), true);
  ASSERT_TRUE(l.fn) << l.error;
  // %y has 1 row of 8; the broadcast-free version reads row 1 at element 8.
  EXPECT_DEATH(run(l.fn, 1),
               "dscc: out-of-bounds load in kernel main.k0.a.nobcast: element 8 of input 1 \\(%y\\), which has 8 "
               "elements");
}

// Runs the stitch kernel at N=4 rows of D=8 with %y of M rows; returns the last output element.
float runStitch(KernelFnPtr fn, int64_t m) {
  std::vector<float> x(4 * 8, 1.0f), y(m * 8, 2.0f), p(4 * 8, 0.0f);
  void* in[] = {x.data(), y.data()};
  void* out[] = {p.data()};
  int64_t sizes[] = {8, m, 4};  // D, M, N
  fn(in, out, sizes, 0, 4);
  return p[31];
}

TEST(BoundsCheckTest, MaskedVectorAccessesOfStitchRowsAreChecked) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Lowered l(noBroadcast(), true, /*stitch=*/true);
  ASSERT_TRUE(l.fn) << l.error;
  EXPECT_EQ(l.stats.unchecked, 0);
  // Rows of 8 are one masked block each: in bounds where the guard holds
  // (a uniform row: each element 1/8).
  EXPECT_FLOAT_EQ(runStitch(l.fn, 4), 0.125f);
  // %y has 1 row; row 1's masked load reads its elements 8..15.
  EXPECT_DEATH(runStitch(l.fn, 1),
               "dscc: out-of-bounds load in kernel main.k0.a.nobcast: element 8 of input 1 \\(%y\\), which has 8 "
               "elements");
}
