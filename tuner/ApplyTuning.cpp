// Checking tuning tables against a plan (staleness, overlaps, coverage of the declared domain) and attaching them to its kernels.
#include "tuner/ApplyTuning.h"

#include <algorithm>
#include <climits>

namespace dscc::tuner {

std::set<int> tuningWidths(const TuningFile& t) {
  std::set<int> w;
  for (const KernelTuning& k : t.kernels) {
    if (k.hasFallback) w.insert(k.fallback.vectorWidth);
    for (const TableRange& r : k.ranges) w.insert(r.config.vectorWidth);
  }
  return w;
}

std::string applyTuning(const TuningFile& t, const std::string& file, ShapeSolver& solver, codegen::ModelPlan& plan,
                        const std::map<int, const codegen::ModelPlan*>& plans, std::ostream& warn) {
  const std::string& fname = plan.func->name;
  if (t.func != fname) {
    warn << file << ": warning: the tuning is for @" << t.func << ", not @" << fname << "; it is not used\n";
    return "";
  }
  if (t.target != "cpu") {
    warn << file << ": warning: the tuning is for target " << t.target << ", not cpu; it is not used\n";
    return "";
  }
  // Located like every other reader error: `file:line:col:` of the kernel or range.
  auto at = [&](int line, int col) { return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: "; };
  for (const KernelTuning& k : t.kernels) {
    if (k.index >= plan.kernels.size())
      return at(k.line, k.col) + "kernel " + std::to_string(k.index) + " does not exist: @" + fname + " has " +
             std::to_string(plan.kernels.size()) + " kernels";
    codegen::KernelPlan& kp = plan.kernels[k.index];
    std::string fp = kernelFingerprint(kp), size = governingSize(kp).str();
    if (fp != k.fingerprint || size != k.size) {
      warn << file << ":" << k.line << ":" << k.col << ": warning: kernel " << k.index << " (" << kp.symbol << ") is stale: "
           << (fp != k.fingerprint ? "its fingerprint is " + fp + ", the file has " + k.fingerprint
                                   : "its ranges are over " + size + ", the file's over " + k.size)
           << "; the default configuration is used\n";
      continue;
    }
    // A BLAS call alone has nothing to configure; an unmeasured kernel keeps the default.
    if (!kp.hasKernel) continue;
    if (k.ranges.empty() && (!k.hasFallback || k.fallback == defaultConfig(kp.kind))) continue;
    std::vector<TableRange> rs = k.ranges;
    std::sort(rs.begin(), rs.end(), [](const TableRange& a, const TableRange& b) {
      return std::tie(a.from, a.to, a.line) < std::tie(b.from, b.to, b.line);
    });
    for (size_t i = 1; i < rs.size(); ++i)
      if (rs[i].from <= rs[i - 1].to)
        return at(rs[i].line, rs[i].col) + "kernel " + std::to_string(k.index) + ": range [" + std::to_string(rs[i].from) + ", " +
               std::to_string(rs[i].to) + "] overlaps [" + std::to_string(rs[i - 1].from) + ", " +
               std::to_string(rs[i - 1].to) + "] (line " + std::to_string(rs[i - 1].line) + ") at " + k.size + " = " +
               std::to_string(rs[i].from);
    if (!k.hasFallback) {
      // Without a fallback every size the facts allow must be in some range.
      Interval dom = solver.bounds(governingSize(kp));
      int64_t cur = dom.lo;
      bool covered = false;
      for (const TableRange& r : rs) {
        if (r.to < cur) continue;
        if (r.from > cur) break;
        if (r.to >= dom.hi) {
          covered = true;
          break;
        }
        cur = r.to + 1;
      }
      if (!covered)
        return at(k.line, k.col) + "kernel " + std::to_string(k.index) + " has no fallback and no range covers " + k.size +
               " = " + std::to_string(cur) + " (the facts allow " + k.size + " in [" + std::to_string(dom.lo) + ", " +
               (dom.hi == INT64_MAX ? std::string("inf") : std::to_string(dom.hi)) + "])";
    }
    auto tp = std::make_shared<codegen::KernelTuningPlan>();
    tp->size = governingSize(kp);
    auto configIndex = [&](const TuneConfig& c) -> size_t {
      for (size_t i = 0; i < tp->configs.size(); ++i)
        if (tp->configs[i].name == c.name()) return i;
      auto it = plans.find(c.vectorWidth);
      codegen::TunedConfig tc{it != plans.end() ? it->second->kernels[k.index] : kp, c.chunk, c.name()};
      tc.plan.tuning = nullptr;
      tp->configs.push_back(std::move(tc));
      return tp->configs.size() - 1;
    };
    for (const TableRange& r : rs) {
      if (!plans.count(r.config.vectorWidth)) return at(r.line, r.col) + "no plan for vector width " + std::to_string(r.config.vectorWidth);
      tp->ranges.push_back({r.from, r.to, configIndex(r.config)});
    }
    tp->fallback = configIndex(k.hasFallback ? k.fallback : defaultConfig(kp.kind));
    kp.tuning = tp;
  }
  return "";
}

std::string loadTuning(const std::string& file, ShapeSolver& solver, codegen::ModelPlan& plan, int baseWidth,
                       const std::function<const codegen::ModelPlan*(int)>& planWidth, std::ostream& warn) {
  TuningFile t;
  std::string err;
  if (!readTuning(file, t, err)) return err;
  std::map<int, const codegen::ModelPlan*> plans;
  for (int w : tuningWidths(t)) {
    if (w < 1 || w > 64) return file + ": error: vector width " + std::to_string(w) + " is out of range (1 to 64)";
    if (w == baseWidth) {
      plans[w] = &plan;
      continue;
    }
    const codegen::ModelPlan* p = planWidth(w);
    if (!p) return file + ": error: cannot plan @" + plan.func->name + " with vector width " + std::to_string(w);
    if (p->kernels.size() != plan.kernels.size()) return file + ": error: plans with different vector widths disagree";
    plans[w] = p;
  }
  return applyTuning(t, file, solver, plan, plans, warn);
}

}  // namespace dscc::tuner
