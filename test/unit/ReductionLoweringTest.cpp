// Generated stitch and input kernels (codegen/ReductionLowering) against the reference interpreter, every version, many sizes.
//
// Each program goes through the default pipeline; every stitch and input
// kernel it yields is lowered in each applicable version (generic, v8, i32,
// nobcast, all three), verified, JIT-compiled and run on random non-zero
// data, once over the whole range and once in three uneven chunks (last
// first, checking nothing below a chunk is written). Outputs are compared
// with the interpreter on the unfused program. Tolerances: f32 rel 1e-4 +
// abs 1e-5, f64 rel 1e-10 + abs 1e-12, integers and i1 exact; NaN matches NaN.
// The GenericKernels tests run generic kernels (ElementGenerator) the same way,
// in the CPU's schedule and in the GPU's (its index math, run sequentially).
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "codegen/GenericKernel.h"
#include "codegen/Jit.h"
#include "codegen/ModelPlan.h"
#include "codegen/ReductionLowering.h"
#include "ir/Interpreter.h"
#include "ir/KernelKind.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"

using namespace dscc;
using namespace dscc::codegen;

namespace {

struct Program {
  SourceMgr sm;
  std::ostringstream diagText;
  DiagEngine diags{sm, diagText};
  std::unique_ptr<Module> mod;
  Function* fn = nullptr;
  std::string errors() const {
    std::string all;
    for (const auto& d : diags.captured()) all += diags.format(d) + "\n";
    return all + diagText.str();
  }
};

std::unique_ptr<Program> parse(const std::string& text, bool pipeline) {
  auto p = std::make_unique<Program>();
  p->diags.setCapture(true);
  int id = p->sm.addBuffer("test.dsc", text);
  p->mod = parseModule(p->sm, id, p->diags);
  if (!p->mod) {
    ADD_FAILURE() << "parse failed:\n" << p->errors();
    return nullptr;
  }
  p->fn = p->mod->entry();
  std::ostringstream out;
  PipelineOptions opts;
  if (pipeline && !runPasses(*p->mod, defaultPipeline(), p->diags, opts, out)) {
    ADD_FAILURE() << "pipeline failed:\n" << p->errors();
    return nullptr;
  }
  return p;
}

// A workload with its `where` facts removed, so sizes 0 may be tried.
std::string workload(const std::string& name) {
  std::ifstream in(std::string(DSCC_SOURCE_DIR) + "/bench/workloads/" + name + ".dsc");
  std::stringstream ss;
  ss << in.rdbuf();
  return std::regex_replace(ss.str(), std::regex("\\n\\s*where [^{]*\\{"), " {");
}

std::optional<KernelKind> kindOf(const Operation& op) { return kernelKindOf(op); }

Value* findValue(Function& f, const std::string& name) {
  for (auto& a : f.args)
    if (a->name == name) return a.get();
  Value* found = nullptr;
  walkOps(f.ops, [&](Operation& op) {
    for (auto& r : op.results)
      if (r->name == name && !found) found = r.get();
  });
  return found;
}

void returnValues(Function& f, const std::vector<Value*>& vals) {
  f.returns = vals;
  f.resultTypes.clear();
  for (Value* v : vals) f.resultTypes.push_back(v->type);
}

// Floats uniform in +-[0.05, 1] (Positive: [0.05, 1]); integers in +-[1, 9]
// (Wide: +-[1, 2^20]); i1 random.
enum class Data { Mixed, Positive, Wide };

Tensor randomTensor(DType dt, std::vector<int64_t> shape, Data data, std::mt19937_64& rng) {
  Tensor t = Tensor::zeros(dt, std::move(shape));
  std::uniform_real_distribution<double> mag(0.05, 1.0);
  std::uniform_int_distribution<int64_t> small(1, 9), wide(1, int64_t(1) << 20);
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool neg = data != Data::Positive && (rng() & 1);
    if (dt == DType::I1) t.setI(i, static_cast<int64_t>(rng() & 1));
    else if (isFloat(dt)) t.setF(i, neg ? -mag(rng) : mag(rng));
    else t.setI(i, (neg ? -1 : 1) * (data == Data::Wide ? wide(rng) : small(rng)));
  }
  return t;
}

