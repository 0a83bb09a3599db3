// rnnDnnl: ONNX LSTM, GRU and RNN layers through oneDNN's RNN primitives, made for the call's sizes, cached by shape, one per direction and batch slice on the context's threads.
#include "runtime/Recurrent.h"

#ifdef DSCC_HAVE_DNNL
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/Context.h"
#include "runtime/DnnlPrims.h"

namespace dscc::runtime {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

// oneDNN's LSTM gates are i, f, c~, o; ONNX's i, o, f, c: oneDNN gate k is ONNX gate kLstmGate[k]. GRU (z r h
// and u r o) and RNN (one gate) agree.
constexpr int kLstmGate[4] = {0, 2, 3, 1};

int onnxGate(int cell, int k) { return cell == 0 ? kLstmGate[k] : k; }

// One direction's primitive for one batch-slice size, and how its weights get into its layouts.
struct RnnPrim {
  dnnl::primitive p;
  memory::desc scratch, src, iter, wl, wi, bias, dst;
  memory::desc wlPlain, wiPlain;                // ONNX's layout (ldgoi) in oneDNN's gate order
  std::shared_ptr<dnnl::reorder> wlIn, wiIn;   // plain -> the primitive's (null: the same)
};

dnnlw::PrimCacheOf<RnnPrim>& rnnCache() {
  static dnnlw::PrimCacheOf<RnnPrim> c;
  return c;
}

// The primitive of `cell` over [T, n, I] -> [T, n, H] in one direction, every state argument present (zeros
// stand for absent ones, so one primitive serves calls with and without them). Weights in the layouts oneDNN
// chooses (`any`): for f32 inference its packed GEMM ones.
std::shared_ptr<RnnPrim> makeRnnPrim(int cell, bool lbr, bool reverse, int64_t T, int64_t n, int64_t I, int64_t H) {
  const int64_t G = cell == 0 ? 4 : cell == 1 ? 3 : 1, GB = cell == 1 && lbr ? 4 : G;
  memory::desc src({T, n, I}, kF32, Tag::tnc), dst({T, n, H}, kF32, Tag::tnc);
  memory::desc iter({1, 1, n, H}, kF32, Tag::ldnc), bias({1, 1, GB, H}, kF32, Tag::ldgo);
  memory::desc wlAny({1, 1, I, G, H}, kF32, Tag::any), wiAny({1, 1, H, G, H}, kF32, Tag::any);
  const auto dir = reverse ? dnnl::rnn_direction::unidirectional_right2left : dnnl::rnn_direction::unidirectional_left2right;
  const auto inf = dnnl::prop_kind::forward_inference;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto p = std::make_shared<RnnPrim>();
  auto fill = [&](const auto& pd) {
    p->scratch = pd.scratchpad_desc(), p->wl = pd.weights_layer_desc(), p->wi = pd.weights_iter_desc();
  };
  if (cell == 0) {
    dnnl::lstm_forward::primitive_desc pd(
        dnnl::lstm_forward::desc(inf, dir, src, iter, iter, wlAny, wiAny, bias, dst, iter, iter), attr, dnnlw::cpu());
    p->p = dnnl::lstm_forward(pd), fill(pd);
  } else if (cell == 1 && lbr) {
    dnnl::lbr_gru_forward::primitive_desc pd(
        dnnl::lbr_gru_forward::desc(inf, dir, src, iter, wlAny, wiAny, bias, dst, iter), attr, dnnlw::cpu());
    p->p = dnnl::lbr_gru_forward(pd), fill(pd);
  } else if (cell == 1) {
    dnnl::gru_forward::primitive_desc pd(dnnl::gru_forward::desc(inf, dir, src, iter, wlAny, wiAny, bias, dst, iter),
                                         attr, dnnlw::cpu());
    p->p = dnnl::gru_forward(pd), fill(pd);
  } else {
    dnnl::vanilla_rnn_forward::primitive_desc pd(
        dnnl::vanilla_rnn_forward::desc(inf, dnnl::algorithm::eltwise_tanh, dir, src, iter, wlAny, wiAny, bias, dst,
                                        iter),
        attr, dnnlw::cpu());
    p->p = dnnl::vanilla_rnn_forward(pd), fill(pd);
  }
  p->src = src, p->iter = iter, p->bias = bias, p->dst = dst;
  // ONNX's W [G*H, I] of one direction is oneDNN's ldgoi (gate, output, input with the input innermost).
  p->wlPlain = memory::desc({1, 1, I, G, H}, kF32, Tag::ldgoi);
  p->wiPlain = memory::desc({1, 1, H, G, H}, kF32, Tag::ldgoi);
  // Reorders with their own scratchpad (packing to oneDNN's GEMM layout needs one): they run once per weight.
  auto reorder = [](const memory::desc& from, const memory::desc& to) -> std::shared_ptr<dnnl::reorder> {
    if (from == to) return nullptr;
    return std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(dnnlw::cpu(), from, dnnlw::cpu(), to));
  };
  p->wlIn = reorder(p->wlPlain, p->wl);
  p->wiIn = reorder(p->wiPlain, p->wi);
  return p;
}

