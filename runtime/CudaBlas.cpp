// dscc_cuda_sgemm_nd, dscc_cuda_hgemm_nd and dscc_cuda_bgemm_nd: n-d batched gemm plans run with cuBLAS, loaded through dlopen.
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/Context.h"
#include "runtime/CudaInternal.h"
#include "runtime/dscc_cuda.h"

#if defined(DSCC_HAVE_CUDA_HEADERS) && __has_include(<cublas_v2.h>)
#include <cublas_v2.h>
#define DSCC_CUBLAS_ENABLED 1
#else
// Stand-ins so that the code compiles without the toolkit; loadBlas refuses
// before anything could be called through them.
extern "C" {
typedef struct cublasContext* cublasHandle_t;
typedef struct CUstream_st* cudaStream_t;
typedef int cublasStatus_t;
typedef int cublasOperation_t;
typedef int cudaDataType;
typedef int cublasComputeType_t;
typedef int cublasGemmAlgo_t;
typedef int cublasMath_t;
}
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr cublasOperation_t CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
constexpr cudaDataType CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14;
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
constexpr cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT = -1;
constexpr cublasMath_t CUBLAS_DEFAULT_MATH = 0;
#endif

using dscc::runtime::fail;
using dscc::runtime::guarded;

namespace dscc::runtime::cuda {

dscc_status planGemmNd(const dscc_context* ctx, const char* fn, int transA, int transB, int64_t M, int64_t N,
                       int64_t K, const void* A, int64_t lda, const void* B, int64_t ldb, const void* C,
                       int64_t ldc, int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                       const int64_t* stride_b, const int64_t* stride_c, GemmPlan* plan) {
  const std::string name(fn);
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, name + ": ctx is NULL");
  if (M < 0 || N < 0 || K < 0)
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": sizes must be >= 0; got M=" + std::to_string(M) + " N=" + std::to_string(N) +
                    " K=" + std::to_string(K));
  // As in dscc_sgemm_nd: a pitch that addresses nothing is raised to the minimum.
  const auto pitch = [](int64_t ld, int64_t rows, int64_t cols, bool unused) {
    return rows <= 1 || unused ? std::max({ld, cols, int64_t{1}}) : ld;
  };
  const bool empty = M == 0 || N == 0 || K == 0;
  lda = pitch(lda, transA ? K : M, transA ? M : K, empty);
  ldb = pitch(ldb, transB ? N : K, transB ? K : N, empty);
  ldc = pitch(ldc, M, N, M == 0 || N == 0);
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
    return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": M, N, K and the leading dimensions must fit cuBLAS's 32-bit int");
  const int64_t colsA = transA ? M : K, colsB = transB ? K : N;
  if (lda < std::max<int64_t>(1, colsA))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": lda=" + std::to_string(lda) + " is less than the " + std::to_string(colsA) + " columns of A");
  if (ldb < std::max<int64_t>(1, colsB))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": ldb=" + std::to_string(ldb) + " is less than the " + std::to_string(colsB) + " columns of B");
  if (ldc < std::max<int64_t>(1, N))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": ldc=" + std::to_string(ldc) + " is less than the " + std::to_string(N) + " columns of C");
  if (n_batch < 0)
    return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": n_batch is " + std::to_string(n_batch) + "; must be >= 0");
  if (n_batch > 0 && (!batch_dims || !stride_a || !stride_b || !stride_c))
    return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": batch_dims or a stride array is NULL with n_batch > 0");
  struct BatchDim {
    int64_t n, a, b, c;
  };
  int64_t total = 1;
  for (int32_t k = 0; k < n_batch; ++k) {
    if (batch_dims[k] < 0)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  name + ": batch_dims[" + std::to_string(k) + "] is " + std::to_string(batch_dims[k]) +
                      "; must be >= 0");
    if (__builtin_mul_overflow(total, batch_dims[k], &total))
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": the batch size overflows 64 bits");
  }
  std::vector<BatchDim> dims;
  for (int32_t k = 0; k < n_batch && total > 0; ++k) {
    // With K == 0 neither A nor B is read, so their strides are dropped too.
    const BatchDim d{batch_dims[k], K ? stride_a[k] : 0, K ? stride_b[k] : 0, stride_c[k]};
    if (d.n > 1 && d.c == 0)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  name + ": stride_c[" + std::to_string(k) + "] is 0 with a dim of " + std::to_string(d.n) +
                      "; the C matrices must not overlap");
    if (d.n == 1) continue;
    if (!dims.empty()) {
      BatchDim& outer = dims.back();
      const auto covers = [&](int64_t so, int64_t si) { return so == si * d.n; };
      if (covers(outer.a, d.a) && covers(outer.b, d.b) && covers(outer.c, d.c)) {
        outer = BatchDim{outer.n * d.n, d.a, d.b, d.c};
        continue;
      }
    }
    dims.push_back(d);
  }
  *plan = GemmPlan{};
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B comes first.
  plan->transFirst = transB != 0;
  plan->transSecond = transA != 0;
  plan->m = N;
  plan->n = M;
  plan->k = K;
  plan->ldFirst = ldb;
  plan->ldSecond = lda;
  plan->ldc = ldc;
  if (M == 0 || N == 0 || total == 0) return DSCC_OK;
  if (!C || (K > 0 && (!A || !B))) return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": A, B or C is NULL");

  const BatchDim inner = dims.empty() ? BatchDim{1, 0, 0, 0} : dims.back();
  const size_t outerDims = dims.empty() ? 0 : dims.size() - 1;
  int64_t outerCount = 1;
  for (size_t k = 0; k < outerDims; ++k) outerCount *= dims[k].n;
  std::vector<int64_t> idx(outerDims, 0);
  int64_t offA = 0, offB = 0, offC = 0;
  for (int64_t o = 0; o < outerCount; ++o) {
    // cuBLAS counts matrices in an int: split larger batches.
    for (int64_t first = 0; first < inner.n; first += INT_MAX) {
      const int64_t count = std::min<int64_t>(INT_MAX, inner.n - first);
      plan->batches.push_back(GemmBatch{offB + first * inner.b, offA + first * inner.a, offC + first * inner.c,
                                        inner.b, inner.a, inner.c, count});
    }
    // Odometer over the outer dims, the last fastest (row-major batch order).
    for (size_t k = outerDims; k-- > 0;) {
      offA += dims[k].a;
      offB += dims[k].b;
      offC += dims[k].c;
      if (++idx[k] < dims[k].n) break;
      offA -= dims[k].a * dims[k].n;
      offB -= dims[k].b * dims[k].n;
      offC -= dims[k].c * dims[k].n;
      idx[k] = 0;
    }
  }
  return DSCC_OK;
}

}  // namespace dscc::runtime::cuda

