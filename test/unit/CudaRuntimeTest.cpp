// Tests of the runtime's CUDA calls: statuses without a GPU, gemm plans on the CPU, and real device checks with one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ir/Tensor.h"
#include "runtime/CudaInternal.h"
#include "runtime/dscc_cuda.h"
#include "runtime/dscc_runtime.h"

namespace {

using dscc::floatToBF16;
using dscc::runtime::cuda::GemmBatch;
using dscc::runtime::cuda::GemmPlan;
using dscc::runtime::cuda::planGemmNd;

/// A context for one test, released at its end.
struct Ctx {
  dscc_context* ctx = dscc_context_create(2);
  ~Ctx() { dscc_context_release(ctx); }
};

// A trivial kernel, written by hand: data[i] += 1 for i < n.
constexpr const char* kAddOnePtx = R"(.version 7.0
.target sm_80
.address_size 64

.visible .entry add_one(
    .param .u64 p_data,
    .param .u32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [p_data];
    ld.param.u32 %r1, [p_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}
)";

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    if (!dscc_cuda_available()) GTEST_SKIP() << "no usable GPU: " << dscc_status_message(nullptr); \
  } while (0)

// ---------------------------------------------------------------------------
// Without a GPU (or always): statuses and messages, never a crash.

TEST(CudaRuntime, UnavailableWithoutGpu) {
  if (dscc_cuda_available()) GTEST_SKIP() << "a GPU is available; this test covers machines without one";
  EXPECT_STRNE(dscc_status_message(nullptr), "");
  Ctx c;
  const auto expectUnavailable = [&](dscc_status st, const char* fn) {
    EXPECT_EQ(st, DSCC_UNAVAILABLE) << fn;
    const std::string message = dscc_status_message(c.ctx);
    EXPECT_NE(message.find(fn), std::string::npos) << message;
  };
  char name[64] = "unchanged";
  expectUnavailable(dscc_cuda_device_name(c.ctx, name, sizeof name), "dscc_cuda_device_name");
  EXPECT_STREQ(name, "unchanged");
  dscc_cuda_module* m = reinterpret_cast<dscc_cuda_module*>(&name);
  expectUnavailable(dscc_cuda_module_get(c.ctx, kAddOnePtx, nullptr, &m), "dscc_cuda_module_get");
  EXPECT_EQ(m, nullptr);
  // Arguments that are fine: the missing GPU is what fails (the module is never looked at).
  dscc_cuda_module* bogus = reinterpret_cast<dscc_cuda_module*>(&name);
  expectUnavailable(dscc_cuda_launch(c.ctx, bogus, "add_one", 4, 128, 0, nullptr), "dscc_cuda_launch");
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{1} << 20}) {
    EXPECT_EQ(dscc_cuda_alloc(c.ctx, bytes), nullptr);
    EXPECT_NE(std::string(dscc_status_message(c.ctx)).find("dscc_cuda_alloc"), std::string::npos);
  }
  float host[4] = {1, 2, 3, 4};
  expectUnavailable(dscc_cuda_copy_to_device(c.ctx, host, host, sizeof host), "dscc_cuda_copy_to_device");
  expectUnavailable(dscc_cuda_copy_to_host(c.ctx, host, host, sizeof host), "dscc_cuda_copy_to_host");
  expectUnavailable(dscc_cuda_copy_device(c.ctx, host, host, sizeof host), "dscc_cuda_copy_device");
  expectUnavailable(dscc_cuda_memset_zero(c.ctx, host, sizeof host), "dscc_cuda_memset_zero");
  expectUnavailable(dscc_cuda_copy_to_host(c.ctx, nullptr, nullptr, 0), "dscc_cuda_copy_to_host");
  expectUnavailable(dscc_cuda_synchronize(c.ctx), "dscc_cuda_synchronize");
  EXPECT_EQ(host[3], 4.0f);
  expectUnavailable(dscc_cuda_sgemm_nd(c.ctx, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                       nullptr, 0),
                    "dscc_cuda_sgemm_nd");
  expectUnavailable(dscc_cuda_hgemm_nd(c.ctx, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                       nullptr, 0),
                    "dscc_cuda_hgemm_nd");
  expectUnavailable(dscc_cuda_bgemm_nd(c.ctx, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                       nullptr, 0),
                    "dscc_cuda_bgemm_nd");
  // A pointer this context never handed out is rejected, not freed.
  dscc_cuda_free(c.ctx, host);
  EXPECT_NE(std::string(dscc_status_message(c.ctx)).find("not a live block"), std::string::npos);
  dscc_cuda_free(c.ctx, nullptr);
  // The answer is cached and stays the same.
  EXPECT_EQ(dscc_cuda_available(), 0);
}

