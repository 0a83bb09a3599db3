// The runtime's profiling (dscc_context_set_profiling, dscc_profile_*): off by default, records launches and library calls with their info, sizes and times, from several threads.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/dscc_generated.h"

namespace {

struct ContextDeleter {
  void operator()(dscc_context* ctx) const { dscc_context_release(ctx); }
};
using ContextPtr = std::unique_ptr<dscc_context, ContextDeleter>;

void addOne(void** inputs, void** outputs, const int64_t* sizes, int64_t begin, int64_t end) {
  float* y = static_cast<float*>(outputs[0]);
  for (int64_t i = begin; i < end; ++i) y[i] += 1.0f;
}

const char* kNames[] = {"N", "S"};
const dscc_kernel_info kInfo = {"m.k0.y", "loop", "v8.i32", "m.k0.y.v8.i32", 2, kNames, "4*N + 8*S"};

TEST(RuntimeProfile, OffByDefaultAndRecordsNothing) {
  ContextPtr ctx(dscc_context_create(2));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(dscc_context_profiling(ctx.get()), 0);
  std::vector<float> y(100, 0.0f);
  void* outs[] = {y.data()};
  int64_t sizes[] = {100, 3};
  EXPECT_EQ(dscc_launch_kernel_info(ctx.get(), addOne, nullptr, outs, sizes, 100, 10, &kInfo), DSCC_OK);
  EXPECT_EQ(dscc_profile_count(ctx.get()), 0);
  EXPECT_EQ(y[99], 1.0f);
}

TEST(RuntimeProfile, RecordsKernelLaunchesWithTheirInfo) {
  ContextPtr ctx(dscc_context_create(2));
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(dscc_context_set_profiling(ctx.get(), 1), DSCC_OK);
  EXPECT_EQ(dscc_context_profiling(ctx.get()), 1);
  std::vector<float> y(100, 0.0f);
  void* outs[] = {y.data()};
  int64_t sizes[] = {100, 3};
  ASSERT_EQ(dscc_launch_kernel_info(ctx.get(), addOne, nullptr, outs, sizes, 100, 10, &kInfo), DSCC_OK);
  // The entry point of older models has no info: not recorded. A NULL info is, nameless.
  ASSERT_EQ(dscc_launch_kernel(ctx.get(), addOne, nullptr, outs, sizes, 100, 10), DSCC_OK);
  ASSERT_EQ(dscc_launch_kernel_info(ctx.get(), addOne, nullptr, outs, sizes, 100, 10, nullptr), DSCC_OK);
  ASSERT_EQ(dscc_profile_count(ctx.get()), 2);
  dscc_profile_record r;
  ASSERT_EQ(dscc_profile_get(ctx.get(), 0, &r), DSCC_OK);
  EXPECT_STREQ(r.name, "m.k0.y");
  EXPECT_STREQ(r.kind, "loop");
  EXPECT_STREQ(r.version, "v8.i32");
  EXPECT_STREQ(r.function, "m.k0.y.v8.i32");
  EXPECT_EQ(r.call, DSCC_PROFILE_KERNEL);
  ASSERT_EQ(r.n_sizes, 2);
  EXPECT_STREQ(r.size_names[1], "S");
  EXPECT_EQ(r.sizes[0], 100);
  EXPECT_EQ(r.sizes[1], 3);
  EXPECT_STREQ(r.bytes_expr, "4*N + 8*S");
  EXPECT_EQ(r.units, 100);
  EXPECT_GE(r.end_ns, r.start_ns);
  EXPECT_GE(r.thread, 1u);
  ASSERT_EQ(dscc_profile_get(ctx.get(), 1, &r), DSCC_OK);
  EXPECT_STREQ(r.name, "?");
  EXPECT_EQ(r.n_sizes, 0);
  // Off again: nothing more is recorded, and what was stays.
  ASSERT_EQ(dscc_context_set_profiling(ctx.get(), 0), DSCC_OK);
  ASSERT_EQ(dscc_launch_kernel_info(ctx.get(), addOne, nullptr, outs, sizes, 100, 10, &kInfo), DSCC_OK);
  EXPECT_EQ(dscc_profile_count(ctx.get()), 2);
  dscc_profile_clear(ctx.get());
  EXPECT_EQ(dscc_profile_count(ctx.get()), 0);
  EXPECT_EQ(y[0], 4.0f);
}

TEST(RuntimeProfile, RecordsGemmAndCopyWithFlops) {
  ContextPtr ctx(dscc_context_create(1));
  ASSERT_NE(ctx, nullptr);
  dscc_context_set_profiling(ctx.get(), 1);
  std::vector<float> a(2 * 3, 1.0f), b(3 * 4, 2.0f), c(2 * 4, 0.0f);
  const dscc_kernel_info gemm = {"m.k1.c", "library", "sgemm", "m.k1.c.sgemm", 0, nullptr, ""};
  ASSERT_EQ(dscc_sgemm_nd_info(ctx.get(), 0, 0, 2, 4, 3, a.data(), 3, b.data(), 4, c.data(), 4, 0, nullptr, nullptr,
                               nullptr, nullptr, &gemm),
            DSCC_OK);
  EXPECT_EQ(c[7], 6.0f);
  int64_t dims[] = {3, 2};
  int64_t strides[] = {1, 3};
  std::vector<float> dst(6);
  ASSERT_EQ(dscc_copy_strided_info(ctx.get(), dst.data(), a.data(), sizeof(float), 2, dims, strides, &gemm), DSCC_OK);
  ASSERT_EQ(dscc_profile_count(ctx.get()), 2);
  dscc_profile_record r;
  ASSERT_EQ(dscc_profile_get(ctx.get(), 0, &r), DSCC_OK);
  EXPECT_EQ(r.call, DSCC_PROFILE_GEMM);
  EXPECT_STREQ(r.version, "sgemm");
  ASSERT_EQ(r.n_sizes, 4);
  EXPECT_STREQ(r.size_names[0], "M");
  EXPECT_EQ(r.sizes[0], 2);
  EXPECT_EQ(r.sizes[1], 4);
  EXPECT_EQ(r.sizes[2], 3);
  EXPECT_EQ(r.sizes[3], 1);
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * 2 * 4 * 3);
  EXPECT_DOUBLE_EQ(r.bytes, 4.0 * (2 * 3 + 3 * 4 + 2 * 4));
  ASSERT_EQ(dscc_profile_get(ctx.get(), 1, &r), DSCC_OK);
  EXPECT_EQ(r.call, DSCC_PROFILE_COPY);
  EXPECT_STREQ(r.version, "copy");
  EXPECT_EQ(r.n_sizes, 2);
  EXPECT_DOUBLE_EQ(r.bytes, 2.0 * 6 * sizeof(float));
}

