// `dscc view MODEL -o model.html`: the program as a Graphviz-drawn graph of its kernels, versions and guards (at --dim sizes), coloured by a profile.
#include <dlfcn.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "codegen/LibraryPlan.h"
#include "tools/Commands.h"
#include "tools/DimArgs.h"
#include "tools/ToolMain.h"
#include "tools/View.h"

namespace dscc::tools {
namespace {

struct ViewOpts {
  std::string file, out, func, profile, tuning, target = "cpu";
  std::vector<std::string> dims;
  int detailLimit = 3000;
  int vectorWidth = 0;
  std::shared_ptr<frontend::ImportOptions> onnx = std::make_shared<frontend::ImportOptions>();
  std::shared_ptr<SessionReport> report = std::make_shared<SessionReport>();
};

void error(const std::string& msg) { std::cerr << "dscc: error: " << msg << "\n"; }

// A dlopen'ed compiled model, closed when done.
struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle) dlclose(handle);
  }
};

bool isSharedLibrary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// A compiled model's program, read back from the text it embeds (as `dscc run --check` does) and planned again.
std::unique_ptr<Session> loadCompiled(const ViewOpts& o, Library& lib) {
  lib.handle = dlopen(std::filesystem::absolute(o.file).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    const char* why = dlerror();
    error("cannot load '" + o.file + "': " + (why ? why : "unknown dlopen error"));
    return nullptr;
  }
  auto* source = static_cast<const char*>(dlsym(lib.handle, "dscc_model_source"));
  auto* entry = static_cast<const char*>(dlsym(lib.handle, "dscc_model_entry"));
  if (!source || !entry) {
    error("'" + o.file + "' is not a dscc model (it has no dscc_model_source or dscc_model_entry); build one with "
          "`dscc compile`");
    return nullptr;
  }
  if (!o.func.empty() && o.func != entry) {
    error("'" + o.file + "' was compiled for '@" + entry + "', not '@" + o.func + "'");
    return nullptr;
  }
  std::string target = "cpu";
  if (auto* t = static_cast<const char*>(dlsym(lib.handle, "dscc_model_target"))) target = t;
  codegen::PlanOptions popts;
  if (!targetPlanOptions(target, 0, "", popts, std::cerr)) return nullptr;
  auto* sourceDir = static_cast<const char*>(dlsym(lib.handle, "dscc_model_source_dir"));
  auto* embedded = static_cast<const EmbeddedFile*>(dlsym(lib.handle, "dscc_model_file_constants"));
  return loadAndPlanSource(o.file + " (its embedded dscc_model_source)", source, sourceDir ? sourceDir : "", embedded,
                           entry, popts, std::cerr);
}

// Where a node of prof.json is, for messages: FILE:LINE:COL.
std::string at(const std::string& file, const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// Reads a `dscc run --profile-out` file into v.times; false after a located error.
bool readProfile(const std::string& file, ViewModel& v) {
  YAML::Node root;
  try {
    // JSON is YAML; yaml-cpp's reader gives line and column on a syntax error.
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      error("--profile " + file + ": cannot read: " + std::strerror(errno));
      return false;
    }
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    std::cerr << file << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": error: not a profile (JSON): "
              << e.msg << "\n";
    return false;
  }
  auto bad = [&](const YAML::Node& n, const std::string& what) {
    std::cerr << (n.IsDefined() && !n.IsNull() ? at(file, n) : file) << ": error: " << what
              << " (expected the JSON of `dscc run --profile-out`)\n";
    return false;
  };
  if (!root.IsMap() || !root["dscc_profile"]) return bad(root, "not a dscc profile: no \"dscc_profile\" key");
  YAML::Node kernels = root["kernels"];
  if (!kernels.IsSequence()) return bad(kernels.IsDefined() ? kernels : root, "\"kernels\" must be a list");
  std::set<std::string> symbols;
  for (const auto& k : v.fe->plan.kernels) symbols.insert(k.symbol);
  int64_t total = 0;
  try {
    for (const YAML::Node& k : kernels) {
      if (!k.IsMap() || !k["name"] || !k["name"].IsScalar()) return bad(k, "each kernel needs a \"name\"");
      std::string name = k["name"].as<std::string>();
      if (!k["total_ns"] || !k["calls"]) return bad(k, "kernel '" + name + "' needs \"total_ns\" and \"calls\"");
      int64_t ns = k["total_ns"].as<int64_t>(), calls = k["calls"].as<int64_t>();
      if (ns < 0 || calls < 0) return bad(k, "kernel '" + name + "' has a negative time or call count");
      if (!symbols.count(name))
        return bad(k["name"], "'" + name + "' is not a kernel of @" + v.fe->func->name +
                                  " (was the profile made from another model?)");
      KernelTime& t = v.times[name];
      t.ns += ns;
      t.calls = std::max(t.calls, calls);
      total += ns;
    }
  } catch (const YAML::Exception& e) {
    std::cerr << file << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": error: " << e.msg
              << " (a time or count that is not an integer)\n";
    return false;
  }
  v.profileTotalNs = total;
  v.profileFile = file;
  return true;
}

