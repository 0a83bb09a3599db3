// Planning stitch and input kernels: their form (passes/ReductionForm.cpp), then the interface and the guards' inputs.
#include "codegen/ReductionPlan.h"

#include <algorithm>

#include "codegen/ElementOps.h"
#include "ir/IndexMap.h"

namespace dscc::codegen::reduction {

std::string plan(const Operation& f, bool stitch, Plan& p) {
  const KernelKind want = stitch ? KernelKind::Stitch : KernelKind::Input;
  if (f.kind == OpKind::Fusion && kernelKindOf(f) != want)
    return err("%" + nameOf(f) + " is a '" + kindText(f) + "' kernel, not a '" + kernelKindName(want) + "' kernel");
  if (std::string e = fuseops::formReductions(f, stitch, p); !e.empty()) return err(e);
  std::set<std::string> symbols;
  for (const Value* v : f.operands) {
    if (!dtypeSupported(v->type.dtype))
      return err("dtype " + std::string(dtypeName(v->type.dtype)) + " of operand %" + v->name + " is not supported");
    p.iface.inputs.push_back(v->type);
    for (const DimExpr& d : v->type.dims) d.collectSymbols(symbols);
  }
  for (const auto& r : f.results) {
    if (!dtypeSupported(r->type.dtype))
      return err("dtype " + std::string(dtypeName(r->type.dtype)) + " of %" + r->name + " is not supported");
    p.iface.outputs.push_back(r->type);
    for (const DimExpr& d : r->type.dims) d.collectSymbols(symbols);
  }
  p.iface.symbols.assign(symbols.begin(), symbols.end());
  for (const auto& op : f.body)
    if (!isReduction(*op))
      if (std::string why = checkElementwiseOp(*op); !why.empty()) return err(why);
  size_t r = p.space.size();

  p.iface.units = product(p.kept);
  DimExpr work(1);
  for (size_t d = 0; d < r; ++d)
    if (p.reduced[d]) work = work * p.space[d];
  p.iface.workPerUnit = work;
  KernelGuardInputs& g = p.iface.guards;
  g.vectorExtent = r > 0 ? p.space.back() : DimExpr(0);
  g.rowLength = work;
  g.columns = p.column;
  if (p.column) {
    for (size_t d = 0; d < r; ++d)
      if (p.reduced[d]) {
        g.splitRows = p.space[d];
        break;
      }
    g.splitOuter = product(std::vector<DimExpr>(p.kept.begin(), p.kept.end() - 1));
  }
  // Split versions cut the last axis: stitch kernels, and input kernels that
  // reduce the last axis only (a row sum).
  bool lastOnly = !p.reduced.empty() && p.reduced.back() &&
                  std::count(p.reduced.begin(), p.reduced.end(), true) == 1;
  g.phases = stitch || (!p.column && lastOnly) ? p.phases : 0;
  g.reductions = static_cast<int>(p.reductions.size());
  g.indexCounts.push_back(product(p.space));
  for (const Type& t : p.iface.inputs) g.indexCounts.push_back(numel(t));
  for (const Type& t : p.iface.outputs) g.indexCounts.push_back(numel(t));
  for (auto [k, fr] : p.reads) {
    const Type& t = p.iface.inputs[k];
    const std::vector<DimExpr>& fd = p.dims(fr);
    for (size_t d = 0; d < t.rank(); ++d) {
      size_t j = d + fd.size() - t.rank();
      std::pair<DimExpr, DimExpr> pr{t.dims[d], fd[j]};
      if (accessOf(t, fd, j) == Access::Dynamic &&
          std::find(g.broadcastPairs.begin(), g.broadcastPairs.end(), pr) == g.broadcastPairs.end())
        g.broadcastPairs.push_back(pr);
    }
  }
  return "";
}

}  // namespace dscc::codegen::reduction
