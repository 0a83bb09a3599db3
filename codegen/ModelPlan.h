// The compile-time plan of a model: its kernels in order, each kernel's guards (proved, or checked at run time) and versions.
//
// `dscc compile` emits code from this plan and `dscc explain` prints it, so
// both always agree on which version runs at which sizes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/Kernel.h"
#include "codegen/RecurrentPlan.h"
#include "codegen/ScatterPlan.h"
#include "codegen/WindowPlan.h"
#include "ir/IR.h"
#include "ir/KernelKind.h"

namespace dscc {
class ShapeSolver;
}

namespace dscc::codegen {

struct GemmPlan;
struct KernelTuningPlan;

/// The guards a kernel's versions can assume.
enum class GuardKind { Vector, Index32, BroadcastFree, Schedule, Stream };

/// One guard of one kernel and what the solver made of it.
struct GuardPlan {
  GuardKind kind = GuardKind::Vector;
  /// Proved from the facts: every version assumes it and no fallback without it exists.
  bool proved = false;
  /// The condition as text, e.g. `D % 8 == 0`, `N*D <= 2147483647`, `S == T`.
  std::string text;
  /// The operands of the condition (see holdsAt).
  DimExpr extent;                                          ///< Vector
  std::vector<DimExpr> counts;                             ///< Index32
  std::vector<std::pair<DimExpr, DimExpr>> pairs;          ///< BroadcastFree
  int width = 8;                                           ///< Vector
  bool aligned = false;  ///< Vector: also every buffer aligned to width elements (tested by the host only)
  /// Vector, generic kernels: the version has a scalar tail, so the guard is
  /// `extent >= width` (rows of at least one block), not divisibility.
  bool atLeast = false;
  /// Schedule: the GPU schedule this guard selects, used when `lo <= extent < hi`
  /// (extent: the row length). Schedule guards of one kernel exclude each other.
  GpuSchedule schedule = GpuSchedule::Thread;
  int64_t lo = 0, hi = INT64_MAX;
  /// Schedule Split: also `units <= unitsMax` (few rows), chunks of `chunk` elements.
  DimExpr units;
  int64_t unitsMax = INT64_MAX, chunk = 0;
  /// Stream: `bytes` (the outputs' bytes per call) >= `minBytes` and `extent`
  /// % `width` == 0 (rows of whole 64-byte lines); the host also tests that
  /// every output is 64-byte aligned.
  DimExpr bytes;
  int64_t minBytes = 0;  ///< kStreamAtRunTime: the running machine's last-level cache
  int64_t hereBytes = 0;  ///< with kStreamAtRunTime: the value holdsAt uses (PlanOptions::streamHereBytes)
  /// Stream, CPU stitch kernels that peelsRows: only the bytes are
  /// tested; the version peels each row to whole lines itself, so rows of
  /// any length and outputs of any alignment stream (KernelVariant::streamPeeled).
  bool peeled = false;
  /// Evaluates the condition at concrete sizes; nullopt (with `err`) if a dim cannot be evaluated.
  std::optional<bool> holdsAt(const DimBindings& env, std::string* err = nullptr) const;
};

/// True when version `v` assumes guard `g` (the host tests it before calling `v`).
bool assumes(const KernelVariant& v, const GuardPlan& g);

/// One kernel of the model.
struct KernelPlan {
  const Operation* fusion = nullptr;
  KernelKind kind = KernelKind::Loop;  ///< which lowering takes it
  std::string symbol;  ///< the base of its functions' names, e.g. `bert_layer.k3.p`
  /// The interface of the generated kernel (for library kernels: of the epilogue; see hasKernel).
  KernelInterface iface;
  /// What the kernel's lowering planned from its fusion (a library kernel's:
  /// from its epilogue), once, for every version; null without a kernel of ours.
  std::shared_ptr<const KernelForm> form;
  /// False for a library kernel without an epilogue: only the BLAS runs.
  bool hasKernel = true;
  std::vector<GuardPlan> guards;
  /// Versions, most specialised first; the last one assumes only proved guards (the fallback).
  std::vector<KernelVariant> versions;
  /// For library kernels: the BLAS call and the epilogue.
  std::shared_ptr<GemmPlan> gemm;
  /// For library kernels of a conv or pool: the runtime call (then gemm is null and hasKernel false).
  std::shared_ptr<WindowPlan> window;
  /// For library kernels of an rnn: the runtime call (then gemm is null and hasKernel false).
  std::shared_ptr<RnnPlan> rnn;
  /// For library kernels of a scatter or a cumsum: the runtime call (then gemm is null and hasKernel false).
  std::shared_ptr<ScatterPlan> scatter;
  std::shared_ptr<ScanPlan> scan;
  /// `dscc compile --tuning`: a configuration per size range; null when untuned.
  std::shared_ptr<const KernelTuningPlan> tuning;
  /// Elements per parallel task of an untuned CPU launch (kernelChunkElements).
  int64_t chunk = kChunkElements;