std::string compare(const uint8_t* got, const Tensor& want) {
  Tensor g = Tensor::zeros(want.dtype, want.shape);
  if (!g.bytes.empty()) std::memcpy(g.bytes.data(), got, g.bytes.size());  // empty: data() may be NULL
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (isFloat(want.dtype)) {
      double x = g.getF(i), y = want.getF(i);
      double rel = want.dtype == DType::F64 ? 1e-10 : 1e-4, abs = want.dtype == DType::F64 ? 1e-12 : 1e-5;
      ok = (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= abs + rel * std::fabs(y);
    } else {
      ok = g.getI(i) == want.getI(i);
    }
    if (!ok) {
      std::ostringstream os;
      os.precision(17);
      os << "element " << i << " of " << want.typeStr() << ": got " << g.getF(i) << ", want " << want.getF(i);
      return os.str();
    }
  }
  return "";
}

std::vector<DimBindings> grid(const std::map<std::string, std::vector<int64_t>>& axes) {
  std::vector<DimBindings> out{{}};
  for (const auto& [name, vals] : axes) {
    std::vector<DimBindings> next;
    for (const DimBindings& b : out)
      for (int64_t v : vals) {
        DimBindings c = b;
        c[name] = v;
        next.push_back(c);
      }
    out = std::move(next);
  }
  return out;
}

// ~20 (N, D) pairs: 0, 1, vector boundaries, odd sizes and a BERT width.
std::vector<DimBindings> rowsByCols(bool emptyRows = true) {
  std::vector<std::pair<int64_t, int64_t>> nd = {{1, 1},  {2, 7},   {7, 8},   {3, 9},    {9, 63},  {8, 64},  {1, 65},
                                                 {2, 300}, {7, 768}, {63, 2}, {64, 1},  {65, 16}, {300, 3}, {1, 2},
                                                 {65, 65}, {0, 8},   {0, 0},  {5, 129}, {1, 256}};
  if (emptyRows) nd.push_back({4, 0});
  std::vector<DimBindings> out;
  for (auto [n, d] : nd) out.push_back({{"N", n}, {"D", d}});
  return out;
}

