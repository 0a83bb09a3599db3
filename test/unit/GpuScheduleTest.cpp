// The GPU reduction schedules (warp per row, block per row, column tiles) run on the CPU, one thread per GPU thread, against the interpreter.
//
// codegen/GpuReduce lowers shuffles, barriers and the thread index to calls
// of dscc_emu_* in a module for the CPU; this file defines them over a
// std::barrier so a block of kGpuBlockSize (or a warp of 32) std::threads
// runs the very kernel body the GPU gets. Every thread walks the same units
// in the same order, as a block does in the GPU's grid-stride loop, so the
// shuffles and barriers line up. This checks the schedules' index math,
// lane striding, cross-lane combination, leader stores and shared-memory
// reuse without a GPU; the GPU itself is checked by scripts/gpu-check.sh.
//
// Each program goes through the default pipeline; each stitch or input
// kernel is lowered in its cooperative versions (rows: warp and block, with
// and without vector blocks; columns: tile, and tile split over chunks of
// rows in two launches through a workspace) and run at sizes around the
// schedule and vector boundaries; the outputs must match the interpreter's
// run of the fused program (which interprets the fusion body). Warp and block
// versions with a row bound keep the row in registers (unrolled blocks). Stitch kernels
// also run their Split versions (chunks of 64 elements here, so rows of a
// few hundred span several blocks; one launch per phase, through a
// workspace). Tolerances: f32 rel 1e-4
// + abs 1e-5, f64 1e-10 + 1e-12, f16 1e-2 + 1e-3, integers exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "codegen/Jit.h"
#include "codegen/KernelCommon.h"
#include "codegen/ModelPlan.h"
#include "codegen/ReductionLowering.h"
#include "ir/Interpreter.h"
#include "ir/KernelKind.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"
#include "test/unit/CodegenHarness.h"

using namespace dscc;
using namespace dscc::codegen;

namespace {

// The emulated block: its barrier, the shuffle exchange, each thread's index.
std::unique_ptr<std::barrier<>> gBarrier;
int32_t gExchange[kGpuBlockSize];
thread_local int32_t tTid = 0;

}  // namespace

extern "C" {
// Exported to the JIT (the test binary is linked with ENABLE_EXPORTS).
int32_t dscc_emu_tid_x() { return tTid; }
void dscc_emu_barrier() { gBarrier->arrive_and_wait(); }
int32_t dscc_emu_shfl_bfly_i32(int32_t v, int32_t mask) {
  gExchange[tTid] = v;
  gBarrier->arrive_and_wait();
  int32_t r = gExchange[tTid ^ mask];
  gBarrier->arrive_and_wait();
  return r;
}
}

