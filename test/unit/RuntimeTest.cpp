// Unit tests of the runtime's C ABI: parallel_for, concurrent callers, sgemm against a naive loop, buffers, statuses.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/Blas.h"
#include "runtime/ThreadPool.h"
#include "runtime/dscc_runtime.h"

using dscc::runtime::GemmSplit;
using dscc::runtime::ThreadPool;

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

/// What a parallel loop did: how often each index ran, and the chunk lengths seen.
struct Coverage {
  explicit Coverage(int64_t n) : n(n), hits(static_cast<size_t>(n)) {}
  int64_t n;
  std::vector<std::atomic<int>> hits;
  std::atomic<int> calls{0};
  std::atomic<int> badRanges{0};
  std::atomic<int64_t> minInnerChunk{std::numeric_limits<int64_t>::max()};  // chunks not ending at n
  std::atomic<int64_t> maxInnerChunk{0};
};

void recordChunk(void* closure, int64_t begin, int64_t end) {
  auto& cov = *static_cast<Coverage*>(closure);
  cov.calls.fetch_add(1);
  if (begin < 0 || end > cov.n || begin >= end) {
    cov.badRanges.fetch_add(1);
    return;
  }
  for (int64_t i = begin; i < end; ++i) cov.hits[static_cast<size_t>(i)].fetch_add(1);
  if (end != cov.n) {
    const int64_t len = end - begin;
    int64_t seen = cov.minInnerChunk.load();
    while (len < seen && !cov.minInnerChunk.compare_exchange_weak(seen, len)) {
    }
    seen = cov.maxInnerChunk.load();
    while (len > seen && !cov.maxInnerChunk.compare_exchange_weak(seen, len)) {
    }
  }
}

std::vector<float> randomPositive(size_t n, std::mt19937& rng) {
  // Positive and away from zero, so that no sum cancels and a relative
  // tolerance on each element is meaningful.
  std::uniform_real_distribution<float> dist(0.1f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// The layout of one batched gemm operand set, with padding between rows and matrices.
struct GemmLayout {
  int64_t M, N, K;
  bool transA, transB;
  int64_t batch;
  int64_t lda, ldb, ldc;
  int64_t strideA, strideB, strideC;

  int64_t rowsA() const { return transA ? K : M; }
  int64_t rowsB() const { return transB ? N : K; }
  size_t sizeA() const { return static_cast<size_t>((batch - 1) * strideA + rowsA() * lda); }
  size_t sizeB() const { return static_cast<size_t>((batch - 1) * strideB + rowsB() * ldb); }
  size_t sizeC() const { return static_cast<size_t>((batch - 1) * strideC + (M - 1) * ldc + N); }
};

/// A padded layout: every leading dimension and stride is larger than needed, so out-of-bounds writes show.
GemmLayout paddedLayout(int64_t M, int64_t N, int64_t K, bool transA, bool transB, int64_t batch) {
  GemmLayout l{M, N, K, transA, transB, batch, 0, 0, 0, 0, 0, 0};
  l.lda = (transA ? M : K) + 3;
  l.ldb = (transB ? K : N) + 2;
  l.ldc = N + 5;
  l.strideA = l.rowsA() * l.lda + 7;
  l.strideB = l.rowsB() * l.ldb + 1;
  l.strideC = M * l.ldc + 11;
  return l;
}

/// C = alpha * op(A) * op(B) + beta * C in double, one batch entry at a time.
std::vector<double> naiveGemm(const GemmLayout& l, float alpha, const std::vector<float>& A,
                              const std::vector<float>& B, float beta, const std::vector<float>& C0) {
  std::vector<double> ref(C0.begin(), C0.end());
  for (int64_t b = 0; b < l.batch; ++b) {
    const float* a = A.data() + b * l.strideA;
    const float* bm = B.data() + b * l.strideB;
    for (int64_t i = 0; i < l.M; ++i)
      for (int64_t j = 0; j < l.N; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < l.K; ++k) {
          const double x = l.transA ? a[k * l.lda + i] : a[i * l.lda + k];
          const double y = l.transB ? bm[j * l.ldb + k] : bm[k * l.ldb + j];
          sum += x * y;
        }
        double& c = ref[static_cast<size_t>(b * l.strideC + i * l.ldc + j)];
        c = alpha * sum + (beta == 0 ? 0.0 : beta * c);
      }
  }
  return ref;
}

/// True where C's buffer holds an element of some batch entry's matrix.
std::vector<bool> insideC(const GemmLayout& l, size_t size) {
  std::vector<bool> inside(size, false);
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t i = 0; i < l.M; ++i)
      for (int64_t j = 0; j < l.N; ++j) inside[static_cast<size_t>(b * l.strideC + i * l.ldc + j)] = true;
  return inside;
}

