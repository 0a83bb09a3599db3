// Measuring kernels: work units per (kernel, distinct kernel size), JIT-compiled versions, timing with warm-up, median and re-measured close calls.
#include "tuner/Tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <set>

#include "codegen/CompileCache.h"
#include "codegen/HostCodegen.h"
#include "codegen/Jit.h"
#include "ir/Printer.h"
#include "ir/Tensor.h"
#include "runtime/dscc_generated.h"
#include "runtime/dscc_runtime.h"

namespace dscc::tuner {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One (kernel, distinct kernel size) to measure.
struct Unit {
  size_t kernel = 0;
  DimBindings at;
  int64_t size = 0, units = 0, work = 0;
  double weight = 0;
  std::vector<std::string> versions;  // the version each vector width selects (4, 8, 16)
  size_t canonical = 0;
};

// The buffers of one kernel at one size, filled with non-zero data.
struct Buffers {
  std::vector<Tensor> ins, outs;
  std::vector<void*> inPtrs, outPtrs;
  std::vector<int64_t> sizes;
};

// Fills `t` with values in +-[0.05, 1] (floats) or +-[1, 9] (integers): a
// random block, tiled, so that huge buffers fill quickly.
void fillNonZero(Tensor& t, std::mt19937_64& rng) {
  int64_t n = t.numel(), block = std::min<int64_t>(n, 65536);
  for (int64_t i = 0; i < block; ++i) {
    double mag = 0.05 + 0.95 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
    bool neg = rng() & 1;
    if (t.dtype == DType::I1) t.setI(i, 1);
    else if (isFloat(t.dtype)) t.setF(i, neg ? -mag : mag);
    else t.setI(i, (neg ? -1 : 1) * static_cast<int64_t>(1 + rng() % 9));
  }
  size_t blockBytes = static_cast<size_t>(block) * dtypeSize(t.dtype);
  for (size_t off = blockBytes; off < t.bytes.size(); off += blockBytes)
    std::memcpy(t.bytes.data() + off, t.bytes.data(), std::min(blockBytes, t.bytes.size() - off));
}

std::optional<std::vector<int64_t>> shapeAt(const Type& t, const DimBindings& env) {
  std::vector<int64_t> s;
  for (const DimExpr& d : t.dims) {
    auto v = d.evaluate(env);
    if (!v || *v < 0) return std::nullopt;
    s.push_back(*v);
  }
  return s;
}

uint64_t bytesAt(const codegen::KernelInterface& iface, const DimBindings& env) {
  uint64_t total = 0;
  for (const auto* types : {&iface.inputs, &iface.outputs})
    for (const Type& t : *types) {
      auto s = shapeAt(t, env);
      if (!s) return UINT64_MAX;
      uint64_t n = dtypeSize(t.dtype);
      for (int64_t d : *s) n *= static_cast<uint64_t>(d);
      total += n;
    }
  return total;
}

bool makeBuffers(const codegen::KernelInterface& iface, const DimBindings& env, Buffers& b, std::mt19937_64& rng) {
  for (const Type& t : iface.inputs) {
    auto s = shapeAt(t, env);
    if (!s) return false;
    b.ins.push_back(Tensor::zeros(t.dtype, *s));
    fillNonZero(b.ins.back(), rng);
  }
  for (const Type& t : iface.outputs) {
    auto s = shapeAt(t, env);
    if (!s) return false;
    b.outs.push_back(Tensor::zeros(t.dtype, *s));
  }
  for (Tensor& t : b.ins) b.inPtrs.push_back(t.bytes.data());
  // A kernel holding gathers reads a check cell after its inputs (codegen's
  // KernelFn); null: measuring runs report nothing (their data is random).
  b.inPtrs.push_back(nullptr);
  for (Tensor& t : b.outs) b.outPtrs.push_back(t.bytes.data());
  for (const std::string& s : iface.symbols) {
    auto it = env.find(s);
    if (it == env.end()) return false;
    b.sizes.push_back(it->second);
  }
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Samples of ns per call: one warm-up call, then batches long enough (~200 us) to time.
std::vector<double> sample(const std::function<void()>& call, int count) {
  auto t0 = Clock::now();
  call();
  double first = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  if (first > 5e7) count = std::min(count, 3);
  int reps = static_cast<int>(std::clamp(2e5 / std::max(first, 1.0), 1.0, 1e5));
  std::vector<double> out;
  for (int s = 0; s < count; ++s) {
    auto t = Clock::now();
    for (int r = 0; r < reps; ++r) call();
    out.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t).count() / reps);
  }
  return out;
}

