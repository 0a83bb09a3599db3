// dscc_conv_f32, dscc_conv_transpose_f32 and dscc_pool_f32: checked sizes, oneDNN primitives made for the sizes at run time and cached by shape, dense image or channel slices run on the context's threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef DSCC_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "runtime/Context.h"
#include "runtime/Dnnl.h"
#include "runtime/dscc_runtime.h"

namespace dscc::runtime {
namespace {

using Dims = std::vector<int64_t>;

std::string str(const int64_t* v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// The window of one spatial dim, with oneDNN's end padding: ceil mode's last window may reach past the
/// stated end padding, so the padding oneDNN gets is what the output size needs (never less than stated).
struct Axis {
  int64_t in, out, k, s, d, pb, pe, peUsed;
};

/// Checks one spatial dim against the size rule of docs/ir.md (floor, or ceil mode's); "" or why not.
std::string checkAxis(int i, Axis& a) {
  const std::string at = " (spatial dim " + std::to_string(i) + ")";
  if (a.in < 0 || a.out < 0 || a.k < 1 || a.s < 1 || a.d < 1 || a.pb < 0 || a.pe < 0)
    return "sizes must be >= 0, kernel, strides and dilations >= 1, pads >= 0" + at;
  // An input of size 0 (a symbol at 0) whose padding is narrower than the window: the size rule gives an empty
  // output there, which reads nothing (the interpreter's empty result; random seed 16002 program 4, --windows).
  if (a.in == 0 && a.out == 0) return "";
  const int64_t span = a.d * (a.k - 1) + 1, room = a.in + a.pb + a.pe - span;
  if (room < 0)
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

/// A primitive and its scratchpad size; primitives run concurrently, each with its own scratchpad. A primitive
/// that runs in its own (blocked) layouts has the reorders from and to the caller's dense ones.
struct Prim {
  dnnl::primitive p;
  dnnl::memory::desc scratch, src, weights, bias, dst;
  /// Set where the primitive's layout differs from the caller's: dense src -> src, dense weights -> weights,
  /// dst -> dense dst.
  std::shared_ptr<dnnl::reorder> srcIn, wIn, dstOut;
  dnnl::memory::desc srcPlain, wPlain, dstPlain;
};

/// The reorder from `from` to `to`, or null where the layouts agree (nothing to do).
std::shared_ptr<dnnl::reorder> reorderFor(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

/// The inference primitive of kind `Fwd` (convolution_forward, deconvolution_forward)
/// for `d`, with a user scratchpad (each call brings its own).
template <class Fwd>
std::shared_ptr<Prim> makeWeightedPrim(const typename Fwd::desc& d) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  typename Fwd::primitive_desc pd(d, attr, cpu());
  auto p = std::make_shared<Prim>();
  p->p = Fwd(pd);
  p->scratch = pd.scratchpad_desc(), p->src = pd.src_desc(), p->weights = pd.weights_desc();
  p->bias = pd.bias_desc(), p->dst = pd.dst_desc();
  return p;
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

std::shared_ptr<dnnl::reorder> reorderFor(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from == to) return nullptr;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(cpu(), from, cpu(), to, attr);
  return std::make_shared<dnnl::reorder>(pd);
}

/// Primitives by shape key, least recently used dropped beyond kCapacity (each holds generated code).
class PrimCache {
 public:
  static constexpr size_t kCapacity = 128;
  template <class Make>
  std::shared_ptr<Prim> get(const Dims& key, Make&& make) {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.second);
        return it->second.first;
      }
    }
    // Made outside the lock (oneDNN may JIT for milliseconds); two threads may make the same one once.
    std::shared_ptr<Prim> p = make();
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second.first;
    lru_.push_front(key);
    map_.emplace(key, std::make_pair(p, lru_.begin()));
    while (map_.size() > kCapacity) {
      map_.erase(lru_.back());
      lru_.pop_back();
    }
    return p;
  }