// Tolerance: each element within 1e-4 relative of the double-precision sum.
// With positive data a float sum of K <= 129 products is off by at most about
// K * 2^-24 ~ 8e-6 relative, so 1e-4 leaves room for any summation order.
constexpr double kRelTol = 1e-4;

/// Runs dscc_sgemm_strided_batched on random data in layout `l` and checks every element of C's buffer.
void checkStridedGemm(dscc_context* ctx, const GemmLayout& l, float alpha, float beta, std::mt19937& rng) {
  SCOPED_TRACE("M=" + std::to_string(l.M) + " N=" + std::to_string(l.N) + " K=" + std::to_string(l.K) +
               " transA=" + std::to_string(l.transA) + " transB=" + std::to_string(l.transB) +
               " batch=" + std::to_string(l.batch) + " beta=" + std::to_string(beta));
  std::vector<float> A = randomPositive(l.sizeA(), rng), B = randomPositive(l.sizeB(), rng);
  std::vector<float> C0 = randomPositive(l.sizeC(), rng);
  const std::vector<bool> inside = insideC(l, C0.size());
  // With beta == 0 the BLAS must not read C: NaN there would show through.
  if (beta == 0)
    for (size_t i = 0; i < C0.size(); ++i)
      if (inside[i]) C0[i] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> C = C0;
  ASSERT_EQ(dscc_sgemm_strided_batched(ctx, l.transA, l.transB, l.M, l.N, l.K, alpha, A.data(), l.lda, l.strideA,
                                       B.data(), l.ldb, l.strideB, beta, C.data(), l.ldc, l.strideC, l.batch),
            DSCC_OK)
      << dscc_status_message(ctx);
  const std::vector<double> ref = naiveGemm(l, alpha, A, B, beta, C0);
  int bad = 0;
  for (size_t i = 0; i < C.size() && bad < 5; ++i) {
    if (!inside[i]) {
      // Padding between rows and matrices is never written.
      if (std::memcmp(&C[i], &C0[i], sizeof(float)) != 0) {
        ++bad;
        ADD_FAILURE() << "padding element " << i << " was written";
      }
    } else if (!(std::abs(C[i] - ref[i]) <= kRelTol * std::abs(ref[i]))) {
      ++bad;
      ADD_FAILURE() << "element " << i << ": got " << C[i] << ", expected " << ref[i];
    }
  }
}

}  // namespace

TEST(RuntimeParallelFor, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ContextPtr ctx = makeContext(threads);
    ASSERT_EQ(dscc_context_num_threads(ctx.get()), threads);
    for (int64_t n : {0, 1, 2, 5, 31, 32, 33, 100, 1000, 4099}) {
      for (int64_t grain : {0, 1, 3, 64, 5000}) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " n=" + std::to_string(n) +
                     " grain=" + std::to_string(grain));
        Coverage cov(n);
        ASSERT_EQ(dscc_parallel_for(ctx.get(), n, grain, recordChunk, &cov), DSCC_OK);
        EXPECT_EQ(cov.badRanges.load(), 0);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(cov.hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
        if (n == 0) {
          EXPECT_EQ(cov.calls.load(), 0);
        }
        if (threads == 1 || grain >= n) {
          EXPECT_EQ(cov.calls.load(), n > 0 ? 1 : 0);
        }
        if (cov.maxInnerChunk.load() > 0) {
          // Every chunk but the last has the same length, at least the grain.
          EXPECT_EQ(cov.minInnerChunk.load(), cov.maxInnerChunk.load());
          EXPECT_GE(cov.minInnerChunk.load(), std::max<int64_t>(grain, 1));
        }
      }
    }
  }
}

