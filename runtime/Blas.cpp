// dscc_sgemm_strided_batched, dscc_sgemm_batched, dscc_sgemm_nd and dscc_sgemm_const_b: checked arguments, tiles of C over the pool, a BLAS call per tile.
#include "runtime/Blas.h"

#ifdef DSCC_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#ifndef DSCC_NO_BLAS
#include <cblas.h>
#else
// A runtime-only build without a BLAS (a GPU machine): CPU matmuls report
// DSCC_UNAVAILABLE; everything else works.
using blasint = int;
#endif

#include <algorithm>
#include <climits>
#include <limits>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/Context.h"
#include "runtime/PackedGemm.h"
#include "runtime/dscc_runtime.h"

namespace dscc::runtime {

namespace {

// Below this many flops a gemm stays on the calling thread: at OpenBLAS's
// 55-80 GFLOP/s on one core (docs/abi.md) it takes 25-35 us, about what
// waking the pool's workers and joining them costs.
constexpr double kMinParallelFlops = 2.0e6;
// A tile narrower than this spends more time re-packing the other operand
// than multiplying.
constexpr int64_t kMinTile = 16;
// Tile edges fall on multiples of 16 so every tile but the last is a whole
// number of OpenBLAS's x86 sgemm register blocks (4, 8 or 16 wide).
constexpr int64_t kTileAlign = 16;

/// Start of strip `i` of `count` over `total` rows or columns; strip `count` ends at `total`.
int64_t stripStart(int64_t i, int64_t count, int64_t total) {
  if (i >= count) return total;
  return total * i / count / kTileAlign * kTileAlign;
}

/// The sizes and scalars shared by every matrix of one batched call.
struct Gemm {
  bool transA, transB;
  int64_t M, N, K;
  float alpha, beta;
  int64_t lda, ldb, ldc;
};

/// Checks what both entry points share; returns the failing status with a message.
dscc_status validate(const dscc_context* ctx, const char* fn, const Gemm& g, int64_t batch) {
  const std::string name(fn);
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, name + ": ctx is NULL");
  if (g.M < 0 || g.N < 0 || g.K < 0 || batch < 0)
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": sizes must be >= 0; got M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) +
                    " K=" + std::to_string(g.K) + " batch=" + std::to_string(batch));
  const auto tooBig = [](int64_t v) { return v > INT_MAX; };
  if (tooBig(g.M) || tooBig(g.N) || tooBig(g.K) || tooBig(g.lda) || tooBig(g.ldb) || tooBig(g.ldc))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": M, N, K and the leading dimensions must fit the BLAS's 32-bit int");
  // Row-major: a row of the stored A has K elements, or M when it is stored transposed.
  const int64_t colsA = g.transA ? g.M : g.K;
  const int64_t colsB = g.transB ? g.K : g.N;
  if (g.lda < std::max<int64_t>(1, colsA))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": lda=" + std::to_string(g.lda) + " is less than the " + std::to_string(colsA) +
                    " columns of A" + (g.transA ? " (stored transposed, K x M)" : " (M x K)"));
  if (g.ldb < std::max<int64_t>(1, colsB))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": ldb=" + std::to_string(g.ldb) + " is less than the " + std::to_string(colsB) +
                    " columns of B" + (g.transB ? " (stored transposed, N x K)" : " (K x N)"));
  if (g.ldc < std::max<int64_t>(1, g.N))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                name + ": ldc=" + std::to_string(g.ldc) + " is less than the " + std::to_string(g.N) +
                    " columns of C");
  return DSCC_OK;
}

