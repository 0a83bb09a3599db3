// The definition of dscc_context and the error helpers shared by the runtime's C entry points.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "runtime/BlockCache.h"
#include "runtime/PackedGemm.h"
#include "runtime/Profile.h"
#include "runtime/ThreadPool.h"
#include "runtime/WeightCache.h"
#include "runtime/dscc_runtime.h"

/// The opaque context of the C ABI: a thread pool, an identity and a profile.
struct dscc_context {
  /// A context of `numThreads` threads in all (at least 1).
  explicit dscc_context(int numThreads);

  /// Set while the context records a profile (dscc_context_set_profiling). The
  /// first member, so that it shares a cache line with the pool's thread count,
  /// which every launch reads anyway: when off, profiling costs a launch one
  /// load from a line it touches regardless, and one predicted branch.
  std::atomic<bool> profiling{false};

  /// The pool every parallel call on this context uses.
  dscc::runtime::ThreadPool pool;
  /// Blocks freed by dscc_free(this, ...), for the next dscc_alloc(this, ...).
  dscc::runtime::BlockCache blocks;
  /// Distinct for every context ever created, so a new context that gets a
  /// released one's address does not inherit error messages recorded for it.
  const uint64_t id;
  /// Launch and library-call records, kept while `profiling` is set.
  dscc::runtime::Profile profile;
  /// Packed copies of constant GEMM operands (dscc_sgemm_const_b).
  dscc::runtime::PackedCache packed;
  /// Constant conv weights reordered into oneDNN's layouts (dscc_conv_f32_info with a w_key).
  dscc::runtime::WeightCache convWeights;
};

namespace dscc::runtime {

/// Records `message` as the calling thread's last error, made on `ctx` (may
/// be null), and returns `status`. Never throws: a message that cannot be
/// stored is replaced by the status name.
dscc_status fail(const dscc_context* ctx, dscc_status status, std::string_view message) noexcept;

/// Runs `f` (returning dscc_status) and turns any C++ exception into a status,
/// so no exception crosses the C ABI: bad_alloc is DSCC_OUT_OF_MEMORY, the
/// rest DSCC_INTERNAL. The messages are built without allocating where
/// memory may be what ran out.
template <class F>
dscc_status guarded(const dscc_context* ctx, const char* function, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(ctx, DSCC_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    try {
      return fail(ctx, DSCC_INTERNAL, std::string(function) + ": internal error: " + e.what());
    } catch (...) {
      return fail(ctx, DSCC_INTERNAL, "internal error");
    }
  } catch (...) {
    return fail(ctx, DSCC_INTERNAL, "internal error: unknown exception");
  }
}

}  // namespace dscc::runtime