TEST(RuntimeParallelFor, ChunkSizeDependsOnlyOnSizesAndThreads) {
  ThreadPool one(1), four(4);
  EXPECT_EQ(one.chunkSize(1000, 1), 1000);
  EXPECT_EQ(four.chunkSize(1000, 1), 63);  // ceil(1000 / 16): four chunks per thread
  EXPECT_EQ(four.chunkSize(1000, 100), 100);
  EXPECT_EQ(four.chunkSize(3, 0), 1);
  EXPECT_EQ(ThreadPool(4).chunkSize(1000, 1), four.chunkSize(1000, 1));
}

TEST(RuntimeParallelFor, CppLambdaAndOffsetRange) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(200);
  pool.parallelFor(50, 200, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < 200; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), i >= 50 ? 1 : 0) << i;
}

TEST(RuntimeParallelFor, ExceptionIsRethrownAndPoolStaysUsable) {
  ThreadPool pool(4);
  EXPECT_THROW(pool.parallelFor(0, 1000, 1,
                                [](int64_t b, int64_t e) {
                                  if (b <= 500 && 500 < e) throw std::runtime_error("chunk failed");
                                }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.parallelFor(0, 1000, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

TEST(RuntimeParallelFor, NestedCallsFromBodies) {
  ContextPtr ctx = makeContext(4);
  struct Outer {
    dscc_context* ctx;
    Coverage cov{8 * 1000};
    std::atomic<int> failures{0};
  } outer{ctx.get()};
  auto outerBody = [](void* closure, int64_t b, int64_t e) {
    auto& o = *static_cast<Outer*>(closure);
    for (int64_t row = b; row < e; ++row) {
      struct Inner {
        Coverage* cov;
        int64_t offset;
      } inner{&o.cov, row * 1000};
      auto innerBody = [](void* c, int64_t ib, int64_t ie) {
        auto& in = *static_cast<Inner*>(c);
        recordChunk(in.cov, in.offset + ib, in.offset + ie);
      };
      if (dscc_parallel_for(o.ctx, 1000, 16, innerBody, &inner) != DSCC_OK) o.failures.fetch_add(1);
    }
  };
  ASSERT_EQ(dscc_parallel_for(ctx.get(), 8, 1, outerBody, &outer), DSCC_OK);
  EXPECT_EQ(outer.failures.load(), 0);
  EXPECT_EQ(outer.cov.badRanges.load(), 0);
  for (size_t i = 0; i < outer.cov.hits.size(); ++i) ASSERT_EQ(outer.cov.hits[i].load(), 1) << i;
}

TEST(RuntimeParallelFor, ConcurrentCallersOnOneContext) {
  ContextPtr ctx = makeContext(4);
  constexpr int kCallers = 4;
  constexpr int64_t kSize = 100000;
  constexpr int kRounds = 50;
  struct Sum {
    const int64_t* data;
    std::atomic<int64_t> total{0};
  };
  auto body = [](void* closure, int64_t b, int64_t e) {
    auto& s = *static_cast<Sum*>(closure);
    int64_t local = 0;
    for (int64_t i = b; i < e; ++i) local += s.data[i];
    s.total.fetch_add(local);
  };
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      // Disjoint arrays with different contents, so a chunk run against the wrong call shows.
      std::vector<int64_t> data(kSize);
      for (int64_t i = 0; i < kSize; ++i) data[static_cast<size_t>(i)] = i * (t + 1);
      const int64_t expected = (t + 1) * (kSize - 1) * kSize / 2;
      for (int r = 0; r < kRounds; ++r) {
        Sum s{data.data()};
        if (dscc_parallel_for(ctx.get(), kSize, 1 + r * 97, body, &s) != DSCC_OK || s.total.load() != expected)
          wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(RuntimeParallelFor, RejectsBadArguments) {
  ContextPtr ctx = makeContext(2);
  EXPECT_EQ(dscc_parallel_for(nullptr, 10, 1, recordChunk, nullptr), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_parallel_for(ctx.get(), 10, 1, nullptr, nullptr), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_parallel_for(ctx.get(), -1, 1, recordChunk, nullptr), DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("n is -1"), std::string::npos);
}

TEST(RuntimeBlas, StridedBatchedMatchesNaiveLoop) {
  std::mt19937 rng(1234);
  ContextPtr ctx = makeContext(3);
  const int64_t sizes[] = {1, 7, 64, 129};
  int variant = 0;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : sizes)
        for (int trans = 0; trans < 4; ++trans)
          for (int64_t batch : {1, 3}) {
            const GemmLayout l = paddedLayout(M, N, K, trans & 1, trans & 2, batch);
            // Alternate beta == 0 (C not read) and an accumulating beta.
            const bool accumulate = (variant++ % 2) == 1;
            checkStridedGemm(ctx.get(), l, accumulate ? 1.5f : 1.0f, accumulate ? 0.5f : 0.0f, rng);
            if (HasFailure()) return;
          }
}

TEST(RuntimeBlas, ThreadCountsAndLargerSplits) {
  std::mt19937 rng(7);
  for (int threads : {1, 2, 5, 8}) {
    ContextPtr ctx = makeContext(threads);
    SCOPED_TRACE("threads=" + std::to_string(threads));
    checkStridedGemm(ctx.get(), paddedLayout(200, 130, 96, false, false, 1), 1.0f, 0.0f, rng);
    checkStridedGemm(ctx.get(), paddedLayout(33, 300, 80, true, false, 2), 1.0f, 0.25f, rng);
    checkStridedGemm(ctx.get(), paddedLayout(129, 129, 129, false, true, 9), 2.0f, 0.0f, rng);
  }
}

TEST(RuntimeBlas, SharedOperandAndInterleavedOutput) {
  // A weight shared by the batch (strideB = 0) and C laid out as [M, batch, N]
  // (ldc = batch * N, strideC = N): a matmul writing a transposed result with no copy.
  std::mt19937 rng(99);
  ContextPtr ctx = makeContext(4);
  GemmLayout l{70, 90, 60, false, true, 4, 60, 60, 4 * 90, 70 * 60, 0, 90};
  checkStridedGemm(ctx.get(), l, 1.0f, 0.0f, rng);
}

TEST(RuntimeBlas, EmptyAndZeroDepth) {
  ContextPtr ctx = makeContext(2);
  // K == 0: C = beta * C, and A and B may be null.
  std::vector<float> C = {1, 2, 3, 4, 5, 6};
  ASSERT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, 2, 3, 0, 1.0f, nullptr, 1, 0, nullptr, 3, 0, 2.0f,
                                       C.data(), 3, 6, 1),
            DSCC_OK)
      << dscc_status_message(ctx.get());
  EXPECT_EQ(C, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // M, N or batch == 0: nothing to do, even with null pointers.
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, 0, 3, 4, 1.0f, nullptr, 4, 0, nullptr, 3, 0, 0.0f,
                                       nullptr, 3, 0, 1),
            DSCC_OK);
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, 2, 3, 4, 1.0f, nullptr, 4, 0, nullptr, 3, 0, 0.0f,
                                       nullptr, 3, 0, 0),
            DSCC_OK);
}