// One direction's W or R ([G*H, K] of ONNX) in the primitive's layout `to` (`plainDesc`, `in`: see RnnPrim),
// written to `out` (to.get_size() bytes).
void prepareWeight(int cell, int64_t G, int64_t H, int64_t K, const float* onnx, const memory::desc& plainDesc,
                   const memory::desc& to, const std::shared_ptr<dnnl::reorder>& in, void* out) {
  // The gates in oneDNN's order first (a copy only for the LSTM).
  std::vector<float> perm;
  const float* plain = onnx;
  if (cell == 0) {
    perm.resize(static_cast<size_t>(G * H * K));
    for (int64_t k = 0; k < G; ++k)
      std::memcpy(perm.data() + k * H * K, onnx + onnxGate(cell, int(k)) * H * K, sizeof(float) * size_t(H * K));
    plain = perm.data();
  }
  if (!in) {
    std::memcpy(out, plain, to.get_size());
    return;
  }
  omp_set_num_threads(1);
  memory from(plainDesc, dnnlw::cpu(), const_cast<float*>(plain)), into(to, dnnlw::cpu(), out);
  dnnl::stream s(dnnlw::cpu());
  in->execute(s, from, into);
  s.wait();
}

// The weight of direction `d` (`which` 0: W, 1: R) for `p`: kept by the context under `key` when it is nonzero
// (a model's constant), else made into `local`.
const void* readyWeight(dscc_context* ctx, const RnnCall& c, const RnnPrim& p, int64_t d, int which,
                        std::vector<uint8_t>& local) {
  const int64_t G = c.gates(), H = c.hidden, K = which == 0 ? c.input : c.hidden;
  const float* onnx = (which == 0 ? c.w : c.r) + d * G * H * K;
  const memory::desc& to = which == 0 ? p.wl : p.wi;
  const memory::desc& plain = which == 0 ? p.wlPlain : p.wiPlain;
  const std::shared_ptr<dnnl::reorder>& in = which == 0 ? p.wlIn : p.wiIn;
  // Without a reorder or a gate permutation the caller's weight is the primitive's as it is.
  if (!in && c.cell != 0) return onnx;
  const uint64_t key = which == 0 ? c.wKey : c.rKey;
  auto make = [&](void* out) { prepareWeight(c.cell, G, H, K, onnx, plain, to, in, out); };
  if (key) {
    // The layout is part of the key (another batch slice's primitive may pack differently): the whole
    // plain-data descriptor, its padding bytes zeroed by oneDNN's initialisation.
    dnnlw::Dims k = {int64_t(key), int64_t(reinterpret_cast<uintptr_t>(onnx)), 0x524e4e /* "RNN" */, c.cell, d, which};
    int64_t words[sizeof(dnnl_memory_desc_t) / sizeof(int64_t)];
    std::memcpy(words, &to.data, sizeof(words));
    k.insert(k.end(), std::begin(words), std::end(words));
    if (const void* kept = ctx->convWeights.get(k, to.get_size(), make)) return kept;
  }
  local.resize(to.get_size() + 64);
  void* out = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(local.data()) + 63) & ~uintptr_t(63));
  make(out);
  return out;
}

