// Range tables from measurements (a DP over sorted sizes), the tuning YAML (write, read with located errors) and merging shards.
#include "tuner/TuningTable.h"
#include "tuner/YamlDocs.h"

#include <yaml-cpp/yaml.h>

#include "ir/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ir/Printer.h"

namespace dscc::tuner {

std::vector<TuneConfig> cpuConfigs() {
  std::vector<TuneConfig> out;
  for (int w : {4, 8, 16})
    for (int64_t c : {4096, 16384, 65536}) out.push_back({w, c});
  return out;
}

TuneConfig defaultConfig(KernelKind kind) {
  return {codegen::takesLoopVectorWidth(kind) ? codegen::kCpuLoopVectorWidth : codegen::kCpuVectorWidth, 16384};
}

std::optional<TuneConfig> parseConfigName(const std::string& s) {
  int w = 0;
  long long c = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "v%d.c%lld%c", &w, &c, &tail) != 2) return std::nullopt;
  if (w < 1 || c < 1 || TuneConfig{w, c}.name() != s) return std::nullopt;
  return TuneConfig{w, c};
}

DimExpr governingSize(const codegen::KernelPlan& k) {
  if (!k.iface.workPerUnit.isConst()) return k.iface.workPerUnit;
  return k.iface.units;
}

std::string kernelFingerprint(const codegen::KernelPlan& k) {
  std::string text = kernelKindName(k.kind) + std::string("\n") + printOp(*k.fusion);
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

TuneConfig configAt(const KernelTuning& k, int64_t size) {
  for (const TableRange& r : k.ranges)
    if (size >= r.from && size <= r.to) return r.config;
  return k.fallback;
}

namespace {

bool measurementLess(const Measurement& a, const Measurement& b) {
  return std::tie(a.size, a.units, a.work, a.at) < std::tie(b.size, b.units, b.work, b.at);
}

void buildKernel(KernelTuning& k, int maxVersions) {
  std::sort(k.measurements.begin(), k.measurements.end(), measurementLess);
  std::vector<TuneConfig> cfgs = cpuConfigs();
  size_t C = cfgs.size();
  k.ranges.clear();
  k.fallback = defaultConfig(k.kind);
  k.expect = {};
  k.hasFallback = true;
  if (k.measurements.empty()) return;
  // cost[j][c]: weight * time of config c over the points of the j-th distinct size.
  std::vector<int64_t> sizes;
  std::vector<std::vector<double>> cost;
  double totalW = 0;
  for (const Measurement& m : k.measurements) {
    if (sizes.empty() || sizes.back() != m.size) {
      sizes.push_back(m.size);
      cost.emplace_back(C, 0.0);
    }
    totalW += m.weight;
    for (size_t c = 0; c < C; ++c) cost.back()[c] += m.weight * m.timesNs.at(cfgs[c].name());
  }
  size_t M = sizes.size();
  std::vector<std::vector<double>> prefix(M + 1, std::vector<double>(C, 0.0));
  for (size_t j = 0; j < M; ++j)
    for (size_t c = 0; c < C; ++c) prefix[j + 1][c] = prefix[j][c] + cost[j][c];
  auto seg = [&](size_t i, size_t j, size_t* arg) {  // sizes [i, j)
    double best = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < C; ++c) {
      double v = prefix[j][c] - prefix[i][c];
      if (v < best) best = v, *arg = c;
    }
    return best;
  };
  size_t K = static_cast<size_t>(std::max(1, maxVersions));
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][j]: the least cost of sizes [0, j) in exactly s intervals; from[s][j]: where the last one starts.
  std::vector<std::vector<double>> best(K + 1, std::vector<double>(M + 1, inf));
  std::vector<std::vector<size_t>> from(K + 1, std::vector<size_t>(M + 1, 0));
  best[0][0] = 0;
  for (size_t s = 1; s <= K; ++s)
    for (size_t j = 1; j <= M; ++j)
      for (size_t i = s - 1; i < j; ++i) {
        if (best[s - 1][i] == inf) continue;
        size_t arg = 0;
        double v = best[s - 1][i] + seg(i, j, &arg);
        if (v < best[s][j]) best[s][j] = v, from[s][j] = i;
      }
  size_t bestS = 1;
  for (size_t s = 2; s <= K; ++s)
    if (best[s][M] < best[bestS][M]) bestS = s;
  std::vector<std::pair<size_t, size_t>> segs;  // [i, j)
  for (size_t s = bestS, j = M; s > 0; --s) {
    size_t i = from[s][j];
    segs.insert(segs.begin(), {i, j});
    j = i;
  }
  for (size_t q = 0; q < segs.size(); ++q) {
    auto [i, j] = segs[q];
    size_t arg = 0;
    seg(i, j, &arg);
    TableRange r{q == 0 ? sizes[i] : k.ranges.back().to + 1, q + 1 == segs.size() ? sizes[j - 1] : sizes[j] - 1, cfgs[arg]};
    if (!k.ranges.empty() && k.ranges.back().config == r.config) k.ranges.back().to = r.to;
    else k.ranges.push_back(r);
  }
  size_t single = 0;
  double singleCost = seg(0, M, &single);
  k.fallback = cfgs[single];
  size_t def = std::find(cfgs.begin(), cfgs.end(), defaultConfig(k.kind)) - cfgs.begin();
  double oracle = 0;
  for (size_t j = 0; j < M; ++j) {
    size_t arg = 0;
    oracle += seg(j, j + 1, &arg);
  }
  k.expect.tuned = best[bestS][M] / totalW;
  k.expect.bestSingle = singleCost / totalW;
  k.expect.defaults = prefix[M][def] / totalW;
  k.expect.oracle = oracle / totalW;
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    q += c;
  }
  return q + "\"";
}