TEST(RuntimeBlas, PointerArrayVariantMatchesStrided) {
  std::mt19937 rng(5);
  ContextPtr ctx = makeContext(3);
  const int64_t M = 65, N = 47, K = 33, batch = 3;
  // Three matrices in separate buffers, not one stride apart.
  std::vector<std::vector<float>> As, Bs, Cs;
  std::vector<float> Aflat, Bflat;
  for (int b = 0; b < batch; ++b) {
    As.push_back(randomPositive(K * M, rng));  // stored transposed: K x M
    Bs.push_back(randomPositive(K * N, rng));
    Cs.push_back(std::vector<float>(M * N, 0.0f));
    Aflat.insert(Aflat.end(), As.back().begin(), As.back().end());
    Bflat.insert(Bflat.end(), Bs.back().begin(), Bs.back().end());
  }
  const float* aPtrs[batch] = {As[0].data(), As[1].data(), As[2].data()};
  const float* bPtrs[batch] = {Bs[0].data(), Bs[1].data(), Bs[2].data()};
  float* cPtrs[batch] = {Cs[0].data(), Cs[1].data(), Cs[2].data()};
  ASSERT_EQ(dscc_sgemm_batched(ctx.get(), 1, 0, M, N, K, 1.0f, aPtrs, M, bPtrs, N, 0.0f, cPtrs, N, batch), DSCC_OK)
      << dscc_status_message(ctx.get());
  std::vector<float> Cflat(batch * M * N);
  ASSERT_EQ(dscc_sgemm_strided_batched(ctx.get(), 1, 0, M, N, K, 1.0f, Aflat.data(), M, K * M, Bflat.data(), N,
                                       K * N, 0.0f, Cflat.data(), N, M * N, batch),
            DSCC_OK);
  for (int b = 0; b < batch; ++b)
    for (int64_t i = 0; i < M * N; ++i) ASSERT_EQ(Cs[b][i], Cflat[b * M * N + i]) << "batch " << b << " " << i;
  aPtrs[1] = nullptr;
  EXPECT_EQ(dscc_sgemm_batched(ctx.get(), 1, 0, M, N, K, 1.0f, aPtrs, M, bPtrs, N, 0.0f, cPtrs, N, batch),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("batch entry 1"), std::string::npos);
}

