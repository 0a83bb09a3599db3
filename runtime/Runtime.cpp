// The C ABI's contexts, status messages, dtypes, aligned buffers, tensor checks, parallel_for and strided copies.
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "runtime/Blas.h"
#include "runtime/Context.h"
#include "runtime/CudaInternal.h"
#include "runtime/dscc_runtime.h"

using dscc::runtime::fail;
using dscc::runtime::guarded;

namespace {

// A bound that catches garbage passed as a thread count before it starts
// thousands of threads; far above any machine dscc targets.
constexpr int kMaxThreads = 1024;
constexpr size_t kAlignment = 64;

uint64_t nextContextId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

/// The calling thread's last failure. Thread-local so that concurrent callers
/// on one context each read their own message without locking.
struct LastError {
  uint64_t contextId = 0;  // 0: the failing call had no context
  std::string message;
};
thread_local LastError tlsLastError;

/// The dtype a caller stored, as an int: a C caller may store any int in
/// the enum, and loading a value outside the enum's range as a dscc_dtype
/// is undefined in C++ (UBSan's -fsanitize=enum found it), so it is read as
/// bytes and only used as a dscc_dtype once validDType accepts it.
int rawDType(const dscc_dtype& t) {
  int v = 0;
  static_assert(sizeof(dscc_dtype) == sizeof(int), "dscc_dtype is an int-sized enum");
  std::memcpy(&v, &t, sizeof v);
  return v;
}

bool validDType(int t) { return t >= DSCC_F32 && t <= DSCC_I1; }

/// `f32[2, 64, 768]`, the IR's spelling, for messages.
std::string describe(dscc_dtype dtype, int32_t rank, const int64_t* dims) {
  std::string s = dscc_dtype_name(dtype);
  s += '[';
  for (int32_t i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += dims ? std::to_string(dims[i]) : "?";
  }
  return s + ']';
}

// A strided copy's chunk of rows should move at least this many bytes, so
// that handing it to a worker costs less than the copy itself.
constexpr int64_t kMinCopyChunkBytes = 64 * 1024;

/// Copies `n` elements of `size` bytes from `src` (every `stride` elements) to dense `dst`.
void copyRow(char* dst, const char* src, int64_t n, int64_t stride, size_t size) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * size);
    return;
  }
  // Fixed sizes let the compiler turn the memcpy into one load and store.
  const auto loop = [&](auto tag) {
    constexpr size_t kSize = sizeof(tag);
    const int64_t step = stride * static_cast<int64_t>(kSize);
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(kSize), src + i * step, kSize);
  };
  switch (size) {
    case 1: loop(uint8_t{}); return;
    case 2: loop(uint16_t{}); return;
    case 4: loop(uint32_t{}); return;
    case 8: loop(uint64_t{}); return;
    default: break;
  }
  const int64_t step = stride * static_cast<int64_t>(size);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(size), src + i * step, size);
}

}  // namespace

dscc_context::dscc_context(int numThreads) : pool(numThreads), id(nextContextId()) {}

namespace dscc::runtime {

dscc_status fail(const dscc_context* ctx, dscc_status status, std::string_view message) noexcept {
  tlsLastError.contextId = ctx ? ctx->id : 0;
  try {
    tlsLastError.message.assign(message);
  } catch (...) {
    // clear() keeps the capacity, so the short name fits unless the string never held anything.
    tlsLastError.message.clear();
    try {
      tlsLastError.message.assign(dscc_status_name(status));
    } catch (...) {
    }
  }
  return status;
}

}  // namespace dscc::runtime

extern "C" {

int dscc_abi_version(void) { return DSCC_ABI_VERSION; }

dscc_context* dscc_context_create(int num_threads) {
  dscc_context* ctx = nullptr;
  dscc_status st = guarded(nullptr, "dscc_context_create", [&] {
    if (num_threads < 0 || num_threads > kMaxThreads)
      return fail(nullptr, DSCC_INVALID_ARGUMENT,
                  "dscc_context_create: num_threads is " + std::to_string(num_threads) +
                      "; give 0 for one per hardware thread or a count from 1 to " + std::to_string(kMaxThreads));
    if (num_threads == 0)
      num_threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, kMaxThreads));
    // Before any context can call the BLAS, so its threading is settled once.
    dscc::runtime::initBlas();
    ctx = new dscc_context(num_threads);
    return DSCC_OK;
  });
  return st == DSCC_OK ? ctx : nullptr;
}

