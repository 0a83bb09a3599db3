// Library-kernel plans (codegen/LibraryPlan.h): their fields symbolically, and executed through the runtime against the interpreter.
//
// Every program goes through the default pipeline; each library kernel is
// planned, its fields are checked against hand-derived expressions, and the
// plan is executed at concrete sizes: dscc_copy_strided for operands that
// need a copy, dscc_sgemm_nd, then the epilogue lowered as a loop kernel and
// JIT-compiled (in place on C when the plan says so). The kernel's results
// are compared with the interpreter running the whole unfused function on
// the same random data; the kernel's operands come from the interpreter
// running the fused one. Tolerance: |got - want| <= 1e-4 + 1e-4 * max(|want|,
// mean |want| of the tensor), i.e. rel 1e-4 / abs 1e-4, with the relative part
// measured against the tensor's magnitude so that elements which cancel to
// near zero in a long float dot product do not fail on rounding alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "codegen/Jit.h"
#include "codegen/KernelLowering.h"
#include "codegen/LibraryPlan.h"
#include "ir/Interpreter.h"
#include "ir/KernelKind.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"
#include "passes/ShapeSolver.h"
#include "runtime/dscc_runtime.h"

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

std::unique_ptr<Program> parse(const std::string& text, bool fuse) {
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
  if (fuse && !runPasses(*p->mod, defaultPipeline(), p->diags, opts, out)) {
    ADD_FAILURE() << "pipeline failed:\n" << p->errors();
    return nullptr;
  }
  return p;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<const Operation*> libraryKernels(const Function& f) {
  std::vector<const Operation*> out;
  for (const auto& op : f.ops)
    if (op->kind == OpKind::Fusion)
      if (kernelKindOf(*op) == KernelKind::Library) out.push_back(op.get());
  return out;
}

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

std::string text(const DimExpr& e) { return e.str(); }
std::string text(const std::vector<DimExpr>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s + "]";
}

const DimExpr B = DimExpr::symbol("B"), S = DimExpr::symbol("S"), M = DimExpr::symbol("M"),
              N = DimExpr::symbol("N"), K = DimExpr::symbol("K"), H = DimExpr::symbol("H");

/// A planned kernel ready to run: the plan and, when it has an epilogue, the JIT-compiled loop kernel.
struct Planned {
  const Operation* fusion = nullptr;
  GemmPlan plan;
  KernelFn epilogue = nullptr;
  KernelInterface iface;
};

int64_t eval(const DimExpr& e, const DimBindings& env) {
  std::string err;
  auto v = e.evaluate(env, &err);
  if (!v) ADD_FAILURE() << "cannot evaluate " << e.str() << ": " << err;
  return v.value_or(0);
}

std::vector<int64_t> eval(const std::vector<DimExpr>& es, const DimBindings& env) {
  std::vector<int64_t> out;
  for (const DimExpr& e : es) out.push_back(eval(e, env));
  return out;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// Runs one planned kernel; `outs` receives its results' bytes (with a guard tail that must stay intact).
void execute(dscc_context* ctx, const Planned& p, std::vector<Tensor>& operands, const DimBindings& env,
             std::vector<std::vector<uint8_t>>& outs, size_t guard) {
  const GemmPlan& g = p.plan;
  for (const auto& r : p.fusion->results) {
    std::vector<int64_t> shape = eval(r->type.dims, env);
    outs.emplace_back(static_cast<size_t>(numel(shape)) * dtypeSize(r->type.dtype) + guard, 0xA5);
  }
  // Operand matrices, through a dense copy where the plan asks for one.
  std::vector<std::vector<float>> scratch;
  const auto matrix = [&](const GemmOperandPlan& o) -> const float* {
    const float* src = operands[o.operand].data<float>();
    if (o.copyDims.empty()) return src;
    std::vector<int64_t> dims = eval(o.copyDims, env), strides = eval(o.copyStrides, env);
    scratch.emplace_back(static_cast<size_t>(std::max<int64_t>(numel(dims), 1)));
    EXPECT_EQ(dscc_copy_strided(ctx, scratch.back().data(), src, sizeof(float), static_cast<int32_t>(dims.size()),
                                dims.data(), strides.data()),
              DSCC_OK)
        << dscc_status_message(ctx);
    return scratch.back().data();
  };
  scratch.reserve(3);
  const float* A = matrix(g.a);
  const float* Bm = matrix(g.b);
  const int64_t m = eval(g.M, env), n = eval(g.N, env), k = eval(g.K, env);
  std::vector<int64_t> batch = eval(g.batchDims, env);
  float* C = reinterpret_cast<float*>(outs[0].data());
  if (g.epilogue && !g.epilogueInPlace) {
    scratch.emplace_back(static_cast<size_t>(std::max<int64_t>(numel(batch) * m * n, 1)));
    C = scratch.back().data();
  } else {
    EXPECT_EQ(static_cast<int64_t>(outs[0].size() - guard), numel(batch) * m * n * 4) << "C is not the result buffer";
  }
  std::vector<int64_t> sa = eval(g.a.batchStrides, env), sb = eval(g.b.batchStrides, env),
                       sc = eval(g.batchStridesC, env);
  ASSERT_EQ(dscc_sgemm_nd(ctx, g.a.trans, g.b.trans, m, n, k, A, eval(g.a.ld, env), Bm, eval(g.b.ld, env), C,
                          eval(g.ldc, env), static_cast<int32_t>(batch.size()), batch.data(), sa.data(), sb.data(),
                          sc.data()),
            DSCC_OK)
      << dscc_status_message(ctx);
  if (!g.epilogue) return;
  std::vector<void*> in{C}, out;
  for (size_t i : g.epilogueOperands) in.push_back(operands[i].bytes.data());
  for (auto& o : outs) out.push_back(o.data());
  std::vector<int64_t> sizes;
  for (const std::string& s : p.iface.symbols) sizes.push_back(env.at(s));
  p.epilogue(in.data(), out.data(), sizes.data(), 0, eval(p.iface.units, env));
}

/// Plans every library kernel of `src` after the default pipeline, runs `check` on each plan (by the
/// kernel's first result name), then executes the plans at every size in `sizes` against the interpreter.
void checkProgram(const std::string& src, const std::vector<DimBindings>& sizes,
                  const std::map<std::string, std::function<void(const GemmPlan&)>>& checks) {
  auto fused = parse(src, true);
  auto ref = parse(src, false);
  ASSERT_TRUE(fused && ref);
  ShapeSolver solver;
  for (const Fact& f : fused->fn->facts) solver.addFact(f);
  std::vector<Planned> planned;
  CodeModule cm("library");
  size_t epilogues = 0;
  for (const Operation* op : libraryKernels(*fused->fn)) {
    Planned p;
    p.fusion = op;
    std::string err = planLibraryKernel(*op, &solver, p.plan);
    ASSERT_EQ(err, "") << "%" << op->result()->name;
    if (p.plan.epilogue) {
      LoweredKernel lk = lowerLoopKernel(*p.plan.epilogue, cm, "epilogue" + std::to_string(epilogues++));
      ASSERT_TRUE(lk.ok()) << lk.error;
      p.iface = lk.iface;
    }
    auto it = checks.find(op->result()->name);
    if (it != checks.end()) {
      SCOPED_TRACE("plan of %" + op->result()->name);
      it->second(p.plan);
    }
    planned.push_back(std::move(p));
  }
  ASSERT_EQ(planned.size(), checks.size()) << "library kernels vs. checks";
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit) << err;
  ASSERT_TRUE(jit->addModule(std::move(cm), &err)) << err;
  for (size_t i = 0, e = 0; i < planned.size(); ++i)
    if (planned[i].plan.epilogue) {
      planned[i].epilogue = reinterpret_cast<KernelFn>(jit->lookup("epilogue" + std::to_string(e++), &err));
      ASSERT_TRUE(planned[i].epilogue) << err;
    }

  std::vector<Value*> refVals, operandVals;
  for (const Planned& p : planned) {
    for (const auto& r : p.fusion->results) {
      Value* v = findValue(*ref->fn, r->name);
      ASSERT_TRUE(v) << "%" << r->name << " is not in the unfused program";
      refVals.push_back(v);
    }
    operandVals.insert(operandVals.end(), p.fusion->operands.begin(), p.fusion->operands.end());
  }
  returnValues(*ref->fn, refVals);
  returnValues(*fused->fn, operandVals);

  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> mag(0.05, 1.0);
  for (int threads : {1, 3}) {
    std::unique_ptr<dscc_context, void (*)(dscc_context*)> ctx(dscc_context_create(threads), dscc_context_release);
    ASSERT_TRUE(ctx);
    for (const DimBindings& size : sizes) {
      std::string sizeText;
      for (const auto& [k, v] : size) sizeText += k + "=" + std::to_string(v) + " ";
      SCOPED_TRACE(sizeText + "threads=" + std::to_string(threads));
      std::vector<Tensor> inputs;
      for (const auto& a : ref->fn->args) {
        Tensor t = Tensor::zeros(a->type.dtype, eval(a->type.dims, size));
        for (int64_t i = 0; i < t.numel(); ++i) t.setF(i, (rng() & 1 ? -1 : 1) * mag(rng));
        inputs.push_back(std::move(t));
      }
      std::vector<Tensor> want, operands;
      DimBindings env;
      ASSERT_TRUE(interpret(*ref->fn, inputs, want, ref->diags, nullptr)) << ref->errors();
      ASSERT_TRUE(interpret(*fused->fn, inputs, operands, fused->diags, &env)) << fused->errors();
      size_t operandAt = 0, resultAt = 0;
      for (const Planned& p : planned) {
        SCOPED_TRACE("kernel %" + p.fusion->result()->name);
        std::vector<Tensor> ops(operands.begin() + static_cast<std::ptrdiff_t>(operandAt),
                                operands.begin() + static_cast<std::ptrdiff_t>(operandAt + p.fusion->operands.size()));
        operandAt += p.fusion->operands.size();
        std::vector<std::vector<uint8_t>> outs;
        const size_t guard = 32;
        execute(ctx.get(), p, ops, env, outs, guard);
        for (size_t r = 0; r < outs.size(); ++r) {
          const Tensor& w = want[resultAt + r];
          ASSERT_EQ(outs[r].size(), w.bytes.size() + guard);
          Tensor got = Tensor::zeros(w.dtype, w.shape);
          if (!got.bytes.empty()) std::memcpy(got.bytes.data(), outs[r].data(), got.bytes.size());
          double meanAbs = 0;
          for (int64_t i = 0; i < w.numel(); ++i) meanAbs += std::fabs(w.getF(i)) / static_cast<double>(w.numel());
          for (int64_t i = 0; i < w.numel(); ++i) {
            const double x = got.getF(i), y = w.getF(i);
            ASSERT_LE(std::fabs(x - y), 1e-4 + 1e-4 * std::max(std::fabs(y), meanAbs))
                << "element " << i << " of result " << r << " " << w.typeStr() << ": got " << x << ", want " << y;
          }
          for (size_t b = 0; b < guard; ++b) ASSERT_EQ(outs[r][w.bytes.size() + b], 0xA5) << "write past the end";
        }
        resultAt += outs.size();
      }
    }
  }
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

std::vector<DimExpr> dims(std::initializer_list<DimExpr> l) { return l; }

TEST(LibraryPlan, BertLayerKernels) {
  const DimExpr c768(768);
  std::map<std::string, std::function<void(const GemmPlan&)>> checks;
  // x * W + b: the batch folds into M; the bias add runs in place on C.
  const auto projection = [&](size_t bias) {
    return [&, bias](const GemmPlan& p) {
      EXPECT_EQ(text(p.M), text(B * S));
      EXPECT_EQ(text(p.N), "768");
      EXPECT_EQ(text(p.K), "768");
      EXPECT_TRUE(p.batchDims.empty());
      EXPECT_EQ(p.a.operand, 0u);
      EXPECT_EQ(p.b.operand, 1u);
      EXPECT_FALSE(p.a.trans || p.b.trans);
      EXPECT_EQ(text(p.a.ld), "768");
      EXPECT_EQ(text(p.b.ld), "768");
      EXPECT_TRUE(p.a.copyDims.empty() && p.b.copyDims.empty());
      ASSERT_TRUE(p.epilogue);
      EXPECT_EQ(p.epilogue->body.size(), 1u);
      EXPECT_EQ(p.epilogueOperands, std::vector<size_t>{bias});
      EXPECT_TRUE(p.epilogueInPlace);
    };
  };
  checks["q1"] = projection(2);
  checks["k1"] = projection(2);
  checks["v1"] = projection(2);
  // Heads: [B, 12] batch over strided views of q1 and k1 (k read transposed), no copy.
  checks["s0"] = [&](const GemmPlan& p) {
    EXPECT_EQ(text(p.batchDims), text(dims({B, 12})));
    EXPECT_EQ(text(p.M), "S");
    EXPECT_EQ(text(p.N), "S");
    EXPECT_EQ(text(p.K), "64");
    EXPECT_FALSE(p.a.trans);
    EXPECT_TRUE(p.b.trans);
    EXPECT_EQ(text(p.a.ld), "768");
    EXPECT_EQ(text(p.b.ld), "768");
    EXPECT_EQ(text(p.a.batchStrides), text(dims({S * c768, 64})));
    EXPECT_EQ(text(p.b.batchStrides), text(dims({S * c768, 64})));
    EXPECT_EQ(text(p.ldc), "S");
    EXPECT_EQ(text(p.batchStridesC), text(dims({S * S * 12, S * S})));
    EXPECT_TRUE(p.a.copyDims.empty() && p.b.copyDims.empty());
    EXPECT_FALSE(p.epilogue);
  };
  checks["c0"] = [&](const GemmPlan& p) {
    EXPECT_EQ(text(p.batchDims), text(dims({B, 12})));
    EXPECT_EQ(p.a.operand, 1u);
    EXPECT_EQ(p.b.operand, 0u);
    EXPECT_EQ(text(p.K), "S");
    EXPECT_EQ(text(p.N), "64");
    EXPECT_FALSE(p.b.trans);
    EXPECT_EQ(text(p.b.ld), "768");
    EXPECT_EQ(text(p.b.batchStrides), text(dims({S * c768, 64})));
    EXPECT_EQ(text(p.a.batchStrides), text(dims({S * S * 12, S * S})));
    EXPECT_EQ(text(p.batchStridesC), text(dims({S * 64 * 12, S * 64})));
    EXPECT_FALSE(p.epilogue);
  };
  // Heads merged back: transpose then reshape needs a dense copy; the copy then folds into one GEMM.
  checks["a0"] = [&](const GemmPlan& p) {
    EXPECT_EQ(text(p.a.copyDims), text(dims({B, S, 12, 64})));
    EXPECT_EQ(text(p.a.copyStrides), text(dims({S * 768, 64, S * 64, 1})));
    EXPECT_TRUE(p.b.copyDims.empty());
    EXPECT_EQ(text(p.M), text(B * S));
    EXPECT_TRUE(p.batchDims.empty());
    EXPECT_EQ(text(p.a.ld), "768");
    EXPECT_FALSE(p.epilogue);
  };
  checks["f2"] = [&](const GemmPlan& p) {
    EXPECT_EQ(text(p.M), text(B * S));
    EXPECT_EQ(text(p.N), "3072");
    ASSERT_TRUE(p.epilogue);
    // bias + gelu (the exact gelu stays one op: no constants to pass in).
    EXPECT_EQ(p.epilogue->body.size(), 2u);
    EXPECT_EQ(p.epilogueOperands, (std::vector<size_t>{2}));
    EXPECT_TRUE(p.epilogueInPlace);
  };
  checks["f3"] = [&](const GemmPlan& p) {
    EXPECT_EQ(text(p.K), "3072");
    EXPECT_EQ(text(p.M), text(B * S));
    EXPECT_FALSE(p.epilogue);
  };
  checkProgram(readFile(std::string(DSCC_SOURCE_DIR) + "/bench/workloads/bert_layer.dsc"),
               {{{"B", 1}, {"S", 1}}, {{"B", 2}, {"S", 3}}, {{"B", 1}, {"S", 9}}}, checks);
}

TEST(LibraryPlan, Plain2D) {
  checkProgram(R"(
func @main(%a: f32[M, K], %b: f32[K, N]) -> f32[M, N] {
  %c = matmul %a, %b : f32[M, N]
  return %c
})",
               grid({{"M", {0, 1, 5, 17}}, {"N", {1, 3, 16}}, {"K", {0, 1, 7, 33}}}),
               {{"c", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.M), "M");
                  EXPECT_EQ(text(p.N), "N");
                  EXPECT_EQ(text(p.K), "K");
                  EXPECT_EQ(text(p.a.ld), "K");
                  EXPECT_EQ(text(p.b.ld), "N");
                  EXPECT_EQ(text(p.ldc), "N");
                  EXPECT_TRUE(p.batchDims.empty());
                  EXPECT_FALSE(p.epilogue);
                }}});
}

