// The on-disk cache of compiled pieces (kernel objects, host objects, whole artifacts, tuning measurements): checked entries, atomic writes, LRU eviction.
//
// An entry is one file `DIR/v1/<kind>-<64 hex digits>`, the key being a
// SHA-256 of everything that decides its bytes. The file holds a header
// (magic, payload size, xxh3-128 checksum of the payload) and the payload;
// an entry whose size or checksum does not match is corrupt: it is removed,
// counted and treated as a miss, never used. Writers write a private
// temporary file in the same folder and rename it into place, so concurrent
// compiles (make -j) sharing the folder see either no entry or a whole one.
// A hit refreshes the file's mtime; when a compile stored something and the
// folder holds more than the size limit, the least recently used entries are
// removed until it holds at most 90% of it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dscc::codegen {

/// SHA-256 of `data` as 64 lowercase hex digits (LLVM's SHA256).
std::string sha256Hex(std::string_view data);

/// A fast 128-bit checksum (xxh3) of `data` as 32 hex digits, for large inputs
/// (weights) that go into a key or guard an entry.
std::string xxh3Hex(std::string_view data);

/// What identifies this build of the compiler in cache keys: `version`
/// (dscc's), LLVM's, and the size and modification time of the running
/// executable and of the libLLVM it loaded, so a rebuilt dscc (or an updated
/// LLVM) never uses entries made by another build.
std::string compilerIdentity(const std::string& version);

/// The default cache folder: `$XDG_CACHE_HOME/dscc`, else `$HOME/.cache/dscc`
/// ("" when neither variable is set).
std::string defaultCacheDir();

/// Per-kind counters of one process's use of the cache.
struct CacheCounts {
  uint64_t hits = 0, misses = 0, corrupt = 0, stored = 0;  ///< a corrupt entry counts as a miss too
};

/// One process's handle on a cache folder. Not thread-safe: callers look up
/// and store from one thread.
class CompileCache {
 public:
  /// A cache in `dir` limited to `maxBytes`; `warn` receives warnings (an
  /// unusable folder, a corrupt entry). An unusable folder disables the cache:
  /// every lookup misses and nothing is stored.
  CompileCache(std::string dir, uint64_t maxBytes, void (*warn)(const std::string&));

  /// True when the folder exists (or was created) and is writable.
  bool enabled() const { return enabled_; }
  /// The folder as given (entries are in its `v1/`).
  const std::string& dir() const { return dir_; }

  /// The payload of entry (`kind`, `key`), or nullopt (missing or corrupt).
  std::optional<std::string> get(const std::string& kind, const std::string& key);
  /// Stores `bytes` as entry (`kind`, `key`) (atomically; a payload larger
  /// than the limit is not stored). A failed write warns once and disables
  /// the cache.
  void put(const std::string& kind, const std::string& key, std::string_view bytes);
  /// When something was stored and the folder exceeds the limit: removes
  /// least recently used entries down to 90% of it. Also removes temporary
  /// files older than an hour (left by killed writers).
  void evictIfNeeded();

  /// Counters by kind ("kernel", "host", "so", "obj", "measure", ...).
  const std::map<std::string, CacheCounts>& counts() const { return counts_; }
  /// Entries this process removed to keep the folder under the limit.
  uint64_t evicted() const { return evicted_; }
  /// Entries and bytes in the folder (scanned now).
  std::pair<uint64_t, uint64_t> usage() const;
  /// The size limit in bytes.
  uint64_t maxBytes() const { return maxBytes_; }

 private:
  std::string path(const std::string& kind, const std::string& key) const;
  void disable(const std::string& why);

  std::string dir_, entries_;
  uint64_t maxBytes_;
  void (*warn_)(const std::string&);
  bool enabled_ = false, storedAny_ = false;
  uint64_t evicted_ = 0, tempCounter_ = 0;
  std::map<std::string, CacheCounts> counts_;
};

}  // namespace dscc::codegen
