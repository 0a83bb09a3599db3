// `dscc run`: runs a program (a .dsc file in the reference interpreter, or a compiled model .so) on .npy or random inputs.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "ir/InputRanges.h"
#include "ir/Interpreter.h"
#include "ir/Npy.h"
#include "ir/Parser.h"
#include "ir/Sizes.h"
#ifndef DSCC_RUNTIME_ONLY
#include "frontend/OnnxImporter.h"
#include "passes/Pipeline.h"
#include "tools/Session.h"
#endif
#include "runtime/dscc_cuda.h"
#include "runtime/dscc_runtime.h"
#include "tools/Commands.h"
#include "tools/DimArgs.h"
#include "tools/Embedded.h"
#include "tools/RunProfile.h"
#include "tools/ToolMain.h"

using namespace dscc;
using dscc::tools::kUsageError;
using dscc::tools::parseDimArgs;
using dscc::tools::EmbeddedFile;
using dscc::tools::useEmbeddedConstants;

namespace {

// Defaults of --check, stated in --help: loose enough for reassociated f32
// reductions (vectorized sums, BLAS blocking) over a few thousand terms,
// tight enough to catch a wrong constant or a dropped term.
constexpr double kDefaultAtol = 1e-4;
constexpr double kDefaultRtol = 1e-4;

// The dtype enums share their order by design (docs/abi.md), so conversion is by value.
static_assert(int(DType::F32) == DSCC_F32 && int(DType::F16) == DSCC_F16 && int(DType::BF16) == DSCC_BF16 &&
              int(DType::F64) == DSCC_F64 && int(DType::I64) == DSCC_I64 && int(DType::I32) == DSCC_I32 &&
              int(DType::I8) == DSCC_I8 && int(DType::I1) == DSCC_I1);

// Fills `t` with reproducible random values: floats uniform in [-1, 1),
// integers uniform in [0, 4), i1 fair coin flips; or uniform in `range`
// ([lo, hi): what the program reads the input as, or --random-range).
void fillRandom(Tensor& t, std::mt19937_64& rng, const std::optional<InputRange>& range) {
  std::uniform_real_distribution<double> f(range ? double(range->lo) : -1.0, range ? double(range->hi) : 1.0);
  std::uniform_int_distribution<int64_t> i(range ? range->lo : 0, range ? range->hi - 1 : 3);
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (isFloat(t.dtype)) t.setF(k, f(rng));
    else if (isBool(t.dtype)) t.setI(k, range ? i(rng) != 0 : i(rng) & 1);
    else t.setI(k, i(rng));
  }
}

struct RunOpts {
  std::string file, func, outDir;
  std::vector<std::string> inputs, dims, randomRanges;
  bool random = false;
  uint64_t seed = 0;
  // Compiled models only.
  int threads = 0;
  bool check = false;
  double atol = -1, rtol = -1;  // unset: by dtype (tolerancesFor)
  bool atolSet = false, rtolSet = false;
  int bench = 0;
  tools::ProfileOpts profile;  // --profile, --trace, --profile-out (tools/RunProfile.h)
  // --target: a .dsc is compiled for it first; a .so must have been compiled for it.
  std::string target;
  // ONNX models: how they are imported.
  std::shared_ptr<frontend::ImportOptions> onnx = std::make_shared<frontend::ImportOptions>();
#ifndef DSCC_RUNTIME_ONLY
  // --time-passes, --print-ir-after, ...: the session's (tools/Session.h).
  std::shared_ptr<tools::SessionReport> report = std::make_shared<tools::SessionReport>();
#endif
};

void error(const std::string& msg) { std::cerr << "dscc: error: " << msg << "\n"; }

