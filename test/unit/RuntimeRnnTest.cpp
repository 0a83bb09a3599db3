// dscc_rnn_f32 against a double-precision reference of ONNX's equations: every cell, direction and output, with
// and without bias and initial states, 1 and 3 threads, an empty sequence; bad arguments with their messages. Then
// each of its two implementations (runtime/Recurrent.h: the loop, oneDNN's primitives) on its own over a grid of
// cells, directions, outputs, states, bias, batch 1-3, odd hidden sizes, 0/1/odd steps and 1-3 threads.
//
// Tolerance: |got - want| <= 1e-5 + 1e-5 * |want| (values in [-1, 1]; f32 against f64). Outputs are pre-filled
// with NaN so an element the call skips fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/Recurrent.h"
#include "runtime/dscc_runtime.h"

namespace {

struct ContextDeleter {
  void operator()(dscc_context* ctx) const { dscc_context_release(ctx); }
};
using ContextPtr = std::unique_ptr<dscc_context, ContextDeleter>;

double sig(double v) { return 1.0 / (1.0 + std::exp(-v)); }

struct Case {
  int cell, direction, lbr, output;
  int64_t S, N, I, H;
  bool bias, states;
};

// ONNX's equations in f64, written independently of runtime/Recurrent.cpp (per element, no gate matrices).
std::vector<double> reference(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& r, const std::vector<float>* b, const std::vector<float>* h0,
                              const std::vector<float>* c0) {
  const int64_t D = c.direction == 2 ? 2 : 1, G = c.cell == 0 ? 4 : c.cell == 1 ? 3 : 1, H = c.H, N = c.N, I = c.I;
  std::vector<double> y(c.output == 0 ? c.S * D * N * H : D * N * H);
  for (int64_t d = 0; d < D; ++d) {
    std::vector<double> h(N * H), cs(N * H);
    for (int64_t k = 0; k < N * H; ++k) {
      h[k] = h0 ? (*h0)[d * N * H + k] : 0;
      cs[k] = c0 ? (*c0)[d * N * H + k] : 0;
    }
    auto xw = [&](int64_t t, int64_t n, int64_t g) {  // x_t W_g^T + Wb_g for gate row g
      double s = b ? (*b)[d * 2 * G * H + g] : 0;
      for (int64_t i = 0; i < I; ++i) s += double(x[(t * N + n) * I + i]) * w[(d * G * H + g) * I + i];
      return s;
    };
    auto hr = [&](const std::vector<double>& v, int64_t n, int64_t g) {  // v_n R_g^T + Rb_g
      double s = b ? (*b)[d * 2 * G * H + G * H + g] : 0;
      for (int64_t j = 0; j < H; ++j) s += v[n * H + j] * r[(d * G * H + g) * H + j];
      return s;
    };
    for (int64_t s = 0; s < c.S; ++s) {
      int64_t t = (c.direction == 1 || d == 1) ? c.S - 1 - s : s;
      std::vector<double> nh(N * H);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < H; ++k) {
          if (c.cell == 0) {
            double i = sig(xw(t, n, k) + hr(h, n, k)), o = sig(xw(t, n, H + k) + hr(h, n, H + k));
            double f = sig(xw(t, n, 2 * H + k) + hr(h, n, 2 * H + k));
            double g = std::tanh(xw(t, n, 3 * H + k) + hr(h, n, 3 * H + k));
            cs[n * H + k] = f * cs[n * H + k] + i * g;
            nh[n * H + k] = o * std::tanh(cs[n * H + k]);
          } else if (c.cell == 1) {
            double z = sig(xw(t, n, k) + hr(h, n, k));
            double hh;
            if (c.lbr) {
              hh = std::tanh(xw(t, n, 2 * H + k) + sig(xw(t, n, H + k) + hr(h, n, H + k)) * hr(h, n, 2 * H + k));
            } else {
              std::vector<double> rh(N * H);
              for (int64_t j = 0; j < H; ++j) rh[n * H + j] = sig(xw(t, n, H + j) + hr(h, n, H + j)) * h[n * H + j];
              hh = std::tanh(xw(t, n, 2 * H + k) + hr(rh, n, 2 * H + k));
            }
            nh[n * H + k] = (1 - z) * hh + z * h[n * H + k];
          } else {
            nh[n * H + k] = std::tanh(xw(t, n, k) + hr(h, n, k));
          }
        }
      h = nh;
      if (c.output == 0)
        for (int64_t k = 0; k < N * H; ++k) y[((t * D + d) * N) * H + k] = h[k];
    }
    if (c.output != 0)
      for (int64_t k = 0; k < N * H; ++k) y[d * N * H + k] = c.output == 1 ? h[k] : cs[k];
  }
  return y;
}