// The grain a config passes to dscc_launch_kernel, capped at the unit count:
// every grain >= units means one serial call, so those configs share a measurement.
int64_t grainOf(const TuneConfig& c, int64_t work, int64_t units) {
  return std::min(std::max<int64_t>(c.chunk / std::max<int64_t>(work, 1), 1), std::max<int64_t>(units, 1));
}

// The deterministic cost model of --fake-timer: vector versions are cheaper
// per element, small chunks cost task overhead and large ones parallelism.
double fakeTime(const std::string& version, int64_t units, int64_t work, int64_t grain) {
  double elems = static_cast<double>(units) * static_cast<double>(std::max<int64_t>(work, 1));
  double perElem = version.rfind("v16", 0) == 0 ? (elems < 1e5 ? 0.55 : 0.35)
                   : version.rfind("v8", 0) == 0 ? 0.45
                   : version.rfind("v4", 0) == 0 ? 0.6
                                                 : 1.0;
  double tasks = std::ceil(static_cast<double>(units) / static_cast<double>(grain));
  return elems * perElem / std::min(tasks, 2.0) + 500.0 * tasks + 100.0;
}

double round01(double ns) { return std::round(ns * 10.0) / 10.0; }

}  // namespace

std::string tuneModel(const std::map<int, const codegen::ModelPlan*>& plans, const std::vector<WeightedPoint>& points,
                      TuneOptions& opts, TuningFile& out, bool* complete) {
  const std::vector<int> widths = {4, 8, 16};
  for (int w : widths)
    if (!plans.count(w)) return "no plan for vector width " + std::to_string(w);
  const codegen::ModelPlan& base = *plans.at(8);
  for (int w : widths)
    if (plans.at(w)->kernels.size() != base.kernels.size()) return "the plans for different vector widths disagree";
  auto start = Clock::now();
  out.kernels.clear();

  // Work units in canonical order: kernels in program order, sizes sorted.
  std::vector<Unit> all;
  for (size_t k = 0; k < base.kernels.size(); ++k) {
    const codegen::KernelPlan& kp = base.kernels[k];
    KernelTuning kt;
    kt.index = k;
    kt.symbol = kp.symbol;
    kt.kind = kp.kind;
    kt.fingerprint = kernelFingerprint(kp);
    kt.size = governingSize(kp).str();
    out.kernels.push_back(kt);
    if (!kp.hasKernel) continue;  // a BLAS call alone: nothing of ours to configure
    std::map<std::tuple<int64_t, int64_t, int64_t, std::vector<std::string>>, Unit> byKey;
    for (const WeightedPoint& p : points) {
      auto size = governingSize(kp).evaluate(p.dims), units = kp.iface.units.evaluate(p.dims),
           work = kp.iface.workPerUnit.evaluate(p.dims);
      if (!size || !units || !work) return "kernel " + kp.symbol + ": cannot evaluate its sizes at " + pointText(p.dims);
      std::vector<std::string> versions;
      for (int w : widths) {
        const codegen::KernelPlan& wk = plans.at(w)->kernels[k];
        versions.push_back(wk.versions[wk.chooseVersion(p.dims)].name());
      }
      auto key = std::make_tuple(*size, *units, *work, versions);
      auto [it, fresh] = byKey.try_emplace(key);
      if (fresh) it->second = Unit{k, p.dims, *size, *units, *work, 0, versions, 0};
      it->second.weight += p.weight;
    }
    out.kernels.back().pointsTotal = static_cast<int64_t>(byKey.size());
    for (auto& [key, u] : byKey) {
      u.canonical = all.size();
      all.push_back(u);
    }
  }
  std::vector<Unit> mine;
  for (const Unit& u : all)
    if (static_cast<int>(u.canonical % opts.shardCount) == opts.shardIndex) mine.push_back(u);
  // The heaviest points first, then the cheapest: a spent budget loses the least.
  std::stable_sort(mine.begin(), mine.end(), [](const Unit& a, const Unit& b) {
    if (a.weight != b.weight) return a.weight > b.weight;
    return static_cast<double>(a.units) * a.work < static_cast<double>(b.units) * b.work;
  });

  std::string err;
  std::unique_ptr<codegen::Jit> jit;
  dscc_context* ctx = nullptr;
  if (!opts.fakeTimer) {
    jit = codegen::Jit::create(&err, 2);
    if (!jit) return "cannot create the JIT: " + err;
    ctx = dscc_context_create(opts.threads);
    if (!ctx) return std::string("cannot create a runtime context: ") + dscc_status_message(nullptr);
  }
  std::unique_ptr<dscc_context, void (*)(dscc_context*)> ctxHolder(ctx, dscc_context_release);
  std::map<std::pair<size_t, std::string>, codegen::KernelFn> compiled;  // (kernel, version) -> function
  auto compile = [&](size_t k, int width, size_t v) -> codegen::KernelFn {
    const codegen::KernelPlan& kp = plans.at(width)->kernels[k];
    std::string vname = kp.versions[v].name();
    auto key = std::make_pair(k, vname);
    if (auto it = compiled.find(key); it != compiled.end()) return it->second;
    std::string fname = "tune.k" + std::to_string(k) + "." + vname;
    codegen::CodeModule m(fname);
    codegen::LoweredKernel lk = codegen::lowerKernelVersion(kp, v, m, fname);
    codegen::KernelFn fn = nullptr;
    std::string e;
    if (lk.ok() && jit->addModule(std::move(m), &e)) fn = reinterpret_cast<codegen::KernelFn>(jit->lookup(fname, &e));
    if (!fn && opts.note) opts.note("kernel " + kp.symbol + " version " + vname + " cannot be compiled: " + (lk.ok() ? e : lk.error));
    compiled[key] = fn;
    return fn;
  };

  const std::vector<TuneConfig> cfgs = cpuConfigs();
  size_t done = 0;
  bool stopped = false;
  std::mt19937_64 rng(0x5eed);
  for (const Unit& u : mine) {
    if (secondsSince(start) >= opts.budgetSeconds || (opts.interrupt && opts.interrupt->load())) {
      stopped = true;
      break;
    }
    const codegen::KernelPlan& kp = base.kernels[u.kernel];
    std::string what = "k" + std::to_string(u.kernel) + " " + kernelKindName(kp.kind) + " " + pointText(u.at);
    // Measured before (this kernel's code at these sizes, on this machine): reused.
    // The kernel by a SHA-256 of its printed fusion op (the file's 64-bit
    // fingerprint is a staleness check, too weak to stand for a measurement).
    std::string cacheKey = codegen::sha256Hex(kernelKindName(kp.kind) + std::string("\n") + printOp(*kp.fusion)) +
                           " size " + std::to_string(u.size) + " units " + std::to_string(u.units) + " work " + std::to_string(u.work) +
                           (opts.fakeTimer ? " fake" : " timed");
    for (const std::string& v : u.versions) cacheKey += " " + v;
    if (opts.lookup) {
      std::map<std::string, double> times;
      bool all = opts.lookup(cacheKey, times);
      for (const TuneConfig& c : cfgs) all = all && times.count(c.name());
      if (all) {
        Measurement m{u.at, u.size, u.units, u.work, u.weight, {}};
        for (const TuneConfig& c : cfgs) m.timesNs[c.name()] = times[c.name()];
        out.kernels[u.kernel].measurements.push_back(std::move(m));
        ++done;
        ++opts.reused;
        if (opts.progress) opts.progress({done, mine.size(), secondsSince(start), what + " (cached)"});
        continue;
      }
    }
    Buffers buf;
    if (!opts.fakeTimer) {
      if (bytesAt(kp.iface, u.at) > opts.maxBytes) {
        if (opts.note) opts.note("skipped " + what + ": its buffers exceed " + std::to_string(opts.maxBytes >> 20) + " MiB");
        ++done;
        continue;
      }
      if (!makeBuffers(kp.iface, u.at, buf, rng)) return "kernel " + kp.symbol + ": cannot size its buffers at " + pointText(u.at);
    }
    // Distinct (version, grain) pairs; configs that select the same pair share a measurement.
    std::map<std::pair<std::string, int64_t>, std::vector<double>> samples;
    std::map<std::pair<std::string, int64_t>, std::function<void()>> calls;
    bool aborted = false;
    for (const TuneConfig& c : cfgs) {
      size_t wi = std::find(widths.begin(), widths.end(), c.vectorWidth) - widths.begin();
      auto key = std::make_pair(u.versions[wi], grainOf(c, u.work, u.units));
      if (samples.count(key)) continue;
      if (secondsSince(start) >= opts.budgetSeconds || (opts.interrupt && opts.interrupt->load())) {
        aborted = true;
        break;
      }
      if (opts.fakeTimer) {
        samples[key] = {fakeTime(key.first, u.units, u.work, key.second)};
        continue;
      }
      const codegen::KernelPlan& wk = plans.at(c.vectorWidth)->kernels[u.kernel];
      codegen::KernelFn fn = compile(u.kernel, c.vectorWidth, wk.chooseVersion(u.at));
      if (!fn) return "kernel " + kp.symbol + " cannot be compiled for measuring";
      int64_t units = u.units, grain = key.second;
      calls[key] = [&buf, fn, units, grain, ctx] {
        dscc_launch_kernel(ctx, reinterpret_cast<dscc_kernel_fn>(fn), buf.inPtrs.data(), buf.outPtrs.data(),
                           buf.sizes.data(), units, grain);
      };
      samples[key] = sample(calls[key], 7);
    }
    if (aborted) {
      stopped = true;
      break;
    }
    // A close call (best two within 3%) is measured again and decided on all samples.
    if (!opts.fakeTimer && samples.size() > 1) {
      std::vector<std::pair<double, std::pair<std::string, int64_t>>> ranked;
      for (const auto& [key, s] : samples) ranked.push_back({median(s), key});
      std::sort(ranked.begin(), ranked.end());
      if (ranked[1].first < ranked[0].first * 1.03 && secondsSince(start) < opts.budgetSeconds)
        for (int r = 0; r < 2; ++r) {
          auto more = sample(calls[ranked[r].second], 7);
          auto& s = samples[ranked[r].second];
          s.insert(s.end(), more.begin(), more.end());
        }
    }
    Measurement m{u.at, u.size, u.units, u.work, u.weight, {}};
    for (const TuneConfig& c : cfgs) {
      size_t wi = std::find(widths.begin(), widths.end(), c.vectorWidth) - widths.begin();
      m.timesNs[c.name()] = round01(median(samples.at({u.versions[wi], grainOf(c, u.work, u.units)})));
    }
    if (opts.store) opts.store(cacheKey, m.timesNs);
    out.kernels[u.kernel].measurements.push_back(std::move(m));
    ++done;
    ++opts.measured;
    if (opts.progress) opts.progress({done, mine.size(), secondsSince(start), what});
  }
  if (complete) *complete = !stopped && done == mine.size();
  buildTables(out);
  return "";
}

}  // namespace dscc::tuner