std::string sizesText(const DimBindings& env) {
  std::string s;
  for (const auto& [k, v] : env) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

const std::vector<KernelVariant> kVariants = {
    {}, {8, false, false}, {1, true, false}, {1, false, true}, {8, true, true}};

struct Options {
  Data data = Data::Mixed;
  int minKernels = 1;
  // Sets chosen elements of the random inputs (values random data misses).
  std::function<void(std::vector<Tensor>&)> special = nullptr;
  // Test the generic kernels instead, in both schedules: the CPU's (tiles
  // where a transpose moves the last axis) and the GPU's (an element or row
  // per unit, run here sequentially: its index math on the CPU).
  bool generic = false;
};

// Lowers every stitch and input kernel of `text` after the pipeline in every
// version, runs each applicable one at `sizes` and compares with the
// interpreter on the unfused program.
void checkProgram(const std::string& text, const std::vector<DimBindings>& sizes, const Options& o = {}) {
  auto fused = parse(text, true);
  auto ref = parse(text, false);
  ASSERT_TRUE(fused && ref);
  std::vector<const Operation*> kernels;
  for (const auto& op : fused->fn->ops)
    if (op->kind == OpKind::Fusion &&
        (o.generic ? kindOf(*op) == KernelKind::Generic
                   : kindOf(*op) == KernelKind::Stitch || kindOf(*op) == KernelKind::Input))
      kernels.push_back(op.get());
  ASSERT_GE(static_cast<int>(kernels.size()), o.minKernels) << "too few tested kernels after fusion of:\n" << text;

  // What each kernel is lowered as: the five versions of a stitch or input
  // kernel; a generic kernel's one version in the CPU's and the GPU's schedule.
  struct Lowering {
    KernelVariant v;
    bool tiles = true;
    std::string name() const { return v.name() + (tiles ? "" : ".gpu"); }
  };
  std::vector<Lowering> lowerings;
  if (o.generic) lowerings = {{{}, true}, {{}, false}};
  else
    for (const KernelVariant& v : kVariants) lowerings.push_back({v, true});
  CodeModule cm("test");
  std::vector<std::vector<KernelInterface>> ifaces(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    bool stitch = kindOf(*kernels[k]) == KernelKind::Stitch;
    for (const Lowering& l : lowerings) {
      KernelInterface iface;
      std::string e = o.generic ? describeGenericKernel(*kernels[k], iface, l.tiles)
                      : stitch  ? describeStitchKernel(*kernels[k], iface)
                                : describeInputKernel(*kernels[k], iface);
      ASSERT_EQ(e, "");
      ifaces[k].push_back(iface);
      std::string name = "k" + std::to_string(k) + "." + l.name();
      LoweredKernel lk = o.generic ? lowerGenericKernel(*kernels[k], cm, name, l.v, l.tiles)
                         : stitch  ? lowerStitchKernel(*kernels[k], cm, name, l.v)
                                   : lowerInputKernel(*kernels[k], cm, name, l.v);
      ASSERT_TRUE(lk.ok()) << lk.error;
    }
  }
  ASSERT_EQ(verifyModule(cm), "") << emitLLVMText(cm);
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit) << err;
  ASSERT_TRUE(jit->addModule(std::move(cm), &err)) << err;
  std::vector<std::vector<KernelFn>> fns(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k)
    for (const Lowering& l : lowerings) {
      auto f = reinterpret_cast<KernelFn>(jit->lookup("k" + std::to_string(k) + "." + l.name(), &err));
      ASSERT_TRUE(f) << err;
      f(nullptr, nullptr, nullptr, 0, 0);  // an empty range reads no pointer
      f(nullptr, nullptr, nullptr, 5, 3);
      fns[k].push_back(f);
    }

  // The reference: the unfused program returning the kernels' results (or,
  // for values the pipeline created, the fused program's own); the operands:
  // the fused program, without the tested kernels it does not need (the
  // interpreter rejects max over an empty extent even when there are no rows).
  std::vector<Value*> refVals, operandVals, fusedRefs;
  std::vector<int> refFrom;  // per kernel result: index in refVals, or -1 - index in fusedRefs
  std::set<const Operation*> needed;
  for (const Operation* op : kernels) {
    for (const auto& r : op->results) {
      if (Value* v = findValue(*ref->fn, r->name)) {
        refFrom.push_back(static_cast<int>(refVals.size()));
        refVals.push_back(v);
      } else {
        refFrom.push_back(-1 - static_cast<int>(fusedRefs.size()));
        fusedRefs.push_back(r.get());
        needed.insert(op);
      }
    }
    operandVals.insert(operandVals.end(), op->operands.begin(), op->operands.end());
  }
  returnValues(*ref->fn, refVals);
  std::vector<Value*> fusedReturns = operandVals;
  fusedReturns.insert(fusedReturns.end(), fusedRefs.begin(), fusedRefs.end());
  returnValues(*fused->fn, fusedReturns);
  for (const auto& op : fused->fn->ops)
    for (const Value* v : op->operands)
      if (v->def) needed.insert(v->def);
  for (const Value* v : fusedReturns)
    if (v->def) needed.insert(v->def);
  std::vector<std::unique_ptr<Operation>> kept;  // keeps `kernels` alive
  for (auto it = fused->fn->ops.begin(); it != fused->fn->ops.end();) {
    bool tested = std::find(kernels.begin(), kernels.end(), it->get()) != kernels.end();
    if (tested && !needed.count(it->get())) {
      kept.push_back(std::move(*it));
      it = fused->fn->ops.erase(it);
    } else {
      ++it;
    }
  }

  std::mt19937_64 rng(2024);
  int runs = 0;
  for (const DimBindings& size : sizes) {
    SCOPED_TRACE(sizesText(size));
    std::vector<Tensor> inputs;
    for (const auto& a : ref->fn->args) {
      std::vector<int64_t> shape;
      for (const DimExpr& d : a->type.dims) {
        auto v = d.evaluate(size, &err);
        ASSERT_TRUE(v) << err;
        shape.push_back(*v);
      }
      inputs.push_back(randomTensor(a->type.dtype, shape, o.data, rng));
    }
    if (o.special) o.special(inputs);
    std::vector<Tensor> refOut, operands, want;
    DimBindings env;
    ASSERT_TRUE(interpret(*ref->fn, inputs, refOut, ref->diags, nullptr)) << ref->errors();
    ASSERT_TRUE(interpret(*fused->fn, inputs, operands, fused->diags, &env)) << fused->errors();
    for (int from : refFrom)
      want.push_back(from >= 0 ? refOut[size_t(from)] : operands[operandVals.size() + size_t(-1 - from)]);

    size_t resultAt = 0, operandAt = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
      auto ev = [&](const DimExpr& d) {
        auto v = d.evaluate(env, &err);
        EXPECT_TRUE(v) << err;
        return v.value_or(0);
      };
      std::vector<void*> in;
      for (size_t i = 0; i < ifaces[k][0].inputs.size(); ++i) in.push_back(operands[operandAt + i].bytes.data());
      operandAt += ifaces[k][0].inputs.size();
      for (size_t vi = 0; vi < lowerings.size(); ++vi) {
        const KernelVariant& v = lowerings[vi].v;
        const KernelInterface& iface = ifaces[k][vi];
        std::vector<int64_t> sizeArg;
        for (const std::string& s : iface.symbols) sizeArg.push_back(env.at(s));
        int64_t total = ev(iface.units);
        if (v.vectorWidth > 1 && ev(iface.guards.vectorExtent) % v.vectorWidth != 0) continue;
        if (v.index32) {
          for (const DimExpr& c : iface.guards.indexCounts) ASSERT_LE(ev(c), INT32_MAX);
        }
        bool equal = true;
        for (const auto& [a, b] : iface.guards.broadcastPairs) equal = equal && ev(a) == ev(b);
        if (v.broadcastFree && !equal) continue;
        SCOPED_TRACE("kernel " + std::to_string(k) + " version " + lowerings[vi].name());
        int64_t a = total * 2 / 7 + (total > 0), b = a + (total - a) * 3 / 5;
        std::vector<std::vector<std::pair<int64_t, int64_t>>> schedules = {{{0, total}},
                                                                          {{b, total + 3}, {a, b}, {-2, a}}};
        for (size_t s = 0; s < schedules.size(); ++s) {
          const uint8_t fill = s == 0 ? 0xA5 : 0x5A;
          const size_t guard = 64;
          std::vector<std::vector<uint8_t>> outBufs;
          std::vector<void*> out;
          for (size_t i = 0; i < iface.outputs.size(); ++i) {
            outBufs.emplace_back(want[resultAt + i].bytes.size() + guard, fill);
            out.push_back(outBufs.back().data());
          }
          for (auto [lo, hi] : schedules[s]) {
            fns[k][vi](in.data(), out.data(), sizeArg.data(), lo, hi);
            // (A generic kernel's units are tiles or rows of results laid end to end: not a prefix.)
            for (size_t i = 0; i < out.size() && !o.generic; ++i) {
              int64_t per = total == 0 ? 0 : want[resultAt + i].numel() / total;
              size_t below = static_cast<size_t>(std::max<int64_t>(lo, 0) * per) * dtypeSize(iface.outputs[i].dtype);
              for (size_t byte = 0; byte < below; ++byte)
                ASSERT_EQ(outBufs[i][byte], fill) << "chunk [" << lo << ", " << hi << ") wrote below its range";
            }
          }
          for (size_t i = 0; i < out.size(); ++i) {
            const Tensor& w = want[resultAt + i];
            ASSERT_EQ(compare(outBufs[i].data(), w), "") << "result %" << kernels[k]->result(i)->name << ", schedule " << s;
            for (size_t g = 0; g < guard; ++g)
              ASSERT_EQ(outBufs[i][w.bytes.size() + g], fill) << "write past the end of result " << i;
          }
        }
        ++runs;
      }
      resultAt += ifaces[k][0].outputs.size();
    }
  }
  EXPECT_GT(runs, 0);
}