// Builds one tensor per argument of `f`, in order: the -i files, then random
// data sized by --dim and by the dims of the given files. Shared by the
// interpreter and the compiled-model paths so both see identical inputs.
// Returns 0, 1 (an input cannot be read or sized) or 2 (a usage error: a bad --dim or -i).
// Sizes are checked (at the argument) before any random input is allocated;
// with `checkFacts` so are the shapes and facts, as the interpreter would
// (a compiled model makes its own checks, which its tests exercise).
int prepareInputs(const Function& f, const RunOpts& o, std::vector<Tensor>& inputs, DiagEngine& diags,
                  bool checkFacts) {
  DimBindings env;
  std::string dimErr;
  if (!parseDimArgs(o.dims, f, env, dimErr)) {
    error(dimErr);
    return kUsageError;
  }
  std::set<std::string> explicitDims;
  for (const auto& [sym, v] : env) explicitDims.insert(sym);
  std::string err;
  std::vector<std::optional<Tensor>> given(f.args.size());
  for (const auto& spec : o.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      error("bad -i '" + spec + "' (expected NAME=FILE.npy)");
      return kUsageError;
    }
    std::string name = spec.substr(0, eq);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    size_t k = 0;
    while (k < f.args.size() && f.args[k]->name != name) ++k;
    if (k == f.args.size()) {
      error("'@" + f.name + "' has no argument '%" + name + "'");
      return 1;
    }
    if (given[k]) {  // the last one used to win without a word
      error("-i " + name + " is given twice");
      return kUsageError;
    }
    auto t = readNpy(spec.substr(eq + 1), &err);
    if (!t) {
      error(err);
      return 1;
    }
    // Sizes of plain-symbol dims seed the random inputs' shapes. A --dim that
    // a file contradicts is an error: it used to be ignored for that input.
    const Type& ty = f.args[k]->type;
    for (size_t d = 0; d < ty.rank() && d < t->rank(); ++d) {
      if (!ty.dims[d].isSymbol()) continue;
      const std::string& sym = ty.dims[d].symbolName();
      if (!env.count(sym)) {
        env[sym] = t->shape[d];
      } else if (explicitDims.count(sym) && env[sym] != t->shape[d]) {
        error("--dim " + sym + "=" + std::to_string(env[sym]) + " disagrees with -i " + name + ": dim " +
              std::to_string(d) + " of " + spec.substr(eq + 1) + " is " + std::to_string(t->shape[d]));
        return kUsageError;
      }
    }
    given[k] = std::move(*t);
  }
  // What each random input is drawn from: --random-range, else what the
  // program reads it as (indices into a table, a mask), else the default.
  std::vector<std::optional<InputRange>> ranges = inputRanges(f, env);
  for (const auto& spec : o.randomRanges) {
    size_t eq = spec.find('='), colon = spec.find(':', eq == std::string::npos ? 0 : eq);
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    char* end = nullptr;
    int64_t lo = 0, hi = 0;
    bool ok = eq != std::string::npos && colon != std::string::npos && !name.empty();
    if (ok) {
      std::string a = spec.substr(eq + 1, colon - eq - 1), b = spec.substr(colon + 1);
      errno = 0;
      lo = std::strtoll(a.c_str(), &end, 10);
      ok = !a.empty() && *end == 0 && errno == 0;
      hi = std::strtoll(b.c_str(), &end, 10);
      ok = ok && !b.empty() && *end == 0 && errno == 0 && lo < hi;
    }
    if (!ok) {
      error("bad --random-range '" + spec + "' (expected NAME=LO:HI with integers LO < HI; values are drawn from [LO, HI))");
      return kUsageError;
    }
    size_t k = 0;
    while (k < f.args.size() && f.args[k]->name != name) ++k;
    if (k == f.args.size()) {
      error("--random-range: '@" + f.name + "' has no argument '%" + name + "'");
      return kUsageError;
    }
    ranges[k] = InputRange{lo, hi, "--random-range"};
  }
  std::mt19937_64 rng(o.seed);
  inputs.clear();
  // Every shape is known, checked against the facts and sized before any
  // random input is allocated.
  std::vector<std::vector<int64_t>> shapes(f.args.size());
  for (size_t k = 0; k < f.args.size(); ++k) {
    if (given[k]) {
      shapes[k] = given[k]->shape;
      continue;
    }
    const Value& a = *f.args[k];
    if (!o.random) {
      error("missing input %" + a.name + " (give -i " + a.name + "=FILE.npy, or --random with --dim for its sizes)");
      return 1;
    }
    std::vector<int64_t>& shape = shapes[k];
    for (const auto& d : a.type.dims) {
      std::string why;
      auto v = d.evaluate(env, &why);
      if (!v || *v < 0) {
        diags.error(a.loc, "cannot size random input %" + a.name + " " + a.type.str() + ": " +
                               (v ? "dim " + d.str() + " is negative" : why) + " (pass --dim)");
        return 1;
      }
      shape.push_back(*v);
    }
  }
  if (checkFacts) {
    DimBindings bound;
    if (!bindSymbols(f, shapes, bound, diags)) return 1;
  }
  int64_t held = 0;
  for (size_t k = 0; k < f.args.size(); ++k) {
    const Value& a = *f.args[k];
    if (given[k]) {
      held += int64_t(given[k]->bytes.size());
      continue;
    }
    std::string why = sizeProblem(shapes[k], int64_t(dtypeSize(a.type.dtype)), memoryLimit() - held);
    if (!why.empty()) {
      diags.error(a.loc, "cannot allocate random input %" + a.name + " " + a.type.str() + ": " + why);
      return 1;
    }
    held += *checkedNumel(shapes[k]) * int64_t(dtypeSize(a.type.dtype));
  }
  for (size_t k = 0; k < f.args.size(); ++k) {
    if (given[k]) {
      inputs.push_back(std::move(*given[k]));
      continue;
    }
    const Value& a = *f.args[k];
    try {
      Tensor t = Tensor::zeros(a.type.dtype, shapes[k]);
      fillRandom(t, rng, ranges[k]);
      inputs.push_back(std::move(t));
    } catch (const TensorSizeError& e) {
      diags.error(a.loc, "cannot allocate random input %" + a.name + ": " + e.what());
      return 1;
    }
  }
  return 0;
}

