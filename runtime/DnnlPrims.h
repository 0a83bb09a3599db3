// What the oneDNN-backed window calls share (runtime/Dnnl.cpp, runtime/DnnlChannelsLast.cpp): size checks, the primitive cache, slices, per-thread scratch.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef DSCC_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "runtime/Dnnl.h"
#include "runtime/dscc_runtime.h"

namespace dscc::runtime::dnnlw {

using Dims = std::vector<int64_t>;

/// "[a, b, ...]" of `n` sizes, for messages.
std::string str(const int64_t* v, int n);

/// The window of one spatial dim, with oneDNN's end padding: ceil mode's last window may reach past the
/// stated end padding, so the padding oneDNN gets is what the output size needs (never less than stated).
struct Axis {
  int64_t in, out, k, s, d, pb, pe, peUsed;
};

/// Checks one spatial dim against the size rule of docs/ir.md (floor, or ceil mode's); "" or why not.
std::string checkAxis(int i, Axis& a);

/// The spatial axes of a conv or pool call (kernel sizes `k`), each checked by
/// checkAxis, and the element counts of the input and output: "" or why not.
std::string windowAxes(int n_spatial, const int64_t* x_dims, const int64_t* y_dims, const int64_t* k,
                       const int64_t* strides, const int64_t* dilations, const int64_t* pads_begin,
                       const int64_t* pads_end, std::vector<Axis>& ax, int64_t& inN, int64_t& outN);

/// Pool results oneDNN leaves differently from the interpreter, fixed in place in `y` (`outN` elements of
/// `channels` channels, channels-first or -last): averages rescaled to the window's counted points (oneDNN
/// divided by the whole kernel), max windows wholly in the padding set to -inf.
void fixPoolEdges(const std::vector<Axis>& ax, bool avg, bool includePad, bool channelsLast, int64_t channels,
                  int64_t outN, float* y);

#ifdef DSCC_HAVE_DNNL

dnnl::engine& cpu();

dnnl::memory::dims denseStrides(const dnnl::memory::dims& d);

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
std::shared_ptr<Prim> makeWeightedPrim(const typename Fwd::desc& d, const dnnl::post_ops* post = nullptr) {
  dnnl::primitive_attr attr;
  if (post) attr.set_post_ops(*post);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  typename Fwd::primitive_desc pd(d, attr, cpu());
  auto p = std::make_shared<Prim>();
  p->p = Fwd(pd);
  p->scratch = pd.scratchpad_desc(), p->src = pd.src_desc(), p->weights = pd.weights_desc();
  p->bias = pd.bias_desc(), p->dst = pd.dst_desc();
  return p;
}

/// The inference pooling primitive for `d`, with a user scratchpad.
std::shared_ptr<Prim> makePoolPrim(const dnnl::pooling_v2_forward::desc& d);

/// A convolution on dense NCHW `xm`, `ym` run in the layouts oneDNN chooses (runtime/Dnnl.cpp says why).
std::shared_ptr<Prim> makeConvPrim(const dnnl::memory::desc& xm, const dnnl::memory::desc& wm,
                                   const dnnl::memory::desc& bm, const dnnl::memory::desc& ym,
                                   const dnnl::memory::dims& st, const dnnl::memory::dims& dil,
                                   const dnnl::memory::dims& pl, const dnnl::memory::dims& pr, bool pointwise);

/// Primitives (`T`: a Prim, or another call's own record) by shape key, least recently used dropped beyond
/// kCapacity (each holds generated code).
template <class T>
class PrimCacheOf {
 public:
  static constexpr size_t kCapacity = 128;
  template <class Make>
  std::shared_ptr<T> get(const Dims& key, Make&& make) {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.second);
        return it->second.first;
      }
    }
    // Made outside the lock (oneDNN may JIT for milliseconds); two threads may make the same one once.
    std::shared_ptr<T> p = make();
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
  std::map<Dims, std::pair<std::shared_ptr<T>, std::list<Dims>::iterator>> map_;
};

/// The window calls' primitive cache.
using PrimCache = PrimCacheOf<Prim>;

/// The process's primitive cache.
PrimCache& cache();

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

/// The split of `N` images of `units` channel units over `threads`.
Split split(int64_t N, int64_t units, int threads);

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

/// This thread's Scratch.
Scratch& scratch();

/// Runs `p` on this thread alone with `args` and this thread's scratchpad.
void execute(const Prim& p, std::unordered_map<int, dnnl::memory> args);

/// Runs `r` from `from` (a dense buffer of the caller's) into `buf` in `to`'s layout; returns `buf`'s memory.
dnnl::memory reorderInto(const dnnl::reorder& r, const dnnl::memory::desc& fromDesc, const void* from,
                         const dnnl::memory::desc& to, Scratch::Buf& buf);

/// Runs a weighted primitive on one slice: dense `x`, `w`, `bias`, `y` of the caller, reordered into and out
/// of the primitive's own layouts where it has them (`wReady`: the weight already in the primitive's layout;
/// `extra`: further arguments, a post-op's tensors).
void executeWeighted(const Prim& p, const float* x, const float* w, const float* bias, float* y,
                     const void* wReady = nullptr, std::unordered_map<int, dnnl::memory> extra = {});

/// The weight of `p` (`ws`, dense) in the primitive's layout, kept by the context for a constant weight
/// (`w_key` != 0; runtime/WeightCache.h), else null (executeWeighted then reorders it per call).
const void* readyWeight(dscc_context* ctx, const Prim& p, const float* ws, uint64_t w_key);

/// A conv on channels-last `x` [N, spatial..., C] into `y` [N, spatial..., M] (sizes checked: `ax`), weight
/// [M, C/G, k...] dense (`w_key` as readyWeight), run on the context's threads (runtime/DnnlChannelsLast.cpp),
/// with `post` (checked) as oneDNN post-ops of the primitive.
void convChannelsLast(dscc_context* ctx, const std::vector<Axis>& ax, int64_t N, int64_t C, int64_t M, int64_t G,
                      const float* x, const float* w, const float* bias, float* y, uint64_t w_key,
                      const PostOps& post);

/// A max or (include-padding, not yet rescaled) average pool on channels-last `x` into `y`.
void poolChannelsLast(dscc_context* ctx, const std::vector<Axis>& ax, int64_t N, int64_t C, bool avg,
                      const float* x, float* y);

#endif

}  // namespace dscc::runtime::dnnlw
