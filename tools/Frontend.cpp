// Shared front half of the compiling commands: parse, infer shapes, the default pipeline, kernel planning.
#include "tools/Frontend.h"

#include <sstream>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"
#include "tuner/ApplyTuning.h"

namespace dscc::tools {

std::unique_ptr<Frontend> loadAndPlan(const std::string& file, const std::string& funcName,
                                      const codegen::PlanOptions& opts, std::ostream& err) {
  auto fe = std::make_unique<Frontend>();
  fe->diags = std::make_unique<DiagEngine>(fe->sm, err);
  std::string why;
  int id = fe->sm.addFile(file, &why);
  if (id < 0) {
    err << "dscc: error: " << why << "\n";
    return nullptr;
  }
  fe->source = fe->sm.text(id);
  fe->module = parseModule(fe->sm, id, *fe->diags);
  if (!fe->module) return nullptr;
  PipelineOptions popts;
  std::ostringstream passOut;
  if (!runPasses(*fe->module, {lookupPass("infer-shapes")}, *fe->diags, popts, passOut)) return nullptr;
  fe->parsedIR = printModule(*fe->module);
  std::vector<const PassInfo*> rest;
  for (const PassInfo* p : defaultPipeline())
    if (p != lookupPass("infer-shapes")) rest.push_back(p);
  if (!runPasses(*fe->module, rest, *fe->diags, popts, passOut)) return nullptr;
  fe->func = funcName.empty() ? fe->module->entry() : fe->module->lookup(funcName);
  if (!fe->func) {
    err << "dscc: error: "
        << (funcName.empty() ? "no @main and more than one function in " + file + "; choose one with --func"
                             : "no function '@" + funcName + "' in " + file)
        << "\n";
    return nullptr;
  }
  fe->solver = codegen::makeModelSolver(*fe->func);
  if (std::string e = codegen::planModel(*fe->func, *fe->solver, opts, fe->plan); !e.empty()) {
    err << file << ": error: cannot compile @" << fe->func->name << ": " << e << "\n";
    return nullptr;
  }
  return fe;
}

bool applyTuning(Frontend& fe, const std::string& tuning, const std::string& file, const std::string& funcName,
                 const codegen::PlanOptions& opts, std::vector<std::unique_ptr<Frontend>>& keep, std::ostream& err) {
  auto planWidth = [&](int w) -> const codegen::ModelPlan* {
    codegen::PlanOptions p = opts;
    p.vectorWidth = w;
    keep.push_back(loadAndPlan(file, funcName, p, err));
    return keep.back() ? &keep.back()->plan : nullptr;
  };
  if (std::string e = tuner::loadTuning(tuning, *fe.solver, fe.plan, opts.vectorWidth, planWidth, err); !e.empty()) {
    err << e << "\n";
    return false;
  }
  return true;
}

}  // namespace dscc::tools