// The file of output `i` in `-o DIR`: its result name (an imported model's
// output name), else outK; '/' and a leading '.' become '_' so the file stays in DIR.
std::string outputFile(const Function& f, size_t i) {
  std::string n = f.resultName(i);
  if (n.empty()) return "out" + std::to_string(i) + ".npy";
  for (char& c : n)
    if (c == '/' || c == '\0') c = '_';
  if (n[0] == '.') n[0] = '_';
  return n + ".npy";
}

// Prints each output's type and checksums and writes DIR/NAME.npy (or DIR/outK.npy) when asked.
bool printOutputs(const Function& f, const std::vector<Tensor>& outputs, const std::string& outDir) {
  std::string err;
  if (!outDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(outDir, ec);
    if (ec) {
      error("cannot create '" + outDir + "': " + ec.message());
      return false;
    }
  }
  std::set<std::string> files;
  for (size_t i = 0; i < outputs.size() && !outDir.empty(); ++i)
    if (!files.insert(outputFile(f, i)).second) {
      error("outputs " + std::to_string(i) + " and an earlier one would both be written to '" + outputFile(f, i) +
            "' in " + outDir);
      return false;
    }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    double sum = 0, asum = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      double v = t.getF(k);
      sum += v;
      asum += std::fabs(v);
    }
    std::cout << "out" << i << (f.resultName(i).empty() ? "" : " " + f.resultName(i)) << " %"
              << (i < f.returns.size() ? f.returns[i]->name : "?") << ": " << t.typeStr()
              << " sum=" << sum << " abs_sum=" << asum;
    if (!outDir.empty()) {
      std::string path = (std::filesystem::path(outDir) / outputFile(f, i)).string();
      if (!writeNpy(path, t, &err)) {
        std::cout << "\n";
        error(err);
        return false;
      }
      std::cout << " -> " << path;
    }
    std::cout << "\n";
  }
  return true;
}

// Parses module text, runs shape analysis (which rejects impossible programs
// and adds the run-time checks the interpreter enforces) and picks the function.
Function* loadFunction(std::unique_ptr<Module>& m, SourceMgr& sm, int id, DiagEngine& diags, const std::string& func,
                       const std::string& where, bool loadFiles = true, const std::string& fileBase = "",
                       const EmbeddedFile* embedded = nullptr) {
  m = parseModule(sm, id, diags);
  if (m && loadFiles && embedded) useEmbeddedConstants(*m, embedded);
  if (!m || (loadFiles && !loadFileConstants(*m, diags, fileBase))) return nullptr;
#ifndef DSCC_RUNTIME_ONLY
  PipelineOptions popts;
  std::ostringstream passOut;
  if (!runPasses(*m, {lookupPass("infer-shapes")}, diags, popts, passOut)) return nullptr;
#endif
  // (A runtime-only build has no solver: the interpreter still checks every
  // fact, dim and shape relation as it runs.)
  Function* f = func.empty() ? m->entry() : m->lookup(func);
  if (!f)
    error(func.empty() ? "no @main and more than one function; choose one with --func"
                       : "no function '@" + func + "' in " + where);
  return f;
}