/// Runs the batched gemm; `operands(b)` gives matrix b's (A, B, C) pointers.
template <class Operands>
void run(dscc_context* ctx, const Gemm& g, int64_t batch, const Operands& operands) {
  // One BLAS call for rows [m0, m1) and columns [n0, n1) of matrix b's C.
  // With K == 0 the BLAS reads neither A nor B (C = beta * C), so they are
  // passed as given rather than offset, as they may be null.
  const auto tile = [&g, &operands](int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    auto [a, bm, c] = operands(b);
    if (g.K > 0) {
      a += g.transA ? m0 : m0 * g.lda;
      bm += g.transB ? n0 * g.ldb : n0;
    }
#ifdef DSCC_HAVE_DNNL
    // oneDNN's sgemm: 1.3-4x OpenBLAS's at BERT's shapes with few rows (bench/results/*-gemm-libs.md),
    // on this thread only (its OpenMP team would otherwise compete with the pool's threads).
    if (g.K == 0) {
      // C = beta * C, which oneDNN skips for an empty product (0 * NaN would stay NaN: beta 0 writes zeros).
      for (int64_t i = m0; i < m1; ++i)
        for (int64_t j = n0; j < n1; ++j) {
          float& x = c[i * g.ldc + j];
          x = g.beta == 0.0f ? 0.0f : g.beta * x;
        }
      return;
    }
    omp_set_num_threads(1);
    dnnl_sgemm(g.transA ? 'T' : 'N', g.transB ? 'T' : 'N', m1 - m0, n1 - n0, g.K, g.alpha, a, g.lda, bm, g.ldb, g.beta,
               c + m0 * g.ldc + n0, g.ldc);
#elif !defined(DSCC_NO_BLAS)
    cblas_sgemm(CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans, g.transB ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(m1 - m0), static_cast<blasint>(n1 - n0), static_cast<blasint>(g.K), g.alpha,
                a, static_cast<blasint>(g.lda), bm, static_cast<blasint>(g.ldb), g.beta, c + m0 * g.ldc + n0,
                static_cast<blasint>(g.ldc));
#else
    (void)a, (void)bm, (void)c, (void)n1;
#endif
  };
  if (g.M == 0 || g.N == 0 || batch == 0) return;

  const GemmSplit split = chooseGemmSplit(g.M, g.N, g.K, batch, ctx->pool.numThreads());
  if (!split.parallel) {
    for (int64_t b = 0; b < batch; ++b) tile(b, 0, g.M, 0, g.N);
    return;
  }
  const int64_t perMatrix = split.tilesM * split.tilesN;
  ctx->pool.parallelFor(0, batch * perMatrix, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / perMatrix;
      const int64_t r = t % perMatrix / split.tilesN;
      const int64_t c = t % split.tilesN;
      const int64_t m0 = stripStart(r, split.tilesM, g.M), m1 = stripStart(r + 1, split.tilesM, g.M);
      const int64_t n0 = stripStart(c, split.tilesN, g.N), n1 = stripStart(c + 1, split.tilesN, g.N);
      if (m0 < m1 && n0 < n1) tile(b, m0, m1, n0, n1);
    }
  });
}

}  // namespace

void initBlas() {
  static std::once_flag once;
#ifndef DSCC_NO_BLAS
  std::call_once(once, [] { openblas_set_num_threads(1); });
#endif
}

#if defined(DSCC_HAVE_DNNL)
const char* blasConfig() {
  static const std::string text = [] {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " (sgemm, one thread per tile); OpenBLAS " + openblas_get_config();
  }();
  return text.c_str();
}
#elif !defined(DSCC_NO_BLAS)
const char* blasConfig() { return openblas_get_config(); }
#else
const char* blasConfig() { return "none (runtime-only build without a BLAS)"; }
#endif

GemmSplit chooseGemmSplit(int64_t M, int64_t N, int64_t K, int64_t batch, int numThreads) {
  GemmSplit split;
  if (numThreads <= 1 || M <= 0 || N <= 0 || batch <= 0) return split;
  if (2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(std::max<int64_t>(K, 1)) *
          static_cast<double>(batch) <
      kMinParallelFlops)
    return split;
  if (batch >= numThreads) {
    split.parallel = true;
    return split;
  }
  // Up to `want` tiles per matrix, one per thread; among the grids with the
  // most tiles, the cheapest: a grid of tm x tn re-packs A tn times and B tm
  // times, so it costs about tn * M + tm * N (times K).
  const int64_t want = (numThreads + batch - 1) / batch;
  int64_t bestTiles = 0;
  double bestCost = std::numeric_limits<double>::infinity();
  for (int64_t tm = 1; tm <= want; ++tm) {
    if (tm > 1 && M / tm < kMinTile) break;
    for (int64_t tn = 1; tm * tn <= want; ++tn) {
      if (tn > 1 && N / tn < kMinTile) break;
      const int64_t tiles = tm * tn;
      const double cost = static_cast<double>(tn) * static_cast<double>(M) + static_cast<double>(tm) * static_cast<double>(N);
      if (tiles > bestTiles || (tiles == bestTiles && cost < bestCost)) {
        bestTiles = tiles;
        bestCost = cost;
        split.tilesM = tm;
        split.tilesN = tn;
      }
    }
  }
  split.parallel = batch > 1 || bestTiles > 1;
  return split;
}

}  // namespace dscc::runtime

