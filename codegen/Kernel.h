// What every kernel kind shares: the calling convention, the interface a caller needs, and versions (guards).
//
// Every kernel kind lowers to one function per version. A version is chosen by
// the generated host code from the run-time sizes; the version with no
// assumptions (the default-constructed KernelVariant) is the fallback that is
// always correct. A guard the solver proves from the `where` facts is assumed
// by every version, and the fallback without it is never generated.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/IR.h"

namespace llvm {
class Function;
}  // namespace llvm

namespace dscc::codegen {

/// Elements per parallel task of an untuned launch: chunks of at least ~16K
/// elements keep the pool's overhead small (kernelChunkElements lowers it
/// for kernels with vector math).
inline constexpr int64_t kChunkElements = 16384;

/// How the threads of a launch share a reduction kernel's units. Only GPU
/// versions use anything but Thread and RowSplit, which only the CPU uses.
enum class GpuSchedule {
  Thread,  ///< one unit (row, output element) per thread: the fallback, right at every size
  Warp,    ///< one row per warp of 32 threads, combined with warp shuffles (shfl.sync)
  Block,   ///< one row per block, combined with shuffles and shared memory
  Tile,    ///< column reductions: a block per 32 columns, 8 row slices combined in shared memory
  Split,   ///< stitch kernels with few, very long rows: each row cut into chunks, a block per chunk,
           ///< one launch per phase, partial results through a workspace (see splitPhases)
  RowSplit,  ///< CPU column reductions over many rows: the outermost reduced dim cut into chunks of
             ///< rows (rowSplitChunks), a unit per chunk and row of outputs summing whole rows into a
             ///< workspace of partials, then a second launch combining them in chunk order
  TileSplit,  ///< GPU column reductions over many rows: the rows cut into chunks as RowSplit; launch 0 is a
              ///< block per (chunk, 32 columns) summing them as Tile into the workspace, launch 1 a thread
              ///< per output combining the chunks' partials in chunk order
};

/// An index check cell's word 1 (ElementGenerator.h, gatherChecks) for index
/// `w`: larger for smaller w (signed), and 0 for INT64_MAX, so an unsigned
/// max of encodings keeps the smallest index and a zeroed cell means none.
/// decodeLeastIndex inverts it.
constexpr uint64_t encodeLeastIndex(int64_t w) { return static_cast<uint64_t>(w) ^ uint64_t(INT64_MAX); }
constexpr int64_t decodeLeastIndex(uint64_t word) { return static_cast<int64_t>(word ^ uint64_t(INT64_MAX)); }
static_assert(encodeLeastIndex(INT64_MAX) == 0 && encodeLeastIndex(-1) > encodeLeastIndex(7) &&
              encodeLeastIndex(INT64_MIN) == UINT64_MAX && decodeLeastIndex(encodeLeastIndex(-5)) == -5);

/// Threads per block of every GPU launch.
constexpr int kGpuBlockSize = 256;

/// Threads that cooperate on one unit under `s`: 1, the warp's 32, or the block.
inline int scheduleLanes(GpuSchedule s) {
  return s == GpuSchedule::Warp ? 32 : s == GpuSchedule::Thread || s == GpuSchedule::RowSplit ? 1 : kGpuBlockSize;
}

/// Schedules whose version runs as one launch per phase through a workspace
/// after the outputs (Split, RowSplit, TileSplit).
inline bool phasedSchedule(GpuSchedule s) {
  return s == GpuSchedule::Split || s == GpuSchedule::RowSplit || s == GpuSchedule::TileSplit;
}

/// The assumptions one version of a kernel makes. Each one is a guard the host
/// code checks before calling that version.
struct KernelVariant {
  /// > 1: the version assumes that KernelInterface::vectorExtent is a multiple
  /// of this width and processes that extent in blocks of exactly this many
  /// elements (constant trip count, no remainder loop), which the
  /// vectoriser turns into straight vector code. 1: no assumption.
  int vectorWidth = 1;
  /// The version computes element offsets and flat-index divisions in 32-bit
  /// arithmetic. Valid when every count in KernelInterface::indexCounts is at
  /// most INT32_MAX.
  bool index32 = false;
  /// The version assumes each pair in KernelInterface::broadcastPairs is equal
  /// at run time (no operand dim is stretched), so it reads every operand with
  /// its natural, unit inner stride and needs no run-time stride select.
  bool broadcastFree = false;
  /// With vectorWidth > 1: the version also assumes every input and output
  /// buffer is aligned to vectorWidth elements, so each block is one aligned
  /// vector access (128-bit loads and stores on the GPU). The host checks the
  /// pointers. Only GPU versions set it.
  bool alignedBlocks = false;
  /// GPU reduction kernels: how threads share the units. A schedule other
  /// than Thread is chosen by the row length (KernelGuardInputs::rowLength),
  /// within bounds set by PlanOptions, the tuner's knob.
  GpuSchedule schedule = GpuSchedule::Thread;
  /// Split: elements of a row per block (a multiple of the vector width).
  int64_t splitChunk = 0;
  /// Warp and Block: the longest row the version can see (its guard's
  /// bound), 0 when unbounded. With vector blocks and a short enough bound,
  /// a stitch kernel's rows stay in registers between phases. An unbounded
  /// Block version is named "block.long".
  int64_t rowMax = 0;
  /// CPU loop and stitch kernels: the version writes its outputs with
  /// non-temporal (streaming) vector stores, which bypass the caches and skip
  /// the read-for-ownership of each line written. Chosen by the host for calls
  /// whose outputs exceed the last-level cache, with every output 64-byte
  /// aligned and rows a whole number of 64-byte lines (GuardKind::Stream).
  bool stream = false;
  /// With `stream`, a CPU stitch kernel whose rows are explicit vectors
  /// (peelsRows): any row length and any output alignment; each row's stores
  /// are peeled to the 64-byte lines it covers whole, which are streamed, and
  /// a line two rows share is gathered on the stack and streamed once whole
  /// (GuardPlan::peeled).
  bool streamPeeled = false;