TEST(CudaRuntime, UnavailableFromManyThreads) {
  if (dscc_cuda_available()) GTEST_SKIP() << "a GPU is available; this test covers machines without one";
  Ctx c;
  std::vector<std::thread> threads;
  std::vector<int> unavailable(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        unavailable[t] += dscc_cuda_synchronize(c.ctx) == DSCC_UNAVAILABLE;
        unavailable[t] += dscc_cuda_alloc(c.ctx, 64) == nullptr;
      }
    });
  for (auto& t : threads) t.join();
  for (int n : unavailable) EXPECT_EQ(n, 200);
}

TEST(CudaRuntime, BadArgumentsAreInvalid) {
  Ctx c;
  float host[4] = {};
  const auto expectInvalid = [&](dscc_status st, const dscc_context* ctx, const char* what) {
    EXPECT_EQ(st, DSCC_INVALID_ARGUMENT) << what;
    EXPECT_STRNE(dscc_status_message(ctx), "") << what;
  };
  char name[16];
  expectInvalid(dscc_cuda_device_name(nullptr, name, sizeof name), nullptr, "device_name ctx");
  expectInvalid(dscc_cuda_device_name(c.ctx, nullptr, 16), c.ctx, "device_name buf");
  expectInvalid(dscc_cuda_device_name(c.ctx, name, 0), c.ctx, "device_name size");
  dscc_cuda_module* m = nullptr;
  expectInvalid(dscc_cuda_module_get(c.ctx, nullptr, nullptr, &m), c.ctx, "module_get image");
  expectInvalid(dscc_cuda_module_get(c.ctx, kAddOnePtx, nullptr, nullptr), c.ctx, "module_get out");
  expectInvalid(dscc_cuda_module_get(nullptr, kAddOnePtx, nullptr, &m), nullptr, "module_get ctx");
  dscc_cuda_module* bogus = reinterpret_cast<dscc_cuda_module*>(host);
  expectInvalid(dscc_cuda_launch(c.ctx, nullptr, "k", 1, 1, 0, nullptr), c.ctx, "launch module");
  expectInvalid(dscc_cuda_launch(c.ctx, bogus, nullptr, 1, 1, 0, nullptr), c.ctx, "launch name");
  expectInvalid(dscc_cuda_launch(c.ctx, bogus, "k", -1, 1, 0, nullptr), c.ctx, "launch grid -1");
  expectInvalid(dscc_cuda_launch(c.ctx, bogus, "k", int64_t{1} << 31, 1, 0, nullptr), c.ctx, "launch grid 2^31");
  expectInvalid(dscc_cuda_launch(c.ctx, bogus, "k", 1, 0, 0, nullptr), c.ctx, "launch block 0");
  expectInvalid(dscc_cuda_launch(c.ctx, bogus, "k", 1, 1025, 0, nullptr), c.ctx, "launch block 1025");
  expectInvalid(dscc_cuda_copy_to_device(c.ctx, nullptr, host, 4), c.ctx, "copy_to_device dst");
  expectInvalid(dscc_cuda_copy_to_host(c.ctx, host, nullptr, 4), c.ctx, "copy_to_host src");
  expectInvalid(dscc_cuda_copy_device(c.ctx, nullptr, nullptr, 1), c.ctx, "copy_device");
  expectInvalid(dscc_cuda_memset_zero(c.ctx, nullptr, 8), c.ctx, "memset");
  expectInvalid(dscc_cuda_copy_to_host(nullptr, host, host, 4), nullptr, "copy ctx");
  expectInvalid(dscc_cuda_synchronize(nullptr), nullptr, "synchronize ctx");
  EXPECT_EQ(dscc_cuda_alloc(nullptr, 16), nullptr);
  const int64_t dims[] = {2}, strides[] = {4}, zero[] = {0};
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, -1, 2, 2, host, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                c.ctx, "gemm M < 0");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, 2, 2, 3, host, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                c.ctx, "gemm lda < K");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 1, 2, 3, 2, host, 2, host, 1, host, 3, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                c.ctx, "gemm ldb < K (B transposed)");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, 2, 3, 2, host, 2, host, 3, host, 2, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                c.ctx, "gemm ldc < N");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, int64_t{1} << 31, 1, 1, host, 1, host, 1, host, 1, 0, nullptr,
                                   nullptr, nullptr, nullptr, 0),
                c.ctx, "gemm M >= 2^31");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, 1, dims, nullptr, strides,
                                   strides, 0),
                c.ctx, "gemm null stride array");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, 1, dims, strides, strides, zero,
                                   0),
                c.ctx, "gemm overlapping C");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, -1, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                c.ctx, "gemm n_batch < 0");
  expectInvalid(dscc_cuda_sgemm_nd(c.ctx, 0, 0, 2, 2, 2, nullptr, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                c.ctx, "gemm A NULL");
  expectInvalid(dscc_cuda_hgemm_nd(nullptr, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                nullptr, "hgemm ctx");
  expectInvalid(dscc_cuda_bgemm_nd(nullptr, 0, 0, 2, 2, 2, host, 2, host, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                nullptr, "bgemm ctx");
  expectInvalid(dscc_cuda_bgemm_nd(c.ctx, 0, 0, 2, 2, 2, host, 2, nullptr, 2, host, 2, 0, nullptr, nullptr, nullptr,
                                   nullptr, 0),
                c.ctx, "bgemm B NULL");
}

TEST(CudaRuntime, ReleaseAfterCudaCalls) {
  // Releasing contexts that made CUDA calls (or none) must neither crash nor leak state into new contexts.
  for (int i = 0; i < 4; ++i) {
    dscc_context* ctx = dscc_context_create(1);
    ASSERT_NE(ctx, nullptr);
    if (i % 2) dscc_cuda_synchronize(ctx);
    dscc_context_release(ctx);
  }
}

// ---------------------------------------------------------------------------
// Gemm plans, run on the CPU with cuBLAS's column-major semantics.

/// One n-d batched gemm problem with its buffers' sizes and strides.
struct GemmCase {
  int transA = 0, transB = 0;
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  std::vector<int64_t> dims, sa, sb, sc;
  size_t sizeA = 0, sizeB = 0, sizeC = 0;

  std::string describe() const {
    std::string s = "tA=" + std::to_string(transA) + " tB=" + std::to_string(transB) + " M=" + std::to_string(M) +
                    " N=" + std::to_string(N) + " K=" + std::to_string(K) + " lda=" + std::to_string(lda) +
                    " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) + " batch=[";
    for (size_t k = 0; k < dims.size(); ++k)
      s += (k ? "," : "") + std::to_string(dims[k]) + ":" + std::to_string(sa[k]) + "/" + std::to_string(sb[k]) +
           "/" + std::to_string(sc[k]);
    return s + "]";
  }
};

/// Layouts of the batch: dense, A broadcast over dim 0, B broadcast over the last dim, C permuted.
enum class Layout { Dense, BroadcastA0, BroadcastBLast, PermutedC };

GemmCase makeCase(int transA, int transB, int64_t M, int64_t N, int64_t K, int64_t pad, std::vector<int64_t> dims,
                  Layout layout) {
  GemmCase g;
  g.transA = transA;
  g.transB = transB;
  g.M = M;
  g.N = N;
  g.K = K;
  g.lda = (transA ? M : K) + pad;
  g.ldb = (transB ? K : N) + pad;
  g.ldc = N + pad;
  const int64_t matA = (transA ? K : M) * g.lda, matB = (transB ? N : K) * g.ldb, matC = M * g.ldc;
  g.dims = dims;
  const size_t n = dims.size();
  g.sa.assign(n, 0);
  g.sb.assign(n, 0);
  g.sc.assign(n, 0);
  int64_t ea = std::max<int64_t>(matA, 1), eb = std::max<int64_t>(matB, 1), ec = std::max<int64_t>(matC, 1);
  for (size_t k = n; k-- > 0;) {
    g.sa[k] = (layout == Layout::BroadcastA0 && k == 0) ? 0 : ea;
    if (g.sa[k]) ea *= dims[k];
    g.sb[k] = (layout == Layout::BroadcastBLast && k == n - 1) ? 0 : eb;
    if (g.sb[k]) eb *= dims[k];
    g.sc[k] = ec;
    ec *= dims[k];
  }
  if (layout == Layout::PermutedC && n >= 2) {
    // C's batch dims stored in the opposite order: dim 0 innermost.
    int64_t e = std::max<int64_t>(matC, 1);
    for (size_t k = 0; k < n; ++k) {
      g.sc[k] = e;
      e *= dims[k];
    }
  }
  g.sizeA = static_cast<size_t>(ea);
  g.sizeB = static_cast<size_t>(eb);
  g.sizeC = static_cast<size_t>(ec);
  return g;
}

/// Random values of either sign, bounded away from zero.
std::vector<float> randomData(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(n);
  for (float& x : v) x = sign(rng) ? mag(rng) : -mag(rng);
  return v;
}

/// The row-major reference, in double, with the sum of |products| per element
/// for the tolerance; elements outside every C matrix stay NaN in `ref`.
void reference(const GemmCase& g, const std::vector<float>& A, const std::vector<float>& B, std::vector<double>& ref,
               std::vector<double>& scale) {
  ref.assign(g.sizeC, std::numeric_limits<double>::quiet_NaN());
  scale.assign(g.sizeC, 0.0);
  int64_t total = 1;
  for (int64_t d : g.dims) total *= d;
  for (int64_t b = 0; b < total; ++b) {
    int64_t oa = 0, ob = 0, oc = 0, rest = b;
    for (size_t k = g.dims.size(); k-- > 0;) {
      const int64_t i = rest % g.dims[k];
      rest /= g.dims[k];
      oa += i * g.sa[k];
      ob += i * g.sb[k];
      oc += i * g.sc[k];
    }
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t n = 0; n < g.N; ++n) {
        double sum = 0, abs = 0;
        for (int64_t k = 0; k < g.K; ++k) {
          const double a = A[oa + (g.transA ? k * g.lda + m : m * g.lda + k)];
          const double bv = B[ob + (g.transB ? n * g.ldb + k : k * g.ldb + n)];
          sum += a * bv;
          abs += std::fabs(a * bv);
        }
        ref[oc + m * g.ldc + n] = sum;
        scale[oc + m * g.ldc + n] = abs;
      }
  }
}

/// Runs a plan as cuBLAS would: column-major, first operand (B) times second (A).
void runPlanOnCpu(const GemmPlan& p, const float* A, const float* B, float* C) {
  for (const GemmBatch& g : p.batches)
    for (int64_t b = 0; b < g.count; ++b) {
      const float* X = B + g.offFirst + b * g.strideFirst;
      const float* Y = A + g.offSecond + b * g.strideSecond;
      float* Z = C + g.offC + b * g.strideC;
      for (int64_t j = 0; j < p.n; ++j)
        for (int64_t i = 0; i < p.m; ++i) {
          float sum = 0;
          for (int64_t l = 0; l < p.k; ++l) {
            const float x = p.transFirst ? X[l + i * p.ldFirst] : X[i + l * p.ldFirst];
            const float y = p.transSecond ? Y[j + l * p.ldSecond] : Y[l + j * p.ldSecond];
            sum += x * y;
          }
          Z[i + j * p.ldc] = sum;
        }
    }
}

/// Checks computed C against the reference: within `rel` of the sum of
/// |products| (plus 1e-6) inside the matrices, and untouched (NaN) outside.
void expectMatches(const GemmCase& g, const std::vector<float>& C, const std::vector<double>& ref,
                   const std::vector<double>& scale, double rel) {
  int bad = 0;
  for (size_t i = 0; i < g.sizeC && bad < 5; ++i) {
    if (std::isnan(ref[i])) {
      if (!std::isnan(C[i])) {
        ADD_FAILURE() << g.describe() << ": element " << i << " outside every C matrix was written: " << C[i];
        ++bad;
      }
      continue;
    }
    if (!(std::fabs(C[i] - ref[i]) <= rel * scale[i] + 1e-6)) {
      ADD_FAILURE() << g.describe() << ": C[" << i << "] = " << C[i] << ", expected " << ref[i];
      ++bad;
    }
  }
}

/// Sizes and layouts: 0, 1, odd sizes, SIMD-ish boundaries, transposes, padding and n-d batches.
std::vector<GemmCase> gemmCases() {
  std::vector<GemmCase> cases;
  const std::vector<std::vector<int64_t>> batches = {{}, {1}, {3}, {0, 2}, {2, 3}, {2, 1, 3}, {3, 2, 2}};
  const std::vector<int64_t> sizes = {0, 1, 2, 7, 16, 33};
  int which = 0;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{17}}) {
        // Every size meets every transpose, layout and batch over the whole sweep, without the full product.
        const int transA = which & 1, transB = (which >> 1) & 1;
        const auto& dims = batches[static_cast<size_t>(which) % batches.size()];
        const Layout layout = static_cast<Layout>(which / 3 % 4);
        cases.push_back(makeCase(transA, transB, M, N, K, which % 5 == 0 ? 3 : 0, dims, layout));
        ++which;
      }
  return cases;
}

