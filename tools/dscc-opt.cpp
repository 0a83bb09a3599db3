// dscc-opt: parse, verify, run passes one at a time and print the IR (for lit tests).
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/ModelPlan.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/DefaultPipeline.h"
#include "passes/Fuse.h"
#include "passes/Pipeline.h"
#include "tools/ToolMain.h"

using namespace dscc;

namespace {

// Splits on lines `// -----`, keeping line numbers: each chunk is the whole
// file with the other chunks blanked out.
std::vector<std::string> splitInput(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t start = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("// -----", 0) == 0) {
      ranges.push_back({start, i});
      start = i + 1;
    }
  ranges.push_back({start, lines.size()});
  std::vector<std::string> chunks;
  for (auto [b, e] : ranges) {
    std::string c;
    for (size_t i = 0; i < lines.size(); ++i) c += (i >= b && i < e ? lines[i] : "") + "\n";
    chunks.push_back(c);
  }
  return chunks;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dscc-opt: parse, verify and transform dscc IR, one pass at a time"};
  std::string input = "-", output = "-";
  std::vector<std::string> passNames, printAfter;
  bool verifyDiags = false, split = false, listPasses = false;
  PipelineOptions opts;
  // Kernels are planned for the cpu, as `dscc compile` does by default.
  app.add_option("file", input, "input .dsc file ('-' for stdin)");
  app.add_option("--pass", passNames, "run pass NAME (repeatable, in order)")->allow_extra_args(false);
  app.add_option("-o", output, "output file (default: stdout)");
  app.add_flag("--verify-diagnostics", verifyDiags,
               "check diagnostics against expected-error/-warning/-note comments");
  app.add_flag("--split-input-file", split, "treat '// -----' lines as separators of independent inputs");
  app.add_flag("--print-ir-after-all", opts.printAfterAll, "print the IR after every pass");
  app.add_option("--print-ir-after", opts.printAfter, "print the IR after pass NAME")->allow_extra_args(false);
  app.add_flag("--time-passes", opts.timePasses, "print the time each pass took");
  app.add_flag("--list-passes", listPasses, "list the passes and exit");
  app.add_flag("--print-shape-facts", opts.printShapeFacts,
               "infer-shapes: print equivalence classes, facts and run-time checks");
  bool kernelCount = false, useDefault = false;
  app.add_flag("--default-pipeline", useDefault, "run the pipeline of `dscc compile` (after any --pass)");
  app.add_flag("--fusion-remarks", opts.fusionRemarks, "fuse: record in each kernel why producers were not fused");
  app.add_flag("--print-kernel-count", kernelCount, "after the passes, print the kernels of each function");
  app.add_flag("--stats", opts.stats, "print pass counters (solver queries, cache hits, Z3 time)");
  app.add_option("--solver-timeout-ms", opts.solverTimeoutMs, "CPU time limit of each Z3 check in ms (default 250)");
  tools::addVersionFlag(app, "dscc-opt");
  std::vector<std::string> args = tools::reversedArgs(argc, argv);
  if (int rc = tools::parseCommandLine(app, "dscc-opt", args); rc >= 0) return rc;

  if (listPasses) {
    for (const auto& p : allPasses()) std::cout << p.name << "  " << p.summary << "\n";
    return 0;
  }
  std::vector<const PassInfo*> passes;
  for (const auto& n : passNames) {
    const PassInfo* p = lookupPass(n);
    if (!p) {
      std::cerr << "dscc-opt: error: unknown pass '" << n << "' (see --list-passes)\n";
      return 1;
    }
    passes.push_back(p);
  }

  if (useDefault)
    for (const PassInfo* p : defaultPipeline()) passes.push_back(p);

  std::string text;
  if (input == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    // A regular file of bounded size only (/dev/zero would be read forever).
    std::string why;
    if (!readRegularFile(input, text, &why)) {
      std::cerr << "dscc-opt: error: " << why << "\n";
      return 1;
    }
  }

  std::ostringstream out;
  bool allOk = true;
  SourceMgr sm;
  DiagEngine diags(sm, std::cerr);
  diags.setCapture(verifyDiags);
  std::vector<std::string> chunks = split ? splitInput(text) : std::vector<std::string>{text};
  for (size_t i = 0; i < chunks.size(); ++i) {
    int id = sm.addBuffer(input == "-" ? "<stdin>" : input, chunks[i]);
    int before = diags.errorCount();
    auto m = parseModule(sm, id, diags);
    if (m && runPasses(*m, passes, diags, opts, out) && !verifyDiags) {
      if (i) out << "// -----\n";
      if (kernelCount) printKernelCount(*m, out);
      out << printModule(*m);
    }
    if (verifyDiags) {
      allOk &= verifyExpectedDiagnostics(diags, id, std::cerr);
      diags.clearCaptured();
    } else {
      allOk &= diags.errorCount() == before;
    }
  }
  if (verifyDiags) return allOk ? 0 : 1;
  if (output == "-") {
    std::cout << out.str();
  } else {
    std::ofstream of(output, std::ios::binary);
    if (!of) {
      std::cerr << "dscc-opt: error: cannot write '" << output << "'\n";
      return 1;
    }
    of << out.str();
  }
  return allOk ? 0 : 1;
}
