// Pass registry and runner.
#include "passes/Pipeline.h"

#include <chrono>
#include <cstdio>

#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/CSE.h"
#include "passes/ChannelsLast.h"
#include "passes/Canonicalize.h"
#include "passes/DCE.h"
#include "passes/Decompose.h"
#include "passes/FoldConstants.h"
#include "passes/FoldWeights.h"
#include "passes/FoldConvAffine.h"
#include "passes/Fuse.h"
#include "passes/InferShapes.h"

namespace dscc {

const std::vector<PassInfo>& allPasses() {
  static const std::vector<PassInfo> passes = {
      {"verify", "check every op, fact and return type (runs after every pass anyway)",
       [](Module& m, PassContext& c) { return verifyModule(m, c.diags); }},
      {"infer-shapes", "prove relations between dims with union-find and Z3, infer every dim, add run-time checks",
       [](Module& m, PassContext& c) { return inferShapes(m, c); }},
      {"decompose", "softmax, log_softmax, layer_norm, gelu, reduce_mean into primitives", decompose},
      {"canonicalize", "algebraic identities (x*1, x+0, double transpose, reshape of reshape, ...)", canonicalize},
      {"fold-constants", "evaluate ops on small constants at compile time", foldConstants},
      {"fold-conv-affine", "fold per-channel add/sub/mul/div after a conv (inference batch norm) into its weight and bias",
       foldConvAffine},
      {"fold-weights", "rnn weights computed from constants (an exporter's rearranging) into constants", foldWeights},
      {"cse", "remove repeated computations", cse},
      {"dce", "remove ops whose results are unused", dce},
      {"channels-last", "CPU convs and pools on [N, spatial..., C] tensors, transposes sunk to the network's edges",
       channelsLast},
      {"fuse", "plan kernels: library, loop, input and stitch fusion regions", fuse},
  };
  return passes;
}

const PassInfo* lookupPass(const std::string& name) {
  for (const auto& p : allPasses())
    if (p.name == name) return &p;
  return nullptr;
}

bool runPasses(Module& m, const std::vector<const PassInfo*>& passes, DiagEngine& diags,
               const PipelineOptions& opts, std::ostream& os, SolverPool* solvers) {
  struct Timing {
    std::string name;
    double ms, startupMs;
  };
  std::vector<Timing> times;
  bool ok = true;
  PassContext ctx{diags, opts, os};
  ctx.solvers = solvers;
  for (const PassInfo* p : passes) {
    ctx.startupMs = 0;
    auto t0 = std::chrono::steady_clock::now();
    ok = p->run(m, ctx) && verifyModule(m, diags);
    auto t1 = std::chrono::steady_clock::now();
    times.push_back({p->name, std::chrono::duration<double, std::milli>(t1 - t0).count(), ctx.startupMs});
    if (!ok) break;
    bool print = opts.printAfterAll;
    for (const auto& n : opts.printAfter) print |= n == p->name;
    if (print) os << "// ----- IR after " << p->name << " -----\n" << printModule(m) << "\n";
  }
  if (opts.timePasses) {
    double total = 0;
    for (const auto& t : times) total += t.ms;
    os << "// ----- pass timing -----\n";
    char buf[160];
    for (const auto& t : times) {
      if (t.startupMs > 0)
        std::snprintf(buf, sizeof buf, "//   %10.3f ms  %s (%.3f ms without Z3 start-up)\n", t.ms, t.name.c_str(),
                      t.ms - t.startupMs);
      else
        std::snprintf(buf, sizeof buf, "//   %10.3f ms  %s\n", t.ms, t.name.c_str());
      os << buf;
    }
    std::snprintf(buf, sizeof buf, "//   %10.3f ms  total\n", total);
    os << buf;
  }
  return ok;
}

}  // namespace dscc
