// dscc_rnn_f32: ONNX LSTM, GRU and RNN layers as a loop over time steps, the matrix products through the
// runtime's sgemm (one for every step's input projection, one or two per step for the recurrence).
#include <algorithm>
#include <cmath>
#include <new>
#include <string>
#include <vector>

#include "runtime/Context.h"
#include "runtime/PackedGemm.h"
#include "runtime/dscc_runtime.h"

namespace dscc::runtime {
namespace {

inline float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// C [M, N] (row pitch ldc) = A [M, K] * B^T (B stored [N, K], row pitch ldb); K == 0 gives zeros.
dscc_status gemmBT(dscc_context* ctx, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                   int64_t ldb, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return DSCC_OK;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.0f);
    return DSCC_OK;
  }
  return dscc_sgemm_strided_batched(ctx, 0, 1, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, C, ldc, 0, 1);
}

// A step's recurrence C [M, N] = A [M, K] * B^T (B stored [N, K]): through `packed` (B packed once for every step
// of the call) when there is one, its panels over the context's threads when the product is large enough; else
// gemmBT. Why: the BLAS re-packed B at every step, 100 steps of a 2x512 LSTM re-reading 4 MiB each.
dscc_status stepGemm(dscc_context* ctx, const PackedB* packed, int64_t M, int64_t N, int64_t K, const float* A,
                     int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  if (!packed || M == 0) return gemmBT(ctx, M, N, K, A, lda, B, ldb, C, ldc);
  const double flops = 2.0 * double(M) * double(N) * double(K);
  if (flops < 2.0e6 || ctx->pool.numThreads() <= 1) {
    packedGemm(M, A, lda, *packed, C, ldc, 0, packed->panels);
    return DSCC_OK;
  }
  ctx->pool.parallelFor(0, packed->panels, 1,
                        [&](int64_t begin, int64_t end) { packedGemm(M, A, lda, *packed, C, ldc, begin, end); });
  return DSCC_OK;
}

}  // namespace
}  // namespace dscc::runtime

using dscc::runtime::fail;

