// fold-weights: the weight operands of `rnn` ops computed from constants, evaluated at compile time (FoldWeights.h).
#include "passes/FoldWeights.h"

#include <set>
#include <string>

#include "ir/Rewrite.h"
#include "passes/FoldConstants.h"

namespace dscc {
namespace {

// Bounds the work of one operand: a 2-layer LSTM of 4096 has 2*4*4096*4096 = 134M weights.
constexpr int64_t kMaxWeightElements = int64_t(1) << 28;

}  // namespace

bool foldWeights(Module& m, PassContext& ctx) {
  std::set<std::string> paths = filePaths(m);
  for (auto& f : m.funcs) {
    int folded = 0;
    for (size_t i = 0; i < f->ops.size(); ++i) {
      Operation& op = *f->ops[i];
      if (op.kind != OpKind::Rnn) continue;
      for (size_t k = 1; k < op.operands.size() && k <= 3; ++k) {
        Value* v = op.operands[k];
        if (!v->def || v->def->kind == OpKind::Constant) continue;
        auto t = constantValue(v, ctx.diags.sources(), kMaxWeightElements);
        if (!t) continue;
        auto c = makeTensorConstant(*f, std::move(*t), *v, v->name + ".folded", v->loc, paths, ctx.diags);
        if (!c) return false;
        op.operands[k] = c->result();
        f->ops.insert(f->ops.begin() + std::ptrdiff_t(i), std::move(c));
        ++i;
        ++folded;
      }
    }
    if (ctx.opts.stats) ctx.os << "// fold-weights stats of @" << f->name << ": " << folded << " operands folded\n";
  }
  return true;
}

}  // namespace dscc