// A test program of test/compile/inputs with its `where` facts removed.
std::string compileInput(const std::string& name) {
  std::ifstream in(std::string(DSCC_SOURCE_DIR) + "/test/compile/inputs/" + name + ".dsc");
  std::stringstream ss;
  ss << in.rdbuf();
  return std::regex_replace(ss.str(), std::regex("\\n\\s*where [^{]*\\{"), " {");
}

// The first fusion op of `text` after the pipeline (or as written).
struct FirstKernel {
  std::unique_ptr<Program> prog;
  const Operation* op = nullptr;
};
FirstKernel firstKernel(const std::string& text, bool pipeline) {
  FirstKernel f;
  f.prog = parse(text, pipeline);
  if (f.prog)
    for (const auto& op : f.prog->fn->ops)
      if (op->kind == OpKind::Fusion && !f.op) f.op = op.get();
  return f;
}

TEST(ReductionWorkloads, LayerNorm) { checkProgram(workload("layer_norm"), rowsByCols()); }

TEST(ReductionWorkloads, Softmax) {
  checkProgram(workload("softmax"), grid({{"B", {0, 1, 2}}, {"S", {0, 1, 7, 8, 9, 16, 63, 65}}}));
}

TEST(ReductionWorkloads, RmsNorm) { checkProgram(workload("rms_norm"), grid({{"T", {0, 1, 2, 7, 9}}})); }