// One slice's work: direction d, batch rows [n0, n0 + n).
struct Slice {
  int64_t d, n0, n;
  const RnnPrim* prim;
  const void *wl, *wi;
};

// A 64-byte aligned region of `bytes` from `buf`, which grows as needed.
float* region(dnnlw::Scratch::Buf& buf, size_t bytes) { return static_cast<float*>(buf.get(bytes)); }

void runSlice(const RnnCall& c, const Slice& s, const float* bias, const float* zeros) {
  const int64_t T = c.seq, N = c.batch, I = c.input, H = c.hidden, D = c.dirs(), n = s.n;
  dnnlw::Scratch& sc = dnnlw::scratch();
  // x's rows of the slice: x itself when the slice is the whole batch, else a copy ([T, n, I] dense).
  const float* x = c.x;
  if (n != N) {
    float* xs = region(sc.src, sizeof(float) * size_t(T * n * I));
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(xs + t * n * I, c.x + (t * N + s.n0) * I, sizeof(float) * size_t(n * I));
    x = xs;
  }
  // Y [T, D, N, H] is the primitive's [T, n, H] only for one direction and the whole batch.
  const bool yDirect = c.output == 0 && D == 1 && n == N;
  // dst, then the final h and c where they are not written in place.
  float* work = region(sc.dst, sizeof(float) * size_t((yDirect ? 0 : T * n * H) + 2 * n * H));
  float* y = yDirect ? c.y : work;
  float* slot = work + (yDirect ? 0 : T * n * H);
  float* stateOut = c.y + (s.d * N + s.n0) * H;  // y_h or y_c of this slice, [n, H] dense
  float* hOut = c.output == 1 ? stateOut : slot;
  float* cOut = c.output == 2 ? stateOut : slot + n * H;
  const int64_t st = (s.d * N + s.n0) * H;
  const float* h0 = c.h0 ? c.h0 + st : zeros;
  const float* c0 = c.c0 ? c.c0 + st : zeros;
  const RnnPrim& p = *s.prim;
  auto mem = [](const memory::desc& m, const void* ptr) { return memory(m, dnnlw::cpu(), const_cast<void*>(ptr)); };
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC_LAYER, mem(p.src, x)},        {DNNL_ARG_SRC_ITER, mem(p.iter, h0)},
      {DNNL_ARG_WEIGHTS_LAYER, mem(p.wl, s.wl)},  {DNNL_ARG_WEIGHTS_ITER, mem(p.wi, s.wi)},
      {DNNL_ARG_BIAS, mem(p.bias, bias)},         {DNNL_ARG_DST_LAYER, mem(p.dst, y)},
      {DNNL_ARG_DST_ITER, mem(p.iter, hOut)}};
  if (c.cell == 0) {
    args.emplace(DNNL_ARG_SRC_ITER_C, mem(p.iter, c0));
    args.emplace(DNNL_ARG_DST_ITER_C, mem(p.iter, cOut));
  }
  omp_set_num_threads(1);  // this pool thread is the only one working on its slice
  args.emplace(DNNL_ARG_SCRATCHPAD, mem(p.scratch, sc.pad.get(p.scratch.get_size())));
  dnnl::stream strm(dnnlw::cpu());
  p.p.execute(strm, args);
  strm.wait();
  if (c.output == 0 && !yDirect)
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(c.y + ((t * D + s.d) * N + s.n0) * H, y + t * n * H, sizeof(float) * size_t(n * H));
}

