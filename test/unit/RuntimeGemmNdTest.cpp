// dscc_sgemm_nd and dscc_copy_strided against naive loops: n-d and broadcast batches, transposes, empty shapes, bad arguments.
//
// gemm tolerance: |got - want| <= 1e-5 + 1e-5 * sum_k |a_k * b_k| per element
// (float accumulation over K terms against a double reference). Copies are
// exact. Every C buffer is pre-filled with NaN so an element the call skips
// fails, and its padding (ldc > N, gaps between batch matrices) must stay NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "runtime/dscc_runtime.h"

namespace {

struct ContextDeleter {
  void operator()(dscc_context* ctx) const { dscc_context_release(ctx); }
};
using ContextPtr = std::unique_ptr<dscc_context, ContextDeleter>;

ContextPtr makeContext(int threads) {
  ContextPtr ctx(dscc_context_create(threads));
  EXPECT_NE(ctx, nullptr) << dscc_status_message(nullptr);
  return ctx;
}

/// One dscc_sgemm_nd call's layout: sizes, pitches and batch strides (elements, all >= 0).
struct NdCase {
  bool ta = false, tb = false;
  int64_t M = 1, N = 1, K = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0: dense (the stored row length)
  std::vector<int64_t> dims, sa, sb, sc;
};

/// The elements a buffer needs so that every matrix of the batch fits.
int64_t extent(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t rows, int64_t ld) {
  int64_t last = rows > 0 ? (rows - 1) * ld + ld : 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 0) return 0;
    last += (dims[k] - 1) * strides[k];
  }
  return last;
}

/// Runs `c` through dscc_sgemm_nd on random data and checks it element by element against a double loop.
void checkNd(dscc_context* ctx, NdCase c, std::mt19937_64& rng) {
  const int64_t colsA = c.ta ? c.M : c.K, rowsA = c.ta ? c.K : c.M;
  const int64_t colsB = c.tb ? c.K : c.N, rowsB = c.tb ? c.N : c.K;
  if (!c.lda) c.lda = std::max<int64_t>(1, colsA);
  if (!c.ldb) c.ldb = std::max<int64_t>(1, colsB);
  if (!c.ldc) c.ldc = std::max<int64_t>(1, c.N);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> A(static_cast<size_t>(extent(c.dims, c.sa, rowsA, c.lda)) + 1);
  std::vector<float> B(static_cast<size_t>(extent(c.dims, c.sb, rowsB, c.ldb)) + 1);
  for (float& x : A) x = dist(rng);
  for (float& x : B) x = dist(rng);
  std::vector<float> C(static_cast<size_t>(extent(c.dims, c.sc, c.M, c.ldc)) + 1, NAN);
  std::vector<char> written(C.size(), 0);

  const dscc_status st =
      dscc_sgemm_nd(ctx, c.ta, c.tb, c.M, c.N, c.K, A.data(), c.lda, B.data(), c.ldb, C.data(), c.ldc,
                    static_cast<int32_t>(c.dims.size()), c.dims.empty() ? nullptr : c.dims.data(),
                    c.sa.empty() ? nullptr : c.sa.data(), c.sb.empty() ? nullptr : c.sb.data(),
                    c.sc.empty() ? nullptr : c.sc.data());
  ASSERT_EQ(st, DSCC_OK) << dscc_status_message(ctx);

  const int64_t total = std::accumulate(c.dims.begin(), c.dims.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> idx(c.dims.size(), 0);
  for (int64_t b = 0; b < total; ++b) {
    int64_t oa = 0, ob = 0, oc = 0;
    for (size_t k = 0; k < idx.size(); ++k) oa += idx[k] * c.sa[k], ob += idx[k] * c.sb[k], oc += idx[k] * c.sc[k];
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        double want = 0, scale = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          const double a = A[oa + (c.ta ? k * c.lda + m : m * c.lda + k)];
          const double bv = B[ob + (c.tb ? n * c.ldb + k : k * c.ldb + n)];
          want += a * bv;
          scale += std::fabs(a * bv);
        }
        const size_t at = static_cast<size_t>(oc + m * c.ldc + n);
        const double got = C[at];
        written[at] = 1;
        ASSERT_LE(std::fabs(got - want), 1e-5 + 1e-5 * scale)
            << "batch " << b << " (" << m << ", " << n << "): got " << got << ", want " << want;
      }
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < c.dims[k]) break;
      idx[k] = 0;
    }
  }
  for (size_t i = 0; i < C.size(); ++i)
    if (!written[i]) {
      ASSERT_TRUE(std::isnan(C[i])) << "element " << i << " outside every C matrix was written";
    }
}