TEST(LibraryPlan, Batched3DTimes2DFoldsWithBiasEpilogue) {
  checkProgram(R"(
func @main(%x: f32[B, S, K], %w: f32[K, N], %bias: f32[N]) -> f32[B, S, N] {
  %y = matmul %x, %w : f32[B, S, N]
  %z = add %y, %bias : f32[B, S, N]
  %r = relu %z : f32[B, S, N]
  return %r
})",
               grid({{"B", {0, 1, 3}}, {"S", {0, 1, 4}}, {"K", {1, 9}}, {"N", {1, 20}}}),
               {{"r", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.M), text(B * S));
                  EXPECT_TRUE(p.batchDims.empty());
                  ASSERT_TRUE(p.epilogue);
                  EXPECT_EQ(p.epilogue->body.size(), 2u);
                  EXPECT_EQ(p.epilogue->operands.size(), 2u);
                  EXPECT_EQ(p.epilogue->operands[0], p.matmul->result());
                  EXPECT_EQ(p.epilogueOperands, std::vector<size_t>{2});
                  EXPECT_TRUE(p.epilogueInPlace);
                }}});
}

TEST(LibraryPlan, BatchedTimesBatched) {
  checkProgram(R"(
func @main(%a: f32[B, M, K], %b: f32[B, K, N]) -> f32[B, M, N] {
  %c = matmul %a, %b : f32[B, M, N]
  return %c
})",
               grid({{"B", {0, 1, 3}}, {"M", {1, 6}}, {"K", {0, 5}}, {"N", {1, 7}}}),
               {{"c", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.batchDims), "[B]");
                  EXPECT_EQ(text(p.a.batchStrides), text(dims({K * M})));
                  EXPECT_EQ(text(p.b.batchStrides), text(dims({K * N})));
                  EXPECT_EQ(text(p.batchStridesC), text(dims({M * N})));
                }}});
}

