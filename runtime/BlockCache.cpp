// The per-context cache of freed dscc_alloc blocks: best fit by capacity, bounded in count and bytes.
#include "runtime/BlockCache.h"

#include <cstdlib>

namespace dscc::runtime {
namespace {

// Enough for the arenas of a few models called in turn on one context;
// beyond it, freed blocks go back to the allocator.
constexpr size_t kMaxBlocks = 16;
constexpr size_t kMaxBytes = size_t(1) << 30;

}  // namespace

BlockCache::~BlockCache() {
  for (auto& [cap, block] : free_) std::free(block);
}

void* BlockCache::take(size_t bytes, size_t& capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = free_.lower_bound(bytes);
  // A block over twice the request (plus 64 KiB) stays for a larger one.
  if (it == free_.end() || it->first - bytes > bytes + (size_t(64) << 10)) return nullptr;
  capacity = it->first;
  void* block = it->second;
  bytes_ -= capacity;
  free_.erase(it);
  return block;
}

bool BlockCache::put(void* block, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity > kMaxBytes) return false;
  // Full: the smallest blocks make room first (the large ones are what
  // page faults cost most for).
  while (!free_.empty() && (free_.size() >= kMaxBlocks || bytes_ + capacity > kMaxBytes)) {
    auto smallest = free_.begin();
    if (smallest->first > capacity) return false;
    bytes_ -= smallest->first;
    std::free(smallest->second);
    free_.erase(smallest);
  }
  free_.emplace(capacity, block);
  bytes_ += capacity;
  return true;
}

}  // namespace dscc::runtime
