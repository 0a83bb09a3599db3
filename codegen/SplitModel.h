// A model's LLVM module split for separate compilation: one module per distinct kernel function, keyed by its content, and the host module, compiled on a thread pool.
//
// Each kernel function (every version of every kernel, tuned ones included)
// moves to a module of its own, named by the SHA-256 of its IR
// (`dscc.k.<16 hex digits>`, hidden visibility, so the linked library still
// exports nothing else); the host module keeps a declaration. Kernels whose IR
// is equal (the same layer repeated) become one function. A kernel's cache key
// is the SHA-256 of the caller's salt (compiler identity, target, options)
// and its IR text; the host module's key likewise. Compiling a kernel parses
// its bitcode into a context of its own, so kernels compile in parallel, and
// a kernel's object is the same bytes whichever model or thread produced it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/ObjectEmitter.h"

namespace dscc::codegen {

class CodeModule;
struct ModelPlan;

/// The pieces of one model after split().
class SplitModel {
 public:
  /// An empty split; split() fills it.
  SplitModel();
  ~SplitModel();
  SplitModel(const SplitModel&) = delete;
  SplitModel& operator=(const SplitModel&) = delete;

  /// Moves the kernel functions of `m` (emitted by emitModel for `plan`,
  /// debug info already added) into their own modules; `m` keeps the host
  /// code. `salt` goes into every key. Returns "" or an error (invalid IR).
  std::string split(CodeModule& m, const ModelPlan& plan, const std::string& salt);

  /// Distinct kernel functions, in program order of first use.
  size_t kernelCount() const;
  /// The cache key of kernel `i` (64 hex digits).
  const std::string& kernelKey(size_t i) const;
  /// The symbol of kernel `i` (`dscc.k.<hash>`).
  const std::string& kernelSymbol(size_t i) const;
  /// The cache key of the host module.
  const std::string& hostKey() const { return hostKey_; }

  /// Compiles the kernels in `which` (indices) on up to `threads` threads
  /// (0: one per hardware thread) and, with `host`, the host module (on this
  /// thread, meanwhile). Objects go to `objects[i]` (sized kernelCount()) and
  /// `hostObject`. `progress(done, total)` is called after each piece, from
  /// any thread, one call at a time. Returns "" or the first error.
  std::string compile(const std::vector<size_t>& which, bool host, const ObjectOptions& opts, int threads,
                      std::vector<std::string>& objects, std::string& hostObject,
                      const std::function<void(size_t, size_t)>& progress);

 private:
  struct Kernel;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  CodeModule* host_ = nullptr;
  std::string hostKey_;
};

}  // namespace dscc::codegen
