// Kernel launches for generated host code: one parallel_for per kernel, with the kernel's arguments as its closure; the profiled entry points.
#include <algorithm>

#include <unistd.h>

#include "runtime/CacheSize.h"
#include "runtime/Context.h"
#include "runtime/Dnnl.h"
#include "runtime/Profile.h"
#include "runtime/dscc_generated.h"

namespace {

struct Launch {
  dscc_kernel_fn fn;
  void** inputs;
  void** outputs;
  const int64_t* sizes;
};

void body(void* closure, int64_t begin, int64_t end) {
  auto* l = static_cast<Launch*>(closure);
  l->fn(l->inputs, l->outputs, l->sizes, begin, end);
}

// Records a call that ran from `start` to now on `ctx`'s profile.
void record(dscc_context* ctx, dscc::runtime::ProfileEvent&& e, int64_t start) {
  e.endNs = dscc::runtime::nowNs();
  e.startNs = start;
  e.thread = dscc::runtime::threadIndex();
  ctx->profile.add(std::move(e));
}

}  // namespace

namespace {

// Below this many grains a launch runs on the caller alone while every
// worker sleeps: about where waking one (~50 µs) stops paying for itself.
constexpr int64_t kColdLaunchGrains = 8;

dscc_status launch(dscc_context* ctx, dscc_kernel_fn fn, void** inputs, void** outputs, const int64_t* sizes,
                   int64_t units, int64_t grain) {
  if (!fn || units < 0)
    return dscc_set_error(ctx, DSCC_INVALID_ARGUMENT, "dscc_launch_kernel: %s",
                          !fn ? "null kernel" : "negative unit count");
  if (units == 0) return DSCC_OK;
  if (grain < 1) grain = 1;
  // A launch that one chunk covers skips the pool's bookkeeping.
  if (units <= grain || !ctx || dscc_context_num_threads(ctx) <= 1) {
    fn(inputs, outputs, sizes, 0, units);
    return DSCC_OK;
  }
  // So does a small one while every worker sleeps: waking one took ~50 µs
  // on the VM of bench/results (a 2-thread col_reduce call of 32 units after
  // 200 µs idle: 58 µs, against 3 µs on the caller alone), more than a few
  // grains of work cost (a grain: the smallest chunk the model thought worth
  // a thread). A worker is nudged awake meanwhile, so launches that follow
  // soon (the next kernel, a busy service's next call) find it spinning.
  if (units < kColdLaunchGrains * grain && ctx->pool.workersAsleep()) {
    ctx->pool.nudge();
    fn(inputs, outputs, sizes, 0, units);
    return DSCC_OK;
  }
  Launch l{fn, inputs, outputs, sizes};
  return dscc_parallel_for(ctx, units, grain, body, &l);
}

}  // namespace

// The entry point of models compiled before profiling: the launch as it was,
// with no branch, so bench/profile_overhead.cpp can set the two side by side.
// It has no info to record a launch under, so it records none.
extern "C" dscc_status dscc_launch_kernel(dscc_context* ctx, dscc_kernel_fn fn, void** inputs, void** outputs,
                                          const int64_t* sizes, int64_t units, int64_t grain) {
  return launch(ctx, fn, inputs, outputs, sizes, units, grain);
}

extern "C" dscc_status dscc_launch_kernel_info(dscc_context* ctx, dscc_kernel_fn fn, void** inputs, void** outputs,
                                               const int64_t* sizes, int64_t units, int64_t grain,
                                               const dscc_kernel_info* info) {
  // The only cost of profiling when it is off: this branch.
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return launch(ctx, fn, inputs, outputs, sizes, units, grain);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = launch(ctx, fn, inputs, outputs, sizes, units, grain);
  dscc::runtime::ProfileEvent e;
  e.info = info;
  e.call = DSCC_PROFILE_KERNEL;
  if (info && sizes && info->n_sizes > 0) e.sizes.assign(sizes, sizes + info->n_sizes);
  e.units = units;
  record(ctx, std::move(e), start);
  return st;
}

extern "C" dscc_status dscc_sgemm_nd_info(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                                          const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                                          int64_t ldc, int32_t n_batch, const int64_t* batch_dims,
                                          const int64_t* stride_a, const int64_t* stride_b, const int64_t* stride_c,
                                          const dscc_kernel_info* info) {
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return dscc_sgemm_nd(ctx, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, n_batch, batch_dims, stride_a,
                         stride_b, stride_c);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = dscc_sgemm_nd(ctx, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, n_batch, batch_dims,
                                 stride_a, stride_b, stride_c);
  int64_t batch = 1;
  for (int32_t i = 0; batch_dims && i < n_batch; ++i) batch *= std::max<int64_t>(batch_dims[i], 0);
  dscc::runtime::ProfileEvent e;
  e.info = info;
  e.call = DSCC_PROFILE_GEMM;
  e.sizes = {M, N, K, batch};
  // Doubles: a product of four int64 sizes may not fit in one.
  double m = double(M), n = double(N), k = double(K), b = double(batch);
  e.flops = 2 * m * n * k * b;
  e.bytes = 4 * (m * k + k * n + m * n) * b;
  record(ctx, std::move(e), start);
  return st;
}

