// The dscc runtime's C ABI: contexts, tensors, status codes, buffers, the thread pool and BLAS calls.
#ifndef DSCC_RUNTIME_H
#define DSCC_RUNTIME_H

// This header is C99 and C++ compatible on purpose: compiled models (the
// artifacts `dscc compile` writes) and their users include it from either
// language, and everything crossing it is plain data and function pointers.
// docs/abi.md describes the contract in full, with an example program.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Lets GCC and Clang check the format string of dscc_set_error.
#if defined(__GNUC__) || defined(__clang__)
#define DSCC_PRINTF_FORMAT(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define DSCC_PRINTF_FORMAT(fmt_index, first_arg)
#endif

/// The version of this ABI; a change that breaks compiled models increments it.
#define DSCC_ABI_VERSION 1

/// Returns DSCC_ABI_VERSION as the runtime library was built, so a model can refuse a mismatched runtime.
int dscc_abi_version(void);

/// Result of every fallible call. The values are fixed: they cross the ABI.
typedef enum dscc_status {
  DSCC_OK = 0,               ///< success
  DSCC_INVALID_ARGUMENT = 1, ///< a null pointer, a negative size, a wrong count, a bad enum value
  DSCC_SHAPE_MISMATCH = 2,   ///< a tensor's rank, dims or dtype differ from what the callee requires
  DSCC_FACT_VIOLATED = 3,    ///< run-time sizes break a fact of the model (`S in [1, 512]`, `S % 8 == 0`)
  DSCC_OUT_OF_MEMORY = 4,    ///< an allocation failed or its size overflowed
  DSCC_INTERNAL = 5,         ///< a bug in dscc or in a library it calls
  DSCC_UNAVAILABLE = 6       ///< no GPU or driver, or a library this runtime was built without (CUDA, BLAS)
} dscc_status;

/// The element types, in the IR's order (f32 f16 bf16 f64 i64 i32 i8 i1); the values are fixed.
typedef enum dscc_dtype {
  DSCC_F32 = 0,
  DSCC_F16 = 1,
  DSCC_BF16 = 2,
  DSCC_F64 = 3,
  DSCC_I64 = 4,
  DSCC_I32 = 5,
  DSCC_I8 = 6,
  DSCC_I1 = 7 ///< stored as one byte holding 0 or 1
} dscc_dtype;

/// A dense row-major (C order) tensor. `dims` has `rank` entries and is always
/// owned by whoever filled in the struct; `data` is owned by the caller, or by
/// the runtime when the runtime allocated it (then release it with
/// dscc_tensor_free). A scalar has rank 0 and may have dims == NULL.
typedef struct dscc_tensor {
  void* data;       ///< first element; 64-byte aligned when the runtime allocated it
  int64_t* dims;    ///< `rank` sizes, each >= 0
  int32_t rank;     ///< number of dims
  dscc_dtype dtype; ///< element type
} dscc_tensor;

/// An execution context: a thread pool and per-context state. Create one per
/// process (or per NUMA node) and share it: every call taking a context is safe
/// to make from several threads at once on the same context.
typedef struct dscc_context dscc_context;

/// Creates a context whose calls use `num_threads` threads in all, the calling
/// thread included (so 1 means everything runs on the caller). 0 means one per
/// hardware thread. Returns NULL on failure; dscc_status_message(NULL) says why.
dscc_context* dscc_context_create(int num_threads);

/// Releases a context and joins its threads. No call on it may be in flight. NULL is a no-op.
void dscc_context_release(dscc_context* ctx);

/// The number of threads the context's calls use, the caller's included.
int dscc_context_num_threads(const dscc_context* ctx);

/// A fixed upper-case name of a status ("OK", "SHAPE_MISMATCH", ...); "UNKNOWN" for other values.
const char* dscc_status_name(dscc_status status);