TEST(CudaRuntimeGemmPlan, MatchesRowMajorReference) {
  Ctx c;
  std::mt19937 rng(1234);
  for (const GemmCase& g : gemmCases()) {
    const std::vector<float> A = randomData(g.sizeA, rng), B = randomData(g.sizeB, rng);
    std::vector<float> C(g.sizeC, std::numeric_limits<float>::quiet_NaN());
    std::vector<double> ref, scale;
    reference(g, A, B, ref, scale);
    GemmPlan plan;
    ASSERT_EQ(planGemmNd(c.ctx, "test", g.transA, g.transB, g.M, g.N, g.K, A.data(), g.lda, B.data(), g.ldb,
                         C.data(), g.ldc, static_cast<int32_t>(g.dims.size()), g.dims.data(), g.sa.data(),
                         g.sb.data(), g.sc.data(), &plan),
              DSCC_OK)
        << g.describe() << ": " << dscc_status_message(c.ctx);
    for (const GemmBatch& b : plan.batches) EXPECT_GE(b.count, 1) << g.describe();
    runPlanOnCpu(plan, A.data(), B.data(), C.data());
    expectMatches(g, C, ref, scale, 1e-5);
  }
}

TEST(CudaRuntimeGemmPlan, MergesBatchDimsIntoFewCalls) {
  Ctx c;
  float x = 0;
  GemmPlan plan;
  // Dense [2, 3, 4] batch: one strided call of 24.
  GemmCase g = makeCase(0, 0, 5, 6, 7, 0, {2, 3, 4}, Layout::Dense);
  ASSERT_EQ(planGemmNd(c.ctx, "t", 0, 0, g.M, g.N, g.K, &x, g.lda, &x, g.ldb, &x, g.ldc, 3, g.dims.data(),
                       g.sa.data(), g.sb.data(), g.sc.data(), &plan),
            DSCC_OK);
  ASSERT_EQ(plan.batches.size(), 1u);
  EXPECT_EQ(plan.batches[0].count, 24);
  EXPECT_EQ(plan.batches[0].strideC, 30);
  EXPECT_EQ(plan.m, 6);  // cuBLAS's m is N: the operands are swapped
  EXPECT_EQ(plan.n, 5);
  // A broadcast over the outer dim: one call per outer index.
  g = makeCase(0, 0, 5, 6, 7, 0, {2, 3}, Layout::BroadcastA0);
  ASSERT_EQ(planGemmNd(c.ctx, "t", 0, 0, g.M, g.N, g.K, &x, g.lda, &x, g.ldb, &x, g.ldc, 2, g.dims.data(),
                       g.sa.data(), g.sb.data(), g.sc.data(), &plan),
            DSCC_OK);
  ASSERT_EQ(plan.batches.size(), 2u);
  EXPECT_EQ(plan.batches[1].offSecond, plan.batches[0].offSecond);  // A is shared
  EXPECT_EQ(plan.batches[1].offC, 3 * 30);
  // Dims of 0 or an empty matrix: nothing to do.
  const int64_t zero[] = {0};
  ASSERT_EQ(planGemmNd(c.ctx, "t", 0, 0, 5, 6, 7, nullptr, 7, nullptr, 6, nullptr, 6, 1, zero, zero, zero, zero, &plan),
            DSCC_OK);
  EXPECT_TRUE(plan.batches.empty());
  ASSERT_EQ(planGemmNd(c.ctx, "t", 0, 0, 0, 6, 7, nullptr, 7, nullptr, 6, nullptr, 6, 0, nullptr, nullptr, nullptr,
                       nullptr, &plan),
            DSCC_OK);
  EXPECT_TRUE(plan.batches.empty());
  // K == 0 still writes C (zeros), and A and B may be NULL.
  ASSERT_EQ(planGemmNd(c.ctx, "t", 0, 0, 2, 2, 0, nullptr, 0, nullptr, 2, &x, 2, 0, nullptr, nullptr, nullptr,
                       nullptr, &plan),
            DSCC_OK);
  EXPECT_EQ(plan.batches.size(), 1u);
}