  /// A short name for symbols and `dscc explain`: "generic", or the
  /// assumptions joined by '.', e.g. "v8.i32.nobcast", "warp.v4.i32", "v16.i32.nt".
  std::string name() const {
    std::string s;
    auto add = [&](const std::string& p) { s += (s.empty() ? "" : ".") + p; };
    if (schedule == GpuSchedule::Warp) add("warp");
    if (schedule == GpuSchedule::Block) add(rowMax > 0 ? "block" : "block.long");
    if (schedule == GpuSchedule::Tile) add("tile");
    if (schedule == GpuSchedule::Split) add("split");
    if (schedule == GpuSchedule::RowSplit) add("rows");
    if (schedule == GpuSchedule::TileSplit) add("tile.rows");
    if (vectorWidth > 1) add("v" + std::to_string(vectorWidth));
    if (index32) add("i32");
    if (broadcastFree) add("nobcast");
    if (stream) add("nt");
    return s.empty() ? "generic" : s;
  }
  bool operator==(const KernelVariant&) const = default;
};

/// What the guards of a kernel look at, filled in by the describe function of
/// each kernel kind. An empty field means the corresponding guard does not
/// apply to this kernel (so no version makes that assumption).
struct KernelGuardInputs {
  /// The extent a vector version blocks (innermost dim of a loop kernel's
  /// space, a stitch kernel's row length, an input kernel's innermost output
  /// dim); DimExpr(0) when no vector version applies.
  DimExpr vectorExtent = DimExpr(0);
  /// Element counts (of the iteration space, every operand and result) that
  /// must fit in int32 for an index32 version.
  std::vector<DimExpr> indexCounts;
  /// (operand dim, result dim) pairs that may differ at run time only by a
  /// broadcast (the operand dim is 1); a broadcastFree version assumes equal.
  std::vector<std::pair<DimExpr, DimExpr>> broadcastPairs;
  /// GPU schedules: the elements one unit reduces (a stitch kernel's row
  /// length, the reduced extent of an input kernel); DimExpr(0) when the
  /// kernel has no reduction. `columns`: the units are columns (an input
  /// kernel that keeps the last axis), whose cooperative schedule is Tile;
  /// otherwise rows, with Warp and Block.
  DimExpr rowLength = DimExpr(0);
  bool columns = false;
  /// Input kernels that keep the last axis: the extent of the outermost
  /// reduced dim, which a RowSplit version cuts into chunks; DimExpr(0)
  /// otherwise.
  DimExpr splitRows = DimExpr(0);
  /// With splitRows: the reduced input is a channels-last conv's or pool's result, which the runtime writes
  /// in bands of rows per thread (runtime/DnnlChannelsLast.cpp); the RowSplit version then pays from far
  /// fewer rows (ModelPlan.cpp, kBandRowsMin).
  bool bandWritten = false;
  /// With splitRows: the outputs over the last axis' length (the product of
  /// the kept dims but the last), the rows of outputs a chunk's units cover.
  DimExpr splitOuter = DimExpr(1);
  /// Stitch kernels: the number of phases (one loop over the row each before
  /// the last; a Split version runs phases + 1 launches). 0 for other kinds.
  int phases = 0;
  /// Stitch kernels: the number of reductions (a Split workspace holds one
  /// 8-byte partial per row, chunk and reduction).
  int reductions = 0;
};

/// The C type of every lowered CPU kernel, whatever its kind:
///
///   void NAME(void** inputs, void** outputs, const int64_t* sizes, int64_t begin, int64_t end);
///
/// `inputs[k]` is the dense row-major data of the fusion's operand k,
/// `outputs[i]` the buffer of its result i, `sizes[j]` the value of
/// KernelInterface::symbols[j], and [begin, end) a range of the kernel's
/// parallel units (KernelInterface::units): flat elements for loop kernels,
/// rows for stitch kernels, output elements for input kernels. Out-of-range
/// bounds are clamped; an empty range reads no pointer. Disjoint ranges may
/// run concurrently on different threads. A kernel whose fusion holds
/// gathers also reads `inputs[K]` (K = the operand count): the cell its
/// gathers report out-of-range indices into, or null (ElementGenerator.h,
/// gatherChecks).
using KernelFn = void (*)(void** inputs, void** outputs, const int64_t* sizes, int64_t begin, int64_t end);

/// What a caller needs to call a lowered kernel.
struct KernelInterface {
  /// The order of the `sizes` argument: symbol names, sorted in byte order.
  std::vector<std::string> symbols;
  /// Types of `inputs[k]` (the fusion's operands) and `outputs[i]` (its results).
  std::vector<Type> inputs, outputs;
  /// The number of parallel units: [begin, end) ranges cover [0, units).
  DimExpr units;
  /// Elements computed per unit (1 for loop kernels, the row length for
  /// stitch kernels, ...): the host sizes its parallel chunks with it.
  DimExpr workPerUnit = DimExpr(1);
  /// What the versions' guards look at.
  KernelGuardInputs guards;
};

/// What a kernel's lowering plans once from its fusion, before any version
/// is emitted, and its interface: a loop kernel's operand accesses and merged
/// dims, a reduction kernel's frames and phases, a generic kernel's rows or
/// tiles. ModelPlan makes it when it describes the kernel (KernelPlan::form),
/// and each version's lowering reads it instead of planning again. Each
/// kind's lowering derives its own (KernelLowering.cpp, ReductionPlan.h,
/// GenericKernel.cpp) and refuses a form of another kind.
struct KernelForm {
  virtual ~KernelForm() = default;
  KernelInterface iface;
};

/// The result of lowering one kernel version: the function, or an error message.
struct LoweredKernel {
  llvm::Function* fn = nullptr;  ///< null on error
  KernelInterface iface;
  std::string error;  ///< "" on success
  /// True when the kernel was lowered.
  bool ok() const { return fn != nullptr; }
};

}  // namespace dscc::codegen