/// The message of the most recent failed call made by the calling thread, if
/// that call was made on `ctx`; "" otherwise. With ctx == NULL: the calling
/// thread's most recent failure, whatever its context (use this after
/// dscc_context_create returns NULL). Messages are thread-local, so concurrent
/// callers on one context never see each other's. Successful calls leave the
/// message as it was. The string lives until the thread's next failing call.
const char* dscc_status_message(const dscc_context* ctx);

/// Records a failure for the calling thread (on `ctx`, which may be NULL) with
/// a printf-style message, and returns `status`. Generated code uses it to
/// report, e.g., DSCC_FACT_VIOLATED with the offending sizes.
dscc_status dscc_set_error(const dscc_context* ctx, dscc_status status, const char* format, ...)
    DSCC_PRINTF_FORMAT(3, 4);

/// Bytes per element of a dtype (i1 takes one byte); 0 for a value that is not a dtype.
size_t dscc_dtype_size(dscc_dtype dtype);

/// The IR spelling of a dtype ("f32", ...); "?" for a value that is not a dtype.
const char* dscc_dtype_name(dscc_dtype dtype);

/// The element count of a tensor; -1 if a dim is negative, dims is NULL with rank > 0, or the count overflows.
int64_t dscc_tensor_numel(const dscc_tensor* tensor);

/// Allocates `bytes` bytes aligned to 64 (a cache line, the widest vector), for
/// buffers of generated code. 0 bytes gives a valid, distinct pointer. Returns
/// NULL with DSCC_OUT_OF_MEMORY recorded on failure. `ctx` may be NULL; memory
/// from one context may be freed with another or with NULL. A context reuses
/// blocks freed on it (docs/abi.md), so per-call buffers stay mapped.
void* dscc_alloc(dscc_context* ctx, size_t bytes);

/// Frees memory from dscc_alloc (into `ctx`'s cache of blocks when `ctx` is not NULL); NULL is a no-op.
void dscc_free(dscc_context* ctx, void* ptr);

/// Allocates `tensor->data` (64-byte aligned) for the tensor's dims and dtype.
/// `tensor->data` must be NULL on entry. Release with dscc_tensor_free.
dscc_status dscc_tensor_alloc(dscc_context* ctx, dscc_tensor* tensor);

/// Releases data the runtime allocated (a model's output, or dscc_tensor_alloc)
/// and sets `tensor->data` to NULL; dims are the caller's and stay. Needs no
/// context, so outputs may outlive the context that made them. NULL is a no-op.
void dscc_tensor_free(dscc_tensor* tensor);

/// Checks input `index` of a call: non-NULL dims (rank > 0), dims >= 0, data
/// non-NULL when it has elements, and the expected dtype and rank. Returns
/// DSCC_INVALID_ARGUMENT or DSCC_SHAPE_MISMATCH with a message naming the input.
dscc_status dscc_check_input(dscc_context* ctx, const dscc_tensor* tensor, int index, dscc_dtype dtype,
                             int32_t rank);

/// dscc_check_input with the argument's name (e.g. "%x") in the messages, and
/// also: a dtype value that is not a dtype (DSCC_INVALID_ARGUMENT), data not
/// aligned to its element size, and a byte size no memory can hold.
dscc_status dscc_check_input_named(dscc_context* ctx, const dscc_tensor* tensor, int index, const char* arg_name,
                                   dscc_dtype dtype, int32_t rank);

/// Fails with DSCC_INVALID_ARGUMENT when the bytes of an output overlap an
/// input's or another output's (tensors with no elements overlap nothing).
/// Models call it once every output is prepared, before writing any.
dscc_status dscc_check_no_alias(dscc_context* ctx, const dscc_tensor* inputs, int n_in, const dscc_tensor* outputs,
                                int n_out);

/// Prepares output `index` of a call whose shape is now known (`rank`, `dims`).
/// The caller's `tensor->rank` must equal `rank` and `tensor->dims` must hold
/// `rank` entries. If `tensor->data` is NULL, the runtime writes the dims and
/// dtype and allocates the data; otherwise the caller's dtype and dims must
/// equal these exactly (DSCC_SHAPE_MISMATCH if not) and the data is written in place.
dscc_status dscc_prepare_output(dscc_context* ctx, dscc_tensor* tensor, int index, dscc_dtype dtype,
                                int32_t rank, const int64_t* dims);

