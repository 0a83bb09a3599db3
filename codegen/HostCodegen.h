// Generation of a whole model: every kernel version, and the host function that checks, binds, allocates and launches.
//
// The host function is `dscc_status FUNC_run(dscc_context*, const dscc_tensor*
// inputs, int n_in, dscc_tensor* outputs, int n_out)` (dscc_run_fn in
// runtime/dscc_runtime.h), exported also as `dscc_model_run`. In order it:
// checks the argument counts and each input's dtype and rank; binds symbols
// from input dims and checks every dim; checks the `where` facts and the
// run-time `check` ops (DSCC_SHAPE_MISMATCH / DSCC_FACT_VIOLATED with the
// sizes in the message, before anything is written); prepares the outputs;
// allocates one arena for the intermediate buffers, which share space by
// liveness; then runs the kernels in program order, each through the version
// its guards select, split over the context's thread pool, and matmuls through
// the BLAS. On failure, outputs it allocated are freed again.
//
// The module also exports `dscc_model_source` (the program text),
// `dscc_model_entry` (the function name) and `dscc_model_target` ("cpu").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/gpu/GpuKernels.h"
#include "codegen/ModelPlan.h"

namespace dscc::codegen {

class CodeModule;

/// A GPU model's kernels, made by emitGpuKernels, for the host code to launch.
struct GpuArtifact {
  std::string target;  ///< "cuda:sm_90"
  std::string ptx;     ///< the PTX module (always embedded: the fallback image)
  std::string cubin;   ///< ptxas's cubin for the target, or "" when ptxas was absent
  std::vector<GpuKernel> kernels;
};

/// File constants (weights) kept out of the LLVM module: the host code
/// addresses them as offsets into one external symbol, whose bytes the
/// caller writes (write) and assembles beside the object, so a large model's
/// weights are never copied into LLVM or the object's bytes in memory.
struct ExternalData {
  std::string symbol = "dscc_weights";  ///< hidden, 64-byte aligned
  uint64_t size = 0;                    ///< bytes, with padding
  /// (offset, data) of each constant, in order; offsets are 64-byte aligned.
  std::vector<std::pair<uint64_t, std::shared_ptr<const Tensor>>> parts;
  /// Writes the bytes to `path`; "" or an error.
  std::string write(const std::string& path) const;
  /// Assembly text that defines `symbol` with the bytes of `path` (.incbin).
  std::string assembly(const std::string& path) const;
};

/// Emits the model planned in `plan` into `m`: kernels (internal linkage) and
/// the exported host function and data. `source` is the program text stored
/// in the artifact, `sourceDir` (exported as `dscc_model_source_dir`) the
/// folder its relative `constant file(...)` paths name, for `dscc run --check`.
/// With `gpu`, the host function works on device buffers and
/// launches the GPU kernels of `gpu` instead (docs/gpu.md). Returns "" or an
/// error (an op the host code cannot run).
/// With `external`, file constants go there instead of into `m`. With
/// `errorLoc`, an error's source location (the argument, op, fact or function
/// it concerns; invalid when it has none) goes there, for a located diagnostic.
std::string emitModel(const ModelPlan& plan, const std::string& source, CodeModule& m,
                      const GpuArtifact* gpu = nullptr, const std::string& sourceDir = "",
                      ExternalData* external = nullptr, Location* errorLoc = nullptr);

/// Lowers version `v` of kernel `k` (with the CPU calling convention of
/// codegen/Kernel.h) to function `name` in `m`, whatever its kind. A
/// RowSplit version is two functions, one per launch: `splitPhase` 0 or 1
/// (see lowerInputKernel).
LoweredKernel lowerKernelVersion(const KernelPlan& k, size_t v, CodeModule& m, const std::string& name,
                                 int splitPhase = -1);

/// The exported name of the host function of `f`: `FUNC_run`.
std::string runSymbol(const Function& f);

}  // namespace dscc::codegen
