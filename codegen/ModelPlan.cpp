// Planning a model's kernels: describe each fusion, decide its guards with the solver, list its versions.
#include "codegen/ModelPlan.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <sstream>

#include "codegen/GenericKernel.h"
#include "codegen/KernelCommon.h"
#include "codegen/KernelLowering.h"
#include "codegen/LibraryPlan.h"
#include "codegen/ReductionLowering.h"
#include "codegen/cpu/Streaming.h"
#include "ir/Sizes.h"
#include "passes/ShapeSolver.h"

namespace dscc::codegen {

std::string cIdentifier(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

std::unique_ptr<ShapeSolver> makeModelSolver(const Function& f) {
  auto solver = std::make_unique<ShapeSolver>();
  for (const Fact& fact : f.facts) solver->addFact(fact);
  walkOps(f.ops, [&](Operation& op) {
    if (op.kind != OpKind::Check) return;
    if (auto r = checkRelation(op)) solver->assume(*r);
  });
  return solver;
}

std::optional<bool> GuardPlan::holdsAt(const DimBindings& env, std::string* err) const {
  auto eval = [&](const DimExpr& e) { return e.evaluate(env, err); };
  switch (kind) {
    case GuardKind::Vector: {
      auto v = eval(extent);
      if (!v) return std::nullopt;
      return atLeast ? *v >= width : *v % width == 0;
    }
    case GuardKind::Index32:
      for (const DimExpr& c : counts) {
        auto v = eval(c);
        if (!v) return std::nullopt;
        if (*v > INT32_MAX) return false;
      }
      return true;
    case GuardKind::BroadcastFree:
      for (const auto& [a, b] : pairs) {
        auto x = eval(a), y = eval(b);
        if (!x || !y) return std::nullopt;
        if (*x != *y) return false;
      }
      return true;
    case GuardKind::Schedule: {
      auto v = eval(extent);
      if (!v) return std::nullopt;
      if (unitsMax != INT64_MAX) {
        auto u = eval(units);
        if (!u) return std::nullopt;
        if (*u > unitsMax) return false;
      }
      return *v >= lo && *v < hi;
    }
    case GuardKind::Stream: {
      auto v = eval(extent), n = eval(bytes);
      if (!v || !n) return std::nullopt;
      return *n >= (minBytes == kStreamAtRunTime ? hereBytes : minBytes) && (peeled || *v % width == 0);
    }
  }
  return std::nullopt;
}

bool assumes(const KernelVariant& k, const GuardPlan& g) {
  switch (g.kind) {
    case GuardKind::Vector: return k.vectorWidth > 1;
    case GuardKind::Index32: return k.index32;
    case GuardKind::BroadcastFree: return k.broadcastFree;
    case GuardKind::Stream: return k.stream;
    case GuardKind::Schedule:
      // Two Block guards split the block range at blockRegisterRowMax: a
      // version assumes the one whose bound it was made for.
      return k.schedule == g.schedule && (g.schedule != GpuSchedule::Block || k.rowMax == (g.hi == INT64_MAX ? 0 : g.hi - 1));
  }
  return false;
}

size_t KernelPlan::chooseVersion(const DimBindings& env) const {
  for (size_t v = 0; v + 1 < versions.size(); ++v) {
    const KernelVariant& k = versions[v];
    bool ok = true;
    for (const GuardPlan& g : guards) {
      if (!g.proved && assumes(k, g) && g.holdsAt(env) != std::optional<bool>(true)) ok = false;
    }
    if (ok) return v;
  }
  return versions.size() - 1;
}

namespace {

// Combines the answers for several conditions that must all hold.
Tri allOf(const std::vector<Tri>& ts) {
  if (std::count(ts.begin(), ts.end(), Tri::Disproved)) return Tri::Disproved;
  if (std::all_of(ts.begin(), ts.end(), [](Tri t) { return t == Tri::Proved; })) return Tri::Proved;
  return Tri::Unknown;
}

// The guards of `iface` that can ever hold, each proved or left to run time.
// `loop`: the kernel's vector width is the loop kernels'; `atLeast`: its
// vector version has a scalar tail (generic kernels); `stream`: it may take a
// streaming version (CPU loop and stitch kernels); `peeled`: one that peels
// its rows itself (CPU stitch kernels of rowVectorValues).
namespace {

/// Fewest rows from which a column reduction of a conv's or pool's channels-last result takes its RowSplit
/// version: MobileNetV3's squeeze-excite means (7 to 56 rows of the first reduced dim) ran 6% faster end to
/// end at batch 1 with it (bench/results/2026-12-07-mobilenet.md), where the column blocks read across bands.
constexpr int64_t kBandRowsMin = 8;

/// True when `fusion` reads the result of a library kernel holding a channels-last conv or pool (through
/// reshapes): rows the runtime wrote in bands per thread.
bool readsBandWritten(const Operation& fusion) {
  for (const Value* v : fusion.operands) {
    const Operation* d = v->def;
    while (d && d->kind == OpKind::Reshape && !d->operands.empty()) d = d->operands[0]->def;
    if (!d || d->kind != OpKind::Fusion || !isWindowKernel(*d)) continue;
    for (const auto& b : d->body)
      if ((b->kind == OpKind::Conv || b->kind == OpKind::Pool) && isChannelsLast(*b)) return true;
  }
  return false;
}

}  // namespace

std::vector<GuardPlan> decideGuards(const KernelInterface& iface, ShapeSolver& solver, const PlanOptions& opts,
                                    bool loop, bool atLeast, bool stream, bool peeled) {
  std::vector<GuardPlan> out;
  const KernelGuardInputs& in = iface.guards;
  auto add = [&](GuardPlan g, Tri t) {
    if (t == Tri::Disproved) return;  // never holds: no version for it
    g.proved = t == Tri::Proved;
    out.push_back(std::move(g));
  };
  int width = loop && opts.loopVectorWidth > 0 ? opts.loopVectorWidth : opts.vectorWidth;
  if (opts.vectorBytes > 0) {
    // Over what vector blocks access: scalars and operands broadcast along
    // the last dim are read one element at a time.
    size_t widest = 1;
    auto blocked = [](const Type& t) { return t.rank() > 0 && !(t.dims.back().isConst() && t.dims.back().constValue() == 1); };
    for (const Type& t : iface.inputs)
      if (blocked(t)) widest = std::max(widest, dtypeSize(t.dtype));
    for (const Type& t : iface.outputs)
      if (blocked(t)) widest = std::max(widest, dtypeSize(t.dtype));
    width = std::max<int>(1, opts.vectorBytes / static_cast<int>(widest));
  }
  if (width > 1 && !(in.vectorExtent.isConst() && in.vectorExtent.constValue() == 0)) {
    GuardPlan g;
    g.kind = GuardKind::Vector;
    g.extent = in.vectorExtent;
    g.width = width;
    g.atLeast = atLeast;
    g.text = atLeast ? in.vectorExtent.str() + " >= " + std::to_string(width) + " (blocks of " +
                           std::to_string(width) + ", a scalar tail)"
                     : in.vectorExtent.str() + " % " + std::to_string(width) + " == 0";
    Tri t = atLeast ? solver.lessEqual(DimExpr(width), in.vectorExtent).tri
                    : solver.divisible(in.vectorExtent, DimExpr(width)).tri;
    if (opts.alignedVectors) {
      // Pointer alignment is a fact of the call, never of the program.
      g.aligned = true;
      g.text += " && buffers aligned to " + std::to_string(width) + " elements";
      if (t == Tri::Proved) t = Tri::Unknown;
    }
    add(g, t);
  }
  // Streaming stores pay where the outputs would not stay in the cache
  // anyway: each line written then costs one trip to memory, not two (a
  // read for ownership and the write-back). Only with vector blocks (the
  // stores the late pass can prove aligned), never on the GPU.
  bool vectorGuard = std::any_of(out.begin(), out.end(), [](const GuardPlan& g) { return g.kind == GuardKind::Vector; });
  int line = streamLineElements(iface);
  peeled = peeled && stream;
  if (stream && opts.streamMinBytes != 0 && !opts.gpu && (vectorGuard || peeled) && line > 0) {
    GuardPlan g;
    g.kind = GuardKind::Stream;
    g.peeled = peeled;
    g.extent = in.vectorExtent;
    g.minBytes = opts.streamMinBytes;
    g.hereBytes = opts.streamHereBytes;
    DimExpr bytes = totalBytes({&iface.outputs});
    g.bytes = bytes;
    g.width = line;
    bool atRunTime = g.minBytes == kStreamAtRunTime;
    g.text = "streaming stores: " + bytes.str() + " >= " +
             (atRunTime ? "the last-level cache" : std::to_string(g.minBytes));
    g.text += peeled ? " (rows peeled to 64-byte lines)"
                     : " && " + g.extent.str() + " % " + std::to_string(g.width) + " == 0 && outputs aligned to 64 bytes";
    Tri t = solver.lessEqual(DimExpr(atRunTime ? kStreamPlanFloorBytes : g.minBytes), bytes).tri;
    if (!peeled) {
      if (t != Tri::Disproved) t = solver.divisible(g.extent, DimExpr(g.width)).tri;
      // Pointer alignment is a fact of the call, never of the program.
      if (t == Tri::Proved) t = Tri::Unknown;
    }
    add(g, t);
  }
  if (opts.index32 && !in.indexCounts.empty()) {
    GuardPlan g;
    g.kind = GuardKind::Index32;
    g.counts = in.indexCounts;
    std::vector<Tri> ts;
    std::vector<DimExpr> seen;
    for (const DimExpr& c : in.indexCounts) {
      if (std::find(seen.begin(), seen.end(), c) != seen.end() || (c.isConst() && c.constValue() <= INT32_MAX))
        continue;  // the text lists each distinct count once
      seen.push_back(c);
      g.text += (g.text.empty() ? "" : " && ") + c.str() + " <= " + std::to_string(INT32_MAX);
      Interval iv = solver.bounds(c);
      ts.push_back(iv.hi <= INT32_MAX ? Tri::Proved : solver.lessEqual(c, DimExpr(INT32_MAX)).tri);
    }
    add(g, allOf(ts));
  }
  if (opts.broadcastFree && !in.broadcastPairs.empty()) {
    GuardPlan g;
    g.kind = GuardKind::BroadcastFree;
    g.pairs = in.broadcastPairs;
    std::vector<Tri> ts;
    for (const auto& [a, b] : in.broadcastPairs) {
      g.text += (g.text.empty() ? "" : " && ") + a.str() + " == " + b.str();
      ts.push_back(solver.equal(a, b).tri);
    }
    add(g, allOf(ts));
  }
  if (opts.gpu && !(in.rowLength.isConst() && in.rowLength.constValue() == 0)) {
    // One guard per cooperative schedule, each a range of the row length;
    // rows shorter than every range take a thread each (the fallback).
    struct Range {
      GpuSchedule s;
      int64_t lo, hi;
      const char* what;
    };
    std::vector<Range> ranges;
    std::vector<GuardPlan> pending;
    if (in.columns) ranges.push_back({GpuSchedule::Tile, opts.tileRowMin, INT64_MAX, "tiles of 32 columns"});
    else {
      int64_t regMax = std::max(opts.blockRowMin, opts.blockRegisterRowMax);
      ranges.push_back({GpuSchedule::Block, regMax, INT64_MAX, "a block per long row"});
      ranges.push_back({GpuSchedule::Block, opts.blockRowMin, regMax, "a block per row, kept in registers"});
      ranges.push_back({GpuSchedule::Warp, opts.warpRowMin, opts.blockRowMin, "a warp per row"});
    }
    if (in.phases > 0 && opts.splitChunk > 0 && opts.splitChunk % std::max(1, width) == 0) {
      // Last, so that at equal assumptions split versions come first.
      GuardPlan g;
      g.kind = GuardKind::Schedule;
      g.schedule = GpuSchedule::Split;
      g.extent = in.rowLength;
      g.lo = opts.splitRowMin;
      g.units = iface.units;
      g.unitsMax = opts.splitMaxRows;
      g.chunk = opts.splitChunk;
      g.text = "rows split into chunks of " + std::to_string(opts.splitChunk) + ": " + in.rowLength.str() +
               " >= " + std::to_string(opts.splitRowMin) + " && " + iface.units.str() +
               " <= " + std::to_string(opts.splitMaxRows);
      pending.push_back(g);
    }
    for (const Range& r : ranges) {
      if (r.lo >= r.hi) continue;
      GuardPlan g;
      g.kind = GuardKind::Schedule;
      g.schedule = r.s;
      g.extent = in.rowLength;
      g.lo = r.lo;
      g.hi = r.hi;
      g.text = std::string(r.what) + ": " + in.rowLength.str() + " >= " + std::to_string(r.lo) +
               (r.hi == INT64_MAX ? "" : " && " + in.rowLength.str() + " < " + std::to_string(r.hi));
      std::vector<Tri> ts = {solver.lessEqual(DimExpr(r.lo), in.rowLength).tri};
      if (r.hi != INT64_MAX) ts.push_back(solver.lessThan(in.rowLength, DimExpr(r.hi)).tri);
      add(g, allOf(ts));
    }
    for (GuardPlan& g : pending)
      add(g, allOf({solver.lessEqual(DimExpr(g.lo), g.extent).tri,
                    solver.lessEqual(g.units, DimExpr(g.unitsMax)).tri}));
    if (in.columns && opts.gpuColumnSplitRowMin > 0 && !(in.splitRows.isConst() && in.splitRows.constValue() == 0)) {
      GuardPlan g;
      g.kind = GuardKind::Schedule;
      g.schedule = GpuSchedule::TileSplit;
      g.extent = in.splitRows;
      g.lo = opts.gpuColumnSplitRowMin;
      g.text = "tiles over rows split into chunks of " + rowSplitChunkRows(in.splitRows).str() + ": " +
               in.splitRows.str() + " >= " + std::to_string(opts.gpuColumnSplitRowMin);
      add(g, solver.lessEqual(DimExpr(g.lo), g.extent).tri);
    }
  }
  if (!opts.gpu && opts.cpuSplitRowMin > 0 && in.columns &&
      !(in.splitRows.isConst() && in.splitRows.constValue() == 0)) {
    // A column block reads a run of each row, a row stride apart, which the
    // hardware prefetchers follow poorly; chunks of whole rows stream. Rows a
    // conv wrote band by band (a squeeze-excite mean) are in the cache, but
    // each thread's column block reads every band, half of them from the
    // other core's cache: whole rows pay from a few there (kBandRowsMin).
    GuardPlan g;
    g.kind = GuardKind::Schedule;
    g.schedule = GpuSchedule::RowSplit;
    g.extent = in.splitRows;
    g.lo = in.bandWritten ? std::min(opts.cpuSplitRowMin, kBandRowsMin) : opts.cpuSplitRowMin;
    g.text = "rows split into chunks of " + rowSplitChunkRows(in.splitRows).str() + ": " + in.splitRows.str() +
             " >= " + std::to_string(g.lo) + (in.bandWritten ? " (rows written in bands)" : "");
    add(g, solver.lessEqual(DimExpr(g.lo), g.extent).tri);
  }
  return out;
}

// Every combination of the run-time guards, most assumptions first; proved
// guards are in every version.
std::vector<KernelVariant> versionsOf(const std::vector<GuardPlan>& guards) {
  KernelVariant base;
  std::vector<const GuardPlan*> runtime;
  auto set = [](KernelVariant& v, const GuardPlan& g) {
    if (g.kind == GuardKind::Vector) {
      v.vectorWidth = g.width;
      v.alignedBlocks = g.aligned;
    }
    if (g.kind == GuardKind::Index32) v.index32 = true;
    if (g.kind == GuardKind::BroadcastFree) v.broadcastFree = true;
    if (g.kind == GuardKind::Stream) {
      v.stream = true;
      v.streamPeeled = g.peeled;
    }
    if (g.kind == GuardKind::Schedule) v.schedule = g.schedule;
    if (g.kind == GuardKind::Schedule && g.schedule == GpuSchedule::Split) v.splitChunk = g.chunk;
    if (g.kind == GuardKind::Schedule && (g.schedule == GpuSchedule::Warp || g.schedule == GpuSchedule::Block))
      v.rowMax = g.hi == INT64_MAX ? 0 : g.hi - 1;
  };
  for (const GuardPlan& g : guards) {
    if (g.proved) set(base, g);
    else runtime.push_back(&g);
  }
  // One streaming version, the most specialised: large calls meet every
  // other guard in practice, and each version is compiled code. A peeled
  // one assumes every other guard but the vector blocks' (its rows are
  // explicit vectors with a masked last block either way), so rows of any
  // length take it.
  unsigned streamMask = (1u << runtime.size()) - 1;
  bool peeled = false;
  for (const GuardPlan* g : runtime) peeled |= g->kind == GuardKind::Stream && g->peeled;
  for (size_t i = 0; peeled && i < runtime.size(); ++i)
    if (runtime[i]->kind == GuardKind::Vector) streamMask &= ~(1u << i);
  std::vector<unsigned> masks;
  for (unsigned m = 0; m < (1u << runtime.size()); ++m) {
    // Schedules exclude each other; a column tile reads one column per
    // thread, so it has no vector blocks.
    int schedules = 0;
    bool vector = false;
    for (size_t i = 0; i < runtime.size(); ++i)
      if (m & (1u << i)) {
        schedules += runtime[i]->kind == GuardKind::Schedule;
        vector |= runtime[i]->kind == GuardKind::Vector;
      }
    auto tiled = [](GpuSchedule s) { return s == GpuSchedule::Tile || s == GpuSchedule::TileSplit; };
    bool tile = tiled(base.schedule);
    for (size_t i = 0; i < runtime.size(); ++i)
      if ((m & (1u << i)) && tiled(runtime[i]->schedule) && runtime[i]->kind == GuardKind::Schedule) tile = true;
    if (schedules > 1 || (tile && (vector || base.vectorWidth > 1))) continue;
    bool badStream = false;
    for (size_t i = 0; i < runtime.size(); ++i)
      badStream |= runtime[i]->kind == GuardKind::Stream && (m & (1u << i)) && m != streamMask;
    if (badStream) continue;
    masks.push_back(m);
  }
  // Most assumptions first, the streaming version before all (the host
  // calls the first version whose guards hold).
  auto streams = [&](unsigned m) {
    for (size_t i = 0; i < runtime.size(); ++i)
      if ((m & (1u << i)) && runtime[i]->kind == GuardKind::Stream) return true;
    return false;
  };
  std::stable_sort(masks.begin(), masks.end(), [&](unsigned a, unsigned b) {
    if (streams(a) != streams(b)) return streams(a);
    int pa = __builtin_popcount(a), pb = __builtin_popcount(b);
    return pa != pb ? pa > pb : a > b;
  });
  std::vector<KernelVariant> out;
  for (unsigned m : masks) {
    KernelVariant v = base;
    for (size_t i = 0; i < runtime.size(); ++i)
      if (m & (1u << i)) set(v, *runtime[i]);
    out.push_back(v);
  }
  return out;
}

}  // namespace

std::string planModel(const Function& f, ShapeSolver& solver, const PlanOptions& opts, ModelPlan& out,
                      const Operation** failed) {
  out.func = &f;
  out.kernels.clear();
  // A constant is evaluated into the object (file constants are read by
  // the frontend, which checks them): one over kMaxEmbeddedConstantBytes
  // (f32[2^63-1, 4], a 40 GB splat) is refused here, at its op, before any
  // memory is taken for it.
  for (const auto& top : f.ops) {
    std::vector<const Operation*> ops{top.get()};
    for (const auto& b : top->body) ops.push_back(b.get());
    for (const Operation* op : ops) {
      if (op->kind != OpKind::Constant || op->results.empty()) continue;
      if (const Attribute* v = op->attr("value"); v && v->kind == Attribute::Kind::File) continue;
      const Type& t = op->result()->type;
      std::vector<int64_t> dims;
      for (const DimExpr& d : t.dims)
        if (d.isConst()) dims.push_back(d.constValue());
      if (dims.size() != t.dims.size()) continue;
      const int64_t elem = int64_t(dtypeSize(t.dtype));
      std::string why = sizeProblem(dims, elem);  // "" means the count is at most 2^40: bytes fit int64
      if (int64_t bytes = why.empty() ? *checkedNumel(dims) * elem : 0; bytes > kMaxEmbeddedConstantBytes)
        why = std::to_string(bytes) +
              " bytes, over the limit of 2^31 bytes for a constant embedded in the code (use constant file(...))";
      if (!why.empty()) {
        if (failed) *failed = op;
        return "constant %" + op->result()->name + " : " + t.str() + " is too large to embed: " + why;
      }
    }
  }
  size_t index = 0;
  for (const auto& op : f.ops) {
    if (op->kind != OpKind::Fusion) continue;
    KernelPlan k;
    k.fusion = op.get();
    std::string resName = op->results.empty() ? "none" : op->result()->name;
    k.symbol = cIdentifier(f.name) + ".k" + std::to_string(index++) + "." + cIdentifier(resName);
    std::optional<KernelKind> kind = kernelKindOf(*op);
    if (kind) k.kind = *kind;
    std::string why;
    if (!kind) {
      why = "codegen: unknown kernel kind '" + kindText(*op) + "'";
    } else if (k.kind == KernelKind::Loop) {
      k.form = planLoopKernel(*op, &why);
    } else if (k.kind == KernelKind::Stitch || k.kind == KernelKind::Input) {
      k.form = planReductionKernel(*op, k.kind == KernelKind::Stitch, &why);
    } else if (k.kind == KernelKind::Generic) {
      int width = opts.loopVectorWidth > 0 ? opts.loopVectorWidth : opts.vectorWidth;
      bool vectors = !opts.gpu && (opts.genericVector == PlanOptions::GenericVector::On ||
                                   (opts.genericVector == PlanOptions::GenericVector::Auto && genericVectorPays(*op, width)));
      // The GPU's host reads the check cells after the call, when an index
      // operand's buffer may hold another value: each gather keeps its smallest.
      k.form = planGenericKernel(*op, /*tiles=*/!opts.gpu, vectors, &why, /*leastIndices=*/opts.gpu);
    } else if (isWindowKernel(*op)) {
      k.window = std::make_shared<WindowPlan>();
      why = planWindowKernel(*op, opts.gpu, *k.window);
      k.hasKernel = false;
    } else if (isRnnKernel(*op)) {
      k.rnn = std::make_shared<RnnPlan>();
      why = planRnnKernel(*op, opts.gpu, *k.rnn);
      k.hasKernel = false;
    } else if (isScatterKernel(*op)) {
      k.scatter = std::make_shared<ScatterPlan>();
      why = planScatterKernel(*op, opts.gpu, *k.scatter);
      k.hasKernel = false;
    } else if (isScanKernel(*op)) {
      k.scan = std::make_shared<ScanPlan>();
      why = planScanKernel(*op, opts.gpu, *k.scan);
      k.hasKernel = false;
    } else {
      k.gemm = std::make_shared<GemmPlan>();
      why = planLibraryKernel(*op, &solver, *k.gemm);
      DType mdt = why.empty() ? k.gemm->matmul->operands[0]->type.dtype : DType::F32;
      if (why.empty() && mdt != DType::F32 && !opts.gpu)
        why = "codegen: matmul of " + std::string(dtypeName(mdt)) +
              " needs a GPU target (--target=cuda:sm_80 or cuda:sm_90); the cpu target's BLAS is fp32";
      if (why.empty() && k.gemm->epilogue) k.form = planLoopKernel(*k.gemm->epilogue, &why);
      k.hasKernel = why.empty() && k.gemm->epilogue != nullptr;
    }
    if (!why.empty()) {
      if (failed) *failed = op.get();
      return "kernel %" + resName + " (" + kindText(*op) + "): " + why;
    }
    if (k.form) k.iface = k.form->iface;
    // Where the operands come from (outside the kernel): rows a channels-last window wrote in bands per thread.
    if (k.kind == KernelKind::Input) k.iface.guards.bandWritten = readsBandWritten(*op);
    if (k.hasKernel)
      k.guards = decideGuards(k.iface, solver, opts, takesLoopVectorWidth(k.kind) || k.kind == KernelKind::Generic,
                              k.kind == KernelKind::Generic,
                              (k.kind == KernelKind::Loop || k.kind == KernelKind::Stitch) && streamingPays(*op),
                              k.kind == KernelKind::Stitch && peelsRows(*op));
    k.versions = k.hasKernel ? versionsOf(k.guards) : std::vector<KernelVariant>{};
    if (k.hasKernel) k.chunk = kernelChunkElements(k.gemm ? *k.gemm->epilogue : *op);
    out.kernels.push_back(std::move(k));
  }
  return "";
}

}  // namespace dscc::codegen