TEST(RuntimeBlas, SameThreadCountGivesSameBits) {
  std::mt19937 rng(11);
  const int64_t M = 150, N = 140, K = 300;
  std::vector<float> A = randomPositive(M * K, rng), B = randomPositive(K * N, rng);
  auto run = [&](dscc_context* ctx) {
    std::vector<float> C(M * N);
    EXPECT_EQ(dscc_sgemm_strided_batched(ctx, 0, 0, M, N, K, 1.0f, A.data(), K, 0, B.data(), N, 0, 0.0f, C.data(),
                                         N, 0, 1),
              DSCC_OK);
    return C;
  };
  ContextPtr a = makeContext(4), b = makeContext(4);
  EXPECT_EQ(run(a.get()), run(b.get()));
  EXPECT_EQ(run(a.get()), run(a.get()));
}

TEST(RuntimeBlas, ConcurrentCallersOnOneContext) {
  ContextPtr ctx = makeContext(3);
  const int64_t M = 96, N = 80, K = 70, batch = 2;
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      const GemmLayout l = paddedLayout(M, N, K, t & 1, false, batch);
      std::vector<float> A = randomPositive(l.sizeA(), rng), B = randomPositive(l.sizeB(), rng);
      const std::vector<float> C0(l.sizeC(), 0.0f);
      const std::vector<double> ref = naiveGemm(l, 1.0f, A, B, 0.0f, C0);
      const std::vector<bool> inside = insideC(l, C0.size());
      for (int r = 0; r < 20; ++r) {
        std::vector<float> C = C0;
        if (dscc_sgemm_strided_batched(ctx.get(), l.transA, l.transB, M, N, K, 1.0f, A.data(), l.lda, l.strideA,
                                       B.data(), l.ldb, l.strideB, 0.0f, C.data(), l.ldc, l.strideC,
                                       batch) != DSCC_OK) {
          wrong.fetch_add(1);
          continue;
        }
        for (size_t i = 0; i < C.size(); ++i)
          if (inside[i] && !(std::abs(C[i] - ref[i]) <= kRelTol * std::abs(ref[i]))) {
            wrong.fetch_add(1);
            break;
          }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(RuntimeBlas, RejectsBadArguments) {
  ContextPtr ctx = makeContext(2);
  std::vector<float> buf(64, 1.0f);
  float* p = buf.data();
  auto messageHas = [&](const char* what) {
    return std::string(dscc_status_message(ctx.get())).find(what) != std::string::npos;
  };
  EXPECT_EQ(dscc_sgemm_strided_batched(nullptr, 0, 0, 2, 2, 2, 1, p, 2, 0, p, 2, 0, 0, p, 2, 4, 1),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, -1, 2, 2, 1, p, 2, 0, p, 2, 0, 0, p, 2, 4, 1),
            DSCC_INVALID_ARGUMENT);
  EXPECT_TRUE(messageHas("M=-1"));
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, 2, 2, 3, 1, p, 2, 0, p, 2, 0, 0, p, 2, 4, 1),
            DSCC_INVALID_ARGUMENT);
  EXPECT_TRUE(messageHas("lda=2"));
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 1, 2, 4, 3, 1, p, 3, 0, p, 2, 0, 0, p, 4, 8, 1),
            DSCC_INVALID_ARGUMENT);
  EXPECT_TRUE(messageHas("ldb=2"));
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, 2, 4, 3, 1, p, 3, 0, p, 4, 0, 0, p, 3, 8, 1),
            DSCC_INVALID_ARGUMENT);
  EXPECT_TRUE(messageHas("ldc=3"));
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, 2, 2, 2, 1, p, 2, 0, p, 2, 0, 0, nullptr, 2, 4, 1),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, 2, 2, 2, 1, p, 2, 4, p, 2, 4, 0, p, 2, 0, 2),
            DSCC_INVALID_ARGUMENT);
  EXPECT_TRUE(messageHas("strideC"));
  const int64_t huge = int64_t{1} << 31;
  EXPECT_EQ(dscc_sgemm_strided_batched(ctx.get(), 0, 0, huge, 2, 2, 1, p, 2, 0, p, 2, 0, 0, p, 2, 4, 1),
            DSCC_INVALID_ARGUMENT);
  EXPECT_TRUE(messageHas("32-bit"));
}