int cmdView(const ViewOpts& o) {
  if (o.out.empty()) {
    error("give the page's file with -o FILE.html");
    return kUsageError;
  }
  std::error_code ec;
  if (!std::filesystem::exists(o.file, ec)) {
    error(o.file + ": no such file");
    return 1;
  }
  Library lib;
  std::unique_ptr<Session> fe;
  std::vector<std::unique_ptr<codegen::ModelPlan>> tunedPlans;  // other vector widths, alive while fe's plan points into them
  bool compiled = isSharedLibrary(o.file);
  if (compiled && (!o.tuning.empty() || o.vectorWidth != 0)) {
    error(std::string(o.tuning.empty() ? "--vector-width" : "--tuning") +
          " applies to a .dsc or .onnx; a compiled model's options were fixed when it was compiled");
    return kUsageError;
  }
  if (compiled) {
    fe = loadCompiled(o, lib);
  } else {
    codegen::PlanOptions popts;
    if (!targetPlanOptions(o.target, o.vectorWidth, "", popts, std::cerr)) return kUsageError;
    if (!checkSessionReport(*o.report, "dscc", std::cerr)) return kUsageError;
    fe = loadAndPlan(o.file, o.func, popts, std::cerr, *o.onnx, "", *o.report);
    if (fe) fe->printTimings("dscc", std::cerr);
    if (fe && !o.tuning.empty()) {
      if (o.target != "cpu") {
        error("--tuning applies to the cpu target only");
        return kUsageError;
      }
      // As `dscc explain --tuning`: each tuned kernel's range picks its configuration.
      if (!applyTuning(*fe, o.tuning, o.file, o.func, popts, tunedPlans, std::cerr)) return 1;
    }
  }
  if (!fe) return 1;
  const Function& f = *fe->func;
  DimBindings env;
  if (std::string err; !parseDimArgs(o.dims, f, env, err)) {
    error(err);
    return kUsageError;
  }
  // As `dscc explain`: versions are chosen only at sizes for every input symbol that the facts allow.
  if (!o.dims.empty())
    if (int st = checkExplainSizes(f, env, *fe->diags)) return st;
  ViewModel v;
  v.model = o.file;
  v.fe = fe.get();
  v.sizes = o.dims.empty() ? nullptr : &env;
  v.kernels = explainKernels(fe->plan, v.sizes);
  if (!o.profile.empty() && !readProfile(o.profile, v)) return 1;
  size_t ops = 0;
  walkOps(f.ops, [&](Operation&) { ++ops; });
  std::string err;
  std::string collapsed = layoutSvg(v, true, err);
  if (collapsed.empty()) {
    error(err);
    return 1;
  }
  // Op by op only while dot can lay it out in reasonable time; the kernel view always exists.
  std::string detailed = int(ops) <= o.detailLimit ? layoutSvg(v, false, err) : "";
  if (int(ops) <= o.detailLimit && detailed.empty()) {
    error(err);
    return 1;
  }
  std::string page = viewPage(v, detailed, collapsed);
  std::ofstream out(o.out, std::ios::binary);
  if (out) out << page;
  if (!out || !out.flush()) {
    error("-o " + o.out + ": cannot write: " + std::strerror(errno));
    return 1;
  }
  std::cout << "wrote " << o.out << ": @" << f.name << ", " << v.kernels.size() << " kernels, " << ops << " ops"
            << (detailed.empty() ? " (too many to draw op by op: kernels only)" : "") << "\n";
  return 0;
}

}  // namespace

Command addViewCommand(CLI::App& app) {
  auto o = std::make_shared<ViewOpts>();
  auto* c = app.add_subcommand("view", "write the program as an HTML page: its kernels, versions and guards as a graph "
                                       "(Graphviz), the version that runs at --dim sizes, times from --profile");
  c->add_option("file", o->file, "the .dsc program, ONNX model (.onnx) or compiled model (.so)")->required();
  c->add_option("-o,--output", o->out, "the HTML file to write (self-contained: no network needed)");
  c->add_option("--dim", o->dims, "SYMBOL=N: mark the versions that run at these sizes, as `dscc explain` "
                                  "(repeatable; every symbol of the inputs)")
      ->allow_extra_args(false);
  c->add_option("--profile", o->profile, "a `dscc run --profile-out` file: colour kernels by their share of the time");
  c->add_option("--func", o->func, "the function (default: @main or the only one)");
  c->add_option("--vector-width", o->vectorWidth, "for a .dsc or .onnx: as for dscc compile (default on the CPU: 16 for loop kernels, 8 for reductions)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--tuning", o->tuning, "a dscc-tune file (for a .dsc or .onnx): mark the configuration and version "
                                       "it selects, as `dscc explain --tuning`");
  c->add_option("--target", o->target, "for a .dsc or .onnx: cpu (default), cuda:sm_80 or cuda:sm_90 (a .so's own)");
  c->add_option("--detail-limit", o->detailLimit,
                "draw ops inside their fusion groups up to this many ops (default 3000); larger models get the "
                "kernel view only")
      ->check(CLI::NonNegativeNumber);
  addImportOptions(c, o->onnx);
  addSessionReportFlags(c, o->report);
  return {c, [o] { return cmdView(*o); }};
}

}  // namespace dscc::tools
