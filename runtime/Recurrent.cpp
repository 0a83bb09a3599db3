// dscc_rnn_f32: its checks, the choice between oneDNN's primitives and rnnLoop, and rnnLoop: ONNX LSTM, GRU and RNN
// layers as a loop over time steps, the products through the runtime's sgemm, the gate functions vectorised.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/Context.h"
#include "runtime/PackedGemm.h"
#include "runtime/Recurrent.h"
#include "runtime/dscc_runtime.h"

namespace dscc::runtime {
namespace {

// What the gate functions of one time step read and write (runtime/RecurrentGates.inc).
struct StepArgs {
  int cell = 0;
  int64_t N = 0, H = 0;
  const float* gx = nullptr;  // [N, G*H]: x_t W^T
  const float* gh = nullptr;  // [N, G*H]: h R^T (a GRU without linear_before_reset: (r*h) R_h^T in the h block)
  const float* bx = nullptr;  // [G*H]: Wb + Rb (GRU with linear_before_reset: the h gate's Wb alone)
  const float* bh = nullptr;  // [H]: GRU with linear_before_reset: Rb_h
  const float* hPrev = nullptr;
  float* hNext = nullptr;
  float* c = nullptr;   // LSTM: the cell state, updated in place
  float* z = nullptr;   // GRU without linear_before_reset: z between the two halves of a step
  float* rh = nullptr;  // and r*h
};

// The scalar policy: the reference's std::exp and std::tanh, one element at a time.
struct ScalarMath {
  using Vec = float;
  using Mask = int;
  static constexpr int64_t kWidth = 1;
  static Mask mask(int64_t) { return 1; }
  static Vec load(const float* p, Mask) { return *p; }
  static void store(float* p, Vec v, Mask) { *p = v; }
  static Vec set(float f) { return f; }
  static Vec add(Vec a, Vec b) { return a + b; }
  static Vec sub(Vec a, Vec b) { return a - b; }
  static Vec mul(Vec a, Vec b) { return a * b; }
  static Vec sig(Vec v) { return 1.0f / (1.0f + std::exp(-v)); }
  static Vec tanh(Vec v) { return std::tanh(v); }
};

namespace scalar {
using V = ScalarMath;
#include "runtime/RecurrentGates.inc"
}  // namespace scalar

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC 12 warns about the _mm512_undefined_ps() inside its own max/min/roundscale/scalef intrinsics.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The AVX-512 policy: 16 lanes, tails masked; exp by range reduction to [-ln2/2, ln2/2], a degree-6 polynomial
// (Cephes' expf coefficients, about 1 ulp) and scalef; sigmoid 1/(1+e^-x), tanh 2*sigmoid(2x)-1 (absolute error
// about 1e-7 near 0, where tanh's relative precision would need a separate branch nobody reads).
struct Avx512Math {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int64_t kWidth = 16;
  static Mask mask(int64_t n) { return n >= 16 ? Mask(0xFFFF) : Mask((1u << n) - 1); }
  static Vec load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, Vec v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static Vec set(float f) { return _mm512_set1_ps(f); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec exp(Vec x) {
    // max/min return their second operand where either is NaN: x second, so a NaN stays NaN (as std::exp's).
    x = _mm512_min_ps(set(88.7f), _mm512_max_ps(set(-87.3f), x));
    const Vec n = _mm512_roundscale_ps(_mm512_mul_ps(x, set(1.44269504088896341f)),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    Vec r = _mm512_fnmadd_ps(n, set(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, set(-2.12194440e-4f), r);
    Vec p = set(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, set(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, set(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, set(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, set(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, set(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, set(1.0f)));
    return _mm512_scalef_ps(p, n);
  }
  static Vec sig(Vec v) { return _mm512_div_ps(set(1.0f), _mm512_add_ps(set(1.0f), exp(_mm512_sub_ps(set(0.0f), v)))); }
  static Vec tanh(Vec v) { return _mm512_fmsub_ps(set(2.0f), sig(_mm512_add_ps(v, v)), set(1.0f)); }
};

namespace avx512 {
using V = Avx512Math;
#include "runtime/RecurrentGates.inc"
}  // namespace avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

void gates(const StepArgs& a, int phase, int64_t k0, int64_t k1) {
#if defined(__x86_64__)
  if (haveAvx512()) return avx512::stepGates(a, phase, k0, k1);
#endif
  scalar::stepGates(a, phase, k0, k1);
}

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

// One direction's recurrence, step by step. Where the packed kernel takes the shape, each gate's R_g is packed
// once per call into column panels, and a step is one parallel loop over `parts` blocks of panels: each block's
// products h R_g^T for every gate, then the gates of its hidden units, so a step needs one rendezvous of the
// threads (two for a GRU without linear_before_reset, whose h gate multiplies r*h), and each thread keeps
// reading the same part of R, which stays in its core's L2 (R of an LSTM of 512 is 4 MiB). Elsewhere the step's
// product is one sgemm (the BLAS's threads) and the gates a parallel loop over blocks of units.
class Recurrence {
 public:
  /// Steps over at most `threads` threads.
  Recurrence(dscc_context* ctx, const RnnCall& c, const float* rd, StepArgs& a, int64_t threads)
      : ctx_(ctx), c_(c), rd_(rd), a_(a), G_(c.gates()), H_(c.hidden), late_(c.cell == 1 && !c.lbr) {
    const int64_t N = c.batch;
    // A product this small runs on the calling thread: a rendezvous costs more (~5-20 us) than it.
    const bool big = 2.0 * double(N) * double(G_ * H_) * double(H_) >= 2.0e5;
    packed_ = c.seq > 1 && packedGemmApplies(N, H_, H_, false);
    if (packed_) {
      packs_.reset(new PackedB[size_t(G_)]);
      for (int64_t g = 0; g < G_ && packed_; ++g)
        packed_ = packInto(rd + g * H_ * H_, H_, true, H_, H_, packs_[size_t(g)]);
    }
    units_ = packed_ ? packs_[0].panels : (H_ + 15) / 16;  // panels of 32 units, or blocks of 16
    parts_ = big ? std::min<int64_t>(threads, units_) : 1;
  }

  bool packed() const { return packed_; }

  // One time step (a_ pointing at its data).
  dscc_status step() {
    if (!late_) return phase(0, 0, G_);
    if (dscc_status st = phase(1, 0, 2); st != DSCC_OK) return st;
    return phase(2, 2, 3);
  }

 private:
  // Gates [g0, g1) of the products, then the gate functions' `ph`.
  dscc_status phase(int ph, int64_t g0, int64_t g1) {
    const int64_t N = c_.batch, GH = G_ * H_;
    // The h gate of a GRU without linear_before_reset multiplies r*h; the others h.
    const float* A = ph == 2 ? a_.rh : a_.hPrev;
    float* gh = const_cast<float*>(a_.gh);
    auto unitRange = [&](int64_t part, int64_t& k0, int64_t& k1) {
      const int64_t u0 = units_ * part / parts_, u1 = units_ * (part + 1) / parts_, w = packed_ ? 32 : 16;
      k0 = std::min(u0 * w, H_), k1 = std::min(u1 * w, H_);
    };
    if (!packed_) {
      if (dscc_status st = gemmBT(ctx_, N, (g1 - g0) * H_, H_, A, H_, rd_ + g0 * H_ * H_, H_, gh + g0 * H_, GH);
          st != DSCC_OK)
        return st;
    }
    auto body = [&](int64_t b, int64_t e) {
      for (int64_t part = b; part < e; ++part) {
        int64_t k0, k1;
        unitRange(part, k0, k1);
        if (packed_) {
          const int64_t p0 = units_ * part / parts_, p1 = units_ * (part + 1) / parts_;
          for (int64_t g = g0; g < g1; ++g) packedGemm(N, A, H_, packs_[size_t(g)], gh + g * H_, GH, p0, p1);
        }
        gates(a_, ph, k0, k1);
      }
    };
    if (parts_ <= 1) body(0, 1);
    else ctx_->pool.parallelFor(0, parts_, 1, body);
    return DSCC_OK;
  }

  dscc_context* ctx_;
  const RnnCall& c_;
  const float* rd_;
  StepArgs& a_;
  const int64_t G_, H_;
  const bool late_;
  bool packed_ = false;
  std::unique_ptr<PackedB[]> packs_;
  int64_t units_ = 1, parts_ = 1;
};

// Direction d of `c` on at most `threads` threads.
dscc_status runDirection(dscc_context* ctx, const RnnCall& c, int64_t d, int64_t threads) {
  const int64_t D = c.dirs(), G = c.gates(), H = c.hidden, N = c.batch, S = c.seq, I = c.input, GH = G * H;
  std::vector<float> gx, gh, h, hNext, cs, z, rh, bias;
  try {
    gx.resize(static_cast<size_t>(S * N * GH));
    gh.resize(static_cast<size_t>(N * GH));
    for (auto* v : {&h, &hNext, &cs, &z, &rh}) v->resize(static_cast<size_t>(N * H));
    bias.resize(static_cast<size_t>(GH + H));
  } catch (const std::bad_alloc&) {
    return fail(ctx, DSCC_OUT_OF_MEMORY, "dscc_rnn_f32: no memory for the gate values");
  }
  const bool lbr = c.cell == 1 && c.lbr, reverse = c.direction == 1 || d == 1;
  // Wb + Rb; with linear_before_reset the h gate's Rb stays apart (it is inside r * (...)).
  if (c.b)
    for (int64_t g = 0; g < GH; ++g) {
      const float wb = c.b[d * 2 * GH + g], rb = c.b[d * 2 * GH + GH + g];
      if (lbr && g >= 2 * H) bias[size_t(g)] = wb, bias[size_t(GH + g - 2 * H)] = rb;
      else bias[size_t(g)] = wb + rb;
    }
  for (int64_t k = 0; k < N * H; ++k) {
    h[size_t(k)] = c.h0 ? c.h0[d * N * H + k] : 0.0f;
    cs[size_t(k)] = c.c0 ? c.c0[d * N * H + k] : 0.0f;
  }
  // Every step's input projection at once: gx [S*N, GH] = x [S*N, I] * W^T.
  if (dscc_status st = gemmBT(ctx, S * N, GH, I, c.x, I, c.w + d * GH * I, I, gx.data(), GH); st != DSCC_OK)
    return st;
  StepArgs a;
  a.cell = c.cell, a.N = N, a.H = H, a.gh = gh.data(), a.bx = bias.data(), a.bh = bias.data() + GH;
  a.c = cs.data(), a.z = z.data(), a.rh = rh.data();
  Recurrence rec(ctx, c, c.r + d * GH * H, a, threads);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t t = reverse ? S - 1 - s : s;
    a.gx = gx.data() + t * N * GH, a.hPrev = h.data(), a.hNext = hNext.data();
    if (dscc_status st = rec.step(); st != DSCC_OK) return st;
    h.swap(hNext);
    if (c.output == 0)
      for (int64_t n = 0; n < N; ++n)
        std::memcpy(c.y + ((t * D + d) * N + n) * H, h.data() + n * H, sizeof(float) * size_t(H));
  }
  if (c.output != 0) {
    const std::vector<float>& fin = c.output == 1 ? h : cs;
    std::copy(fin.begin(), fin.end(), c.y + d * N * H);
  }
  return DSCC_OK;
}

}  // namespace

dscc_status rnnLoop(dscc_context* ctx, const RnnCall& c) {
  const int64_t threads = ctx->pool.numThreads();
  // Two directions on two threads at once where each direction's R fits in half a core's L2 (1 MiB): a step's
  // rendezvous then goes (CRNN's LSTM of 256 at batch 1: its steps are too small to split). Past that, each
  // direction in turn over all the threads, each keeping its part of R in its L2.
  const bool together = c.dirs() == 2 && threads >= 2 && c.gates() * c.hidden * c.hidden * 4 <= (int64_t(1) << 20);
  if (!together) {
    for (int64_t d = 0; d < c.dirs(); ++d)
      if (dscc_status st = runDirection(ctx, c, d, threads); st != DSCC_OK) return st;
    return DSCC_OK;
  }
  dscc_status st[2] = {DSCC_OK, DSCC_OK};
  ctx->pool.parallelFor(0, 2, 1, [&](int64_t b, int64_t e) {
    for (int64_t d = b; d < e; ++d) st[d] = runDirection(ctx, c, d, threads / 2);
  });
  return st[0] != DSCC_OK ? st[0] : st[1];
}

// Never, for now. oneDNN 2.6's primitives run each slice on one thread (an OpenMP team beside the pool's threads
// ran 20x slower on 2 cores), so every slice streams the whole of R at every step: from L3 once R passes the
// L2 (an LSTM of 512: 4 MiB), where the loop's threads each keep their own part of R in their L2. Measured on
// the 2-core VM of bench/results/2026-12-07-recurrent-dnnl.md (min of 9 calls, weights kept, loop vs oneDNN):
// LSTM 100x1x512->512 7.0 vs 24.1 ms (2 threads), 100x8 22.9 vs 50.1; CRNN's bidirectional 26x1x512->256
// 1.1 vs 4.4; GRU 50x4x64->64 0.08 vs 0.13; at most 7% ahead of the loop at 30x32x128->128 (1.36 vs 1.46 ms).
bool rnnPrefersDnnl(const RnnCall&, int) { return false; }

dscc_status rnnF32(dscc_context* ctx, const RnnCall& c, RnnPath path, const char* fn) {
  const int32_t cell = c.cell, direction = c.direction, output = c.output;
  const int64_t seq = c.seq, batch = c.batch, input = c.input, hidden = c.hidden;
  const float *x = c.x, *w = c.w, *r = c.r;
  float* y = c.y;
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
  if (path == RnnPath::Loop) return rnnLoop(ctx, c);
  if (path == RnnPath::Dnnl) return rnnDnnl(ctx, c);
  if (rnnPrefersDnnl(c, ctx->pool.numThreads()))
    if (dscc_status st = rnnDnnl(ctx, c); st != DSCC_UNAVAILABLE) return st;
  return rnnLoop(ctx, c);
}

}  // namespace dscc::runtime

extern "C" dscc_status dscc_rnn_f32(dscc_context* ctx, int32_t cell, int32_t direction, int32_t linear_before_reset,
                                    int32_t output, int64_t seq, int64_t batch, int64_t input, int64_t hidden,
                                    const float* x, const float* w, const float* r, const float* b,
                                    const float* initial_h, const float* initial_c, float* y) {
  dscc::runtime::RnnCall c;
  c.cell = cell, c.direction = direction, c.lbr = linear_before_reset != 0, c.output = output;
  c.seq = seq, c.batch = batch, c.input = input, c.hidden = hidden;
  c.x = x, c.w = w, c.r = r, c.b = b, c.h0 = initial_h, c.c0 = initial_c, c.y = y;
  return dscc::runtime::guarded(ctx, "dscc_rnn_f32", [&] { return dscc::runtime::rnnF32(ctx, c, dscc::runtime::RnnPath::Auto); });
}
