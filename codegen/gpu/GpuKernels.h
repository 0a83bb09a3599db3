// GPU kernels: every kernel version of a model as a PTX entry (LLVM NVPTX), with its launch mapping for the host code.
//
// A GPU kernel reuses the CPU kernel body of its kind unchanged (the
// functions of codegen/Kernel.h, computing a range of parallel units); only
// the mapping differs. Each GPU thread takes "thread units" in a grid-stride
// loop, so any grid covers any size:
//
//   loop kernels   a block of W consecutive elements (W = the version's
//                  vector width on the GPU: 4 f32 = one 128-bit access; 1 in
//                  the fallback), so neighbouring threads touch neighbouring
//                  memory;
//   input kernels  one output element (a column of a column reduction), so
//                  the reads of a warp are coalesced along the row;
//   stitch kernels one row per thread.
//
// Reduction kernels also have cooperative versions (KernelVariant::schedule):
// a warp per row (partials combined with shfl.sync), a block per row (warp
// shuffles, then shared memory), and for column sums a block per tile of 32
// columns whose 8 row slices meet in shared memory. The host picks them by
// row length, like any guarded version.
//
// Scatter and cumsum kernels (library kernels on the CPU: runtime calls) are
// kernels of ours here (codegen/gpu/GpuScatter.h): a sequence of entries
// `KERNEL_copy`, `_mark`, `_write` / `_scan` (or the chunked `_sums`,
// `_offsets`, `_chunks`), each taking the fusion's operands, the result and
// a workspace. So are conv, conv_transpose and pool (oneDNN calls on the CPU):
// one entry `KERNEL_window`, a thread per output element (GpuWindow.h); and
// rnn (a runtime call on the CPU): `KERNEL_init`, `_proj`, then `_gates` and
// `_step` once per time step, `_final` (GpuRecurrent.h), the host looping over
// the steps.
//
// Entry parameters, in order: one pointer per kernel input, one per output,
// the check words' pointer where the entry checks indices (GpuKernel::checks),
// one i64 per symbol of KernelInterface::symbols, the step index (recurrent
// entries: GpuKernel::takesStep), then the i64 count of thread
// units. Math functions resolve to libdevice (`__nv_expf`, ...), linked from
// the CUDA toolkit.
#pragma once

#include <string>
#include <vector>

#include "codegen/ModelPlan.h"
#include "codegen/gpu/GpuScatter.h"

namespace dscc::codegen {

/// Options of GPU code generation.
struct GpuOptions {
  /// The architecture, "sm_80" or "sm_90".
  std::string arch = "sm_90";
  /// libdevice from the CUDA toolkit.
  std::string libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  int optLevel = 3;
};

/// One PTX entry.
struct GpuKernel {
  std::string entry;    ///< the PTX entry name
  size_t kernel = 0;    ///< index into ModelPlan::kernels
  size_t version = 0;   ///< index into KernelPlan::versions (copies: 0)
  /// Elements per thread unit of a loop kernel (1 for other kinds).
  int unitWidth = 1;
  /// For densifying copies of library operands: which operand ("a" or "b"); empty for kernel versions.
  std::string copyOf;
  /// The number of thread units: a dim expression over the model's symbols.
  DimExpr threadUnits;
  /// The symbols passed after the pointers, in order.
  std::vector<std::string> symbols;
  /// Split versions: this entry is launch `phase` of phases + 1 (in order),
  /// and takes the workspace pointer after the outputs. Scatter and cumsum
  /// entries: their order among the kernel's launches (`version` 1: a
  /// cumsum's chunked form). -1 otherwise.
  int phase = -1;
  /// Index checks the entry reports (a generic kernel's gathers, a scatter's
  /// indices): when > 0 it takes, after its outputs (and workspace), the
  /// address of its 2 i64 words per check in the call's check block
  /// (HostEmitter's; ElementGenerator.h, gatherChecks).
  size_t checks = 0;
  /// Recurrent kernels: where the host launches the entry (before its loop
  /// over time steps, once per step, after it), and whether the entry takes
  /// the step index as an i64 after the symbols (GpuRecurrent.h).
  DataLaunchWhen when = DataLaunchWhen::Once;
  bool takesStep = false;
};

/// The ops whose indices kernel `k`'s GPU entries check, in the order of their
/// check words (GpuKernel::checks): a generic kernel's gathers
/// (ElementGenerator.h, gatherChecks), a scatter kernel's scatter.
std::vector<const Operation*> gpuIndexChecks(const KernelPlan& k);

/// The 8-byte slots of a Split version's workspace: one partial per row,
/// chunk and reduction of kernel `k`.
DimExpr splitWorkspaceElements(const KernelPlan& k, const KernelVariant& v);

/// Generates the PTX module of `plan` for `opts.arch`. Returns "" or an error;
/// `ptx` receives the text, `kernels` the entries; `llvmText` (optional) the
/// optimised LLVM IR.
std::string emitGpuKernels(const ModelPlan& plan, const GpuOptions& opts, std::string& ptx,
                           std::vector<GpuKernel>& kernels, std::string* llvmText = nullptr);

/// Parses `cuda:sm_80` / `cuda:sm_90` into an architecture; "" (with `err`) if it is not one.
std::string parseCudaTarget(const std::string& target, std::string* err);

}  // namespace dscc::codegen