// rnnDnnl's work: the slices' primitives and weights made here, then the slices run on the pool.
dscc_status rnnDnnlSlices(dscc_context* ctx, const RnnCall& c) {
  omp_set_num_threads(1);  // no OpenMP team beside the pool's threads, here (making primitives) or in the slices
  const int64_t D = c.dirs(), G = c.gates(), H = c.hidden, N = c.batch;
  const int threads = ctx->pool.numThreads();
  // Slices: the directions, each cut into batch slices so that there are about as many slices as threads.
  const int64_t cuts = std::min<int64_t>(N, std::max<int64_t>(1, (threads + D - 1) / D));
  const int64_t per = (N + cuts - 1) / cuts, count = (N + per - 1) / per;
  // Bias per direction in oneDNN's form: Wb + Rb per gate, and lbr_gru's Rb of the h gate as a fourth.
  const bool lbr = c.cell == 1 && c.lbr;
  const int64_t GB = lbr ? 4 : G;
  std::vector<float> bias(static_cast<size_t>(D * GB * H), 0.0f), zeros(static_cast<size_t>(N * H), 0.0f);
  if (c.b)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t k = 0; k < G; ++k) {
        const float* wb = c.b + d * 2 * G * H + onnxGate(c.cell, int(k)) * H;
        const float* rb = wb + G * H;
        float* o = bias.data() + (d * GB + k) * H;
        const bool split = lbr && k == 2;  // linear_before_reset: Rb_h inside r * (...), the fourth bias
        for (int64_t j = 0; j < H; ++j) o[j] = wb[j] + (split ? 0.0f : rb[j]);
        if (split) std::memcpy(bias.data() + (d * GB + 3) * H, rb, sizeof(float) * size_t(H));
      }
  // The primitives (at most two slice sizes) and their weights, made before the slices run.
  std::vector<Slice> slices;
  std::vector<std::vector<uint8_t>> local(static_cast<size_t>(4 * D));
  std::vector<std::shared_ptr<RnnPrim>> keep;  // alive past the cache's eviction while the slices run
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = c.direction == 1 || d == 1;
    std::shared_ptr<RnnPrim> prims[2];
    const void* weights[2][2] = {};
    for (int64_t i = 0; i < count; ++i) {
      const int64_t n0 = i * per, n = std::min(per, N - n0);
      const int which = n == per ? 0 : 1;
      if (!prims[which]) {
        dnnlw::Dims key = {0x524e4e, c.cell, lbr, reverse, c.seq, n, c.input, H};
        prims[which] = rnnCache().get(key, [&] { return makeRnnPrim(c.cell, lbr, reverse, c.seq, n, c.input, H); });
        for (int k = 0; k < 2; ++k)
          weights[which][k] = readyWeight(ctx, c, *prims[which], d, k, local[size_t(4 * d + 2 * which + k)]);
      }
      slices.push_back({d, n0, n, prims[which].get(), weights[which][0], weights[which][1]});
    }
    for (auto& p : prims)
      if (p) keep.push_back(p);
  }
  ctx->pool.parallelFor(0, int64_t(slices.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) runSlice(c, slices[size_t(i)], bias.data() + slices[size_t(i)].d * GB * H, zeros.data());
  });
  return DSCC_OK;
}

}  // namespace

dscc_status rnnDnnl(dscc_context* ctx, const RnnCall& c) {
  if (c.seq == 0 || c.batch == 0 || c.input == 0) return DSCC_UNAVAILABLE;
  try {
    return rnnDnnlSlices(ctx, c);
  } catch (const dnnl::error&) {
    return DSCC_UNAVAILABLE;  // a case oneDNN does not take: the caller's loop runs it
  }
}

}  // namespace dscc::runtime

#else

namespace dscc::runtime {
dscc_status rnnDnnl(dscc_context*, const RnnCall&) { return DSCC_UNAVAILABLE; }
}  // namespace dscc::runtime

#endif