TEST(LibraryPlan, BroadcastBatch) {
  checkProgram(R"(
func @main(%a: f32[B, 1, M, K], %b: f32[H, K, N]) -> f32[B, H, M, N] {
  %c = matmul %a, %b : f32[B, H, M, N]
  return %c
})",
               grid({{"B", {1, 2}}, {"H", {0, 1, 3}}, {"M", {1, 4}}, {"K", {3}}, {"N", {1, 5}}}),
               {{"c", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.batchDims), text(dims({B, H})));
                  EXPECT_EQ(text(p.a.batchStrides), text(dims({K * M, 0})));
                  EXPECT_EQ(text(p.b.batchStrides), text(dims({0, K * N})));
                  EXPECT_EQ(text(p.batchStridesC), text(dims({H * M * N, M * N})));
                }}});
}

TEST(LibraryPlan, TransposedOperands) {
  checkProgram(R"(
func @main(%a: f32[K, M], %b: f32[N, K], %c: f32[B, N, K]) -> (f32[M, N], f32[B, M, N]) {
  %at = transpose %a {perm = [1, 0]} : f32[M, K]
  %d = matmul %at, %b {transpose_b = true} : f32[M, N]
  %e = matmul %a, %c {transpose_a = true, transpose_b = true} : f32[B, M, N]
  return %d, %e
})",
               grid({{"B", {1, 2}}, {"M", {0, 1, 6}}, {"K", {1, 4}}, {"N", {1, 5}}}),
               {{"d", [](const GemmPlan& p) {
                  EXPECT_TRUE(p.a.trans && p.b.trans);
                  EXPECT_EQ(text(p.a.ld), "M");
                  EXPECT_EQ(text(p.b.ld), "K");
                }},
                {"e", [](const GemmPlan& p) {
                  EXPECT_TRUE(p.a.trans && p.b.trans);
                  EXPECT_EQ(text(p.batchDims), "[B]");
                  EXPECT_EQ(text(p.a.batchStrides), "[0]");
                  EXPECT_EQ(text(p.b.batchStrides), text(dims({K * N})));
                }}});
}

