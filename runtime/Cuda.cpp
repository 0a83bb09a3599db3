// The CUDA driver through dlopen: per-context streams, a caching device allocator, module cache, launches, copies.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/Context.h"
#include "runtime/CudaInternal.h"
#include "runtime/dscc_cuda.h"

#if defined(DSCC_HAVE_CUDA_HEADERS) && __has_include(<cuda.h>)
#include <cuda.h>
#define DSCC_CUDA_ENABLED 1
#else
// Without the toolkit's headers the code below still compiles against these
// stand-ins, but loadDriver refuses before any of them could be called.
extern "C" {
typedef int CUresult;
typedef int CUdevice;
typedef int CUdevice_attribute;
typedef int CUjit_option;
typedef int CUfunction_attribute;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
CUresult cuInit(unsigned);
CUresult cuDeviceGetCount(int*);
CUresult cuDeviceGet(CUdevice*, int);
CUresult cuDeviceGetName(char*, int, CUdevice);
CUresult cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice);
CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuStreamCreate(CUstream*, unsigned);
CUresult cuStreamDestroy(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuMemAlloc(CUdeviceptr*, size_t);
CUresult cuMemFree(CUdeviceptr);
CUresult cuMemcpyHtoDAsync(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync(void*, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoDAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuModuleLoadDataEx(CUmodule*, const void*, unsigned, CUjit_option*, void**);
CUresult cuModuleUnload(CUmodule);
CUresult cuModuleGetFunction(CUfunction*, CUmodule, const char*);
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void**, void**);
CUresult cuGetErrorName(CUresult, const char**);
CUresult cuGetErrorString(CUresult, const char**);
}
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
#endif

// The functions resolved from libcuda. With the headers, `cuMemAlloc` and the
// like are macros for their current versions (cuMemAlloc_v2), so both the
// member names and the dlsym names below pick the versioned symbols.
#define DSCC_CU_FUNCTIONS(X)                                                                                     \
  X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)                      \
  X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)   \
  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernel)       \
  X(cuGetErrorName) X(cuGetErrorString)

#define DSCC_CU_STRING2(name) #name
#define DSCC_CU_STRING(name) DSCC_CU_STRING2(name)

using dscc::runtime::fail;
using dscc::runtime::guarded;

namespace {

/// The driver library and what it reported when loaded; one per process, never unloaded.
struct Driver {
  std::string error;  ///< why CUDA is unusable; empty when it is usable
#define DSCC_CU_MEMBER(name) decltype(&::name) name = nullptr;
  DSCC_CU_FUNCTIONS(DSCC_CU_MEMBER)
#undef DSCC_CU_MEMBER
  CUdevice device = 0;                    ///< device 0, the one dscc uses
  std::string name;                       ///< "NVIDIA H200 (sm_90)"
  std::once_flag primaryOnce;             ///< retains `primary` on first use
  CUcontext primary = nullptr;            ///< device 0's primary context, retained for the process's life
  CUresult primaryResult = CUDA_SUCCESS;  ///< how retaining it went
};

/// "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string describe(const Driver& d, const char* call, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(r, &text);
  return std::string(call) + " failed: " + (name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) +
         " (" + (text ? text : "no description") + ")";
}

/// The status a CUresult maps to (docs/gpu-runtime.md has the table).
dscc_status statusOf(CUresult r) {
#ifdef DSCC_CUDA_ENABLED
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY: return DSCC_OUT_OF_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return DSCC_INVALID_ARGUMENT;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND: return DSCC_UNAVAILABLE;
    default: return DSCC_INTERNAL;
  }
#else
  return DSCC_INTERNAL;
#endif
}