extern "C" dscc_status dscc_sgemm_const_b_info(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N,
                                               int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                                               uint64_t b_key, float* C, int64_t ldc, const dscc_kernel_info* info) {
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return dscc_sgemm_const_b(ctx, transA, transB, M, N, K, A, lda, B, ldb, b_key, C, ldc);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = dscc_sgemm_const_b(ctx, transA, transB, M, N, K, A, lda, B, ldb, b_key, C, ldc);
  dscc::runtime::ProfileEvent e;
  e.info = info;
  e.call = DSCC_PROFILE_GEMM;
  e.sizes = {M, N, K, 1};
  double m = double(M), n = double(N), k = double(K);
  e.flops = 2 * m * n * k;
  e.bytes = 4 * (m * k + k * n + m * n);
  record(ctx, std::move(e), start);
  return st;
}

extern "C" dscc_status dscc_copy_strided_info(dscc_context* ctx, void* dst, const void* src, size_t elem_size,
                                              int32_t rank, const int64_t* dims, const int64_t* strides,
                                              const dscc_kernel_info* info) {
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return dscc_copy_strided(ctx, dst, src, elem_size, rank, dims, strides);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = dscc_copy_strided(ctx, dst, src, elem_size, rank, dims, strides);
  dscc::runtime::ProfileEvent e;
  e.info = info;
  e.call = DSCC_PROFILE_COPY;
  double elems = 1;
  for (int32_t i = 0; dims && i < rank; ++i) elems *= double(std::max<int64_t>(dims[i], 0));
  // Sizes are named d0..d7 (Profile.cpp); a deeper copy keeps its byte count only.
  if (dims && rank > 0 && rank <= 8) e.sizes.assign(dims, dims + rank);
  e.bytes = 2 * elems * double(elem_size);
  record(ctx, std::move(e), start);
  return st;
}

namespace {

// A conv or pool call's record: the output dims as sizes (d0..), flops and bytes from the dims.
void recordWindow(dscc_context* ctx, const dscc_kernel_info* info, int64_t start, int32_t n, const int64_t* x_dims,
                  const int64_t* y_dims, double perOutput, double weightElems) {
  dscc::runtime::ProfileEvent e;
  e.info = info;
  e.call = DSCC_PROFILE_WINDOW;
  double xs = 1, ys = 1;
  if (x_dims && y_dims && n >= 1 && n <= 3) {
    e.sizes.assign(y_dims, y_dims + n + 2);
    for (int32_t i = 0; i < n + 2; ++i) xs *= double(std::max<int64_t>(x_dims[i], 0)), ys *= double(std::max<int64_t>(y_dims[i], 0));
  }
  e.flops = ys * perOutput;
  e.bytes = 4 * (xs + ys + weightElems);
  record(ctx, std::move(e), start);
}

double product(const int64_t* d, int32_t from, int32_t to) {
  double p = 1;
  for (int32_t i = from; d && i < to; ++i) p *= double(std::max<int64_t>(d[i], 0));
  return p;
}

}  // namespace

extern "C" dscc_status dscc_conv_f32_post_info(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims,
                                               const float* x, const int64_t* w_dims, const float* w,
                                               const float* bias, const int64_t* y_dims, float* y, int64_t group,
                                               const int64_t* strides, const int64_t* dilations,
                                               const int64_t* pads_begin, const int64_t* pads_end, uint64_t w_key,
                                               int32_t channels_last, int32_t n_post, const int32_t* post_kinds,
                                               const float* post_args, const float* const* post_srcs,
                                               const dscc_kernel_info* info) {
  const dscc::runtime::PostOps post{n_post, post_kinds, post_args, post_srcs};
  const bool profiling = ctx && ctx->profiling.load(std::memory_order_relaxed);
  const int64_t start = profiling ? dscc::runtime::nowNs() : 0;
  dscc_status st = dscc::runtime::convF32(ctx, n_spatial, x_dims, x, w_dims, w, bias, y_dims, y, group, strides,
                                          dilations, pads_begin, pads_end, w_key, channels_last != 0, post);
  if (profiling) {
    const int32_t r = n_spatial + 2;
    recordWindow(ctx, info, start, n_spatial, x_dims, y_dims, 2 * product(w_dims, 1, r), product(w_dims, 0, r));
  }
  return st;
}

