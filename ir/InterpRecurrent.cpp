// Interpreter kernel for the recurrent op `rnn`: ONNX's LSTM, GRU and RNN equations as plain loops over time steps,
// computed in f64 (stored in the result's dtype), the reference the compiled code is tested against.
#include <cmath>

#include "ir/InterpInternal.h"
#include "ir/Recurrent.h"

namespace dscc::interp {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

}  // namespace

bool runRnn(OpCtx& c, std::vector<Tensor>& out) {
  RnnAttrs a;
  Location where;
  if (std::string e = readRnnAttrs(c.op, a, where); !e.empty()) return c.fail(e);
  const Tensor& x = *c.in[0];
  if (x.rank() != 3) return c.fail("the input x of rnn must have rank 3, got " + x.typeStr());
  const int64_t S = x.shape[0], N = x.shape[1], I = x.shape[2], D = a.dirs(), H = a.hidden, G = a.gates();
  // The verifier's rule, checked again on the actual sizes so no read goes out of bounds.
  const Shape want[] = {{}, {D, G * H, I}, {D, G * H, H}, {D, 2 * G * H}, {D, N, H}, {D, N, H}};
  static const char* const roles[] = {"x", "w", "r", "b", "initial_h", "initial_c"};
  for (size_t i = 1; i < c.in.size(); ++i)
    if (c.in[i]->shape != want[i])
      return c.fail("the " + std::string(roles[i]) + " of rnn is " + c.in[i]->typeStr() + ", expected shape " +
                    shapeStr(want[i]));
  const Tensor* w = c.in[1];
  const Tensor* r = c.in[2];
  const Tensor* b = c.in.size() > 3 ? c.in[3] : nullptr;
  const Tensor* h0 = c.in.size() > 4 ? c.in[4] : nullptr;
  const Tensor* c0 = c.in.size() > 5 ? c.in[5] : nullptr;

  Tensor y = Tensor::zeros(c.outDType(), a.output == RnnOutput::Y ? Shape{S, D, N, H} : Shape{D, N, H});
  std::vector<double> h(N * H), cs(N * H), gx(G * H), gh(G * H), rh(H);
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = a.direction == RnnDirection::Reverse || d == 1;
    for (int64_t k = 0; k < N * H; ++k) {
      h[k] = h0 ? h0->getF(d * N * H + k) : 0.0;
      cs[k] = c0 ? c0->getF(d * N * H + k) : 0.0;
    }
    auto W = [&](int64_t g, int64_t i) { return w->getF((d * G * H + g) * I + i); };
    auto R = [&](int64_t g, int64_t j) { return r->getF((d * G * H + g) * H + j); };
    auto Wb = [&](int64_t g) { return b ? b->getF(d * 2 * G * H + g) : 0.0; };
    auto Rb = [&](int64_t g) { return b ? b->getF(d * 2 * G * H + G * H + g) : 0.0; };
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = reverse ? S - 1 - s : s;
      for (int64_t n = 0; n < N; ++n) {
        double* hn = &h[n * H];
        double* cn = &cs[n * H];
        // x_t W^T + Wb and h_{t-1} R^T + Rb, per gate row.
        for (int64_t g = 0; g < G * H; ++g) {
          double sx = Wb(g), sh = Rb(g);
          for (int64_t i = 0; i < I; ++i) sx += x.getF((t * N + n) * I + i) * W(g, i);
          for (int64_t j = 0; j < H; ++j) sh += hn[j] * R(g, j);
          gx[g] = sx;
          gh[g] = sh;
        }
        if (a.cell == RnnCell::Lstm) {  // ONNX gate order i, o, f, c
          for (int64_t k = 0; k < H; ++k) {
            double ig = sigmoid(gx[k] + gh[k]), og = sigmoid(gx[H + k] + gh[H + k]);
            double fg = sigmoid(gx[2 * H + k] + gh[2 * H + k]), cg = std::tanh(gx[3 * H + k] + gh[3 * H + k]);
            cn[k] = fg * cn[k] + ig * cg;
            hn[k] = og * std::tanh(cn[k]);
          }
        } else if (a.cell == RnnCell::Gru) {  // ONNX gate order z, r, h
          std::vector<double> z(H), hh(H);
          for (int64_t k = 0; k < H; ++k) {
            z[k] = sigmoid(gx[k] + gh[k]);
            rh[k] = sigmoid(gx[H + k] + gh[H + k]);
          }
          for (int64_t k = 0; k < H; ++k) {
            double rec;
            if (a.linearBeforeReset) {
              rec = rh[k] * gh[2 * H + k];  // r * (h R_h^T + Rb_h)
            } else {
              rec = Rb(2 * H + k);  // (r * h) R_h^T + Rb_h
              for (int64_t j = 0; j < H; ++j) rec += rh[j] * hn[j] * R(2 * H + k, j);
            }
            hh[k] = std::tanh(gx[2 * H + k] + rec);
          }
          for (int64_t k = 0; k < H; ++k) hn[k] = (1.0 - z[k]) * hh[k] + z[k] * hn[k];
        } else {
          for (int64_t k = 0; k < H; ++k) hn[k] = std::tanh(gx[k] + gh[k]);
        }
        if (a.output == RnnOutput::Y)
          for (int64_t k = 0; k < H; ++k) y.setF(((t * D + d) * N + n) * H + k, hn[k]);
      }
    }
    if (a.output != RnnOutput::Y) {
      const std::vector<double>& fin = a.output == RnnOutput::YH ? h : cs;
      for (int64_t k = 0; k < N * H; ++k) y.setF(d * N * H + k, fin[k]);
    }
  }
  out.push_back(std::move(y));
  return true;
}

}  // namespace dscc::interp
