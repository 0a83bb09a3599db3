/* Runtime calls that generated code (compiled models) makes and users need not: kernel launches. */
#ifndef DSCC_GENERATED_H
#define DSCC_GENERATED_H

#include "dscc_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A compiled kernel: computes its parallel units [begin, end) (codegen/Kernel.h).
typedef void (*dscc_kernel_fn)(void** inputs, void** outputs, const int64_t* sizes, int64_t begin, int64_t end);

/// Runs `fn` over the units [0, units) split over the context's threads, each
/// chunk at least `grain` units (except the last); small launches run on the
/// calling thread alone. `inputs`, `outputs` and `sizes` are passed through
/// unchanged. Returns DSCC_OK, or DSCC_INVALID_ARGUMENT for a null function or
/// a negative count.
dscc_status dscc_launch_kernel(dscc_context* ctx, dscc_kernel_fn fn, void** inputs, void** outputs,
                               const int64_t* sizes, int64_t units, int64_t grain);

/// What a compiled model tells the runtime about a launch, for profiles: one
/// constant per kernel version (or library call) in the model's data.
typedef struct dscc_kernel_info {
  const char* name;               ///< the kernel (`main.k3`)
  const char* kind;               ///< loop, stitch, input, generic, library
  const char* version;            ///< the version's name (`v8.i32`), "sgemm" or "copy"
  const char* function;           ///< the function's name (`main.k3.v8.i32`)
  int32_t n_sizes;                ///< the length of a launch's sizes array
  const char* const* size_names;  ///< the symbols in it, in order
  const char* bytes_expr;         ///< bytes a launch reads and writes, over size_names ("" if unknown)
} dscc_kernel_info;

/// dscc_launch_kernel, recorded as `info` when profiling is on (what models
/// compiled since profiling exist call; `info` may be NULL). dscc_launch_kernel
/// itself, which models compiled before call, records nothing.
dscc_status dscc_launch_kernel_info(dscc_context* ctx, dscc_kernel_fn fn, void** inputs, void** outputs,
                                    const int64_t* sizes, int64_t units, int64_t grain, const dscc_kernel_info* info);

/// dscc_sgemm_nd, recorded as `info` when profiling is on.
dscc_status dscc_sgemm_nd_info(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                               int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                               const int64_t* stride_b, const int64_t* stride_c, const dscc_kernel_info* info);

/// dscc_sgemm_const_b, recorded as `info` when profiling is on.
dscc_status dscc_sgemm_const_b_info(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                                    const float* A, int64_t lda, const float* B, int64_t ldb, uint64_t b_key,
                                    float* C, int64_t ldc, const dscc_kernel_info* info);

/// dscc_conv_f32, recorded as `info` when profiling is on (flops 2 per multiply-add, bytes of x, w and y). A
/// nonzero `w_key` says w is a constant of the model (a hash of its bytes, as dscc_sgemm_const_b's b_key): the
/// context keeps it reordered into the primitive's layout after the first call (runtime/WeightCache.h). A
/// nonzero `channels_last` says x and y are stored [N, spatial..., C] (dims still given as [N, C, spatial...]).
dscc_status dscc_conv_f32_info(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                               const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims,
                               float* y, int64_t group, const int64_t* strides, const int64_t* dilations,
                               const int64_t* pads_begin, const int64_t* pads_end, uint64_t w_key,
                               int32_t channels_last, const dscc_kernel_info* info);

/// The post-ops of dscc_conv_f32_post_info, applied in order to each output element v after the bias, with
/// their two arguments a, b: DSCC_POST_RELU v = max(v, 0); DSCC_POST_LINEAR v = a*v + b; DSCC_POST_CLIP
/// v = max(min(v, b), a) (a <= b, either may be infinite); DSCC_POST_HARDSWISH v = v * max(min(v/6 + 1/2, 1), 0);
/// DSCC_POST_ADD v = v + src[i], src a tensor of y's dims and layout (not overlapping y). The compiler's
/// ConvPostOp::Kind (ir/ConvEpilogue.h) has the same values.
enum {
  DSCC_POST_RELU = 0,
  DSCC_POST_LINEAR = 1,
  DSCC_POST_CLIP = 2,
  DSCC_POST_HARDSWISH = 3,
  DSCC_POST_ADD = 4
};

/// dscc_conv_f32_info with an elementwise epilogue fused into the conv (oneDNN post-ops on channels-last
/// tensors, so y is written once): `n_post` post-ops, their kinds (DSCC_POST_*), two float arguments each in
/// `post_args`, and per post-op the tensor a DSCC_POST_ADD reads in `post_srcs` (NULL for the others).
dscc_status dscc_conv_f32_post_info(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                    const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims,
                                    float* y, int64_t group, const int64_t* strides, const int64_t* dilations,
                                    const int64_t* pads_begin, const int64_t* pads_end, uint64_t w_key,
                                    int32_t channels_last, int32_t n_post, const int32_t* post_kinds,
                                    const float* post_args, const float* const* post_srcs,
                                    const dscc_kernel_info* info);

/// dscc_conv_transpose_f32, recorded as `info` when profiling is on (flops 2 per multiply-add, bytes of x, w and y).
dscc_status dscc_conv_transpose_f32_info(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                         const int64_t* w_dims, const float* w, const float* bias,
                                         const int64_t* y_dims, float* y, int64_t group, const int64_t* strides,
                                         const int64_t* dilations, const int64_t* pads_begin, const int64_t* pads_end,
                                         const dscc_kernel_info* info);

/// dscc_pool_f32, recorded as `info` when profiling is on (flops one per window point, bytes of x and y);
/// `channels_last` as dscc_conv_f32_info's.
dscc_status dscc_pool_f32_info(dscc_context* ctx, int32_t n_spatial, int32_t kind, int32_t count_include_pad,
                               const int64_t* x_dims, const float* x, const int64_t* y_dims, float* y,
                               const int64_t* kernel, const int64_t* strides, const int64_t* dilations,
                               const int64_t* pads_begin, const int64_t* pads_end, int32_t channels_last,
                               const dscc_kernel_info* info);

/// dscc_pool_argmax_f32, recorded as `info` when profiling is on (flops one comparison per window point, bytes
/// of x and the int64 y).
dscc_status dscc_pool_argmax_f32_info(dscc_context* ctx, int32_t n_spatial, int32_t storage_order,
                                      const int64_t* x_dims, const float* x, const int64_t* y_dims, int64_t* y,
                                      const int64_t* kernel, const int64_t* strides, const int64_t* dilations,
                                      const int64_t* pads_begin, const int64_t* pads_end,
                                      const dscc_kernel_info* info);

/// dscc_copy_strided, recorded as `info` when profiling is on.
dscc_status dscc_copy_strided_info(dscc_context* ctx, void* dst, const void* src, size_t elem_size, int32_t rank,
                                   const int64_t* dims, const int64_t* strides, const dscc_kernel_info* info);

/// The output bytes from which a kernel call of a model compiled with the
/// default `--streaming-min` takes its streaming version (non-temporal
/// stores): the last-level cache of this machine (glibc's sysconf, from
/// CPUID), 32 MiB where the CPU does not say. Read once per process.
int64_t dscc_stream_min_bytes(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // DSCC_GENERATED_H
