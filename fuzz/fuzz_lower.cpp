// libFuzzer target: planning and lowering, as `dscc compile -c` does, to an ELF object in memory.
//
// parse -> verify -> infer-shapes -> the default pipeline (with the
// planner's legality check) -> planModel -> emitModel (kernels + host code,
// with --check-bounds for odd-length inputs) -> the LLVM verifier and -O1 ->
// machine code. A refusal anywhere before the LLVM module exists is fine (an
// error, not a bug); a module that the LLVM verifier rejects, or machine
// code that cannot be emitted, is a bug in code generation and aborts, so
// the fuzzer reports it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "codegen/HostCodegen.h"
#include "codegen/Jit.h"
#include "codegen/ModelPlan.h"
#include "codegen/ObjectEmitter.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/ShapeSolver.h"
#include "passes/Pipeline.h"

using namespace dscc;

namespace {

[[noreturn]] void codegenBug(const char* stage, const std::string& why) {
  std::fprintf(stderr, "fuzz_lower: %s failed on a planned program:\n%s\n", stage, why.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Long inputs only slow the solver and LLVM down without reaching new code.
  if (size > 4096) return 0;
  SourceMgr sm;
  std::ostringstream out;
  DiagEngine diags(sm, out);
  int id = sm.addBuffer("fuzz.dsc", std::string(reinterpret_cast<const char*>(data), size));
  auto m = parseModule(sm, id, diags);
  if (!m) return 0;
  // File constants are never loaded here (a fuzzed path could name any file):
  // emitModel refuses them ("was not loaded"), which is a refusal like any other.
  PipelineOptions popts;
  popts.solverTimeoutMs = 50;  // a hard query is cut short, as --solver-timeout would
  std::vector<const PassInfo*> passes = {lookupPass("infer-shapes")};
  for (const PassInfo* p : defaultPipeline())
    if (p != passes[0]) passes.push_back(p);
  if (!runPasses(*m, passes, diags, popts, out)) return 0;
  Function* f = m->entry();
  if (!f) return 0;

  auto solver = codegen::makeModelSolver(*f);
  codegen::PlanOptions opts;  // the CPU's: vector width 8, index32 and broadcast-free versions
  codegen::ModelPlan plan;
  if (!codegen::planModel(*f, *solver, opts, plan).empty()) return 0;
  // Half the inputs (odd lengths) also get --check-bounds, so its instrumentation meets the verifier too.
  plan.checkBounds = size % 2 == 1;

  codegen::CodeModule cm(f->name);
  codegen::ExternalData weights;
  if (!codegen::emitModel(plan, std::string(reinterpret_cast<const char*>(data), size), cm, nullptr, "", &weights)
           .empty())
    return 0;
  codegen::ObjectOptions obj;
  obj.optLevel = 1;
  obj.cpu = "x86-64-v3";  // fixed, so a crash reproduces on any machine
  if (std::string e = codegen::optimizeModule(cm, obj); !e.empty()) codegenBug("the LLVM verifier", e);
  std::string object;
  if (std::string e = codegen::emitMachineCode(cm, obj, false, object); !e.empty())
    codegenBug("machine code emission", e);
  if (object.size() < 4 || object.compare(0, 4, "\x7f" "ELF") != 0) codegenBug("machine code emission", "not an ELF object");
  return 0;
}