// ---------------------------------------------------------------------------
// With a GPU: the real thing. Skipped (with the reason) without one.

TEST(CudaRuntimeGpu, DeviceName) {
  SKIP_WITHOUT_GPU();
  Ctx c;
  char name[128] = {};
  ASSERT_EQ(dscc_cuda_device_name(c.ctx, name, sizeof name), DSCC_OK) << dscc_status_message(c.ctx);
  EXPECT_NE(std::string(name).find("(sm_"), std::string::npos) << name;
  char tiny[4];
  ASSERT_EQ(dscc_cuda_device_name(c.ctx, tiny, sizeof tiny), DSCC_OK);
  EXPECT_EQ(std::strlen(tiny), 3u);
}

TEST(CudaRuntimeGpu, AllocCopyRoundTrip) {
  SKIP_WITHOUT_GPU();
  Ctx c;
  std::mt19937 rng(7);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{4096 + 3},
                       (size_t{1} << 20) + 5}) {
    std::vector<unsigned char> in(bytes), out(bytes, 0), zeros(bytes, 0xff);
    for (auto& b : in) b = static_cast<unsigned char>(rng() % 255 + 1);
    void* d1 = dscc_cuda_alloc(c.ctx, bytes);
    void* d2 = dscc_cuda_alloc(c.ctx, bytes);
    ASSERT_NE(d1, nullptr) << dscc_status_message(c.ctx);
    ASSERT_NE(d2, nullptr) << dscc_status_message(c.ctx);
    EXPECT_NE(d1, d2);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d1) % 256, 0u);
    ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, d1, in.data(), bytes), DSCC_OK) << dscc_status_message(c.ctx);
    ASSERT_EQ(dscc_cuda_copy_device(c.ctx, d2, d1, bytes), DSCC_OK) << dscc_status_message(c.ctx);
    ASSERT_EQ(dscc_cuda_copy_to_host(c.ctx, out.data(), d2, bytes), DSCC_OK) << dscc_status_message(c.ctx);
    EXPECT_EQ(in, out) << bytes << " bytes";
    ASSERT_EQ(dscc_cuda_memset_zero(c.ctx, d2, bytes), DSCC_OK);
    ASSERT_EQ(dscc_cuda_copy_to_host(c.ctx, zeros.data(), d2, bytes), DSCC_OK);
    EXPECT_EQ(zeros, std::vector<unsigned char>(bytes, 0)) << bytes << " bytes";
    dscc_cuda_free(c.ctx, d1);
    dscc_cuda_free(c.ctx, d2);
  }
  EXPECT_EQ(dscc_cuda_synchronize(c.ctx), DSCC_OK);
}