TEST(LibraryPlan, RankOneOperands) {
  checkProgram(R"(
func @main(%v: f32[K], %m: f32[K, N], %a: f32[B, M, K], %u: f32[K]) -> (f32[N], f32[B, M], f32[]) {
  %vm = matmul %v, %m : f32[N]
  %av = matmul %a, %u : f32[B, M]
  %vv = matmul %v, %u : f32[]
  return %vm, %av, %vv
})",
               grid({{"B", {1, 3}}, {"M", {1, 4}}, {"K", {0, 1, 6}}, {"N", {1, 5}}}),
               {{"vm", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.M), "1");
                  EXPECT_EQ(text(p.N), "N");
                }},
                {"av", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.M), text(B * M));
                  EXPECT_EQ(text(p.N), "1");
                  EXPECT_TRUE(p.batchDims.empty());
                }},
                {"vv", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.M), "1");
                  EXPECT_EQ(text(p.N), "1");
                  EXPECT_EQ(text(p.K), "K");
                }}});
}

TEST(LibraryPlan, ReshapeThatForcesACopy) {
  checkProgram(R"(
func @main(%x: f32[B, 4, S, 8], %w: f32[32, N]) -> f32[B, S, N] {
  %t = transpose %x {perm = [0, 2, 1, 3]} : f32[B, S, 4, 8]
  %r = reshape %t : f32[B, S, 32]
  %y = matmul %r, %w : f32[B, S, N]
  return %y
})",
               grid({{"B", {1, 2}}, {"S", {0, 1, 5}}, {"N", {1, 6}}}),
               {{"y", [](const GemmPlan& p) {
                  EXPECT_EQ(text(p.a.copyDims), text(dims({B, S, 4, 8})));
                  EXPECT_EQ(text(p.a.copyStrides), text(dims({S * 32, 8, S * 8, 1})));
                  EXPECT_EQ(text(p.M), text(B * S));
                }}});
}

