// Planning stitch and input kernels: which dims are reduced, the phase of each reduction, the frame of each value, the results' shapes and the guards' inputs.
#include "codegen/ReductionPlan.h"

#include <algorithm>

#include "codegen/ElementOps.h"
#include "ir/IndexMap.h"

namespace dscc::codegen::reduction {

bool isReduction(const Operation& op) { return op.info().category == OpCategory::Reduce; }

namespace {

// The reduced dims of `op` as a mask over its operand's, and its keepdims.
// reducedAxes forgives malformed axes (the verifier reports them); a kernel
// built from such an op is refused here rather than miscompiled.
std::string parseAxes(const Operation& op, std::vector<bool>& reduced, bool& keepdims) {
  const int64_t rank = static_cast<int64_t>(op.operands[0]->type.rank());
  std::vector<size_t> axes = reducedAxes(op);
  if (const Attribute* a = op.attr("axes")) {
    bool ok = axes.size() == a->list.size();  // reducedAxes drops repeats
    for (const Attribute& x : a->list) ok = ok && x.kind == Attribute::Kind::Int && x.i >= -rank && x.i < rank;
    if (!ok) return err("bad axes of " + std::string(op.name()) + " (%" + nameOf(op) + ")");
  }
  reduced.assign(static_cast<size_t>(rank), false);
  for (size_t d : axes) reduced[d] = true;
  keepdims = keepsDims(op);
  return "";
}

}  // namespace

std::string plan(const Operation& f, bool stitch, Plan& p) {
  p.fusion = &f;
  p.stitch = stitch;
  const KernelKind want = stitch ? KernelKind::Stitch : KernelKind::Input;
  p.kindName = kernelKindName(want);
  if (f.kind != OpKind::Fusion) return err("op '" + std::string(f.name()) + "' is not a fusion");
  if (kernelKindOf(f) != want)
    return err("%" + nameOf(f) + " is a '" + kindText(f) + "' kernel, not a '" + p.kindName + "' kernel");
  if (f.results.empty() || f.yields.size() != f.results.size()) return err("a kernel must yield its results");
  std::set<std::string> symbols;
  for (const Value* v : f.operands) {
    if (!dtypeSupported(v->type.dtype))
      return err("dtype " + std::string(dtypeName(v->type.dtype)) + " of operand %" + v->name + " is not supported");
    p.inputIndex.emplace(v, p.iface.inputs.size());
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

  for (const auto& opp : f.body) {
    const Operation& op = *opp;
    for (const Value* v : op.operands)
      if (!p.inputIndex.count(v) && !p.defOf.count(v))
        return err("%" + v->name + " is used in the kernel body but is not a fusion operand");
    if (op.results.size() != 1) return err("op '" + std::string(op.name()) + "' must have one result");
    const Value* res = op.result();
    int dep = -1;
    Frame fr = Frame::Any;
    for (const Value* v : op.operands) {
      if (auto it = p.depPhase.find(v); it != p.depPhase.end()) dep = std::max(dep, it->second);
      Frame g = p.frame.count(v) ? p.frame[v] : Frame::Any;
      if (g != Frame::Any && fr != Frame::Any && g != fr)
        return err("op '" + std::string(op.name()) + "' (%" + res->name + ") mixes reduced and unreduced dims in a " +
                   p.kindName + " kernel; not supported yet");
      if (g != Frame::Any) fr = g;
    }
    if (isReduction(op)) {
      const Value* in = op.operands[0];
      if (in->type.dtype != res->type.dtype || !dtypeSupported(in->type.dtype))
        return err(std::string(op.name()) + " (%" + res->name + ") from " + in->type.str() + " to " +
                   res->type.str() + " is not supported");
      if (fr == Frame::Rows)
        return err("reduction %" + res->name + " of a reduced value in a " + p.kindName + " kernel is not supported yet");
      std::vector<bool> red;
      bool keep = false;
      if (std::string e = parseAxes(op, red, keep); !e.empty()) return e;
      if (p.reductions.empty()) {
        p.space = in->type.dims;
        p.reduced = red;
      } else if (in->type.dims != p.space || red != p.reduced) {
        return err("reductions of different shapes or axes in one " + std::string(p.kindName) + " kernel (%" +
                   res->name + ") are not supported yet");
      }
      if (!stitch && dep >= 0)
        return err("reduction %" + res->name + " of a reduced value in an input kernel is not supported yet");
      int ph = dep + 1;
      p.phase[&op] = ph;
      p.phases = std::max(p.phases, ph + 1);
      p.reductions.push_back(&op);
      dep = ph;
      fr = keep ? Frame::Full : Frame::Rows;
    } else if (isElementwise(op)) {
      if (std::string why = checkElementwiseOp(op); !why.empty()) return err(why);
    } else {
      return err("op '" + std::string(op.name()) + "' (%" + res->name + ") in a " + p.kindName +
                 " kernel is not supported yet");
    }
    p.defOf[res] = &op;
    p.frame[res] = fr;
    p.depPhase[res] = dep;
  }
  if (p.reductions.empty()) return err("%" + nameOf(f) + " has no reduction");
  size_t r = p.space.size();
  if (stitch) {
    for (size_t d = 0; d < r; ++d)
      if (p.reduced[d] != (d + 1 == r))
        return err("a stitch kernel that reduces other than the last axis (%" + nameOf(*p.reductions[0]) +
                   ") is not supported yet");
  }
  for (size_t d = 0; d < r; ++d) {
    p.keepShape.push_back(p.reduced[d] ? DimExpr(1) : p.space[d]);
    if (!p.reduced[d]) p.kept.push_back(p.space[d]);
  }
  p.column = !stitch && r > 0 && !p.reduced.back();
  for (const Operation* red : p.reductions)
    if (std::string e = p.check(red->operands[0], Frame::Full); !e.empty()) return e;

  std::vector<DimExpr> rowKeep = p.kept;
  rowKeep.push_back(DimExpr(1));
  for (size_t i = 0; i < f.yields.size(); ++i) {
    const Value* y = f.yields[i];
    Frame fr = p.frameOf(y, Frame::Full);
    if (std::string e = p.check(y, fr); !e.empty()) return e;
    bool el = p.elem(y, fr);
    const std::vector<DimExpr>& d = f.result(i)->type.dims;
    bool ok = fr == Frame::Rows ? d == p.kept
              : el              ? stitch && d == p.space
                                : d == (stitch ? rowKeep : p.keepShape);
    if (!ok)
      return err("result %" + f.result(i)->name + " of type " + f.result(i)->type.str() + " does not fit the " +
                 p.kindName + " kernel's space " + Type{DType::F32, p.space}.str() + "; not supported yet");
    p.resultFrame.push_back(fr);
    p.resultElem.push_back(el);
  }

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