namespace {

struct Program {
  SourceMgr sm;
  std::ostringstream diagText;
  DiagEngine diags{sm, diagText};
  std::unique_ptr<Module> mod;
  Function* fn = nullptr;
};

std::unique_ptr<Program> fusedProgram(const std::string& text) {
  auto p = std::make_unique<Program>();
  p->diags.setCapture(true);
  int id = p->sm.addBuffer("test.dsc", text);
  p->mod = parseModule(p->sm, id, p->diags);
  if (!p->mod) return nullptr;
  p->fn = p->mod->entry();
  std::ostringstream out;
  PipelineOptions opts;
  // As `dscc compile --target=cuda:...` plans: f16/bf16 matmuls are GEMM
  // library calls on the GPU (passes/KernelAnalysis.h, gemmRefusal).
  opts.target = KernelTarget::Gpu;
  if (!runPasses(*p->mod, defaultPipeline(), p->diags, opts, out)) return nullptr;
  return p;
}

std::optional<KernelKind> kindOf(const Operation& op) { return kernelKindOf(op); }

Tensor randomTensor(DType dt, std::vector<int64_t> shape, std::mt19937_64& rng) {
  Tensor t = Tensor::zeros(dt, std::move(shape));
  std::uniform_real_distribution<double> mag(0.05, 1.0);
  std::uniform_int_distribution<int64_t> small(1, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool neg = rng() & 1;
    if (isFloat(dt)) t.setF(i, neg ? -mag(rng) : mag(rng));
    else t.setI(i, (neg ? -1 : 1) * small(rng));
  }
  return t;
}

std::string compare(const std::vector<uint8_t>& got, const Tensor& want) {
  Tensor g = Tensor::zeros(want.dtype, want.shape);
  if (!g.bytes.empty()) std::memcpy(g.bytes.data(), got.data(), g.bytes.size());  // empty: data() may be NULL
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (isFloat(want.dtype)) {
      double x = g.getF(i), y = want.getF(i);
      double rel = want.dtype == DType::F64 ? 1e-10 : want.dtype == DType::F16 ? 1e-2 : 1e-4;
      double abs = want.dtype == DType::F64 ? 1e-12 : want.dtype == DType::F16 ? 1e-3 : 1e-5;
      ok = (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= abs + rel * std::fabs(y);
    } else {
      ok = g.getI(i) == want.getI(i);
    }
    if (!ok) {
      std::ostringstream os;
      os.precision(10);
      os << "element " << i << " of " << want.typeStr() << ": got " << g.getF(i) << ", want " << want.getF(i);
      return os.str();
    }
  }
  return "";
}

// Runs `fn` as a GPU launch of schedule `s` over all `units`, one block on
// `lanes` threads: each thread takes every group in order (Tile: 32 units a group).
void runEmulated(KernelFn fn, GpuSchedule s, void** in, void** out, const int64_t* sizes, int64_t units) {
  int lanes = scheduleLanes(s);
  int64_t per = s == GpuSchedule::Tile ? 32 : 1;
  gBarrier = std::make_unique<std::barrier<>>(lanes);
  std::vector<std::thread> threads;
  for (int t = 0; t < lanes; ++t)
    threads.emplace_back([&, t] {
      tTid = t;
      for (int64_t g = 0; g * per < units; ++g) fn(in, out, sizes, g * per, g * per + per);
    });
  for (auto& th : threads) th.join();
  gBarrier.reset();
}

struct Case {
  const char* name;
  const char* text;
  std::vector<DimBindings> sizes;
  /// A max over nothing is an error in the interpreter: skip empty reductions.
  bool hasMax = false;
};

std::vector<DimBindings> nd(std::vector<std::pair<int64_t, int64_t>> v) {
  std::vector<DimBindings> out;
  for (auto [n, d] : v) out.push_back({{"N", n}, {"D", d}});
  return out;
}

// Rows around 32 (warp) and 3072 (block) and the vector width 8, and 1024
// (the block's threshold before 2026-12-04); few rows, as every row costs a
// dozen barriers of 256 threads.
const std::vector<DimBindings> kRowSizes = nd({{1, 1},    {2, 7},    {3, 8},    {2, 31},   {2, 32}, {3, 33},
                                               {2, 64},   {1, 65},   {2, 300},  {1, 1023}, {1, 1024},
                                               {2, 1031}, {1, 3071}, {1, 3072}, {2, 3079}, {0, 8},  {3, 0}});
// Reduced rows around the 8 row slices and 32-column tiles, and rows over
// several chunks of 256 (tile splits: 600 rows are 3 chunks, 1100 are 5).
const std::vector<DimBindings> kColSizes = nd({{1, 1}, {7, 3}, {8, 32}, {9, 33}, {64, 31}, {65, 40}, {200, 70}, {3, 100},
                                               {0, 5}, {5, 0}, {600, 5}, {1100, 33}});

const std::vector<Case> kCases = {
    {"layer_norm",
     "func @f(%x: f32[N, D], %g: f32[D], %b: f32[D]) -> f32[N, D] {\n"
     "  %y = layer_norm %x, %g, %b {axis = -1, epsilon = 1e-5}\n  return %y\n}\n",
     kRowSizes},
    {"masked softmax",
     "func @f(%x: f32[N, D], %m: f32[D]) -> f32[N, D] {\n"
     "  %s = add %x, %m\n  %p = softmax %s {axis = -1}\n  return %p\n}\n",
     kRowSizes, true},
    {"row max and mean (input kernel, two results)",
     "func @f(%x: f32[N, D]) -> (f32[N], f32[N]) {\n"
     "  %e = exp %x\n  %m = reduce_max %e {axes = [1]}\n  %a = reduce_mean %x {axes = [1]}\n"
     "  %r = mul %a, %a\n  return %m, %r\n}\n",
     kRowSizes, true},
    {"f64 row sum (64-bit shuffles)",
     "func @f(%x: f64[N, D]) -> f64[N, 1] {\n  %s = reduce_sum %x {axes = [1], keepdims = true}\n  return %s\n}\n",
     kRowSizes},
    {"i32 row sum (i64 accumulators)",
     "func @f(%x: i32[N, D]) -> i32[N] {\n  %s = reduce_sum %x {axes = [1]}\n  return %s\n}\n",
     kRowSizes},
    {"f16 layer_norm",
     "func @f(%x: f16[N, D], %g: f16[D], %b: f16[D]) -> f16[N, D] {\n"
     "  %y = layer_norm %x, %g, %b {axis = -1, epsilon = 1e-5}\n  return %y\n}\n",
     kRowSizes},
    {"column mean",
     "func @f(%x: f32[N, D]) -> f32[D] {\n  %m = reduce_mean %x {axes = [0]}\n  return %m\n}\n",
     kColSizes},
    {"column max of f64 and sum of i64",
     "func @f(%x: f64[N, D], %y: i64[N, D]) -> (f64[D], i64[D]) {\n"
     "  %m = reduce_max %x {axes = [0]}\n  %s = reduce_sum %y {axes = [0]}\n  return %m, %s\n}\n",
     kColSizes, true},
    {"two reduced dims, keepdims, columns across outer rows",
     "func @f(%x: f32[2, N, 3, D]) -> f32[2, 1, 1, D] {\n"
     "  %s = reduce_sum %x {axes = [1, 2], keepdims = true}\n  return %s\n}\n",
     kColSizes},
};

class GpuSchedule_ : public ::testing::TestWithParam<size_t> {};

// Lowers `kernel` (a stitch or input kernel of p) in its cooperative
// versions, runs each emulated at every size and compares with the
// interpreter's run of the fused program; `ran` counts (version, size) runs.
void emulateKernel(Program& pr, Operation* kernel, const std::vector<DimBindings>& sizeList, bool hasMax,
                   int* ran = nullptr) {
  Program* p = &pr;
  Function& f = *p->fn;
  bool stitch = kindOf(*kernel) == KernelKind::Stitch;
  KernelInterface iface;
  ASSERT_EQ(stitch ? describeStitchKernel(*kernel, iface) : describeInputKernel(*kernel, iface), "");
  std::vector<KernelVariant> variants;
  if (iface.guards.columns) {
    for (GpuSchedule s : {GpuSchedule::Tile, GpuSchedule::TileSplit}) {
      KernelVariant t;
      t.schedule = s;
      variants.push_back(t);
      t.index32 = true;
      variants.push_back(t);
    }
  } else {
    for (GpuSchedule s : {GpuSchedule::Warp, GpuSchedule::Block})
      for (int w : {1, 8}) {
        KernelVariant v;
        v.schedule = s;
        v.vectorWidth = w;
        variants.push_back(v);
      }
    variants.back().index32 = true;
    // Warp and block versions with a row bound keep a stitch kernel's row in
    // registers (unrolled).
    if (stitch)
      for (auto [s, w, rowMax] : {std::tuple<GpuSchedule, int, int64_t>{GpuSchedule::Warp, 8, 1023},
                                  {GpuSchedule::Warp, 4, 100},
                                  {GpuSchedule::Block, 8, 1100},
                                  {GpuSchedule::Block, 4, 3000}}) {
        KernelVariant v;
        v.schedule = s;
        v.vectorWidth = w;
        v.rowMax = rowMax;
        variants.push_back(v);
      }
  }
  // Split versions (stitch kernels): chunks of 64 elements (the GPU's default
  // is 2048), one function per launch.
  const int phases = iface.guards.phases;
  if (phases > 0)
    for (int w : {1, 8}) {
      KernelVariant v;
      v.schedule = GpuSchedule::Split;
      v.splitChunk = 64;
      v.vectorWidth = w;
      variants.push_back(v);
    }
  auto fnName = [](const KernelVariant& v, int phase) {
    return v.name() + (v.rowMax ? ".r" + std::to_string(v.rowMax) : "") +
           (phase >= 0 ? ".p" + std::to_string(phase) : "");
  };
  CodeModule cm("emu");
  // The last launch of a phased version: a split's phases + 1, a tile split's 2.
  auto lastPhase = [&](const KernelVariant& v) {
    return v.schedule == GpuSchedule::Split ? phases : v.schedule == GpuSchedule::TileSplit ? 1 : -1;
  };
  for (const KernelVariant& v : variants) {
    for (int ph = lastPhase(v) >= 0 ? 0 : -1; ph <= lastPhase(v); ++ph) {
      LoweredKernel lk = stitch ? lowerStitchKernel(*kernel, cm, fnName(v, ph), v, ph)
                                : lowerInputKernel(*kernel, cm, fnName(v, ph), v, ph);
      ASSERT_TRUE(lk.ok()) << lk.error;
    }
  }
  if (phases > 0) {  // a split version out of its phases, or unaligned to its vector width, is refused
    KernelVariant v;
    v.schedule = GpuSchedule::Split;
    v.splitChunk = 60;
    v.vectorWidth = 8;
    auto lowerIt = [&](const char* n, int ph) {
      return stitch ? lowerStitchKernel(*kernel, cm, n, v, ph) : lowerInputKernel(*kernel, cm, n, v, ph);
    };
    EXPECT_FALSE(lowerIt("bad1", 0).ok());
    v.splitChunk = 64;
    EXPECT_FALSE(lowerIt("bad2", phases + 1).ok());
  }
  ASSERT_EQ(verifyModule(cm), "");
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit) << err;
  ASSERT_TRUE(jit->addModule(std::move(cm), &err)) << err;

