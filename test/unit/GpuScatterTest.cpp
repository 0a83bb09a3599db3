// The GPU's scatter and cumsum kernel bodies (codegen/gpu/GpuScatter.h) run on the CPU, threads standing in for GPU threads, against the interpreter.
//
// The bodies are target-independent LLVM IR (atomicrmw, cmpxchg, plain loads and stores), so a CPU module of the
// very bodies the PTX entries inline runs them here: each launch in order, its thread units spread over
// std::threads (one thread: the units in order, so even float add/mul must give the interpreter's bits; eight
// threads: duplicate rows race through the atomics, as on a GPU). Random data at several sizes: repeated and
// negative indices, size-1 and empty dims, indices out of range (the GPU skips those updates: expected is the
// interpreter's run without them, and the smallest of them reported in the check words), NaNs for max/min; 64
// guard bytes after the result must stay untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include "codegen/Jit.h"
#include "codegen/Kernel.h"
#include "codegen/KernelCommon.h"
#include "codegen/gpu/GpuScatter.h"
#include "ir/Interpreter.h"
#include "ir/KernelKind.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"
#include "test/unit/CodegenHarness.h"

using namespace dscc;
using namespace dscc::codegen;

namespace {

struct Program {
  SourceMgr sm;
  std::ostringstream diagText;
  DiagEngine diags{sm, diagText};
  std::unique_ptr<Module> mod;
  Function* fn = nullptr;
  Operation* kernel = nullptr;  // the scatter's or cumsum's fusion
};

// `text` through the default pipeline as `dscc compile --target=cuda:...` plans it; `kernel` is its `which`-th
// scatter or cumsum kernel (null when it has fewer).
std::unique_ptr<Program> fusedProgram(const std::string& text, size_t which = 0) {
  auto p = std::make_unique<Program>();
  p->diags.setCapture(true);
  int id = p->sm.addBuffer("test.dsc", text);
  p->mod = parseModule(p->sm, id, p->diags);
  if (!p->mod) return nullptr;
  p->fn = p->mod->entry();
  std::ostringstream out;
  PipelineOptions opts;
  opts.target = KernelTarget::Gpu;
  if (!runPasses(*p->mod, defaultPipeline(), p->diags, opts, out)) return nullptr;
  size_t seen = 0;
  for (auto& op : p->fn->ops)
    if (op->kind == OpKind::Fusion && (isScatterKernel(*op) || isScanKernel(*op)) && seen++ == which)
      p->kernel = op.get();
  return p;
}

void fillRandom(Tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mag(0.05, 1.0);
  std::uniform_int_distribution<int64_t> small(1, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool neg = rng() & 1;
    if (isFloat(t.dtype)) t.setF(i, neg ? -mag(rng) : mag(rng));
    else if (t.dtype == DType::I1) t.setI(i, neg ? 1 : 0);
    else t.setI(i, (neg ? -1 : 1) * small(rng));
  }
}

// "" or the first element of `got` that is not `want`'s: bit for bit (NaN matches NaN), or within the dtype's
// tolerance when `loose` (float add/mul across threads, whose order is free).
std::string compare(const std::vector<uint8_t>& got, const Tensor& want, bool loose) {
  Tensor g = Tensor::zeros(want.dtype, want.shape);
  if (!g.bytes.empty()) std::memcpy(g.bytes.data(), got.data(), g.bytes.size());
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (isFloat(want.dtype)) {
      double x = g.getF(i), y = want.getF(i);
      double tol = !loose ? 0 : want.dtype == DType::F16 ? 3e-2 : want.dtype == DType::BF16 ? 0.25 : 1e-4;
      ok = (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= tol * (1 + std::fabs(y));
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

// Runs `fn` over thread units [0, units) on `threads` std::threads, thread t taking t, t + threads, ...
void runLaunch(KernelFn fn, void** in, void** out, const int64_t* sizes, int64_t units, int threads) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([=] {
      for (int64_t u = t; u < units; u += threads) fn(in, out, sizes, u, u + 1);
    });
  for (auto& th : ts) th.join();
}

// The lowered kernel of `p`, JIT-compiled for the CPU; a cumsum's chunked form in chunks of 5 steps (the GPU's
// are kGpuScanChunk), so that short axes span several.
struct Lowered {
  std::unique_ptr<Jit> jit;
  DataKernel dk;
};

Lowered lower(const Program& p) {
  Lowered l;
  CodeModule cm("emu");
  std::string e;
  if (isScatterKernel(*p.kernel)) {
    ScatterPlan sp;
    e = planScatterKernel(*p.kernel, true, sp);
    if (e.empty()) e = lowerGpuScatter(sp, cm, "scatter", l.dk);
  } else {
    ScanPlan sp;
    e = planScanKernel(*p.kernel, true, sp);
    if (e.empty()) e = lowerGpuScan(sp, cm, "scan", l.dk, 5);
  }
  EXPECT_EQ(e, "");
  if (!e.empty()) return l;
  EXPECT_EQ(verifyModule(cm), "");
  l.jit = Jit::create(&e);
  EXPECT_TRUE(l.jit) << e;
  if (l.jit) EXPECT_TRUE(l.jit->addModule(std::move(cm), &e)) << e;
  return l;
}

// Runs `l`'s launches (`chunks`: a cumsum's chunked form) on the operand buffers `in` at `threads` threads and
// compares the result with `want`.
// A scatter's check words must end as {0, 0} when every index is in range (badLeast == INT64_MAX), else flagged
// with the smallest bad index `badLeast` (ElementGenerator.h's encoding).
void runKernel(Lowered& l, std::vector<void*>& in, const DimBindings& env, const Tensor& want, int threads, bool loose,
               bool chunks = false, int64_t badLeast = INT64_MAX) {
  std::vector<uint8_t> res(want.bytes.size() + 64, 0xA5);
  std::vector<void*> out{res.data()};
  std::vector<int64_t> ws;
  if (l.dk.hasWorkspace) {
    ws.assign(static_cast<size_t>(*l.dk.workspace.evaluate(env)) + 1, 0x5A5A5A5A);
    out.push_back(ws.data());
  }
  std::vector<uint64_t> checks(2 * l.dk.checks + 1, 0);
  checks.back() = 0x5A5A5A5A;
  if (l.dk.checks) out.push_back(checks.data());
  std::vector<int64_t> sizes;
  for (const std::string& s : l.dk.symbols) sizes.push_back(env.at(s));
  std::string err;
  for (const DataLaunch& launch : chunks ? l.dk.longLaunches : l.dk.launches) {
    auto fn = reinterpret_cast<KernelFn>(l.jit->lookup(launch.name, &err));
    ASSERT_TRUE(fn) << err;
    runLaunch(fn, in.data(), out.data(), sizes.data(), *launch.units.evaluate(env), threads);
  }
  ASSERT_EQ(compare(res, want, loose), "");
  for (size_t g = 0; g < 64; ++g) ASSERT_EQ(res[want.bytes.size() + g], 0xA5) << "write past the result";
  if (l.dk.hasWorkspace) ASSERT_EQ(ws.back(), 0x5A5A5A5A) << "write past the workspace";
  ASSERT_EQ(checks.back(), 0x5A5A5A5Au) << "write past the check words";
  if (!l.dk.checks) return;
  if (badLeast == INT64_MAX) {
    EXPECT_EQ(checks[0], 0u) << "an index in range was reported";
    EXPECT_EQ(checks[1], 0u);
  } else {
    EXPECT_EQ(checks[0], 1u) << "an index out of range was not reported";
    EXPECT_EQ(decodeLeastIndex(checks[1]), badLeast) << "not the smallest bad index";
  }
}

// Runs the kernel's launches on `inputs` (the function's arguments) at `threads` threads and compares its result
// with `want`.
void runAndCompare(const Program& p, Lowered& l, std::vector<Tensor>& inputs, const DimBindings& env, const Tensor& want,
                   int threads, bool loose, bool chunks = false, int64_t badLeast = INT64_MAX) {
  std::vector<void*> in;
  for (const Value* v : p.kernel->operands) {
    auto it = std::find_if(p.fn->args.begin(), p.fn->args.end(), [&](const auto& a) { return a.get() == v; });
    ASSERT_NE(it, p.fn->args.end()) << "operand %" << v->name << " is not an argument";
    in.push_back(inputs[static_cast<size_t>(it - p.fn->args.begin())].bytes.data());
  }
  runKernel(l, in, env, want, threads, loose, chunks, badLeast);
}

const char* kReductions[] = {"none", "add", "mul", "max", "min"};
const DType kDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::I8, DType::I1};

// (N rows, M updates, D columns): repeats (M > N), size 1, empty updates, empty rows, no rows, more columns.
const std::vector<std::tuple<int64_t, int64_t, int64_t>> kScatterSizes = {
    {5, 12, 3}, {1, 4, 1}, {1, 1, 1}, {3, 0, 4}, {4, 5, 0}, {0, 0, 3}, {7, 3, 1}, {64, 200, 33}, {2, 40, 70}};

class GpuScatter_ : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(GpuScatter_, MatchesInterpreter) {
  auto [dt, red] = GetParam();
  for (const char* idt : {"i64", "i32"}) {
    // 1-D indices into rank-2 data, and 2-D indices into rank-3 data (inner = 2 * D).
    for (bool nd : {false, true}) {
      std::string d(dtypeName(dt));
      std::string text = nd ? "func @f(%d: " + d + "[N, 2, D], %i: " + idt + "[M, 2], %u: " + d + "[M, 2, 2, D]) -> " +
                                  d + "[N, 2, D] {\n"
                            : "func @f(%d: " + d + "[N, D], %i: " + idt + "[M], %u: " + d + "[M, D]) -> " + d +
                                  "[N, D] {\n";
      text += "  %r = scatter %d, %i, %u {reduction = \"" + std::string(kReductions[red]) + "\"}\n  return %r\n}\n";
      SCOPED_TRACE(text);
      auto p = fusedProgram(text);
      ASSERT_TRUE(p && p->kernel) << "cannot plan";
      Lowered l = lower(*p);
      ASSERT_TRUE(l.jit);
      std::mt19937_64 rng(1234 + red);
      for (auto [N, M, D] : kScatterSizes) {
        for (bool outOfRange : {false, true}) {
          if (outOfRange && (nd || M == 0)) continue;
          std::ostringstream st;
          st << "N=" << N << " M=" << M << " D=" << D << (outOfRange ? " (some indices out of range)" : "");
          SCOPED_TRACE(st.str());
          const int64_t m2 = nd ? 2 : 1;
          std::vector<Tensor> inputs;
          inputs.push_back(Tensor::zeros(dt, nd ? std::vector<int64_t>{N, 2, D} : std::vector<int64_t>{N, D}));
          inputs.push_back(Tensor::zeros(idt[1] == '3' ? DType::I32 : DType::I64,
                                         nd ? std::vector<int64_t>{M, 2} : std::vector<int64_t>{M}));
          inputs.push_back(Tensor::zeros(dt, nd ? std::vector<int64_t>{M, 2, 2, D} : std::vector<int64_t>{M, D}));
          fillRandom(inputs[0], rng);
          fillRandom(inputs[2], rng);
          // Indices in [-N, N): repeated, negative ones wrapping once; out of range: every third one beyond.
          for (int64_t k = 0; k < M * m2; ++k) {
            int64_t v = N > 0 ? static_cast<int64_t>(rng() % uint64_t(2 * N)) - N : 0;
            if (outOfRange && k % 3 == 1) v = k % 2 ? N + static_cast<int64_t>(rng() % 3) : -N - 1 - static_cast<int64_t>(rng() % 3);
            inputs[1].setI(k, v);
          }
          if (N == 0 && M > 0) continue;  // no index is in range of no rows
          // NaNs for max and min: a few in the data and in the updates.
          if (isFloat(dt) && red >= 3)
            for (Tensor* t : {&inputs[0], &inputs[2]})
              for (int64_t k = 5; k < t->numel(); k += 17) t->setF(k, NAN);
          // The expected result: the interpreter's, without the updates whose index is out of range.
          std::vector<Tensor> ref = inputs;
          if (outOfRange) {
            std::vector<int64_t> keep;
            for (int64_t k = 0; k < M; ++k)
              if (inputs[1].getI(k) >= -N && inputs[1].getI(k) < N) keep.push_back(k);
            ref[1] = Tensor::zeros(inputs[1].dtype, {int64_t(keep.size())});
            ref[2] = Tensor::zeros(dt, {int64_t(keep.size()), D});
            for (size_t k = 0; k < keep.size(); ++k) {
              ref[1].setI(int64_t(k), inputs[1].getI(keep[k]));
              size_t bytes = size_t(D) * dtypeSize(dt);
              if (bytes)
                std::memcpy(ref[2].bytes.data() + k * bytes, inputs[2].bytes.data() + size_t(keep[k]) * bytes, bytes);
            }
          }
          std::vector<Tensor> want;
          DimBindings env;
          ASSERT_TRUE(interpret(*p->fn, ref, want, p->diags, &env)) << p->diagText.str();
          env["M"] = M;  // the run's count, out-of-range updates included
          bool floatRace = isFloat(dt) && (red == 1 || red == 2);
          // The smallest index out of range, which the kernels report; none where no thread reads an index
          // (a reduction's writes with no columns: the CPU still reports it, docs/gpu.md).
          int64_t badLeast = INT64_MAX;
          if (red == 0 || D > 0)
            for (int64_t k = 0; k < M * m2; ++k)
              if (inputs[1].getI(k) < -N || inputs[1].getI(k) >= N) badLeast = std::min(badLeast, inputs[1].getI(k));
          runAndCompare(*p, l, inputs, env, want[0], 1, false, false, badLeast);
          runAndCompare(*p, l, inputs, env, want[0], 8, floatRace, false, badLeast);
        }
      }
    }
  }
}

// Every dtype with every reduction it takes (i1: none only), rather than skipped cases.
std::vector<std::tuple<DType, int>> scatterCases() {
  std::vector<std::tuple<DType, int>> v;
  for (DType dt : kDTypes)
    for (int red = 0; red < (dt == DType::I1 ? 1 : 5); ++red) v.emplace_back(dt, red);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuScatter_, ::testing::ValuesIn(scatterCases()),
                         [](const auto& info) {
                           return std::string(dtypeName(std::get<0>(info.param))) + "_" +
                                  kReductions[std::get<1>(info.param)];
                         });

// (A, L, B) around the axis in the middle; axes 0 and 2 run too.
const std::vector<std::tuple<int64_t, int64_t, int64_t>> kScanSizes = {
    {2, 5, 3}, {1, 1, 1}, {0, 3, 2}, {3, 0, 2}, {2, 4, 0}, {1, 300, 1}, {3, 17, 40}, {1, 10, 1}, {2, 11, 1}};

class GpuScan_ : public ::testing::TestWithParam<DType> {};

TEST_P(GpuScan_, MatchesInterpreter) {
  DType dt = GetParam();
  std::string d(dtypeName(dt));
  std::mt19937_64 rng(99);
  for (int axis : {0, 1, 2, -1})
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        std::ostringstream text;
        text << "func @f(%x: " << d << "[A, L, B]) -> " << d << "[A, L, B] {\n  %y = cumsum %x {axis = " << axis
             << ", exclusive = " << (exclusive ? "true" : "false") << ", reverse = " << (reverse ? "true" : "false")
             << "}\n  return %y\n}\n";
        SCOPED_TRACE(text.str());
        auto p = fusedProgram(text.str());
        ASSERT_TRUE(p && p->kernel) << "cannot plan";
        Lowered l = lower(*p);
        ASSERT_TRUE(l.jit);
        for (auto [A, L, B] : kScanSizes) {
          SCOPED_TRACE("A=" + std::to_string(A) + " L=" + std::to_string(L) + " B=" + std::to_string(B));
          std::vector<Tensor> inputs{Tensor::zeros(dt, {A, L, B})};
          fillRandom(inputs[0], rng);
          std::vector<Tensor> want;
          DimBindings env;
          ASSERT_TRUE(interpret(*p->fn, inputs, want, p->diags, &env)) << p->diagText.str();
          // A column's sum is one thread's: bit for bit at any thread count. Chunks: integers exact, floats
          // associated by chunk (within rounding).
          runAndCompare(*p, l, inputs, env, want[0], 1, false);
          runAndCompare(*p, l, inputs, env, want[0], 8, false);
          runAndCompare(*p, l, inputs, env, want[0], 1, isFloat(dt), true);
          runAndCompare(*p, l, inputs, env, want[0], 8, isFloat(dt), true);
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuScan_,
                         ::testing::Values(DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                                           DType::I8),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

// A running sum just above a 16-bit midpoint: 1 + 2^-h + 2^-24 (h: half the last place at 1) rounds to f32 as a tie
// onto the midpoint itself, which a second rounding would take down to 1; the interpreter rounds the f64 sum once,
// up. The body rounds to odd on the way through f32 and must agree.
TEST(GpuScanRounding, HalfRoundsTheF64SumOnce) {
  for (auto [dt, h] : {std::pair<DType, int>{DType::F16, 11}, {DType::BF16, 8}}) {
    std::string d(dtypeName(dt));
    SCOPED_TRACE(d);
    auto p = fusedProgram("func @f(%x: " + d + "[L]) -> " + d + "[L] {\n  %y = cumsum %x {axis = 0}\n  return %y\n}\n");
    ASSERT_TRUE(p && p->kernel);
    Lowered l = lower(*p);
    ASSERT_TRUE(l.jit);
    std::vector<Tensor> inputs{Tensor::zeros(dt, {3})};
    inputs[0].setF(0, 1.0);
    inputs[0].setF(1, std::ldexp(1.0, -h));
    inputs[0].setF(2, std::ldexp(1.0, -24));
    std::vector<Tensor> want;
    DimBindings env;
    ASSERT_TRUE(interpret(*p->fn, inputs, want, p->diags, &env)) << p->diagText.str();
    ASSERT_EQ(want[0].getF(2), 1.0 + std::ldexp(1.0, 1 - h));
    runAndCompare(*p, l, inputs, env, want[0], 1, false);
  }
}

// One program of the random batch (test/numeric/random_programs.py --scans --target cuda:sm_90 --emulate runs
// this per program): every scatter and cumsum kernel of DSCC_EMU_PROGRAM, its operands as the interpreter computes
// them from random arguments (i64 arguments are the scatters' indices: -1 and 0, in range of any non-empty dim 0,
// repeated and negative), at every size of DSCC_EMU_SIZES ("N=3,M=2;N=1,M=1"). Skipped without them.
TEST(GpuScatterBatch, Program) {
  std::string path, text;
  std::vector<DimBindings> sizeList;
  if (!codegentest::batchProgram(path, text, sizeList))
    GTEST_SKIP() << "DSCC_EMU_PROGRAM and DSCC_EMU_SIZES name a program of the random batch";
  ASSERT_NE(text, "") << "cannot read " << path;
  int kernels = 0, ran = 0;
  std::mt19937_64 rng(5);
  // Each kernel on a fresh parse: the function is rewritten to return the kernel's operands and result.
  for (size_t k = 0;; ++k) {
    auto p = fusedProgram(text, k);
    ASSERT_TRUE(p) << "cannot plan " << path;
    if (!p->kernel) break;
    SCOPED_TRACE("kernel %" + p->kernel->result()->name);
    ++kernels;
    Lowered l = lower(*p);
    ASSERT_TRUE(l.jit);
    Function& f = *p->fn;
    std::vector<Value*> rets(p->kernel->operands.begin(), p->kernel->operands.end());
    rets.push_back(p->kernel->result());
    f.returns = rets;
    f.resultTypes.clear();
    for (Value* v : rets) f.resultTypes.push_back(v->type);
    bool floatRace = false;
    if (isScatterKernel(*p->kernel)) {
      ScatterPlan sp;
      ASSERT_EQ(planScatterKernel(*p->kernel, true, sp), "");
      floatRace = isFloat(sp.dtype) && (sp.reduction == ScatterReduction::Add || sp.reduction == ScatterReduction::Mul);
    }
    for (const DimBindings& size : sizeList) {
      std::ostringstream st;
      for (const auto& [name, v] : size) st << name << "=" << v << " ";
      SCOPED_TRACE(st.str());
      std::vector<Tensor> inputs;
      for (const auto& a : f.args) {
        std::vector<int64_t> shape;
        for (const DimExpr& d : a->type.dims) shape.push_back(*d.evaluate(size));
        inputs.push_back(Tensor::zeros(a->type.dtype, shape));
        fillRandom(inputs.back(), rng);
        if (a->type.dtype == DType::I64)
          for (int64_t i = 0; i < inputs.back().numel(); ++i) inputs.back().setI(i, -static_cast<int64_t>(rng() % 2));
      }
      std::vector<Tensor> vals;
      DimBindings env;
      ASSERT_TRUE(interpret(f, inputs, vals, p->diags, &env)) << p->diagText.str();
      std::vector<void*> in;
      for (size_t i = 0; i + 1 < vals.size(); ++i) in.push_back(vals[i].bytes.data());
      runKernel(l, in, env, vals.back(), 1, false);
      runKernel(l, in, env, vals.back(), 8, floatRace);
      if (!l.dk.longLaunches.empty()) runKernel(l, in, env, vals.back(), 8, isFloat(vals.back().dtype), true);
      ++ran;
    }
  }
  std::printf("emulated: %d scatter and cumsum kernels, %d (kernel, size) runs\n", kernels, ran);
}

}  // namespace