namespace {

// Spelled out rather than decltype'd: the C++ header overloads cublasGemmStridedBatchedEx.
using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using SetMathModeFn = cublasStatus_t (*)(cublasHandle_t, cublasMath_t);
using SgemmFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                                   const float*, int, long long, const float*, int, long long, const float*, float*,
                                   int, long long, int);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, long long, const void*,
                                    cudaDataType, int, long long, const void*, void*, cudaDataType, int, long long,
                                    int, cublasComputeType_t, cublasGemmAlgo_t);
using StatusStringFn = const char* (*)(cublasStatus_t);

/// cuBLAS and the functions dscc uses; one per process, never unloaded.
struct Blas {
  std::string error;  ///< why cuBLAS is unusable; empty when it is usable
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn setStream = nullptr;
  SetMathModeFn setMathMode = nullptr;
  SgemmFn sgemm = nullptr;
  GemmExFn gemmEx = nullptr;
  StatusStringFn statusName = nullptr;    // optional: older cuBLAS lacks it
  StatusStringFn statusString = nullptr;  // optional
};

void loadBlas(Blas& b) {
#ifndef DSCC_CUBLAS_ENABLED
  b.error = "the dscc runtime was built without the cuBLAS headers (cublas_v2.h)";
#else
  // The toolkit's soname first, then the previous major version (same calls,
  // same ABI for them), then whatever the linker path or the default toolkit folder offers.
  static constexpr const char* kNames[] = {
      "libcublas.so.13", "libcublas.so.12", "libcublas.so",
      "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12",
      "/usr/local/cuda/lib64/libcublas.so"};
  void* lib = nullptr;
  std::string errors;
  for (const char* file : kNames) {
    lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* e = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (e ? e : file);
  }
  if (!lib) {
    b.error = "cuBLAS does not load (" + errors + ")";
    return;
  }
  const auto resolve = [&](auto& fn, const char* symbol, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (!fn && required && b.error.empty()) b.error = std::string("cuBLAS lacks ") + symbol + "; it is too old";
  };
  resolve(b.create, "cublasCreate_v2", true);
  resolve(b.destroy, "cublasDestroy_v2", true);
  resolve(b.setStream, "cublasSetStream_v2", true);
  resolve(b.setMathMode, "cublasSetMathMode", true);
  resolve(b.sgemm, "cublasSgemmStridedBatched", true);
  resolve(b.gemmEx, "cublasGemmStridedBatchedEx", true);
  resolve(b.statusName, "cublasGetStatusName", false);
  resolve(b.statusString, "cublasGetStatusString", false);
  static_assert(std::is_same_v<SgemmFn, decltype(&cublasSgemmStridedBatched)>);
  static_assert(std::is_same_v<SetStreamFn, decltype(&cublasSetStream_v2)>);
  static_assert(std::is_same_v<CreateFn, decltype(&cublasCreate_v2)>);
#endif
}

