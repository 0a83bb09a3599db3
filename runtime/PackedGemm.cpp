// The packed-B sgemm: packing, the per-context cache, and the AVX-512 kernel (8 rows x 32 columns of C in registers).
#include "runtime/PackedGemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dscc::runtime {

namespace {

constexpr int64_t W = PackedB::kPanelWidth;

// Packs B (K x N, or N x K stored when transB) into `out`'s panels.
void pack(const float* B, int64_t ldb, bool transB, PackedB& out) {
  for (int64_t p = 0; p < out.panels; ++p) {
    float* panel = out.data + p * out.K * W;
    const int64_t n0 = p * W, width = std::min(W, out.N - n0);
    for (int64_t k = 0; k < out.K; ++k) {
      float* row = panel + k * W;
      if (!transB) {
        std::memcpy(row, B + k * ldb + n0, sizeof(float) * static_cast<size_t>(width));
      } else {
        for (int64_t j = 0; j < width; ++j) row[j] = B[(n0 + j) * ldb + k];
      }
      for (int64_t j = width; j < W; ++j) row[j] = 0.0f;
    }
  }
}

#if defined(__x86_64__)
// MR rows of C times one panel: 2*MR zmm accumulators, each k reads the
// panel's 32 floats once and broadcasts MR elements of A. The prefetch runs
// 16 panel rows (2 KiB) ahead of the loads, past what the L2 streamer covers
// at the start of each panel.
template <int MR>
__attribute__((target("avx512f"), always_inline)) inline void microKernel(const float* A, int64_t lda,
                                                                          const float* panel, int64_t K, float* C,
                                                                          int64_t ldc, __mmask16 m0, __mmask16 m1) {
  // The row loops must unroll (at -O2 GCC keeps them, and acc on the stack:
  // a third of the speed), so acc lives in registers.
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* row = panel + k * W;
    _mm_prefetch(reinterpret_cast<const char*>(row + 16 * W), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(row + 16 * W + 16), _MM_HINT_T0);
    const __m512 b0 = _mm512_load_ps(row), b1 = _mm512_load_ps(row + 16);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(A[r * lda + k]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(C + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(C + r * ldc + 16, m1, acc[r][1]);
  }
}

// MR (1 or 2) rows of C times NP consecutive panels: with one or two rows, one panel gives only 2-4 chains of
// dependent FMAs (each 4 cycles), so the kernel waited on latency; NP panels give 2*MR*NP independent ones.
template <int MR, int NP>
__attribute__((target("avx512f"), always_inline)) inline void wideKernel(const float* A, int64_t lda,
                                                                         const float* panel, int64_t K, float* C,
                                                                         int64_t ldc, const __mmask16* m) {
  __m512 acc[MR][2 * NP];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < 2 * NP; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 b[2 * NP];
#pragma GCC unroll 16
    for (int q = 0; q < NP; ++q) {
      const float* row = panel + q * K * W + k * W;
      _mm_prefetch(reinterpret_cast<const char*>(row + 16 * W), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(row + 16 * W + 16), _MM_HINT_T0);
      b[2 * q] = _mm512_load_ps(row), b[2 * q + 1] = _mm512_load_ps(row + 16);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(A[r * lda + k]);
#pragma GCC unroll 16
      for (int j = 0; j < 2 * NP; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < 2 * NP; ++j) _mm512_mask_storeu_ps(C + r * ldc + j * 16, m[j], acc[r][j]);
}

__attribute__((target("avx512f"))) void packedGemmAvx512(int64_t M, const float* A, int64_t lda, const PackedB& b,
                                                         float* C, int64_t ldc, int64_t p0, int64_t p1) {
  const auto mask = [](int64_t n) -> __mmask16 {
    return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
  };
  // One or two rows: four or two panels at a time (wideKernel).
  const int64_t np = M == 1 ? 4 : M == 2 ? 2 : 1;
  for (; np > 1 && p0 + np <= p1; p0 += np) {
    __mmask16 m[8];
    for (int64_t j = 0; j < 2 * np; ++j) m[j] = mask(b.N - p0 * W - j * 16);
    const float* panel = b.data + p0 * b.K * W;
    if (M == 1) wideKernel<1, 4>(A, lda, panel, b.K, C + p0 * W, ldc, m);
    else wideKernel<2, 2>(A, lda, panel, b.K, C + p0 * W, ldc, m);
  }
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t rem = b.N - p * W;
    const __mmask16 m0 = mask(rem), m1 = mask(rem - 16);
    const float* panel = b.data + p * b.K * W;
    float* Cp = C + p * W;
    for (int64_t m = 0; m < M; m += 8) {
      const float* Am = A + m * lda;
      float* Cm = Cp + m * ldc;
      switch (std::min<int64_t>(8, M - m)) {
        case 8: microKernel<8>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
        case 7: microKernel<7>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
        case 6: microKernel<6>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
        case 5: microKernel<5>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
        case 4: microKernel<4>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
        case 3: microKernel<3>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
        case 2: microKernel<2>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
        default: microKernel<1>(Am, lda, panel, b.K, Cm, ldc, m0, m1); break;
      }
    }
  }
}
#endif

}  // namespace

bool haveAvx512() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

PackedB::~PackedB() { std::free(data); }

const PackedB* PackedCache::get(const float* B, int64_t ldb, bool transB, int64_t K, int64_t N, uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  const Key k{reinterpret_cast<uintptr_t>(B), key, ldb, K, N, transB};
  if (auto it = map_.find(k); it != map_.end()) return it->second.get();
  auto packed = std::make_unique<PackedB>();
  packed->K = K;
  packed->N = N;
  packed->panels = (N + W - 1) / W;
  // The caller checked K and N against the BLAS's 32-bit int, so this cannot overflow.
  const size_t bytes = sizeof(float) * static_cast<size_t>(packed->panels * K * W);
  if (bytes > kMaxBytes - std::min(bytes_, kMaxBytes)) return nullptr;
  packed->data = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  if (!packed->data) return nullptr;
  pack(B, ldb, transB, *packed);
  bytes_ += bytes;
  return map_.emplace(k, std::move(packed)).first->second.get();
}

bool packInto(const float* B, int64_t ldb, bool transB, int64_t K, int64_t N, PackedB& out) {
  std::free(out.data);
  out.K = K, out.N = N, out.panels = (N + W - 1) / W;
  const size_t bytes = sizeof(float) * static_cast<size_t>(out.panels * K * W);
  out.data = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  if (!out.data) return false;
  pack(B, ldb, transB, out);
  return true;
}

size_t PackedCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

bool packedGemmApplies(int64_t M, int64_t N, int64_t K, bool transA) {
  return haveAvx512() && !transA && M > 0 && M <= kMaxPackedRows && N > 0 && K > 0;
}

void packedGemm(int64_t M, const float* A, int64_t lda, const PackedB& b, float* C, int64_t ldc, int64_t p0,
                int64_t p1) {
#if defined(__x86_64__)
  packedGemmAvx512(M, A, lda, b, C, ldc, std::max<int64_t>(p0, 0), std::min(p1, b.panels));
#else
  (void)M, (void)A, (void)lda, (void)b, (void)C, (void)ldc, (void)p0, (void)p1;
#endif
}

}  // namespace dscc::runtime
