// Example: calls a compiled BERT encoder layer (bert_layer.so + generated bert_layer.h) at a few batch shapes.
//
// Usage: bert_main [THREADS]   (THREADS: the context's thread count; 0, the default, means all hardware threads)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bert_layer.h"

namespace {

constexpr int64_t kHidden = 768;
constexpr int64_t kFfn = 3072;

/// Random values uniform in [-scale, scale), from a fixed seed so checksums repeat.
std::vector<float> randomVector(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

/// A weight or input buffer with its dims, viewed as a dscc_tensor.
struct Buffer {
  std::vector<float> data;
  std::vector<int64_t> dims;
  dscc_tensor view() { return dscc_tensor{data.data(), dims.data(), int32_t(dims.size()), DSCC_F32}; }
};

/// Prints the failed call's status and message and exits.
[[noreturn]] void fail(dscc_context* ctx, dscc_status s, const char* what) {
  std::fprintf(stderr, "%s failed: %s: %s\n", what, dscc_status_name(s), dscc_status_message(ctx));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  dscc_context* ctx = dscc_context_create(threads);
  if (!ctx) {
    std::fprintf(stderr, "dscc_context_create(%d): %s\n", threads, dscc_status_message(nullptr));
    return 1;
  }
  std::printf("context: %d threads\n", dscc_context_num_threads(ctx));

  // Weights in the order of @bert_layer's arguments after %x and %mask; small
  // values keep activations in a realistic range.
  std::mt19937 rng(2024);
  std::vector<Buffer> weights;
  auto add = [&](std::vector<int64_t> dims, float scale) {
    size_t n = 1;
    for (auto d : dims) n *= size_t(d);
    weights.push_back({randomVector(n, scale, rng), dims});
  };
  for (int i = 0; i < 4; ++i) {  // q, k, v, output projections
    add({kHidden, kHidden}, 0.05f);
    add({kHidden}, 0.05f);
  }
  add({kHidden}, 1.0f);  // ln1 gamma
  add({kHidden}, 0.1f);  // ln1 beta
  add({kHidden, kFfn}, 0.05f);
  add({kFfn}, 0.05f);
  add({kFfn, kHidden}, 0.05f);
  add({kHidden}, 0.05f);
  add({kHidden}, 1.0f);  // ln2 gamma
  add({kHidden}, 0.1f);  // ln2 beta

  const int64_t shapes[][2] = {{1, 16}, {4, 37}, {8, 128}};
  for (const auto& bs : shapes) {
    int64_t B = bs[0], S = bs[1];
    Buffer x{randomVector(size_t(B * S * kHidden), 1.0f, rng), {B, S, kHidden}};
    // Additive mask: the last quarter of each sequence is padding (-10000).
    Buffer mask{std::vector<float>(size_t(B * S), 0.0f), {B, S}};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = S - S / 4; s < S; ++s) mask.data[size_t(b * S + s)] = -10000.0f;

    std::vector<dscc_tensor> in = {x.view(), mask.view()};
    for (auto& w : weights) in.push_back(w.view());
    int64_t outDims[3] = {0, 0, 0};
    dscc_tensor out{nullptr, outDims, 3, DSCC_F32};  // data == NULL: the runtime allocates it

    dscc_status s = bert_layer_run(ctx, in.data(), int(in.size()), &out, 1);  // also the warm-up
    if (s != DSCC_OK) fail(ctx, s, "bert_layer_run");
    const int reps = B * S <= 256 ? 20 : 5;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      // Later calls write into the buffer the first one allocated.
      s = bert_layer_run(ctx, in.data(), int(in.size()), &out, 1);
      if (s != DSCC_OK) fail(ctx, s, "bert_layer_run");
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;

    const float* y = static_cast<const float*>(out.data);
    double sum = 0, asum = 0;
    for (int64_t i = 0; i < B * S * kHidden; ++i) {
      sum += y[i];
      asum += std::fabs(y[i]);
    }
    std::printf("B=%-2lld S=%-3lld -> f32[%lld, %lld, %lld]  sum=%.6f abs_sum=%.3f  %.3f ms/call (%d calls)\n",
                (long long)B, (long long)S, (long long)outDims[0], (long long)outDims[1], (long long)outDims[2], sum,
                asum, ms, reps);
    dscc_tensor_free(&out);
  }

  // The error path: S = 513 breaks `S in [1, 512]`; the model says so instead of running.
  Buffer x{std::vector<float>(size_t(513 * kHidden), 0.0f), {1, 513, kHidden}};
  Buffer mask{std::vector<float>(513, 0.0f), {1, 513}};
  std::vector<dscc_tensor> in = {x.view(), mask.view()};
  for (auto& w : weights) in.push_back(w.view());
  int64_t outDims[3] = {0, 0, 0};
  dscc_tensor out{nullptr, outDims, 3, DSCC_F32};
  dscc_status s = bert_layer_run(ctx, in.data(), int(in.size()), &out, 1);
  std::printf("B=1  S=513 -> %s: %s\n", dscc_status_name(s), s == DSCC_OK ? "(unexpected)" : dscc_status_message(ctx));
  if (s == DSCC_OK) dscc_tensor_free(&out);

  dscc_context_release(ctx);
  return s == DSCC_FACT_VIOLATED ? 0 : 1;
}