/// Dense row-major strides (in matrices of `matrix` elements) of a batch of `dims`.
std::vector<int64_t> denseStrides(const std::vector<int64_t>& dims, int64_t matrix) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = matrix;
  for (size_t k = dims.size(); k-- > 0;) {
    s[k] = acc;
    acc *= dims[k];
  }
  return s;
}

TEST(RuntimeGemmNd, NoBatchAllTransposesAndEdgeSizes) {
  std::mt19937_64 rng(1);
  for (int threads : {1, 4}) {
    ContextPtr ctx = makeContext(threads);
    for (int64_t M : {0, 1, 3, 17, 64})
      for (int64_t N : {0, 1, 5, 33})
        for (int64_t K : {0, 1, 7, 40})
          for (int t = 0; t < 4; ++t) {
            SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                         " t=" + std::to_string(t) + " threads=" + std::to_string(threads));
            NdCase c;
            c.ta = t & 1, c.tb = t & 2, c.M = M, c.N = N, c.K = K;
            checkNd(ctx.get(), c, rng);
          }
  }
}

TEST(RuntimeGemmNd, DenseBatchesOfOneTwoAndThreeDims) {
  std::mt19937_64 rng(2);
  ContextPtr ctx = makeContext(3);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{5}, {2, 3}, {2, 1, 3}, {1}, {1, 1}, {0}, {3, 0}, {0, 4}}) {
    for (int t = 0; t < 4; ++t) {
      SCOPED_TRACE("rank " + std::to_string(dims.size()) + " t=" + std::to_string(t));
      NdCase c;
      c.ta = t & 1, c.tb = t & 2, c.M = 9, c.N = 11, c.K = 6;
      c.dims = dims;
      c.sa = denseStrides(dims, c.M * c.K);
      c.sb = denseStrides(dims, c.K * c.N);
      c.sc = denseStrides(dims, c.M * c.N);
      checkNd(ctx.get(), c, rng);
    }
  }
}

TEST(RuntimeGemmNd, BroadcastBatchDims) {
  std::mt19937_64 rng(3);
  ContextPtr ctx = makeContext(4);
  const int64_t M = 7, N = 5, K = 4;
  // B shared by the whole batch (a weight matrix).
  {
    NdCase c{false, false, M, N, K, 0, 0, 0, {2, 3}, {3 * M * K, M * K}, {0, 0}, {3 * M * N, M * N}};
    checkNd(ctx.get(), c, rng);
  }
  // B broadcast along the outer dim only, A along the inner one: no single stride describes either.
  {
    NdCase c{false, true, M, N, K, 0, 0, 0, {3, 4}, {M * K, 0}, {0, N * K}, {4 * M * N, M * N}};
    checkNd(ctx.get(), c, rng);
  }
  // A broadcast along the inner dim with a size-1 dim between (dropped, not merged).
  {
    NdCase c{true, false, M, N, K, 0, 0, 0, {2, 1, 3}, {K * M, 999, 0}, {3 * K * N, 12345, K * N},
             {3 * M * N, 777, M * N}};
    checkNd(ctx.get(), c, rng);
  }
}

