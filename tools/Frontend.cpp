// Shared front half of the compiling commands: parse, infer shapes, the default pipeline, kernel planning.
#include "tools/Frontend.h"

#include <sstream>

#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"
#include "codegen/gpu/GpuKernels.h"
#include "frontend/OnnxImporter.h"
#include "tuner/ApplyTuning.h"
#include "tools/CacheOptions.h"
#include "runtime/dscc_generated.h"

namespace dscc::tools {

bool streamingOption(const std::string& value, codegen::PlanOptions& out, std::ostream& err) {
  if (value.empty()) return true;
  uint64_t bytes = 0;
  if (!parseSize(value, bytes) || bytes > uint64_t(INT64_MAX)) {
    err << "dscc: error: --streaming-min '" << value << "' is not a size (e.g. 512M, 1G; 0: never)\n";
    return false;
  }
  if (out.gpu && bytes > 0) {
    err << "dscc: error: --streaming-min applies to the cpu target only\n";
    return false;
  }
  out.streamMinBytes = static_cast<int64_t>(bytes);
  return true;
}

bool targetPlanOptions(const std::string& target, int vectorWidth, const std::string& rowSchedule,
                       codegen::PlanOptions& out, std::ostream& err) {
  std::string why;
  bool gpu = target != "cpu";
  if (gpu && codegen::parseCudaTarget(target, &why).empty()) {
    err << "dscc: error: " << why << "\n";
    return false;
  }
  // On the GPU one vector block is a 128-bit access. On the CPU loop
  // kernels take blocks of 16: a loop of transcendental math is bound by
  // instructions issued, and 16 lanes are one AVX-512 register (two AVX2
  // ones), where 8 left half of each unused. Reductions keep 8: their
  // per-lane accumulators spill at 16 (2x slower; bench/results/
  // 2026-12-04-vector-width.md). A given --vector-width applies to all.
  out.vectorWidth = vectorWidth > 0 ? vectorWidth : gpu ? 4 : codegen::kCpuVectorWidth;
  out.loopVectorWidth = vectorWidth > 0 || gpu ? 0 : codegen::kCpuLoopVectorWidth;
  // The GPU's vector versions make 128-bit accesses, whatever the dtype.
  out.vectorBytes = gpu && vectorWidth <= 0 ? 16 : 0;
  out.alignedVectors = gpu;
  out.gpu = gpu;
  // Streaming versions run where a call's outputs exceed the last-level
  // cache of the machine that runs the model, which the model asks the
  // runtime; explain evaluates the guard with this machine's.
  out.streamMinBytes = gpu ? 0 : codegen::kStreamAtRunTime;
  out.streamHereBytes = dscc_stream_min_bytes();
  if (rowSchedule.empty()) return true;
  if (!gpu) {
    // The CPU's one knob: the fewest rows a column reduction is split over.
    size_t used = 0;
    long long rows = -1;
    try {
      rows = std::stoll(rowSchedule, &used);
    } catch (...) {
      used = 0;
    }
    if (used != rowSchedule.size() || rows < 0) {
      err << "dscc: error: bad --row-schedule '" << rowSchedule
          << "' for the CPU (expected ROWS: the fewest rows a column reduction is split into chunks of, "
             "0 for never; default 4096)\n";
      return false;
    }
    out.cpuSplitRowMin = rows;
    return true;
  }
  std::vector<int64_t> v;
  std::string item;
  std::istringstream in(rowSchedule);
  bool ok = true;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      long long x = std::stoll(item, &used);
      ok &= used == item.size() && x >= 1;
      v.push_back(x);
    } catch (...) {
      ok = false;
    }
  }
  if (!ok || (v.size() != 3 && v.size() != 6) || v[0] > v[1] || (v.size() == 6 && v[5] % 16 != 0)) {
    err << "dscc: error: bad --row-schedule '" << rowSchedule
        << "' (expected WARP,BLOCK,TILE[,SPLIT,ROWS,CHUNK]: the shortest row a warp reduces, the shortest a "
           "block reduces (>= WARP), the fewest rows a column tile sums; the shortest row split over blocks "
           "when there are at most ROWS rows, in chunks of CHUNK elements (a multiple of 16); "
           "e.g. the default 32,3072,64,8192,64,2048)\n";
    return false;
  }
  out.warpRowMin = v[0];
  out.blockRowMin = v[1];
  out.tileRowMin = v[2];
  if (v.size() == 6) {
    out.splitRowMin = v[3];
    out.splitMaxRows = v[4];
    out.splitChunk = v[5];
  }
  return true;
}

std::unique_ptr<Frontend> loadAndPlan(const std::string& file, const std::string& funcName,
                                      const codegen::PlanOptions& opts, std::ostream& err,
                                      const frontend::ImportOptions& onnx, const std::string& funcWhere) {
  auto fe = std::make_unique<Frontend>();
  fe->diags = std::make_unique<DiagEngine>(fe->sm, err);
  if (frontend::isOnnxPath(file)) {
    // An ONNX model is imported; its program text is what the artifact embeds.
    fe->module = frontend::importOnnxModule(file, onnx, fe->sm, *fe->diags, err);
    if (!fe->module) return nullptr;
    fe->source = fe->sm.text(fe->module->file);
  } else {
    std::string why;
    int id = fe->sm.addFile(file, &why);
    if (id < 0) {
      err << "dscc: error: " << why << "\n";
      return nullptr;
    }
    fe->source = fe->sm.text(id);
    fe->module = parseModule(fe->sm, id, *fe->diags);
    if (!fe->module || !loadFileConstants(*fe->module, *fe->diags)) return nullptr;
  }
  return planLoaded(std::move(fe), file, funcName, opts, err, funcWhere);
}