/// The entry point every compiled model exports as `NAME_run`. Inputs are read
/// only. For each output, data == NULL asks the runtime to allocate it (free it
/// with dscc_tensor_free); otherwise the model checks the caller's dims and
/// dtype against the computed shape and writes into the caller's buffer. On
/// failure, outputs the call allocated are freed again (data reset to NULL)
/// and dscc_status_message(ctx) says what went wrong. Safe to call from
/// several threads at once on one context.
typedef dscc_status (*dscc_run_fn)(dscc_context* ctx, const dscc_tensor* inputs, int n_in, dscc_tensor* outputs,
                                   int n_out);

/// The body of a parallel loop: processes indices [begin, end) with the data behind `closure`.
typedef void (*dscc_parallel_body)(void* closure, int64_t begin, int64_t end);

/// Runs `body` over [0, n) split into disjoint chunks, each index exactly once,
/// on the context's threads; the calling thread takes part and the call returns
/// when all chunks are done. Every chunk but the last has at least `grain`
/// indices (grain <= 0 means 1). The split depends only on n, grain and the
/// thread count. Concurrent callers and nested calls (from inside a body) are
/// safe: each call is its own job that the caller can finish alone.
dscc_status dscc_parallel_for(dscc_context* ctx, int64_t n, int64_t grain, dscc_parallel_body body,
                              void* closure);

/// Batched single-precision matrix multiply, row-major:
/// C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b],  b in [0, batch),
/// where A[b] = A + b * strideA (elements), likewise B and C; op(A[b]) is M x K
/// (A[b] is stored K x M when transA != 0), op(B[b]) is K x N (stored N x K when
/// transB != 0), C[b] is M x N. lda, ldb, ldc are row pitches in elements, so
/// transposed and sliced operands need no copy. strideA or strideB may be 0 (one
/// matrix shared by the batch); the C matrices must not overlap. With beta == 0,
/// C is not read. M, N, K, lda, ldb, ldc must fit in 32 bits (the BLAS's int).
/// Work is split over the context's threads; the split depends only on the
/// sizes and the thread count.
dscc_status dscc_sgemm_strided_batched(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                                       float alpha, const float* A, int64_t lda, int64_t strideA, const float* B,
                                       int64_t ldb, int64_t strideB, float beta, float* C, int64_t ldc,
                                       int64_t strideC, int64_t batch);

/// dscc_sgemm_strided_batched with a pointer per batch entry, for batches that
/// one stride cannot describe (several broadcast batch dims): A[b], B[b] and
/// C[b] are the b-th entries of the pointer arrays. Same rules otherwise.
dscc_status dscc_sgemm_batched(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               float alpha, const float* const* A, int64_t lda, const float* const* B, int64_t ldb,
                               float beta, float* const* C, int64_t ldc, int64_t batch);

/// C[b] = op(A[b]) * op(B[b]) (alpha 1, beta 0), row-major, over an n-dimensional batch: the batch index
/// (i_0, ..., i_{n_batch-1}) runs over batch_dims, and matrix b of A starts at A + sum_k i_k * stride_a[k]
/// (elements), likewise B and C. A stride of 0 broadcasts A or B along that dim (C's must not be 0 where the
/// dim exceeds 1: the C matrices must not overlap). Batch dims that one stride describes are merged into a
/// dscc_sgemm_strided_batched call; others get pointer arrays for dscc_sgemm_batched. n_batch may be 0 (one
/// matrix; the batch arrays may then be NULL); M, N or K may be 0 (K == 0 writes zeros). Same transpose,
/// leading-dimension and 32-bit rules as dscc_sgemm_strided_batched, except that a pitch is ignored where it
/// addresses nothing (its matrix has at most one stored row, or M, N or K is 0).
dscc_status dscc_sgemm_nd(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                          const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                          int32_t n_batch, const int64_t* batch_dims, const int64_t* stride_a,
                          const int64_t* stride_b, const int64_t* stride_c);

