// The cache and progress flags, the config file (read strictly with yaml-cpp), the --cache-stats report and the progress line.
#include "tools/CacheOptions.h"

#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "tools/ToolMain.h"

namespace dscc::tools {
namespace {

namespace fs = std::filesystem;

// The config file's default place, by the XDG base directory rule; "" if none exists.
std::string defaultConfig() {
  fs::path p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && x[0] == '/') p = fs::path(x) / "dscc" / "config.yaml";
  else if (const char* h = std::getenv("HOME"); h && h[0]) p = fs::path(h) / ".config" / "dscc" / "config.yaml";
  std::error_code ec;
  return !p.empty() && fs::is_regular_file(p, ec) ? p.string() : "";
}

std::string expandHome(const std::string& s) {
  if (s == "~" || s.rfind("~/", 0) == 0)
    if (const char* h = std::getenv("HOME")) return std::string(h) + s.substr(1);
  return s;
}

std::string where(const std::string& file, const YAML::Node& n) {
  return file + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1) + ": error: ";
}

bool validProgress(const std::string& m) { return m == "auto" || m == "always" || m == "never"; }

// The file's settings into `s`; false with a located message.
bool readConfig(const std::string& file, CacheSettings& s, std::ostream& err) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    err << file << ": error: cannot read the config file\n";
    return false;
  } catch (const YAML::Exception& e) {
    err << file << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": error: " << e.msg << "\n";
    return false;
  }
  if (root.IsNull()) return true;  // an empty file sets nothing
  if (!root.IsMap()) {
    err << where(file, root) << "the config file must be a mapping (see docs/compile.md)\n";
    return false;
  }
  try {
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (key == "progress") {
        s.progress = kv.second.as<std::string>();
        if (!validProgress(s.progress)) {
          err << where(file, kv.second) << "progress must be auto, always or never\n";
          return false;
        }
      } else if (key == "cache") {
        if (!kv.second.IsMap()) {
          err << where(file, kv.second) << "cache must be a mapping with dir, max_size and enabled\n";
          return false;
        }
        for (const auto& c : kv.second) {
          std::string ck = c.first.as<std::string>();
          if (ck == "dir") {
            s.dir = expandHome(c.second.as<std::string>());
          } else if (ck == "max_size") {
            if (!parseSize(c.second.as<std::string>(), s.maxBytes)) {
              err << where(file, c.second) << "max_size must be a size such as 1G, 512M or 1048576\n";
              return false;
            }
          } else if (ck == "enabled") {
            s.enabled = c.second.as<bool>();
          } else {
            err << where(file, c.first) << "unknown key 'cache." << ck << "' (expected dir, max_size, enabled)\n";
            return false;
          }
        }
      } else {
        err << where(file, kv.first) << "unknown key '" << key << "' (expected cache, progress)\n";
        return false;
      }
    }
  } catch (const YAML::Exception& e) {
    err << file << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": error: " << e.msg << "\n";
    return false;
  }
  return true;
}

void warnLine(const std::string& tool, const std::string& msg) { std::cerr << tool << ": warning: " << msg << "\n"; }

}  // namespace

bool parseSize(const std::string& s, uint64_t& bytes) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 15) return false;
  uint64_t n = std::stoull(s.substr(0, i));
  std::string unit = s.substr(i);
  for (const char* suffix : {"iB", "B"})
    if (unit.size() > 1 && unit.size() >= std::strlen(suffix) &&
        unit.compare(unit.size() - std::strlen(suffix), std::string::npos, suffix) == 0) {
      unit.resize(unit.size() - std::strlen(suffix));
      break;
    }
  int shift = unit.empty() || unit == "B" ? 0 : unit == "K" || unit == "k" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : unit == "T" ? 40 : -1;
  if (shift < 0) return false;
  bytes = n << shift;
  return true;
}

