// The per-context profile (internal to runtime/): records of kernel launches and library calls, kept only while profiling is on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "runtime/dscc_generated.h"

namespace dscc::runtime {

/// One recorded launch or library call; what dscc_profile_get hands out.
struct ProfileEvent {
  const dscc_kernel_info* info = nullptr;  ///< null for calls made without one (the old entry points)
  int32_t call = DSCC_PROFILE_KERNEL;
  std::vector<int64_t> sizes;  ///< kernel launches: the sizes array; library calls: M N K batch (or the copy's dims)
  int64_t units = 0;
  double bytes = 0, flops = 0;
  uint32_t thread = 0;
  int64_t startNs = 0, endNs = 0;
};

/// The records of one context. Appends lock a mutex; they happen only while
/// the context's `profiling` flag is set (Context.h), so with it clear the
/// launch path pays one relaxed load and a branch.
class Profile {
 public:
  /// Appends `e` (its thread and times already set).
  void add(ProfileEvent&& e);
  /// The number of records.
  int64_t count() const;
  /// Copies record `i` into `out` (pointers into the record, stable until clear()); false if out of range.
  bool get(int64_t i, dscc_profile_record& out) const;
  /// Drops every record.
  void clear();

 private:
  mutable std::mutex mu_;
  std::deque<ProfileEvent> events_;  // a deque: records never move, so handed-out pointers stay valid
};

/// Nanoseconds on the steady clock (the trace's time base).
inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A small process-wide index of the calling thread (1, 2, ... in order of first use), for traces.
uint32_t threadIndex();

}  // namespace dscc::runtime