 private:
  std::mutex mu_;
  std::list<Dims> lru_;
  std::map<Dims, std::pair<std::shared_ptr<Prim>, std::list<Dims>::iterator>> map_;
};

PrimCache& cache() {
  static PrimCache c;
  return c;
}

/// How a call is split over the context's threads: slices of whole images when the batch has several, else
/// (one image) slices of channel units. Either way every slice is a dense NCHW tensor, the layout oneDNN's
/// fast (gemm-based) kernels take; a strided channel slice of several images would get its reference kernel.
struct Split {
  bool batch = true;    ///< slices of images (else of channel units of the one image)
  int64_t per = 1;      ///< images or units per slice (the last may have fewer)
  int64_t count = 1;    ///< slices
  int64_t total = 1;    ///< images or units in all
  int64_t size(int64_t t) const { return std::min(per, total - t * per); }
};

Split split(int64_t N, int64_t units, int threads) {
  Split s;
  s.batch = N > 1;
  s.total = s.batch ? N : units;
  s.count = std::max<int64_t>(1, std::min<int64_t>(s.total, threads));
  s.per = (s.total + s.count - 1) / s.count;
  s.count = (s.total + s.per - 1) / s.per;
  return s;
}

/// A pool thread's working memory for the calls it runs: grown, never shrunk or zeroed (a call's scratchpad,
/// and the blocked copies of its slice's input, weights and result).
struct Scratch {
  struct Buf {
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
    void* get(size_t n) {
      if (n > size) data.reset(new uint8_t[n + 64]), size = n;
      return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(data.get()) + 63) & ~uintptr_t(63));
    }
  };
  Buf pad, src, weights, dst;
};

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
                     const void* wReady = nullptr) {
  using dnnl::memory;
  omp_set_num_threads(1);
  Scratch& sc = scratch();
  std::unordered_map<int, memory> args;
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

#endif

}  // namespace
}  // namespace dscc::runtime

using dscc::runtime::Axis;
using dscc::runtime::fail;

dscc_status dscc::runtime::convF32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                   const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims,
                                   float* y, int64_t group, const int64_t* strides, const int64_t* dilations,
                                   const int64_t* pads_begin, const int64_t* pads_end, uint64_t w_key) {
  const char* fn = "dscc_conv_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (n_spatial < 1 || n_spatial > 3 || !x_dims || !w_dims || !y_dims || !strides || !dilations || !pads_begin ||
      !pads_end)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": 1 to 3 spatial dims and every size array are needed");
  const int r = n_spatial + 2;
  const int64_t N = x_dims[0], C = x_dims[1], M = w_dims[0];
  const std::string shapes = " (input " + dscc::runtime::str(x_dims, r) + ", weight " + dscc::runtime::str(w_dims, r) +
                             ", output " + dscc::runtime::str(y_dims, r) + ", group " + std::to_string(group) + ")";
  if (group < 1 || N < 0 || C < 0 || M < 0 || C % group || M % group || w_dims[1] * group != C || y_dims[0] != N ||
      y_dims[1] != M)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": channels do not match" + shapes);
  std::vector<Axis> ax;
  int64_t inN = 0, outN = 0;
  if (std::string e = dscc::runtime::windowAxes(n_spatial, x_dims, y_dims, w_dims + 2, strides, dilations, pads_begin,
                                                pads_end, ax, inN, outN);
      !e.empty())
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": " + e + shapes);
  if (outN == 0) return DSCC_OK;
  // An empty input (no channels, or a spatial size of 0 that the padding makes up for): every window reads
  // only zeros of the padding, so each output is its bias; oneDNN takes no empty tensors.
  if (inN == 0) {
    const int64_t plane = outN / (N * M);
    for (int64_t q = 0; q < outN; ++q) y[q] = bias ? bias[q / plane % M] : 0.0f;
    return DSCC_OK;
  }
#ifndef DSCC_HAVE_DNNL
  (void)x, (void)w, (void)bias, (void)y, (void)w_key;
  return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": this runtime was built without oneDNN");