TEST(CudaRuntimeGpu, CachingAllocatorReusesFreedBlocks) {
  SKIP_WITHOUT_GPU();
  Ctx c;
  void* a = dscc_cuda_alloc(c.ctx, 1000);
  ASSERT_NE(a, nullptr);
  dscc_cuda_free(c.ctx, a);
  void* b = dscc_cuda_alloc(c.ctx, 1000);
  EXPECT_EQ(a, b);  // same size class, taken from the cache
  void* z1 = dscc_cuda_alloc(c.ctx, 0);
  void* z2 = dscc_cuda_alloc(c.ctx, 0);
  EXPECT_NE(z1, nullptr);
  EXPECT_NE(z1, z2);
  dscc_cuda_free(c.ctx, b);
  dscc_cuda_free(c.ctx, z1);
  dscc_cuda_free(c.ctx, z2);
  // A double free is reported, not accepted.
  dscc_cuda_free(c.ctx, b);
  EXPECT_NE(std::string(dscc_status_message(c.ctx)).find("not a live block"), std::string::npos);
}

TEST(CudaRuntimeGpu, LaunchAddOneKernel) {
  SKIP_WITHOUT_GPU();
  Ctx c;
  dscc_cuda_module* m = nullptr;
  ASSERT_EQ(dscc_cuda_module_get(c.ctx, kAddOnePtx, nullptr, &m), DSCC_OK) << dscc_status_message(c.ctx);
  dscc_cuda_module* again = nullptr;
  ASSERT_EQ(dscc_cuda_module_get(c.ctx, kAddOnePtx, nullptr, &again), DSCC_OK);
  EXPECT_EQ(m, again);
  for (uint32_t n : {1u, 127u, 128u, 129u, 10000u}) {
    std::vector<float> host(n);
    for (uint32_t i = 0; i < n; ++i) host[i] = 0.5f * static_cast<float>(i) - 3.0f;
    void* d = dscc_cuda_alloc(c.ctx, n * sizeof(float));
    ASSERT_NE(d, nullptr);
    ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, d, host.data(), n * sizeof(float)), DSCC_OK);
    void* params[] = {&d, &n};
    ASSERT_EQ(dscc_cuda_launch(c.ctx, m, "add_one", (n + 127) / 128, 128, 0, params), DSCC_OK)
        << dscc_status_message(c.ctx);
    ASSERT_EQ(dscc_cuda_launch(c.ctx, m, "add_one", 0, 128, 0, params), DSCC_OK);  // launches nothing
    std::vector<float> out(n);
    ASSERT_EQ(dscc_cuda_copy_to_host(c.ctx, out.data(), d, n * sizeof(float)), DSCC_OK);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], host[i] + 1.0f) << i;
    dscc_cuda_free(c.ctx, d);
  }
  EXPECT_EQ(dscc_cuda_launch(c.ctx, m, "no_such_kernel", 1, 1, 0, nullptr), DSCC_INVALID_ARGUMENT);
  // Broken PTX is rejected with the JIT's message; a good fallback rescues it.
  static const char kBroken[] = ".version 7.0\n.target sm_80\nthis is not ptx\n";
  dscc_cuda_module* broken = nullptr;
  EXPECT_EQ(dscc_cuda_module_get(c.ctx, kBroken, nullptr, &broken), DSCC_INVALID_ARGUMENT);
  EXPECT_STRNE(dscc_status_message(c.ctx), "");
  ASSERT_EQ(dscc_cuda_module_get(c.ctx, kBroken, kAddOnePtx, &broken), DSCC_OK) << dscc_status_message(c.ctx);
  EXPECT_NE(broken, nullptr);
  // Modules belong to their context.
  Ctx other;
  EXPECT_EQ(dscc_cuda_launch(other.ctx, m, "add_one", 1, 1, 0, nullptr), DSCC_INVALID_ARGUMENT);
}