TEST(RuntimeGemmNd, NonMergeableStridesAndPaddedPitches) {
  std::mt19937_64 rng(4);
  for (int threads : {1, 4}) {
    ContextPtr ctx = makeContext(threads);
    const int64_t M = 6, N = 10, K = 3;
    // C's batch matrices have gaps (an outer stride larger than inner dim * inner stride), and every
    // matrix is sliced out of a wider one (ld > stored row length).
    NdCase c;
    c.M = M, c.N = N, c.K = K, c.lda = K + 2, c.ldb = N + 1, c.ldc = N + 3;
    c.dims = {3, 2};
    c.sa = {2 * M * c.lda + 5, M * c.lda};
    c.sb = {K * c.ldb, 0};
    c.sc = {2 * M * c.ldc + 7, M * c.ldc};
    checkNd(ctx.get(), c, rng);
    // Interleaved output: matrix b of C starts b * N elements into a row of 3 * N (a transpose of heads).
    NdCase d;
    d.tb = true, d.M = M, d.N = N, d.K = K, d.ldc = 3 * N;
    d.dims = {2, 3};
    d.sa = {3 * M * K, M * K};
    d.sb = {3 * N * K, N * K};
    d.sc = {M * 3 * N, N};
    checkNd(ctx.get(), d, rng);
  }
}

TEST(RuntimeGemmNd, LargeBatchUsesThreads) {
  std::mt19937_64 rng(5);
  ContextPtr ctx = makeContext(4);
  NdCase c;
  c.M = 33, c.N = 40, c.K = 64;
  c.dims = {4, 5};
  c.sa = {0, c.M * c.K};
  c.sb = denseStrides(c.dims, c.K * c.N);
  c.sc = denseStrides(c.dims, c.M * c.N);
  checkNd(ctx.get(), c, rng);
}

TEST(RuntimeGemmNd, RejectsBadArguments) {
  ContextPtr ctx = makeContext(1);
  std::vector<float> A(64, 1.0f), B(64, 1.0f), C(64);
  const int64_t dims[2] = {2, 2}, s[2] = {8, 4}, zero[2] = {0, 0}, neg[2] = {2, -1};
  EXPECT_EQ(dscc_sgemm_nd(nullptr, 0, 0, 2, 2, 2, A.data(), 2, B.data(), 2, C.data(), 2, 0, nullptr, nullptr,
                          nullptr, nullptr),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, -1, 2, 2, A.data(), 2, B.data(), 2, C.data(), 2, 0, nullptr, nullptr,
                          nullptr, nullptr),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, 2, 2, 3, A.data(), 2, B.data(), 2, C.data(), 2, 0, nullptr, nullptr,
                          nullptr, nullptr),
            DSCC_INVALID_ARGUMENT)
      << "lda below K";
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("lda"), std::string::npos);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, 2, 2, 2, A.data(), 2, B.data(), 2, C.data(), 2, -1, dims, s, s, s),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, 2, 2, 2, A.data(), 2, B.data(), 2, C.data(), 2, 2, dims, s, nullptr, s),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, 2, 2, 2, A.data(), 2, B.data(), 2, C.data(), 2, 2, neg, s, s, s),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, 2, 2, 2, A.data(), 2, B.data(), 2, C.data(), 2, 2, dims, s, s, zero),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("overlap"), std::string::npos);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, 2, 2, 2, nullptr, 2, B.data(), 2, C.data(), 2, 0, nullptr, nullptr,
                          nullptr, nullptr),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, int64_t{1} << 32, 2, 2, A.data(), 2, B.data(), 2, C.data(), 2, 0,
                          nullptr, nullptr, nullptr, nullptr),
            DSCC_INVALID_ARGUMENT);
  // Nothing to compute: valid even with null data.
  EXPECT_EQ(dscc_sgemm_nd(ctx.get(), 0, 0, 0, 2, 2, nullptr, 2, nullptr, 2, nullptr, 2, 0, nullptr, nullptr,
                          nullptr, nullptr),
            DSCC_OK);
}