// `path` Auto goes through the C entry point; the others call that implementation alone (a path the runtime
// lacks, oneDNN in a build without it, skips the case). Nonzero `key`: the weights are passed as constants.
void check(const Case& c, int threads, dscc::runtime::RnnPath path = dscc::runtime::RnnPath::Auto, uint64_t key = 0) {
  const int64_t D = c.direction == 2 ? 2 : 1, G = c.cell == 0 ? 4 : c.cell == 1 ? 3 : 1;
  std::mt19937 gen(static_cast<unsigned>(c.S * 131 + c.N * 17 + c.cell * 7 + c.direction));
  std::uniform_real_distribution<float> u(-1, 1);
  auto fill = [&](int64_t n) {
    std::vector<float> v(n);
    for (float& e : v) e = u(gen);
    return v;
  };
  auto x = fill(c.S * c.N * c.I), w = fill(D * G * c.H * c.I), r = fill(D * G * c.H * c.H), b = fill(D * 2 * G * c.H);
  // R scaled by 3/sqrt(H) past 9 units, as trained layers are: with R in [-1, 1] an RNN of 67 units is chaotic,
  // and f32 rounding alone grows past the tolerance within a few steps, in any implementation.
  for (float& e : r) e *= std::min(1.0f, 3.0f / std::sqrt(float(c.H)));
  auto h0 = fill(D * c.N * c.H), c0 = fill(D * c.N * c.H);
  std::vector<double> want = reference(c, x, w, r, c.bias ? &b : nullptr, c.states ? &h0 : nullptr,
                                       c.states && c.cell == 0 ? &c0 : nullptr);
  std::vector<float> y(want.size(), NAN);
  ContextPtr ctx(dscc_context_create(threads));
  dscc::runtime::RnnCall call;
  call.cell = c.cell, call.direction = c.direction, call.lbr = c.lbr != 0, call.output = c.output;
  call.seq = c.S, call.batch = c.N, call.input = c.I, call.hidden = c.H;
  call.x = x.data(), call.w = w.data(), call.r = r.data(), call.b = c.bias ? b.data() : nullptr;
  call.h0 = c.states ? h0.data() : nullptr, call.c0 = c.states && c.cell == 0 ? c0.data() : nullptr;
  call.y = y.data(), call.wKey = key, call.rKey = key ? key + 1 : 0;
  // Twice with a key: the second call finds the weights kept in the primitive's layout.
  for (int rep = 0; rep < (key ? 2 : 1); ++rep) {
    std::fill(y.begin(), y.end(), NAN);
    dscc_status st = path == dscc::runtime::RnnPath::Auto
                         ? dscc_rnn_f32(ctx.get(), c.cell, c.direction, c.lbr, c.output, c.S, c.N, c.I, c.H,
                                        x.data(), w.data(), r.data(), call.b, call.h0, call.c0, y.data())
                         : dscc::runtime::rnnF32(ctx.get(), call, path);
    if (st == DSCC_UNAVAILABLE && path == dscc::runtime::RnnPath::Dnnl) return;
    ASSERT_EQ(st, DSCC_OK) << dscc_status_message(ctx.get());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_LE(std::abs(y[i] - want[i]), 1e-5 + 1e-5 * std::abs(want[i]))
          << "path " << int(path) << " threads " << threads << " cell " << c.cell << " direction " << c.direction
          << " lbr " << c.lbr << " output " << c.output << " S " << c.S << " N " << c.N << " H " << c.H
          << " bias " << c.bias << " states " << c.states << " element " << i << ": " << y[i] << " vs " << want[i];
  }
}

}  // namespace

TEST(RuntimeRnn, MatchesReference) {
  for (int cell = 0; cell < 3; ++cell)
    for (int direction = 0; direction < 3; ++direction)
      for (int output = 0; output < (cell == 0 ? 3 : 2); ++output)
        for (int lbr = 0; lbr < (cell == 1 ? 2 : 1); ++lbr) {
          check({cell, direction, lbr, output, 5, 3, 4, 6, true, true}, 1);
          check({cell, direction, lbr, output, 1, 1, 2, 3, false, false}, 3);
          check({cell, direction, lbr, output, 7, 4, 1, 2, true, false}, 3);
        }
}

// Products large enough (2*N*G*H*H >= 2e6) for the packed recurrence to split its panels over the threads.
TEST(RuntimeRnn, PackedRecurrenceOverThreads) {
  check({0, 2, 0, 0, 3, 8, 16, 200, true, true}, 2);
  check({1, 0, 0, 0, 3, 8, 16, 200, true, false}, 3);
  check({1, 1, 1, 1, 3, 9, 5, 280, false, true}, 2);
}

TEST(RuntimeRnn, EmptySequenceGivesInitialState) {
  check({0, 2, 0, 1, 0, 2, 3, 4, true, true}, 2);  // y_h = initial_h
  check({0, 2, 0, 2, 0, 2, 3, 4, true, true}, 2);  // y_c = initial_c
  check({1, 0, 0, 0, 0, 2, 3, 4, true, false}, 2);  // y empty
}

