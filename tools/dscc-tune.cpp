// dscc-tune: measures a model's kernels over a shape distribution and writes per-range configurations (docs/tuning.md); `merge` joins shards.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "codegen/ObjectEmitter.h"
#include "tools/CacheOptions.h"
#include "tools/Commands.h"
#include "tools/Session.h"
#include "tools/ToolMain.h"
#include "tuner/ShapeDistribution.h"
#include "tuner/Tuner.h"
#include "tuner/TuningTable.h"

using namespace dscc;

namespace {

std::atomic<bool> gInterrupted{false};

extern "C" void onSigint(int) {
  gInterrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

std::string baseName(const std::string& p) {
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(" \t", c + 1));
    }
  return "unknown";
}

// `30s`, `5m`, `1h` or plain seconds.
bool parseBudget(const std::string& s, double& seconds) {
  std::smatch m;
  if (!std::regex_match(s, m, std::regex(R"(([0-9]+(?:\.[0-9]+)?)\s*(s|m|h)?)"))) return false;
  seconds = std::stod(m[1]) * (m[2] == "m" ? 60 : m[2] == "h" ? 3600 : 1);
  return true;
}

bool writeFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out || !(out << text)) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string ns(double v) {
  char buf[64];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.3f ms", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.2f us", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f ns", v);
  return buf;
}

void printSummary(const tuner::TuningFile& t, std::ostream& os) {
  auto line = [&](const std::string& name, const tuner::Expectation& e) {
    double regret = e.oracle > 0 ? 100.0 * (e.tuned - e.oracle) / e.oracle : 0;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%", regret);
    os << name << ": tuned " << ns(e.tuned) << ", best single " << ns(e.bestSingle) << ", untuned " << ns(e.defaults)
       << ", oracle " << ns(e.oracle) << " (regret " << pct << ")\n";
  };
  for (const tuner::KernelTuning& k : t.kernels) {
    if (k.measurements.empty()) continue;
    line("kernel " + std::to_string(k.index) + " " + k.symbol + " (" + std::to_string(k.measurements.size()) + "/" +
             std::to_string(k.pointsTotal) + " sizes, " + std::to_string(k.ranges.size()) + " ranges)",
         k.expect);
  }
  line("model @" + t.func, t.expect);
}

