// The last-level cache's size as the kernel reports it in sysfs, for the streaming-store threshold.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dscc::runtime {

/// Bytes of a sysfs cache size ("32768K", "1024K", "32M", "512"), or 0 when
/// `text` is not such a size (empty, junk, negative, or 1 TiB and more).
int64_t parseCacheSize(std::string_view text);

/// The size of the highest-level data or unified cache listed under `dir`
/// (a sysfs folder like /sys/devices/system/cpu/cpu0/cache, with index0,
/// index1, ... each holding level, type and size), or 0 when none can be read.
/// This is what lscpu reports; glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) can
/// disagree (320 MiB for a 32 MiB L3 on a Zen 4 VM).
int64_t lastLevelCacheBytes(const std::string& dir);

}  // namespace dscc::runtime