TEST(RuntimeBlas, SplitChoice) {
  using dscc::runtime::chooseGemmSplit;
  const GemmSplit serial = chooseGemmSplit(768, 768, 768, 1, 1);
  EXPECT_FALSE(serial.parallel);
  EXPECT_FALSE(chooseGemmSplit(8, 8, 8, 1, 16).parallel);  // too small to be worth waking threads
  const GemmSplit square = chooseGemmSplit(768, 768, 768, 1, 16);
  EXPECT_TRUE(square.parallel);
  EXPECT_EQ(square.tilesM, 4);
  EXPECT_EQ(square.tilesN, 4);
  // 128 rows x 3072 columns: columns strips, each re-packing only the small A.
  const GemmSplit wide = chooseGemmSplit(128, 3072, 768, 1, 16);
  EXPECT_EQ(wide.tilesM, 1);
  EXPECT_EQ(wide.tilesN, 16);
  const GemmSplit batched = chooseGemmSplit(64, 64, 64, 32, 8);
  EXPECT_TRUE(batched.parallel);
  EXPECT_EQ(batched.tilesM * batched.tilesN, 1);
  // Tiles never get below 16 rows or columns.
  const GemmSplit narrow = chooseGemmSplit(40, 20, 4096, 1, 8);
  EXPECT_EQ(narrow.tilesM, 2);
  EXPECT_EQ(narrow.tilesN, 1);
  EXPECT_NE(std::string(dscc::runtime::blasConfig()), "");
}

TEST(RuntimeMemory, AlignedAllocation) {
  ContextPtr ctx = makeContext(1);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{1} << 20}) {
    void* p = dscc_alloc(ctx.get(), bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, bytes);
    dscc_free(ctx.get(), p);
  }
  dscc_free(ctx.get(), nullptr);
  EXPECT_EQ(dscc_alloc(ctx.get(), std::numeric_limits<size_t>::max() - 8), nullptr);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("dscc_alloc"), std::string::npos);
  EXPECT_EQ(dscc_alloc(nullptr, size_t{1} << 62), nullptr);
}

TEST(RuntimeMemory, FreedBlocksAreReusedByTheirContext) {
  ContextPtr a = makeContext(1), b = makeContext(1);
  const size_t big = size_t{48} << 20;  // a model arena's size
  void* p = dscc_alloc(a.get(), big);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, big);
  dscc_free(a.get(), p);
  // The same size again, and a slightly smaller one: the cached block.
  void* q = dscc_alloc(a.get(), big);
  EXPECT_EQ(q, p);
  dscc_free(a.get(), q);
  void* r = dscc_alloc(a.get(), big - 4096);
  EXPECT_EQ(r, p);
  // A block far smaller is not served from the big one.
  void* small = dscc_alloc(a.get(), 1000);
  EXPECT_NE(small, p);
  dscc_free(b.get(), small);  // any context may free a block, as before
  dscc_free(a.get(), r);
  // Another context does not see a's cache; NULL frees for real.
  void* s = dscc_alloc(b.get(), big);
  EXPECT_NE(s, p);
  dscc_free(nullptr, s);
  // Many blocks: the cache stays bounded and every block stays usable.
  std::vector<void*> many;
  for (int i = 0; i < 40; ++i) many.push_back(dscc_alloc(a.get(), size_t(i + 1) << 16));
  for (void* m : many) {
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m) % 64, 0u);
    dscc_free(a.get(), m);
  }
}

