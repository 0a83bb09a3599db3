// Shape distribution files: YAML parsing with located errors, seeded draws, merging and checks against the `where` facts.
#include "tuner/ShapeDistribution.h"
#include "tuner/YamlDocs.h"

#include <yaml-cpp/yaml.h>

#include "ir/Diagnostics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace dscc::tuner {
namespace {

// Thrown inside the parser; turned into one located message.
struct LocatedError {
  YamlLoc loc;
  std::string msg;
};

YamlLoc locOf(const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

[[noreturn]] void fail(const YAML::Node& n, const std::string& msg) { throw LocatedError{locOf(n), msg}; }

std::string kindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    default: return "'" + n.Scalar() + "'";
  }
}

int64_t toInt(const YAML::Node& n, const std::string& what) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return v;
  }
  fail(n, what + " must be an integer, not " + kindName(n));
}

double toWeight(const YAML::Node& n, const std::string& what) {
  double v = 0;
  bool ok = false;
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    ok = !s.empty() && end == s.c_str() + s.size() && std::isfinite(v);
  }
  if (!ok) fail(n, what + " must be a number, not " + kindName(n));
  if (v <= 0) fail(n, what + " must be positive, not " + n.Scalar());
  return v;
}

std::string keyOf(const YAML::const_iterator& it) {
  if (!it->first.IsScalar()) fail(it->first, "a key must be a name, not " + kindName(it->first));
  return it->first.Scalar();
}

// yaml-cpp keeps a repeated key; the loops below would let the last one win
// silently, so every map's keys go through this first.
std::string uniqueKey(const YAML::const_iterator& it, std::set<std::string>& seen, const std::string& where) {
  std::string k = keyOf(it);
  if (!seen.insert(k).second) fail(it->first, "duplicate key '" + k + "' in " + where);
  return k;
}

void expectMap(const YAML::Node& n, const std::string& what) {
  if (!n.IsMap()) fail(n, what + " must be a map, not " + kindName(n));
}

DimSpec parseDim(const std::string& name, const YAML::Node& key, const YAML::Node& n) {
  DimSpec d;
  d.name = name;
  d.loc = locOf(key);
  expectMap(n, "dims." + name);
  // Node assignment in yaml-cpp writes through to the node assigned to: keep copies in optionals.
  std::optional<YAML::Node> ov, ow, orange, od;
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = uniqueKey(it, seen, "dims." + name);
    if (k == "values") ov.emplace(it->second);
    else if (k == "weights") ow.emplace(it->second);
    else if (k == "range") orange.emplace(it->second);
    else if (k == "dist") od.emplace(it->second);
    else fail(it->first, "unknown key '" + k + "' in dims." + name + " (expected values, weights, range, dist)");
  }
  if (ov && orange) fail(key, "dims." + name + " has both values and range; give one");
  if (!ov && !orange) fail(key, "dims." + name + " needs values or range");
  YAML::Node values = ov ? *ov : YAML::Node(), weights = ow ? *ow : YAML::Node(), range = orange ? *orange : YAML::Node(),
             dist = od ? *od : YAML::Node();
  if (ov) {
    if (od) fail(dist, "dims." + name + ": dist applies to a range, not to values");
    if (!values.IsSequence()) fail(values, "dims." + name + ".values must be a list, not " + kindName(values));
    if (values.size() == 0) fail(values, "dims." + name + ".values is empty");
    if (values.size() > size_t(kMaxDistributionValues))
      fail(values, "dims." + name + ".values has " + std::to_string(values.size()) + " entries, over the limit of " +
                       std::to_string(kMaxDistributionValues));
    for (const auto& v : values) {
      int64_t x = toInt(v, "a value of dims." + name);
      if (x < 0) fail(v, "a size of dims." + name + " must be >= 0, not " + std::to_string(x));
      d.values.push_back(x);
    }
    if (ow) {
      if (!weights.IsSequence()) fail(weights, "dims." + name + ".weights must be a list, not " + kindName(weights));
      if (weights.size() != values.size())
        fail(weights, "dims." + name + " has " + std::to_string(values.size()) + " values but " +
                          std::to_string(weights.size()) + " weights");
      double total = 0;
      for (const auto& w : weights) {
        d.weights.push_back(toWeight(w, "a weight of dims." + name));
        total += d.weights.back();
        if (!std::isfinite(total)) fail(w, "the weights of dims." + name + " add up to more than a double holds");
      }
    } else {
      d.weights.assign(d.values.size(), 1.0);
    }
    return d;
  }
  if (ow) fail(weights, "dims." + name + ": weights apply to values, not to a range");
  d.isRange = true;
  if (!range.IsSequence())
    fail(range, "dims." + name + ".range must be a list [lo, hi], not " + kindName(range));
  if (range.size() != 2)
    fail(range, "dims." + name + ".range must be a list [lo, hi] of 2 entries, not of " +
                    std::to_string(range.size()));
  d.lo = toInt(range[0], "the low end of dims." + name + ".range");
  d.hi = toInt(range[1], "the high end of dims." + name + ".range");
  if (d.lo < 0) fail(range[0], "dims." + name + ".range starts below 0");
  if (d.lo > d.hi)
    fail(range, "dims." + name + ".range [" + std::to_string(d.lo) + ", " + std::to_string(d.hi) + "] is reversed (lo > hi)");
  if (od) {
    if (!dist.IsScalar() || (dist.Scalar() != "uniform" && dist.Scalar() != "log-uniform"))
      fail(dist, "dims." + name + ".dist must be uniform or log-uniform, not " + kindName(dist));
    d.logUniform = dist.Scalar() == "log-uniform";
    if (d.logUniform && d.lo < 1) fail(range[0], "dims." + name + ": a log-uniform range must start at 1 or more");
  }
  return d;
}

