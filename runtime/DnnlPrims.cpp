// The shared parts of the oneDNN-backed window calls (declared in runtime/DnnlPrims.h).
#include "runtime/DnnlPrims.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#ifdef DSCC_HAVE_DNNL
#include <omp.h>
#endif

#include "runtime/Context.h"

namespace dscc::runtime::dnnlw {

std::string str(const int64_t* v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}


std::string checkAxis(int i, Axis& a) {
  const std::string at = " (spatial dim " + std::to_string(i) + ")";
  if (a.in < 0 || a.out < 0 || a.k < 1 || a.s < 1 || a.d < 1 || a.pb < 0 || a.pe < 0)
    return "sizes must be >= 0, kernel, strides and dilations >= 1, pads >= 0" + at;
  // An input of size 0 (a symbol at 0) whose padding is narrower than the window: the size rule gives an empty
  // output there, which reads nothing (the interpreter's empty result; random seed 16002 program 4, --windows).
  if (a.in == 0 && a.out == 0) return "";
  const int64_t span = a.d * (a.k - 1) + 1, room = a.in + a.pb + a.pe - span;
  // Ceil mode's one window may hang past the end padding by less than a stride (ir/Window.h windowLeastRoom):
  // its size rule then gives 1.
  const bool hangs = room < 0 && room > -a.s && a.out == 1 && a.in + a.pb >= 1;
  if (room < 0 && !hangs)
    return "the window spans " + std::to_string(span) + " elements, more than the padded input's " +
           std::to_string(a.in + a.pb + a.pe) + at;
  const int64_t floorOut = room / a.s + 1;
  const int64_t ceilOut = std::min((room + a.s - 1) / a.s, (a.in + a.pb - 1) / a.s) + 1;
  if (a.out != floorOut && a.out != ceilOut)
    return "output size " + std::to_string(a.out) + " is neither " + std::to_string(floorOut) + " nor (ceil mode) " +
           std::to_string(ceilOut) + at;
  a.peUsed = std::max(a.pe, (a.out - 1) * a.s + span - a.in - a.pb);
  return "";
}

/// The spatial axes of a conv or pool call (kernel sizes `k`), each checked by
/// checkAxis, and the element counts of the input and output: "" or why not.
std::string windowAxes(int n_spatial, const int64_t* x_dims, const int64_t* y_dims, const int64_t* k,
                       const int64_t* strides, const int64_t* dilations, const int64_t* pads_begin,
                       const int64_t* pads_end, std::vector<Axis>& ax, int64_t& inN, int64_t& outN) {
  ax.assign(static_cast<size_t>(n_spatial), Axis{});
  for (int i = 0; i < n_spatial; ++i) {
    ax[i] = {x_dims[2 + i], y_dims[2 + i], k[i], strides[i], dilations[i], pads_begin[i], pads_end[i], 0};
    if (std::string e = checkAxis(i, ax[i]); !e.empty()) return e;
  }
  inN = outN = 1;
  for (int i = 0; i < n_spatial + 2; ++i) {
    inN *= x_dims[i];
    outN *= y_dims[i];
  }
  return "";
}


void fixPoolEdges(const std::vector<Axis>& ax, bool avg, bool includePad, bool channelsLast, int64_t channels,
                  int64_t outN, float* y) {
  int64_t plane = 1;
  for (const Axis& a : ax) plane *= a.out;
  // The spatial position of flat output element q.
  auto spatial = [&](int64_t q) { return channelsLast ? (q / std::max<int64_t>(channels, 1)) % plane : q % plane; };
  // oneDNN divided by the whole kernel; the divisor is the window's points inside the input, or with
  // count_include_pad inside the padded extent (a ceil-mode window reaching past the end padding counts only
  // up to it, docs/ir.md). Both counts are products over the spatial dims, so per-dim factors rescale.
  if (avg) {
    bool any = false;
    std::vector<std::vector<double>> f(ax.size());
    for (size_t i = 0; i < ax.size(); ++i) {
      const Axis& a = ax[i];
      f[i].assign(static_cast<size_t>(a.out), 1.0);
      for (int64_t o = 0; o < a.out; ++o) {
        int64_t cnt = 0;
        for (int64_t k = 0; k < a.k; ++k) {
          const int64_t pos = o * a.s - a.pb + k * a.d;
          cnt += includePad ? pos < a.in + a.pe : pos >= 0 && pos < a.in;
        }
        // No point counted: 0/0, NaN as in the interpreter (the sum is 0 there).
        if (cnt != a.k) f[i][size_t(o)] = cnt ? double(a.k) / double(cnt) : std::nan(""), any = true;
      }
    }
    if (!any) return;
    for (int64_t q = 0; q < outN; ++q) {
      int64_t rem = spatial(q);
      double s = 1;
      for (size_t i = ax.size(); i-- > 0;) {
        s *= f[i][size_t(rem % ax[i].out)];
        rem /= ax[i].out;
      }
      if (s != 1) y[q] = std::isnan(s) ? std::nanf("") : float(double(y[q]) * s);
    }
    return;
  }
  // A max window lying wholly in the padding holds no input point: -inf, as in the interpreter (oneDNN
  // leaves the lowest finite float there, which a following conv turned into a finite value where the
  // interpreter has NaN; random program seed 17003 #15). Empty along any one dim means empty.
  std::vector<std::vector<bool>> empty(ax.size());
  bool any = false;
  for (size_t i = 0; i < ax.size(); ++i) {
    const Axis& a = ax[i];
    empty[i].assign(static_cast<size_t>(a.out), true);
    for (int64_t o = 0; o < a.out; ++o) {
      for (int64_t k = 0; k < a.k; ++k) {
        const int64_t pos = o * a.s - a.pb + k * a.d;
        if (pos >= 0 && pos < a.in) empty[i][size_t(o)] = false;
      }
      any = any || empty[i][size_t(o)];
    }
  }
  if (!any) return;
  for (int64_t q = 0; q < outN; ++q) {
    int64_t rem = spatial(q);
    bool none = false;
    for (size_t i = ax.size(); i-- > 0;) {
      none = none || empty[i][size_t(rem % ax[i].out)];
      rem /= ax[i].out;
    }
    if (none) y[q] = -INFINITY;
  }
}

#ifdef DSCC_HAVE_DNNL

dnnl::engine& cpu() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::memory::dims denseStrides(const dnnl::memory::dims& d) {
  dnnl::memory::dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(d[i], 1);
  return s;
}


/// A convolution run in the layouts oneDNN chooses for it (`format_tag::any`: blocked nChw16c-style ones,
/// for which it has direct JIT kernels, depthwise ones included) with reorders from and to the caller's dense
/// NCHW `xm`, `wm`, `ym`. Why: on dense NCHW oneDNN has only its im2col + GEMM kernel, which ran MobileNetV3's
/// depthwise and 3-channel stem convolutions at 2-5 GFLOP/s (bench/results/2026-12-06-vision.md). A 1x1
/// convolution of stride 1 without padding is a plain GEMM on dense NCHW already: it keeps the caller's layout.
std::shared_ptr<Prim> makeConvPrim(const dnnl::memory::desc& xm, const dnnl::memory::desc& wm,
                                   const dnnl::memory::desc& bm, const dnnl::memory::desc& ym,
                                   const dnnl::memory::dims& st, const dnnl::memory::dims& dil,
                                   const dnnl::memory::dims& pl, const dnnl::memory::dims& pr, bool pointwise) {
  using dnnl::memory;
  if (pointwise) {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, xm,
                                      wm, bm, ym, st, dil, pl, pr);
    return makeWeightedPrim<dnnl::convolution_forward>(d);
  }
  auto any = [](const memory::desc& m) { return memory::desc(m.dims(), m.data_type(), memory::format_tag::any); };
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(xm),
                                    any(wm), bm, any(ym), st, dil, pl, pr);
  std::shared_ptr<Prim> p = makeWeightedPrim<dnnl::convolution_forward>(d);
  p->srcPlain = xm, p->wPlain = wm, p->dstPlain = ym;
  p->srcIn = reorderFor(xm, p->src);
  p->wIn = reorderFor(wm, p->weights);
  p->dstOut = reorderFor(p->dst, ym);
  return p;
}