void dscc_context_release(dscc_context* ctx) {
  dscc::runtime::releaseCuda(ctx);
  delete ctx;
}

int dscc_context_num_threads(const dscc_context* ctx) { return ctx ? ctx->pool.numThreads() : 0; }

const char* dscc_status_name(dscc_status status) {
  switch (status) {
    case DSCC_OK: return "OK";
    case DSCC_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case DSCC_SHAPE_MISMATCH: return "SHAPE_MISMATCH";
    case DSCC_FACT_VIOLATED: return "FACT_VIOLATED";
    case DSCC_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case DSCC_INTERNAL: return "INTERNAL";
    case DSCC_UNAVAILABLE: return "UNAVAILABLE";
  }
  return "UNKNOWN";
}

const char* dscc_status_message(const dscc_context* ctx) {
  if (ctx && ctx->id != tlsLastError.contextId) return "";
  return tlsLastError.message.c_str();
}

dscc_status dscc_set_error(const dscc_context* ctx, dscc_status status, const char* format, ...) {
  if (!format) return fail(ctx, status, dscc_status_name(status));
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string message;
  if (length < 0) {
    message = dscc_status_name(status);
  } else {
    try {
      message.resize(static_cast<size_t>(length) + 1);
      std::vsnprintf(message.data(), message.size(), format, again);
      message.resize(static_cast<size_t>(length));
    } catch (...) {
      message.clear();
    }
  }
  va_end(again);
  return fail(ctx, status, message);
}

size_t dscc_dtype_size(dscc_dtype dtype) {
  switch (dtype) {
    case DSCC_F32: return 4;
    case DSCC_F16: return 2;
    case DSCC_BF16: return 2;
    case DSCC_F64: return 8;
    case DSCC_I64: return 8;
    case DSCC_I32: return 4;
    case DSCC_I8: return 1;
    case DSCC_I1: return 1;
  }
  return 0;
}

const char* dscc_dtype_name(dscc_dtype dtype) {
  switch (dtype) {
    case DSCC_F32: return "f32";
    case DSCC_F16: return "f16";
    case DSCC_BF16: return "bf16";
    case DSCC_F64: return "f64";
    case DSCC_I64: return "i64";
    case DSCC_I32: return "i32";
    case DSCC_I8: return "i8";
    case DSCC_I1: return "i1";
  }
  return "?";
}