extern "C" dscc_status dscc_conv_f32_info(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                          const int64_t* w_dims, const float* w, const float* bias,
                                          const int64_t* y_dims, float* y, int64_t group, const int64_t* strides,
                                          const int64_t* dilations, const int64_t* pads_begin, const int64_t* pads_end,
                                          uint64_t w_key, int32_t channels_last, const dscc_kernel_info* info) {
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return dscc::runtime::convF32(ctx, n_spatial, x_dims, x, w_dims, w, bias, y_dims, y, group, strides, dilations,
                                  pads_begin, pads_end, w_key, channels_last != 0);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = dscc::runtime::convF32(ctx, n_spatial, x_dims, x, w_dims, w, bias, y_dims, y, group, strides,
                                          dilations, pads_begin, pads_end, w_key, channels_last != 0);
  // Each output sums C/group * kernel products.
  const int32_t r = n_spatial + 2;
  recordWindow(ctx, info, start, n_spatial, x_dims, y_dims, 2 * product(w_dims, 1, r), product(w_dims, 0, r));
  return st;
}

extern "C" dscc_status dscc_conv_transpose_f32_info(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims,
                                                    const float* x, const int64_t* w_dims, const float* w,
                                                    const float* bias, const int64_t* y_dims, float* y, int64_t group,
                                                    const int64_t* strides, const int64_t* dilations,
                                                    const int64_t* pads_begin, const int64_t* pads_end,
                                                    const dscc_kernel_info* info) {
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return dscc_conv_transpose_f32(ctx, n_spatial, x_dims, x, w_dims, w, bias, y_dims, y, group, strides, dilations,
                                   pads_begin, pads_end);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = dscc_conv_transpose_f32(ctx, n_spatial, x_dims, x, w_dims, w, bias, y_dims, y, group, strides,
                                           dilations, pads_begin, pads_end);
  // Each input point scatters M/group * kernel products: flops counted per input element (recordWindow counts
  // per output element, so the input's count is passed as the output's work below).
  const int32_t r = n_spatial + 2;
  recordWindow(ctx, info, start, n_spatial, x_dims, y_dims,
               2 * product(w_dims, 1, r) * product(x_dims, 0, r) / std::max(1.0, product(y_dims, 0, r)),
               product(w_dims, 0, r));
  return st;
}

extern "C" dscc_status dscc_pool_f32_info(dscc_context* ctx, int32_t n_spatial, int32_t kind, int32_t count_include_pad,
                                          const int64_t* x_dims, const float* x, const int64_t* y_dims, float* y,
                                          const int64_t* kernel, const int64_t* strides, const int64_t* dilations,
                                          const int64_t* pads_begin, const int64_t* pads_end, int32_t channels_last,
                                          const dscc_kernel_info* info) {
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return dscc::runtime::poolF32(ctx, n_spatial, kind, count_include_pad, x_dims, x, y_dims, y, kernel, strides,
                                  dilations, pads_begin, pads_end, channels_last != 0);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = dscc::runtime::poolF32(ctx, n_spatial, kind, count_include_pad, x_dims, x, y_dims, y, kernel,
                                          strides, dilations, pads_begin, pads_end, channels_last != 0);
  recordWindow(ctx, info, start, n_spatial, x_dims, y_dims, product(kernel, 0, n_spatial), 0);
  return st;
}

extern "C" dscc_status dscc_pool_argmax_f32_info(dscc_context* ctx, int32_t n_spatial, int32_t storage_order,
                                                 const int64_t* x_dims, const float* x, const int64_t* y_dims,
                                                 int64_t* y, const int64_t* kernel, const int64_t* strides,
                                                 const int64_t* dilations, const int64_t* pads_begin,
                                                 const int64_t* pads_end, const dscc_kernel_info* info) {
  if (!ctx || !ctx->profiling.load(std::memory_order_relaxed)) [[likely]]
    return dscc_pool_argmax_f32(ctx, n_spatial, storage_order, x_dims, x, y_dims, y, kernel, strides, dilations,
                                pads_begin, pads_end);
  int64_t start = dscc::runtime::nowNs();
  dscc_status st = dscc_pool_argmax_f32(ctx, n_spatial, storage_order, x_dims, x, y_dims, y, kernel, strides,
                                        dilations, pads_begin, pads_end);
  // recordWindow counts 4 bytes per output; the indices take 8, the other 4 passed as the "weight".
  const int32_t r = n_spatial + 2;
  recordWindow(ctx, info, start, n_spatial, x_dims, y_dims, product(kernel, 0, n_spatial),
               n_spatial >= 1 && n_spatial <= 3 ? product(y_dims, 0, r) : 0);
  return st;
}

extern "C" int64_t dscc_stream_min_bytes(void) {
  static const int64_t bytes = [] {
    // sysfs first: glibc's sysconf said 320 MiB for the 32 MiB L3 of a Zen 4
    // VM, and outputs of 32-320 MiB were then written through the cache.
    if (int64_t b = dscc::runtime::lastLevelCacheBytes("/sys/devices/system/cpu/cpu0/cache"); b > 0) return b;
    for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
      if (long v = sysconf(name); v > 0) return int64_t(v);
    return int64_t(32) << 20;
  }();
  return bytes;
}
