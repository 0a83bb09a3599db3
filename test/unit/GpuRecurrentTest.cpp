// The GPU's rnn kernel bodies (codegen/gpu/GpuRecurrent.h) run on the CPU, threads standing in for GPU threads and
// a loop standing in for the host's loop over time steps, against the interpreter bit for bit.
//
// The bodies are target-independent LLVM IR, so a CPU module of the very bodies the PTX entries inline runs here:
// each launch's thread units spread over 1 and 8 std::threads, joined before the next launch (a kernel boundary),
// the per-step launches once per step with the step index, as HostEmitter::launchGpuData launches them. Each program
// goes through the default pipeline for a GPU target; each rnn kernel's operands are what the interpreter computes
// for them from random non-zero data. Both compute in f64 in one order with the same libm (exp, tanh) and round
// once, so the result must have the interpreter's bits (tolerance: none); the workspace starts as NaNs, so a state
// read before it is written shows. 64 guard bytes after the result and after the workspace must stay untouched.
// Cases: lstm, gru with linear_before_reset 0 and 1, rnn; forward, reverse, bidirectional; outputs y, y_h, y_c;
// without bias, with bias, with initial states; sequence lengths 0, 1 and odd, batch 1 and odd, hidden and input
// sizes 1 and odd; f32, f64, f16, bf16. GpuRecurrentBatch.Program does the same for the rnn kernels of a random
// program (test/numeric/random_programs.py --recurrent --target cuda:sm_90 --emulate).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include "codegen/Jit.h"
#include "codegen/Kernel.h"
#include "codegen/gpu/GpuRecurrent.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"
#include "test/unit/CodegenHarness.h"

using namespace dscc;
using namespace dscc::codegen;
using namespace dscc::codegentest;

namespace {

// The `which`-th rnn kernel of p's entry, as `dscc compile --target=cuda:...` plans it (null when it has fewer).
Operation* rnnKernel(Program& p, size_t which) {
  size_t seen = 0;
  for (auto& op : p.fn->ops)
    if (op->kind == OpKind::Fusion && isRnnKernel(*op) && seen++ == which) return op.get();
  return nullptr;
}

// "" or the first element of `got` without `want`'s bits.
std::string compareBits(const std::vector<uint8_t>& got, const Tensor& want) {
  Tensor g = Tensor::zeros(want.dtype, want.shape);
  if (!g.bytes.empty()) std::memcpy(g.bytes.data(), got.data(), g.bytes.size());
  const size_t es = dtypeSize(want.dtype);
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::memcmp(g.bytes.data() + i * es, want.bytes.data() + i * es, es) != 0) {
      std::ostringstream os;
      os.precision(17);
      os << "element " << i << " of " << want.typeStr() << ": got " << g.getF(i) << ", want " << want.getF(i);
      return os.str();
    }
  return "";
}

struct Lowered {
  std::unique_ptr<Jit> jit;
  RnnPlan plan;
  DataKernel dk;
};

Lowered lower(const Operation& kernel) {
  Lowered l;
  CodeModule cm("emu");
  std::string e = planRnnKernel(kernel, true, l.plan);
  if (e.empty()) e = lowerGpuRnn(l.plan, cm, "rnn", l.dk);
  EXPECT_EQ(e, "");
  if (!e.empty()) return l;
  l.jit = jitVerified(std::move(cm));
  return l;
}

