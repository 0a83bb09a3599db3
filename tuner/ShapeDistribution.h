// Shape distributions (../shared/spec/shapes.md): parsing the YAML with located errors, seeded draws, checks against a function.
//
// A distribution is a list of weighted points (one size per symbol). The file
// lists points, or describes each symbol (a list of values with weights, or
// an integer range drawn uniformly or log-uniformly) and a number of draws
// from a seed, or both. Draws use std::mt19937_64 (whose sequence the C++
// standard fixes) and this file's own integer and real mappings, not the
// std:: distributions, so a seed gives the same points on every standard
// library; log-uniform draws also use std::log/std::exp, so they are
// reproducible for a given libm (glibc here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/DimExpr.h"
#include "ir/IR.h"

namespace dscc::tuner {

/// Upper bounds parseDistribution enforces (docs/tuning.md): every draw and
/// point is measured, so these are far above any useful distribution yet
/// keep a hostile file's cost bounded.
constexpr int64_t kMaxDraws = 1000000;
constexpr int64_t kMaxPoints = 100000;
constexpr int64_t kMaxDistributionValues = 100000;

/// A place in a YAML file (1-based line and column; 0 when unknown).
struct YamlLoc {
  int line = 0, col = 0;
};

/// How one symbol is drawn.
struct DimSpec {
  std::string name;
  YamlLoc loc;
  /// `values` (with `weights`, all 1 when absent), or an inclusive `range`.
  bool isRange = false;
  std::vector<int64_t> values;
  std::vector<double> weights;
  int64_t lo = 0, hi = 0;
  bool logUniform = false;
};

/// One explicit point of the file.
struct PointSpec {
  DimBindings dims;
  double weight = 1;
  YamlLoc loc;
};

/// A parsed distribution file, before draws and checks.
struct DistributionSpec {
  std::string file;
  std::string func;  ///< "" when the file names none
  YamlLoc funcLoc;
  uint64_t seed = 0;
  int64_t draws = 0;
  YamlLoc drawsLoc, dimsLoc;
  std::vector<DimSpec> dims;  ///< in file order
  std::vector<PointSpec> points;
};

/// One point of the distribution with its weight.
struct WeightedPoint {
  DimBindings dims;
  double weight = 0;
};

/// Parses distribution YAML `text` read from `file`. On error returns false
/// with `err` = `file:line:col: error: ...` (wrong types, unknown keys, zero or
/// negative weights, empty value lists, reversed ranges, YAML syntax).
bool parseDistribution(const std::string& file, const std::string& text, DistributionSpec& out, std::string& err);

/// Reads and parses `file` (see parseDistribution).
bool loadDistribution(const std::string& file, DistributionSpec& out, std::string& err);

/// The points of `spec` for function `f`: the drawn ones (seeded) and the
/// listed ones, equal points merged (weights add), sorted by their sizes in
/// symbol order. Errors (located): a symbol of f the file does not describe, a
/// symbol f lacks, a point that breaks one of f's `where` facts (named).
bool expandDistribution(const DistributionSpec& spec, const Function& f, std::vector<WeightedPoint>& out,
                        std::string& err);

/// The symbols of f's inputs, sorted.
std::vector<std::string> inputSymbols(const Function& f);

/// `{D: 768, N: 4}`: a point as YAML flow text, symbols sorted.
std::string pointText(const DimBindings& p);

}  // namespace dscc::tuner