/// Runs every plan case through dscc_cuda_sgemm_nd and compares with the reference.
void runGpuGemms(bool tensorOp, double rel) {
  Ctx c;
  std::mt19937 rng(99);
  for (const GemmCase& g : gemmCases()) {
    const std::vector<float> A = randomData(g.sizeA, rng), B = randomData(g.sizeB, rng);
    std::vector<float> C(g.sizeC, std::numeric_limits<float>::quiet_NaN());
    std::vector<double> ref, scale;
    reference(g, A, B, ref, scale);
    void* dA = dscc_cuda_alloc(c.ctx, A.size() * 4);
    void* dB = dscc_cuda_alloc(c.ctx, B.size() * 4);
    void* dC = dscc_cuda_alloc(c.ctx, C.size() * 4);
    ASSERT_TRUE(dA && dB && dC) << dscc_status_message(c.ctx);
    ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, dA, A.data(), A.size() * 4), DSCC_OK);
    ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, dB, B.data(), B.size() * 4), DSCC_OK);
    ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, dC, C.data(), C.size() * 4), DSCC_OK);
    ASSERT_EQ(dscc_cuda_sgemm_nd(c.ctx, g.transA, g.transB, g.M, g.N, g.K, static_cast<float*>(dA), g.lda,
                                 static_cast<float*>(dB), g.ldb, static_cast<float*>(dC), g.ldc,
                                 static_cast<int32_t>(g.dims.size()), g.dims.data(), g.sa.data(), g.sb.data(),
                                 g.sc.data(), tensorOp ? 1 : 0),
              DSCC_OK)
        << g.describe() << ": " << dscc_status_message(c.ctx);
    ASSERT_EQ(dscc_cuda_copy_to_host(c.ctx, C.data(), dC, C.size() * 4), DSCC_OK) << dscc_status_message(c.ctx);
    expectMatches(g, C, ref, scale, rel);
    dscc_cuda_free(c.ctx, dA);
    dscc_cuda_free(c.ctx, dB);
    dscc_cuda_free(c.ctx, dC);
  }
}