std::string num(double v, const char* fmt = "%.1f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string expectText(const Expectation& e) {
  return "{tuned: " + num(e.tuned) + ", best_single: " + num(e.bestSingle) + ", default: " + num(e.defaults) +
         ", oracle: " + num(e.oracle) + "}";
}

std::string bindings(const DimBindings& b) {
  std::string s = "{";
  for (const auto& [k, v] : b) s += (s.size() > 1 ? ", " : "") + k + ": " + std::to_string(v);
  return s + "}";
}

// --- reading ---

// `line:col`, 1-based; yaml-cpp has no mark for an empty document, which
// then is at its start.
std::string markText(const YAML::Mark& m) {
  if (m.is_null() || m.line < 0) return "1:1";
  return std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

struct ReadError {
  YAML::Mark mark;
  std::string msg;
};

[[noreturn]] void bad(const YAML::Node& n, const std::string& msg) { throw ReadError{n.Mark(), msg}; }

// A map's keys: each one of `allowed`, each at most once. yaml-cpp keeps a
// repeated key (and `map[key]` returns the first), so without this a
// hand-edited file's second entry would be silently ignored.
void strictKeys(const YAML::Node& map, std::initializer_list<const char*> allowed, const std::string& where) {
  if (!map.IsMap()) bad(map, where + " must be a map");
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) bad(it->first, "a key of " + where + " must be a name");
    const std::string& k = it->first.Scalar();
    bool known = false;
    std::string list;
    for (const char* a : allowed) {
      known |= k == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!known) bad(it->first, "unknown key '" + k + "' in " + where + " (expected " + list + ")");
    if (!seen.insert(k).second) bad(it->first, "duplicate key '" + k + "' in " + where);
  }
}

YAML::Node need(const YAML::Node& map, const std::string& key, const std::string& where) {
  if (!map.IsMap()) bad(map, where + " must be a map");
  YAML::Node n = map[key];
  if (!n) bad(map, where + " has no '" + key + "'");
  return n;
}

std::string str(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) bad(n, what + " must be a scalar");
  return n.Scalar();
}

int64_t integer(const YAML::Node& n, const std::string& what) {
  try {
    if (n.IsScalar()) return n.as<int64_t>();
  } catch (const YAML::Exception&) {
  }
  bad(n, what + " must be an integer");
}

// Every count, size and bound in the file is >= 0.
int64_t count(const YAML::Node& n, const std::string& what) {
  int64_t v = integer(n, what);
  if (v < 0) bad(n, what + " must be >= 0, not " + std::to_string(v));
  return v;
}

// Times and weights: finite and >= 0 (a weight > 0).
double number(const YAML::Node& n, const std::string& what, bool positive = false) {
  double v = 0;
  bool ok = false;
  try {
    if (n.IsScalar()) v = n.as<double>(), ok = true;
  } catch (const YAML::Exception&) {
  }
  if (!ok) bad(n, what + " must be a number");
  if (!std::isfinite(v)) bad(n, what + " must be finite, not " + n.Scalar());
  if (positive ? v <= 0 : v < 0) bad(n, what + " must be " + (positive ? "> 0" : ">= 0") + ", not " + n.Scalar());
  return v;
}

