// The runtime-internal forms of dscc_conv_f32 and dscc_pool_f32, with what only generated code passes: the constant-weight key and the channels-last layout.
#pragma once

#include <cstdint>

#include "runtime/dscc_runtime.h"

namespace dscc::runtime {

/// A conv's post-ops as dscc_conv_f32_post_info takes them (none: n = 0).
struct PostOps {
  int32_t n = 0;
  const int32_t* kinds = nullptr;
  const float* args = nullptr;         ///< 2 per post-op
  const float* const* srcs = nullptr;  ///< per post-op: DSCC_POST_ADD's tensor, else NULL
};

/// Applies `post` to `n` elements of y in place, element q reading srcs[.][q] (the layout-free form, for the
/// calls oneDNN does not run with post-ops).
void applyPostOps(const PostOps& post, float* y, int64_t n);

/// dscc_conv_f32 with `w_key`: 0, or a key the compiler derived from the
/// bytes of a constant weight (a model's), which lets the context keep the
/// weight reordered into the primitive's layout (Context::convWeights)
/// instead of reordering it on every call. The caller must not change the
/// data behind a (w, w_key) pair while the context holds it. With
/// `channels_last`, x and y are stored [N, spatial..., C] (their dims are
/// still given as [N, C, spatial...]). `post`: an epilogue applied to y (checked here).
dscc_status convF32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                    const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims, float* y,
                    int64_t group, const int64_t* strides, const int64_t* dilations, const int64_t* pads_begin,
                    const int64_t* pads_end, uint64_t w_key, bool channels_last, const PostOps& post = {});

/// dscc_pool_f32 with x and y stored channels-last when `channels_last` (dims still [N, C, spatial...]).
dscc_status poolF32(dscc_context* ctx, int32_t n_spatial, int32_t kind, int32_t count_include_pad,
                    const int64_t* x_dims, const float* x, const int64_t* y_dims, float* y, const int64_t* kernel,
                    const int64_t* strides, const int64_t* dilations, const int64_t* pads_begin,
                    const int64_t* pads_end, bool channels_last);

}  // namespace dscc::runtime