TEST(CudaRuntimeGpu, SgemmNdExactFp32) {
  SKIP_WITHOUT_GPU();
  runGpuGemms(false, 1e-4);
}

TEST(CudaRuntimeGpu, SgemmNdTensorOps) {
  SKIP_WITHOUT_GPU();
  runGpuGemms(true, 1e-2);
}

TEST(CudaRuntimeGpu, HgemmNd) {
  SKIP_WITHOUT_GPU();
  Ctx c;
  std::mt19937 rng(5);
  // Values exact in f16, so only the f16 rounding of the result matters.
  for (int64_t M : {1, 7, 64}) {
    const int64_t N = 33, K = 20, batch = 3;
    std::vector<_Float16> A(static_cast<size_t>(batch * M * K)), B(static_cast<size_t>(batch * K * N));
    std::vector<float> Af(A.size()), Bf(B.size());
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<_Float16>(Af[i] = static_cast<float>(rng() % 9) - 4.0f);
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<_Float16>(Bf[i] = static_cast<float>(rng() % 9) - 4.0f);
    std::vector<_Float16> C(static_cast<size_t>(batch * M * N));
    void* dA = dscc_cuda_alloc(c.ctx, A.size() * 2);
    void* dB = dscc_cuda_alloc(c.ctx, B.size() * 2);
    void* dC = dscc_cuda_alloc(c.ctx, C.size() * 2);
    ASSERT_TRUE(dA && dB && dC);
    ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, dA, A.data(), A.size() * 2), DSCC_OK);
    ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, dB, B.data(), B.size() * 2), DSCC_OK);
    const int64_t dims[] = {batch}, sa[] = {M * K}, sb[] = {K * N}, sc[] = {M * N};
    ASSERT_EQ(dscc_cuda_hgemm_nd(c.ctx, 0, 0, M, N, K, dA, K, dB, N, dC, N, 1, dims, sa, sb, sc, 0), DSCC_OK)
        << dscc_status_message(c.ctx);
    ASSERT_EQ(dscc_cuda_copy_to_host(c.ctx, C.data(), dC, C.size() * 2), DSCC_OK);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double sum = 0;
          for (int64_t k = 0; k < K; ++k) sum += Af[b * M * K + m * K + k] * Bf[b * K * N + k * N + n];
          // Sums of at most 20 * 16 are integers exact in f16.
          ASSERT_EQ(static_cast<float>(C[b * M * N + m * N + n]), sum) << b << "," << m << "," << n;
        }
    dscc_cuda_free(c.ctx, dA);
    dscc_cuda_free(c.ctx, dB);
    dscc_cuda_free(c.ctx, dC);
  }
}

