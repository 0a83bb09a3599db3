// dscc_sgemm_const_b against a double-precision loop: every M up to the packed limit and past it, panel tails, transposed B, pitches, reuse and the key.
//
// Tolerance: |got - want| <= 1e-5 + 1e-5 * sum_k |a_k * b_k| per element. C
// is pre-filled with NaN, padding columns (ldc > N) must stay NaN, and the
// unpacked path (dscc_sgemm_nd) must agree to the same bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "runtime/dscc_runtime.h"

namespace {

struct ContextDeleter {
  void operator()(dscc_context* ctx) const { dscc_context_release(ctx); }
};
using ContextPtr = std::unique_ptr<dscc_context, ContextDeleter>;

struct Case {
  int64_t M, N, K;
  bool tb = false;
  int64_t pad = 0;  // extra elements per row of A, B and C
};

void check(dscc_context* ctx, const Case& c, const std::vector<float>& B, uint64_t key, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t lda = c.K + c.pad, ldb = (c.tb ? c.K : c.N) + c.pad, ldc = c.N + c.pad;
  std::vector<float> A(static_cast<size_t>(c.M * lda));
  for (float& x : A) x = dist(rng);
  std::vector<float> C(static_cast<size_t>(c.M * ldc), NAN), C2 = C;
  ASSERT_EQ(dscc_sgemm_const_b(ctx, 0, c.tb, c.M, c.N, c.K, A.data(), lda, B.data(), ldb, key, C.data(), ldc),
            DSCC_OK)
      << dscc_status_message(ctx);
  ASSERT_EQ(dscc_sgemm_nd(ctx, 0, c.tb, c.M, c.N, c.K, A.data(), lda, B.data(), ldb, C2.data(), ldc, 0, nullptr,
                          nullptr, nullptr, nullptr),
            DSCC_OK);
  int bad = 0;
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < ldc; ++n) {
      const float got = C[m * ldc + n];
      if (n >= c.N) {
        if (!std::isnan(got) && bad++ < 3) ADD_FAILURE() << "padding C[" << m << "][" << n << "] was written";
        continue;
      }
      double want = 0, mag = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double b = c.tb ? B[n * ldb + k] : B[k * ldb + n];
        want += double(A[m * lda + k]) * b;
        mag += std::fabs(double(A[m * lda + k]) * b);
      }
      const double tol = 1e-5 + 1e-5 * mag;
      if (!(std::fabs(got - want) <= tol) && bad++ < 3)
        ADD_FAILURE() << "M=" << c.M << " N=" << c.N << " K=" << c.K << " tb=" << c.tb << ": C[" << m << "][" << n
                      << "] = " << got << ", want " << want;
      if (!(std::fabs(got - C2[m * ldc + n]) <= 2 * tol) && bad++ < 3)
        ADD_FAILURE() << "packed and unpacked differ at [" << m << "][" << n << "]";
    }
}

std::vector<float> randomB(const Case& c, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t rows = c.tb ? c.N : c.K, ld = (c.tb ? c.K : c.N) + c.pad;
  std::vector<float> B(static_cast<size_t>(rows * ld));
  for (float& x : B) x = dist(rng);
  return B;
}

TEST(RuntimePackedGemm, EveryRowCountAndPanelTail) {
  std::mt19937_64 rng(7);
  for (int threads : {1, 2}) {
    ContextPtr ctx(dscc_context_create(threads));
    ASSERT_NE(ctx, nullptr);
    uint64_t key = 1;
    // N around the 32-column panel (and 16-column half), K from 1; M over the
    // 8-row blocks up to the packed limit (48) and past it (the BLAS path).
    for (int64_t N : {1, 15, 16, 17, 31, 32, 33, 100, 769})
      for (int64_t K : {1, 7, 64, 300})
        for (bool tb : {false, true}) {
          Case c{0, N, K, tb, (N + K) % 3};
          std::vector<float> B = randomB(c, rng);
          for (int64_t M : {1, 2, 7, 8, 9, 16, 47, 48, 49, 64, 130}) {
            c.M = M;
            check(ctx.get(), c, B, key, rng);
          }
          ++key;
        }
  }
}

TEST(RuntimePackedGemm, ReusesThePackedCopyAndHonoursTheKey) {
  std::mt19937_64 rng(8);
  ContextPtr ctx(dscc_context_create(2));
  ASSERT_NE(ctx, nullptr);
  Case c{8, 100, 50};
  std::vector<float> B = randomB(c, rng);
  check(ctx.get(), c, B, 42, rng);
  check(ctx.get(), c, B, 42, rng);  // the packed copy of the first call
  // The same address with other contents and another key: packed again, not the stale copy.
  for (float& x : B) x = -x;
  check(ctx.get(), c, B, 43, rng);
}

TEST(RuntimePackedGemm, EmptyShapesAndBadArguments) {
  ContextPtr ctx(dscc_context_create(2));
  ASSERT_NE(ctx, nullptr);
  std::vector<float> A(64, 1.0f), B(64, 1.0f), C(64, NAN);
  // K == 0 writes zeros (the unpacked path's rule); M or N == 0 writes nothing.
  ASSERT_EQ(dscc_sgemm_const_b(ctx.get(), 0, 0, 2, 3, 0, A.data(), 1, B.data(), 3, 9, C.data(), 3), DSCC_OK);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(C[i], 0.0f);
  EXPECT_TRUE(std::isnan(C[6]));
  EXPECT_EQ(dscc_sgemm_const_b(ctx.get(), 0, 0, 0, 3, 4, A.data(), 4, B.data(), 3, 9, C.data(), 3), DSCC_OK);
  EXPECT_EQ(dscc_sgemm_const_b(nullptr, 0, 0, 2, 3, 4, A.data(), 4, B.data(), 3, 9, C.data(), 3),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_const_b(ctx.get(), 0, 0, 2, 3, 4, nullptr, 4, B.data(), 3, 9, C.data(), 3),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_const_b(ctx.get(), 0, 0, 2, 3, 4, A.data(), 2, B.data(), 3, 9, C.data(), 3),
            DSCC_INVALID_ARGUMENT);  // lda < K
  EXPECT_EQ(dscc_sgemm_const_b(ctx.get(), 0, 0, -1, 3, 4, A.data(), 4, B.data(), 3, 9, C.data(), 3),
            DSCC_INVALID_ARGUMENT);
}

}  // namespace