#else
  return dscc::runtime::guarded(ctx, fn, [&]() -> dscc_status {
    using namespace dscc::runtime;
    using dnnl::memory;
    const int64_t G = group, Cg = C / G, Mg = M / G;
    // Channel units of one image's slices: whole groups, or output channels of an ungrouped conv.
    const int64_t units = G > 1 ? G : M;
    const Split sp = split(N, units, ctx->pool.numThreads());
    memory::dims st, dil, pl, pr, ks, inSp, outSp;
    for (const Axis& a : ax) {
      inSp.push_back(a.in), outSp.push_back(a.out), ks.push_back(a.k), st.push_back(a.s);
      dil.push_back(a.d - 1), pl.push_back(a.pb), pr.push_back(a.peUsed);
    }
    memory::dims xFull = {N, C}, yFull = {N, M};
    xFull.insert(xFull.end(), inSp.begin(), inSp.end());
    yFull.insert(yFull.end(), outSp.begin(), outSp.end());
    const memory::dims xStr = denseStrides(xFull), yStr = denseStrides(yFull);
    int64_t kvol = 1;
    for (int64_t k : ks) kvol *= k;
    // One slice's primitive: `nb` images of `u` units (groups or output channels), dense.
    auto primFor = [&](int64_t nb, int64_t u) {
      Dims key = {int64_t(n_spatial), nb, C, M, G, u, bias != nullptr};
      for (const Axis& a : ax) key.insert(key.end(), {a.in, a.out, a.k, a.s, a.d, a.pb, a.peUsed});
      return cache().get(key, [&] {
        const int64_t cin = G > 1 ? u * Cg : C, cout = G > 1 ? u * Mg : u, g = G > 1 ? u : 1;
        memory::dims xd = {nb, cin}, yd = {nb, cout}, wd;
        xd.insert(xd.end(), inSp.begin(), inSp.end());
        yd.insert(yd.end(), outSp.begin(), outSp.end());
        if (G > 1) wd = {g, Mg, Cg};
        else wd = {u, C};
        wd.insert(wd.end(), ks.begin(), ks.end());
        memory::desc xm(xd, memory::data_type::f32, denseStrides(xd)), ym(yd, memory::data_type::f32, denseStrides(yd));
        memory::desc wm(wd, memory::data_type::f32, denseStrides(wd));
        memory::desc bm = bias ? memory::desc({cout}, memory::data_type::f32, memory::dims{1}) : memory::desc();
        bool pointwise = G == 1;
        for (const Axis& a : ax) pointwise = pointwise && a.k == 1 && a.s == 1 && a.pb == 0 && a.peUsed == 0;
        return makeConvPrim(xm, wm, bm, ym, st, dil, pl, pr, pointwise);
      });
    };
    auto sliceShape = [&](int64_t t) { return sp.batch ? std::make_pair(sp.size(t), units) : std::make_pair(int64_t(1), sp.size(t)); };
    std::shared_ptr<Prim> full = primFor(sliceShape(0).first, sliceShape(0).second);
    std::shared_ptr<Prim> last = primFor(sliceShape(sp.count - 1).first, sliceShape(sp.count - 1).second);
    ctx->pool.parallelFor(0, sp.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const Prim& p = t + 1 < sp.count ? *full : *last;
        // Offsets of the slice: images n0.., or units u0.. of image 0.
        const int64_t n0 = sp.batch ? t * sp.per : 0, u0 = sp.batch ? 0 : t * sp.per;
        const int64_t c0 = G > 1 ? u0 * Cg : 0, m0 = G > 1 ? u0 * Mg : u0;
        const int64_t wPer = w_dims[1] * kvol;  // weight elements per output channel
        const float* ws = w + m0 * wPer;
        // A constant weight (w_key) is reordered once per context and slice shape; the copy is kept.
        const void* ready = nullptr;
        if (w_key && p.wIn) {
          Dims key = {int64_t(w_key), int64_t(reinterpret_cast<uintptr_t>(ws))};
          // The layout is part of the key: the primitive for other sizes may want the weight in another one.
          // The whole (plain-data) descriptor is, its padding bytes zeroed by oneDNN's initialisation.
          int64_t words[sizeof(dnnl_memory_desc_t) / sizeof(int64_t)];
          std::memcpy(words, &p.weights.data, sizeof(words));
          key.insert(key.end(), std::begin(words), std::end(words));
          ready = ctx->convWeights.get(key, p.weights.get_size(), [&](void* buf) {
            omp_set_num_threads(1);
            dnnl::memory in(p.wPlain, cpu(), const_cast<float*>(ws)), out(p.weights, cpu(), buf);
            dnnl::stream s(cpu());
            p.wIn->execute(s, in, out);
            s.wait();
          });
        }
        executeWeighted(p, x + n0 * xStr[0] + c0 * xStr[1], ws, bias ? bias + m0 : nullptr,
                        y + n0 * yStr[0] + m0 * yStr[1], ready);
      }
    });
    return DSCC_OK;
  });
