// `dscc explain`: the kernels of a program and which version of each runs at given sizes, with the guard values that decided it.
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "codegen/gpu/GpuKernels.h"
#include "codegen/LibraryPlan.h"
#include "ir/Sizes.h"
#include "tools/Commands.h"
#include "tools/DimArgs.h"
#include "tools/Explain.h"
#include "tools/ToolMain.h"
#include "tools/Session.h"

namespace dscc::tools {
namespace {

struct ExplainOpts {
  std::string file, func, target = "cpu", tuning, rowSchedule, streamingMin;
  codegen::PlanOptions::GenericVector genericVector = codegen::PlanOptions::GenericVector::Auto;
  std::vector<std::string> dims;
  int vectorWidth = 0;
  std::shared_ptr<frontend::ImportOptions> onnx = std::make_shared<frontend::ImportOptions>();
  std::shared_ptr<SessionReport> report = std::make_shared<SessionReport>();
};

int cmdExplain(const ExplainOpts& o) {
  codegen::PlanOptions popts;
  bool gpu = o.target != "cpu";
  if (!targetPlanOptions(o.target, o.vectorWidth, o.rowSchedule, popts, std::cerr)) return 1;
  if (!streamingOption(o.streamingMin, popts, std::cerr)) return kUsageError;
  popts.genericVector = o.genericVector;
  if (!checkSessionReport(*o.report, "dscc", std::cerr)) return kUsageError;
  auto fe = loadAndPlan(o.file, o.func, popts, std::cerr, *o.onnx, "", *o.report);
  if (!fe) return 1;
  struct Timings {  // printed however the command ends (--time-passes)
    const Session& s;
    ~Timings() { s.printTimings("dscc", std::cerr); }
  } timings{*fe};
  std::vector<std::unique_ptr<codegen::ModelPlan>> tunedPlans;  // other vector widths, alive while fe's plan points into them
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
  if (int st = checkExplainSizes(f, env, *fe->diags)) return st;
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
  for (const KernelExplain& k : explainKernels(fe->plan, &env)) std::cout << k.text;
  return 0;
}

}  // namespace

Command addExplainCommand(CLI::App& app) {
  auto o = std::make_shared<ExplainOpts>();
  auto* c = app.add_subcommand("explain", "show each kernel and which version runs at given sizes, and why");
  c->add_option("file", o->file, "the .dsc program or ONNX model (.onnx)")->required();
  c->add_option("--dim", o->dims, "SYMBOL=N: a size (repeatable; every symbol of the inputs)")->allow_extra_args(false);
  c->add_option("--func", o->func, "the function (default: @main or the only one)");
  c->add_option("--vector-width", o->vectorWidth, "as for dscc compile (default on the CPU: 16 for loop kernels, 8 for reductions; on the GPU 16 bytes over each kernel's widest element)");
  c->add_option("--target", o->target, "cpu (default), cuda:sm_80 or cuda:sm_90");
  c->add_option("--tuning", o->tuning, "a dscc-tune file: show the range and configuration that apply");
  c->add_option("--streaming-min", o->streamingMin, "as for dscc compile");
  addGenericVectorFlags(c, o->genericVector);
  c->add_option("--row-schedule", o->rowSchedule, "as for dscc compile");
  addImportOptions(c, o->onnx);
  addSessionReportFlags(c, o->report);
  return {c, [o] { return cmdExplain(*o); }};
}

}  // namespace dscc::tools
