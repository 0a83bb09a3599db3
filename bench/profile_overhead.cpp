// What the runtime's profiling costs a kernel launch: off (the default) against on, per launch, printed as a table.
//
// Usage: build/bench/dscc-profile-overhead [LAUNCHES]
//
// A one-unit kernel that does almost nothing is launched LAUNCHES times
// (default 2,000,000) on a one-thread context, so the launch path is all
// that is timed: the direct call of the kernel function, dscc_launch_kernel
// (the launch as it was before profiling: no branch), and
// dscc_launch_kernel_info with profiling off and on. Each is the median of 7
// rounds. Off should equal the old entry point within noise (one branch on
// a flag the CPU predicts); on pays two clock reads and an append.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/dscc_generated.h"

namespace {

volatile float sink;

void kernel(void** inputs, void** outputs, const int64_t* sizes, int64_t begin, int64_t end) {
  float* x = static_cast<float*>(outputs[0]);
  for (int64_t i = begin; i < end; ++i) x[i] += 1.0f;
}

template <class F>
double nsPerCall(int64_t n, F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 2000000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: %s [LAUNCHES > 0]\n", argv[0]);
    return 2;
  }
  dscc_context* ctx = dscc_context_create(1);
  if (!ctx) return 1;
  float x[1] = {0};
  void* outs[1] = {x};
  int64_t sizes[1] = {1};
  const char* names[1] = {"N"};
  dscc_kernel_info info = {"bench.k0", "loop", "v8", "bench.k0.v8", 1, names, "4*N"};
  // The rounds of the three unprofiled paths alternate, so a machine that
  // gets busier or quieter meanwhile shifts all three alike.
  std::vector<double> direct, old, off, on;
  for (int r = 0; r < 7; ++r) {
    direct.push_back(nsPerCall(n, [&] { kernel(nullptr, outs, sizes, 0, 1); }));
    old.push_back(nsPerCall(n, [&] { dscc_launch_kernel(ctx, kernel, nullptr, outs, sizes, 1, 1); }));
    off.push_back(nsPerCall(n, [&] { dscc_launch_kernel_info(ctx, kernel, nullptr, outs, sizes, 1, 1, &info); }));
  }
  dscc_context_set_profiling(ctx, 1);
  // Fewer launches while on: each keeps a record.
  int64_t nOn = std::min<int64_t>(n, 200000);
  for (int r = 0; r < 7; ++r)
    on.push_back(nsPerCall(nOn, [&] { dscc_launch_kernel_info(ctx, kernel, nullptr, outs, sizes, 1, 1, &info); }));
  int64_t records = dscc_profile_count(ctx);
  dscc_context_release(ctx);
  sink = x[0];
  std::printf("%-40s %10s\n", "launch of a 1-unit kernel", "ns/launch");
  std::printf("%-40s %10.2f\n", "direct call (no runtime)", median(direct));
  std::printf("%-40s %10.2f\n", "dscc_launch_kernel (no profiling branch)", median(old));
  std::printf("%-40s %10.2f\n", "dscc_launch_kernel_info, profiling off", median(off));
  std::printf("%-40s %10.2f\n", "dscc_launch_kernel_info, profiling on", median(on));
  std::printf("(profiling on kept %lld records over 7 rounds of %lld launches)\n", (long long)records, (long long)nOn);
  return 0;
}