PointSpec parsePoint(const YAML::Node& n, size_t index) {
  PointSpec p;
  p.loc = locOf(n);
  expectMap(n, "points[" + std::to_string(index) + "]");
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = uniqueKey(it, seen, "points[" + std::to_string(index) + "]");
    if (k == "weight") {
      p.weight = toWeight(it->second, "the weight of points[" + std::to_string(index) + "]");
      continue;
    }
    int64_t v = toInt(it->second, "size " + k + " of points[" + std::to_string(index) + "]");
    if (v < 0) fail(it->second, "size " + k + " of points[" + std::to_string(index) + "] must be >= 0");
    p.dims[k] = v;
  }
  return p;
}

void parseTop(const YAML::Node& root, DistributionSpec& out) {
  if (!root.IsMap()) fail(root, "a shape distribution must be a map (func, seed, draws, dims, points), not " + kindName(root));
  std::set<std::string> seen;
  for (auto it = root.begin(); it != root.end(); ++it) {
    std::string k = uniqueKey(it, seen, "the file");
    // A copy: `it->second` is a proxy that dies with the expression (ASan, fuzz_shapes).
    const YAML::Node v = it->second;
    if (k == "func") {
      if (!v.IsScalar()) fail(v, "func must be a function name, not " + kindName(v));
      out.func = v.Scalar();
      if (!out.func.empty() && out.func[0] == '@') out.func.erase(0, 1);
      out.funcLoc = locOf(v);
    } else if (k == "seed") {
      int64_t s = toInt(v, "seed");
      if (s < 0) fail(v, "seed must be >= 0");
      out.seed = static_cast<uint64_t>(s);
    } else if (k == "draws") {
      out.draws = toInt(v, "draws");
      out.drawsLoc = locOf(v);
      if (out.draws < 0) fail(v, "draws must be >= 0");
      if (out.draws > kMaxDraws)
        fail(v, "draws is " + std::to_string(out.draws) + ", over the limit of " + std::to_string(kMaxDraws));
    } else if (k == "dims") {
      out.dimsLoc = locOf(it->first);
      expectMap(v, "dims");
      std::set<std::string> seenDims;
      for (auto d = v.begin(); d != v.end(); ++d)
        out.dims.push_back(parseDim(uniqueKey(d, seenDims, "dims"), d->first, d->second));
    } else if (k == "points") {
      if (!v.IsSequence()) fail(v, "points must be a list, not " + kindName(v));
      if (v.size() > size_t(kMaxPoints))
        fail(v, "points has " + std::to_string(v.size()) + " entries, over the limit of " + std::to_string(kMaxPoints));
      double total = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        out.points.push_back(parsePoint(v[i], i));
        total += out.points.back().weight;
        if (!std::isfinite(total)) fail(v[i], "the weights of points add up to more than a double holds");
      }
    } else {
      fail(it->first, "unknown key '" + k + "' (expected func, seed, draws, dims, points)");
    }
  }
  if (out.draws > 0 && out.dims.empty()) fail(root, "draws is " + std::to_string(out.draws) + " but no dims describe how to draw");
  if (out.draws == 0 && out.points.empty()) fail(root, "no points: give draws with dims, or points");
}

// The message's quoted bytes (keys, yaml-cpp's view of a binary file) are escaped.
std::string located(const std::string& file, YamlLoc l, const std::string& msg) {
  if (l.line == 0) return file + ":1:1: error: " + escapeNonPrintable(msg);  // yaml-cpp marks nothing in an empty file
  return file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col) + ": error: " + escapeNonPrintable(msg);
}

// A double in [0, 1) from 53 random bits.
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// An integer in [0, n) without modulo bias (n >= 1).
uint64_t below(std::mt19937_64& rng, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    uint64_t x = rng();
    if (x < limit) return x % n;
  }
}

