// `dscc explain`: the kernels of a program and which version of each runs at given sizes, with the guard values that decided it.
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "codegen/GpuKernels.h"
#include "codegen/LibraryPlan.h"
#include "ir/Sizes.h"
#include "tools/Commands.h"
#include "tools/DimArgs.h"
#include "tools/ToolMain.h"
#include "tools/Frontend.h"

namespace dscc::tools {
namespace {

struct ExplainOpts {
  std::string file, func, target = "cpu", tuning, rowSchedule;
  std::vector<std::string> dims;
  int vectorWidth = 0;
  std::shared_ptr<frontend::ImportOptions> onnx = std::make_shared<frontend::ImportOptions>();
};

std::string opsSummary(const Operation& fusion) {
  std::string s;
  for (const auto& op : fusion.body) s += (s.empty() ? "" : " ") + std::string(op->name());
  return s;
}

std::string value(const DimExpr& e, const DimBindings& env) {
  std::string why;
  auto v = e.evaluate(env, &why);
  return v ? std::to_string(*v) : "?";
}

int cmdExplain(const ExplainOpts& o) {
  codegen::PlanOptions popts;
  bool gpu = o.target != "cpu";
  if (!targetPlanOptions(o.target, o.vectorWidth, o.rowSchedule, popts, std::cerr)) return 1;
  auto fe = loadAndPlan(o.file, o.func, popts, std::cerr, *o.onnx);
  if (!fe) return 1;
  std::vector<std::unique_ptr<Frontend>> tunedPlans;  // other vector widths, alive while fe's plan points into them
  if (!o.tuning.empty()) {
    if (gpu) {
      std::cerr << "dscc: error: --tuning applies to the cpu target only\n";
      return kUsageError;
    }
    if (!applyTuning(*fe, o.tuning, o.file, o.func, popts, tunedPlans, std::cerr)) return 1;
  }
  const Function& f = *fe->func;
  DimBindings env;
  if (std::string err; !parseDimArgs(o.dims, f, env, err)) {
    std::cerr << "dscc: error: " << err << "\n";
    return kUsageError;
  }
  std::set<std::string> needed;
  for (const auto& a : f.args)
    for (const DimExpr& d : a->type.dims) d.collectSymbols(needed);
  for (const std::string& s : needed)
    if (!env.count(s)) {
      std::cerr << "dscc: error: give a size for every symbol: --dim " << s << "=N is missing\n";
      return kUsageError;
    }
  for (const Fact& fact : f.facts) {
    std::string why;
    if (!fact.holds(env, &why)) {
      fe->diags->error(fact.loc, "these sizes break the fact '" + fact.str() + "'" + (why.empty() ? "" : ": " + why) +
                                     "; the compiled model rejects them (DSCC_FACT_VIOLATED)");
      return 1;
    }
  }
  // Sizes whose element counts overflow (or pass the per-tensor limit of
  // docs/limits.md) are refused, as the interpreter refuses them: the unit
  // counts and the 32-bit index guards below would otherwise be wrapped.
  auto sizeOk = [&](const Type& t, Location loc, const std::string& what) {
    std::vector<int64_t> shape;
    for (const DimExpr& d : t.dims) {
      std::string why;
      auto v = d.evaluate(env, &why);
      if (!v) {
        fe->diags->error(loc, "at these sizes " + what + " " + t.str() + " cannot be sized: " + why);
        return false;
      }
      shape.push_back(*v);
    }
    std::string why = sizeProblem(shape, int64_t(dtypeSize(t.dtype)), std::numeric_limits<int64_t>::max());
    if (!why.empty()) fe->diags->error(loc, "at these sizes " + what + " " + t.str() + " is too large: " + why);
    return why.empty();
  };
  for (const auto& a : f.args)
    if (!sizeOk(a->type, a->loc, "argument %" + a->name)) return 1;
  for (const codegen::KernelPlan& k : fe->plan.kernels)
    for (const auto& r : k.fusion->results)
      if (!sizeOk(r->type, k.fusion->loc, "%" + r->name)) return 1;
  std::cout << "@" << f.name << " at";
  for (const auto& [k, v] : env) std::cout << " " << k << "=" << v;
  std::cout << ": " << fe->plan.kernels.size() << " kernels\n";
  size_t i = 0;
  for (const codegen::KernelPlan& k : fe->plan.kernels) {
    const Operation& op = *k.fusion;
    std::cout << "\n[" << i++ << "] %" << op.result()->name << "  " << k.kind << "  " << op.result()->type.str()
              << "  (" << opsSummary(op) << ")\n";
    if (k.gemm) {
      const codegen::GemmPlan& g = *k.gemm;
      std::string batch;
      for (const DimExpr& d : g.batchDims) batch += (batch.empty() ? "" : "x") + value(d, env);
      std::cout << "    BLAS sgemm: M=" << value(g.M, env) << " N=" << value(g.N, env) << " K=" << value(g.K, env)
                << (batch.empty() ? "" : " batch=" + batch) << (g.a.trans ? " A^T" : "") << (g.b.trans ? " B^T" : "")
                << (g.a.copyDims.empty() && g.b.copyDims.empty() ? "" : " (an operand is copied to a dense layout)")
                << "\n";
      if (!k.hasKernel) {
        std::cout << "    no epilogue\n";
        continue;
      }
      std::cout << "    epilogue:\n";
    }
    std::cout << "    units " << k.iface.units.str() << " = " << value(k.iface.units, env) << ", elements per unit "
              << value(k.iface.workPerUnit, env) << "\n";
    for (const codegen::GuardPlan& g : k.guards) {
      const char* name = g.kind == codegen::GuardKind::Vector    ? "vector"
                         : g.kind == codegen::GuardKind::Index32 ? "index32"
                         : g.kind == codegen::GuardKind::Schedule ? "schedule"
                                                                  : "broadcast-free";
      std::cout << "    guard " << name << ": " << g.text;
      if (g.proved) {
        std::cout << "  -- proved from the facts, no run-time test\n";
        continue;
      }
      auto h = g.holdsAt(env);
      std::cout << "  -- run time: " << (h ? (*h ? "true" : "false") : "unknown")
                << (g.aligned ? " (the pointers are tested per call; shown as aligned)" : "") << "\n";
    }
    if (k.tuning) {
      // The tuned range picks a configuration; its own guard cascade picks the version.
      const codegen::KernelTuningPlan& tp = *k.tuning;
      auto ci = tp.configAt(env);
      std::string where = "outside every range: fallback";
      auto sz = tp.size.evaluate(env);
      for (const auto& r : tp.ranges)
        if (sz && *sz >= r.from && *sz <= r.to)
          where = "range [" + std::to_string(r.from) + ", " + std::to_string(r.to) + "]";
      const codegen::TunedConfig& c = tp.configs[ci ? *ci : tp.fallback];
      std::cout << "    tuned: " << tp.size.str() << " = " << value(tp.size, env) << ", " << where << " -> " << c.name
                << " (chunk " << c.chunk << " elements per task)\n";
      size_t v = c.plan.chooseVersion(env);
      std::cout << "    versions:";
      for (size_t q = 0; q < c.plan.versions.size(); ++q) std::cout << " " << c.plan.versions[q].name();
      std::cout << "\n    runs: " << c.plan.functionName(v) << "\n";
      continue;
    }
    size_t v = k.chooseVersion(env);
    std::cout << "    versions:";
    for (size_t q = 0; q < k.versions.size(); ++q) std::cout << " " << k.versions[q].name();
    std::cout << "\n    runs: " << k.functionName(v) << "\n";
  }
  return 0;
}

}  // namespace

Command addExplainCommand(CLI::App& app) {
  auto o = std::make_shared<ExplainOpts>();
  auto* c = app.add_subcommand("explain", "show each kernel and which version runs at given sizes, and why");
  c->add_option("file", o->file, "the .dsc program")->required();
  c->add_option("--dim", o->dims, "SYMBOL=N: a size (repeatable; every symbol of the inputs)")->allow_extra_args(false);
  c->add_option("--func", o->func, "the function (default: @main or the only one)");
  c->add_option("--vector-width", o->vectorWidth, "as for dscc compile (default 8 on the CPU; on the GPU 16 bytes over each kernel's widest element)");
  c->add_option("--target", o->target, "cpu (default), cuda:sm_80 or cuda:sm_90");
  c->add_option("--tuning", o->tuning, "a dscc-tune file: show the range and configuration that apply");
  c->add_option("--row-schedule", o->rowSchedule, "as for dscc compile");
  addImportOptions(c, o->onnx);
  return {c, [o] { return cmdExplain(*o); }};
}

}  // namespace dscc::tools