int64_t dscc_tensor_numel(const dscc_tensor* tensor) {
  if (!tensor || tensor->rank < 0 || (tensor->rank > 0 && !tensor->dims)) return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < tensor->rank; ++i) {
    const int64_t d = tensor->dims[i];
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

namespace {

// Every dscc_alloc block starts with this header, one alignment unit before
// the pointer handed out, so dscc_free knows the capacity whichever context
// (or none) frees it.
struct BlockHeader {
  size_t capacity;  // bytes after the header
  uint64_t magic;
};
constexpr uint64_t kBlockMagic = 0x64736363626c6b31;  // "dsccblk1"
static_assert(sizeof(BlockHeader) <= kAlignment);

}  // namespace

void* dscc_alloc(dscc_context* ctx, size_t bytes) {
  // Whole alignment units, at least one: a zero request still gets a distinct, non-null block.
  if (bytes > std::numeric_limits<size_t>::max() - 2 * kAlignment) {
    fail(ctx, DSCC_OUT_OF_MEMORY, "dscc_alloc: could not allocate " + std::to_string(bytes) + " bytes");
    return nullptr;
  }
  size_t capacity = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* raw = ctx ? ctx->blocks.take(capacity, capacity) : nullptr;
  if (!raw) raw = std::aligned_alloc(kAlignment, capacity + kAlignment);
  if (!raw) {
    guarded(ctx, "dscc_alloc", [&] {
      return fail(ctx, DSCC_OUT_OF_MEMORY, "dscc_alloc: could not allocate " + std::to_string(bytes) + " bytes");
    });
    return nullptr;
  }
  auto* h = static_cast<BlockHeader*>(raw);
  h->capacity = capacity;
  h->magic = kBlockMagic;
  return static_cast<char*>(raw) + kAlignment;
}

void dscc_free(dscc_context* ctx, void* ptr) {
  if (!ptr) return;
  void* raw = static_cast<char*>(ptr) - kAlignment;
  auto* h = static_cast<BlockHeader*>(raw);
  if (h->magic != kBlockMagic) {
    // Not from dscc_alloc, or freed twice: the heap may be corrupt already.
    std::fputs("dscc_free: the pointer was not returned by dscc_alloc, or was freed twice\n", stderr);
    std::abort();
  }
  h->magic = 0;
  if (!ctx || !ctx->blocks.put(raw, h->capacity)) std::free(raw);
}

dscc_status dscc_tensor_alloc(dscc_context* ctx, dscc_tensor* tensor) {
  return guarded(ctx, "dscc_tensor_alloc", [&] {
    if (!tensor) return fail(ctx, DSCC_INVALID_ARGUMENT, "dscc_tensor_alloc: tensor is NULL");
    if (tensor->data)
      return fail(ctx, DSCC_INVALID_ARGUMENT, "dscc_tensor_alloc: tensor->data is already set; it must be NULL");
    if (!validDType(rawDType(tensor->dtype)))
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  "dscc_tensor_alloc: dtype " + std::to_string(rawDType(tensor->dtype)) + " is not a dtype");
    const int64_t n = dscc_tensor_numel(tensor);
    if (n < 0)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  "dscc_tensor_alloc: the dims of " +
                      describe(tensor->dtype, std::max(tensor->rank, 0), tensor->dims) +
                      " are missing, negative or overflow");
    const size_t elem = dscc_dtype_size(tensor->dtype);
    if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / elem)
      return fail(ctx, DSCC_OUT_OF_MEMORY,
                  "dscc_tensor_alloc: " + describe(tensor->dtype, tensor->rank, tensor->dims) +
                      " is more than can be allocated");
    tensor->data = dscc_alloc(ctx, static_cast<size_t>(n) * elem);
    return tensor->data ? DSCC_OK : DSCC_OUT_OF_MEMORY;
  });
}

void dscc_tensor_free(dscc_tensor* tensor) {
  if (!tensor) return;
  dscc_free(nullptr, tensor->data);
  tensor->data = nullptr;
}

dscc_status dscc_check_input_named(dscc_context* ctx, const dscc_tensor* tensor, int index, const char* arg_name,
                                   dscc_dtype dtype, int32_t rank) {
  return guarded(ctx, "dscc_check_input", [&] {
    const std::string name =
        "input " + std::to_string(index) + (arg_name && *arg_name ? std::string(" (") + arg_name + ")" : "");
    if (!tensor) return fail(ctx, DSCC_INVALID_ARGUMENT, name + " is NULL");
    if (!validDType(rawDType(tensor->dtype)))
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + " has dtype value " +
                                                  std::to_string(rawDType(tensor->dtype)) +
                                                  ", which is not a dtype; expected " + dscc_dtype_name(dtype));
    if (tensor->dtype != dtype)
      return fail(ctx, DSCC_SHAPE_MISMATCH,
                  name + " has dtype " + dscc_dtype_name(tensor->dtype) + "; expected " + dscc_dtype_name(dtype));
    if (tensor->rank != rank)
      return fail(ctx, DSCC_SHAPE_MISMATCH,
                  name + " has rank " + std::to_string(tensor->rank) + "; expected " + std::to_string(rank));
    if (rank > 0 && !tensor->dims) return fail(ctx, DSCC_INVALID_ARGUMENT, name + " has rank " +
                                                                               std::to_string(rank) + " but dims is NULL");
    for (int32_t i = 0; i < rank; ++i)
      if (tensor->dims[i] < 0)
        return fail(ctx, DSCC_INVALID_ARGUMENT, name + " " + describe(dtype, rank, tensor->dims) + ": dim " +
                                                    std::to_string(i) + " is negative");
    const int64_t n = dscc_tensor_numel(tensor);
    if (n < 0)
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + " " + describe(dtype, rank, tensor->dims) +
                                                  ": the element count overflows");
    if (n > 0 && !tensor->data)
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + " " + describe(dtype, rank, tensor->dims) + " has no data");
    // Kernels load whole elements (and vectors, whose versions test their
    // own alignment): data must at least be aligned to its element size.
    const size_t elem = dscc_dtype_size(dtype);
    if (n > 0 && reinterpret_cast<uintptr_t>(tensor->data) % elem != 0)
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + " " + describe(dtype, rank, tensor->dims) +
                                                  ": data is not aligned to its " + std::to_string(elem) +
                                                  "-byte elements");
    // Byte sizes past 2^62 cannot be real memory and would overflow offsets.
    if (n > (int64_t(1) << 62) / static_cast<int64_t>(elem))
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + " " + describe(dtype, rank, tensor->dims) +
                                                  ": the byte size is larger than any memory");
    return DSCC_OK;
  });
}