extern "C" dscc_status dscc_rnn_f32(dscc_context* ctx, int32_t cell, int32_t direction, int32_t linear_before_reset,
                                    int32_t output, int64_t seq, int64_t batch, int64_t input, int64_t hidden,
                                    const float* x, const float* w, const float* r, const float* b,
                                    const float* initial_h, const float* initial_c, float* y) {
  using dscc::runtime::gemmBT;
  using dscc::runtime::sigmoid;
  const char* fn = "dscc_rnn_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (cell < 0 || cell > 2 || direction < 0 || direction > 2 || output < 0 || output > 2 || (output == 2 && cell != 0))
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": cell, direction or output out of range");
  // The sizes: hidden >= 1, others >= 0, and every product below fits far inside 64 bits (int32 for the BLAS).
  const int64_t lim = int64_t(1) << 31;
  if (seq < 0 || batch < 0 || input < 0 || hidden < 1 || seq >= lim || batch >= lim || input >= lim || hidden >= lim / 8 ||
      (seq > 0 && batch > lim / seq))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                std::string(fn) + ": sizes out of range (seq " + std::to_string(seq) + ", batch " + std::to_string(batch) +
                    ", input " + std::to_string(input) + ", hidden " + std::to_string(hidden) + ")");
  // Empty tensors may be NULL (a vector's data() is): x and w without input features, y without steps or batch.
  const int64_t yElems = (output == 0 ? seq : 1) * batch;
  if (!r || (input > 0 && !w) || (yElems > 0 && !y) || (seq * batch * input > 0 && !x))
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": x, w, r and y must not be NULL");
  const int64_t D = direction == 2 ? 2 : 1, G = cell == 0 ? 4 : cell == 1 ? 3 : 1, H = hidden, N = batch, S = seq;
  const int64_t GH = G * H;
  std::vector<float> gx, gh, h, c, tmp;
  try {
    gx.resize(static_cast<size_t>(S * N * GH));
    gh.resize(static_cast<size_t>(N * GH));
    h.resize(static_cast<size_t>(N * H));
    c.resize(static_cast<size_t>(N * H));
    tmp.resize(static_cast<size_t>(N * H));
  } catch (const std::bad_alloc&) {
    return fail(ctx, DSCC_OUT_OF_MEMORY, std::string(fn) + ": no memory for the gate values");
  }
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = direction == 1 || d == 1;
    const float* wd = w + d * GH * input;
    const float* rd = r + d * GH * H;
    const float* wb = b ? b + d * 2 * GH : nullptr;
    const float* rb = b ? wb + GH : nullptr;
    for (int64_t k = 0; k < N * H; ++k) {
      h[k] = initial_h ? initial_h[d * N * H + k] : 0.0f;
      c[k] = initial_c ? initial_c[d * N * H + k] : 0.0f;
    }
    // R (and a late GRU's R_h) packed once for every step, where the packed kernel takes the shape.
    const bool late = cell == 1 && !linear_before_reset;
    const int64_t rows = late ? 2 * H : GH;
    dscc::runtime::PackedB packR, packRh;
    const bool packs = S > 1 && N > 1 && dscc::runtime::packedGemmApplies(N, rows, H, false);
    const dscc::runtime::PackedB* pr = packs && dscc::runtime::packInto(rd, H, true, H, rows, packR) ? &packR : nullptr;
    const dscc::runtime::PackedB* prh =
        packs && late && dscc::runtime::packInto(rd + 2 * H * H, H, true, H, H, packRh) ? &packRh : nullptr;
    // Every step's input projection at once: gx [S*N, GH] = x [S*N, I] * W^T.
    if (dscc_status st = gemmBT(ctx, S * N, GH, input, x, input, wd, input, gx.data(), GH); st != DSCC_OK) return st;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = reverse ? S - 1 - s : s;
      float* gxt = gx.data() + t * N * GH;
      // GRU without linear_before_reset multiplies r * h before R_h: the h gate's recurrence comes later.
      if (dscc_status st = dscc::runtime::stepGemm(ctx, pr, N, rows, H, h.data(), H, rd, H, gh.data(), GH); st != DSCC_OK) return st;
      for (int64_t n = 0; n < N; ++n) {
        float* gxn = gxt + n * GH;
        float* ghn = gh.data() + n * GH;
        for (int64_t g = 0; g < GH; ++g) {
          if (wb) gxn[g] += wb[g];
          if (rb && (!late || g < 2 * H)) ghn[g] += rb[g];
        }
      }
      if (cell == 0) {  // ONNX gates i, o, f, c
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < H; ++k) {
            const float* a = gxt + n * GH;
            const float* e = gh.data() + n * GH;
            float ig = sigmoid(a[k] + e[k]), og = sigmoid(a[H + k] + e[H + k]);
            float fg = sigmoid(a[2 * H + k] + e[2 * H + k]), cg = std::tanh(a[3 * H + k] + e[3 * H + k]);
            float& cv = c[n * H + k];
            cv = fg * cv + ig * cg;
            h[n * H + k] = og * std::tanh(cv);
          }
      } else if (cell == 1) {  // ONNX gates z, r, h
        if (late) {
          // tmp = r * h, then gh's h block = tmp * R_h^T + Rb_h.
          for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < H; ++k)
              tmp[n * H + k] = sigmoid(gxt[n * GH + H + k] + gh[n * GH + H + k]) * h[n * H + k];
          if (dscc_status st = dscc::runtime::stepGemm(ctx, prh, N, H, H, tmp.data(), H, rd + 2 * H * H, H, gh.data() + 2 * H, GH);
              st != DSCC_OK)
            return st;
          if (rb)
            for (int64_t n = 0; n < N; ++n)
              for (int64_t k = 0; k < H; ++k) gh[n * GH + 2 * H + k] += rb[2 * H + k];
        }
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < H; ++k) {
            const float* a = gxt + n * GH;
            const float* e = gh.data() + n * GH;
            float z = sigmoid(a[k] + e[k]);
            float rec = late ? e[2 * H + k] : sigmoid(a[H + k] + e[H + k]) * e[2 * H + k];
            float hh = std::tanh(a[2 * H + k] + rec);
            float& hv = h[n * H + k];
            hv = (1.0f - z) * hh + z * hv;
          }
      } else {
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < H; ++k) h[n * H + k] = std::tanh(gxt[n * GH + k] + gh[n * GH + k]);
      }
      if (output == 0)
        for (int64_t n = 0; n < N; ++n)
          std::copy(h.begin() + n * H, h.begin() + (n + 1) * H, y + ((t * D + d) * N + n) * H);
    }
    if (output != 0) {
      const std::vector<float>& fin = output == 1 ? h : c;
      std::copy(fin.begin(), fin.end(), y + d * N * H);
    }
  }
  return DSCC_OK;
}