TEST(ReductionWorkloads, ColReduce) { checkProgram(workload("col_reduce"), rowsByCols(false)); }

TEST(ReductionWorkloads, BertStitchKernels) {
  // %p (masked softmax with the [B, 1, 1, S] mask), %h and %y (layer norms).
  checkProgram(workload("bert_layer"), grid({{"B", {1, 2}}, {"S", {1, 8, 9}}}), {Data::Mixed, 3});
}

// Generic kernels (codegen/ElementGenerator) in the CPU's schedule and the
// GPU's (one element or row per unit, no tiles), against the interpreter.
TEST(GenericKernels, TransposeTiles) {
  Options o;
  o.generic = true;
  // Tile edges at 32: sizes below, at and past one and two tiles.
  checkProgram(compileInput("gen_transpose"), grid({{"N", {1, 31, 32, 33, 65}}, {"D", {1, 2, 32, 33, 70}}}), o);
}

TEST(GenericKernels, DataMovement) {
  Options o;
  o.generic = true;
  // Gather indices in range (negative ones count from the end), as the interpreter checks.
  o.special = [](std::vector<Tensor>& in) {
    const int64_t idx[] = {3, -4, 0, -1};
    for (int k = 0; k < 4; ++k) in[1].setI(k, idx[k]);
  };
  checkProgram(compileInput("gen_movement"), grid({{"N", {0, 1, 2, 9, 64}}}), o);
}

TEST(GenericKernels, ReductionsOffTheLastAxis) {
  Options o;
  o.generic = true;
  checkProgram(compileInput("gen_reductions"), grid({{"A", {1, 2, 7}}, {"B", {1, 5}}, {"C", {1, 3, 40}}}), o);
}

TEST(ReductionKernels, InterfaceOfStitchAndColumn) {
  FirstKernel ln = firstKernel(workload("layer_norm"), true);
  ASSERT_TRUE(ln.op);
  KernelInterface i;
  ASSERT_EQ(describeStitchKernel(*ln.op, i), "");
  EXPECT_EQ(i.symbols, (std::vector<std::string>{"D", "N"}));
  EXPECT_EQ(i.units.str(), "N");
  EXPECT_EQ(i.workPerUnit.str(), "D");
  EXPECT_EQ(i.guards.vectorExtent.str(), "D");
  EXPECT_TRUE(i.guards.broadcastPairs.empty());
  EXPECT_NE(describeInputKernel(*ln.op, i), "");  // the wrong kind
  FirstKernel col = firstKernel(workload("col_reduce"), true);
  ASSERT_TRUE(col.op);
  ASSERT_EQ(describeInputKernel(*col.op, i), "");
  EXPECT_EQ(i.units.str(), "D");
  EXPECT_EQ(i.workPerUnit.str(), "N");
  EXPECT_EQ(i.guards.vectorExtent.str(), "D");
}