int runMerge(int argc, char** argv) {
  CLI::App app{"dscc-tune merge: join tuning files (shards) of one model into one table"};
  std::vector<std::string> inputs;
  std::string output;
  app.add_option("files", inputs, "tuning files to merge")->required();
  app.add_option("-o", output, "the merged tuning file")->required();
  tools::addVersionFlag(app, "dscc-tune");
  std::vector<std::string> args = tools::reversedArgs(argc - 1, argv + 1);
  if (int rc = tools::parseCommandLine(app, "dscc-tune", args); rc >= 0) return rc;
  std::vector<tuner::TuningFile> files;
  for (const std::string& f : inputs) {
    tuner::TuningFile t;
    std::string err;
    if (!tuner::readTuning(f, t, err)) {
      std::cerr << err << "\n";
      return 1;
    }
    files.push_back(std::move(t));
  }
  tuner::TuningFile merged;
  std::string err;
  if (!tuner::mergeTunings(files, merged, err)) {
    std::cerr << "dscc-tune: error: " << err << "\n";
    return 1;
  }
  if (!writeFile(output, tuner::writeTuning(merged))) {
    std::cerr << "dscc-tune: error: cannot write " << output << "\n";
    return 1;
  }
  printSummary(merged, std::cout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "merge") return runMerge(argc, argv);
  CLI::App app{"dscc-tune: tune a model's kernels over a shape distribution (docs/tuning.md)\n"
               "  dscc-tune merge A.yaml B.yaml ... -o T.yaml  joins shards"};
  std::string file, shapes, output, budget = "5m", target = "cpu", shard, func;
  int maxVersions = 3, threads = 0;
  int64_t seed = -1, maxMiB = 4096;
  bool fakeTimer = false, listPoints = false;
  app.add_option("model", file, "the .dsc program or .onnx model")->required();
  auto onnx = std::make_shared<frontend::ImportOptions>();
  tools::addImportOptions(&app, onnx);
  auto report = std::make_shared<tools::SessionReport>();
  tools::addSessionReportFlags(&app, report);
  app.add_option("--shapes", shapes, "the shape distribution (YAML, docs/tuning.md)")->required();
  app.add_option("-o", output, "the tuning file to write");
  app.add_option("--budget", budget, "measuring time: 30s, 5m, 1h (default 5m)");
  app.add_option("--max-versions", maxVersions, "at most this many ranges per kernel (default 3)");
  app.add_option("--target", target, "cpu (the only target tuned so far)");
  app.add_option("--shard", shard, "i/N: measure only slice i of N (0-based), to merge later");
  app.add_option("--seed", seed, "draw with this seed instead of the file's");
  app.add_option("--func", func, "the function (default: the file's func, else @main or the only one)");
  app.add_option("--threads", threads, "threads of the measuring context (default: one per hardware thread)");
  app.add_option("--max-mib", maxMiB, "skip sizes whose buffers exceed this many MiB (default 4096)");
  app.add_flag("--fake-timer", fakeTimer, "a deterministic cost model instead of running kernels (for tests)");
  app.add_flag("--list-points", listPoints, "print the distribution's points (merged, with weights) and exit");
  auto cacheFlags = std::make_shared<tools::CacheFlags>();
  tools::addCacheFlags(&app, cacheFlags);
  tools::addVersionFlag(app, "dscc-tune");
  std::vector<std::string> args = tools::reversedArgs(argc, argv);
  if (int rc = tools::parseCommandLine(app, "dscc-tune", args); rc >= 0) return rc;
  tuner::TuneOptions opts;
  if (!parseBudget(budget, opts.budgetSeconds)) {
    std::cerr << "dscc-tune: error: bad --budget '" << budget << "' (expected e.g. 30s, 5m, 1h)\n";
    return 1;
  }
  if (target != "cpu") {
    std::cerr << "dscc-tune: error: target '" << target << "' cannot be tuned yet (only cpu)\n";
    return 1;
  }
  if (maxVersions < 1 || maxVersions > tuner::kMaxTuningVersions) {
    std::cerr << "dscc-tune: error: --max-versions must be in [1, " << tuner::kMaxTuningVersions
              << "] (what a tuning file may hold)\n";
    return 1;
  }
  if (!shard.empty()) {
    std::smatch m;
    if (!std::regex_match(shard, m, std::regex(R"(([0-9]+)/([0-9]+))")) || std::stoi(m[2]) < 1 ||
        std::stoi(m[1]) >= std::stoi(m[2])) {
      std::cerr << "dscc-tune: error: bad --shard '" << shard << "' (expected i/N with 0 <= i < N)\n";
      return 1;
    }
    opts.shardIndex = std::stoi(m[1]);
    opts.shardCount = std::stoi(m[2]);
  }
  if (output.empty() && !listPoints) {
    std::cerr << "dscc-tune: error: -o FILE is required\n";
    return 1;
  }

  tools::CacheSettings settings;
  if (!tools::resolveCacheSettings(*cacheFlags, "dscc-tune", settings, std::cerr)) return tools::kUsageError;

  tuner::DistributionSpec spec;
  std::string err;
  if (!tuner::loadDistribution(shapes, spec, err)) {
    std::cerr << err << "\n";
    return 1;
  }
  if (seed >= 0) spec.seed = static_cast<uint64_t>(seed);
  // A function named by the shape file: its absence is an error at `func:` there.
  std::string funcWhere;
  if (func.empty() && !spec.func.empty()) {
    func = spec.func;
    funcWhere = shapes + ":" + std::to_string(spec.funcLoc.line) + ":" + std::to_string(spec.funcLoc.col);
  }
  // The program is loaded and analysed once (width 8); the other widths are
  // plans of the same function with the same solver.
  codegen::PlanOptions popts;
  popts.vectorWidth = 8;
  // Measured one launch at a time: the row-split versions (two launches
  // on a workspace) are the same code in every configuration.
  popts.cpuSplitRowMin = 0;
  if (!tools::checkSessionReport(*report, "dscc-tune", std::cerr)) return tools::kUsageError;
  auto fe = tools::loadAndPlan(file, func, popts, std::cerr, *onnx, funcWhere, *report);
  if (!fe) return 1;
  fe->printTimings("dscc-tune", std::cerr);
  std::map<int, std::unique_ptr<codegen::ModelPlan>> otherPlans;
  std::map<int, const codegen::ModelPlan*> plans{{8, &fe->plan}};
  for (int w : {4, 16}) {
    codegen::PlanOptions p = popts;
    p.vectorWidth = w;
    auto plan = std::make_unique<codegen::ModelPlan>();
    const Operation* failed = nullptr;
    if (std::string e = codegen::planModel(*fe->func, *fe->solver, p, *plan, &failed); !e.empty()) {
      tools::reportCannotCompile(*fe, file, e, failed ? failed->loc : Location{}, std::cerr);
      return 1;
    }
    plans[w] = plan.get();
    otherPlans[w] = std::move(plan);
  }
  const Function& f = *fe->func;
  std::vector<tuner::WeightedPoint> points;
  if (!tuner::expandDistribution(spec, f, points, err)) {
    std::cerr << err << "\n";
    return 1;
  }
  if (listPoints) {
    double total = 0;
    for (const auto& p : points) {
      std::cout << tuner::pointText(p.dims) << " weight " << p.weight << "\n";
      total += p.weight;
    }
    std::cout << points.size() << " points, total weight " << total << "\n";
    return 0;
  }

  opts.maxVersions = maxVersions;
  opts.threads = threads;
  opts.fakeTimer = fakeTimer;
  opts.maxBytes = static_cast<uint64_t>(std::max<int64_t>(maxMiB, 1)) << 20;
  opts.interrupt = &gInterrupted;
  // A bar redrawn in place, on a terminal (or with --progress=always); nothing otherwise.
  bool tty = settings.progress == "always" || (settings.progress == "auto" && isatty(2));
  opts.progress = [tty](const tuner::TuneProgress& p) {
    if (!tty) return;
    double eta = p.done ? p.elapsedSeconds / p.done * (p.total - p.done) : 0;
    char buf[256];
    int filled = p.total ? static_cast<int>(30 * p.done / p.total) : 30;
    std::snprintf(buf, sizeof buf, "\r[%-30s] %zu/%zu  %.0fs, ETA %.0fs  ", std::string(filled, '#').c_str(), p.done,
                  p.total, p.elapsedSeconds, eta);
    std::cerr << buf << std::flush;
    if (p.done == p.total) std::cerr << "\n";
  };
  opts.note = [tty](const std::string& s) { std::cerr << (tty ? "\n" : "") << "dscc-tune: note: " << s << "\n"; };
  // The measurement cache: a kernel's times at a size, for this machine
  // (CPU, features, threads) and this compiler, in the compile cache's folder.
  std::unique_ptr<codegen::CompileCache> cache = tools::openCache(settings, "dscc-tune");
  if (cache) {
    codegen::ObjectOptions host;
    std::string machine = tools::compilerIdentity() + "\n" + cpuModel() + "\n" + codegen::targetKey(host) +
                          "\nthreads " + std::to_string(threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
    codegen::CompileCache* c = cache.get();
    opts.lookup = [c, machine](const std::string& key, std::map<std::string, double>& times) {
      std::optional<std::string> hit = c->get("measure", codegen::sha256Hex(machine + "\n" + key));
      if (!hit) return false;
      std::istringstream in(*hit);
      std::string name;
      double ns = 0;
      while (in >> name >> ns) times[name] = ns;
      return true;
    };
    opts.store = [c, machine](const std::string& key, const std::map<std::string, double>& times) {
      std::string text;
      char buf[64];
      for (const auto& [name, ns] : times) {
        std::snprintf(buf, sizeof buf, " %.17g\n", ns);  // round-trips exactly
        text += name + buf;
      }
      c->put("measure", codegen::sha256Hex(machine + "\n" + key), text);
    };
  }
  std::signal(SIGINT, onSigint);

  tuner::TuningFile t;
  t.device = cpuModel();
  t.func = f.name;
  t.source = baseName(file);
  t.shapes = baseName(shapes);
  t.maxVersions = maxVersions;
  if (!shard.empty()) t.shard = shard;
  bool complete = false;
  if (std::string e = tuner::tuneModel(plans, points, opts, t, &complete); !e.empty()) {
    std::cerr << "dscc-tune: error: " << e << "\n";
    return 1;
  }
  std::cerr << (tty && !complete ? "\n" : "") << "dscc-tune: " << opts.measured << " sizes measured, " << opts.reused
            << " reused from the cache\n";
  if (cache) {
    cache->evictIfNeeded();
    if (settings.stats) tools::printCacheStats(*cache, "dscc-tune", std::cerr);
  }
  if (!complete)
    std::cerr << "dscc-tune: "
              << (gInterrupted.load() ? "interrupted" : "budget spent") << ": writing what was measured\n";
  if (!writeFile(output, tuner::writeTuning(t))) {
    std::cerr << "dscc-tune: error: cannot write " << output << "\n";
    return 1;
  }
  printSummary(t, std::cout);
  return gInterrupted.load() ? 130 : 0;
}
