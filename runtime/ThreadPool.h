// A fixed-size thread pool whose parallel loops are safe for concurrent and nested callers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace dscc::runtime {

/// A fixed set of worker threads that run parallel loops.
///
/// Concurrency model: per-call work queues. Each parallelFor call is a job of
/// its own (the index range cut into chunks, and an atomic counter of the
/// next chunk to claim) placed on a shared queue; idle workers help the
/// oldest job, and the calling thread works through its own job's chunks.
/// No caller ever waits for another caller's job, only for the chunks of its
/// own job that workers have already started, so concurrent callers on one
/// pool neither deadlock nor serialize, and a body may itself call
/// parallelFor (the nested call is just another job). A mutex guards only the
/// queue, never the running of a body.
///
/// An idle worker, and a caller waiting for its helpers, spin for a short
/// while (kSpinMicros) before sleeping on a condition variable: a model runs
/// its kernels back to back, and a futex wake-up per kernel launch costs more
/// than a small kernel does.
class ThreadPool {
 public:
  /// The body of a loop as the C ABI passes it: processes [begin, end) of the data behind `closure`.
  using Body = void (*)(void* closure, int64_t begin, int64_t end);

  /// A pool of `numThreads` threads in all (at least 1): the thread calling
  /// parallelFor is one of them, so numThreads - 1 workers are started and a
  /// pool of 1 runs every loop inline on its caller.
  explicit ThreadPool(int numThreads);
  /// Stops and joins the workers; no parallelFor may be in flight.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads in all, the caller's included.
  int numThreads() const { return numThreads_; }

  /// The chunk size parallelFor uses for `n` indices and minimum chunk
  /// `grain` (values below 1 mean 1): a function of n, grain and the thread
  /// count only, so a loop is always split the same way.
  int64_t chunkSize(int64_t n, int64_t grain) const;

  /// Runs body(closure, b, e) over consecutive disjoint chunks [b, e) that
  /// cover [begin, end) exactly once, each of chunkSize(end - begin, grain)
  /// indices but the last. The caller runs chunks too and returns when all
  /// are done. If a body throws, chunks not yet started are skipped and the
  /// first exception is rethrown here once every started chunk has finished.
  void parallelFor(int64_t begin, int64_t end, int64_t grain, Body body, void* closure);

  /// Whether every worker is asleep (none spinning or running a job), as
  /// last seen: waking one costs far more than its spin (~50 µs on a VM).
  bool workersAsleep() const {
    return sleeping_.load(std::memory_order_relaxed) == static_cast<int>(workers_.size());
  }

  /// Wakes one sleeping worker without work for it: it spins a while (so a
  /// launch soon after finds it awake) and sleeps again.
  void nudge() { wake_.notify_one(); }

  /// parallelFor with any callable `f(int64_t begin, int64_t end)`.
  template <class F>
  void parallelFor(int64_t begin, int64_t end, int64_t grain, F&& f) {
    using Fn = std::remove_reference_t<F>;
    Body trampoline = [](void* closure, int64_t b, int64_t e) { (*static_cast<Fn*>(closure))(b, e); };
    parallelFor(begin, end, grain, trampoline, const_cast<void*>(static_cast<const void*>(std::addressof(f))));
  }

 private:
  struct Job;

  void workerLoop();
  /// Claims and runs chunks of `job` until none are left to claim.
  static void runChunks(Job& job);
  /// Takes `job` off the queue if it is still there; mutex_ must be held.
  void unqueueLocked(Job& job);

  int numThreads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;                 // guards queue_, stopping_ and every Job's helpers and queued
  std::condition_variable wake_;     // workers: a job was queued or the pool is stopping
  std::condition_variable finished_; // callers: a helper left a job
  std::deque<Job*> queue_;           // jobs that may still have chunks to claim, oldest first
  // queue_.size(), written under mutex_, read without it by spinning workers.
  std::atomic<int64_t> queued_{0};
  // Workers waiting on wake_, written under mutex_, read without it by workersAsleep.
  std::atomic<int> sleeping_{0};
  bool stopping_ = false;
};

}  // namespace dscc::runtime