dscc_status dscc_check_input(dscc_context* ctx, const dscc_tensor* tensor, int index, dscc_dtype dtype,
                             int32_t rank) {
  return dscc_check_input_named(ctx, tensor, index, nullptr, dtype, rank);
}

dscc_status dscc_check_no_alias(dscc_context* ctx, const dscc_tensor* inputs, int n_in, const dscc_tensor* outputs,
                                int n_out) {
  return guarded(ctx, "dscc_check_no_alias", [&] {
    if (n_in < 0 || n_out < 0 || (n_in > 0 && !inputs) || (n_out > 0 && !outputs))
      return fail(ctx, DSCC_INVALID_ARGUMENT, "dscc_check_no_alias: bad counts or NULL arrays");
    // [begin, end) of a tensor's bytes; empty tensors touch nothing.
    auto span = [](const dscc_tensor& t) -> std::pair<uintptr_t, uintptr_t> {
      int64_t n = dscc_tensor_numel(&t);
      size_t e = dscc_dtype_size(t.dtype);
      if (!t.data || n <= 0 || e == 0) return {0, 0};
      uintptr_t b = reinterpret_cast<uintptr_t>(t.data);
      return {b, b + static_cast<uintptr_t>(n) * e};
    };
    auto overlap = [](std::pair<uintptr_t, uintptr_t> a, std::pair<uintptr_t, uintptr_t> b) {
      return a.first < a.second && b.first < b.second && a.first < b.second && b.first < a.second;
    };
    for (int o = 0; o < n_out; ++o) {
      auto so = span(outputs[o]);
      for (int i = 0; i < n_in; ++i)
        if (overlap(so, span(inputs[i])))
          return fail(ctx, DSCC_INVALID_ARGUMENT, "output " + std::to_string(o) + " overlaps input " +
                                                      std::to_string(i) +
                                                      " (outputs are written while inputs are read; they may not alias)");
      for (int p = 0; p < o; ++p)
        if (overlap(so, span(outputs[p])))
          return fail(ctx, DSCC_INVALID_ARGUMENT,
                      "output " + std::to_string(o) + " overlaps output " + std::to_string(p));
    }
    return DSCC_OK;
  });
}

dscc_status dscc_prepare_output(dscc_context* ctx, dscc_tensor* tensor, int index, dscc_dtype dtype,
                                int32_t rank, const int64_t* dims) {
  return guarded(ctx, "dscc_prepare_output", [&] {
    const std::string name = "output " + std::to_string(index);
    if (!tensor) return fail(ctx, DSCC_INVALID_ARGUMENT, name + " is NULL");
    if (!validDType(dtype) || rank < 0 || (rank > 0 && !dims))
      return fail(ctx, DSCC_INVALID_ARGUMENT, "dscc_prepare_output: bad dtype, rank or dims for " + name);
    if (tensor->rank != rank)
      return fail(ctx, DSCC_SHAPE_MISMATCH, name + " is " + describe(dtype, rank, dims) +
                                                "; the caller's tensor has rank " + std::to_string(tensor->rank));
    if (rank > 0 && !tensor->dims)
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  name + ": dims is NULL; the caller must give room for " + std::to_string(rank) + " dims");
    if (!tensor->data) {
      std::copy(dims, dims + rank, tensor->dims);
      tensor->dtype = dtype;
      return dscc_tensor_alloc(ctx, tensor);
    }
    if (tensor->dtype != dtype || !std::equal(dims, dims + rank, tensor->dims))
      return fail(ctx, DSCC_SHAPE_MISMATCH,
                  name + " is " + describe(dtype, rank, dims) + "; the caller's buffer is " +
                      describe(tensor->dtype, tensor->rank, tensor->dims));
    return DSCC_OK;
  });
}

