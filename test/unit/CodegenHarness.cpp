// The differential harness of CodegenTest (CodegenHarness.h): lowering, JIT runs and comparison with the interpreter.
#include "test/unit/CodegenHarness.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>

#include "codegen/Jit.h"
#include "codegen/KernelLowering.h"
#include "ir/KernelKind.h"

namespace dscc::codegentest {

using namespace dscc::codegen;

std::unique_ptr<Program> parse(const std::string& text, const std::vector<const PassInfo*>& passes,
                               KernelTarget target) {
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
  opts.target = target;
  if (!passes.empty() && !runPasses(*p->mod, passes, p->diags, opts, out)) {
    ADD_FAILURE() << "pipeline failed:\n" << p->errors();
    return nullptr;
  }
  return p;
}

std::unique_ptr<Jit> jitVerified(CodeModule cm) {
  EXPECT_EQ(verifyModule(cm), "");
  std::string e;
  std::unique_ptr<Jit> jit = Jit::create(&e);
  EXPECT_TRUE(jit) << e;
  if (jit && !jit->addModule(std::move(cm), &e)) {
    ADD_FAILURE() << e;
    return nullptr;
  }
  return jit;
}

bool interpretAt(Function& f, const DimBindings& size, const std::function<void(Tensor&)>& fill, DiagEngine& diags,
                 std::vector<Tensor>& vals, DimBindings& env) {
  std::vector<Tensor> inputs;
  for (const auto& a : f.args) {
    std::vector<int64_t> shape;
    for (const DimExpr& d : a->type.dims) shape.push_back(*d.evaluate(size));
    inputs.push_back(Tensor::zeros(a->type.dtype, shape));
    fill(inputs.back());
  }
  return interpret(f, inputs, vals, diags, &env);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool batchProgram(std::string& path, std::string& text, std::vector<DimBindings>& sizes) {
  const char* p = std::getenv("DSCC_EMU_PROGRAM");
  const char* sizeText = std::getenv("DSCC_EMU_SIZES");
  if (!p || !sizeText) return false;
  path = p;
  text = readFile(path);
  sizes.clear();
  std::stringstream all(sizeText);
  for (std::string one; std::getline(all, one, ';');) {
    DimBindings b;
    std::stringstream kvs(one);
    for (std::string kv; std::getline(kvs, kv, ',');)
      if (size_t eq = kv.find('='); eq != std::string::npos) b[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    sizes.push_back(b);
  }
  return true;
}

void fillNonZero(Tensor& t, std::mt19937_64& rng, bool nans) {
  std::uniform_real_distribution<double> mag(0.05, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!isFloat(t.dtype)) {
      t.setI(i, t.dtype == DType::I64 ? -static_cast<int64_t>(rng() % 2) : static_cast<int64_t>(rng() % 5));
      continue;
    }
    double v = mag(rng);
    t.setF(i, nans && i % 13 == 7 ? NAN : (rng() & 1) ? -v : v);
  }
}

// The loop kernels of `f`, in program order.
std::vector<const Operation*> loopKernels(const Function& f) {
  std::vector<const Operation*> out;
  for (const auto& op : f.ops)
    if (op->kind == OpKind::Fusion)
      if (kernelKindOf(*op) == KernelKind::Loop) out.push_back(op.get());
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

// Makes `f` return `vals` instead of its own results, so the interpreter
// hands back values from inside the program.
void returnValues(Function& f, const std::vector<Value*>& vals) {
  f.returns = vals;
  f.resultTypes.clear();
  for (Value* v : vals) f.resultTypes.push_back(v->type);
}

Tensor randomTensor(DType dt, std::vector<int64_t> shape, Data data, std::mt19937_64& rng) {
  Tensor t = Tensor::zeros(dt, std::move(shape));
  std::uniform_real_distribution<double> mag(0.25, 2.0);
  std::uniform_int_distribution<int64_t> small(1, data == Data::Positive ? 6 : 9), wide(1, int64_t(1) << 20);
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool neg = data != Data::Positive && (rng() & 1);
    if (dt == DType::I1) t.setI(i, static_cast<int64_t>(rng() & 1));
    else if (isFloat(dt)) t.setF(i, neg ? -mag(rng) : mag(rng));
    else {
      int64_t v = data == Data::Wide ? wide(rng) : small(rng);
      t.setI(i, neg ? -v : v);
    }
  }
  return t;
}

// The first mismatch between `got` (raw bytes of want's dtype) and `want`, or "".
std::string compare(const uint8_t* got, const Tensor& want, bool exact) {
  Tensor g = Tensor::zeros(want.dtype, want.shape);
  if (!g.bytes.empty()) std::memcpy(g.bytes.data(), got, g.bytes.size());  // empty: data() may be NULL
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (isFloat(want.dtype)) {
      double x = g.getF(i), y = want.getF(i);
      double rel = want.dtype == DType::F64 ? 1e-12 : 1e-5, abs = want.dtype == DType::F64 ? 1e-14 : 1e-6;
      ok = (std::isnan(x) && std::isnan(y)) || (exact ? std::signbit(x) == std::signbit(y) && x == y
                                                      : x == y || std::fabs(x - y) <= abs + rel * std::fabs(y));
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

std::string sizesText(const DimBindings& env) {
  std::string s;
  for (const auto& [k, v] : env) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

// All combinations of the given values per symbol.
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

// N and D at 0, 1, odd sizes and either side of a 64-wide boundary.
std::vector<DimBindings> rowsByCols() { return grid({{"N", {0, 1, 2, 7, 64, 65}}, {"D", {1, 3, 100, 129}}}); }

// Lowers every loop kernel of `text` after the passes, runs each at `sizes`
// and compares with the interpreter on the unfused program.
void checkProgram(const std::string& text, const std::vector<DimBindings>& sizes, const Options& o) {
  const Data data = o.data;
  Seen* seen = o.seen;
  auto fused = parse(text, o.passes);
  auto ref = parse(text, {});
  ASSERT_TRUE(fused && ref);
  std::vector<const Operation*> kernels = loopKernels(*fused->fn);
  ASSERT_FALSE(kernels.empty()) << "no loop kernel in:\n" << text;

  CodeModule cm("test");
  std::vector<KernelInterface> ifaces;
  for (size_t k = 0; k < kernels.size(); ++k) {
    LoweredKernel lk = lowerLoopKernel(*kernels[k], cm, "kernel" + std::to_string(k));
    ASSERT_TRUE(lk.ok()) << lk.error;
    ifaces.push_back(lk.iface);
    if (seen) {
      for (const auto& op : kernels[k]->body) {
        seen->ops.insert(op->kind);
        for (const Value* v : op->operands) seen->dtypes.insert(v->type.dtype);
      }
      ++seen->kernels;
    }
  }
  ASSERT_EQ(verifyModule(cm), "") << emitLLVMText(cm);
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit) << err;
  ASSERT_TRUE(jit->addModule(std::move(cm), &err)) << err;
  std::vector<LoopKernelFn> fns;
  for (size_t k = 0; k < kernels.size(); ++k) {
    fns.push_back(reinterpret_cast<LoopKernelFn>(jit->lookup("kernel" + std::to_string(k), &err)));
    ASSERT_TRUE(fns.back()) << err;
    // An empty range reads nothing, not even the pointer arrays.
    fns.back()(nullptr, nullptr, nullptr, 0, 0);
    fns.back()(nullptr, nullptr, nullptr, 5, 3);
  }

  // The reference: the unfused program returning what the kernels compute;
  // the kernels' operands: the fused program returning them.
  std::vector<Value*> refVals, operandVals;
  for (const Operation* op : kernels) {
    for (const auto& r : op->results) {
      Value* v = findValue(*ref->fn, r->name);
      ASSERT_TRUE(v) << "%" << r->name << " is not in the unfused program";
      refVals.push_back(v);
    }
    operandVals.insert(operandVals.end(), op->operands.begin(), op->operands.end());
  }
  returnValues(*ref->fn, refVals);
  returnValues(*fused->fn, operandVals);

  std::mt19937_64 rng(12345);
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
      inputs.push_back(randomTensor(a->type.dtype, shape, data, rng));
    }
    if (o.special) o.special(inputs);
    std::vector<Tensor> want, operands;
    DimBindings env;
    ASSERT_TRUE(interpret(*ref->fn, inputs, want, ref->diags, nullptr)) << ref->errors();
    ASSERT_TRUE(interpret(*fused->fn, inputs, operands, fused->diags, &env)) << fused->errors();

    size_t resultAt = 0, operandAt = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
      const KernelInterface& iface = ifaces[k];
      std::vector<int64_t> sizeArg;
      for (const std::string& s : iface.symbols) sizeArg.push_back(env.at(s));
      auto total = iface.units.evaluate(env, &err);
      ASSERT_TRUE(total) << err;
      std::vector<void*> in;
      for (size_t i = 0; i < iface.inputs.size(); ++i) in.push_back(operands[operandAt + i].bytes.data());
      operandAt += iface.inputs.size();

      // Whole range, then three uneven chunks that start and end mid-row,
      // last chunk first: each call must leave the elements before its
      // range untouched.
      int64_t a = *total * 2 / 7 + (*total > 0), b = a + (*total - a) * 3 / 5;
      std::vector<std::vector<std::pair<int64_t, int64_t>>> schedules = {{{0, *total}},
                                                                        {{b, *total}, {a, b}, {0, a}}};
      for (size_t s = 0; s < schedules.size(); ++s) {
        const uint8_t fill = s == 0 ? 0xA5 : 0x5A;
        const size_t guard = 64;
        std::vector<std::vector<uint8_t>> outBufs;
        std::vector<void*> out;
        for (size_t i = 0; i < iface.outputs.size(); ++i) {
          const Tensor& w = want[resultAt + i];
          ASSERT_EQ(w.numel(), *total);
          outBufs.emplace_back(w.bytes.size() + guard, fill);
          out.push_back(outBufs.back().data());
        }
        for (auto [lo, hi] : schedules[s]) {
          fns[k](in.data(), out.data(), sizeArg.data(), lo, hi);
          for (size_t i = 0; i < out.size(); ++i) {
            size_t below = static_cast<size_t>(lo) * dtypeSize(iface.outputs[i].dtype);
            for (size_t byte = 0; byte < below; ++byte)
              ASSERT_EQ(outBufs[i][byte], fill) << "chunk [" << lo << ", " << hi << ") wrote below its range";
          }
        }
        for (size_t i = 0; i < out.size(); ++i) {
          const Tensor& w = want[resultAt + i];
          std::string bad = compare(outBufs[i].data(), w, o.exact);
          ASSERT_EQ(bad, "") << "kernel" << k << " result " << i << " (%" << kernels[k]->result(i)->name
                             << "), schedule " << s;
          for (size_t g = 0; g < guard; ++g)
            ASSERT_EQ(outBufs[i][w.bytes.size() + g], fill) << "write past the end of result " << i;
        }
      }
      resultAt += iface.outputs.size();
    }
  }
}

// Replaces every `T` in `text` by `dtype`.
std::string withType(std::string text, const std::string& dtype) {
  return std::regex_replace(text, std::regex("\\bT\\["), dtype + "[");
}

}  // namespace dscc::codegentest