  // The interpreter returns the kernel's operands and results.
  std::vector<Value*> rets(kernel->operands.begin(), kernel->operands.end());
  for (auto& r : kernel->results) rets.push_back(r.get());
  f.returns = rets;
  f.resultTypes.clear();
  for (Value* v : rets) f.resultTypes.push_back(v->type);

  std::mt19937_64 rng(77);
  for (const DimBindings& size : sizeList) {
    std::ostringstream st;
    for (const auto& [k, v] : size) st << k << "=" << v << " ";
    SCOPED_TRACE(st.str());
    if (hasMax && std::any_of(size.begin(), size.end(), [](const auto& kv) { return kv.second == 0; })) continue;
    std::vector<Tensor> inputs;
    for (const auto& a : f.args) {
      std::vector<int64_t> shape;
      for (const DimExpr& d : a->type.dims) shape.push_back(*d.evaluate(size));
      inputs.push_back(randomTensor(a->type.dtype, shape, rng));
      // i64 operands are gather indices: -1 and 0 are in range of any
      // non-empty axis.
      if (a->type.dtype == DType::I64)
        for (int64_t i = 0; i < inputs.back().numel(); ++i) inputs.back().setI(i, -(i % 2));
    }
    std::vector<Tensor> vals;
    DimBindings env;
    ASSERT_TRUE(interpret(f, inputs, vals, p->diags, &env)) << p->diagText.str();
    std::vector<void*> in;
    for (size_t i = 0; i < kernel->operands.size(); ++i) in.push_back(vals[i].bytes.data());
    std::vector<int64_t> sizes;
    for (const std::string& s : iface.symbols) {
      ASSERT_TRUE(env.count(s)) << "symbol " << s << " has no value";
      sizes.push_back(env.at(s));
    }
    int64_t units = *iface.units.evaluate(env);
    int64_t row = *iface.guards.rowLength.evaluate(env);
    for (const KernelVariant& v : variants) {
      if (v.vectorWidth > 1 && *iface.guards.vectorExtent.evaluate(env) % v.vectorWidth != 0) continue;
      if (v.rowMax > 0 && row > v.rowMax) continue;  // its guard excludes such rows
      SCOPED_TRACE(fnName(v, -1) + " (row length " + std::to_string(row) + ")");
      std::vector<std::vector<uint8_t>> outs;
      std::vector<void*> outPtrs;
      for (size_t i = 0; i < kernel->results.size(); ++i) {
        outs.emplace_back(vals[kernel->operands.size() + i].bytes.size() + 64, 0xA5);
        outPtrs.push_back(outs.back().data());
      }
      if (v.schedule == GpuSchedule::Split) {
        // phases + 1 launches over (row, chunk) units, a workspace after the outputs.
        int64_t chunks = std::max<int64_t>(1, (row + v.splitChunk - 1) / v.splitChunk);
        std::vector<int64_t> ws(static_cast<size_t>(units * chunks * iface.guards.reductions) + 1, 0x5A5A5A5A);
        outPtrs.push_back(ws.data());
        for (int ph = 0; ph <= phases; ++ph) {
          auto fn = reinterpret_cast<KernelFn>(jit->lookup(fnName(v, ph), &err));
          ASSERT_TRUE(fn) << err;
          runEmulated(fn, v.schedule, in.data(), outPtrs.data(), sizes.data(), units * chunks);
        }
      } else if (v.schedule == GpuSchedule::TileSplit) {
        // Launch 0: tiles of (chunk, output) units; launch 1: an output per thread.
        int64_t chunks = *rowSplitChunks(iface.guards.splitRows).evaluate(env);
        std::vector<int64_t> ws(static_cast<size_t>(units * chunks * iface.guards.reductions) + 1, 0x5A5A5A5A);
        outPtrs.push_back(ws.data());
        for (int ph = 0; ph <= 1; ++ph) {
          auto fn = reinterpret_cast<KernelFn>(jit->lookup(fnName(v, ph), &err));
          ASSERT_TRUE(fn) << err;
          runEmulated(fn, ph == 0 ? GpuSchedule::Tile : GpuSchedule::Thread, in.data(), outPtrs.data(), sizes.data(),
                      ph == 0 ? units * chunks : units);
        }
      } else {
        auto fn = reinterpret_cast<KernelFn>(jit->lookup(fnName(v, -1), &err));
        ASSERT_TRUE(fn) << err;
        runEmulated(fn, v.schedule, in.data(), outPtrs.data(), sizes.data(), units);
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const Tensor& want = vals[kernel->operands.size() + i];
        ASSERT_EQ(compare(outs[i], want), "") << "result " << i;
        for (size_t g = 0; g < 64; ++g) ASSERT_EQ(outs[i][want.bytes.size() + g], 0xA5) << "write past result " << i;
      }
      if (ran) ++*ran;
    }
  }
}