void addCacheFlags(CLI::App* cmd, const std::shared_ptr<CacheFlags>& f) {
  cmd->add_option("--cache-dir", f->dir,
                  "the compile cache folder (default: the config file's cache.dir, else $XDG_CACHE_HOME/dscc or "
                  "~/.cache/dscc)");
  cmd->add_flag("--no-cache", f->noCache, "neither use nor fill the cache");
  cmd->add_option("--cache-max-size", f->maxSize,
                  "the cache folder's size limit, e.g. 1G (default), 512M; least recently used entries go first");
  cmd->add_flag("--cache-stats", f->stats, "print the cache's hits, misses and size on stderr");
  cmd->add_option("--config", f->config,
                  "the config file (default: $XDG_CONFIG_HOME/dscc/config.yaml or ~/.config/dscc/config.yaml when it "
                  "exists; docs/compile.md)");
  cmd->add_option("--progress", f->progress,
                  "a progress line on stderr: auto (default: when stderr is a terminal), always, never");
}

bool resolveCacheSettings(const CacheFlags& f, const std::string& tool, CacheSettings& s, std::ostream& err) {
  std::string config = f.config.empty() ? defaultConfig() : f.config;
  if (!config.empty() && !readConfig(config, s, err)) return false;
  if (!f.dir.empty()) s.dir = f.dir;
  if (s.dir.empty()) s.dir = codegen::defaultCacheDir();
  if (!f.maxSize.empty() && !parseSize(f.maxSize, s.maxBytes)) {
    err << tool << ": error: --cache-max-size '" << f.maxSize << "' is not a size (e.g. 1G, 512M, 1048576)\n";
    return false;
  }
  if (f.noCache) s.enabled = false;
  s.stats = f.stats;
  if (!f.progress.empty()) {
    if (!validProgress(f.progress)) {
      err << tool << ": error: --progress must be auto, always or never (not '" << f.progress << "')\n";
      return false;
    }
    s.progress = f.progress;
  }
  return true;
}

std::unique_ptr<codegen::CompileCache> openCache(const CacheSettings& s, const std::string& tool) {
  // No folder at all (--cache-dir not given, no config, neither HOME nor
  // XDG_CACHE_HOME set, as under lit): quietly off, since nobody asked for one.
  if (!s.enabled || s.dir.empty()) return nullptr;
  static std::string toolName;
  toolName = tool;
  return std::make_unique<codegen::CompileCache>(s.dir, s.maxBytes, [](const std::string& m) { warnLine(toolName, m); });
}

void printCacheStats(const codegen::CompileCache& c, const std::string& tool, std::ostream& os) {
  for (const auto& [kind, n] : c.counts())
    os << tool << ": cache: " << kind << ": " << n.hits << " hits, " << n.misses << " misses, " << n.corrupt
       << " corrupt, " << n.stored << " stored\n";
  auto [entries, bytes] = c.usage();
  os << tool << ": cache: " << c.dir() << (c.enabled() ? "" : " (disabled)") << ": " << entries << " entries, "
     << bytes << " bytes (limit " << c.maxBytes() << "), " << c.evicted() << " evicted\n";
}

std::string compilerIdentity() { return codegen::compilerIdentity(DSCC_VERSION_STRING); }

ProgressLine::ProgressLine(const std::string& mode, std::string label)
    : enabled_(mode == "always" || (mode == "auto" && isatty(2))), label_(std::move(label)),
      start_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(size_t done, size_t total, const std::string& what) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double eta = done ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  char buf[256];
  std::snprintf(buf, sizeof buf, "\r%s %zu/%zu (%d%%), %.1fs, ETA %.1fs", label_.c_str(), done, total,
                total ? static_cast<int>(100 * done / total) : 100, elapsed, eta);
  std::string line = buf;
  if (!what.empty()) line += "  " + what.substr(0, 60);
  // Pad over a longer previous line; \x1b[K would not survive a log file.
  std::cerr << line << std::string(line.size() < width_ ? width_ - line.size() : 0, ' ') << std::flush;
  width_ = line.size();
  drawn_ = true;
}

void ProgressLine::finish() {
  if (enabled_ && drawn_) std::cerr << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace dscc::tools