/// C = op(A) * op(B) (alpha 1, beta 0) for one matrix whose B is constant for the life of the context's use
/// of it (a model's weights): the same arguments as dscc_sgemm_nd with n_batch 0, plus `b_key`, a value
/// derived from B's contents (compiled models pass a hash of the bytes). With few rows (M <= 48), A not
/// transposed, and a CPU with AVX-512, B is packed on the first call into column panels kept by the context,
/// keyed by its address, layout and b_key, and later calls stream the packed copy; a caller must not change
/// the data behind a (B, b_key) pair while the context holds it, or later results use the old data. A
/// context keeps at most 4 GiB of packed copies (then calls take the unpacked path); they are freed with it.
/// Otherwise exactly dscc_sgemm_nd.
dscc_status dscc_sgemm_const_b(dscc_context* ctx, int transA, int transB, int64_t M, int64_t N, int64_t K,
                               const float* A, int64_t lda, const float* B, int64_t ldb, uint64_t b_key, float* C,
                               int64_t ldc);

/// Copies a strided view into a dense row-major buffer: dst[i_0, ..., i_{rank-1}] =
/// src[sum_k i_k * strides[k]], in elements of `elem_size` bytes, split over the context's threads. Rank 0
/// copies one element (dims and strides may then be NULL); a dim of 0 copies nothing. Strides may be 0
/// (broadcast) or negative; dst must not overlap the elements read.
dscc_status dscc_copy_strided(dscc_context* ctx, void* dst, const void* src, size_t elem_size, int32_t rank,
                              const int64_t* dims, const int64_t* strides);

/// N-d convolution (1 to 3 spatial dims), dense row-major NCHW: y[n, m, o...] = bias[m] +
/// sum over c < C/group and window points k... of x[n, g*C/group + c, o*stride - pad_begin + k*dilation...] *
/// w[m, c, k...], g = m / (M/group); points in the padding read 0. x_dims = [N, C, in...], w_dims =
/// [M, C/group, k...], y_dims = [N, M, out...]; bias (M values) may be NULL. Each out must follow the size rule of
/// docs/ir.md: floor((in + pad_begin + pad_end - span) / stride) + 1 with span = dilation*(k-1)+1, or the ceil-mode
/// size; a window larger than the padded input is DSCC_INVALID_ARGUMENT. oneDNN primitives are made for the sizes
/// on first use and cached by shape (at most 128, least recently used dropped); slices of whole images (or,
/// for one image, of output channels or groups) run on the context's threads, one oneDNN thread each. Without
/// oneDNN in the runtime: DSCC_UNAVAILABLE.
dscc_status dscc_conv_f32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                          const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims, float* y,
                          int64_t group, const int64_t* strides, const int64_t* dilations, const int64_t* pads_begin,
                          const int64_t* pads_end);

/// N-d transposed convolution (ONNX ConvTranspose, the adjoint of dscc_conv_f32), dense row-major NCHW: x_dims =
/// [N, C, in...], w_dims = [C, M/group, k...] (ONNX's layout), bias [M] or NULL, y_dims = [N, M, out...] with
/// out = strides*(in-1) + dilations*(k-1) + 1 - pads_begin - pads_end per spatial dim. pads_end has
/// output_padding subtracted already; either pad may be negative (result points no input reaches hold the bias).
/// Through oneDNN's deconvolution primitive, cached by shape and split over threads as dscc_conv_f32;
/// DSCC_UNAVAILABLE without oneDNN.
dscc_status dscc_conv_transpose_f32(dscc_context* ctx, int32_t n_spatial, const int64_t* x_dims, const float* x,
                                    const int64_t* w_dims, const float* w, const float* bias, const int64_t* y_dims,
                                    float* y, int64_t group, const int64_t* strides, const int64_t* dilations,
                                    const int64_t* pads_begin, const int64_t* pads_end);

