// GPU kernels of `scatter` and `cumsum` (the library kernels of codegen/ScatterPlan.h): bodies in the KernelFn
// convention that codegen/gpu/GpuKernels.cpp wraps in grid-stride PTX entries and tests run on the CPU.
//
// scatter, data viewed [rows, inner], updates [count, inner], in launches:
//   copy   a thread per data element: result = data (skipped where they are one buffer); with reduction none
//          it also sets the workspace's row slots to -1;
//   mark   (reduction none only) a thread per update: atomic max of the update's number into its row's slot,
//          so each row knows its last update (the interpreter's winner);
//   write  a thread per update element: reduction none stores it when its update is its row's winner (one
//          writer per element: deterministic); add/mul/max/min combine atomically (atomicrmw add/fadd/max/min
//          where the dtype has one, a compare-and-swap loop on the element's bits otherwise).
// An index outside [-rows, rows) writes nothing; it is reported in the scatter's check words, an output after the
// result and workspace (2 i64: a flag and the smallest bad index, ElementGenerator.h's encoding), by `mark`
// (reduction none) or by the first column's thread of `write`; the host reads them after the call (docs/gpu.md).
//
// cumsum, x viewed [outer, len, inner], in one of two forms (the host picks by size, gpuScanTakesChunks):
//   columns  one launch, a thread per (outer, inner) column walking the axis with the interpreter's running sum
//            (floats in f64, each output rounded once: its bits; integers wrapping in 64 bits);
//   chunks   for few long columns: the axis cut into chunks of `chunk` steps; `sums` (a thread per chunk and
//            column: the chunk's sum into the workspace), `offsets` (a thread per column: the chunks' sums turned
//            into the running sum before each, in chunk order), `chunks` (a thread per chunk and column: the walk
//            again from its offset, storing). Integers are exact; floats are the f64 sum associated by chunk, so
//            an output may differ from the interpreter's by rounding (f32: 1 ulp, rarely). Deterministic either way.
#pragma once

#include <string>
#include <vector>

#include "codegen/Jit.h"
#include "codegen/ScatterPlan.h"

namespace dscc::codegen {

/// When a launch of a recurrent kernel (GpuRecurrent.h) runs: before the host's loop over time steps, once per
/// step, or after the loop. Every other data kernel's launches run once, in order (Once).
enum class DataLaunchWhen { Once, EachStep, AfterSteps };

/// One launch of a scatter, cumsum, window or recurrent kernel: its body and its count of thread units.
struct DataLaunch {
  std::string name;  ///< the body function (KernelFn convention; [begin, end) are thread units)
  std::string step;  ///< "copy", "mark", "write", "scan" (and the chunked form's), "window", or an rnn's
  DimExpr units;     ///< thread units of the launch
  DataLaunchWhen when = DataLaunchWhen::Once;
};

/// The launches of one scatter, cumsum or window kernel, run in order on one stream. Every body reads inputs = the
/// fusion's operands in order and writes outputs = {result, workspace (when hasWorkspace)}; sizes = the values
/// of `symbols`.
struct DataKernel {
  std::vector<std::string> symbols;  ///< the symbols of the plan's dims, sorted
  std::vector<DataLaunch> launches;
  /// A cumsum's chunked form (run instead of `launches` where gpuScanTakesChunks), and its chunk length.
  std::vector<DataLaunch> longLaunches;
  int64_t chunk = 0;
  bool hasWorkspace = false;       ///< outputs are {result, workspace} (a scatter without reduction, a cumsum)
  /// Index checks (a scatter: 1): the launches take their check words (2 i64 each) as the last output.
  size_t checks = 0;
  DimExpr workspace = DimExpr(0);  ///< i64 slots of the workspace (a scatter: rows; a cumsum: columns x chunks)
  /// Every launch takes the time step as one more size after the symbols' values (an rnn: the step of an
  /// EachStep launch, 0 before the loop, the sequence length after it).
  bool takesStep = false;
};

/// Steps of the axis per thread in a cumsum's chunked form, as compiled.
constexpr int64_t kGpuScanChunk = 256;
/// The chunked form runs where the columns are fewer than this (too few threads walking) and longer than a chunk.
constexpr int64_t kGpuScanChunkColumnsMax = 16384;

/// True when a GPU scatter needs a workspace (reduction none), of gpuScatterWorkspace(p) i64 slots: one per row.
bool gpuScatterNeedsWorkspace(const ScatterPlan& p);
DimExpr gpuScatterWorkspace(const ScatterPlan& p);

/// Adds the bodies of scatter `p` to `m` as functions `name` + ".copy", ".mark", ".write". Returns "" or an error.
std::string lowerGpuScatter(const ScatterPlan& p, CodeModule& m, const std::string& name, DataKernel& out);
/// Chunks of `chunk` steps per column of cumsum `p`, and its workspace: one i64 slot per column and chunk.
DimExpr gpuScanChunks(const ScanPlan& p, int64_t chunk);
DimExpr gpuScanWorkspace(const ScanPlan& p, int64_t chunk);
/// Adds the bodies of cumsum `p` to `m`: `name` + ".scan" (columns), ".sums", ".offsets", ".chunks" (chunks of
/// `chunk` steps). Returns "" or an error.
std::string lowerGpuScan(const ScanPlan& p, CodeModule& m, const std::string& name, DataKernel& out,
                         int64_t chunk = kGpuScanChunk);

}  // namespace dscc::codegen
