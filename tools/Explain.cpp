// The kernels of a plan as `dscc explain` reports them: guards, their values at given sizes, and the version that runs.
#include "tools/Explain.h"

#include <sstream>

#include "codegen/LibraryPlan.h"
#include "codegen/gpu/GpuScatter.h"

namespace dscc::tools {
namespace {

std::string opsSummary(const Operation& fusion) {
  std::string s;
  for (const auto& op : fusion.body) s += (s.empty() ? "" : " ") + std::string(op->name());
  return s;
}

std::string value(const DimExpr& e, const DimBindings* env) {
  if (!env) return "?";
  std::string why;
  auto v = e.evaluate(*env, &why);
  return v ? std::to_string(*v) : "?";
}

const char* guardName(codegen::GuardKind k) {
  return k == codegen::GuardKind::Vector    ? "vector"
         : k == codegen::GuardKind::Index32 ? "index32"
         : k == codegen::GuardKind::Schedule ? "schedule"
         : k == codegen::GuardKind::Stream  ? "stream"
                                              : "broadcast-free";
}

KernelExplain explainOne(const codegen::KernelPlan& k, size_t index, const DimBindings* env) {
  KernelExplain e;
  const Operation& op = *k.fusion;
  e.index = index;
  e.result = op.result()->name;
  e.symbol = k.symbol;
  e.kind = k.kind;
  e.type = op.result()->type.str();
  e.ops = opsSummary(op);
  e.hasKernel = k.hasKernel;
  std::ostringstream out;
  out << "\n[" << index << "] %" << e.result << "  " << kernelKindName(k.kind) << "  " << e.type << "  (" << e.ops << ")\n";
  if (k.window) {
    // A conv or pool: on the CPU one oneDNN-backed runtime call, on the GPU a kernel of ours
    // (codegen/gpu/GpuWindow.h: a thread per output element).
    const codegen::WindowPlan& w = *k.window;
    auto dims = [&](const std::vector<DimExpr>& ds) {
      std::string s;
      for (const DimExpr& d : ds) s += (s.empty() ? "" : "x") + value(d, env);
      return s;
    };
    std::string shapes = ": input " + dims(w.xDims) + (w.wDims.empty() ? "" : " weight " + dims(w.wDims)) +
                         " output " + dims(w.yDims);
    if (w.gpu) {
      std::string what = w.op->kind == OpKind::Pool
                             ? std::string(w.attrs.isMax ? "max" : w.attrs.isArgmax ? "argmax" : "avg") + " pool"
                             : std::string(w.op->name());
      bool sums = !(w.op->kind == OpKind::Pool && (w.attrs.isMax || w.attrs.isArgmax));
      e.blas = "gpu " + what + " (a thread per output element" + (sums ? ", f64 sums" : "") + "): " +
               std::string(dtypeName(w.dtype)) + shapes.substr(1);
      out << "    kernels " << e.blas << "\n";
      e.text = out.str();
      return e;
    }
    e.blas = std::string(w.op->kind == OpKind::Conv            ? "dscc_conv_f32"
                         : w.op->kind == OpKind::ConvTranspose ? "dscc_conv_transpose_f32"
                         : w.attrs.isArgmax                     ? "dscc_pool_argmax_f32"
                                                               : "dscc_pool_f32") + shapes;
    if (!w.post.empty()) {
      // The fused epilogue, as the runtime's post-ops (WindowPlan::post).
      std::string ps;
      for (const ConvPostOp& p : w.post) {
        ps += ps.empty() ? "" : ", ";
        std::ostringstream a;
        a << p.a << ", " << p.b;
        switch (p.kind) {
          case ConvPostOp::Kind::Relu: ps += "relu"; break;
          case ConvPostOp::Kind::Linear: ps += "linear(" + a.str() + ")"; break;
          case ConvPostOp::Kind::Clip: ps += "clip(" + a.str() + ")"; break;
          case ConvPostOp::Kind::Hardswish: ps += "hardswish"; break;
          case ConvPostOp::Kind::Add: ps += "add %" + p.src->name; break;
        }
      }
      e.blas += " post-ops " + ps;
    }
    // The argmax pool is our own loops (runtime/PoolArgmax.cpp), not oneDNN.
    out << "    " << (w.attrs.isArgmax ? "runtime " : "oneDNN ") << e.blas << "\n";
    e.text = out.str();
    return e;
  }
  if (k.rnn) {
    // An rnn: on the CPU one runtime call (a loop over time steps with sgemm), on the GPU kernels of ours launched
    // per time step (codegen/gpu/GpuRecurrent.h).
    const codegen::RnnPlan& r = *k.rnn;
    std::string what = std::string(rnnCellName(r.attrs.cell)) + " " + rnnDirectionName(r.attrs.direction) + " seq " +
                       value(r.seq, env) + " batch " + value(r.batch, env) + " input " + value(r.input, env) +
                       " hidden " + std::to_string(r.attrs.hidden) + " output " + rnnOutputName(r.attrs.output);
    if (r.gpu) {
      bool gates = r.attrs.cell == RnnCell::Gru && !r.attrs.linearBeforeReset;
      e.blas = "gpu rnn (init, proj, then " + std::string(gates ? "gates, step" : "step") + " per time step" +
               (r.attrs.output == RnnOutput::Y ? "" : ", final") + "; a thread per direction, batch row and hidden unit, f64): " +
               std::string(dtypeName(r.dtype)) + " " + what;
      out << "    kernels " << e.blas << "\n";
    } else {
      e.blas = "dscc_rnn_f32: " + what;
      out << "    runtime " << e.blas << "\n";
    }
    e.text = out.str();
    return e;
  }
  if (k.scatter || k.scan) {
    // A scatter or cumsum: on the CPU one runtime call (copy then write; a running sum), on the GPU the launches
    // of codegen/gpu/GpuScatter.h (copy, last-writer marks, writes; a thread per column).
    bool gpu = k.scatter ? k.scatter->gpu : k.scan->gpu;
    if (k.scatter) {
      const codegen::ScatterPlan& s = *k.scatter;
      std::string steps = s.reduction == ScatterReduction::None ? "copy, mark, write" : "copy, write (atomic)";
      e.blas = (gpu ? "gpu scatter (" + steps + "): " : std::string("dscc_scatter: ")) + std::string(dtypeName(s.dtype)) + " rows " + value(s.rows, env) +
               " updates " + value(s.count, env) + " inner " + value(s.inner, env) + " reduction " +
               scatterReductionName(s.reduction);
    } else {
      const codegen::ScanPlan& s = *k.scan;
      // On the GPU the host picks the form by size (codegen/gpu/GpuScatter.h): name the one that runs.
      std::string form = "a thread per column, or chunks of " + std::to_string(codegen::kGpuScanChunk) +
                         " steps for fewer than " + std::to_string(codegen::kGpuScanChunkColumnsMax) +
                         " columns longer than that";
      auto cols = env ? (s.outer * s.inner).evaluate(*env) : std::nullopt;
      auto len = env ? s.len.evaluate(*env) : std::nullopt;
      if (cols && len)
        form = *cols < codegen::kGpuScanChunkColumnsMax && *len > codegen::kGpuScanChunk
                   ? "chunks of " + std::to_string(codegen::kGpuScanChunk) + " steps: sums, offsets, chunks"
                   : "a thread per column";
      e.blas = (gpu ? "gpu cumsum (" + form + "): " : std::string("dscc_cumsum: ")) + std::string(dtypeName(s.dtype)) + " outer " + value(s.outer, env) +
               " len " + value(s.len, env) + " inner " + value(s.inner, env) + (s.attrs.exclusive ? " exclusive" : "") +
               (s.attrs.reverse ? " reverse" : "");
    }
    out << (gpu ? "    kernels " : "    runtime ") << e.blas << "\n";
    e.text = out.str();
    return e;
  }
  if (k.gemm) {
    const codegen::GemmPlan& g = *k.gemm;
    std::string batch;
    for (const DimExpr& d : g.batchDims) batch += (batch.empty() ? "" : "x") + value(d, env);
    std::ostringstream b;
    b << "sgemm: M=" << value(g.M, env) << " N=" << value(g.N, env) << " K=" << value(g.K, env)
      << (batch.empty() ? "" : " batch=" + batch) << (g.a.trans ? " A^T" : "") << (g.b.trans ? " B^T" : "")
      << (g.a.copyDims.empty() && g.b.copyDims.empty() ? "" : " (an operand is copied to a dense layout)");
    e.blas = b.str();
    out << "    BLAS " << e.blas << "\n";
    if (!k.hasKernel) {
      out << "    no epilogue\n";
      e.text = out.str();
      return e;
    }
    out << "    epilogue:\n";
  }
  out << "    units " << k.iface.units.str() << " = " << value(k.iface.units, env) << ", elements per unit "
      << value(k.iface.workPerUnit, env) << "\n";
  for (const codegen::GuardPlan& g : k.guards) {
    GuardExplain ge{guardName(g.kind), g.text, g.proved, std::nullopt, g.aligned};
    out << "    guard " << ge.kind << ": " << g.text;
    if (g.proved) {
      out << "  -- proved from the facts, no run-time test\n";
    } else {
      if (env) ge.holds = g.holdsAt(*env);
      out << "  -- run time: " << (ge.holds ? (*ge.holds ? "true" : "false") : "unknown")
          << (g.aligned ? " (the pointers are tested per call; shown as aligned)" : "") << "\n";
    }
    e.guards.push_back(std::move(ge));
  }
  const codegen::KernelPlan* chosen = &k;
  if (k.tuning) {
    // The tuned range picks a configuration; its own guard cascade picks the version.
    const codegen::KernelTuningPlan& tp = *k.tuning;
    std::optional<size_t> ci = env ? tp.configAt(*env) : std::nullopt;
    std::string where = "outside every range: fallback";
    auto sz = env ? tp.size.evaluate(*env) : std::nullopt;
    for (const auto& r : tp.ranges)
      if (sz && *sz >= r.from && *sz <= r.to) where = "range [" + std::to_string(r.from) + ", " + std::to_string(r.to) + "]";
    const codegen::TunedConfig& c = tp.configs[ci ? *ci : tp.fallback];
    std::ostringstream t;
    t << tp.size.str() << " = " << value(tp.size, env) << ", " << where << " -> " << c.name << " (chunk " << c.chunk
      << " elements per task)";
    e.tuned = t.str();
    out << "    tuned: " << e.tuned << "\n";
    chosen = &c.plan;
  }
  for (const auto& v : chosen->versions) e.versions.push_back(v.name());
  out << "    versions:";
  for (const std::string& v : e.versions) out << " " << v;
  out << "\n";
  if (env) {
    e.runs = chosen->functionName(chosen->chooseVersion(*env));
    out << "    runs: " << e.runs << "\n";
  }
  e.text = out.str();
  return e;
}

}  // namespace

std::vector<KernelExplain> explainKernels(const codegen::ModelPlan& plan, const DimBindings* env) {
  std::vector<KernelExplain> r;
  for (size_t i = 0; i < plan.kernels.size(); ++i) r.push_back(explainOne(plan.kernels[i], i, env));
  return r;
}

}  // namespace dscc::tools