// max, min, prod, mean and sum over the last axis, the leading axis, all
// axes, a middle axis and two outer axes; keepdims both ways, with epilogues.
TEST(ReductionKernels, FloatReductionsOverAxes) {
  const char* rows = R"(
func @main(%x: f32[N, D], %b: f32[N]) -> (f32[N], f32[N, 1], f32[N], f32[N], f32[N]) {
  %mx = reduce_max %x {axes = [1], keepdims = false}
  %mn = reduce_min %x {axes = [-1], keepdims = true}
  %pr = reduce_prod %x {axes = [1], keepdims = false}
  %me = reduce_mean %x {axes = [1], keepdims = false}
  %e = add %me, %b
  %su = reduce_sum %x {axes = [1], keepdims = false}
  %t = mul %su, %mx
  return %mx, %mn, %pr, %e, %t
}
)";
  auto nonEmpty = rowsByCols(false);
  nonEmpty.erase(std::remove_if(nonEmpty.begin(), nonEmpty.end(), [](auto& s) { return s.at("D") == 0; }),
                 nonEmpty.end());
  checkProgram(rows, nonEmpty);
  const char* cols = R"(
func @main(%x: f64[N, D], %b: f64[D]) -> (f64[D], f64[1, D], f64[D], f64[D]) {
  %mx = reduce_max %x {axes = [0], keepdims = false}
  %mn = reduce_min %x {axes = [0], keepdims = true}
  %pr = reduce_prod %x {axes = [0], keepdims = false}
  %me = reduce_mean %x {axes = [0], keepdims = false}
  %e = sub %me, %b
  return %mx, %mn, %pr, %e
}
)";
  auto nonEmptyRows = rowsByCols(false);
  nonEmptyRows.erase(std::remove_if(nonEmptyRows.begin(), nonEmptyRows.end(), [](auto& s) { return s.at("N") == 0; }),
                     nonEmptyRows.end());
  checkProgram(cols, nonEmptyRows);
  const char* others = R"(
func @main(%x: f32[A, B, C]) -> (f32[], f32[A, C], f32[1, B, 1], f32[A, 1, C]) {
  %all = reduce_sum %x {keepdims = false}
  %mid = reduce_max %x {axes = [1], keepdims = false}
  %outer = reduce_mean %x {axes = [0, 2], keepdims = true}
  %sq = mul %x, %x
  %mid2 = reduce_sum %sq {axes = [1], keepdims = true}
  return %all, %mid, %outer, %mid2
}
)";
  checkProgram(others, grid({{"A", {1, 3}}, {"B", {1, 5, 9}}, {"C", {1, 8, 17}}}), {Data::Mixed, 4});
}

// Empty extents: sum 0, mean NaN, prod 1 (the interpreter's values).
TEST(ReductionKernels, EmptyExtents) {
  const char* text = R"(
func @main(%x: f32[N, D]) -> (f32[N], f32[N], f32[N], f32[D], f32[D]) {
  %s = reduce_sum %x {axes = [1], keepdims = false}
  %m = reduce_mean %x {axes = [1], keepdims = false}
  %p = reduce_prod %x {axes = [1], keepdims = false}
  %cs = reduce_sum %x {axes = [0], keepdims = false}
  %cm = reduce_mean %x {axes = [0], keepdims = false}
  return %s, %m, %p, %cs, %cm
}
)";
  checkProgram(text, {{{"N", 3}, {"D", 0}}, {{"N", 0}, {"D", 5}}, {{"N", 0}, {"D", 0}}, {{"N", 2}, {"D", 3}}}, {Data::Mixed, 2});
}

// f32 sums of rows up to 16384 values in [-1, 1] within rel 1e-4 / abs 1e-5.
TEST(ReductionKernels, LongRowsStayAccurate) {
  const char* text = R"(
func @main(%x: f32[N, D]) -> (f32[N], f32[D], f32[N, D]) {
  %s = reduce_sum %x {axes = [1], keepdims = false}
  %c = reduce_sum %x {axes = [0], keepdims = false}
  %m = reduce_sum %x {axes = [1], keepdims = true}
  %y = sub %x, %m
  return %s, %c, %y
}
)";
  checkProgram(text, {{{"N", 3}, {"D", 16384}}, {{"N", 16384}, {"D", 3}}, {{"N", 2}, {"D", 4096}}}, {Data::Mixed, 3});
}

