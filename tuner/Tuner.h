// Measuring a model's kernels at the points of a shape distribution, in every CPU configuration that can differ there.
//
// The work is one unit per (kernel, distinct kernel size): every point of the
// distribution is mapped to the kernel's own sizes (units, elements per unit,
// governing size and the values of its guards) and equal ones are merged.
// At a unit, each configuration selects a version through the guard cascade
// of the plan made with its vector width; configurations that select the
// same version with the same grain are measured once (a vector width whose
// guard fails there is never measured on its own). Each distinct version is
// JIT-compiled once, in its own module.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/ModelPlan.h"
#include "tuner/ShapeDistribution.h"
#include "tuner/TuningTable.h"

namespace dscc::tuner {

/// Progress of a tuning run, for a progress bar.
struct TuneProgress {
  size_t done = 0, total = 0;  ///< work units (kernel, size)
  double elapsedSeconds = 0;
  std::string what;  ///< the unit just finished, e.g. `k0 stitch D=768 N=12`
};

/// How to tune.
struct TuneOptions {
  int maxVersions = 3;
  double budgetSeconds = 300;  ///< stop measuring when spent (what was measured is kept)
  int shardIndex = 0, shardCount = 1;
  int threads = 0;             ///< threads of the measuring context (0: one per hardware thread)
  /// A deterministic cost model instead of running the kernels (tests of
  /// sharding, merging and the tables only; docs/tuning.md).
  bool fakeTimer = false;
  /// Units whose buffers would take more bytes than this are skipped (reported).
  uint64_t maxBytes = uint64_t(4) << 30;
  /// Set from a signal handler: stop after the current measurement.
  const std::atomic<bool>* interrupt = nullptr;
  std::function<void(const TuneProgress&)> progress;
  /// Notes (skipped units, kernels that cannot be measured), one line each.
  std::function<void(const std::string&)> note;
  /// The measurement cache (optional): `lookup(key, times)` fills the times
  /// (config name -> ns) measured before for the unit `key` names (a SHA-256
  /// of the kernel's kind and printed fusion op, its sizes, the versions each width
  /// selects, the timer); `store` keeps a new measurement. The caller adds
  /// the machine and compiler to the key.
  std::function<bool(const std::string& key, std::map<std::string, double>& times)> lookup;
  std::function<void(const std::string& key, const std::map<std::string, double>& times)> store;
  /// Set by tuneModel: units measured now, and units whose times came from `lookup`.
  size_t measured = 0, reused = 0;
};

/// Measures the kernels of a model planned once per vector width (`plans`
/// maps 4, 8 and 16 to plans of the same function) at `points`, and fills
/// out.kernels with the measurements and tables. Returns "" or an error.
/// `complete` tells whether every unit of this shard was measured.
std::string tuneModel(const std::map<int, const codegen::ModelPlan*>& plans, const std::vector<WeightedPoint>& points,
                      TuneOptions& opts, TuningFile& out, bool* complete);

}  // namespace dscc::tuner