/// Loads libcuda and checks for a device; fills `d.error` on any failure.
void loadDriver(Driver& d) {
#ifndef DSCC_CUDA_ENABLED
  d.error = "the dscc runtime was built without the CUDA headers (cuda.h), so it cannot use a GPU";
  return;
#else
  void* lib = nullptr;
  std::string dlErrors;
  for (const char* file : {"libcuda.so.1", "libcuda.so"}) {
    lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* e = dlerror();
    dlErrors += std::string(dlErrors.empty() ? "" : "; ") + (e ? e : file);
  }
  if (!lib) {
    d.error = "no CUDA driver: dlopen of libcuda.so.1 failed (" + dlErrors + ")";
    return;
  }
#define DSCC_CU_RESOLVE(name)                                                                   \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, DSCC_CU_STRING(name)));               \
  if (!d.name) {                                                                                \
    d.error = std::string("the CUDA driver lacks ") + DSCC_CU_STRING(name) + "; it is too old"; \
    return;                                                                                     \
  }
  DSCC_CU_FUNCTIONS(DSCC_CU_RESOLVE)
#undef DSCC_CU_RESOLVE
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    d.error = "the CUDA driver does not start: " + describe(d, "cuInit", r);
    return;
  }
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    d.error = describe(d, "cuDeviceGetCount", r);
    return;
  }
  if (count < 1) {
    d.error = "the CUDA driver reports no device";
    return;
  }
  char name[256] = {};
  int major = 0, minor = 0;
  CUresult r = d.cuDeviceGet(&d.device, 0);
  if (r == CUDA_SUCCESS) r = d.cuDeviceGetName(name, sizeof name - 1, d.device);
  if (r == CUDA_SUCCESS) r = d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.device);
  if (r == CUDA_SUCCESS) r = d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.device);
  if (r != CUDA_SUCCESS) {
    d.error = describe(d, "querying CUDA device 0", r);
    return;
  }
  d.name = std::string(name) + " (sm_" + std::to_string(major) + std::to_string(minor) + ")";
#endif
}

/// The process's driver, loaded on first use. Leaked on purpose: nothing may
/// call into an unloaded driver from static destructors at exit.
Driver& driver() {
  static Driver* d = [] {
    auto* p = new Driver;
    try {
      loadDriver(*p);
    } catch (...) {
      p->error = "loading the CUDA driver ran out of memory";
    }
    return p;
  }();
  return *d;
}

/// Records the failure of `call` in `fn` and returns its status.
dscc_status cuFail(const dscc_context* ctx, const char* fn, const char* call, CUresult r) {
  return fail(ctx, statusOf(r), std::string(fn) + ": " + describe(driver(), call, r));
}

/// Calls driver function `f` with `args` (parenthesized) and returns early with its status on failure.
#define DSCC_CU_TRY(ctx, fn, f, args)                                                           \
  do {                                                                                          \
    if (CUresult dscc_r_ = driver().f args; dscc_r_ != CUDA_SUCCESS)                            \
      return cuFail(ctx, fn, DSCC_CU_STRING(f), dscc_r_);                                       \
  } while (0)

constexpr size_t kMinBlock = 256;

/// The size class of a request: at least 256 bytes, with four classes per
/// power of two above that, so a block wastes at most a quarter of itself
/// while freed blocks still serve requests of nearby sizes. 0 on overflow.
size_t sizeClass(size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  if (bytes > std::numeric_limits<size_t>::max() / 4) return 0;
  const int log = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes - 1));  // 2^log < bytes <= 2^(log+1)
  const size_t step = std::max<size_t>(kMinBlock, size_t{1} << (log - 2));
  return (bytes + step - 1) / step * step;
}

}  // namespace

/// A loaded module with its kernels looked up so far.
struct dscc_cuda_module {
  CUmodule module = nullptr;                                  ///< the driver's module
  const dscc::runtime::cuda::ContextState* owner = nullptr;  ///< the state of the context that loaded it
  /// A kernel and the dynamic shared memory it has been allowed so far.
  struct Kernel {
    CUfunction function = nullptr;
    uint32_t sharedAllowed = 48 * 1024;  // every kernel may use 48 KiB without asking
  };
  std::mutex mutex;  ///< guards `kernels`
  std::unordered_map<std::string, Kernel> kernels;
};

namespace dscc::runtime::cuda {

/// A context's stream, allocator cache, modules and cuBLAS handle (docs/gpu-runtime.md).
struct ContextState {
  CUstream stream = nullptr;  ///< all of the context's work is queued here, in call order
  std::mutex memoryMutex;                          ///< guards the two maps below
  std::unordered_map<CUdeviceptr, size_t> live;    ///< handed-out block -> its size class
  std::map<size_t, std::vector<CUdeviceptr>> cached;  ///< size class -> freed blocks
  std::mutex moduleMutex;                          ///< guards `modules` (loads can take long)
  std::unordered_map<const void*, std::unique_ptr<dscc_cuda_module>> modules;
  BlasSlot blas;

