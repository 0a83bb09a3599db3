// The cache and progress options shared by `dscc compile` and `dscc-tune`: flags, the config file (yaml-cpp), the progress line.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "codegen/CompileCache.h"

namespace dscc::tools {

/// What the command line said about the cache and progress (unset: the config file's or the default).
struct CacheFlags {
  std::string dir, maxSize, config, progress;
  bool noCache = false, stats = false;
};

/// Adds --cache-dir, --no-cache, --cache-max-size, --cache-stats, --config and --progress to `cmd`.
void addCacheFlags(CLI::App* cmd, const std::shared_ptr<CacheFlags>& f);

/// The settings in force: flags over the config file over the defaults.
struct CacheSettings {
  bool enabled = true;
  std::string dir;                        ///< the cache folder
  uint64_t maxBytes = uint64_t(1) << 30;  ///< 1 GiB
  bool stats = false;
  std::string progress = "auto";  ///< auto, always or never
};

/// Reads the config file (`--config FILE`, else `$XDG_CONFIG_HOME/dscc/config.yaml`
/// or `~/.config/dscc/config.yaml` when it exists; schema in docs/compile.md)
/// and applies the flags. False with a located message on `err` for a bad
/// file, or `TOOL: error: ...` for a bad flag value.
bool resolveCacheSettings(const CacheFlags& f, const std::string& tool, CacheSettings& out, std::ostream& err);

/// The cache the settings ask for, or null with --no-cache or when no folder
/// is known (no --cache-dir, config, HOME or XDG_CACHE_HOME). Warnings (an
/// unusable folder, a corrupt entry) go to stderr as `TOOL: warning: ...`.
std::unique_ptr<codegen::CompileCache> openCache(const CacheSettings& s, const std::string& tool);

/// Prints the counters of `c` (`--cache-stats`), one line per kind and one for the folder.
void printCacheStats(const codegen::CompileCache& c, const std::string& tool, std::ostream& os);

/// This dscc build's identity for cache keys (codegen::compilerIdentity).
std::string compilerIdentity();

/// Parses `1G`, `512M`, `64K`, `1048576` (binary multiples; a trailing `iB` or `B` is allowed).
bool parseSize(const std::string& s, uint64_t& bytes);

/// A progress line on stderr (`LABEL 12/40 (30%), 1.2s, ETA 2.8s`), redrawn
/// in place: with mode "auto" only when stderr is a terminal, "always" even
/// when not (for tests), "never" not at all.
class ProgressLine {
 public:
  /// A line starting with `label`, drawn according to `mode` (auto, always, never).
  ProgressLine(const std::string& mode, std::string label);
  /// Ends the line if it was drawn.
  ~ProgressLine();
  /// True when the line is drawn at all.
  bool enabled() const { return enabled_; }
  /// Redraws (at most every 100 ms, and always for the last).
  void update(size_t done, size_t total, const std::string& what = "");
  /// Ends the line (a newline after the last redraw).
  void finish();

 private:
  bool enabled_ = false, drawn_ = false;
  size_t width_ = 0;
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace dscc::tools