std::unique_ptr<Frontend> loadAndPlanSource(const std::string& name, const std::string& source,
                                            const std::string& sourceDir, const EmbeddedFile* embedded,
                                            const std::string& funcName, const codegen::PlanOptions& opts,
                                            std::ostream& err) {
  auto fe = std::make_unique<Frontend>();
  fe->diags = std::make_unique<DiagEngine>(fe->sm, err);
  int id = fe->sm.addBuffer(name, source);
  fe->source = source;
  fe->module = parseModule(fe->sm, id, *fe->diags);
  if (fe->module && embedded) useEmbeddedConstants(*fe->module, embedded);
  if (!fe->module || !loadFileConstants(*fe->module, *fe->diags, sourceDir)) return nullptr;
  return planLoaded(std::move(fe), name, funcName, opts, err);
}

std::unique_ptr<Frontend> planLoaded(std::unique_ptr<Frontend> fe, const std::string& file,
                                     const std::string& funcName, const codegen::PlanOptions& opts,
                                     std::ostream& err, const std::string& funcWhere) {
  PipelineOptions popts;
  bool gpu = opts.gpu;
  popts.target = gpu ? KernelTarget::Gpu : KernelTarget::Cpu;
  std::ostringstream passOut;
  fe->solvers = std::make_unique<SolverPool>(popts.solverTimeoutMs);
  if (!runPasses(*fe->module, {lookupPass("infer-shapes")}, *fe->diags, popts, passOut, fe->solvers.get()))
    return nullptr;
  fe->parsedIR = printModule(*fe->module);
  std::vector<const PassInfo*> rest;
  for (const PassInfo* p : defaultPipeline())
    if (p != lookupPass("infer-shapes")) rest.push_back(p);
  if (!runPasses(*fe->module, rest, *fe->diags, popts, passOut, fe->solvers.get())) return nullptr;
  fe->func = funcName.empty() ? fe->module->entry() : fe->module->lookup(funcName);
  if (!fe->func) {
    err << (funcWhere.empty() ? "dscc" : funcWhere) << ": error: "
        << (funcName.empty() ? "no @main and more than one function in " + file + "; choose one with --func"
                             : "no function '@" + funcName + "' in " + file)
        << "\n";
    return nullptr;
  }
  fe->solver = &fe->solvers->of(*fe->func);
  const Operation* failed = nullptr;
  if (std::string e = codegen::planModel(*fe->func, *fe->solver, opts, fe->plan, &failed); !e.empty()) {
    // At the kernel's source line when the fusion kept one (the op it grew from).
    if (failed && failed->loc.valid()) fe->diags->error(failed->loc, "cannot compile @" + fe->func->name + ": " + e);
    else err << file << ": error: cannot compile @" << fe->func->name << ": " << e << "\n";
    return nullptr;
  }
  return fe;
}

void reportCannotCompile(const Frontend& fe, const std::string& file, const std::string& error, Location loc,
                         std::ostream& err) {
  if (loc.valid()) fe.diags->error(loc, "cannot compile @" + fe.func->name + ": " + error);
  else err << "dscc: error: " << file << ": cannot compile @" << fe.func->name << ": " << error << "\n";
}

bool applyTuning(Frontend& fe, const std::string& tuning, const std::string& file, const std::string& funcName,
                 const codegen::PlanOptions& opts, std::vector<std::unique_ptr<codegen::ModelPlan>>& keep,
                 std::ostream& err) {
  // Another width's plan of the same function, with the same solver: the
  // program is parsed and its passes run once per compile, not once per
  // tuned width.
  auto planWidth = [&](int w) -> const codegen::ModelPlan* {
    codegen::PlanOptions p = opts;
    p.vectorWidth = w;
    p.loopVectorWidth = 0;  // a tuned width applies to every kernel kind
    auto plan = std::make_unique<codegen::ModelPlan>();
    const Operation* failed = nullptr;
    if (std::string e = codegen::planModel(*fe.func, *fe.solver, p, *plan, &failed); !e.empty()) {
      reportCannotCompile(fe, file, e, failed ? failed->loc : Location{}, err);
      return nullptr;
    }
    keep.push_back(std::move(plan));
    return keep.back().get();
  };
  // The base plan stands for its width only where every kernel has it.
  int baseWidth = opts.loopVectorWidth > 0 && opts.loopVectorWidth != opts.vectorWidth ? 0 : opts.vectorWidth;
  if (std::string e = tuner::loadTuning(tuning, *fe.solver, fe.plan, baseWidth, planWidth, err); !e.empty()) {
    err << e << "\n";
    return false;
  }
  return true;
}

}  // namespace dscc::tools
