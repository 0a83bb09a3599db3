// The dscc runtime's CUDA calls: device memory, copies, PTX/cubin modules, kernel launches and cuBLAS gemms.
#ifndef DSCC_CUDA_H
#define DSCC_CUDA_H

// C99 and C++ compatible, like dscc_runtime.h. The runtime library never links
// the CUDA driver or cuBLAS: both are dlopen'ed on the first dscc_cuda_* call
// that needs them, so one library serves machines with and without a GPU.
// docs/gpu-runtime.md describes loading, per-context state and error mapping.

#include <stddef.h>
#include <stdint.h>

#include "dscc_runtime.h" /* DSCC_UNAVAILABLE: no GPU, no driver, or built without CUDA headers */

#ifdef __cplusplus
extern "C" {
#endif

/// Every call reports DSCC_UNAVAILABLE (dscc_runtime.h) when there is no
/// usable GPU: no driver, no device, no cuBLAS (for the gemms), or a runtime
/// built without the CUDA headers; dscc_status_message says which.

/// 1 if a CUDA device can be used (the driver loads and reports at least one
/// device), else 0 with the reason recorded for dscc_status_message(NULL).
/// The answer is computed once per process.
int dscc_cuda_available(void);

/// Writes device 0's name and compute capability, e.g. "NVIDIA H200 (sm_90)",
/// NUL-terminated and truncated to `size` bytes. DSCC_UNAVAILABLE without a GPU.
dscc_status dscc_cuda_device_name(dscc_context* ctx, char* buf, size_t size);

/// A loaded CUDA module (PTX or cubin), owned by its context; released with it.
typedef struct dscc_cuda_module dscc_cuda_module;

/// Loads a module image (NUL-terminated PTX text, a cubin or a fatbin) once per
/// context, cached by the `image` pointer: later calls with the same pointer
/// return the same module without looking at the bytes again, so `image` must
/// stay unchanged while the context lives. If `image` fails to load (e.g. a
/// cubin for another architecture), `fallback_ptx` (may be NULL) is tried and
/// cached under `image`. PTX compile errors are in the message.
dscc_status dscc_cuda_module_get(dscc_context* ctx, const void* image, const void* fallback_ptx,
                                 dscc_cuda_module** out);

/// Launches kernel `name` of module `m` (looked up once per module and cached)
/// on a 1-D grid of `grid` blocks of `block` threads with `shared_bytes` of
/// dynamic shared memory, on the context's stream; it does not wait. `params`
/// is cuLaunchKernel's kernelParams: one pointer per kernel parameter, pointing
/// at its value. grid == 0 launches nothing. grid must be < 2^31, block in [1, 1024].
dscc_status dscc_cuda_launch(dscc_context* ctx, dscc_cuda_module* m, const char* name, int64_t grid,
                             int32_t block, uint32_t shared_bytes, void** params);

/// Device memory from the context's caching allocator: freed blocks are kept
/// per size class and reused by later allocations of that class; every block
/// is 256-byte aligned. 0 bytes gives a valid, distinct pointer. Returns NULL
/// with DSCC_OUT_OF_MEMORY (or DSCC_UNAVAILABLE) recorded on failure.
void* dscc_cuda_alloc(dscc_context* ctx, size_t bytes);

/// Returns a block of dscc_cuda_alloc to its context's cache. Work already
/// queued on the context's stream may still use it: the block is only handed
/// out again to work queued after this call. NULL is a no-op; a pointer that
/// is not a live block of `ctx` records DSCC_INVALID_ARGUMENT and is ignored.
void dscc_cuda_free(dscc_context* ctx, void* ptr);

/// Copies `bytes` from host `src` to device `dst` on the context's stream. A
/// pageable `src` may be reused on return; a page-locked one only after
/// dscc_cuda_synchronize.
dscc_status dscc_cuda_copy_to_device(dscc_context* ctx, void* dst, const void* src, size_t bytes);

/// Copies `bytes` from device `src` to host `dst` on the context's stream and waits for it (and all earlier work).
dscc_status dscc_cuda_copy_to_host(dscc_context* ctx, void* dst, const void* src, size_t bytes);

/// Copies `bytes` between device buffers on the context's stream; does not wait.
dscc_status dscc_cuda_copy_device(dscc_context* ctx, void* dst, const void* src, size_t bytes);

/// Sets `bytes` of device memory to zero on the context's stream; does not wait.
dscc_status dscc_cuda_memset_zero(dscc_context* ctx, void* dst, size_t bytes);

/// Waits for all work queued on the context's stream. Reports a kernel's
/// asynchronous failure (e.g. an illegal address) as DSCC_INTERNAL.
dscc_status dscc_cuda_synchronize(dscc_context* ctx);

/// dscc_sgemm_nd on device pointers, with cuBLAS on the context's stream (it
/// does not wait): C[b] = op(A[b]) * op(B[b]), row-major, alpha 1, beta 0, over
/// an n-dimensional batch with strides in elements (0 broadcasts A or B). The
/// same argument rules as dscc_sgemm_nd. Batch dims that one stride describes
/// are merged into one cublasSgemmStridedBatched call; otherwise one call per
/// index of the outer batch dims. tensor_op != 0 allows TF32 tensor cores
/// (about 1e-3 relative error); 0 computes in exact fp32.
dscc_status dscc_cuda_sgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                               int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                               const int64_t* stride_b, const int64_t* stride_c, int tensor_op);

/// dscc_cuda_sgemm_nd for IEEE half (f16) A, B and C with fp32 accumulation
/// (tensor cores allowed, as they accumulate in fp32); `tensor_op` is ignored.
dscc_status dscc_cuda_hgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const void* A, int64_t lda, const void* B, int64_t ldb, void* C, int64_t ldc,
                               int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                               const int64_t* stride_b, const int64_t* stride_c, int tensor_op);

/// dscc_cuda_hgemm_nd for bfloat16 (bf16) A, B and C, fp32 accumulation (sm_80 and later).
dscc_status dscc_cuda_bgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const void* A, int64_t lda, const void* B, int64_t ldb, void* C, int64_t ldc,
                               int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                               const int64_t* stride_b, const int64_t* stride_c, int tensor_op);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // DSCC_CUDA_H