int64_t draw(const DimSpec& d, std::mt19937_64& rng) {
  if (!d.isRange) {
    double total = 0;
    for (double w : d.weights) total += w;
    double u = unit(rng) * total, acc = 0;
    for (size_t i = 0; i < d.values.size(); ++i) {
      acc += d.weights[i];
      if (u < acc) return d.values[i];
    }
    return d.values.back();
  }
  if (!d.logUniform) return d.lo + static_cast<int64_t>(below(rng, static_cast<uint64_t>(d.hi - d.lo) + 1));
  // Uniform in log space over [lo, hi + 1), so every integer has its share.
  double a = std::log(static_cast<double>(d.lo)), b = std::log(static_cast<double>(d.hi) + 1.0);
  auto v = static_cast<int64_t>(std::floor(std::exp(a + unit(rng) * (b - a))));
  return std::clamp(v, d.lo, d.hi);
}

}  // namespace

std::vector<std::string> inputSymbols(const Function& f) {
  std::set<std::string> syms;
  for (const auto& a : f.args)
    for (const DimExpr& d : a->type.dims) d.collectSymbols(syms);
  return {syms.begin(), syms.end()};
}

std::string pointText(const DimBindings& p) {
  std::string s = "{";
  for (const auto& [k, v] : p) s += (s.size() > 1 ? ", " : "") + k + ": " + std::to_string(v);
  return s + "}";
}

bool parseDistribution(const std::string& file, const std::string& text, DistributionSpec& out, std::string& err) {
  out = DistributionSpec{};
  out.file = file;
  try {
    // A second document is an error rather than silently ignored
    // (YAML::Load reads the first only); see secondDocumentLine.
    if (int line = secondDocumentLine(text))
      throw LocatedError{YamlLoc{line, 1},
                         "a second YAML document: a shape file is one document (remove the '---' and what follows)"};
    parseTop(YAML::Load(text), out);
  } catch (const LocatedError& e) {
    err = located(file, e.loc, e.msg);
    return false;
  } catch (const YAML::Exception& e) {
    YamlLoc l;
    if (!e.mark.is_null()) l = {e.mark.line + 1, e.mark.column + 1};
    err = located(file, l, "bad YAML: " + e.msg);
    return false;
  }
  return true;
}

bool loadDistribution(const std::string& file, DistributionSpec& out, std::string& err) {
  std::string text, why;
  if (!readRegularFile(file, text, &why, uintmax_t(64) << 20)) {
    err = file + ": error: cannot read the file" + (why.rfind("cannot open", 0) == 0 ? "" : ": " + why);
    return false;
  }
  return parseDistribution(file, text, out, err);
}

bool expandDistribution(const DistributionSpec& spec, const Function& f, std::vector<WeightedPoint>& out,
                        std::string& err) {
  std::vector<std::string> syms = inputSymbols(f);
  std::set<std::string> symSet(syms.begin(), syms.end());
  auto symList = [&] {
    std::string s;
    for (const auto& x : syms) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  if (spec.draws > 0) {
    std::set<std::string> described;
    for (const DimSpec& d : spec.dims) {
      if (!symSet.count(d.name)) {
        err = located(spec.file, d.loc, "@" + f.name + " has no symbol '" + d.name + "' (its symbols: " + symList() + ")");
        return false;
      }
      described.insert(d.name);
    }
    for (const std::string& s : syms)
      if (!described.count(s)) {
        err = located(spec.file, spec.dimsLoc, "symbol '" + s + "' of @" + f.name + " is not described in dims");
        return false;
      }
  }
  std::map<DimBindings, double> merged;
  auto check = [&](const DimBindings& p, YamlLoc loc, const std::string& what) {
    for (const Fact& fact : f.facts) {
      std::string why;
      if (!fact.holds(p, &why)) {
        err = located(spec.file, loc, what + " " + pointText(p) + " breaks the fact '" + fact.str() + "' of @" + f.name);
        return false;
      }
    }
    return true;
  };
  std::mt19937_64 rng(spec.seed);
  for (int64_t i = 0; i < spec.draws; ++i) {
    DimBindings p;
    for (const DimSpec& d : spec.dims) p[d.name] = draw(d, rng);  // file order: part of the reproducible sequence
    if (!check(p, spec.dimsLoc, "drawn point " + std::to_string(i))) return false;
    merged[p] += 1.0;
  }
  for (size_t i = 0; i < spec.points.size(); ++i) {
    const PointSpec& ps = spec.points[i];
    for (const auto& [k, v] : ps.dims)
      if (!symSet.count(k)) {
        err = located(spec.file, ps.loc, "points[" + std::to_string(i) + "] gives '" + k + "', which @" + f.name +
                                             " does not have (its symbols: " + symList() + ")");
        return false;
      }
    for (const std::string& s : syms)
      if (!ps.dims.count(s)) {
        err = located(spec.file, ps.loc, "points[" + std::to_string(i) + "] gives no size for symbol '" + s + "' of @" + f.name);
        return false;
      }
    if (!check(ps.dims, ps.loc, "points[" + std::to_string(i) + "]")) return false;
    merged[ps.dims] += ps.weight;
  }
  out.clear();
  for (const auto& [p, w] : merged) out.push_back({p, w});
  return true;
}

}  // namespace dscc::tuner
