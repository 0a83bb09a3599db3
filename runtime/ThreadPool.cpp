// The thread pool: per-call jobs on a shared queue, chunks claimed through an atomic counter.
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>

namespace dscc::runtime {

struct ThreadPool::Job {
  Body body;
  void* closure;
  int64_t begin;
  int64_t end;
  int64_t chunk;
  int64_t numChunks;
  // Chunks are claimed by fetch_add, so each is run exactly once whoever claims it.
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written only by the thread that set `failed`
  // Both below are guarded by the pool's mutex_. A worker registers as a helper
  // while the job is queued; once the caller has unqueued it, the helper count
  // can only fall, and the caller returns (destroying the job) at zero.
  // helpers is atomic only so that a spinning caller may read it unlocked.
  std::atomic<int> helpers{0};
  bool queued = true;
};

namespace {

// How long an idle thread spins before it sleeps: longer than the gap between
// two kernel launches of a model, short next to a request's time.
constexpr int64_t kSpinMicros = 50;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until `done()` or kSpinMicros have passed; returns done().
template <class F>
bool spinFor(F&& done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int numThreads) : numThreads_(std::max(numThreads, 1)) {
  workers_.reserve(numThreads_ - 1);
  for (int i = 1; i < numThreads_; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int64_t ThreadPool::chunkSize(int64_t n, int64_t grain) const {
  grain = std::max<int64_t>(grain, 1);
  if (numThreads_ == 1) return std::max<int64_t>(n, 1);
  // About four chunks per thread: slack to even out chunks of uneven cost,
  // without paying an atomic claim for every few indices.
  const int64_t parts = 4 * static_cast<int64_t>(numThreads_);
  const int64_t target = n / parts + (n % parts != 0);
  return std::max<int64_t>(grain, std::max<int64_t>(target, 1));
}

void ThreadPool::runChunks(Job& job) {
  for (;;) {
    const int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.numChunks) return;
    const int64_t b = job.begin + c * job.chunk;
    const int64_t e = std::min(job.end, b + job.chunk);
    try {
      job.body(job.closure, b, e);
    } catch (...) {
      if (!job.failed.exchange(true)) job.error = std::current_exception();
      // Skip the chunks nobody has claimed yet: the loop has failed anyway.
      job.next.store(job.numChunks, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::unqueueLocked(Job& job) {
  if (!job.queued) return;
  queue_.erase(std::find(queue_.begin(), queue_.end(), &job));
  queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_release);
  job.queued = false;
}

void ThreadPool::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queue_.empty() && !stopping_) {
      lock.unlock();
      spinFor([this] { return queued_.load(std::memory_order_acquire) > 0; });
      lock.lock();
    }
    if (!stopping_ && queue_.empty()) {
      // Woken by a job, a nudge or spuriously: spin again before sleeping.
      sleeping_.fetch_add(1, std::memory_order_relaxed);
      wake_.wait(lock);
      sleeping_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    if (stopping_) return;
    Job& job = *queue_.front();
    ++job.helpers;
    lock.unlock();
    runChunks(job);
    lock.lock();
    // Every chunk is claimed now: take the job off the queue so idle workers
    // move on, then leave it. The caller may destroy it once helpers is 0,
    // so nothing of it is touched after the decrement.
    unqueueLocked(job);
    if (--job.helpers == 0) finished_.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t begin, int64_t end, int64_t grain, Body body, void* closure) {
  if (end <= begin) return;
  const int64_t n = end - begin;
  const int64_t chunk = chunkSize(n, grain);
  const int64_t numChunks = n / chunk + (n % chunk != 0);
  if (numChunks == 1) {
    body(closure, begin, end);
    return;
  }

  Job job;
  job.body = body;
  job.closure = closure;
  job.begin = begin;
  job.end = end;
  job.chunk = chunk;
  job.numChunks = numChunks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(&job);
    queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_release);
  }
  // Wake only as many workers as there are chunks beyond the caller's own.
  const int64_t helpersWanted = std::min<int64_t>(numChunks - 1, static_cast<int64_t>(workers_.size()));
  if (helpersWanted >= static_cast<int64_t>(workers_.size())) {
    wake_.notify_all();
  } else {
    for (int64_t i = 0; i < helpersWanted; ++i) wake_.notify_one();
  }

  runChunks(job);

  {
    std::unique_lock<std::mutex> lock(mutex_);
    unqueueLocked(job);
    if (job.helpers.load() > 0) {
      // Helpers finish their last chunks about when the caller does.
      lock.unlock();
      spinFor([&job] { return job.helpers.load(std::memory_order_acquire) == 0; });
      lock.lock();
    }
    finished_.wait(lock, [&job] { return job.helpers.load() == 0; });
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace dscc::runtime
