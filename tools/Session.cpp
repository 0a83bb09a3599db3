// The compile session: read or import, infer shapes, the default pipeline, kernel planning, timed and reported alike for every command.
#include "tools/Session.h"

#include <cstdio>
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

void addGenericVectorFlags(CLI::App* cmd, codegen::PlanOptions::GenericVector& out) {
  using GV = codegen::PlanOptions::GenericVector;
  auto* on = cmd->add_flag_callback("--generic-vector", [&out] { out = GV::On; },
                                    "CPU: every generic kernel gets a vector version (rows in blocks of 16 lanes from "
                                    "the element generator, a scalar tail); by default only those with short rows "
                                    "(one or two whole blocks), where LLVM's own widening leaves them scalar");
  auto* off = cmd->add_flag_callback("--no-generic-vector", [&out] { out = GV::Off; },
                                     "CPU: no generic kernel gets a vector version");
  on->excludes(off);
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

void addSessionReportFlags(CLI::App* cmd, const std::shared_ptr<SessionReport>& r) {
  cmd->add_flag("--time-passes", r->timePasses, "print the time of each pass and stage (reading, planning, code) on stderr");
  cmd->add_option("--print-ir-after", r->printAfter, "print the IR after pass NAME on stderr (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--print-ir-after-all", r->printAfterAll, "print the IR after every pass on stderr");
  cmd->add_flag("--fusion-remarks", r->fusionRemarks,
                "fuse: record in each kernel why producers were not fused (seen in the IR printed)");
}

std::vector<std::string> sessionReportArgs(const SessionReport& r) {
  std::vector<std::string> args;
  if (r.timePasses) args.push_back("--time-passes");
  if (r.printAfterAll) args.push_back("--print-ir-after-all");
  for (const std::string& n : r.printAfter) args.push_back("--print-ir-after=" + n);
  if (r.fusionRemarks) args.push_back("--fusion-remarks");
  return args;
}

bool checkSessionReport(const SessionReport& r, const std::string& tool, std::ostream& err) {
  for (const std::string& n : r.printAfter)
    if (!lookupPass(n)) {
      err << tool << ": error: --print-ir-after: unknown pass '" << n << "' (`dscc-opt --list-passes` lists them)\n";
      return false;
    }
  return true;
}

void Session::printTimings(const std::string& tool, std::ostream& os) const {
  if (!report.timePasses) return;
  double total = 0;
  for (const auto& [name, ms] : timings) total += ms;
  char buf[256];
  for (const auto& [name, ms] : timings) {
    std::snprintf(buf, sizeof buf, "%s: time: %10.3f ms  %s\n", tool.c_str(), ms, name.c_str());
    os << buf;
  }
  std::snprintf(buf, sizeof buf, "%s: time: %10.3f ms  total\n", tool.c_str(), total);
  os << buf;
}

namespace {

// Runs `passes` on the session's module, each its own timed stage, with the
// report's printing; the pass output goes to stderr.
bool runSessionPasses(Session& s, const std::vector<const PassInfo*>& passes, KernelTarget target) {
  PipelineOptions popts;
  popts.target = target;
  popts.printAfterAll = s.report.printAfterAll;
  popts.printAfter = s.report.printAfter;
  popts.fusionRemarks = s.report.fusionRemarks;
  if (!s.solvers) s.solvers = std::make_unique<SolverPool>(popts.solverTimeoutMs);
  for (const PassInfo* p : passes)
    if (!s.stage(p->name, [&] { return runPasses(*s.module, {p}, *s.diags, popts, std::cerr, s.solvers.get()); }))
      return false;
  return true;
}

// Shape analysis of a freshly read module, and the text `--emit=ir` writes.
std::unique_ptr<Session> analyse(std::unique_ptr<Session> s) {
  // The target does not matter to infer-shapes (only fuse asks it).
  if (!runSessionPasses(*s, {lookupPass("infer-shapes")}, KernelTarget::Cpu)) return nullptr;
  s->parsedIR = printModule(*s->module);
  return s;
}

}  // namespace

std::unique_ptr<Session> loadProgram(const std::string& file, std::ostream& err, const frontend::ImportOptions& onnx,
                                     const SessionReport& report, frontend::Imported* names) {
  auto s = std::make_unique<Session>();
  s->report = report;
  s->diags = std::make_unique<DiagEngine>(s->sm, err);
  if (frontend::isOnnxPath(file)) {
    // An ONNX model is imported; its program text is what the artifact embeds.
    s->module = s->stage("import", [&] { return frontend::importOnnxModule(file, onnx, s->sm, *s->diags, err, names); });
    if (!s->module) return nullptr;
    s->source = s->sm.text(s->module->file);
  } else {
    std::string why;
    bool ok = s->stage("parse", [&] {
      int id = s->sm.addFile(file, &why);
      if (id < 0) {
        err << "dscc: error: " << why << "\n";
        return false;
      }
      s->source = s->sm.text(id);
      s->module = parseModule(s->sm, id, *s->diags);
      return s->module && loadFileConstants(*s->module, *s->diags);
    });
    if (!ok) return nullptr;
  }
  return analyse(std::move(s));
}

std::unique_ptr<Session> loadAndPlan(const std::string& file, const std::string& funcName,
                                      const codegen::PlanOptions& opts, std::ostream& err,
                                      const frontend::ImportOptions& onnx, const std::string& funcWhere,
                                      const SessionReport& report) {
  auto s = loadProgram(file, err, onnx, report);
  if (!s || !planProgram(*s, file, funcName, opts, err, funcWhere)) return nullptr;
  return s;
}

std::unique_ptr<Session> loadAndPlanSource(const std::string& name, const std::string& source,
                                            const std::string& sourceDir, const EmbeddedFile* embedded,
                                            const std::string& funcName, const codegen::PlanOptions& opts,
                                            std::ostream& err) {
  auto s = std::make_unique<Session>();
  s->diags = std::make_unique<DiagEngine>(s->sm, err);
  int id = s->sm.addBuffer(name, source);
  s->source = source;
  s->module = parseModule(s->sm, id, *s->diags);
  if (s->module && embedded) useEmbeddedConstants(*s->module, embedded);
  if (!s->module || !loadFileConstants(*s->module, *s->diags, sourceDir)) return nullptr;
  s = analyse(std::move(s));
  if (!s || !planProgram(*s, name, funcName, opts, err)) return nullptr;
  return s;
}

bool planProgram(Session& s, const std::string& file, const std::string& funcName, const codegen::PlanOptions& opts,
                 std::ostream& err, const std::string& funcWhere) {
  std::vector<const PassInfo*> rest;
  for (const PassInfo* p : defaultPipeline())
    if (p != lookupPass("infer-shapes")) rest.push_back(p);
  // The file constants as read, before a pass can drop one (the artifact embeds them all: ModelPlan::sourceFiles).
  std::vector<std::pair<std::string, std::shared_ptr<const Tensor>>> sourceFiles;
  for (const auto& f : s.module->funcs)
    walkOps(f->ops, [&](Operation& op) {
      const Attribute* v = op.kind == OpKind::Constant ? op.attr("value") : nullptr;
      if (v && v->kind == Attribute::Kind::File && v->data) sourceFiles.emplace_back(v->s, v->data);
    });
  if (!runSessionPasses(s, rest, opts.gpu ? KernelTarget::Gpu : KernelTarget::Cpu)) return false;
  s.func = funcName.empty() ? s.module->entry() : s.module->lookup(funcName);
  if (!s.func) {
    err << (funcWhere.empty() ? "dscc" : funcWhere) << ": error: "
        << (funcName.empty() ? "no @main and more than one function in " + file + "; choose one with --func"
                             : "no function '@" + funcName + "' in " + file)
        << "\n";
    return false;
  }
  s.solver = &s.solvers->of(*s.func);
  const Operation* failed = nullptr;
  std::string e = s.stage("plan kernels", [&] { return codegen::planModel(*s.func, *s.solver, opts, s.plan, &failed); });
  s.plan.sourceFiles = std::move(sourceFiles);
  if (!e.empty()) {
    // At the kernel's source line when the fusion kept one (the op it grew from).
    if (failed && failed->loc.valid()) s.diags->error(failed->loc, "cannot compile @" + s.func->name + ": " + e);
    else err << file << ": error: cannot compile @" << s.func->name << ": " << e << "\n";
    return false;
  }
  return true;
}

void reportCannotCompile(const Session& fe, const std::string& file, const std::string& error, Location loc,
                         std::ostream& err) {
  if (loc.valid()) fe.diags->error(loc, "cannot compile @" + fe.func->name + ": " + error);
  else err << "dscc: error: " << file << ": cannot compile @" << fe.func->name << ": " << error << "\n";
}

bool applyTuning(Session& fe, const std::string& tuning, const std::string& file, const std::string& funcName,
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
