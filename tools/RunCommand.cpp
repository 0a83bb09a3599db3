// `dscc run`: runs a program (a .dsc file in the reference interpreter) on .npy or random inputs.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include "ir/Interpreter.h"
#include "ir/Npy.h"
#include "ir/Parser.h"
#include "passes/Pipeline.h"
#include "tools/Commands.h"

using namespace dscc;

namespace {

// Fills `t` with reproducible random values: floats uniform in [-1, 1),
// integers uniform in [0, 4), i1 fair coin flips.
void fillRandom(Tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> f(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> i(0, 3);
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (isFloat(t.dtype)) t.setF(k, f(rng));
    else if (isBool(t.dtype)) t.setI(k, i(rng) & 1);
    else t.setI(k, i(rng));
  }
}

struct RunOpts {
  std::string file, func, outDir;
  std::vector<std::string> inputs, dims;
  bool random = false;
  uint64_t seed = 0;
};

int cmdRun(const RunOpts& o) {
  SourceMgr sm;
  DiagEngine diags(sm, std::cerr);
  std::string err;
  int id = sm.addFile(o.file, &err);
  if (id < 0) {
    std::cerr << "dscc: error: " << err << "\n";
    return 1;
  }
  auto m = parseModule(sm, id, diags);
  if (!m) return 1;
  // Shape analysis rejects impossible programs and adds the run-time checks
  // the interpreter then enforces.
  PipelineOptions popts;
  std::ostringstream passOut;
  if (!runPasses(*m, {lookupPass("infer-shapes")}, diags, popts, passOut)) return 1;
  Function* f = o.func.empty() ? m->entry() : m->lookup(o.func);
  if (!f) {
    std::cerr << "dscc: error: " << (o.func.empty() ? "no @main and more than one function; choose one with --func"
                                                     : "no function '@" + o.func + "' in " + o.file) << "\n";
    return 1;
  }
  DimBindings env;
  for (const auto& d : o.dims) {
    size_t eq = d.find('=');
    std::string name = d.substr(0, eq);
    int64_t v = 0;
    bool good = eq != std::string::npos && eq > 0;
    if (good) {
      try {
        size_t used = 0;
        v = std::stoll(d.substr(eq + 1), &used);
        good = used == d.size() - eq - 1 && v >= 0;
      } catch (...) {
        good = false;
      }
    }
    if (!good) {
      std::cerr << "dscc: error: bad --dim '" << d << "' (expected NAME=N with N >= 0)\n";
      return 1;
    }
    env[name] = v;
  }
  std::vector<std::optional<Tensor>> given(f->args.size());
  for (const auto& spec : o.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "dscc: error: bad -i '" << spec << "' (expected NAME=FILE.npy)\n";
      return 1;
    }
    std::string name = spec.substr(0, eq);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    size_t k = 0;
    while (k < f->args.size() && f->args[k]->name != name) ++k;
    if (k == f->args.size()) {
      std::cerr << "dscc: error: '@" << f->name << "' has no argument '%" << name << "'\n";
      return 1;
    }
    auto t = readNpy(spec.substr(eq + 1), &err);
    if (!t) {
      std::cerr << "dscc: error: " << err << "\n";
      return 1;
    }
    // Sizes of plain-symbol dims seed the random inputs' shapes.
    const Type& ty = f->args[k]->type;
    for (size_t d = 0; d < ty.rank() && d < t->rank(); ++d)
      if (ty.dims[d].isSymbol() && !env.count(ty.dims[d].symbolName()))
        env[ty.dims[d].symbolName()] = t->shape[d];
    given[k] = std::move(*t);
  }
  std::mt19937_64 rng(o.seed);
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < f->args.size(); ++k) {
    if (given[k]) {
      inputs.push_back(std::move(*given[k]));
      continue;
    }
    const Value& a = *f->args[k];
    if (!o.random) {
      std::cerr << "dscc: error: missing input %" << a.name << " (give -i " << a.name
                << "=FILE.npy, or --random with --dim for its sizes)\n";
      return 1;
    }
    std::vector<int64_t> shape;
    for (const auto& d : a.type.dims) {
      std::string why;
      auto v = d.evaluate(env, &why);
      if (!v || *v < 0) {
        std::cerr << "dscc: error: cannot size random input %" << a.name << " " << a.type.str() << ": "
                  << (v ? "dim " + d.str() + " is negative" : why) << " (pass --dim)\n";
        return 1;
      }
      shape.push_back(*v);
    }
    Tensor t = Tensor::zeros(a.type.dtype, shape);
    fillRandom(t, rng);
    inputs.push_back(std::move(t));
  }
  std::vector<Tensor> outputs;
  auto t0 = std::chrono::steady_clock::now();
  bool ok = interpret(*f, inputs, outputs, diags);
  auto t1 = std::chrono::steady_clock::now();
  if (!ok) return 1;
  if (!o.outDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.outDir, ec);
    if (ec) {
      std::cerr << "dscc: error: cannot create '" << o.outDir << "': " << ec.message() << "\n";
      return 1;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    double sum = 0, asum = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      double v = t.getF(k);
      sum += v;
      asum += std::fabs(v);
    }
    std::cout << "out" << i << " %" << f->returns[i]->name << ": " << t.typeStr() << " sum=" << sum
              << " abs_sum=" << asum;
    if (!o.outDir.empty()) {
      std::string path = (std::filesystem::path(o.outDir) / ("out" + std::to_string(i) + ".npy")).string();
      if (!writeNpy(path, t, &err)) {
        std::cerr << "\ndscc: error: " << err << "\n";
        return 1;
      }
      std::cout << " -> " << path;
    }
    std::cout << "\n";
  }
  std::cout << "interpreted @" << f->name << " in "
            << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms\n";
  return 0;
}

}  // namespace

namespace dscc::tools {

Command addRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOpts>();
  auto* run = app.add_subcommand("run", "run a program in the reference interpreter");
  run->add_option("file", o->file, "the .dsc program")->required();
  run->add_option("-i,--input", o->inputs, "NAME=FILE.npy: an input (repeatable)")->allow_extra_args(false);
  run->add_flag("--random", o->random, "fill inputs not given with -i with random data");
  run->add_option("--seed", o->seed, "seed for --random (default 0)");
  run->add_option("--dim", o->dims, "SYMBOL=N: a size for --random inputs (repeatable)")->allow_extra_args(false);
  run->add_option("-o,--output-dir", o->outDir, "write outputs as DIR/out0.npy, out1.npy, ...");
  run->add_option("--func", o->func, "the function to run (default: @main or the only one)");
  return {run, [o] { return cmdRun(*o); }};
}

}  // namespace dscc::tools