#endif
}

extern "C" dscc_status dscc_conv_f32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                     const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims,
                                     float* y, int64_t group, const int64_t* strides, const int64_t* dilations,
                                     const int64_t* pads_begin, const int64_t* pads_end) {
  return dscc::runtime::convF32(ctx, n_spatial, x_dims, x, w_dims, w, bias, y_dims, y, group, strides, dilations,
                                pads_begin, pads_end, 0);
}

extern "C" dscc_status dscc_conv_transpose_f32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims,
                                               const float* x, const int64_t* w_dims, const float* w,
                                               const float* bias, const int64_t* y_dims, float* y, int64_t group,
                                               const int64_t* strides, const int64_t* dilations,
                                               const int64_t* pads_begin, const int64_t* pads_end) {
  const char* fn = "dscc_conv_transpose_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (n_spatial < 1 || n_spatial > 3 || !x_dims || !w_dims || !y_dims || !strides || !dilations || !pads_begin ||
      !pads_end)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": 1 to 3 spatial dims and every size array are needed");
  const int r = n_spatial + 2;
  const int64_t N = x_dims[0], C = x_dims[1], Mg = w_dims[1], G = group, M = Mg * std::max<int64_t>(G, 1);
  const std::string shapes = " (input " + dscc::runtime::str(x_dims, r) + ", weight " + dscc::runtime::str(w_dims, r) +
                             ", output " + dscc::runtime::str(y_dims, r) + ", group " + std::to_string(group) + ")";
  if (G < 1 || N < 0 || C < 0 || Mg < 0 || C % G || w_dims[0] != C || y_dims[0] != N || y_dims[1] != M)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": channels do not match" + shapes);
  // Per spatial dim: the size rule (docs/ir.md), and the pads clamped at 0 for oneDNN: a negative pad adds result
  // points no input reaches, which hold the bias (written around oneDNN's result below).
  int64_t inN = 1, outN = 1, innerN = 1;
  bool inner = true, clamped = false;
  std::vector<int64_t> in(r), out(r), k(r), st(r), dl(r), pl(r), pr(r), sub(r), off(r, 0);
  for (int i = 0; i < n_spatial; ++i) {
    in[i] = x_dims[2 + i], out[i] = y_dims[2 + i], k[i] = w_dims[2 + i], st[i] = strides[i], dl[i] = dilations[i];
    const std::string at = " (spatial dim " + std::to_string(i) + ")" + shapes;
    if (in[i] < 0 || out[i] < 0 || k[i] < 1 || st[i] < 1 || dl[i] < 1)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  std::string(fn) + ": sizes must be >= 0, kernel, strides and dilations >= 1" + at);
    const int64_t full = st[i] * (in[i] - 1) + dl[i] * (k[i] - 1) + 1, want = full - pads_begin[i] - pads_end[i];
    if (out[i] != want)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  std::string(fn) + ": output size " + std::to_string(out[i]) + " is not " + std::to_string(want) + at);
    pl[i] = std::max<int64_t>(pads_begin[i], 0), pr[i] = std::max<int64_t>(pads_end[i], 0);
    off[i] = pl[i] - pads_begin[i];
    sub[i] = full - pl[i] - pr[i];  // the points oneDNN computes
    clamped = clamped || pl[i] != pads_begin[i] || pr[i] != pads_end[i];
    inner = inner && sub[i] > 0;
    inN *= in[i], outN *= out[i], innerN *= std::max<int64_t>(sub[i], 0);
  }
  const int64_t plane = outN;
  inN *= N * C, outN *= N * M, innerN *= N * M;
  if (outN == 0) return DSCC_OK;
  auto fillBias = [&] {
    for (int64_t q = 0; q < outN; ++q) y[q] = bias ? bias[q / plane % M] : 0.0f;
  };
  // No input point (an empty input, or every computed point cut by the pads): the result is its bias.
  if (inN == 0 || !inner) {
    fillBias();
    return DSCC_OK;
  }
#ifndef DSCC_HAVE_DNNL
  (void)x, (void)w, (void)innerN, (void)clamped;
  return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": this runtime was built without oneDNN");