TEST(RuntimeProfile, BadArgumentsAreRefused) {
  ContextPtr ctx(dscc_context_create(1));
  ASSERT_NE(ctx, nullptr);
  dscc_profile_record r;
  EXPECT_EQ(dscc_context_set_profiling(nullptr, 1), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_profile_get(ctx.get(), 0, &r), DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("index 0"), std::string::npos);
  EXPECT_EQ(dscc_profile_get(ctx.get(), -1, &r), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_profile_get(ctx.get(), 0, nullptr), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_profile_get(nullptr, 0, &r), DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_profile_count(nullptr), 0);
  EXPECT_EQ(dscc_context_profiling(nullptr), 0);
  dscc_profile_clear(nullptr);
}

TEST(RuntimeProfile, ConcurrentCallersAreEachRecordedOnTheirThread) {
  ContextPtr ctx(dscc_context_create(4));
  ASSERT_NE(ctx, nullptr);
  dscc_context_set_profiling(ctx.get(), 1);
  constexpr int kThreads = 4, kLaunches = 50;
  std::vector<std::vector<float>> ys(kThreads, std::vector<float>(1000, 0.0f));
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      void* outs[] = {ys[t].data()};
      int64_t sizes[] = {1000, 1};
      for (int i = 0; i < kLaunches; ++i)
        dscc_launch_kernel_info(ctx.get(), addOne, nullptr, outs, sizes, 1000, 100, &kInfo);
    });
  for (auto& t : ts) t.join();
  ASSERT_EQ(dscc_profile_count(ctx.get()), kThreads * kLaunches);
  std::set<uint32_t> threads;
  for (int64_t i = 0; i < dscc_profile_count(ctx.get()); ++i) {
    dscc_profile_record r;
    ASSERT_EQ(dscc_profile_get(ctx.get(), i, &r), DSCC_OK);
    threads.insert(r.thread);
  }
  EXPECT_EQ(threads.size(), size_t(kThreads));
  for (const auto& y : ys) EXPECT_EQ(y[999], float(kLaunches));
}

}  // namespace