// Runs `l`'s launches as the host does (Once with step 0, EachStep for s in [0, S), AfterSteps with step S), each
// launch's units over `threads` threads, and compares the result with `want`.
void runKernel(Lowered& l, std::vector<void*>& in, const DimBindings& env, const Tensor& want, int threads) {
  std::vector<uint8_t> res(want.bytes.size() + 64, 0xA5);
  const int64_t wsSlots = *l.dk.workspace.evaluate(env);
  ASSERT_EQ(wsSlots, *gpuRnnWorkspace(l.plan).evaluate(env));
  std::vector<double> ws(static_cast<size_t>(wsSlots) + 8, NAN);
  const double guard = -12345.5;
  for (size_t g = 0; g < 8; ++g) ws[wsSlots + g] = guard;
  std::vector<void*> out{res.data(), ws.data()};
  std::vector<int64_t> sizes;
  for (const std::string& s : l.dk.symbols) sizes.push_back(env.at(s));
  ASSERT_TRUE(l.dk.takesStep);
  sizes.push_back(0);
  const int64_t steps = *l.plan.seq.evaluate(env);
  auto run = [&](const DataLaunch& launch, int64_t step) {
    std::string err;
    auto fn = reinterpret_cast<KernelFn>(l.jit->lookup(launch.name, &err));
    ASSERT_TRUE(fn) << err;
    sizes.back() = step;
    const int64_t units = *launch.units.evaluate(env);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        for (int64_t u = t; u < units; u += threads) fn(in.data(), out.data(), sizes.data(), u, u + 1);
      });
    for (auto& th : ts) th.join();
  };
  for (const DataLaunch& launch : l.dk.launches)
    if (launch.when == DataLaunchWhen::Once) run(launch, 0);
  for (int64_t s = 0; s < steps; ++s)
    for (const DataLaunch& launch : l.dk.launches)
      if (launch.when == DataLaunchWhen::EachStep) run(launch, s);
  for (const DataLaunch& launch : l.dk.launches)
    if (launch.when == DataLaunchWhen::AfterSteps) run(launch, steps);
  ASSERT_EQ(compareBits(res, want), "");
  for (size_t g = 0; g < 64; ++g) ASSERT_EQ(res[want.bytes.size() + g], 0xA5) << "write past the result";
  for (size_t g = 0; g < 8; ++g) ASSERT_EQ(ws[wsSlots + g], guard) << "write past the workspace";
}

// Every rnn kernel of `text` at every size of `sizeList`, against the interpreter; returns the (kernel, size) runs
// and counts the kernels in `kernels`. Each kernel on a fresh parse: the function is rewritten to return the
// kernel's operands and result.
int checkProgram(const std::string& text, const std::vector<DimBindings>& sizeList, uint64_t seed,
                 int* kernels = nullptr) {
  int ran = 0;
  std::mt19937_64 rng(seed);
  for (size_t k = 0;; ++k) {
    auto p = parse(text, defaultPipeline(), KernelTarget::Gpu);
    Operation* kernel = p ? rnnKernel(*p, k) : nullptr;
    if (!kernel) break;
    if (kernels) ++*kernels;
    SCOPED_TRACE("kernel %" + kernel->result()->name);
    Lowered l = lower(*kernel);
    if (!l.jit) return ran;
    Function& f = *p->fn;
    std::vector<Value*> rets(kernel->operands.begin(), kernel->operands.end());
    rets.push_back(kernel->result());
    returnValues(f, rets);
    for (const DimBindings& size : sizeList) {
      SCOPED_TRACE(sizesText(size));
      std::vector<Tensor> vals;
      DimBindings env;
      auto fill = [&](Tensor& t) { fillNonZero(t, rng); };
      EXPECT_TRUE(interpretAt(f, size, fill, p->diags, vals, env)) << p->errors();
      if (vals.size() != rets.size()) return ran;
      std::vector<void*> in;
      for (size_t i = 0; i + 1 < vals.size(); ++i) in.push_back(vals[i].bytes.data());
      runKernel(l, in, env, vals.back(), 1);
      runKernel(l, in, env, vals.back(), 8);
      if (::testing::Test::HasFatalFailure()) return ran;
      ++ran;
    }
  }
  return ran;
}

struct Case {
  std::string cell;  // "lstm", "gru", "gru_lbr", "rnn"
  std::string direction;
  int64_t hidden, input;
  std::string dtype;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.cell << "_" << c.direction << "_" << c.dtype; }

