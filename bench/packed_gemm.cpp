// dscc_sgemm_const_b (constant weights packed once per context) against dscc_sgemm_nd on GPT/BERT weight shapes, few rows.
//
// Usage: build/bench/dscc-packed-gemm [THREADS]
// Prints a Markdown table: per shape and M, the best and median time of each
// entry point and their ratio. "streamed" cycles through enough copies of the
// weights (>= 600 MB) that every call reads them from memory, as a model's
// layers do; "cached" reuses one copy. Each result is checked against the
// unpacked path (max |difference|), so the table also shows they agree.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/dscc_runtime.h"

namespace {

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Stats {
  double best = 1e30, median = 0;
};

template <class F>
Stats timeIt(int rounds, int callsPerRound, F&& f) {
  std::vector<double> ts;
  for (int r = 0; r < rounds; ++r) {
    double t0 = seconds();
    for (int i = 0; i < callsPerRound; ++i) f(i);
    ts.push_back((seconds() - t0) / callsPerRound);
  }
  std::sort(ts.begin(), ts.end());
  return {ts.front(), ts[ts.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  dscc_context* ctx = dscc_context_create(threads);
  if (!ctx) return std::fprintf(stderr, "dscc-packed-gemm: %s\n", dscc_status_message(nullptr)), 1;
  struct Shape {
    int64_t N, K;
    int transB;
    const char* what;
  };
  const Shape shapes[] = {{2304, 768, 0, "QKV"}, {3072, 768, 0, "FFN up"}, {768, 3072, 0, "FFN down"},
                          {768, 768, 0, "attention out"}, {8000, 768, 1, "tied LM head (B^T)"}};
  const int64_t Ms[] = {1, 8, 15, 32, 64};
  std::printf("| weights | N | K | M | mode | sgemm_nd best (median) | const_b best (median) | nd / const_b | max |diff| |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    const int64_t bytes = 4 * s.N * s.K;
    const int copies = static_cast<int>(600000000 / bytes) + 1;
    std::vector<std::vector<float>> B(copies, std::vector<float>(static_cast<size_t>(s.N * s.K)));
    for (int c = 0; c < copies; ++c)
      for (size_t i = 0; i < B[c].size(); ++i) B[c][i] = static_cast<float>((i * 7 + c) % 13) / 13.0f - 0.5f;
    const int64_t ldb = s.transB ? s.K : s.N;
    for (int64_t M : Ms) {
      std::vector<float> A(static_cast<size_t>(M * s.K)), C1(static_cast<size_t>(M * s.N)), C2(C1.size());
      for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i % 11) / 11.0f - 0.5f;
      for (int streamed = 1; streamed >= 0; --streamed) {
        const int n = streamed ? copies : 20;
        auto nd = [&](int i) {
          dscc_sgemm_nd(ctx, 0, s.transB, M, s.N, s.K, A.data(), s.K, B[streamed ? i : 0].data(), ldb, C1.data(),
                        s.N, 0, nullptr, nullptr, nullptr, nullptr);
        };
        auto cb = [&](int i) {
          const int c = streamed ? i : 0;
          dscc_sgemm_const_b(ctx, 0, s.transB, M, s.N, s.K, A.data(), s.K, B[c].data(), ldb, 1000u + c, C2.data(),
                             s.N);
        };
        for (int i = 0; i < n; ++i) cb(i);  // packs each copy once
        Stats a = timeIt(5, n, nd), b = timeIt(5, n, cb);
        nd(0), cb(0);
        double diff = 0;
        for (size_t i = 0; i < C1.size(); ++i) diff = std::max(diff, double(std::fabs(C1[i] - C2[i])));
        std::printf("| %s | %lld | %lld | %lld | %s | %.0f us (%.0f) | %.0f us (%.0f) | %.2fx | %.1e |\n", s.what,
                    static_cast<long long>(s.N), static_cast<long long>(s.K), static_cast<long long>(M),
                    streamed ? "streamed" : "cached", a.best * 1e6, a.median * 1e6, b.best * 1e6, b.median * 1e6,
                    a.best / b.best, diff);
        std::fflush(stdout);
      }
    }
  }
  dscc_context_release(ctx);
  return 0;
}