using dscc::runtime::fail;
using dscc::runtime::Gemm;
using dscc::runtime::guarded;

extern "C" {

dscc_status dscc_sgemm_strided_batched(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                                       float alpha, const float* A, int64_t lda, int64_t strideA, const float* B,
                                       int64_t ldb, int64_t strideB, float beta, float* C, int64_t ldc,
                                       int64_t strideC, int64_t batch) {
  static constexpr const char* kName = "dscc_sgemm_strided_batched";
  return guarded(ctx, kName, [&] {
#ifdef DSCC_NO_BLAS
    return fail(ctx, DSCC_UNAVAILABLE, std::string(kName) + ": this runtime was built without a BLAS");
#endif
    const Gemm g{transA != 0, transB != 0, M, N, K, alpha, beta, lda, ldb, ldc};
    if (dscc_status st = dscc::runtime::validate(ctx, kName, g, batch); st != DSCC_OK) return st;
    if (M == 0 || N == 0 || batch == 0) return DSCC_OK;
    if (!C || (K > 0 && (!A || !B)))
      return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(kName) + ": A, B or C is NULL");
    if (batch > 1 && strideC == 0)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  std::string(kName) + ": strideC is 0 with batch > 1; the C matrices must not overlap");
    dscc::runtime::run(ctx, g, batch, [=](int64_t b) {
      return std::tuple<const float*, const float*, float*>(K > 0 ? A + b * strideA : A,
                                                            K > 0 ? B + b * strideB : B, C + b * strideC);
    });
    return DSCC_OK;
  });
}

dscc_status dscc_sgemm_batched(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               float alpha, const float* const* A, int64_t lda, const float* const* B, int64_t ldb,
                               float beta, float* const* C, int64_t ldc, int64_t batch) {
  static constexpr const char* kName = "dscc_sgemm_batched";
  return guarded(ctx, kName, [&] {
#ifdef DSCC_NO_BLAS
    return fail(ctx, DSCC_UNAVAILABLE, std::string(kName) + ": this runtime was built without a BLAS");
#endif
    const Gemm g{transA != 0, transB != 0, M, N, K, alpha, beta, lda, ldb, ldc};
    if (dscc_status st = dscc::runtime::validate(ctx, kName, g, batch); st != DSCC_OK) return st;
    if (M == 0 || N == 0 || batch == 0) return DSCC_OK;
    if (!C || (K > 0 && (!A || !B)))
      return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(kName) + ": the array A, B or C is NULL");
    for (int64_t b = 0; b < batch; ++b)
      if (!C[b] || (K > 0 && (!A[b] || !B[b])))
        return fail(ctx, DSCC_INVALID_ARGUMENT,
                    std::string(kName) + ": A, B or C of batch entry " + std::to_string(b) + " is NULL");
    dscc::runtime::run(ctx, g, batch, [=](int64_t b) {
      return std::tuple<const float*, const float*, float*>(K > 0 ? A[b] : nullptr, K > 0 ? B[b] : nullptr, C[b]);
    });
    return DSCC_OK;
  });
}