// A NaN input propagates as std::exp's would, on the vectorised gates too (their exp clamps its argument): an
// LSTM, GRU and RNN whose second batch row has one NaN input give NaN in that row's outputs and finite ones in the
// first row (rows do not mix), over 18 hidden units (a block of 16 and a masked tail).
TEST(RuntimeRnn, NanInputPropagates) {
  ContextPtr ctx(dscc_context_create(2));
  const int64_t S = 3, N = 2, I = 5, H = 18;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (int cell = 0; cell < 3; ++cell) {
    const int64_t G = cell == 0 ? 4 : cell == 1 ? 3 : 1;
    std::vector<float> x(S * N * I), w(G * H * I), r(G * H * H), y(S * N * H, 0.0f);
    for (auto* vec : {&x, &w, &r})
      for (float& e : *vec) e = u(rng);
    x[1 * I + 2] = std::nanf("");  // step 0, batch row 1
    ASSERT_EQ(dscc_rnn_f32(ctx.get(), cell, 0, 1, 0, S, N, I, H, x.data(), w.data(), r.data(), nullptr, nullptr,
                           nullptr, y.data()),
              DSCC_OK);
    for (int64_t t = 0; t < S; ++t)
      for (int64_t k = 0; k < H; ++k) {
        EXPECT_TRUE(std::isfinite(y[(t * N + 0) * H + k])) << "cell " << cell << " step " << t << " unit " << k;
        EXPECT_TRUE(std::isnan(y[(t * N + 1) * H + k])) << "cell " << cell << " step " << t << " unit " << k;
      }
  }
}

TEST(RuntimeRnn, BadArguments) {
  ContextPtr ctx(dscc_context_create(1));
  std::vector<float> x(24, 0.5f), w(64, 0.5f), r(64, 0.5f), y(64);
  EXPECT_EQ(dscc_rnn_f32(nullptr, 0, 0, 0, 0, 2, 3, 4, 4, x.data(), w.data(), r.data(), nullptr, nullptr, nullptr,
                         y.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_rnn_f32(ctx.get(), 3, 0, 0, 0, 2, 3, 4, 4, x.data(), w.data(), r.data(), nullptr, nullptr, nullptr,
                         y.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("cell, direction or output out of range"), std::string::npos);
  // y_c needs an lstm.
  EXPECT_EQ(dscc_rnn_f32(ctx.get(), 1, 0, 0, 2, 2, 3, 4, 4, x.data(), w.data(), r.data(), nullptr, nullptr, nullptr,
                         y.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_rnn_f32(ctx.get(), 0, 0, 0, 0, -1, 3, 4, 4, x.data(), w.data(), r.data(), nullptr, nullptr, nullptr,
                         y.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("sizes out of range"), std::string::npos);
  EXPECT_EQ(dscc_rnn_f32(ctx.get(), 0, 0, 0, 0, 2, 3, 4, 0, x.data(), w.data(), r.data(), nullptr, nullptr, nullptr,
                         y.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_EQ(dscc_rnn_f32(ctx.get(), 0, 0, 0, 0, 2, 3, 4, 4, x.data(), nullptr, r.data(), nullptr, nullptr, nullptr,
                         y.data()),
            DSCC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dscc_status_message(ctx.get())).find("must not be NULL"), std::string::npos);
}

// Each implementation on its own over the grid. Hidden sizes 5, 37 and 67 leave tails of the 16-lane gate
// functions and of the 32-column panels; 97 at batch 3 is large enough for the loop to split a step's panels
// over the threads (and 2-3 rows take the wide packed kernels); bidirectional layers run both directions at once
// on 2-3 threads. A gate in the wrong place (oneDNN's i f c o against ONNX's i o f c) fails every LSTM case.
TEST(RuntimeRnn, LoopAndDnnlMatchReference) {
  using dscc::runtime::RnnPath;
  for (RnnPath path : {RnnPath::Loop, RnnPath::Dnnl})
    for (int cell = 0; cell < 3; ++cell)
      for (int lbr = 0; lbr < (cell == 1 ? 2 : 1); ++lbr)
        for (int direction = 0; direction < 3; ++direction)
          for (int output = 0; output < (cell == 0 ? 3 : 2); ++output) {
            const int v = cell * 100 + lbr * 50 + direction * 10 + output;  // varies the other choices
            const int threads = 1 + v % 3;
            const int64_t H = v % 2 ? 37 : 5, N = 1 + v % 3, S = v % 4 == 0 ? 1 : 5;
            check({cell, direction, lbr, output, S, N, 3, H, v % 5 != 0, v % 3 != 1}, threads, path);
            check({cell, direction, lbr, output, 7, 2, 4, 67, true, true}, 1 + (v + 1) % 3, path, 0x5eed + v);
            check({cell, direction, lbr, output, 3, 3, 5, 97, v % 2 == 0, v % 2 == 1}, 2 + v % 2, path);
            check({cell, direction, lbr, output, 0, 2, 3, 5, true, v % 2 == 0}, threads, path);  // no steps
          }
}
