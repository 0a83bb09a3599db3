// The GPU's conv, conv_transpose and pool kernel bodies (codegen/gpu/GpuWindow.h) run on the CPU, threads standing in for GPU threads, against the interpreter bit for bit.
//
// The bodies are target-independent LLVM IR, so a CPU module of the very bodies the PTX entries inline runs here,
// the thread units spread over 1 and 8 std::threads (each output is written by one unit, so the order of the
// threads cannot matter). Each program goes through the default pipeline for a GPU target; each window kernel's
// operands are what the interpreter computes for them from random non-zero data, and its result must have the
// interpreter's bits (both sum in f64 in one order and round once); 64 guard bytes after the result must stay
// untouched. Cases: 1-D, 2-D and 3-D; groups and depthwise; strides, dilations, asymmetric pads, pads beyond the
// kernel's reach, SAME pads; ceil-mode windows past the end; count_include_pad both ways; NaNs in max pools;
// argmax pools (ties, NaNs, storage_order, windows with no input point);
// conv_transpose with output_padding, stride > kernel, groups and output_shape (negative derived pads); 1x1
// images and odd sizes; f64, f16 and bf16; channels_last written by the program.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include "codegen/Jit.h"
#include "codegen/Kernel.h"
#include "codegen/KernelCommon.h"
#include "codegen/gpu/GpuWindow.h"
#include "ir/Interpreter.h"
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
  Operation* kernel = nullptr;  // the window op's fusion
};

// `text` through the default pipeline as `dscc compile --target=cuda:...` plans it; `kernel` is its `which`-th
// window kernel (null when it has fewer).
std::unique_ptr<Program> fusedProgram(const std::string& text, size_t which) {
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
    if (op->kind == OpKind::Fusion && isWindowKernel(*op) && seen++ == which) p->kernel = op.get();
  return p;
}

// "" or the first element of `got` without `want`'s bits (any NaN matches a NaN).
std::string compareBits(const std::vector<uint8_t>& got, const Tensor& want) {
  Tensor g = Tensor::zeros(want.dtype, want.shape);
  if (!g.bytes.empty()) std::memcpy(g.bytes.data(), got.data(), g.bytes.size());
  const size_t es = dtypeSize(want.dtype);
  for (int64_t i = 0; i < want.numel(); ++i) {
    double x = g.getF(i), y = want.getF(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::memcmp(g.bytes.data() + i * es, want.bytes.data() + i * es, es) != 0) {
      std::ostringstream os;
      os.precision(17);
      os << "element " << i << " of " << want.typeStr() << ": got " << x << ", want " << y;
      return os.str();
    }
  }
  return "";
}

struct Lowered {
  std::unique_ptr<Jit> jit;
  DataKernel dk;
};

Lowered lower(const Program& p) {
  Lowered l;
  CodeModule cm("emu");
  WindowPlan wp;
  std::string e = planWindowKernel(*p.kernel, true, wp);
  if (e.empty()) e = lowerGpuWindow(wp, cm, "win", l.dk);
  EXPECT_EQ(e, "");
  if (!e.empty()) return l;
  l.jit = codegentest::jitVerified(std::move(cm));
  return l;
}

// Runs `l`'s launch on `in` at `threads` threads (thread t takes units t, t + threads, ...) and compares the
// result with `want`.
void runKernel(Lowered& l, std::vector<void*>& in, const DimBindings& env, const Tensor& want, int threads) {
  std::vector<uint8_t> res(want.bytes.size() + 64, 0xA5);
  std::vector<void*> out{res.data()};
  std::vector<int64_t> sizes;
  for (const std::string& s : l.dk.symbols) sizes.push_back(env.at(s));
  ASSERT_EQ(l.dk.launches.size(), 1u);
  std::string err;
  auto fn = reinterpret_cast<KernelFn>(l.jit->lookup(l.dk.launches[0].name, &err));
  ASSERT_TRUE(fn) << err;
  const int64_t units = *l.dk.launches[0].units.evaluate(env);
  ASSERT_EQ(units, want.numel());
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int64_t u = t; u < units; u += threads) fn(in.data(), out.data(), sizes.data(), u, u + 1);
    });
  for (auto& th : ts) th.join();
  ASSERT_EQ(compareBits(res, want), "");
  for (size_t g = 0; g < 64; ++g) ASSERT_EQ(res[want.bytes.size() + g], 0xA5) << "write past the result";
}

