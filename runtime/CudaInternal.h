// What the runtime's CUDA files share among themselves and with Runtime.cpp: per-context state, teardown, gemm plans.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/dscc_cuda.h"
#include "runtime/dscc_runtime.h"

// Nothing here names a CUDA type, so that files without the CUDA headers
// (Runtime.cpp, the unit tests) can include it.

namespace dscc::runtime {

/// Releases the CUDA state of `ctx` (waits for its stream, then frees its
/// modules, device blocks, cached blocks, cuBLAS handle and stream). Loads
/// nothing: a context that never made a CUDA call costs a map lookup. Called
/// by dscc_context_release; never fails (errors are ignored, the context is going).
void releaseCuda(const dscc_context* ctx) noexcept;

namespace cuda {

/// The CUDA state of one dscc_context (Cuda.cpp), created on its first CUDA call.
struct ContextState;

/// The per-context cuBLAS handle, created lazily by CudaBlas.cpp. cuBLAS
/// handles must not be used by two threads at once, hence the mutex, held
/// around every call on the handle.
struct BlasSlot {
  std::mutex mutex;                      ///< guards `handle` and every call that uses it
  void* handle = nullptr;                ///< a cublasHandle_t, or null before the first gemm
  void (*destroy)(void*) = nullptr;      ///< destroys `handle`; set together with it
};

/// Finds or creates the CUDA state of `ctx`, loading the driver on first use,
/// and makes the process's CUDA context current on the calling thread.
/// DSCC_UNAVAILABLE (with a message naming `fn`) without a usable GPU.
dscc_status acquire(dscc_context* ctx, const char* fn, ContextState** out);

/// The state's stream (a CUstream), on which all of its work is queued.
void* stream(ContextState* state);

/// The state's cuBLAS slot.
BlasSlot& blas(ContextState* state);

/// One cublas*StridedBatched call, already in cuBLAS's column-major terms.
/// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so the
/// first operand is the row-major B and the second the row-major A.
struct GemmBatch {
  int64_t offFirst = 0, offSecond = 0, offC = 0;           ///< elements from B, A and C to matrix 0
  int64_t strideFirst = 0, strideSecond = 0, strideC = 0;  ///< elements between matrices
  int64_t count = 0;                                       ///< matrices, 1 to INT32_MAX
};

/// A dscc_cuda_*gemm_nd call as a list of cuBLAS calls that share sizes.
struct GemmPlan {
  bool transFirst = false, transSecond = false;  ///< op of the first (B) and second (A) operand
  int64_t m = 0, n = 0, k = 0;                   ///< cuBLAS's m = N, n = M, k = K
  int64_t ldFirst = 1, ldSecond = 1, ldc = 1;    ///< column pitches in elements
  std::vector<GemmBatch> batches;                ///< empty when there is nothing to compute
};

/// Checks the arguments of a dscc_cuda_*gemm_nd call (the rules of
/// dscc_sgemm_nd) and plans it: batch dims of 1 are dropped, neighbours one
/// stride covers are merged, the innermost remaining dim becomes the batch of
/// each call and the outer ones are enumerated. Pure: touches no device.
dscc_status planGemmNd(const dscc_context* ctx, const char* fn, int transA, int transB, int64_t M, int64_t N,
                       int64_t K, const void* A, int64_t lda, const void* B, int64_t ldb, const void* C,
                       int64_t ldc, int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                       const int64_t* stride_b, const int64_t* stride_c, GemmPlan* plan);

}  // namespace cuda
}  // namespace dscc::runtime