  /// Frees every cached block (to retry a failed cuMemAlloc); the caller holds memoryMutex.
  void dropCache() {
    for (auto& [size, blocks] : cached)
      for (CUdeviceptr p : blocks) driver().cuMemFree(p);
    cached.clear();
  }
};

namespace {

/// The states of live contexts, keyed by dscc_context::id (never reused, unlike
/// addresses). Leaked like the driver, for the same reason.
struct StateTable {
  std::mutex mutex;
  std::unordered_map<uint64_t, std::unique_ptr<ContextState>> states;
};
StateTable& table() {
  static StateTable* t = new StateTable;
  return *t;
}

}  // namespace

dscc_status acquire(dscc_context* ctx, const char* fn, ContextState** out) {
  Driver& d = driver();
  if (!d.error.empty()) return fail(ctx, DSCC_UNAVAILABLE, std::string(fn) + ": " + d.error);
  std::call_once(d.primaryOnce, [&d] { d.primaryResult = d.cuDevicePrimaryCtxRetain(&d.primary, d.device); });
  if (d.primaryResult != CUDA_SUCCESS) return cuFail(ctx, fn, "cuDevicePrimaryCtxRetain", d.primaryResult);
  // Every thread needs the context current; setting it is cheap and keeps a
  // caller that switched contexts itself from sending work to the wrong one.
  DSCC_CU_TRY(ctx, fn, cuCtxSetCurrent, (d.primary));
  StateTable& t = table();
  std::lock_guard lock(t.mutex);
  auto& slot = t.states[ctx->id];
  if (!slot) {
    auto state = std::make_unique<ContextState>();
    if (CUresult r = d.cuStreamCreate(&state->stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
      t.states.erase(ctx->id);
      return cuFail(ctx, fn, "cuStreamCreate", r);
    }
    slot = std::move(state);
  }
  *out = slot.get();
  return DSCC_OK;
}

void* stream(ContextState* state) { return state->stream; }

BlasSlot& blas(ContextState* state) { return state->blas; }

}  // namespace dscc::runtime::cuda

namespace dscc::runtime {

void releaseCuda(const dscc_context* ctx) noexcept {
  if (!ctx) return;
  std::unique_ptr<cuda::ContextState> state;
  {
    cuda::StateTable& t = cuda::table();
    std::lock_guard lock(t.mutex);
    auto it = t.states.find(ctx->id);
    if (it == t.states.end()) return;
    state = std::move(it->second);
    t.states.erase(it);
  }
  // A state exists only once the driver loaded and the primary context was retained.
  Driver& d = driver();
  d.cuCtxSetCurrent(d.primary);
  d.cuStreamSynchronize(state->stream);
  if (state->blas.handle && state->blas.destroy) state->blas.destroy(state->blas.handle);
  for (auto& [image, m] : state->modules) d.cuModuleUnload(m->module);
  for (auto& [p, size] : state->live) d.cuMemFree(p);
  state->dropCache();
  d.cuStreamDestroy(state->stream);
}

}  // namespace dscc::runtime

using dscc::runtime::cuda::acquire;
using dscc::runtime::cuda::ContextState;

namespace {

/// The checks shared by the copies: a context, and pointers wherever bytes move.
dscc_status checkCopy(const dscc_context* ctx, const char* fn, const void* dst, const void* src, size_t bytes) {
  if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(fn) + ": ctx is NULL");
  if (bytes > 0 && (!dst || !src))
    return fail(ctx, DSCC_INVALID_ARGUMENT,
                std::string(fn) + ": dst or src is NULL with " + std::to_string(bytes) + " bytes to copy");
  return DSCC_OK;
}

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

/// Loads `image` as a module, with the JIT's error log in the message on failure.
CUresult loadModule(const void* image, CUmodule* out, std::string* log) {
  char buffer[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {buffer, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof buffer - 1))};
  const CUresult r = driver().cuModuleLoadDataEx(out, image, 2, options, values);
  if (r != CUDA_SUCCESS && buffer[0]) *log = buffer;
  return r;
}

}  // namespace

extern "C" {

int dscc_cuda_available(void) {
  const Driver& d = driver();
  if (d.error.empty()) return 1;
  fail(nullptr, DSCC_UNAVAILABLE, "dscc_cuda_available: " + d.error);
  return 0;
}

dscc_status dscc_cuda_device_name(dscc_context* ctx, char* buf, size_t size) {
  static constexpr const char* kName = "dscc_cuda_device_name";
  return guarded(ctx, kName, [&] {
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(kName) + ": ctx is NULL");
    if (!buf || size == 0) return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(kName) + ": buf is NULL or size is 0");
    const Driver& d = driver();
    if (!d.error.empty()) return fail(ctx, DSCC_UNAVAILABLE, std::string(kName) + ": " + d.error);
    std::snprintf(buf, size, "%s", d.name.c_str());
    return DSCC_OK;
  });
}