dscc_status dscc_parallel_for(dscc_context* ctx, int64_t n, int64_t grain, dscc_parallel_body body,
                              void* closure) {
  return guarded(ctx, "dscc_parallel_for", [&] {
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, "dscc_parallel_for: ctx is NULL");
    if (!body) return fail(ctx, DSCC_INVALID_ARGUMENT, "dscc_parallel_for: body is NULL");
    if (n < 0) return fail(ctx, DSCC_INVALID_ARGUMENT, "dscc_parallel_for: n is " + std::to_string(n) + "; must be >= 0");
    ctx->pool.parallelFor(0, n, grain, body, closure);
    return DSCC_OK;
  });
}

dscc_status dscc_copy_strided(dscc_context* ctx, void* dst, const void* src, size_t elem_size, int32_t rank,
                              const int64_t* dims, const int64_t* strides) {
  return guarded(ctx, "dscc_copy_strided", [&] {
    const std::string name = "dscc_copy_strided";
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, name + ": ctx is NULL");
    if (elem_size == 0) return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": elem_size is 0");
    if (rank < 0) return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": rank is " + std::to_string(rank) + "; must be >= 0");
    if (rank > 0 && (!dims || !strides))
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": dims or strides is NULL with rank > 0");
    // Dims of 1 are dropped and neighbours one stride covers are merged, so
    // a view that is dense in its inner dims copies whole runs with memcpy.
    std::vector<int64_t> n, st;
    int64_t total = 1;
    for (int32_t k = 0; k < rank; ++k) {
      if (dims[k] < 0)
        return fail(ctx, DSCC_INVALID_ARGUMENT,
                    name + ": dims[" + std::to_string(k) + "] is " + std::to_string(dims[k]) + "; must be >= 0");
      if (__builtin_mul_overflow(total, dims[k], &total))
        return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": the element count overflows 64 bits");
      if (dims[k] == 1) continue;
      if (!n.empty() && st.back() == strides[k] * dims[k]) {
        n.back() *= dims[k];
        st.back() = strides[k];
        continue;
      }
      n.push_back(dims[k]);
      st.push_back(strides[k]);
    }
    if (total == 0) return DSCC_OK;
    int64_t bytes = 0;
    if (__builtin_mul_overflow(total, static_cast<int64_t>(elem_size), &bytes))
      return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": the byte count overflows 64 bits");
    if (!dst || !src) return fail(ctx, DSCC_INVALID_ARGUMENT, name + ": dst or src is NULL");
    if (n.empty()) {
      std::memcpy(dst, src, elem_size);
      return DSCC_OK;
    }
    const int64_t inner = n.back(), innerStride = st.back();
    const int64_t rows = total / inner;
    const size_t outer = n.size() - 1;
    const int64_t esz = static_cast<int64_t>(elem_size);
    const auto copyRows = [&](int64_t begin, int64_t end) {
      // The source offset of row `begin`, then an odometer over the outer dims.
      std::vector<int64_t> idx(outer);
      int64_t off = 0;
      for (size_t k = outer, r = static_cast<size_t>(begin); k-- > 0;) {
        idx[k] = static_cast<int64_t>(r % static_cast<size_t>(n[k]));
        r /= static_cast<size_t>(n[k]);
        off += idx[k] * st[k];
      }
      char* out = static_cast<char*>(dst) + begin * inner * esz;
      const char* in = static_cast<const char*>(src);
      for (int64_t row = begin; row < end; ++row, out += inner * esz) {
        copyRow(out, in + off * esz, inner, innerStride, elem_size);
        for (size_t k = outer; k-- > 0;) {
          off += st[k];
          if (++idx[k] < n[k]) break;
          off -= st[k] * n[k];
          idx[k] = 0;
        }
      }
    };
    const int64_t grain = std::max<int64_t>(1, kMinCopyChunkBytes / std::max<int64_t>(1, inner * esz));
    if (rows <= grain) copyRows(0, rows);
    else ctx->pool.parallelFor(0, rows, grain, copyRows);
    return DSCC_OK;
  });
}

}  // extern "C"