#ifndef DSCC_RUNTIME_ONLY
// -i of an ONNX model takes its input names; the program's arguments are the sanitised ones.
RunOpts withArgumentNames(const RunOpts& o, const frontend::Imported& names) {
  RunOpts r = o;
  std::vector<std::string*> specs;
  for (std::string& spec : r.inputs) specs.push_back(&spec);
  for (std::string& spec : r.randomRanges) specs.push_back(&spec);
  for (std::string* p : specs) {
    std::string& spec = *p;
    size_t eq = spec.find('=');
    if (eq == std::string::npos) continue;
    auto it = names.inputNames.find(spec.substr(0, eq));
    if (it != names.inputNames.end()) spec = it->second + spec.substr(eq);
  }
  return r;
}
#endif

int runInterpreted(const RunOpts& given) {
  RunOpts o = given;
  if (o.threads != 0 || o.check || o.bench != 0 || o.profile.any()) {
    error("--threads, --check, --bench, --profile, --trace and --profile-out apply to compiled models (.so from `dscc compile`), not to " + o.file);
    return kUsageError;
  }
#ifndef DSCC_RUNTIME_ONLY
  // The compile session's front: read or import, shape analysis.
  if (!tools::checkSessionReport(*o.report, "dscc", std::cerr)) return kUsageError;
  frontend::Imported names;
  std::unique_ptr<tools::Session> session = tools::loadProgram(o.file, std::cerr, *o.onnx, *o.report, &names);
  if (!session) return 1;
  struct Timings {  // printed however the command ends (--time-passes)
    const tools::Session& s;
    ~Timings() { s.printTimings("dscc", std::cerr); }
  } timings{*session};
  DiagEngine& diags = *session->diags;
  Function* f = nullptr;
  if (frontend::isOnnxPath(o.file)) {
    o = withArgumentNames(o, names);
    f = session->module->entry();
  } else {
    f = o.func.empty() ? session->module->entry() : session->module->lookup(o.func);
    if (!f)
      error(o.func.empty() ? "no @main and more than one function; choose one with --func"
                           : "no function '@" + o.func + "' in " + o.file);
  }
#else
  SourceMgr sm;
  DiagEngine diags(sm, std::cerr);
  std::string err;
  std::unique_ptr<Module> m;
  Function* f = nullptr;
  int id = sm.addFile(o.file, &err);
  if (id < 0) {
    error(err);
    return 1;
  }
  f = loadFunction(m, sm, id, diags, o.func, o.file);
#endif
  if (!f) return 1;
  std::vector<Tensor> inputs, outputs;
  if (int rc = prepareInputs(*f, o, inputs, diags, true)) return rc;
  auto t0 = std::chrono::steady_clock::now();
#ifndef DSCC_RUNTIME_ONLY
  bool ok = session->stage("interpret", [&] { return interpret(*f, inputs, outputs, diags); });
#else
  bool ok = interpret(*f, inputs, outputs, diags);
#endif
  auto t1 = std::chrono::steady_clock::now();
  if (!ok) return 1;
  if (!printOutputs(*f, outputs, o.outDir)) return 1;
  std::cout << "interpreted @" << f->name << " in " << std::chrono::duration<double, std::milli>(t1 - t0).count()
            << " ms\n";
  return 0;
}

// A dlopen'ed compiled model; closes the library when done.
struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle) dlclose(handle);
  }
};

// A context released on every exit path.
struct ContextHolder {
  dscc_context* ctx = nullptr;
  ~ContextHolder() { dscc_context_release(ctx); }
};

// Output tensors in ABI form, with the dims storage they point to; frees
// runtime-allocated data on every exit path.
struct AbiOutputs {
  std::vector<std::vector<int64_t>> dims;
  std::vector<dscc_tensor> tensors;
  dscc_context* device = nullptr;  ///< set for a GPU model: the data is device memory
  ~AbiOutputs() {
    for (auto& t : tensors) {
      if (device) {
        dscc_cuda_free(device, t.data);
        t.data = nullptr;
      }
      dscc_tensor_free(&t);
    }
  }
};

// Device copies of the inputs of a GPU model, freed on every exit path.
struct DeviceBuffers {
  dscc_context* ctx = nullptr;
  std::vector<void*> ptrs;
  ~DeviceBuffers() {
    for (void* p : ptrs) dscc_cuda_free(ctx, p);
  }
};