// Integer reductions (wrapping sums and products, max/min) and i1 values around reductions.
TEST(ReductionKernels, Integers) {
  for (const char* dt : {"i64", "i32", "i8"}) {
    SCOPED_TRACE(dt);
    std::string text = std::regex_replace(R"(
func @main(%x: T[N, D], %k: T[D]) -> (T[N, D], T[N], T[N], T[D], T[D]) {
  %mx = reduce_max %x {axes = [1], keepdims = true}
  %y = sub %x, %mx
  %s = reduce_sum %x {axes = [1], keepdims = false}
  %p = reduce_prod %x {axes = [1], keepdims = false}
  %xk = mul %x, %k
  %cs = reduce_sum %xk {axes = [0], keepdims = false}
  %cm = reduce_min %x {axes = [0], keepdims = false}
  return %y, %s, %p, %cs, %cm
}
)", std::regex("\\bT\\["), std::string(dt) + "[");
    checkProgram(text, grid({{"N", {1, 2, 9, 65}}, {"D", {1, 7, 8, 64, 300}}}), {Data::Wide, 2});
  }
  // i1 is not a reduction dtype in the IR; i1 values feed and leave reductions.
  const char* bools = R"(
func @main(%x: i1[N, D], %y: f32[N, D]) -> (i1[N, D], i32[D], i1[N]) {
  %z = constant 0.0 : f32[]
  %gt = gt %y, %z
  %b = and %x, %gt
  %i = cast %b {to = i32}
  %m = reduce_max %i {axes = [1], keepdims = true}
  %one = eq %i, %m
  %cs = reduce_sum %i {axes = [0], keepdims = false}
  %s = reduce_sum %y {axes = [1], keepdims = false}
  %pos = gt %s, %z
  return %one, %cs, %pos
}
)";
  checkProgram(bools, grid({{"N", {1, 2, 3, 9}}, {"D", {1, 2, 8, 65}}}), {Data::Mixed, 2});
}

// NaN wins in max and min, as in numpy.
TEST(ReductionKernels, NaNPropagates) {
  const char* text = R"(
func @main(%x: f32[N, D]) -> (f32[N], f32[N], f32[D]) {
  %mx = reduce_max %x {axes = [1], keepdims = false}
  %mn = reduce_min %x {axes = [1], keepdims = false}
  %cm = reduce_max %x {axes = [0], keepdims = false}
  return %mx, %mn, %cm
}
)";
  // NaN in the first row's head, in the middle (inside a vectorised loop
  // body for long rows) and at the very end (a remainder iteration).
  auto nans = [](std::vector<Tensor>& in) {
    int64_t n = in[0].numel();
    if (n > 3) in[0].setF(3, std::nan(""));
    if (n > 8) in[0].setF(n / 2 + 1, std::nan(""));
    if (n > 1) in[0].setF(n - 1, -std::nan(""));
  };
  Options o{Data::Mixed, 2, nans};
  checkProgram(text, grid({{"N", {2, 7}}, {"D", {8, 9, 100, 131}}}), o);
  // A softmax row with a NaN is all NaN, the other rows are untouched.
  const char* softmax = R"(
func @main(%x: f32[N, D]) -> f32[N, D] {
  %m = reduce_max %x {axes = [1], keepdims = true}
  %z = sub %x, %m
  %e = exp %z
  %s = reduce_sum %e {axes = [1], keepdims = true}
  %p = div %e, %s
  return %p
}
)";
  Options one{Data::Mixed, 1, nans};
  checkProgram(softmax, grid({{"N", {3, 7}}, {"D", {8, 9, 18, 100, 131}}}), one);
}

// Operands whose symbolic dim is 1 at run time (a dynamic broadcast): the
// generic version selects stride 0; nobcast runs only where the dims are equal.
TEST(ReductionKernels, DynamicBroadcast) {
  const char* stitch = R"(
func @main(%x: f32[N, D], %w: f32[M, K]) -> f32[N, D] {
  %y = add %x, %w
  %m = reduce_max %y {axes = [1], keepdims = true}
  %z = sub %y, %m
  %e = exp %z
  %s = reduce_sum %e {axes = [1], keepdims = true}
  %p = div %e, %s
  return %p
}
)";
  std::vector<DimBindings> sizes;
  for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{{3, 8}, {5, 9}, {1, 64}, {7, 1}, {2, 300}})
    for (int64_t m : {int64_t(1), n})
      for (int64_t k : {int64_t(1), d}) sizes.push_back({{"N", n}, {"D", d}, {"M", m}, {"K", k}});
  checkProgram(stitch, sizes);
  const char* column = R"(