dscc_status dscc_sgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                          const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                          int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                          const int64_t* stride_b, const int64_t* stride_c) {
  static constexpr const char* kName = "dscc_sgemm_nd";
  return guarded(ctx, kName, [&] {
    const std::string name(kName);
    // A pitch addresses nothing when its matrix has at most one stored row
    // or is not read (M, N or K is 0): raise it to the BLAS's minimum there, so
    // planners may pass any pitch for a rank-1 operand or an empty dim.
    const auto pitch = [](int64_t ld, int64_t rows, int64_t cols, bool unused) {
      return rows <= 1 || unused ? std::max({ld, cols, int64_t{1}}) : ld;
    };
    const bool empty = M == 0 || N == 0 || K == 0;
    lda = pitch(lda, transA ? K : M, transA ? M : K, empty);
    ldb = pitch(ldb, transB ? N : K, transB ? K : N, empty);
    ldc = pitch(ldc, M, N, M == 0 || N == 0);
    const Gemm g{transA != 0, transB != 0, M, N, K, 1.0f, 0.0f, lda, ldb, ldc};
    if (dscc_status st = dscc::runtime::validate(ctx, kName, g, 0); st != DSCC_OK) return st;
    if (n_batch < 0)
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": n_batch is " + std::to_string(n_batch) + "; must be >= 0");
    if (n_batch > 0 && (!batch_dims || !stride_a || !stride_b || !stride_c))
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": batch_dims or a stride array is NULL with n_batch > 0");
    // One batch dim with its three strides; dims of 1 are dropped (their
    // strides never apply) and neighbours that one stride covers are merged,
    // so the common layouts become a single strided call.
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
    // Empty C matrices or an empty batch cannot overlap (dense strides of
    // [3, 0] or of [3] x 0 x N are 0).
    std::vector<BatchDim> dims;
    for (int32_t k = 0; k < n_batch && total > 0 && M > 0 && N > 0; ++k) {
      const BatchDim d{batch_dims[k], stride_a[k], stride_b[k], stride_c[k]};
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
    if (M == 0 || N == 0 || total == 0) return DSCC_OK;
    if (!C || (K > 0 && (!A || !B)))
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": A, B or C is NULL");
    if (dims.size() <= 1) {
      const BatchDim d = dims.empty() ? BatchDim{1, 0, 0, 0} : dims[0];
      return dscc_sgemm_strided_batched(ctx, transA, transB, M, N, K, 1.0f, A, lda, d.a, B, ldb, d.b, 0.0f, C,
                                        ldc, d.c, d.n);
    }
    std::vector<const float*> pa(static_cast<size_t>(total)), pb(static_cast<size_t>(total));
    std::vector<float*> pc(static_cast<size_t>(total));
    // Row-major walk of the merged batch index: the last dim varies fastest.
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t offA = 0, offB = 0, offC = 0;
    for (int64_t b = 0; b < total; ++b) {
      pa[b] = K > 0 ? A + offA : A;
      pb[b] = K > 0 ? B + offB : B;
      pc[b] = C + offC;
      for (size_t k = dims.size(); k-- > 0;) {
        offA += dims[k].a, offB += dims[k].b, offC += dims[k].c;
        if (++idx[k] < dims[k].n) break;
        offA -= dims[k].a * dims[k].n, offB -= dims[k].b * dims[k].n, offC -= dims[k].c * dims[k].n;
        idx[k] = 0;
      }
    }
    return dscc_sgemm_batched(ctx, transA, transB, M, N, K, 1.0f, pa.data(), lda, pb.data(), ldb, 0.0f, pc.data(),
                              ldc, total);
  });
}

dscc_status dscc_sgemm_const_b(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const float* A, int64_t lda, const float* B, int64_t ldb, uint64_t b_key, float* C,
                               int64_t ldc) {
  static constexpr const char* kName = "dscc_sgemm_const_b";
  return guarded(ctx, kName, [&] {
    const auto unpacked = [&] {
      return dscc_sgemm_nd(ctx, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, 0, nullptr, nullptr, nullptr,
                           nullptr);
    };
    if (!ctx || !dscc::runtime::packedGemmApplies(M, N, K, transA != 0)) return unpacked();
    // The pitch rules of dscc_sgemm_nd: a matrix with one stored row has any pitch.
    if (M == 1) lda = std::max(lda, K), ldc = std::max(ldc, N);
    if ((transB ? N : K) == 1) ldb = std::max(ldb, transB ? K : N);
    const Gemm g{false, transB != 0, M, N, K, 1.0f, 0.0f, lda, ldb, ldc};
    if (dscc_status st = dscc::runtime::validate(ctx, kName, g, 1); st != DSCC_OK) return st;
    if (!A || !B || !C) return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(kName) + ": A, B or C is NULL");
    const dscc::runtime::PackedB* packed = ctx->packed.get(B, ldb, transB != 0, K, N, b_key);
    if (!packed) return unpacked();
    const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    if (flops < dscc::runtime::kMinParallelFlops || ctx->pool.numThreads() <= 1) {
      dscc::runtime::packedGemm(M, A, lda, *packed, C, ldc, 0, packed->panels);
      return DSCC_OK;
    }
    ctx->pool.parallelFor(0, packed->panels, 1, [&](int64_t begin, int64_t end) {
      dscc::runtime::packedGemm(M, A, lda, *packed, C, ldc, begin, end);
    });
    return DSCC_OK;
  });
}

}  // extern "C"