// The outputs `f` returns, as empty ABI tensors the runtime allocates.
void makeOutputs(const Function& f, AbiOutputs& out) {
  size_t n = f.resultTypes.size();
  out.dims.assign(n, {});
  out.tensors.assign(n, dscc_tensor{});
  for (size_t i = 0; i < n; ++i) {
    const Type& ty = f.resultTypes[i];
    out.dims[i].assign(std::max<size_t>(ty.rank(), 1), 0);
    out.tensors[i] = dscc_tensor{nullptr, out.dims[i].data(), int32_t(ty.rank()), dscc_dtype(int(ty.dtype))};
  }
}

// Copies a model's output into an interpreter tensor.
Tensor fromAbi(const dscc_tensor& t) {
  std::vector<int64_t> shape(t.dims, t.dims + t.rank);
  Tensor r = Tensor::zeros(DType(int(t.dtype)), shape);
  if (!r.bytes.empty()) std::memcpy(r.bytes.data(), t.data, r.bytes.size());
  return r;
}

// --check's tolerances for an output of `dt` unless given: 1e-4 for f32 and
// f64, about 10 units in the last place for f16 (2^-11) and 8 for bf16 (2^-8),
// as summation order and accumulation width may flip a rounding that later
// ops amplify.
std::pair<double, double> tolerancesFor(DType dt, double atol, double rtol) {
  double d = dt == DType::F16 ? 1e-2 : dt == DType::BF16 ? 6e-2 : kDefaultAtol;
  return {atol >= 0 ? atol : d, rtol >= 0 ? rtol : (dt == DType::F16 || dt == DType::BF16 ? d : kDefaultRtol)};
}

// Compares the compiled outputs with the interpreter's; prints one line per
// output and returns false on a mismatch of count, dtype, shape, NaN-ness or value.
bool compareOutputs(const Function& f, const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                    double atolGiven, double rtolGiven) {
  if (got.size() != want.size()) {
    std::cout << "check: FAIL: the model returned " << got.size() << " outputs, the interpreter " << want.size()
              << "\n";
    return false;
  }
  bool allOk = true;
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor &a = got[i], &b = want[i];
    auto [atol, rtol] = tolerancesFor(b.dtype, atolGiven, rtolGiven);
    std::cout << "check out" << i << " %" << f.returns[i]->name << ": ";
    if (a.dtype != b.dtype || a.shape != b.shape) {
      std::cout << "FAIL: compiled " << a.typeStr() << ", interpreter " << b.typeStr() << "\n";
      allOk = false;
      continue;
    }
    double maxAbs = 0, maxRel = 0;
    int64_t bad = 0, firstBad = -1;
    for (int64_t k = 0; k < a.numel(); ++k) {
      double x = a.getF(k), y = b.getF(k);
      bool ok;
      if (std::isnan(x) || std::isnan(y)) {
        ok = std::isnan(x) && std::isnan(y);
      } else if (x == y) {
        ok = true;  // also equal infinities, whose difference would be NaN
      } else {
        double d = std::fabs(x - y);
        maxAbs = std::max(maxAbs, d);
        if (y != 0) maxRel = std::max(maxRel, d / std::fabs(y));
        ok = d <= atol + rtol * std::fabs(y);
      }
      if (!ok && bad++ == 0) firstBad = k;
    }
    std::cout << std::setprecision(3) << "max_abs_err=" << maxAbs << " max_rel_err=" << maxRel
              << std::setprecision(6);
    if (bad) {
      std::cout << " FAIL: " << bad << " of " << a.numel() << " elements differ beyond atol=" << atol
                << " rtol=" << rtol << " (first at flat index " << firstBad << ": compiled "
                << a.getF(firstBad) << ", interpreter " << b.getF(firstBad) << ")\n";
      allOk = false;
    } else {
      std::cout << " ok (atol=" << atol << " rtol=" << rtol << ")\n";
    }
  }
  return allOk;
}

int runCompiled(const RunOpts& o);

