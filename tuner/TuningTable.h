// Tuning results: per-kernel measurements, range tables chosen from them, and the versioned YAML that stores both.
//
// A configuration is what the generated host code can vary per call for a CPU
// kernel: the vector width its versions assume (4, 8 or 16 elements; the
// guard cascade still falls back when the extent is not a multiple) and the
// chunk of elements one parallel task takes (the grain is chunk / elements
// per unit). Each kernel's size space is cut into intervals over one
// governing size (governingSize), each with the configuration that
// minimises the expected time under the distribution's weights.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/ModelPlan.h"

namespace dscc::tuner {

/// The version of the YAML schema (docs/tuning.md).
constexpr int kTuningSchemaVersion = 1;
/// Upper bounds readTuning enforces (docs/tuning.md, docs/limits.md): the
/// tuner writes at most max_versions ranges per kernel, so these leave room
/// for hand edits while keeping a hostile file's cost small.
constexpr int64_t kMaxTuningVersions = 64;
constexpr int64_t kMaxTuningRanges = 1024;
constexpr int64_t kMaxTuningKernels = 100000;
constexpr int64_t kMaxTuningMeasurements = 100000;
/// What writes the files (`compiler:` in the YAML).
constexpr const char* kCompilerVersion = "dscc 0.1.0 (LLVM 19)";

/// One CPU configuration of a kernel.
struct TuneConfig {
  int vectorWidth = 8;   ///< 4, 8 or 16 (elements)
  int64_t chunk = 16384; ///< elements per parallel task (at least one unit)
  /// `v8.c16384`: the key of measurements in the YAML.
  std::string name() const { return "v" + std::to_string(vectorWidth) + ".c" + std::to_string(chunk); }
  auto operator<=>(const TuneConfig&) const = default;
};

/// The configurations tried on the CPU, in a fixed order.
std::vector<TuneConfig> cpuConfigs();
/// What `dscc compile` uses without a tuning file for a kernel of this kind
/// (KernelPlan::kind): loop kernels and GEMM epilogues (`loop`, `library`)
/// take vector blocks of 16, the others of 8 (PlanOptions::loopVectorWidth).
TuneConfig defaultConfig(KernelKind kind);
/// Parses `v8.c16384`; nullopt when malformed.
std::optional<TuneConfig> parseConfigName(const std::string& s);

/// The size a kernel's ranges are over: its row length (elements per unit)
/// when that is not a constant, else its number of parallel units.
DimExpr governingSize(const codegen::KernelPlan& k);

/// A stable fingerprint of a kernel: 16 hex digits of FNV-1a over its
/// printed fusion op and its kind.
std::string kernelFingerprint(const codegen::KernelPlan& k);

/// The measured times of one kernel at one of its own sizes.
struct Measurement {
  DimBindings at;       ///< a point of the distribution giving these sizes
  int64_t size = 0;     ///< governingSize at `at`
  int64_t units = 0, work = 0;
  double weight = 0;    ///< the weights of every point that maps here, added
  std::map<std::string, double> timesNs;  ///< config name -> median ns per call (0.1 ns resolution)
};

/// One interval of a range table: [from, to] of the governing size.
struct TableRange {
  int64_t from = 0, to = 0;
  TuneConfig config;
  int line = 0, col = 0;  ///< where readTuning found it (1-based; 0 when made here)
};

/// Expected time per call (ns) under the weights of the measured points.
struct Expectation {
  double tuned = 0, bestSingle = 0, defaults = 0, oracle = 0;
};

/// The tuning of one kernel.
struct KernelTuning {
  size_t index = 0;
  std::string symbol, fingerprint;
  KernelKind kind = KernelKind::Loop;
  std::string size;         ///< governingSize as text
  int64_t pointsTotal = 0;  ///< distinct kernel sizes of the distribution (measured or not)
  std::vector<Measurement> measurements;  ///< sorted by (size, units, work, at)
  std::vector<TableRange> ranges;         ///< sorted, disjoint
  TuneConfig fallback;                    ///< outside the ranges (the best single config)
  bool hasFallback = true;                ///< a hand-edited file may drop it; then the ranges must cover the domain
  int line = 0, col = 0;                  ///< where readTuning found the kernel
  Expectation expect;
};

/// A whole tuning file.
struct TuningFile {
  int version = kTuningSchemaVersion;
  std::string compiler = kCompilerVersion;
  std::string target = "cpu", device, func, source, shapes;
  int maxVersions = 3;
  std::string shard;  ///< "i/N" for a shard's file, "" for a whole run or a merge
  std::vector<KernelTuning> kernels;
  Expectation expect;  ///< sums over the kernels
};

/// Recomputes every kernel's ranges, fallback and expectations from its
/// measurements (a DP over the sorted distinct sizes choosing at most
/// maxVersions intervals), and the model's sums. Deterministic.
void buildTables(TuningFile& t);

/// The file as YAML text, in a stable order.
std::string writeTuning(const TuningFile& t);

/// Parses a tuning file; false with a located `file:line:col: error: ...`.
bool readTuning(const std::string& file, TuningFile& out, std::string& err);

/// Merges the measurements of several files of one model (shards), in any
/// order, and rebuilds the tables: the result does not depend on the order.
/// Fails when the files disagree on the model, target or a fingerprint.
bool mergeTunings(const std::vector<TuningFile>& in, TuningFile& out, std::string& err);

/// The config of kernel `k` at governing size `size`: its range's, else the fallback.
TuneConfig configAt(const KernelTuning& k, int64_t size);

}  // namespace dscc::tuner