std::shared_ptr<Prim> makePoolPrim(const dnnl::pooling_v2_forward::desc& d) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::pooling_v2_forward::primitive_desc pd(d, attr, cpu());
  auto p = std::make_shared<Prim>();
  p->p = dnnl::pooling_v2_forward(pd);
  p->scratch = pd.scratchpad_desc(), p->src = pd.src_desc(), p->dst = pd.dst_desc();
  return p;
}

std::shared_ptr<dnnl::reorder> reorderFor(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from == to) return nullptr;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(cpu(), from, cpu(), to, attr);
  return std::make_shared<dnnl::reorder>(pd);
}


PrimCache& cache() {
  static PrimCache c;
  return c;
}


Split split(int64_t N, int64_t units, int threads) {
  Split s;
  s.batch = N > 1;
  s.total = s.batch ? N : units;
  s.count = std::max<int64_t>(1, std::min<int64_t>(s.total, threads));
  s.per = (s.total + s.count - 1) / s.count;
  s.count = (s.total + s.per - 1) / s.per;
  return s;
}


Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

void execute(const Prim& p, std::unordered_map<int, dnnl::memory> args) {
  omp_set_num_threads(1);  // this pool thread is the only one working on its slice
  args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p.scratch, cpu(), scratch().pad.get(p.scratch.get_size())));
  dnnl::stream s(cpu());
  p.p.execute(s, args);
  s.wait();
}