// Only a configuration the tuner measures (cpuConfigs) can be in a file:
// anything else was not measured and may not even compile (v3: no such
// vector width in the versions).
TuneConfig config(const YAML::Node& n, const std::string& what) {
  auto c = parseConfigName(str(n, what));
  std::string list;
  for (const TuneConfig& k : cpuConfigs()) list += (list.empty() ? "" : ", ") + k.name();
  if (!c) bad(n, what + " '" + n.Scalar() + "' is not a configuration like v8.c16384");
  auto all = cpuConfigs();
  if (std::find(all.begin(), all.end(), *c) == all.end())
    bad(n, what + " '" + n.Scalar() + "' is not one the tuner measures (" + list + ")");
  return *c;
}

KernelTuning readKernel(const YAML::Node& n) {
  KernelTuning k;
  strictKeys(n, {"index", "symbol", "kind", "fingerprint", "size", "points", "measured", "fallback", "ranges",
                 "expected_ns", "measurements"},
             "a kernel");
  k.index = static_cast<size_t>(count(need(n, "index", "a kernel"), "index"));
  std::string w = "kernel " + std::to_string(k.index);
  k.symbol = str(need(n, "symbol", w), "symbol");
  YAML::Node kind = need(n, "kind", w);
  std::string kindName = str(kind, "kind");
  // The kinds planModel gives kernels; anything else was not written by the
  // tuner (and a kernel's kind is not something a range table can change).
  std::optional<KernelKind> kk = parseKernelKind(kindName);
  if (!kk)
    bad(kind, "kind '" + kindName + "' of " + w + " is not a kernel kind (loop, stitch, input, library, generic)");
  k.kind = *kk;
  k.fingerprint = str(need(n, "fingerprint", w), "fingerprint");
  k.size = str(need(n, "size", w), "size");
  k.pointsTotal = count(need(n, "points", w), "points");
  if (YAML::Node m = n["measured"]) count(m, "measured");
  k.line = n.Mark().line + 1;
  k.col = n.Mark().column + 1;
  if (YAML::Node fb = n["fallback"]) k.fallback = config(fb, "fallback");
  else k.hasFallback = false;
  YAML::Node ranges = need(n, "ranges", w);
  if (!ranges.IsSequence()) bad(ranges, "ranges must be a list");
  if (ranges.size() > size_t(kMaxTuningRanges))
    bad(ranges, w + " has " + std::to_string(ranges.size()) + " ranges, over the limit of " +
                    std::to_string(kMaxTuningRanges));
  for (const auto& r : ranges) {
    TableRange tr;
    tr.line = r.Mark().line + 1;
    tr.col = r.Mark().column + 1;
    strictKeys(r, {"from", "to", "config"}, "a range");
    tr.from = count(need(r, "from", "a range"), "from");
    tr.to = count(need(r, "to", "a range"), "to");
    tr.config = config(need(r, "config", "a range"), "config");
    if (tr.from > tr.to) bad(r, "range [" + std::to_string(tr.from) + ", " + std::to_string(tr.to) + "] of " + w + " is reversed");
    k.ranges.push_back(tr);
  }
  if (YAML::Node ms = n["measurements"]) {
    if (!ms.IsSequence()) bad(ms, "measurements must be a list");
    if (ms.size() > size_t(kMaxTuningMeasurements))
      bad(ms, w + " has " + std::to_string(ms.size()) + " measurements, over the limit of " +
                  std::to_string(kMaxTuningMeasurements));
    for (const auto& m : ms) {
      Measurement x;
      strictKeys(m, {"at", "size", "units", "work", "weight", "ns"}, "a measurement");
      YAML::Node at = need(m, "at", "a measurement");
      if (!at.IsMap()) bad(at, "at must be a map of sizes");
      for (auto it = at.begin(); it != at.end(); ++it) {
        std::string sym = str(it->first, "a symbol");
        if (x.at.count(sym)) bad(it->first, "duplicate key '" + sym + "' in at");
        x.at[sym] = count(it->second, "a size");
      }
      x.size = count(need(m, "size", "a measurement"), "size");
      x.units = count(need(m, "units", "a measurement"), "units");
      x.work = count(need(m, "work", "a measurement"), "work");
      x.weight = number(need(m, "weight", "a measurement"), "weight", true);
      YAML::Node ns = need(m, "ns", "a measurement");
      std::vector<std::string> keep;
      for (const TuneConfig& c : cpuConfigs()) keep.push_back(c.name());
      if (!ns.IsMap()) bad(ns, "ns must be a map of configurations to times");
      std::set<std::string> seenNs;
      for (auto it = ns.begin(); it != ns.end(); ++it) {
        std::string c = str(it->first, "a configuration");
        if (std::find(keep.begin(), keep.end(), c) == keep.end())
          bad(it->first, "unknown configuration '" + c + "' in ns (the tuner measures v4, v8, v16 with c4096, c16384, c65536)");
        if (!seenNs.insert(c).second) bad(it->first, "duplicate key '" + c + "' in ns");
      }
      for (const TuneConfig& c : cpuConfigs()) x.timesNs[c.name()] = number(need(ns, c.name(), "ns"), "a time");
      k.measurements.push_back(std::move(x));
    }
  }
  return k;
}

}  // namespace