// Every window kernel of `text` at every size of `sizeList`, against the interpreter; returns the (kernel, size)
// runs. Each kernel on a fresh parse: the function is rewritten to return the kernel's operands and result.
int checkProgram(const std::string& text, const std::vector<DimBindings>& sizeList, uint64_t seed) {
  int ran = 0;
  std::mt19937_64 rng(seed);
  for (size_t k = 0;; ++k) {
    auto p = fusedProgram(text, k);
    EXPECT_TRUE(p) << "cannot plan:\n" << text;
    if (!p || !p->kernel) break;
    SCOPED_TRACE("kernel %" + p->kernel->result()->name);
    Lowered l = lower(*p);
    if (!l.jit) return ran;
    WindowPlan wp;
    EXPECT_EQ(planWindowKernel(*p->kernel, true, wp), "");
    const bool maxPool = wp.op && wp.op->kind == OpKind::Pool && (wp.attrs.isMax || wp.attrs.isArgmax);
    Function& f = *p->fn;
    std::vector<Value*> rets(p->kernel->operands.begin(), p->kernel->operands.end());
    rets.push_back(p->kernel->result());
    f.returns = rets;
    f.resultTypes.clear();
    for (Value* v : rets) f.resultTypes.push_back(v->type);
    for (const DimBindings& size : sizeList) {
      std::ostringstream st;
      for (const auto& [name, v] : size) st << name << "=" << v << " ";
      SCOPED_TRACE(st.str());
      std::vector<Tensor> vals;
      DimBindings env;
      auto fill = [&](Tensor& t) { codegentest::fillNonZero(t, rng, maxPool); };  // NaNs for max pools
      EXPECT_TRUE(codegentest::interpretAt(f, size, fill, p->diags, vals, env)) << p->diagText.str();
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

std::vector<DimBindings> sizes(std::initializer_list<DimBindings> s) { return s; }

struct Case {
  std::string name;
  std::string text;
  std::vector<DimBindings> sizes;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// One function `@f` of argument list `args` returning `returns` (of types `ret`) from `body`. Every window op must
// reach a result: the pipeline drops the others.
std::string fn(const std::string& args, const std::string& ret, const std::string& body,
               const std::string& returns = "%y") {
  return "func @f(" + args + ") -> " + ret + " {\n" + body + "  return " + returns + "\n}\n";
}

std::vector<Case> cases() {
  std::vector<Case> c;
  // conv 1-D: stride, dilation, asymmetric pads, bias; odd lengths and the shortest the window fits.
  c.push_back({"Conv1d", fn("%x: f32[N, 3, L], %w: f32[4, 3, 3], %b: f32[4]", "f32[N, 4, ?]",
                            "  %y = conv %x, %w, %b {strides = [2], dilations = [2], pads = [3, 1]}\n"),
               sizes({{{"N", 2}, {"L", 7}}, {{"N", 1}, {"L", 1}}, {{"N", 3}, {"L", 12}}})});
  // conv 2-D with groups, stride and dilation per dim, asymmetric pads.
  c.push_back({"Conv2dGroups",
               fn("%x: f32[N, 4, H, W], %w: f32[6, 2, 3, 2]", "f32[N, 6, ?, ?]",
                  "  %y = conv %x, %w {group = 2, strides = [2, 1], dilations = [1, 2], pads = [0, 2, 1, 3]}\n"),
               sizes({{{"N", 1}, {"H", 5}, {"W", 4}}, {{"N", 2}, {"H", 3}, {"W", 1}}, {{"N", 1}, {"H", 9}, {"W", 7}}})});
  // Depthwise (group = C), bias, 1x1 images.
  c.push_back({"Depthwise", fn("%x: f32[N, 3, H, W], %w: f32[3, 1, 3, 3], %b: f32[3]", "f32[N, 3, H, W]",
                               "  %y = conv %x, %w, %b {group = 3, pads = [1, 1, 1, 1]}\n"),
               sizes({{{"N", 2}, {"H", 1}, {"W", 1}}, {{"N", 1}, {"H", 6}, {"W", 5}}, {{"N", 1}, {"H", 2}, {"W", 9}}})});
  // Depthwise with a channel multiplier (M = 2C) and no padding.
  c.push_back({"DepthwiseMultiplier", fn("%x: f32[N, 2, H, W], %w: f32[4, 1, 2, 2]", "f32[N, 4, ?, ?]",
                                         "  %y = conv %x, %w {group = 2, strides = [2, 2]}\n"),
               sizes({{{"N", 1}, {"H", 2}, {"W", 2}}, {{"N", 2}, {"H", 7}, {"W", 5}}})});
  // conv 3-D.
  for (std::string d : {"f32", "f64"})
    c.push_back({d == "f32" ? "Conv3d" : "Conv3dF64",
                 fn("%x: " + d + "[N, 2, D, H, W], %w: " + d + "[3, 2, 2, 3, 1], %b: " + d + "[3]",
                    d + "[N, 3, ?, ?, ?]", "  %y = conv %x, %w, %b {strides = [1, 2, 1], pads = [1, 1, 2, 0, 1, 1]}\n"),
                 sizes({{{"N", 1}, {"D", 1}, {"H", 1}, {"W", 1}}, {{"N", 2}, {"D", 3}, {"H", 4}, {"W", 5}}})});
  // Pads beyond the kernel's reach: windows wholly in the padding hold the bias.
  c.push_back({"PadsBeyondReach", fn("%x: f32[N, 2, L], %w: f32[3, 2, 2], %b: f32[3]", "f32[N, 3, ?]",
                                     "  %y = conv %x, %w, %b {pads = [5, 4]}\n"),
               sizes({{{"N", 1}, {"L", 1}}, {{"N", 2}, {"L", 6}}})});
  // SAME pads derived from symbolic sizes (upper and lower), strided.
  c.push_back({"SamePads", fn("%x: f32[N, 2, H, W], %w: f32[2, 2, 3, 4]", "f32[N, 2, ?, ?]",
                              "  %a = conv %x, %w {auto_pad = \"same_upper\", strides = [2, 3]}\n"
                              "  %y = conv %a, %w {auto_pad = \"same_lower\"}\n"),
               sizes({{{"N", 1}, {"H", 1}, {"W", 1}}, {{"N", 2}, {"H", 8}, {"W", 7}}})});
  // Half precision and f64: the same f64 sums, one rounding at the store.
  for (const char* dt : {"f16", "bf16", "f64"}) {
    std::string d(dt);
    c.push_back({dt, fn("%x: " + d + "[N, 4, H, W], %w: " + d + "[4, 2, 3, 3], %b: " + d + "[4]", d + "[N, 4, ?, ?]",
                        "  %a = conv %x, %w, %b {group = 2, pads = [1, 2, 1, 0]}\n"
                        "  %y = pool %a {kind = \"avg\", kernel_shape = [2, 2], strides = [2, 2], ceil_mode = true}\n"),
                 sizes({{{"N", 1}, {"H", 3}, {"W", 4}}, {{"N", 2}, {"H", 8}, {"W", 5}}})});
  }
  // Max pools: ceil mode with windows past the end, dilations, pads, NaNs; 1-D and 3-D.
  c.push_back({"MaxPool2dCeil", fn("%x: f32[N, C, H, W]", "f32[N, C, ?, ?]",
                                   "  %y = pool %x {kind = \"max\", kernel_shape = [3, 2], strides = [2, 2], "
                                   "dilations = [1, 2], pads = [1, 0, 1, 1], ceil_mode = true}\n"),
               sizes({{{"N", 1}, {"C", 2}, {"H", 5}, {"W", 6}}, {{"N", 2}, {"C", 1}, {"H", 2}, {"W", 3}},
                      {{"N", 1}, {"C", 3}, {"H", 10}, {"W", 9}}})});
  c.push_back({"MaxPool1d3d", fn("%x: f32[N, C, L], %z: f32[N, C, D, H, W]", "(f32[N, C, ?], f32[N, C, ?, ?, ?])",
                                 "  %p = pool %x {kind = \"max\", kernel_shape = [2], strides = [3], pads = [1, 1]}\n"
                                 "  %y = pool %z {kind = \"max\", kernel_shape = [2, 2, 3], strides = [2, 1, 2], "
                                 "ceil_mode = true}\n", "%p, %y"),
               sizes({{{"N", 1}, {"C", 2}, {"L", 4}, {"D", 2}, {"H", 2}, {"W", 3}},
                      {{"N", 2}, {"C", 1}, {"L", 1}, {"D", 5}, {"H", 3}, {"W", 8}}})});
  // Max pool whose pads exceed the kernel's reach: windows wholly in the padding give -inf.
  c.push_back({"MaxPoolAllPadding", fn("%x: f32[N, C, L]", "f32[N, C, ?]",
                                       "  %y = pool %x {kind = \"max\", kernel_shape = [2], pads = [3, 2]}\n"),
               sizes({{{"N", 1}, {"C", 2}, {"L", 1}}, {{"N", 1}, {"C", 1}, {"L", 5}}})});
  // argmax pools (MaxPool's Indices): ties (a relu's zeros), NaNs, ceil mode, dilations, pads, storage_order 1;
  // windows with no input point (-1); f16 and f64 operands.
  c.push_back({"ArgmaxPool", fn("%x: f32[N, C, H, W], %z: f16[N, C, L], %v: f64[N, C, D, H, W]",
                                "(i64[N, C, ?, ?], i64[N, C, ?, ?], i64[N, C, ?], i64[N, C, ?, ?, ?])",
                                "  %r = relu %x\n"
                                "  %p = pool %r {kind = \"argmax\", kernel_shape = [3, 2], strides = [2, 2], "
                                "dilations = [1, 2], pads = [1, 0, 1, 1], ceil_mode = true}\n"
                                "  %q = pool %x {kind = \"argmax\", kernel_shape = [2, 3], pads = [1, 1, 0, 1], "
                                "storage_order = 1}\n"
                                "  %y = pool %z {kind = \"argmax\", kernel_shape = [2], dilations = [2], pads = [3, 3]}\n"
                                "  %t = pool %v {kind = \"argmax\", kernel_shape = [2, 2, 3], strides = [1, 2, 2], "
                                "ceil_mode = true, storage_order = 1}\n",
                                "%p, %q, %y, %t"),
               sizes({{{"N", 1}, {"C", 2}, {"H", 5}, {"W", 6}, {"L", 1}, {"D", 2}},
                      {{"N", 2}, {"C", 1}, {"H", 2}, {"W", 3}, {"L", 5}, {"D", 3}},
                      {{"N", 1}, {"C", 3}, {"H", 9}, {"W", 8}, {"L", 2}, {"D", 4}}})});
  // Average pools: count_include_pad both ways, ceil mode past the end padding, dilations; pads beyond the reach
  // (0/0: NaN without count_include_pad).
  for (const char* cip : {"false", "true"}) {
    std::string inc(cip);
    c.push_back({inc == "true" ? "AvgPoolIncludePad" : "AvgPoolExcludePad",
                 fn("%x: f32[N, C, H, W], %z: f32[N, C, L]",
                    "(f32[N, C, ?, ?], f32[N, C, ?, ?], f32[N, C, ?, ?], f32[N, C, ?])",
                    "  %p = pool %x {kind = \"avg\", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 0, 2, 1], "
                    "ceil_mode = true, count_include_pad = " + inc + "}\n"
                    // No end padding: the last ceil-mode window reaches past the input (H, W even / odd).
                    "  %r = pool %x {kind = \"avg\", kernel_shape = [3, 2], strides = [2, 2], pads = [1, 0, 0, 0], "
                    "ceil_mode = true, count_include_pad = " + inc + "}\n"
                    "  %q = pool %x {kind = \"avg\", kernel_shape = [2, 3], dilations = [2, 1], pads = [0, 1, 1, 0], "
                    "count_include_pad = " + inc + "}\n"
                    "  %y = pool %z {kind = \"avg\", kernel_shape = [2], strides = [2], pads = [3, 3], "
                    "count_include_pad = " + inc + "}\n", "%p, %r, %q, %y"),
                 sizes({{{"N", 1}, {"C", 2}, {"H", 5}, {"W", 4}, {"L", 1}},
                        {{"N", 2}, {"C", 1}, {"H", 3}, {"W", 3}, {"L", 6}},
                        {{"N", 1}, {"C", 1}, {"H", 6}, {"W", 5}, {"L", 2}},
                        {{"N", 1}, {"C", 1}, {"H", 8}, {"W", 7}, {"L", 3}}})});
  }
  // conv_transpose: 1-D with stride > kernel and output_padding; 2-D grouped, dilated, padded; 3-D.
  c.push_back({"ConvTranspose1dStride", fn("%x: f32[N, 2, L], %w: f32[2, 3, 2], %b: f32[3]", "f32[N, 3, ?]",
                                           "  %y = conv_transpose %x, %w, %b {strides = [3], output_padding = [2], "
                                           "pads = [1, 0]}\n"),
               sizes({{{"N", 1}, {"L", 1}}, {{"N", 2}, {"L", 5}}})});
  // f64 too: f32 results hide most orders of an f64 sum, f64 ones show a wrong order in the last bit.
  for (std::string d : {"f32", "f64"}) {
    c.push_back({d == "f32" ? "ConvTranspose2dGroups" : "ConvTranspose2dGroupsF64",
                 fn("%x: " + d + "[N, 4, H, W], %w: " + d + "[4, 3, 3, 2], %b: " + d + "[6]", d + "[N, 6, ?, ?]",
                    "  %y = conv_transpose %x, %w, %b {group = 2, strides = [2, 3], dilations = [2, 1], "
                    "pads = [1, 0, 2, 1], output_padding = [1, 2]}\n"),
                 sizes({{{"N", 1}, {"H", 1}, {"W", 1}}, {{"N", 2}, {"H", 3}, {"W", 4}}, {{"N", 1}, {"H", 6}, {"W", 3}}})});
    c.push_back({d == "f32" ? "ConvTranspose2dOverlap" : "ConvTranspose2dOverlapF64",
                 fn("%x: " + d + "[N, 3, H, W], %w: " + d + "[3, 2, 4, 3]", d + "[N, 2, ?, ?]",
                    "  %y = conv_transpose %x, %w {strides = [1, 2], pads = [2, 1, 1, 0]}\n"),
                 sizes({{{"N", 1}, {"H", 2}, {"W", 3}}, {{"N", 2}, {"H", 5}, {"W", 4}}})});
  }
  c.push_back({"ConvTranspose3d", fn("%x: f32[N, 2, D, H, W], %w: f32[2, 2, 2, 2, 3]", "f32[N, 2, ?, ?, ?]",
                                     "  %y = conv_transpose %x, %w {strides = [2, 1, 2], pads = [0, 1, 1, 1, 0, 0]}\n"),
               sizes({{{"N", 1}, {"D", 1}, {"H", 2}, {"W", 1}}, {{"N", 1}, {"D", 3}, {"H", 2}, {"W", 4}}})});
  // output_shape larger than the input reaches: negative derived pads, points that hold the bias only.
  c.push_back({"ConvTransposeOutputShape", fn("%x: f32[N, 3, 4, 5], %w: f32[3, 2, 3, 3], %b: f32[2]",
                                              "f32[N, 2, 13, 14]",
                                              "  %y = conv_transpose %x, %w, %b {strides = [2, 2], "
                                              "output_shape = [13, 14]}\n"),
               sizes({{{"N", 1}}, {{"N", 2}}})});
  // channels_last written by the program (the GPU pipeline never writes it): the same sums, other strides.
  c.push_back({"ChannelsLast", fn("%x: f32[N, H, W, 4], %w: f32[6, 2, 3, 3], %b: f32[6]", "f32[N, ?, ?, 6]",
                                  "  %a = conv %x, %w, %b {group = 2, pads = [1, 1, 2, 1], channels_last = true}\n"
                                  "  %y = pool %a {kind = \"avg\", kernel_shape = [2, 2], pads = [1, 1, 0, 0], "
                                  "channels_last = true}\n"),
               sizes({{{"N", 1}, {"H", 1}, {"W", 1}}, {{"N", 2}, {"H", 5}, {"W", 3}}})});
  return c;
}

class GpuWindow_ : public ::testing::TestWithParam<Case> {};

TEST_P(GpuWindow_, MatchesInterpreterBits) {
  const Case& c = GetParam();
  SCOPED_TRACE(c.text);
  auto first = fusedProgram(c.text, 0);
  ASSERT_TRUE(first && first->kernel) << "no window kernel in the program";
  int ran = checkProgram(c.text, c.sizes, 77);
  EXPECT_GE(ran, static_cast<int>(c.sizes.size()));
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuWindow_, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// A mutation check of the harness itself: a result off by one ulp in one element must be reported.
TEST(GpuWindowHarness, DetectsOneUlp) {
  Tensor want = Tensor::zeros(DType::F32, {3});
  want.setF(1, 0.5);
  std::vector<uint8_t> got(want.bytes.begin(), want.bytes.end());
  got[4] ^= 1;
  EXPECT_NE(compareBits(got, want), "");
  got[4] ^= 1;
  EXPECT_EQ(compareBits(got, want), "");
}

// One program of the random batch (test/numeric/random_programs.py --windows --target cuda:sm_90 --emulate runs
// this per program): every conv, conv_transpose and pool kernel of DSCC_EMU_PROGRAM at every size of
// DSCC_EMU_SIZES ("N=3,M=2;N=1,M=1"), bit for bit. Skipped without them.
TEST(GpuWindowBatch, Program) {
  std::string path, text;
  std::vector<DimBindings> sizeList;
  if (!codegentest::batchProgram(path, text, sizeList))
    GTEST_SKIP() << "DSCC_EMU_PROGRAM and DSCC_EMU_SIZES name a program of the random batch";
  ASSERT_NE(text, "") << "cannot read " << path;
  int kernels = 0;
  while (true) {
    auto p = fusedProgram(text, kernels);
    ASSERT_TRUE(p) << "cannot plan " << path;
    if (!p->kernel) break;
    ++kernels;
  }
  int ran = checkProgram(text, sizeList, 5);
  std::printf("emulated: %d window kernels, %d (kernel, size) runs\n", kernels, ran);
}

}  // namespace