/// Runs `r` from `from` (a dense buffer of the caller's) into `buf` in `to`'s layout; returns `buf`'s memory.
dnnl::memory reorderInto(const dnnl::reorder& r, const dnnl::memory::desc& fromDesc, const void* from,
                         const dnnl::memory::desc& to, Scratch::Buf& buf) {
  dnnl::memory out(to, cpu(), buf.get(to.get_size()));
  dnnl::memory in(fromDesc, cpu(), const_cast<void*>(from));
  dnnl::stream s(cpu());
  r.execute(s, in, out);
  s.wait();
  return out;
}

/// Runs a weighted primitive on one slice: dense `x`, `w`, `bias`, `y` of the caller, reordered into and out
/// of the primitive's own layouts where it has them.
void executeWeighted(const Prim& p, const float* x, const float* w, const float* bias, float* y,
                     const void* wReady, std::unordered_map<int, dnnl::memory> extra) {
  using dnnl::memory;
  omp_set_num_threads(1);
  Scratch& sc = scratch();
  std::unordered_map<int, memory> args = std::move(extra);
  args.emplace(DNNL_ARG_SRC, p.srcIn ? reorderInto(*p.srcIn, p.srcPlain, x, p.src, sc.src)
                                     : memory(p.src, cpu(), const_cast<float*>(x)));
  args.emplace(DNNL_ARG_WEIGHTS, wReady  ? memory(p.weights, cpu(), const_cast<void*>(wReady))
                                 : p.wIn ? reorderInto(*p.wIn, p.wPlain, w, p.weights, sc.weights)
                                         : memory(p.weights, cpu(), const_cast<float*>(w)));
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias, cpu(), const_cast<float*>(bias)));
  memory dst = p.dstOut ? memory(p.dst, cpu(), sc.dst.get(p.dst.get_size())) : memory(p.dst, cpu(), y);
  args.emplace(DNNL_ARG_DST, dst);
  execute(p, std::move(args));
  if (p.dstOut) {
    memory out(p.dstPlain, cpu(), y);
    dnnl::stream s(cpu());
    p.dstOut->execute(s, dst, out);
    s.wait();
  }
}


const void* readyWeight(dscc_context* ctx, const Prim& p, const float* ws, uint64_t w_key) {
  if (!w_key || !p.wIn) return nullptr;
  Dims key = {int64_t(w_key), int64_t(reinterpret_cast<uintptr_t>(ws))};
  // The layout is part of the key: the primitive for other sizes may want the weight in another one.
  // The whole (plain-data) descriptor is, its padding bytes zeroed by oneDNN's initialisation.
  int64_t words[sizeof(dnnl_memory_desc_t) / sizeof(int64_t)];
  std::memcpy(words, &p.weights.data, sizeof(words));
  key.insert(key.end(), std::begin(words), std::end(words));
  return ctx->convWeights.get(key, p.weights.get_size(), [&](void* buf) {
    omp_set_num_threads(1);
    dnnl::memory in(p.wPlain, cpu(), const_cast<float*>(ws)), out(p.weights, cpu(), buf);
    dnnl::stream s(cpu());
    p.wIn->execute(s, in, out);
    s.wait();
  });
}

#endif

}  // namespace dscc::runtime::dnnlw