Blas& blasLibrary() {
  static Blas* b = [] {
    auto* p = new Blas;
    try {
      loadBlas(*p);
    } catch (...) {
      p->error = "loading cuBLAS ran out of memory";
    }
    return p;
  }();
  return *b;
}

/// The status a cuBLAS failure maps to.
dscc_status statusOf(cublasStatus_t s) {
#ifdef DSCC_CUBLAS_ENABLED
  switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED: return DSCC_OUT_OF_MEMORY;
    case CUBLAS_STATUS_INVALID_VALUE: return DSCC_INVALID_ARGUMENT;
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_SUPPORTED: return DSCC_UNAVAILABLE;
    default: return DSCC_INTERNAL;
  }
#else
  return DSCC_INTERNAL;
#endif
}

dscc_status blasFail(const dscc_context* ctx, const char* fn, const char* call, cublasStatus_t s) {
  const Blas& b = blasLibrary();
  const char* name = b.statusName ? b.statusName(s) : nullptr;
  const char* text = b.statusString ? b.statusString(s) : nullptr;
  return fail(ctx, statusOf(s),
              std::string(fn) + ": " + call + " failed: " +
                  (name ? name : "cuBLAS status " + std::to_string(static_cast<int>(s))) +
                  (text ? std::string(" (") + text + ")" : std::string()));
}

/// The element pointer `offset` elements of `size` bytes past `base`, computed
/// on integers: with K == 0 the bases of A and B may be null.
const void* at(const void* base, int64_t offset, size_t size) {
  return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(base) +
                                       static_cast<uintptr_t>(offset * static_cast<int64_t>(size)));
}