#else
  return dscc::runtime::guarded(ctx, fn, [&]() -> dscc_status {
    using namespace dscc::runtime;
    using dnnl::memory;
    const int64_t Cg = C / G;
    std::vector<float> tmp(clamped ? static_cast<size_t>(innerN) : 0);
    float* dst = clamped ? tmp.data() : y;
    const int64_t units = G > 1 ? G : M;  // one image's slices: whole groups, or output channels
    const Split sp = split(N, units, ctx->pool.numThreads());
    memory::dims inSp(in.begin(), in.begin() + n_spatial), subSp(sub.begin(), sub.begin() + n_spatial);
    memory::dims ks(k.begin(), k.begin() + n_spatial), stv(st.begin(), st.begin() + n_spatial), dil, plv, prv;
    for (int i = 0; i < n_spatial; ++i) dil.push_back(dl[i] - 1), plv.push_back(pl[i]), prv.push_back(pr[i]);
    memory::dims xFull = {N, C}, yFull = {N, M};
    xFull.insert(xFull.end(), inSp.begin(), inSp.end());
    yFull.insert(yFull.end(), subSp.begin(), subSp.end());
    const memory::dims xStr = denseStrides(xFull), yStr = denseStrides(yFull);
    int64_t kvol = 1;
    for (int64_t v : ks) kvol *= v;
    // One slice's primitive: `nb` images of `u` units. The weight is ONNX's [C, M/group, k...] read in place:
    // oneDNN's (group,) output channel, input channel, k... order with the strides of that layout.
    auto primFor = [&](int64_t nb, int64_t u) {
      Dims key = {-1, int64_t(n_spatial), nb, C, M, G, u, bias != nullptr};
      for (int i = 0; i < n_spatial; ++i) key.insert(key.end(), {in[i], sub[i], k[i], st[i], dl[i], pl[i], pr[i]});
      return cache().get(key, [&] {
        const int64_t cin = G > 1 ? u * Cg : C, cout = G > 1 ? u * Mg : u;
        memory::dims xd = {nb, cin}, yd = {nb, cout}, wd, ws;
        xd.insert(xd.end(), inSp.begin(), inSp.end());
        yd.insert(yd.end(), subSp.begin(), subSp.end());
        if (G > 1) wd = {u, Mg, Cg}, ws = {Cg * Mg * kvol, kvol, Mg * kvol};
        else wd = {u, C}, ws = {kvol, Mg * kvol};
        wd.insert(wd.end(), ks.begin(), ks.end());
        const memory::dims kStr = denseStrides(ks);
        ws.insert(ws.end(), kStr.begin(), kStr.end());
        memory::desc xm(xd, memory::data_type::f32, denseStrides(xd)), ym(yd, memory::data_type::f32, denseStrides(yd));
        memory::desc wm(wd, memory::data_type::f32, ws);
        memory::desc bm = bias ? memory::desc({cout}, memory::data_type::f32, memory::dims{1}) : memory::desc();
        dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                            xm, wm, bm, ym, stv, dil, plv, prv);
        return makeWeightedPrim<dnnl::deconvolution_forward>(d);
      });
    };
    auto sliceShape = [&](int64_t t) { return sp.batch ? std::make_pair(sp.size(t), units) : std::make_pair(int64_t(1), sp.size(t)); };
    std::shared_ptr<Prim> full = primFor(sliceShape(0).first, sliceShape(0).second);
    std::shared_ptr<Prim> last = primFor(sliceShape(sp.count - 1).first, sliceShape(sp.count - 1).second);
    ctx->pool.parallelFor(0, sp.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const Prim& p = t + 1 < sp.count ? *full : *last;
        const int64_t n0 = sp.batch ? t * sp.per : 0, u0 = sp.batch ? 0 : t * sp.per;
        const int64_t c0 = G > 1 ? u0 * Cg : 0, m0 = G > 1 ? u0 * Mg : u0;
        // The slice's first weight: group u0's first row (grouped), or output channel u0's column (ungrouped).
        const int64_t w0 = G > 1 ? u0 * Cg * Mg * kvol : u0 * kvol;
        std::unordered_map<int, memory> args;
        args.emplace(DNNL_ARG_SRC, memory(p.src, cpu(), const_cast<float*>(x) + n0 * xStr[0] + c0 * xStr[1]));
        args.emplace(DNNL_ARG_WEIGHTS, memory(p.weights, cpu(), const_cast<float*>(w) + w0));
        if (bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias, cpu(), const_cast<float*>(bias) + m0));
        args.emplace(DNNL_ARG_DST, memory(p.dst, cpu(), dst + n0 * yStr[0] + m0 * yStr[1]));
        execute(p, std::move(args));
      }
    });
    if (clamped) {
      // oneDNN's points sit at `off` inside the result; the rest hold the bias.
      fillBias();
      // Strides of the result [N, M, out...].
      std::vector<int64_t> ys(r, 1), yd = {N, M};
      yd.insert(yd.end(), out.begin(), out.begin() + n_spatial);
      for (int i = r; i-- > 0;) ys[i] = i == r - 1 ? 1 : ys[i + 1] * yd[i + 1];
      std::vector<int64_t> sd = {N, M};
      sd.insert(sd.end(), sub.begin(), sub.begin() + n_spatial);
      for (int64_t q = 0; q < innerN; ++q) {
        int64_t rem = q, at = 0;
        for (int i = r; i-- > 0;) {
          const int64_t idx = rem % sd[i];
          rem /= sd[i];
          at += (idx + (i >= 2 ? off[i - 2] : 0)) * ys[i];
        }
        y[at] = tmp[static_cast<size_t>(q)];
      }
    }
    return DSCC_OK;
  });
