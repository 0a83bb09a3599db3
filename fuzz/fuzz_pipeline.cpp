// libFuzzer target: shape analysis (infer-shapes, with Z3) and the default pipeline on any program that parses.
#include <cstdint>
#include <sstream>
#include <string>

#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"

using namespace dscc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Long inputs only slow the solver down without reaching new code.
  if (size > 4096) return 0;
  SourceMgr sm;
  std::ostringstream out;
  DiagEngine diags(sm, out);
  int id = sm.addBuffer("fuzz.dsc", std::string(reinterpret_cast<const char*>(data), size));
  auto m = parseModule(sm, id, diags);
  if (!m) return 0;
  PipelineOptions opts;
  opts.solverTimeoutMs = 50;  // a hard query is cut short, as --solver-timeout would
  opts.fusionRemarks = true;
  std::vector<const PassInfo*> passes = {lookupPass("infer-shapes")};
  for (const PassInfo* p : defaultPipeline()) passes.push_back(p);
  runPasses(*m, passes, diags, opts, out);
  return 0;
}