void buildTables(TuningFile& t) {
  t.expect = {};
  for (KernelTuning& k : t.kernels) {
    buildKernel(k, t.maxVersions);
    t.expect.tuned += k.expect.tuned;
    t.expect.bestSingle += k.expect.bestSingle;
    t.expect.defaults += k.expect.defaults;
    t.expect.oracle += k.expect.oracle;
  }
}

std::string writeTuning(const TuningFile& t) {
  std::ostringstream o;
  o << "# dscc-tune: kernel configurations per size range (schema: docs/tuning.md)\n";
  o << "version: " << t.version << "\n";
  o << "compiler: " << quoted(t.compiler) << "\n";
  o << "target: " << quoted(t.target) << "\n";
  o << "device: " << quoted(t.device) << "\n";
  o << "func: " << quoted(t.func) << "\n";
  o << "source: " << quoted(t.source) << "\n";
  o << "shapes: " << quoted(t.shapes) << "\n";
  o << "max_versions: " << t.maxVersions << "\n";
  if (!t.shard.empty()) o << "shard: " << quoted(t.shard) << "\n";
  o << "expected_ns: " << expectText(t.expect) << "\n";
  o << "kernels:\n";
  for (const KernelTuning& k : t.kernels) {
    o << "  - index: " << k.index << "\n";
    o << "    symbol: " << quoted(k.symbol) << "\n";
    o << "    kind: " << kernelKindName(k.kind) << "\n";
    o << "    fingerprint: " << quoted(k.fingerprint) << "\n";
    o << "    size: " << quoted(k.size) << "\n";
    o << "    points: " << k.pointsTotal << "\n";
    o << "    measured: " << k.measurements.size() << "\n";
    o << "    fallback: " << k.fallback.name() << "\n";
    o << "    ranges:" << (k.ranges.empty() ? " []" : "") << "\n";
    for (const TableRange& r : k.ranges)
      o << "      - {from: " << r.from << ", to: " << r.to << ", config: " << r.config.name() << "}\n";
    o << "    expected_ns: " << expectText(k.expect) << "\n";
    o << "    measurements:" << (k.measurements.empty() ? " []" : "") << "\n";
    for (const Measurement& m : k.measurements) {
      o << "      - {at: " << bindings(m.at) << ", size: " << m.size << ", units: " << m.units << ", work: " << m.work
        << ", weight: " << num(m.weight, "%.17g") << ",\n         ns: {";
      bool first = true;
      for (const TuneConfig& c : cpuConfigs()) {
        auto it = m.timesNs.find(c.name());
        o << (first ? "" : ", ") << c.name() << ": " << num(it == m.timesNs.end() ? 0.0 : it->second);
        first = false;
      }
      o << "}}\n";
    }
  }
  return o.str();
}