dscc_status dscc_cuda_module_get(dscc_context* ctx, const void* image, const void* fallback_ptx,
                                 dscc_cuda_module** out) {
  static constexpr const char* kName = "dscc_cuda_module_get";
  return guarded(ctx, kName, [&] {
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(kName) + ": ctx is NULL");
    if (!image || !out) return fail(ctx, DSCC_INVALID_ARGUMENT, std::string(kName) + ": image or out is NULL");
    *out = nullptr;
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    std::lock_guard lock(s->moduleMutex);
    if (auto it = s->modules.find(image); it != s->modules.end()) {
      *out = it->second.get();
      return DSCC_OK;
    }
    CUmodule module = nullptr;
    std::string log;
    CUresult r = loadModule(image, &module, &log);
    if (r != CUDA_SUCCESS && fallback_ptx) {
      std::string fallbackLog;
      const CUresult r2 = loadModule(fallback_ptx, &module, &fallbackLog);
      if (r2 != CUDA_SUCCESS) {
        std::string message = std::string(kName) + ": the image and the fallback PTX both fail to load; image: " +
                              describe(driver(), "cuModuleLoadDataEx", r) + (log.empty() ? "" : "\n" + log) +
                              "\nfallback: " + describe(driver(), "cuModuleLoadDataEx", r2) +
                              (fallbackLog.empty() ? "" : "\n" + fallbackLog);
        return fail(ctx, statusOf(r2), message);
      }
      r = r2;
    }
    if (r != CUDA_SUCCESS)
      return fail(ctx, statusOf(r), std::string(kName) + ": " + describe(driver(), "cuModuleLoadDataEx", r) +
                                        (log.empty() ? "" : "\n" + log));
    auto m = std::make_unique<dscc_cuda_module>();
    m->module = module;
    m->owner = s;
    *out = m.get();
    s->modules.emplace(image, std::move(m));
    return DSCC_OK;
  });
}

dscc_status dscc_cuda_launch(dscc_context* ctx, dscc_cuda_module* m, const char* name, int64_t grid,
                             int32_t block, uint32_t shared_bytes, void** params) {
  static constexpr const char* kName = "dscc_cuda_launch";
  return guarded(ctx, kName, [&] {
    const std::string fn(kName);
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, fn + ": ctx is NULL");
    if (!m || !name) return fail(ctx, DSCC_INVALID_ARGUMENT, fn + ": module or kernel name is NULL");
    if (grid < 0 || grid > std::numeric_limits<int32_t>::max())
      return fail(ctx, DSCC_INVALID_ARGUMENT, fn + ": grid is " + std::to_string(grid) + "; must be in [0, 2^31)");
    if (block < 1 || block > 1024)
      return fail(ctx, DSCC_INVALID_ARGUMENT, fn + ": block is " + std::to_string(block) + "; must be in [1, 1024]");
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    if (m->owner != s)
      return fail(ctx, DSCC_INVALID_ARGUMENT, fn + ": the module was loaded on another context");
    if (grid == 0) return DSCC_OK;
    const Driver& d = driver();
    CUfunction function = nullptr;
    {
      std::lock_guard lock(m->mutex);
      auto it = m->kernels.find(name);
      if (it == m->kernels.end()) {
        dscc_cuda_module::Kernel k;
        if (CUresult r = d.cuModuleGetFunction(&k.function, m->module, name); r != CUDA_SUCCESS)
          return fail(ctx, statusOf(r), fn + ": kernel \"" + name + "\": " + describe(d, "cuModuleGetFunction", r));
        it = m->kernels.emplace(name, k).first;
      }
      // Beyond 48 KiB of dynamic shared memory a kernel must opt in, once.
      if (shared_bytes > it->second.sharedAllowed) {
        DSCC_CU_TRY(ctx, kName, cuFuncSetAttribute,
                    (it->second.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     static_cast<int>(shared_bytes)));
        it->second.sharedAllowed = shared_bytes;
      }
      function = it->second.function;
    }
    DSCC_CU_TRY(ctx, kName, cuLaunchKernel,
                (function, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1, shared_bytes,
                 s->stream, params, nullptr));
    return DSCC_OK;
  });
}

void* dscc_cuda_alloc(dscc_context* ctx, size_t bytes) {
  static constexpr const char* kName = "dscc_cuda_alloc";
  void* result = nullptr;
  guarded(ctx, kName, [&] {
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(kName) + ": ctx is NULL");
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    const size_t size = sizeClass(bytes);
    if (size == 0)
      return fail(ctx, DSCC_OUT_OF_MEMORY, std::string(kName) + ": " + std::to_string(bytes) + " bytes is too large");
    std::lock_guard lock(s->memoryMutex);
    // Reserve the map entry first, so that recording the block cannot fail after it was allocated.
    s->live.reserve(s->live.size() + 1);
    CUdeviceptr p = 0;
    if (auto it = s->cached.find(size); it != s->cached.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
    } else {
      const Driver& d = driver();
      CUresult r = d.cuMemAlloc(&p, size);
      if (r != CUDA_SUCCESS && statusOf(r) == DSCC_OUT_OF_MEMORY && !s->cached.empty()) {
        s->dropCache();
        r = d.cuMemAlloc(&p, size);
      }
      if (r != CUDA_SUCCESS)
        return fail(ctx, statusOf(r),
                    std::string(kName) + ": " + std::to_string(bytes) + " bytes: " +
                        describe(d, DSCC_CU_STRING(cuMemAlloc), r));
    }
    s->live.emplace(p, size);
    result = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
    return DSCC_OK;
  });
  return result;
}

