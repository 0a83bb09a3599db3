// Reads the last-level cache's size from sysfs (runtime/CacheSize.h).
#include "runtime/CacheSize.h"

#include <charconv>
#include <fstream>

namespace dscc::runtime {

int64_t parseCacheSize(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || value <= 0) return 0;
  std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (shift < 0 || value >= (int64_t(1) << (40 - shift))) return 0;
  return value << shift;
}

int64_t lastLevelCacheBytes(const std::string& dir) {
  int bestLevel = 0;
  int64_t best = 0;
  // index0.. are numbered without gaps; a few spare ones cover odd layouts.
  for (int i = 0; i < 32; ++i) {
    std::string base = dir + "/index" + std::to_string(i) + "/";
    std::ifstream levelFile(base + "level"), typeFile(base + "type"), sizeFile(base + "size");
    if (!levelFile || !typeFile || !sizeFile) continue;
    int level = 0;
    std::string type, size;
    if (!(levelFile >> level) || !(typeFile >> type) || !(sizeFile >> size)) continue;
    if (type == "Instruction") continue;
    int64_t bytes = parseCacheSize(size);
    if (bytes > 0 && level > bestLevel) {
      bestLevel = level;
      best = bytes;
    }
  }
  return best;
}

}  // namespace dscc::runtime