/// N-d max (kind 0) or average (kind 1) pooling, dense row-major NCHW, over windows of `kernel` (same size rule
/// and arguments as dscc_conv_f32, output y_dims = [N, C, out...]). Max ignores padding; average divides by the
/// window points inside the input, or with count_include_pad by those inside the padded extent (a ceil-mode
/// window reaching past pad_end counts only up to it). Same caching, threads and DSCC_UNAVAILABLE rule.
dscc_status dscc_pool_f32(dscc_context* ctx, int32_t n_spatial, int32_t kind, int32_t count_include_pad,
                          const int64_t* x_dims, const float* x, const int64_t* y_dims, float* y, const int64_t* kernel,
                          const int64_t* strides, const int64_t* dilations, const int64_t* pads_begin,
                          const int64_t* pads_end);

/// The index of each window's maximum, as ONNX MaxPool's second output (Indices) and the IR's
/// `pool {kind = "argmax"}`: dense row-major NCHW f32 x, y_dims = [N, C, out...] of int64 indices into x
/// flattened over [N, C, spatial...], the spatial part row-major (storage_order 0) or column-major, first
/// spatial dim fastest (storage_order 1). The first point of the window (row-major over kernel offsets) holding
/// its maximum wins; padding never does; NaN beats every number and the first NaN wins; a window with no input
/// point gives -1. Sizes, arguments and checks as dscc_pool_f32. Plain loops (not oneDNN: its max-pool workspace
/// is not these indices), rows of outputs split over the context's threads.
dscc_status dscc_pool_argmax_f32(dscc_context* ctx, int32_t n_spatial, int32_t storage_order, const int64_t* x_dims,
                                 const float* x, const int64_t* y_dims, int64_t* y, const int64_t* kernel,
                                 const int64_t* strides, const int64_t* dilations, const int64_t* pads_begin,
                                 const int64_t* pads_end);

/// A recurrent layer as ONNX LSTM (cell 0), GRU (cell 1) or RNN (cell 2) with default activations, layout 0:
/// x [seq, batch, input], w [D, G*hidden, input], r [D, G*hidden, hidden], b [D, 2*G*hidden] (NULL: zeros),
/// initial_h and initial_c [D, batch, hidden] (NULL: zeros), ONNX's gate orders (lstm i o f c, gru z r h), D = 2
/// for direction 2 (bidirectional; 0 forward, 1 reverse), G = 4, 3, 1. Writes one output: 0 y [seq, D, batch,
/// hidden], 1 y_h or 2 y_c (lstm) [D, batch, hidden]. linear_before_reset applies to gru. A loop over time steps
/// in f32 on the context's threads (docs/abi.md); docs/ir.md has the equations.
dscc_status dscc_rnn_f32(dscc_context* ctx, int32_t cell, int32_t direction, int32_t linear_before_reset,
                         int32_t output, int64_t seq, int64_t batch, int64_t input, int64_t hidden, const float* x,
                         const float* w, const float* r, const float* b, const float* initial_h,
                         const float* initial_c, float* y);

/// A scatter (the IR's `scatter`): out = a copy of data [rows, inner] (dtype), then for m = 0 .. count-1 in order
/// row indices[m] (index_dtype DSCC_I64 or DSCC_I32; negative ones count from the end once) replaced by row m of
/// updates [count, inner] (reduction 0), or combined with it elementwise: 1 add, 2 mul, 3 max, 4 min (NaN
/// propagates); so with duplicate indices the last update wins (0) or all combine in index order. Every index is
/// checked before anything is written: one outside [-rows, rows) returns DSCC_INVALID_ARGUMENT naming it. Floats
/// combine in f64 and round to the dtype once per update (f16/bf16 to nearest even), integers wrap; i1 takes
/// reduction 0 only. out may equal data. Column blocks run on the context's threads.
dscc_status dscc_scatter(dscc_context* ctx, int32_t dtype, int32_t reduction, int32_t index_dtype, int64_t rows,
                         int64_t count, int64_t inner, const void* data, const void* indices, const void* updates,
                         void* out);