// One program of case `c`: over x [S, N, I], four rnn ops: output y without bias; y with bias and initial states;
// y_h with bias and initial states; y_c (lstm) or y_h without initial states.
std::string program(const Case& c) {
  const bool lstm = c.cell == "lstm";
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, G = lstm ? 4 : c.cell == "rnn" ? 1 : 3, H = c.hidden;
  const std::string t = c.dtype, h = std::to_string(H), gh = std::to_string(G * H), d = std::to_string(D);
  std::string args = "%x: " + t + "[S, N, " + std::to_string(c.input) + "], %w: " + t + "[" + d + ", " + gh + ", " +
                     std::to_string(c.input) + "], %r: " + t + "[" + d + ", " + gh + ", " + h + "], %b: " + t + "[" +
                     d + ", " + std::to_string(2 * G * H) + "], %h0: " + t + "[" + d + ", N, " + h + "]";
  if (lstm) args += ", %c0: " + t + "[" + d + ", N, " + h + "]";
  std::string attrs = "cell = \"" + std::string(lstm ? "lstm" : c.cell == "rnn" ? "rnn" : "gru") +
                      "\", direction = \"" + c.direction + "\", hidden_size = " + h +
                      (c.cell == "gru_lbr" ? ", linear_before_reset = true" : "");
  const std::string states = lstm ? ", %h0, %c0" : ", %h0";
  const std::string y = t + "[S, " + d + ", N, " + h + "]", fin = t + "[" + d + ", N, " + h + "]";
  std::string body = "  %y = rnn %x, %w, %r {" + attrs + "}\n" + "  %ys = rnn %x, %w, %r, %b" + states + " {" + attrs +
                     "}\n" + "  %yh = rnn %x, %w, %r, %b" + states + " {" + attrs + ", output = \"y_h\"}\n" +
                     (lstm ? "  %yc = rnn %x, %w, %r, %b, %h0, %c0 {" + attrs + ", output = \"y_c\"}\n"
                           : "  %yc = rnn %x, %w, %r, %b {" + attrs + ", output = \"y_h\"}\n");
  return "func @f(" + args + ") -> (" + y + ", " + y + ", " + fin + ", " + fin + ") {\n" + body +
         "  return %y, %ys, %yh, %yc\n}\n";
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const std::pair<int64_t, int64_t> hi[] = {{1, 1}, {3, 4}, {5, 2}, {4, 3}};
  size_t n = 0;
  for (std::string cell : {"lstm", "gru", "gru_lbr", "rnn"})
    for (std::string dir : {"forward", "reverse", "bidirectional"}) {
      auto [h, i] = hi[n++ % 4];
      c.push_back({cell, dir, h, i, "f32"});
    }
  // Other dtypes: f64 (a wrong order shows where f32's rounding would hide it), f16 and bf16 (one rounding).
  c.push_back({"lstm", "bidirectional", 3, 2, "f64"});
  c.push_back({"gru", "reverse", 5, 3, "f64"});
  c.push_back({"gru_lbr", "bidirectional", 2, 3, "f16"});
  c.push_back({"rnn", "forward", 7, 5, "bf16"});
  return c;
}

class GpuRecurrent : public ::testing::TestWithParam<Case> {};

TEST_P(GpuRecurrent, MatchesInterpreterBits) {
  const Case& c = GetParam();
  const std::string text = program(c);
  SCOPED_TRACE(text);
  const std::vector<DimBindings> sizeList{
      {{"S", 1}, {"N", 1}}, {{"S", 5}, {"N", 3}}, {{"S", 0}, {"N", 2}}, {{"S", 6}, {"N", 1}}};
  EXPECT_EQ(checkProgram(text, sizeList, 0x5eed + c.hidden * 7 + c.input), 4 * 4);
}

INSTANTIATE_TEST_SUITE_P(Cells, GpuRecurrent, ::testing::ValuesIn(cases()), [](const auto& info) {
  return info.param.cell + "_" + info.param.direction + "_" + info.param.dtype;
});

// A step reading the state it is writing, or a reverse direction walking forward, shows at two steps already:
// longer sequences and a wider hidden state stay bit-exact (a hidden unit reads every other unit's state).
TEST(GpuRecurrentLong, WideAndLong) {
  Case c{"lstm", "bidirectional", 17, 9, "f32"};
  EXPECT_EQ(checkProgram(program(c), {{{"S", 23}, {"N", 5}}}, 99), 4);
  c = {"gru", "bidirectional", 17, 9, "f32"};
  EXPECT_EQ(checkProgram(program(c), {{{"S", 19}, {"N", 4}}}, 98), 4);
}

// One program of the random batch (test/numeric/random_programs.py --recurrent --target cuda:sm_90 --emulate runs
// this per program): every rnn kernel of DSCC_EMU_PROGRAM at every size of DSCC_EMU_SIZES ("N=3,M=2;N=1,M=1"), its
// operands as the interpreter computes them from random non-zero arguments (i64 ones, gather indices, -1 and 0),
// bit for bit. Skipped without them.
TEST(GpuRecurrentBatch, Program) {
  std::string path, text;
  std::vector<DimBindings> sizeList;
  if (!batchProgram(path, text, sizeList))
    GTEST_SKIP() << "DSCC_EMU_PROGRAM and DSCC_EMU_SIZES name a program of the random batch";
  ASSERT_NE(text, "") << "cannot read " << path;
  SCOPED_TRACE(path);
  int kernels = 0;
  const int ran = checkProgram(text, sizeList, 5, &kernels);
  std::printf("emulated: %d rnn kernels, %d (kernel, size) runs\n", kernels, ran);
}

}  // namespace
