// The cache folder's entries: keys and checksums with LLVM's SHA256 and xxh3, checked reads, temp-file-and-rename writes, LRU eviction by mtime.
#include "codegen/CompileCache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

namespace dscc::codegen {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'D', 'S', 'C', 'C', 'C', 'A', 'C', '1'};
constexpr size_t kHeader = 8 + 8 + 16;  // magic, payload size (LE), xxh3-128 of the payload

std::string hex(const uint8_t* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

llvm::ArrayRef<uint8_t> bytesOf(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

void checksum(std::string_view payload, uint8_t out[16]) {
  llvm::XXH128_hash_t h = llvm::xxh3_128bits(bytesOf(payload));
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(h.low64 >> (8 * i));
    out[8 + i] = static_cast<uint8_t>(h.high64 >> (8 * i));
  }
}

bool isEntryName(const std::string& name) { return !name.empty() && name[0] != '.'; }

}  // namespace

std::string sha256Hex(std::string_view data) {
  std::array<uint8_t, 32> h = llvm::SHA256::hash(bytesOf(data));
  return hex(h.data(), h.size());
}

std::string xxh3Hex(std::string_view data) {
  uint8_t h[16];
  checksum(data, h);
  return hex(h, 16);
}

std::string compilerIdentity(const std::string& version) {
  std::string id = "dscc " + version + ", LLVM " LLVM_VERSION_STRING;
  auto stamp = [&](const char* what, const char* path) {
    struct stat st;
    if (path && stat(path, &st) == 0)
      id += std::string(", ") + what + " " + std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) +
            "." + std::to_string(st.st_mtim.tv_nsec);
  };
  stamp("exe", "/proc/self/exe");
  // The shared libLLVM actually loaded: a point release replaces it under the same headers.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(static_cast<uint64_t (*)(llvm::ArrayRef<uint8_t>)>(&llvm::xxh3_64bits)), &info) != 0) stamp("libLLVM", info.dli_fname);
  return id;
}

std::string defaultCacheDir() {
  // The XDG base directory rule: a relative XDG_CACHE_HOME is invalid and ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/') return (fs::path(x) / "dscc").string();
  if (const char* h = std::getenv("HOME"); h && h[0]) return (fs::path(h) / ".cache" / "dscc").string();
  return "";
}

CompileCache::CompileCache(std::string dir, uint64_t maxBytes, void (*warn)(const std::string&))
    : dir_(std::move(dir)), maxBytes_(maxBytes), warn_(warn) {
  if (dir_.empty()) {
    disable("no cache folder (neither XDG_CACHE_HOME nor HOME is set; give --cache-dir)");
    return;
  }
  entries_ = (fs::path(dir_) / "v1").string();
  std::error_code ec;
  fs::create_directories(entries_, ec);
  if (ec) {
    disable("cannot create the cache folder '" + entries_ + "': " + ec.message());
    return;
  }
  if (access(entries_.c_str(), W_OK | X_OK) != 0) {
    disable("the cache folder '" + entries_ + "' is not writable: " + std::strerror(errno));
    return;
  }
  enabled_ = true;
}

void CompileCache::disable(const std::string& why) {
  if (warn_) warn_(why + "; compiling without the cache");
  enabled_ = false;
}

std::string CompileCache::path(const std::string& kind, const std::string& key) const {
  return entries_ + "/" + kind + "-" + key;
}

