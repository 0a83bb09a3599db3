// A context's cache of freed dscc_alloc blocks, so a model's per-call buffers are not page-faulted in again on every call.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

namespace dscc::runtime {

/// Freed blocks kept for the next dscc_alloc of a similar size. A model call
/// allocates its arena of intermediates and frees it at the end; without
/// reuse, large blocks go back to the kernel (glibc unmaps them) and the next
/// call faults every page in again (measured: 48 MB per bert_layer call at
/// B=16, S=125). Thread-safe; calls on one context may run at once.
class BlockCache {
 public:
  BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  /// Frees every cached block.
  ~BlockCache();

  /// A cached block of capacity >= `bytes` (and not much larger), removed
  /// from the cache, with its capacity in `capacity`; null when none fits.
  void* take(size_t bytes, size_t& capacity);

  /// Keeps `block` (from std::aligned_alloc, `capacity` bytes) for reuse.
  /// False when the cache is full: the caller frees it.
  bool put(void* block, size_t capacity);

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // by capacity
  size_t bytes_ = 0;
};

}  // namespace dscc::runtime
