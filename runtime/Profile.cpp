// Profiles of a context (the C ABI's dscc_context_set_profiling and dscc_profile_*): storage and read-back.
#include "runtime/Profile.h"

#include "runtime/Context.h"

namespace dscc::runtime {

namespace {
// The names of a library call's sizes (dscc_profile_record.size_names).
const char* const kGemmSizeNames[] = {"M", "N", "K", "batch"};
const char* const kCopySizeNames[] = {"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"};
}  // namespace

uint32_t threadIndex() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

void Profile::add(ProfileEvent&& e) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

int64_t Profile::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(events_.size());
}

bool Profile::get(int64_t i, dscc_profile_record& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (i < 0 || i >= static_cast<int64_t>(events_.size())) return false;
  const ProfileEvent& e = events_[static_cast<size_t>(i)];
  const dscc_kernel_info* k = e.info;
  out = dscc_profile_record{};
  out.name = k && k->name ? k->name : "?";
  out.kind = k && k->kind ? k->kind : "";
  out.function = k && k->function ? k->function : "";
  out.version = e.call == DSCC_PROFILE_GEMM ? "sgemm" : e.call == DSCC_PROFILE_COPY ? "copy"
                : k && k->version           ? k->version
                                            : "";
  out.call = e.call;
  out.n_sizes = static_cast<int32_t>(e.sizes.size());
  out.sizes = e.sizes.data();
  if (e.call == DSCC_PROFILE_GEMM) out.size_names = kGemmSizeNames;
  else if (e.call == DSCC_PROFILE_COPY || e.call == DSCC_PROFILE_WINDOW) out.size_names = kCopySizeNames;
  else out.size_names = k && k->n_sizes == out.n_sizes ? k->size_names : nullptr;
  if (!out.size_names) out.n_sizes = 0;  // sizes nobody can name are left out rather than mislabelled
  out.bytes_expr = e.call == DSCC_PROFILE_KERNEL && k && k->bytes_expr ? k->bytes_expr : "";
  out.units = e.units;
  out.bytes = e.bytes;
  out.flops = e.flops;
  out.thread = e.thread;
  out.start_ns = e.startNs;
  out.end_ns = e.endNs;
  return true;
}

void Profile::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

}  // namespace dscc::runtime

using dscc::runtime::fail;

extern "C" {

dscc_status dscc_context_set_profiling(dscc_context* ctx, int on) {
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, "dscc_context_set_profiling: ctx is NULL");
  ctx->profiling.store(on != 0, std::memory_order_relaxed);
  return DSCC_OK;
}

int dscc_context_profiling(const dscc_context* ctx) { return ctx && ctx->profiling.load(std::memory_order_relaxed) ? 1 : 0; }

int64_t dscc_profile_count(const dscc_context* ctx) { return ctx ? ctx->profile.count() : 0; }

dscc_status dscc_profile_get(const dscc_context* ctx, int64_t index, dscc_profile_record* out) {
  if (!ctx || !out)
    return fail(ctx, DSCC_INVALID_ARGUMENT, !ctx ? "dscc_profile_get: ctx is NULL" : "dscc_profile_get: out is NULL");
  if (!ctx->profile.get(index, *out))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                "dscc_profile_get: index " + std::to_string(index) + " is not below the record count " +
                    std::to_string(ctx->profile.count()));
  return DSCC_OK;
}

void dscc_profile_clear(dscc_context* ctx) {
  if (ctx) ctx->profile.clear();
}

}  // extern "C"