  /// The name of the function of version `v`.
  std::string functionName(size_t v) const { return symbol + "." + versions[v].name(); }
  /// The index of the first version whose guards hold at `env` (the one the host code calls).
  size_t chooseVersion(const DimBindings& env) const;
};

/// One tuned configuration of a kernel: the kernel planned with the
/// configuration's vector width (its own guards and versions) and the
/// elements per parallel task.
struct TunedConfig {
  KernelPlan plan;
  int64_t chunk = kChunkElements;
  std::string name;  ///< `v8.c16384`
};

/// A kernel's range table (tuner/ApplyTuning.h): `size` in [from, to] runs
/// configs[config]; any other size runs configs[fallback].
struct KernelTuningPlan {
  struct Range {
    int64_t from = 0, to = 0;
    size_t config = 0;
  };
  DimExpr size;
  std::vector<Range> ranges;
  std::vector<TunedConfig> configs;
  size_t fallback = 0;
  /// The configuration that applies at `env` (nullopt when `size` cannot be evaluated).
  std::optional<size_t> configAt(const DimBindings& env) const {
    auto v = size.evaluate(env);
    if (!v) return std::nullopt;
    for (const Range& r : ranges)
      if (*v >= r.from && *v <= r.to) return r.config;
    return fallback;
  }
};

/// The CPU's default vector widths (elements): loop kernels and GEMM
/// epilogues take 16, the reductions 8 (docs/compile.md).
constexpr int kCpuLoopVectorWidth = 16, kCpuVectorWidth = 8;

/// Whether kernels of `kind` (KernelPlan::kind) take
/// PlanOptions::loopVectorWidth: loop kernels and GEMM epilogues.
inline bool takesLoopVectorWidth(KernelKind kind) { return kind == KernelKind::Loop || kind == KernelKind::Library; }

/// PlanOptions::streamMinBytes: the threshold is read by the running model
/// (dscc_stream_min_bytes, runtime/dscc_generated.h), so a plan does not
/// depend on the compiling machine.
constexpr int64_t kStreamAtRunTime = -1;
/// With kStreamAtRunTime, a kernel whose outputs cannot reach this many bytes
/// gets no streaming version: no last-level cache is smaller.
constexpr int64_t kStreamPlanFloorBytes = int64_t(4) << 20;

/// Options of the planner.
struct PlanOptions {
  /// The width of vector versions (elements); 1 disables them.
  int vectorWidth = kCpuVectorWidth;
  /// > 0: the width of the vector versions of the kinds that
  /// takesLoopVectorWidth, where it differs from the others' (the CPU
  /// default: kCpuLoopVectorWidth, see tools/Frontend.cpp); 0: vectorWidth.
  int loopVectorWidth = 0;
  /// > 0: instead, each kernel's width is this many bytes over its widest
  /// element (the GPU's 16: 4 f32, 8 f16, 2 f64 per 128-bit access).
  int vectorBytes = 0;
  /// Generate index32 and broadcast-free versions.
  bool index32 = true, broadcastFree = true;
  /// Which CPU generic kernels get a vector version (rows in blocks of the
  /// loop kernels' width through the generator's lane mode, a scalar tail):
  /// Auto those whose short rows it pays for (genericVectorPays; LLVM's own
  /// widening of longer rows measured as fast: bench/results/
  /// 2026-12-06-generic-vector.md), On every one that lane mode takes
  /// (`dscc compile --generic-vector`), Off none (`--no-generic-vector`).
  enum class GenericVector { Auto, On, Off };
  GenericVector genericVector = GenericVector::Auto;
  /// > 0: CPU loop and stitch kernels whose outputs can reach this many
  /// bytes per call get a streaming version (KernelVariant::stream), run when
  /// they do; kStreamAtRunTime (the frontend's default): when they exceed the
  /// last-level cache of the machine that runs the model; 0: none.
  int64_t streamMinBytes = 0;
  /// With kStreamAtRunTime: what `dscc explain` takes that cache to be (the
  /// runtime's dscc_stream_min_bytes here), for GuardPlan::holdsAt.
  int64_t streamHereBytes = 0;
  /// Vector versions also need aligned buffers (the GPU's vector accesses):
  /// the vector guard then always includes a run-time pointer test.
  bool alignedVectors = false;
  /// A GPU target: f16/bf16 matmuls (cuBLAS), and reduction schedules
  /// (KernelVariant::schedule): a row of at least
  /// `warpRowMin` elements is reduced by a warp, of at least `blockRowMin` by
  /// a block of kGpuBlockSize threads; a column sum over at least `tileRowMin`
  /// rows by tiles. Shorter ones take a thread each. These are the defaults
  /// in one place; `dscc compile --row-schedule` overrides them (and the split ones below).
  /// Why a warp up to 3071: on an H200 (bench/results/2026-12-04-gpu-h200.md)
  /// a block per row of 1024 or 2048 elements ran 1.2-5x slower than a warp
  /// per row (its register row holds 2 blocks of 256 threads per SM); at 3072
  /// the block was faster.
  bool gpu = false;
  int64_t warpRowMin = 32, blockRowMin = 3072, tileRowMin = 64;
  /// Block rows shorter than this keep the row in registers (16 vector
  /// blocks per thread at most); longer ones take "block.long" versions.
  int64_t blockRegisterRowMax = 8192;
  /// Stitch rows of at least `splitRowMin` elements, when there are at most
  /// `splitMaxRows` rows, are cut into chunks of `splitChunk` elements, a
  /// block each, over phases + 1 launches (GpuSchedule::Split).
  int64_t splitRowMin = 8192, splitMaxRows = 64, splitChunk = 2048;
  /// GPU column reductions whose outermost reduced dim has at least this
  /// many rows get a TileSplit version: the tiles' rows split into chunks
  /// (rowSplitChunks) over blocks. Tiles alone give a block per 32 columns:
  /// on an H200 col_reduce at D=256 (8 blocks for 132 SMs) read 51 GB/s and
  /// at D=32 one block took 22.7 ms for 128 MB. 0: none.
  int64_t gpuColumnSplitRowMin = 1024;
  /// CPU column reductions whose outermost reduced dim has at least this
  /// many rows get a RowSplit version (GpuSchedule::RowSplit): each thread
  /// then reads whole rows, where a column block reads a run of each row
  /// (1.3-1.6x faster beyond the cache). 0: none. `dscc compile
  /// --row-schedule ROWS` on the CPU.
  int64_t cpuSplitRowMin = 4096;
};

/// The plan of one function.
struct ModelPlan {
  const Function* func = nullptr;
  std::vector<KernelPlan> kernels;  ///< in program order
  /// `dscc compile --check-bounds`: every CPU kernel's loads and stores of
  /// its buffers are checked against their sizes (codegen/cpu/BoundsCheck.h).
  bool checkBounds = false;
  /// The file constants of the program as it was read, before the passes
  /// (path, data): the artifact embeds those the passes dropped too (a conv
  /// weight fold-conv-affine replaced), so that `dscc run --check` and `dscc
  /// view` read the program back without its weight files. Set by the
  /// compile session; empty elsewhere.
  std::vector<std::pair<std::string, std::shared_ptr<const Tensor>>> sourceFiles;
};

/// Most bytes a literal constant (dense, splat) may have: it is evaluated at
/// compile time and embedded in the object. Larger data belongs in a
/// `constant file(...)`, which stays outside LLVM.
inline constexpr int64_t kMaxEmbeddedConstantBytes = int64_t(1) << 31;

/// Describes every kernel of `f` (after the default pipeline) and decides its
/// guards with `solver` (which holds f's facts and checks). Returns "" or the
/// first kernel that cannot be compiled and why; `failed` (optional)
/// receives that kernel's fusion op, for its location.
std::string planModel(const Function& f, ShapeSolver& solver, const PlanOptions& opts, ModelPlan& out,
                      const Operation** failed = nullptr);

/// A ShapeSolver loaded with f's `where` facts and its `check` ops' relations.
std::unique_ptr<ShapeSolver> makeModelSolver(const Function& f);

/// Makes `name` a C identifier: characters other than [A-Za-z0-9_] become '_'.
std::string cIdentifier(const std::string& name);

}  // namespace dscc::codegen