/// A running sum (the IR's `cumsum`) of x [outer, len, inner] along len into y (same shape and dtype, not i1):
/// y[o, t, i] = the sum of x[o, s, i] for s <= t (exclusive: s < t; reverse: s >= t, or s > t). Floats accumulate
/// in f64 and each output rounds once (as the interpreter); integers wrap. Parallel over outer and column blocks.
dscc_status dscc_cumsum(dscc_context* ctx, int32_t dtype, int32_t exclusive, int32_t reverse, int64_t outer,
                        int64_t len, int64_t inner, const void* x, void* y);

/// What a profile record measured (dscc_profile_record.call).
typedef enum dscc_profile_call {
  DSCC_PROFILE_KERNEL = 0, ///< a kernel launch: one parallel loop over the kernel's units
  DSCC_PROFILE_GEMM = 1,   ///< a BLAS matrix multiply (dscc_sgemm_nd); sizes are M, N, K, batch
  DSCC_PROFILE_COPY = 2,   ///< a strided copy of a matmul operand to a dense layout; sizes are its dims
  DSCC_PROFILE_WINDOW = 3  ///< a conv or pool (dscc_conv_f32, dscc_pool_f32, dscc_pool_argmax_f32); sizes are the output's dims
} dscc_profile_call;

/// One kernel launch or library call recorded while profiling was on. The
/// strings come from the compiled model that made the call (static data in
/// it) and `sizes` from the runtime: both stay valid until dscc_profile_clear
/// or dscc_context_release, and the strings while the model stays loaded.
typedef struct dscc_profile_record {
  const char* name;               ///< the kernel, as `dscc explain` names it (`main.k3`); "?" for a launch with a NULL info
  const char* kind;               ///< its kind: loop, stitch, input, generic, library; "" when unknown
  const char* version;            ///< the version that ran (`v8.i32`); for library calls "sgemm" or "copy"
  const char* function;           ///< the function that ran (`main.k3.v8.i32`), what `dscc explain` prints as `runs:`
  int32_t call;                   ///< a dscc_profile_call
  int32_t n_sizes;                ///< entries of `sizes` (and of `size_names`)
  const char* const* size_names;  ///< kernel launches: the symbols `sizes` holds; library calls: "M", "N", "K", "batch"
  const int64_t* sizes;           ///< their values at this call
  const char* bytes_expr;         ///< kernel launches: bytes read and written, a dim expression over size_names; "" if unknown
  int64_t units;                  ///< kernel launches: parallel units; library calls: 0
  double bytes;                   ///< library calls: bytes read and written (0 for kernels: see bytes_expr)
  double flops;                   ///< library calls: floating-point operations (2*M*N*K*batch for a GEMM); 0 otherwise
  uint32_t thread;                ///< the calling thread: 1, 2, ... in the order threads first made a recorded call
  int64_t start_ns, end_ns;       ///< steady-clock nanoseconds at the call's start and end
} dscc_profile_record;

/// Turns profiling of `ctx` on (`on` != 0) or off. Off by default: a launch
/// then costs one predictable branch more. While on, every kernel launch and
/// library call on the context is recorded, from any thread. Records made so
/// far stay when it is turned off. DSCC_INVALID_ARGUMENT for NULL.
dscc_status dscc_context_set_profiling(dscc_context* ctx, int on);

/// 1 while `ctx` records a profile, else 0 (also for NULL).
int dscc_context_profiling(const dscc_context* ctx);

/// The number of records on `ctx` (0 for NULL), in the order the calls ended.
int64_t dscc_profile_count(const dscc_context* ctx);

/// Copies record `index` (0 <= index < dscc_profile_count) into `*out`.
/// DSCC_INVALID_ARGUMENT for NULL pointers or an index out of range.
dscc_status dscc_profile_get(const dscc_context* ctx, int64_t index, dscc_profile_record* out);

/// Drops every record of `ctx` (profiling stays on or off as it was). No
/// call on the context may be in flight. NULL is a no-op.
void dscc_profile_clear(dscc_context* ctx);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // DSCC_RUNTIME_H