// `dscc run model.dsc --target T`: `dscc compile` (in this process, the same
// command with the same options) into a temporary folder, then the model as
// any compiled one.
int compileAndRun(const RunOpts& o) {
#ifdef DSCC_RUNTIME_ONLY
  error("this runtime-only build cannot compile; compile with `dscc compile " + o.file + " --target=" + o.target +
        " -o model.so` and run model.so");
  return 1;
#else
  if (o.target.rfind("cuda:", 0) == 0 && !dscc_cuda_available()) {
    error("--target=" + o.target + ": no CUDA device can be used here: " + dscc_status_message(nullptr));
    return 1;
  }
  char dirTemplate[] = "/tmp/dscc-run-XXXXXX";
  if (!mkdtemp(dirTemplate)) {
    error(std::string("cannot make a temporary folder: ") + std::strerror(errno));
    return 1;
  }
  std::filesystem::path dir = dirTemplate;
  std::string so = (dir / "model.so").string();
  std::vector<std::string> args = {o.file, "--target=" + o.target, "-o", so};
  if (!o.func.empty()) args.push_back("--func=" + o.func);
  for (const std::string& a : tools::importOptionArgs(*o.onnx)) args.push_back(a);
  for (const std::string& a : tools::sessionReportArgs(*o.report)) args.push_back(a);
  int rc = 1;
  if (tools::runCompileCommand(args) == 0) {  // else it reported why
    RunOpts r = o;
    r.file = so;
    rc = runCompiled(r);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
#endif
}

int runCompiled(const RunOpts& o) {
  Library lib;
  // RTLD_LOCAL: several models may export the same dscc_model_* names.
  lib.handle = dlopen(std::filesystem::absolute(o.file).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    const char* why = dlerror();
    error("cannot load '" + o.file + "': " + (why ? why : "unknown dlopen error"));
    return 1;
  }
  auto* source = static_cast<const char*>(dlsym(lib.handle, "dscc_model_source"));
  auto* entry = static_cast<const char*>(dlsym(lib.handle, "dscc_model_entry"));
  auto runFn = reinterpret_cast<dscc_run_fn>(dlsym(lib.handle, "dscc_model_run"));
  if (!source || !entry || !runFn) {
    std::string missing;
    if (!source) missing += " dscc_model_source";
    if (!entry) missing += " dscc_model_entry";
    if (!runFn) missing += " dscc_model_run";
    error("'" + o.file + "' is not a dscc model (missing symbols:" + missing + "); build one with `dscc compile`");
    return 1;
  }
  // GPU models take device buffers: inputs are copied there and outputs back.
  bool gpu = false;
  if (auto* target = static_cast<const char*>(dlsym(lib.handle, "dscc_model_target")); target) {
    std::string t = target;
    gpu = t.rfind("cuda:", 0) == 0;
    if (t != "cpu" && !gpu) {
      error("'" + o.file + "' was compiled for an unknown target '" + t + "'");
      return 1;
    }
    if (!o.target.empty() && o.target != t) {
      error("'" + o.file + "' was compiled for " + t + ", not " + o.target);
      return 1;
    }
    if (gpu && !dscc_cuda_available()) {
      error("'" + o.file + "' is a " + t + " model, and no CUDA device can be used here: " +
            dscc_status_message(nullptr));
      return 1;
    }
  }
  if (!o.func.empty() && o.func != entry) {
    error("'" + o.file + "' was compiled for '@" + entry + "', not '@" + o.func + "'");
    return 1;
  }
  if (gpu && o.profile.any()) {
    // Its launches are asynchronous: timing them needs CUDA events, which the runtime does not record yet.
    error("--profile, --trace and --profile-out apply to CPU models; '" + o.file + "' is a GPU model");
    return kUsageError;
  }
  SourceMgr sm;
  DiagEngine diags(sm, std::cerr);
  // Named after the library so diagnostics point at what the user ran.
  int id = sm.addBuffer(o.file, source);
  std::unique_ptr<Module> m;
  // The model carries its weights; only --check's interpreter reads the
  // file constants, where the program had them when it was compiled.
  auto* sourceDir = static_cast<const char*>(dlsym(lib.handle, "dscc_model_source_dir"));
  auto* embedded = static_cast<const EmbeddedFile*>(dlsym(lib.handle, "dscc_model_file_constants"));
  Function* f = loadFunction(m, sm, id, diags, entry, o.file + " (its embedded dscc_model_source)", o.check,
                             sourceDir ? sourceDir : "", embedded);
  if (!f) return 1;
  std::vector<Tensor> inputs;
  if (int rc = prepareInputs(*f, o, inputs, diags, false)) return rc;

  ContextHolder ctx;
  ctx.ctx = dscc_context_create(o.threads);
  if (!ctx.ctx) {
    error(std::string("cannot create a context with ") + std::to_string(o.threads) +
          " threads: " + dscc_status_message(nullptr));
    return 1;
  }
  // Every call below is recorded; with --bench the warm-up call's records are dropped after it.
  if (o.profile.any()) dscc_context_set_profiling(ctx.ctx, 1);
  std::vector<int64_t> noDims(1, 0);
  std::vector<dscc_tensor> in(inputs.size());
  DeviceBuffers device{ctx.ctx, {}};
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& t = inputs[k];
    void* data = t.bytes.empty() ? nullptr : t.bytes.data();
    if (gpu && data) {
      void* d = dscc_cuda_alloc(ctx.ctx, t.bytes.size());
      if (!d || dscc_cuda_copy_to_device(ctx.ctx, d, data, t.bytes.size()) != DSCC_OK) {
        error(std::string("cannot copy input ") + std::to_string(k) + " to the GPU: " + dscc_status_message(ctx.ctx));
        if (d) dscc_cuda_free(ctx.ctx, d);
        return 1;
      }
      device.ptrs.push_back(d);
      data = d;
    }
    in[k] = dscc_tensor{data, t.shape.empty() ? noDims.data() : t.shape.data(), int32_t(t.rank()),
                        dscc_dtype(int(t.dtype))};
  }
  AbiOutputs out;
  makeOutputs(*f, out);
  out.device = gpu ? ctx.ctx : nullptr;
  auto call = [&] {
    dscc_status s = runFn(ctx.ctx, in.data(), int(in.size()), out.tensors.data(), int(out.tensors.size()));
    if (s != DSCC_OK) {
      const char* msg = dscc_status_message(ctx.ctx);
      error(std::string(dscc_status_name(s)) + ": " + (msg && *msg ? msg : "(the model gave no message)"));
    }
    return s == DSCC_OK;
  };
  auto t0 = std::chrono::steady_clock::now();
  if (!call()) return 1;
  auto t1 = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs;
  for (const auto& t : out.tensors) {
    if (!gpu) {
      outputs.push_back(fromAbi(t));
      continue;
    }
    std::vector<int64_t> shape(t.dims, t.dims + t.rank);
    Tensor r = Tensor::zeros(DType(int(t.dtype)), shape);
    if (!r.bytes.empty() && dscc_cuda_copy_to_host(ctx.ctx, r.bytes.data(), t.data, r.bytes.size()) != DSCC_OK) {
      error(std::string("cannot copy an output from the GPU: ") + dscc_status_message(ctx.ctx));
      return 1;
    }
    outputs.push_back(std::move(r));
  }
  if (!printOutputs(*f, outputs, o.outDir)) return 1;
  std::cout << "ran @" << f->name << " (compiled, " << dscc_context_num_threads(ctx.ctx) << " threads) in "
            << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms\n";

  if (o.bench > 0) {
    // The first call was the warm-up; the timed ones write into its outputs
    // in place, as a serving loop reusing its buffers would. Its profile
    // records are dropped: they hold one-time costs (the BLAS generating its
    // kernels: 30 ms in the first GEMM) that would skew the means of the
    // timed calls.
    if (o.profile.any()) dscc_profile_clear(ctx.ctx);
    std::vector<double> ms;
    for (int r = 0; r < o.bench; ++r) {
      auto b0 = std::chrono::steady_clock::now();
      if (!call()) return 1;
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
    std::cout << "bench @" << f->name << ": " << o.bench << " calls, median " << median << " ms, min " << ms.front()
              << " ms, max " << ms.back() << " ms\n";
  }

  if (o.profile.any() && !tools::reportProfile(ctx.ctx, o.profile, o.file, std::cout, std::cerr)) return 1;

  if (o.check) {
    std::vector<Tensor> want;
    if (!interpret(*f, inputs, want, diags)) {
      error("the model ran but the reference interpreter rejected the same inputs");
      return 1;
    }
    if (!compareOutputs(*f, outputs, want, o.atol, o.rtol)) {
      error("compiled outputs differ from the reference interpreter");
      return 1;
    }
    std::cout << "check: ok\n";
  }
  return 0;
}

// Compiled models are recognised by content (an ELF header), not by name.
bool isSharedLibrary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

int cmdRun(const RunOpts& o) {
  if (o.threads < 0) {
    error("--threads must be >= 0 (0: one per hardware thread)");
    return kUsageError;
  }
  if (o.bench < 0) {
    error("--bench must be >= 0");
    return kUsageError;
  }
  if (std::isnan(o.atol) || std::isnan(o.rtol) || (o.atolSet && o.atol < 0) || (o.rtolSet && o.rtol < 0)) {
    error("--atol and --rtol must be >= 0");
    return kUsageError;
  }
  // The targets of codegen::parseCudaTarget and the CPU (spelled out: dscc-run links no codegen).
  if (!o.target.empty() && o.target != "cpu" && o.target != "cuda:sm_80" && o.target != "cuda:sm_90") {
    error("unknown target '" + o.target + "' (expected cpu, cuda:sm_80 or cuda:sm_90)");
    return kUsageError;
  }
  if (isSharedLibrary(o.file)) return runCompiled(o);
#ifndef DSCC_RUNTIME_ONLY
  if (frontend::isOnnxPath(o.file) && !o.target.empty()) {
    // Compiled first; the names are the import's.
    frontend::Imported names;
    SourceMgr sm;
    DiagEngine diags(sm, std::cerr);
    if (!frontend::importOnnxModule(o.file, *o.onnx, sm, diags, std::cerr, &names)) return 1;
    return compileAndRun(withArgumentNames(o, names));
  }
#endif
  if (o.target.empty()) return runInterpreted(o);
  return compileAndRun(o);
}

}  // namespace