TEST(RuntimeMemory, TensorAllocAndFree) {
  int64_t dims[] = {3, 5};
  dscc_tensor t{nullptr, dims, 2, DSCC_F64};
  EXPECT_EQ(dscc_tensor_numel(&t), 15);
  ASSERT_EQ(dscc_tensor_alloc(nullptr, &t), DSCC_OK);
  ASSERT_NE(t.data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 64, 0u);
  static_cast<double*>(t.data)[14] = 1.0;
  EXPECT_EQ(dscc_tensor_alloc(nullptr, &t), DSCC_INVALID_ARGUMENT);  // data already set
  dscc_tensor_free(&t);
  EXPECT_EQ(t.data, nullptr);
  dscc_tensor_free(&t);  // freeing a NULL data is a no-op

  int64_t empty[] = {0, 4};
  dscc_tensor e{nullptr, empty, 2, DSCC_I1};
  ASSERT_EQ(dscc_tensor_alloc(nullptr, &e), DSCC_OK);
  EXPECT_NE(e.data, nullptr);  // a zero-element tensor still gets distinct, non-null data
  dscc_tensor_free(&e);

  dscc_tensor scalar{nullptr, nullptr, 0, DSCC_I32};
  EXPECT_EQ(dscc_tensor_numel(&scalar), 1);
  ASSERT_EQ(dscc_tensor_alloc(nullptr, &scalar), DSCC_OK);
  dscc_tensor_free(&scalar);

  int64_t negative[] = {2, -1};
  dscc_tensor bad{nullptr, negative, 2, DSCC_F32};
  EXPECT_EQ(dscc_tensor_numel(&bad), -1);
  EXPECT_EQ(dscc_tensor_alloc(nullptr, &bad), DSCC_INVALID_ARGUMENT);
  int64_t overflow[] = {int64_t{1} << 40, int64_t{1} << 40};
  dscc_tensor big{nullptr, overflow, 2, DSCC_F32};
  EXPECT_EQ(dscc_tensor_numel(&big), -1);
}

TEST(RuntimeMemory, DTypes) {
  EXPECT_EQ(dscc_dtype_size(DSCC_F32), 4u);
  EXPECT_EQ(dscc_dtype_size(DSCC_F16), 2u);
  EXPECT_EQ(dscc_dtype_size(DSCC_BF16), 2u);
  EXPECT_EQ(dscc_dtype_size(DSCC_F64), 8u);
  EXPECT_EQ(dscc_dtype_size(DSCC_I64), 8u);
  EXPECT_EQ(dscc_dtype_size(DSCC_I32), 4u);
  EXPECT_EQ(dscc_dtype_size(DSCC_I8), 1u);
  EXPECT_EQ(dscc_dtype_size(DSCC_I1), 1u);
  EXPECT_EQ(dscc_dtype_size(static_cast<dscc_dtype>(42)), 0u);
  EXPECT_STREQ(dscc_dtype_name(DSCC_BF16), "bf16");
  EXPECT_STREQ(dscc_dtype_name(DSCC_I1), "i1");
  EXPECT_STREQ(dscc_dtype_name(static_cast<dscc_dtype>(-1)), "?");
}

TEST(RuntimeTensors, CheckInput) {
  ContextPtr ctx = makeContext(1);
  float data[6] = {};
  int64_t dims[] = {2, 3};
  dscc_tensor t{data, dims, 2, DSCC_F32};
  EXPECT_EQ(dscc_check_input(ctx.get(), &t, 0, DSCC_F32, 2), DSCC_OK);
  EXPECT_EQ(dscc_check_input(ctx.get(), &t, 1, DSCC_F16, 2), DSCC_SHAPE_MISMATCH);
  EXPECT_STREQ(dscc_status_message(ctx.get()), "input 1 has dtype f32; expected f16");
  EXPECT_EQ(dscc_check_input(ctx.get(), &t, 0, DSCC_F32, 3), DSCC_SHAPE_MISMATCH);
  EXPECT_EQ(dscc_check_input(ctx.get(), nullptr, 0, DSCC_F32, 2), DSCC_INVALID_ARGUMENT);
  t.data = nullptr;
  EXPECT_EQ(dscc_check_input(ctx.get(), &t, 2, DSCC_F32, 2), DSCC_INVALID_ARGUMENT);
  EXPECT_STREQ(dscc_status_message(ctx.get()), "input 2 f32[2, 3] has no data");
  dims[0] = 0;  // no elements: no data needed
  EXPECT_EQ(dscc_check_input(ctx.get(), &t, 2, DSCC_F32, 2), DSCC_OK);
  dims[1] = -4;
  EXPECT_EQ(dscc_check_input(ctx.get(), &t, 2, DSCC_F32, 2), DSCC_INVALID_ARGUMENT);
}