bool readTuning(const std::string& file, TuningFile& out, std::string& err) {
  out = TuningFile{};
  std::string text, why;
  // 64 MiB: far above any tuning file (each range is a line), and a bound on
  // what a hostile one costs to parse.
  if (!readRegularFile(file, text, &why, uintmax_t(64) << 20)) {
    err = file + ": error: cannot read the file" + (why.rfind("cannot open", 0) == 0 ? "" : ": " + why);
    return false;
  }
  try {
    // A second document is an error rather than silently ignored
    // (YAML::Load reads the first only); see secondDocumentLine.
    if (int line = secondDocumentLine(text)) {
      YAML::Mark m;
      m.line = line - 1;  // yaml-cpp's marks count from 0
      throw ReadError{m, "a second YAML document: a tuning file is one document (remove the '---' and what follows)"};
    }
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) bad(root, "a tuning file must be a map, not " + std::string(root.IsNull() ? "empty" : "this"));
    YAML::Node v = need(root, "version", "the file");
    out.version = static_cast<int>(integer(v, "version"));
    if (out.version != kTuningSchemaVersion)
      bad(v, "tuning schema version " + std::to_string(out.version) + " is not supported (this dscc reads version " +
                 std::to_string(kTuningSchemaVersion) + ")");
    // After the version: a file that is not a tuning file at all says so.
    strictKeys(root, {"version", "compiler", "target", "device", "func", "source", "shapes", "max_versions", "shard",
                      "expected_ns", "kernels"},
               "the file");
    out.compiler = str(need(root, "compiler", "the file"), "compiler");
    {
      // What `dscc compile --target` takes: cpu or cuda:sm_NN (an empty or
      // tagged scalar, `target: !x`, is none of them).
      YAML::Node tn = need(root, "target", "the file");
      out.target = str(tn, "target");
      const std::string sm = "cuda:sm_";
      bool cuda = out.target.rfind(sm, 0) == 0 && out.target.size() > sm.size() &&
                  out.target.find_first_not_of("0123456789", sm.size()) == std::string::npos;
      if (out.target != "cpu" && !cuda) bad(tn, "target must be cpu or cuda:sm_NN, not '" + out.target + "'");
    }
    out.device = str(need(root, "device", "the file"), "device");
    out.func = str(need(root, "func", "the file"), "func");
    if (YAML::Node s = root["source"]) out.source = str(s, "source");
    if (YAML::Node s = root["shapes"]) out.shapes = str(s, "shapes");
    if (YAML::Node s = root["shard"]) out.shard = str(s, "shard");
    YAML::Node mv = need(root, "max_versions", "the file");
    int64_t maxV = integer(mv, "max_versions");
    if (maxV < 1 || maxV > kMaxTuningVersions)
      bad(mv, "max_versions must be in [1, " + std::to_string(kMaxTuningVersions) + "], not " + std::to_string(maxV));
    out.maxVersions = static_cast<int>(maxV);
    YAML::Node ks = need(root, "kernels", "the file");
    if (!ks.IsSequence()) bad(ks, "kernels must be a list");
    if (ks.size() > size_t(kMaxTuningKernels))
      bad(ks, "the file has " + std::to_string(ks.size()) + " kernels, over the limit of " +
                  std::to_string(kMaxTuningKernels));
    std::map<size_t, int> lineOfIndex;
    for (const auto& kn : ks) {
      KernelTuning k = readKernel(kn);
      auto [it, fresh] = lineOfIndex.emplace(k.index, k.line);
      if (!fresh)
        bad(kn, "duplicate entry for kernel " + std::to_string(k.index) + " (first at line " +
                    std::to_string(it->second) + ")");
      out.kernels.push_back(std::move(k));
    }
  } catch (const ReadError& e) {
    err = file + ":" + markText(e.mark) + ": error: " + e.msg;
    return false;
  } catch (const YAML::Exception& e) {
    err = file + ":" + markText(e.mark) + ": error: bad YAML: " + e.msg;
    return false;
  }
  // Ranges are kept as written (they may be edited by hand; `dscc compile`
  // checks them); expectations are derived and left to buildTables.
  return true;
}

bool mergeTunings(const std::vector<TuningFile>& in, TuningFile& out, std::string& err) {
  if (in.empty()) {
    err = "nothing to merge";
    return false;
  }
  out = in[0];
  out.shard.clear();
  for (KernelTuning& k : out.kernels) k.measurements.clear();
  for (const TuningFile& t : in) {
    auto differ = [&](const std::string& what, const std::string& a, const std::string& b) {
      err = "cannot merge: " + what + " differs ('" + a + "' and '" + b + "')";
      return false;
    };
    if (t.func != out.func) return differ("func", out.func, t.func);
    if (t.target != out.target) return differ("target", out.target, t.target);
    if (t.device != out.device) return differ("device", out.device, t.device);
    if (t.compiler != out.compiler) return differ("compiler", out.compiler, t.compiler);
    if (t.maxVersions != out.maxVersions)
      return differ("max_versions", std::to_string(out.maxVersions), std::to_string(t.maxVersions));
    if (t.kernels.size() != out.kernels.size())
      return differ("the number of kernels", std::to_string(out.kernels.size()), std::to_string(t.kernels.size()));
    for (size_t i = 0; i < t.kernels.size(); ++i) {
      KernelTuning& k = out.kernels[i];
      const KernelTuning& o = t.kernels[i];
      if (o.fingerprint != k.fingerprint) return differ("the fingerprint of kernel " + std::to_string(i), k.fingerprint, o.fingerprint);
      k.pointsTotal = std::max(k.pointsTotal, o.pointsTotal);
      for (const Measurement& m : o.measurements) {
        auto same = std::find_if(k.measurements.begin(), k.measurements.end(), [&](const Measurement& x) {
          return x.at == m.at && x.size == m.size && x.units == m.units && x.work == m.work;
        });
        if (same == k.measurements.end()) k.measurements.push_back(m);
        else if (m.timesNs < same->timesNs) *same = m;  // measured twice: the same choice whatever the order
      }
    }
  }
  buildTables(out);
  return true;
}

}  // namespace dscc::tuner