/// Plans and runs one gemm_nd call; `half` selects 16-bit operands: f16, or bf16 with `bf16`.
dscc_status gemmNd(dscc_context* ctx, const char* fn, bool half, bool bf16, bool tensorOp, int transA, int transB, int64_t M,
                   int64_t N, int64_t K, const void* A, int64_t lda, const void* B, int64_t ldb, void* C,
                   int64_t ldc, int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                   const int64_t* stride_b, const int64_t* stride_c) {
  using namespace dscc::runtime::cuda;
  GemmPlan plan;
  if (dscc_status st = planGemmNd(ctx, fn, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, n_batch, batch_dims,
                                  stride_a, stride_b, stride_c, &plan);
      st != DSCC_OK)
    return st;
  ContextState* state = nullptr;
  if (dscc_status st = acquire(ctx, fn, &state); st != DSCC_OK) return st;
  const Blas& b = blasLibrary();
  if (!b.error.empty()) return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": " + b.error);
  if (plan.batches.empty()) return DSCC_OK;

  BlasSlot& slot = blas(state);
  std::lock_guard lock(slot.mutex);
  if (!slot.handle) {
    cublasHandle_t handle = nullptr;
    if (cublasStatus_t s = b.create(&handle); s != CUBLAS_STATUS_SUCCESS)
      return blasFail(ctx, fn, "cublasCreate", s);
    slot.handle = handle;
    slot.destroy = [](void* h) { blasLibrary().destroy(static_cast<cublasHandle_t>(h)); };
    // Exact fp32 unless a call asks for TF32 through its compute type.
    cublasStatus_t s = b.setStream(handle, static_cast<cudaStream_t>(stream(state)));
    if (s == CUBLAS_STATUS_SUCCESS) s = b.setMathMode(handle, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) return blasFail(ctx, fn, "configuring the cuBLAS handle", s);
  }
  const auto handle = static_cast<cublasHandle_t>(slot.handle);
  const cublasOperation_t opFirst = plan.transFirst ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opSecond = plan.transSecond ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(plan.m), n = static_cast<int>(plan.n), k = static_cast<int>(plan.k);
  const int ld1 = static_cast<int>(plan.ldFirst), ld2 = static_cast<int>(plan.ldSecond);
  const int ldC = static_cast<int>(plan.ldc);
  const float one = 1.0f, zero = 0.0f;
  const size_t size = half ? 2 : 4;
  for (const GemmBatch& g : plan.batches) {
    const void* first = at(B, g.offFirst, size);
    const void* second = at(A, g.offSecond, size);
    void* c = const_cast<void*>(at(C, g.offC, size));
    const int count = static_cast<int>(g.count);
    cublasStatus_t s;
    if (!half && !tensorOp) {
      s = b.sgemm(handle, opFirst, opSecond, m, n, k, &one, static_cast<const float*>(first), ld1, g.strideFirst,
                  static_cast<const float*>(second), ld2, g.strideSecond, &zero, static_cast<float*>(c), ldC,
                  g.strideC, count);
    } else {
      const cudaDataType type = !half ? CUDA_R_32F : bf16 ? CUDA_R_16BF : CUDA_R_16F;
      const cublasComputeType_t compute = half ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
      s = b.gemmEx(handle, opFirst, opSecond, m, n, k, &one, first, type, ld1, g.strideFirst, second, type, ld2,
                   g.strideSecond, &zero, c, type, ldC, g.strideC, count, compute, CUBLAS_GEMM_DEFAULT);
    }
    if (s != CUBLAS_STATUS_SUCCESS)
      return blasFail(ctx, fn, half || tensorOp ? "cublasGemmStridedBatchedEx" : "cublasSgemmStridedBatched", s);
  }
  return DSCC_OK;
}

}  // namespace

extern "C" {

dscc_status dscc_cuda_sgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                               int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                               const int64_t* stride_b, const int64_t* stride_c, int tensor_op) {
  static constexpr const char* kName = "dscc_cuda_sgemm_nd";
  return guarded(ctx, kName, [&] {
    return gemmNd(ctx, kName, false, false, tensor_op != 0, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, n_batch,
                  batch_dims, stride_a, stride_b, stride_c);
  });
}

dscc_status dscc_cuda_hgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const void* A, int64_t lda, const void* B, int64_t ldb, void* C, int64_t ldc,
                               int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                               const int64_t* stride_b, const int64_t* stride_c, int tensor_op) {
  static constexpr const char* kName = "dscc_cuda_hgemm_nd";
  return guarded(ctx, kName, [&] {
    return gemmNd(ctx, kName, true, false, true, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, n_batch, batch_dims,
                  stride_a, stride_b, stride_c);
  });
}

dscc_status dscc_cuda_bgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const void* A, int64_t lda, const void* B, int64_t ldb, void* C, int64_t ldc,
                               int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                               const int64_t* stride_b, const int64_t* stride_c, int tensor_op) {
  static constexpr const char* kName = "dscc_cuda_bgemm_nd";
  return guarded(ctx, kName, [&] {
    return gemmNd(ctx, kName, true, true, true, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, n_batch, batch_dims,
                  stride_a, stride_b, stride_c);
  });
}

}  // extern "C"