namespace dscc::tools {

Command addRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOpts>();
  auto* run = app.add_subcommand(
      "run", "run a .dsc program or ONNX model (.onnx) in the reference interpreter, or a compiled model (.so from "
      "`dscc compile`)");
  run->add_option("file", o->file, "the .dsc program, ONNX model (.onnx) or compiled model .so")->required();
  run->add_option("-i,--input", o->inputs, "NAME=FILE.npy: an input (repeatable)")->allow_extra_args(false);
  run->add_flag("--random", o->random,
                "fill inputs not given with -i with random data: floats uniform in [-1, 1), i1 0 or 1, integers by what "
                "the program reads them as (--random-range), else 0 to 3 (docs/compile.md)");
  run->add_option("--seed", o->seed, "seed for --random (default 0)");
  run->add_option("--random-range", o->randomRanges,
                  "NAME=LO:HI: draw random input NAME from [LO, HI) (repeatable); without it an integer input used as "
                  "indices into a table of V rows draws from [0, V), one used as a mask from {0, 1}")
      ->allow_extra_args(false);
  run->add_option("--dim", o->dims, "SYMBOL=N: a size for --random inputs (repeatable)")->allow_extra_args(false);
  run->add_option("-o,--output-dir", o->outDir, "write each output as DIR/NAME.npy (its result name, an ONNX model's output name) or DIR/outK.npy");
  run->add_option("--func", o->func, "the function to run (default: @main or the only one)");
  run->add_option("--threads", o->threads,
                  "compiled models: threads of the context, the caller's included (default 0: one per hardware thread)");
  run->add_flag("--check", o->check,
                "compiled models: also run the reference interpreter on the same inputs and compare; fails unless "
                "|compiled - interpreter| <= atol + rtol * |interpreter| everywhere, with equal shapes, dtypes and NaNs");
  run->add_option_function<double>("--atol", [o](double v) { o->atol = v, o->atolSet = true; },
                                   "absolute tolerance of --check (default 1e-4; f16 1e-2, bf16 6e-2)");
  run->add_option_function<double>("--rtol", [o](double v) { o->rtol = v, o->rtolSet = true; },
                                   "relative tolerance of --check (default 1e-4; f16 1e-2, bf16 6e-2)");
  run->add_option("--target", o->target,
                  "cpu, cuda:sm_80 or cuda:sm_90: a .dsc program is compiled for it (as `dscc compile`) and run "
                  "compiled; a .so must have been compiled for it");
  run->add_option_function<int64_t>("--max-memory", [](int64_t v) { setMemoryLimit(v); },
                                    "bytes the interpreter and the inputs may hold at once (default 2^40; "
                                    "docs/limits.md)")
      ->check(CLI::PositiveNumber);
  run->add_option("--bench", o->bench, "compiled models: after the first (warm-up) call, time N more calls and "
                                       "print median/min/max ms");
  tools::addProfileOptions(run, o->profile);
#ifndef DSCC_RUNTIME_ONLY
  addImportOptions(run, o->onnx);
  addSessionReportFlags(run, o->report);
#endif
  return {run, [o] { return cmdRun(*o); }};
}

}  // namespace dscc::tools