#endif
}

extern "C" dscc_status dscc_pool_f32(dscc_context* ctx, int32_t n_spatial, int32_t kind, int32_t count_include_pad,
                                     const int64_t* x_dims, const float* x, const int64_t* y_dims, float* y,
                                     const int64_t* kernel, const int64_t* strides, const int64_t* dilations,
                                     const int64_t* pads_begin, const int64_t* pads_end) {
  const char* fn = "dscc_pool_f32";
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (n_spatial < 1 || n_spatial > 3 || (kind != 0 && kind != 1) || !x_dims || !y_dims || !kernel || !strides ||
      !dilations || !pads_begin || !pads_end)
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                std::string(fn) + ": 1 to 3 spatial dims, kind 0 (max) or 1 (avg) and every size array are needed");
  const int r = n_spatial + 2;
  const int64_t N = x_dims[0], C = x_dims[1];
  const std::string shapes = " (input " + dscc::runtime::str(x_dims, r) + ", output " + dscc::runtime::str(y_dims, r) +
                             ", kernel " + dscc::runtime::str(kernel, n_spatial) + ")";
  if (N < 0 || C < 0 || y_dims[0] != N || y_dims[1] != C)
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": batch or channels differ" + shapes);
  std::vector<Axis> ax;
  int64_t inN = 0, outN = 0;
  if (std::string e = dscc::runtime::windowAxes(n_spatial, x_dims, y_dims, kernel, strides, dilations, pads_begin,
                                                pads_end, ax, inN, outN);
      !e.empty())
    return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(fn) + ": " + e + shapes);
  if (outN == 0) return DSCC_OK;
  // An empty input (a spatial size of 0 the padding makes up for): windows hold no input point, so a max is
  // -inf, an average 0/0 (NaN), or 0 over the padded points it counts with count_include_pad.
  if (inN == 0) {
    const float v = kind == 0 ? -INFINITY : count_include_pad ? 0.0f : NAN;
    for (int64_t q = 0; q < outN; ++q) y[q] = v;
    return DSCC_OK;
  }
#ifndef DSCC_HAVE_DNNL
  (void)x, (void)y, (void)count_include_pad;
  return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": this runtime was built without oneDNN");
