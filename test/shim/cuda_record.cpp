// A stand-in for the runtime's CUDA calls, preloaded by tests: host memory for device memory, and every launch and gemm printed instead of run.
//
// `LD_PRELOAD=libdscc-cuda-record.so dscc run model.so ...` runs a GPU
// model's generated host code on a machine without a GPU: its checks, guard
// cascade, arena, workspace and launch sequence execute for real; kernels
// and gemms do not (their outputs are left as they were). Each launch prints
// `dscc-cuda-record: launch NAME grid=G block=B` to stderr, each gemm
// `dscc-cuda-record: gemm KIND M=.. N=.. K=.. batch=..`, so a test can check
// which versions the host picks at which sizes (test/gpu/host-dispatch.test).
// Test-only: nothing else links it.
//
// Built with DSCC_RECORD_FLAGGED_CHECKS (libdscc-cuda-record-flagged.so) it
// stands in for a device whose kernels all found a bad index: the only block
// the host code zeroes with dscc_cuda_memset_zero is its check words (pairs
// of a flag and an encoded smallest index, codegen/Kernel.h), which this
// fills as {1, index 7} each, so the host's read-back reports index 7.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/dscc_cuda.h"

namespace {
struct FakeModule {
  int dummy = 0;
} gModule;

dscc_status gemm(const char* kind, int64_t M, int64_t N, int64_t K, int32_t nBatch, const int64_t* dims) {
  int64_t batch = 1;
  for (int32_t i = 0; i < nBatch; ++i) batch *= dims[i];
  std::fprintf(stderr, "dscc-cuda-record: gemm %s M=%lld N=%lld K=%lld batch=%lld\n", kind, (long long)M,
               (long long)N, (long long)K, (long long)batch);
  return DSCC_OK;
}
}  // namespace

extern "C" {

int dscc_cuda_available(void) { return 1; }

dscc_status dscc_cuda_device_name(dscc_context*, char* buf, size_t size) {
  std::snprintf(buf, size, "dscc-cuda-record (no device)");
  return DSCC_OK;
}

dscc_status dscc_cuda_module_get(dscc_context*, const void* image, const void*, dscc_cuda_module** out) {
  if (!image || !out) return DSCC_INVALID_ARGUMENT;
  *out = reinterpret_cast<dscc_cuda_module*>(&gModule);
  return DSCC_OK;
}

dscc_status dscc_cuda_launch(dscc_context*, dscc_cuda_module* m, const char* name, int64_t grid, int32_t block,
                             uint32_t, void** params) {
  if (!m || !name || grid < 0 || block < 1 || block > 1024) return DSCC_INVALID_ARGUMENT;
  if (grid == 0) return DSCC_OK;  // as the runtime: nothing launched
  if (!params) return DSCC_INVALID_ARGUMENT;
  // DSCC_RECORD_PARAM=K also prints entry parameter K as an i64 (an rnn entry's step index, test/gpu/recurrent.test);
  // the test sets it only for programs whose every entry has more than K parameters.
  if (const char* k = std::getenv("DSCC_RECORD_PARAM")) {
    int64_t v = *static_cast<const int64_t*>(params[std::atoi(k)]);
    std::fprintf(stderr, "dscc-cuda-record: launch %s grid=%lld block=%d param%s=%lld\n", name, (long long)grid, block,
                 k, (long long)v);
    return DSCC_OK;
  }
  std::fprintf(stderr, "dscc-cuda-record: launch %s grid=%lld block=%d\n", name, (long long)grid, block);
  return DSCC_OK;
}

void* dscc_cuda_alloc(dscc_context*, size_t bytes) {
  // 256-byte aligned, as the runtime's allocator; filled so reads are defined.
  size_t n = (bytes + 255) / 256 * 256 + 256;
  void* p = std::aligned_alloc(256, n);
  if (p) std::memset(p, 0x3f, n);
  return p;
}

void dscc_cuda_free(dscc_context*, void* ptr) { std::free(ptr); }

dscc_status dscc_cuda_copy_to_device(dscc_context*, void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return DSCC_OK;
}
dscc_status dscc_cuda_copy_to_host(dscc_context*, void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return DSCC_OK;
}
dscc_status dscc_cuda_copy_device(dscc_context*, void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
  return DSCC_OK;
}
dscc_status dscc_cuda_memset_zero(dscc_context*, void* dst, size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
#ifdef DSCC_RECORD_FLAGGED_CHECKS
  auto* words = static_cast<uint64_t*>(dst);
  for (size_t w = 0; w + 1 < bytes / 8; w += 2) {
    words[w] = 1;
    words[w + 1] = uint64_t(7) ^ uint64_t(INT64_MAX);  // encodeLeastIndex(7)
  }
  std::fprintf(stderr, "dscc-cuda-record: %zu check words flagged\n", bytes / 8);
#endif
  return DSCC_OK;
}
dscc_status dscc_cuda_synchronize(dscc_context*) { return DSCC_OK; }

dscc_status dscc_cuda_sgemm_nd(dscc_context*, int, int, int64_t M, int64_t N, int64_t K, const float*, int64_t,
                               const float*, int64_t, float*, int64_t, int32_t n_batch, const int64_t* batch_dims,
                               const int64_t*, const int64_t*, const int64_t*, int) {
  return gemm("sgemm", M, N, K, n_batch, batch_dims);
}
dscc_status dscc_cuda_hgemm_nd(dscc_context*, int, int, int64_t M, int64_t N, int64_t K, const void*, int64_t,
                               const void*, int64_t, void*, int64_t, int32_t n_batch, const int64_t* batch_dims,
                               const int64_t*, const int64_t*, const int64_t*, int) {
  return gemm("hgemm", M, N, K, n_batch, batch_dims);
}
dscc_status dscc_cuda_bgemm_nd(dscc_context*, int, int, int64_t M, int64_t N, int64_t K, const void*, int64_t,
                               const void*, int64_t, void*, int64_t, int32_t n_batch, const int64_t* batch_dims,
                               const int64_t*, const int64_t*, const int64_t*, int) {
  return gemm("bgemm", M, N, K, n_batch, batch_dims);
}

}  // extern "C"