func @main(%x: f32[N, D], %w: f32[K]) -> f32[D] {
  %y = mul %x, %w
  %s = reduce_sum %y {axes = [0], keepdims = false}
  return %s
}
)";
  std::vector<DimBindings> colSizes;
  for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{{3, 8}, {5, 9}, {64, 65}, {7, 1}, {2, 300}})
    for (int64_t k : {int64_t(1), d}) colSizes.push_back({{"N", n}, {"D", d}, {"K", k}});
  checkProgram(column, colSizes);
}

// Body ops the lowering does not handle give a clear error, never code.
TEST(ReductionKernels, UnsupportedGivesError) {
  const char* argmaxStitch = R"(
func @main(%x: f32[N, D]) -> f32[N, D] {
  %r = fusion %x {kind = "stitch"} : f32[N, D] {
    %m = reduce_max %x {axes = [1], keepdims = true} : f32[N, 1]
    %a = argmax %x {axis = 1, keepdims = true} : i64[N, 1]
    %c = cast %a {to = f32} : f32[N, 1]
    %s = sub %x, %m : f32[N, D]
    %r = add %s, %c : f32[N, D]
    yield %r
  }
  return %r
}
)";
  FirstKernel k = firstKernel(argmaxStitch, false);
  ASSERT_TRUE(k.op);
  CodeModule cm("bad");
  LoweredKernel lk = lowerStitchKernel(*k.op, cm, "bad");
  EXPECT_FALSE(lk.ok());
  EXPECT_EQ(lk.error, "codegen: op 'argmax' (%a) in a stitch kernel is not supported yet");
  EXPECT_EQ(emitLLVMText(cm).find("define"), std::string::npos);
  const char* axis0Stitch = R"(
func @main(%x: f32[N, D]) -> f32[N, D] {
  %r = fusion %x {kind = "stitch"} : f32[N, D] {
    %m = reduce_max %x {axes = [0], keepdims = true} : f32[1, D]
    %r = sub %x, %m : f32[N, D]
    yield %r
  }
  return %r
}
)";
  FirstKernel k2 = firstKernel(axis0Stitch, false);
  ASSERT_TRUE(k2.op);
  KernelInterface i;
  std::string e = describeStitchKernel(*k2.op, i);
  EXPECT_NE(e.find("not supported yet"), std::string::npos) << e;
}

}  // namespace

namespace {

// The optimised IR of the column sum and of a v8 layer_norm is vector code:
// the column loop reads rows contiguously, the stitch blocks of 8 widen.
TEST(ReductionKernels, HotLoopsVectorise) {
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit) << err;
  FirstKernel col = firstKernel(workload("col_reduce"), true);
  FirstKernel ln = firstKernel(workload("layer_norm"), true);
  ASSERT_TRUE(col.op && ln.op);
  CodeModule cm("vec");
  ASSERT_TRUE(lowerInputKernel(*col.op, cm, "col").ok());
  ASSERT_TRUE(lowerStitchKernel(*ln.op, cm, "ln", {8, false, false}).ok());
  jit->optimize(cm);
  std::string ir = emitLLVMText(cm);
  size_t colAt = ir.find("define void @col"), lnAt = ir.find("define void @ln");
  ASSERT_NE(colAt, std::string::npos);
  ASSERT_NE(lnAt, std::string::npos);
  std::string colIR = colAt < lnAt ? ir.substr(colAt, lnAt - colAt) : ir.substr(colAt);
  std::string lnIR = lnAt < colAt ? ir.substr(lnAt, colAt - lnAt) : ir.substr(lnAt);
  EXPECT_TRUE(std::regex_search(colIR, std::regex("load <[0-9]+ x float>"))) << colIR;
  EXPECT_TRUE(std::regex_search(lnIR, std::regex("load <[0-9]+ x float>"))) << lnIR;
  EXPECT_TRUE(std::regex_search(lnIR, std::regex("store <[0-9]+ x float>"))) << lnIR;
}

}  // namespace