#else
  return dscc::runtime::guarded(ctx, fn, [&]() -> dscc_status {
    using namespace dscc::runtime;
    using dnnl::memory;
    const Split sp = split(N, C, ctx->pool.numThreads());
    memory::dims st, dil, pl, pr, ks, inSp, outSp;
    for (const Axis& a : ax) {
      inSp.push_back(a.in), outSp.push_back(a.out), ks.push_back(a.k), st.push_back(a.s);
      dil.push_back(a.d - 1), pl.push_back(a.pb), pr.push_back(a.peUsed);
    }
    memory::dims xFull = {N, C}, yFull = {N, C};
    xFull.insert(xFull.end(), inSp.begin(), inSp.end());
    yFull.insert(yFull.end(), outSp.begin(), outSp.end());
    const memory::dims xStr = denseStrides(xFull), yStr = denseStrides(yFull);
    const bool avg = kind == 1, include = avg && count_include_pad;
    // Averages are oneDNN's include-padding ones (the sum over the whole kernel) rescaled below: its
    // exclude-padding form refuses sizes where a window lies (nearly) all in the padding.
    const dnnl::algorithm alg = avg ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_max;
    // One slice's primitive: `nb` images of `u` channels, dense.
    auto primFor = [&](int64_t nb, int64_t u) {
      Dims key = {int64_t(n_spatial), kind, nb, u};
      for (const Axis& a : ax) key.insert(key.end(), {a.in, a.out, a.k, a.s, a.d, a.pb, a.peUsed});
      return cache().get(key, [&] {
        memory::dims xd = {nb, u}, yd = {nb, u};
        xd.insert(xd.end(), inSp.begin(), inSp.end());
        yd.insert(yd.end(), outSp.begin(), outSp.end());
        memory::desc xm(xd, memory::data_type::f32, denseStrides(xd)), ym(yd, memory::data_type::f32, denseStrides(yd));
        dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, xm, ym, st, ks, dil, pl, pr);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        dnnl::pooling_v2_forward::primitive_desc pd(d, attr, cpu());
        auto p = std::make_shared<Prim>();
        p->p = dnnl::pooling_v2_forward(pd);
        p->scratch = pd.scratchpad_desc(), p->src = pd.src_desc(), p->dst = pd.dst_desc();
        return p;
      });
    };
    auto sliceShape = [&](int64_t t) { return sp.batch ? std::make_pair(sp.size(t), C) : std::make_pair(int64_t(1), sp.size(t)); };
    std::shared_ptr<Prim> full = primFor(sliceShape(0).first, sliceShape(0).second);
    std::shared_ptr<Prim> last = primFor(sliceShape(sp.count - 1).first, sliceShape(sp.count - 1).second);
    ctx->pool.parallelFor(0, sp.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const Prim& p = t + 1 < sp.count ? *full : *last;
        const int64_t n0 = sp.batch ? t * sp.per : 0, c0 = sp.batch ? 0 : t * sp.per;
        std::unordered_map<int, memory> args;
        args.emplace(DNNL_ARG_SRC, memory(p.src, cpu(), const_cast<float*>(x) + n0 * xStr[0] + c0 * xStr[1]));
        args.emplace(DNNL_ARG_DST, memory(p.dst, cpu(), y + n0 * yStr[0] + c0 * yStr[1]));
        execute(p, std::move(args));
      }
    });
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
            cnt += include ? pos < a.in + a.pe : pos >= 0 && pos < a.in;
          }
          // No point counted: 0/0, NaN as in the interpreter (the sum is 0 there).
          if (cnt != a.k) f[i][size_t(o)] = cnt ? double(a.k) / double(cnt) : std::nan(""), any = true;
        }
      }
      if (any) {
        int64_t plane = 1;
        for (int64_t o : outSp) plane *= o;
        for (int64_t q = 0; q < outN; ++q) {
          int64_t rem = q % plane;
          double s = 1;
          for (size_t i = ax.size(); i-- > 0;) {
            s *= f[i][size_t(rem % ax[i].out)];
            rem /= ax[i].out;
          }
          if (s != 1) y[q] = std::isnan(s) ? std::nanf("") : float(double(y[q]) * s);
        }
      }
    }
    // A max window lying wholly in the padding holds no input point: -inf, as in the interpreter (oneDNN
    // leaves the lowest finite float there, which a following conv turned into a finite value where the
    // interpreter has NaN; random program seed 17003 #15). Empty along any one dim means empty.
    if (!avg) {
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
      if (any) {
        int64_t plane = 1;
        for (int64_t o : outSp) plane *= o;
        for (int64_t q = 0; q < outN; ++q) {
          int64_t rem = q % plane;
          bool none = false;
          for (size_t i = ax.size(); i-- > 0;) {
            none = none || empty[i][size_t(rem % ax[i].out)];
            rem /= ax[i].out;
          }
          if (none) y[q] = -INFINITY;
        }
      }
    }
    return DSCC_OK;
  });
#endif
}