TEST(RuntimeTensors, PrepareOutput) {
  ContextPtr ctx = makeContext(1);
  const int64_t shape[] = {2, 4};
  // Runtime-allocated: dims and dtype are written, data allocated.
  int64_t dims[2] = {-1, -1};
  dscc_tensor out{nullptr, dims, 2, DSCC_I8};
  ASSERT_EQ(dscc_prepare_output(ctx.get(), &out, 0, DSCC_F32, 2, shape), DSCC_OK);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 4);
  EXPECT_EQ(out.dtype, DSCC_F32);
  ASSERT_NE(out.data, nullptr);
  dscc_tensor_free(&out);
  // Caller-allocated: the shape must match exactly.
  float buffer[8];
  int64_t callerDims[] = {2, 3};
  dscc_tensor mine{buffer, callerDims, 2, DSCC_F32};
  EXPECT_EQ(dscc_prepare_output(ctx.get(), &mine, 1, DSCC_F32, 2, shape), DSCC_SHAPE_MISMATCH);
  EXPECT_STREQ(dscc_status_message(ctx.get()), "output 1 is f32[2, 4]; the caller's buffer is f32[2, 3]");
  callerDims[1] = 4;
  EXPECT_EQ(dscc_prepare_output(ctx.get(), &mine, 1, DSCC_F32, 2, shape), DSCC_OK);
  EXPECT_EQ(mine.data, buffer);
  // The caller's rank must be the output's, so dims has room.
  dscc_tensor wrongRank{nullptr, dims, 1, DSCC_F32};
  EXPECT_EQ(dscc_prepare_output(ctx.get(), &wrongRank, 0, DSCC_F32, 2, shape), DSCC_SHAPE_MISMATCH);
  EXPECT_EQ(wrongRank.data, nullptr);
}

TEST(RuntimeStatus, NamesAndMessages) {
  EXPECT_STREQ(dscc_status_name(DSCC_OK), "OK");
  EXPECT_STREQ(dscc_status_name(DSCC_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_STREQ(dscc_status_name(DSCC_SHAPE_MISMATCH), "SHAPE_MISMATCH");
  EXPECT_STREQ(dscc_status_name(DSCC_FACT_VIOLATED), "FACT_VIOLATED");
  EXPECT_STREQ(dscc_status_name(DSCC_OUT_OF_MEMORY), "OUT_OF_MEMORY");
  EXPECT_STREQ(dscc_status_name(DSCC_INTERNAL), "INTERNAL");
  EXPECT_STREQ(dscc_status_name(static_cast<dscc_status>(99)), "UNKNOWN");
  EXPECT_EQ(dscc_abi_version(), DSCC_ABI_VERSION);

  ContextPtr a = makeContext(1), b = makeContext(1);
  EXPECT_EQ(dscc_set_error(a.get(), DSCC_FACT_VIOLATED, "S = %d breaks S %% 8 == 0", 37), DSCC_FACT_VIOLATED);
  EXPECT_STREQ(dscc_status_message(a.get()), "S = 37 breaks S % 8 == 0");
  EXPECT_STREQ(dscc_status_message(nullptr), "S = 37 breaks S % 8 == 0");
  EXPECT_STREQ(dscc_status_message(b.get()), "");  // that failure was on another context
  // Successful calls leave the message alone.
  EXPECT_EQ(dscc_parallel_for(a.get(), 0, 1, recordChunk, nullptr), DSCC_OK);
  EXPECT_STREQ(dscc_status_message(a.get()), "S = 37 breaks S % 8 == 0");
  // Messages are per thread: another thread calling on `a` has its own.
  std::string seenElsewhere = "unset";
  std::thread([&] { seenElsewhere = dscc_status_message(a.get()); }).join();
  EXPECT_EQ(seenElsewhere, "");
}

TEST(RuntimeStatus, ContextCreation) {
  EXPECT_EQ(dscc_context_create(-3), nullptr);
  EXPECT_NE(std::string(dscc_status_message(nullptr)).find("num_threads is -3"), std::string::npos);
  EXPECT_EQ(dscc_context_create(100000), nullptr);
  ContextPtr automatic = makeContext(0);
  EXPECT_GE(dscc_context_num_threads(automatic.get()), 1);
  EXPECT_EQ(dscc_context_num_threads(nullptr), 0);
  dscc_context_release(nullptr);
}