TEST_P(GpuSchedule_, MatchesInterpreter) {
  const Case& c = kCases[GetParam()];
  SCOPED_TRACE(c.name);
  auto p = fusedProgram(c.text);
  ASSERT_TRUE(p) << c.text;
  // The kernel under test: the one stitch or input kernel.
  Operation* kernel = nullptr;
  for (auto& op : p->fn->ops)
    if (op->kind == OpKind::Fusion && (kindOf(*op) == KernelKind::Stitch || kindOf(*op) == KernelKind::Input))
      kernel = op.get();
  ASSERT_TRUE(kernel);
  emulateKernel(*p, kernel, c.sizes, c.hasMax);
}

INSTANTIATE_TEST_SUITE_P(Programs, GpuSchedule_, ::testing::Range<size_t>(0, kCases.size()));

// One program of the random batch (test/numeric/random_programs.py
// --target cuda:sm_90 runs this per program): every stitch and input kernel
// of DSCC_EMU_PROGRAM in its cooperative versions at every size of
// DSCC_EMU_SIZES ("N=3,M=2;N=1,M=1"). Skipped without them.
TEST(GpuScheduleBatch, Program) {
  std::string path, text;
  std::vector<DimBindings> sizes;
  if (!codegentest::batchProgram(path, text, sizes))
    GTEST_SKIP() << "DSCC_EMU_PROGRAM and DSCC_EMU_SIZES name a program of the random batch";
  ASSERT_NE(text, "") << "cannot read " << path;
  auto p = fusedProgram(text);
  ASSERT_TRUE(p) << "cannot plan " << path;
  int kernels = 0, ran = 0;
  // Each kernel is emulated on a fresh parse: emulateKernel rewrites the
  // function's returns to read the kernel's operands and results.
  size_t count = 0;
  for (auto& op : p->fn->ops) count += op->kind == OpKind::Fusion;
  for (size_t k = 0; k < count; ++k) {
    auto q = fusedProgram(text);
    ASSERT_TRUE(q);
    size_t i = 0;
    for (auto& op : q->fn->ops) {
      if (op->kind != OpKind::Fusion || i++ != k) continue;
      if (kindOf(*op) != KernelKind::Stitch && kindOf(*op) != KernelKind::Input) break;
      bool hasMax = false;
      for (const auto& b : op->body)
        hasMax |= b->kind == OpKind::ReduceMax || b->kind == OpKind::ReduceMin || b->kind == OpKind::ArgMax;
      SCOPED_TRACE("kernel %" + op->result()->name);
      ++kernels;
      emulateKernel(*q, op.get(), sizes, hasMax, &ran);
      break;
    }
  }
  std::printf("emulated: %d cooperative kernels, %d (version, size) runs\n", kernels, ran);
}

}  // namespace