TEST(LibraryPlan, EpilogueChangingTheTypeUsesScratch) {
  checkProgram(R"(
func @main(%a: f32[M, K], %b: f32[K, N]) -> f64[M, N] {
  %c = matmul %a, %b : f32[M, N]
  %d = cast %c {to = f64} : f64[M, N]
  %r = mul %d, %d : f64[M, N]
  return %r
})",
               grid({{"M", {0, 1, 3, 8}}, {"K", {0, 2}}, {"N", {1, 5}}}),
               {{"r", [](const GemmPlan& p) {
                  ASSERT_TRUE(p.epilogue);
                  EXPECT_EQ(p.epilogue->body.size(), 2u);
                  EXPECT_TRUE(p.epilogueOperands.empty());
                  EXPECT_FALSE(p.epilogueInPlace);
                }}});
}

// An output transpose does not join the library kernel: its epilogue is a loop
// kernel, which takes only elementwise ops, so the transpose (and what follows
// it) is a generic kernel of its own reading C.
TEST(LibraryPlan, TransposeAfterMatmulIsNotAnEpilogue) {
  auto p = parse(R"(
func @main(%a: f32[M, K], %b: f32[K, M]) -> f32[M, M] {
  %c = matmul %a, %b : f32[M, M]
  %t = transpose %c {perm = [1, 0]} : f32[M, M]
  %r = neg %t : f32[M, M]
  return %r
})",
                 true);
  ASSERT_TRUE(p);
  auto kernels = libraryKernels(*p->fn);
  ASSERT_EQ(kernels.size(), 1u);
  GemmPlan plan;
  ASSERT_EQ(planLibraryKernel(*kernels[0], nullptr, plan), "");
  EXPECT_FALSE(plan.epilogue);
  size_t fusions = 0;
  for (const auto& op : p->fn->ops) fusions += op->kind == OpKind::Fusion;
  EXPECT_EQ(fusions, 2u);
}

TEST(LibraryPlan, RejectsF64) {
  // The planner makes an f64 matmul generic on the cpu (passes/KernelAnalysis.h,
  // gemmRefusal); a library kernel written by hand is refused by the plan.
  auto p = parse(R"(
func @main(%a: f64[M, K], %b: f64[K, N]) -> f64[M, N] {
  %c = fusion %a, %b {kind = "library"} : f64[M, N] {
    %c = matmul %a, %b : f64[M, N]
    yield %c
  }
  return %c
})",
                 false);
  ASSERT_TRUE(p);
  auto kernels = libraryKernels(*p->fn);
  ASSERT_EQ(kernels.size(), 1u);
  GemmPlan plan;
  EXPECT_EQ(planLibraryKernel(*kernels[0], nullptr, plan), "codegen: matmul of f64 is not supported yet");
  Operation loop;
  loop.kind = OpKind::Fusion;
  setKernelKind(loop, KernelKind::Loop);
  EXPECT_NE(planLibraryKernel(loop, nullptr, plan).find("not a library kernel"), std::string::npos);
}

}  // namespace