/// dscc_copy_strided of random data against the naive index loop; `src` is offset by `base` elements
/// so negative strides stay inside the buffer.
void checkCopy(dscc_context* ctx, size_t esz, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
               std::mt19937_64& rng) {
  int64_t lo = 0, hi = 0, total = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    total *= dims[k];
    if (dims[k] > 0) (strides[k] < 0 ? lo : hi) += (dims[k] - 1) * strides[k];
  }
  std::vector<uint8_t> src(static_cast<size_t>(hi - lo + 1) * esz);
  for (uint8_t& x : src) x = static_cast<uint8_t>(rng());
  const size_t guard = 32;
  std::vector<uint8_t> dst(static_cast<size_t>(total) * esz + guard, 0xCD);
  const uint8_t* base = src.data() + static_cast<size_t>(-lo) * esz;
  ASSERT_EQ(dscc_copy_strided(ctx, dst.data(), base, esz, static_cast<int32_t>(dims.size()),
                              dims.empty() ? nullptr : dims.data(), strides.empty() ? nullptr : strides.data()),
            DSCC_OK)
      << dscc_status_message(ctx);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k) off += idx[k] * strides[k];
    ASSERT_EQ(std::memcmp(dst.data() + i * esz, base + off * static_cast<int64_t>(esz), esz), 0) << "element " << i;
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
  for (size_t g = 0; g < guard; ++g) ASSERT_EQ(dst[static_cast<size_t>(total) * esz + g], 0xCD) << "wrote past the end";
}

TEST(RuntimeCopyStrided, MatchesNaiveLoop) {
  std::mt19937_64 rng(6);
  for (int threads : {1, 3}) {
    ContextPtr ctx = makeContext(threads);
    for (size_t esz : {1, 2, 4, 8, 3, 16}) {
      SCOPED_TRACE("elem_size " + std::to_string(esz) + " threads " + std::to_string(threads));
      checkCopy(ctx.get(), esz, {}, {}, rng);                         // rank 0: one element
      checkCopy(ctx.get(), esz, {0}, {1}, rng);                       // empty
      checkCopy(ctx.get(), esz, {3, 0, 2}, {1, 5, 7}, rng);           // empty in the middle
      checkCopy(ctx.get(), esz, {1}, {9}, rng);                       // one element, any stride
      checkCopy(ctx.get(), esz, {7}, {1}, rng);                       // dense
      checkCopy(ctx.get(), esz, {4, 5}, {1, 4}, rng);                 // transpose
      checkCopy(ctx.get(), esz, {2, 3, 4}, {12, 4, 1}, rng);          // dense 3-d (merges to one run)
      checkCopy(ctx.get(), esz, {2, 3, 4}, {4, 8, 1}, rng);           // swapped outer dims
      checkCopy(ctx.get(), esz, {3, 4}, {0, 1}, rng);                 // broadcast rows
      checkCopy(ctx.get(), esz, {3, 4}, {1, 0}, rng);                 // broadcast columns
      checkCopy(ctx.get(), esz, {5, 6}, {-6, 1}, rng);                // rows reversed
      checkCopy(ctx.get(), esz, {2, 1, 3, 1}, {3, 100, 1, -50}, rng); // dims of 1 anywhere
      checkCopy(ctx.get(), esz, {2, 3, 4, 5}, {60, 5, 15, 1}, rng);   // the bert head split, transposed
    }
    // Large enough to be split over the threads, with a strided inner dim and with a dense one.
    checkCopy(ctx.get(), 4, {300, 257}, {1, 300}, rng);
    checkCopy(ctx.get(), 4, {64, 37, 130}, {130, 64 * 130, 1}, rng);
  }
}

TEST(RuntimeCopyStrided, RejectsBadArguments) {
  ContextPtr ctx = makeContext(1);
  float src[4] = {1, 2, 3, 4}, dst[4];
  const int64_t dims[1] = {4}, strides[1] = {1}, neg[1] = {-1};
  EXPECT_EQ(dscc_copy_strided(nullptr, dst, src, 4, 1, dims, strides), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_copy_strided(ctx.get(), dst, src, 0, 1, dims, strides), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_copy_strided(ctx.get(), dst, src, 4, -1, dims, strides), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_copy_strided(ctx.get(), dst, src, 4, 1, nullptr, strides), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_copy_strided(ctx.get(), dst, src, 4, 1, neg, strides), DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("dims[0]"), std::string::npos);
  EXPECT_EQ(dscc_copy_strided(ctx.get(), nullptr, src, 4, 1, dims, strides), DSCC_INVALID_ARGUMENT);
  const int64_t none[1] = {0};
  EXPECT_EQ(dscc_copy_strided(ctx.get(), nullptr, nullptr, 4, 1, none, strides), DSCC_OK);
}

}  // namespace
