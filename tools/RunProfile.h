// `dscc run --profile / --trace / --profile-out`: the runtime's profile records of a compiled model's calls, as a table, a Chrome trace and a file for `dscc view --profile`.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

#include "runtime/dscc_runtime.h"

namespace dscc::tools {

/// What to do with a run's profile.
struct ProfileOpts {
  bool table = false;    ///< --profile: print a table per kernel after the run
  std::string trace;     ///< --trace FILE: Chrome trace / Perfetto JSON, one event per launch and library call
  std::string out;       ///< --profile-out FILE: the per-kernel totals as JSON, for `dscc view --profile`
  /// True when any of them was asked for (the context then records).
  bool any() const { return table || !trace.empty() || !out.empty(); }
};

/// Adds --profile, --trace and --profile-out to `run`, stored into `o`.
void addProfileOptions(CLI::App* run, ProfileOpts& o);

/// Reads every record of `ctx` and prints the table to `out` and/or writes
/// the files `o` names; `model` is what the files say was run. Returns false
/// after writing a located error to `err` (a file that cannot be written).
bool reportProfile(const dscc_context* ctx, const ProfileOpts& o, const std::string& model, std::ostream& out,
                   std::ostream& err);

}  // namespace dscc::tools