void dscc_cuda_free(dscc_context* ctx, void* ptr) {
  static constexpr const char* kName = "dscc_cuda_free";
  if (!ptr) return;
  guarded(ctx, kName, [&] {
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(kName) + ": ctx is NULL");
    ContextState* s = nullptr;
    {
      // A context with no CUDA state handed out no blocks: no need to load anything to say so.
      auto& t = dscc::runtime::cuda::table();
      std::lock_guard lock(t.mutex);
      if (auto it = t.states.find(ctx->id); it != t.states.end()) s = it->second.get();
    }
    const auto notOurs = [&] {
      return fail(ctx, DSCC_INVALID_ARGUMENT,
                  std::string(kName) + ": the pointer is not a live block of dscc_cuda_alloc on this context");
    };
    if (!s) return notOurs();
    std::lock_guard lock(s->memoryMutex);
    auto it = s->live.find(dptr(ptr));
    if (it == s->live.end()) return notOurs();
    s->cached[it->second].push_back(it->first);
    s->live.erase(it);
    return DSCC_OK;
  });
}

dscc_status dscc_cuda_copy_to_device(dscc_context* ctx, void* dst, const void* src, size_t bytes) {
  static constexpr const char* kName = "dscc_cuda_copy_to_device";
  return guarded(ctx, kName, [&] {
    if (dscc_status st = checkCopy(ctx, kName, dst, src, bytes); st != DSCC_OK) return st;
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    if (bytes > 0) DSCC_CU_TRY(ctx, kName, cuMemcpyHtoDAsync, (dptr(dst), src, bytes, s->stream));
    return DSCC_OK;
  });
}

dscc_status dscc_cuda_copy_to_host(dscc_context* ctx, void* dst, const void* src, size_t bytes) {
  static constexpr const char* kName = "dscc_cuda_copy_to_host";
  return guarded(ctx, kName, [&] {
    if (dscc_status st = checkCopy(ctx, kName, dst, src, bytes); st != DSCC_OK) return st;
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    if (bytes > 0) DSCC_CU_TRY(ctx, kName, cuMemcpyDtoHAsync, (dst, dptr(src), bytes, s->stream));
    DSCC_CU_TRY(ctx, kName, cuStreamSynchronize, (s->stream));
    return DSCC_OK;
  });
}

dscc_status dscc_cuda_copy_device(dscc_context* ctx, void* dst, const void* src, size_t bytes) {
  static constexpr const char* kName = "dscc_cuda_copy_device";
  return guarded(ctx, kName, [&] {
    if (dscc_status st = checkCopy(ctx, kName, dst, src, bytes); st != DSCC_OK) return st;
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    if (bytes > 0) DSCC_CU_TRY(ctx, kName, cuMemcpyDtoDAsync, (dptr(dst), dptr(src), bytes, s->stream));
    return DSCC_OK;
  });
}

dscc_status dscc_cuda_memset_zero(dscc_context* ctx, void* dst, size_t bytes) {
  static constexpr const char* kName = "dscc_cuda_memset_zero";
  return guarded(ctx, kName, [&] {
    if (dscc_status st = checkCopy(ctx, kName, dst, dst, bytes); st != DSCC_OK) return st;
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    if (bytes > 0) DSCC_CU_TRY(ctx, kName, cuMemsetD8Async, (dptr(dst), 0, bytes, s->stream));
    return DSCC_OK;
  });
}

dscc_status dscc_cuda_synchronize(dscc_context* ctx) {
  static constexpr const char* kName = "dscc_cuda_synchronize";
  return guarded(ctx, kName, [&] {
    if (!ctx) return fail(nullptr, DSCC_INVALID_ARGUMENT, std::string(kName) + ": ctx is NULL");
    ContextState* s = nullptr;
    if (dscc_status st = acquire(ctx, kName, &s); st != DSCC_OK) return st;
    DSCC_CU_TRY(ctx, kName, cuStreamSynchronize, (s->stream));
    return DSCC_OK;
  });
}

}  // extern "C"