std::optional<std::string> CompileCache::get(const std::string& kind, const std::string& key) {
  CacheCounts& c = counts_[kind];
  if (!enabled_) {
    ++c.misses;
    return std::nullopt;
  }
  std::string p = path(kind, key);
  int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ++c.misses;
    return std::nullopt;
  }
  struct stat st;
  std::string data;
  bool ok = fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(kHeader);
  if (ok) {
    data.resize(static_cast<size_t>(st.st_size));
    size_t at = 0;
    while (at < data.size()) {
      ssize_t n = read(fd, data.data() + at, data.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    ok = at == data.size();
  }
  close(fd);
  uint64_t size = 0;
  if (ok) {
    for (int i = 0; i < 8; ++i) size |= uint64_t(static_cast<uint8_t>(data[8 + i])) << (8 * i);
    ok = std::memcmp(data.data(), kMagic, 8) == 0 && size == data.size() - kHeader;
  }
  if (ok) {
    uint8_t sum[16];
    checksum(std::string_view(data).substr(kHeader), sum);
    ok = std::memcmp(sum, data.data() + 16, 16) == 0;
  }
  if (!ok) {
    // Never used: removed, so the rebuilt entry replaces it.
    ++c.corrupt;
    ++c.misses;
    if (warn_) warn_("cache entry '" + p + "' is corrupt (bad size or checksum); rebuilding it");
    std::error_code ec;
    fs::remove(p, ec);
    return std::nullopt;
  }
  // The LRU clock: a hit is a use.
  utimensat(AT_FDCWD, p.c_str(), nullptr, 0);
  ++c.hits;
  data.erase(0, kHeader);  // in place: an artifact with weights may be large
  return data;
}

void CompileCache::put(const std::string& kind, const std::string& key, std::string_view bytes) {
  if (!enabled_ || bytes.size() + kHeader > maxBytes_) return;
  std::string header(kHeader, '\0');
  std::memcpy(header.data(), kMagic, 8);
  for (int i = 0; i < 8; ++i) header[8 + i] = static_cast<char>(uint64_t(bytes.size()) >> (8 * i));
  checksum(bytes, reinterpret_cast<uint8_t*>(header.data() + 16));
  // A private name: pid, a per-process counter and a random tag (two
  // processes with the same pid in different containers sharing the folder).
  static const uint64_t tag = std::random_device{}();
  std::string tmp = entries_ + "/.tmp-" + std::to_string(getpid()) + "-" + std::to_string(tempCounter_++) + "-" +
                    std::to_string(tag);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (std::string_view part : {std::string_view(header), bytes}) {
    size_t at = 0;
    while (ok && at < part.size()) {
      ssize_t n = write(fd, part.data() + at, part.size() - at);
      if (n <= 0) ok = false;
      else at += static_cast<size_t>(n);
    }
  }
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (ok && std::rename(tmp.c_str(), path(kind, key).c_str()) != 0) ok = false;
  if (!ok) {
    std::string why = std::strerror(errno);
    std::error_code ec;
    fs::remove(tmp, ec);
    disable("cannot write to the cache folder '" + entries_ + "': " + why);
    return;
  }
  ++counts_[kind].stored;
  storedAny_ = true;
}

std::pair<uint64_t, uint64_t> CompileCache::usage() const {
  uint64_t n = 0, bytes = 0;
  std::error_code ec;
  if (entries_.empty()) return {0, 0};
  for (fs::directory_iterator it(entries_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    struct stat st;
    if (!isEntryName(name) || stat(it->path().c_str(), &st) != 0) continue;
    ++n;
    bytes += static_cast<uint64_t>(st.st_size);
  }
  return {n, bytes};
}

void CompileCache::evictIfNeeded() {
  if (!enabled_ || !storedAny_) return;
  struct Entry {
    int64_t mtimeNs;
    std::string path;
    uint64_t bytes;
  };
  std::vector<Entry> all;
  uint64_t total = 0;
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  std::error_code ec;
  for (fs::directory_iterator it(entries_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    struct stat st;
    if (stat(it->path().c_str(), &st) != 0) continue;  // removed by another process meanwhile
    int64_t mt = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (!isEntryName(name)) {
      std::error_code rm;
      if (name.rfind(".tmp-", 0) == 0 && now - mt > int64_t(3600) * 1000000000) fs::remove(it->path(), rm);
      continue;
    }
    all.push_back({mt, it->path().string(), static_cast<uint64_t>(st.st_size)});
    total += static_cast<uint64_t>(st.st_size);
  }
  if (total <= maxBytes_) return;
  // Oldest use first; the name breaks ties so every process evicts alike.
  std::sort(all.begin(), all.end(),
            [](const Entry& a, const Entry& b) { return a.mtimeNs != b.mtimeNs ? a.mtimeNs < b.mtimeNs : a.path < b.path; });
  uint64_t target = maxBytes_ / 10 * 9;
  for (const Entry& e : all) {
    if (total <= target) break;
    std::error_code rm;
    if (fs::remove(e.path, rm)) ++evicted_;
    total -= e.bytes;
  }
}

}  // namespace dscc::codegen