TEST(CudaRuntimeGpu, BgemmNd) {
  SKIP_WITHOUT_GPU();
  Ctx c;
  std::mt19937 rng(6);
  const int64_t M = 9, N = 33, K = 20, batch = 2;
  // Small integers are exact in bf16; the result is the bf16 rounding of the exact sum.
  std::vector<uint16_t> A(static_cast<size_t>(batch * M * K)), B(static_cast<size_t>(batch * K * N));
  std::vector<float> Af(A.size()), Bf(B.size());
  for (size_t i = 0; i < A.size(); ++i) A[i] = floatToBF16(Af[i] = static_cast<float>(rng() % 9) - 4.0f);
  for (size_t i = 0; i < B.size(); ++i) B[i] = floatToBF16(Bf[i] = static_cast<float>(rng() % 9) - 4.0f);
  std::vector<uint16_t> C(static_cast<size_t>(batch * M * N));
  void* dA = dscc_cuda_alloc(c.ctx, A.size() * 2);
  void* dB = dscc_cuda_alloc(c.ctx, B.size() * 2);
  void* dC = dscc_cuda_alloc(c.ctx, C.size() * 2);
  ASSERT_TRUE(dA && dB && dC);
  ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, dA, A.data(), A.size() * 2), DSCC_OK);
  ASSERT_EQ(dscc_cuda_copy_to_device(c.ctx, dB, B.data(), B.size() * 2), DSCC_OK);
  const int64_t dims[] = {batch}, sa[] = {M * K}, sb[] = {K * N}, sc[] = {M * N};
  ASSERT_EQ(dscc_cuda_bgemm_nd(c.ctx, 0, 0, M, N, K, dA, K, dB, N, dC, N, 1, dims, sa, sb, sc, 0), DSCC_OK)
      << dscc_status_message(c.ctx);
  ASSERT_EQ(dscc_cuda_copy_to_host(c.ctx, C.data(), dC, C.size() * 2), DSCC_OK);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double sum = 0;
        for (int64_t k = 0; k < K; ++k) sum += Af[b * M * K + m * K + k] * Bf[b * K * N + k * N + n];
        ASSERT_EQ(C[b * M * N + m * N + n], floatToBF16(static_cast<float>(sum))) << b << "," << m << "," << n;
      }
  dscc_cuda_free(c.ctx, dA);
  dscc_cuda_free(c.ctx, dB);
  dscc_cuda_free(c.ctx, dC);
}

TEST(CudaRuntimeGpu, ConcurrentCallsOnOneContext) {
  SKIP_WITHOUT_GPU();
  Ctx c;
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const size_t n = static_cast<size_t>(1 + (t * 50 + i) % 700);
        std::vector<float> in(n, static_cast<float>(t * 1000 + i)), out(n, 0);
        void* d = dscc_cuda_alloc(c.ctx, n * 4);
        if (!d) continue;
        if (dscc_cuda_copy_to_device(c.ctx, d, in.data(), n * 4) == DSCC_OK &&
            dscc_cuda_copy_to_host(c.ctx, out.data(), d, n * 4) == DSCC_OK && in == out)
          ++ok[t];
        dscc_cuda_free(c.ctx, d);
      }
    });
  for (auto& t : threads) t.join();
  for (int n : ok) EXPECT_EQ(n, 50);
}

}  // namespace
