// A context's copies of constant convolution weights in the layout a oneDNN primitive wants, made on first use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace dscc::runtime {

/// Reordered copies of a model's constant weights (dscc_conv_f32_info with a
/// nonzero w_key), keyed by the weight's address, the content key the compiler
/// derived from its bytes and the primitive's shape, so that a later call
/// skips the reorder. Thread-safe; the caller that makes a copy holds the lock.
class WeightCache {
 public:
  /// Bytes one context keeps at most; past it, calls reorder per call.
  static constexpr size_t kMaxBytes = size_t{2} << 30;

  /// The copy under `key` (`bytes` long, 64-byte aligned), made now by
  /// `make(buffer)` if absent; null past kMaxBytes.
  const void* get(const std::vector<int64_t>& key, size_t bytes, const std::function<void(void*)>& make) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second.aligned;
    if (bytes_ + bytes > kMaxBytes) return nullptr;
    Copy c;
    c.data.reset(new uint8_t[bytes + 64]);
    c.aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(c.data.get()) + 63) & ~uintptr_t(63));
    make(c.aligned);
    bytes_ += bytes;
    return map_.emplace(key, std::move(c)).first->second.aligned;
  }

 private:
  struct Copy {
    std::unique_ptr<uint8_t[]> data;
    void* aligned = nullptr;
  };
  std::mutex mu_;
  std::map<std::vector<int64_t>, Copy> map_;
  size_t bytes_ = 0;
};

}  // namespace dscc::runtime
