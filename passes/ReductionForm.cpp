// The form of stitch and input kernels: which dims are reduced, the phase of each reduction, the frame of each value, what the results store (declared in ReductionForm.h).
#include "passes/ReductionForm.h"

#include "ir/IndexMap.h"
#include "ir/KernelKind.h"

namespace dscc::fuseops {

bool isReduction(const Operation& op) { return op.info().category == OpCategory::Reduce; }

namespace {

std::string nameOf(const Operation& op) { return op.results.empty() ? std::string(op.name()) : op.result()->name; }

// The reduced dims of `op` as a mask over its operand's, and its keepdims.
// reducedAxes forgives malformed axes (the verifier reports them); a kernel
// built from such an op is refused here rather than miscompiled.
std::string parseAxes(const Operation& op, std::vector<bool>& reduced, bool& keepdims) {
  const int64_t rank = static_cast<int64_t>(op.operands[0]->type.rank());
  std::vector<size_t> axes = reducedAxes(op);
  if (const Attribute* a = op.attr("axes")) {
    bool ok = axes.size() == a->list.size();  // reducedAxes drops repeats
    for (const Attribute& x : a->list) ok = ok && x.kind == Attribute::Kind::Int && x.i >= -rank && x.i < rank;
    if (!ok) return "bad axes of " + std::string(op.name()) + " (%" + nameOf(op) + ")";
  }
  reduced.assign(static_cast<size_t>(rank), false);
  for (size_t d : axes) reduced[d] = true;
  keepdims = keepsDims(op);
  return "";
}

}  // namespace

bool ReductionForm::elem(const Value* v, Frame f) const {
  f = frameOf(v, f);
  auto key = std::make_pair(v, f);
  if (auto it = elemMemo_.find(key); it != elemMemo_.end()) return it->second;
  bool r = elemUncached(v, f);
  elemMemo_[key] = r;
  return r;
}

bool ReductionForm::elemUncached(const Value* v, Frame f) const {
  if (inputIndex.count(v)) {
    if (f == Frame::Rows) return false;
    size_t lead = space.size() - v->type.rank();
    for (size_t d = 0; d < v->type.rank(); ++d) {
      const DimExpr& x = v->type.dims[d];
      if (reduced[lead + d] && !(x.isConst() && x.constValue() == 1)) return true;
    }
    return false;
  }
  const Operation* op = defOf.at(v);
  if (isReduction(*op)) return false;
  for (const Value* o : op->operands)
    if (elem(o, f)) return true;
  return false;
}

std::string ReductionForm::check(const Value* v, Frame f) {
  f = frameOf(v, f);
  if (checkedOk_.count({v, f})) return "";
  std::string e = checkUncached(v, f);
  if (e.empty()) checkedOk_.insert({v, f});
  return e;
}

std::string ReductionForm::checkUncached(const Value* v, Frame f) {
  if (v->type.rank() > dims(f).size())
    return "%" + v->name + " of type " + v->type.str() + " has a higher rank than the " + kindName + " kernel's space";
  if (auto it = inputIndex.find(v); it != inputIndex.end()) {
    reads.insert({it->second, f});
    return "";
  }
  const Operation* op = defOf.at(v);
  if (isReduction(*op)) return "";
  for (const Value* o : op->operands)
    if (std::string e = check(o, f); !e.empty()) return e;
  return "";
}

KernelOps kernelOpsOf(const Operation& f) {
  KernelOps k;
  k.name = nameOf(f);
  for (const auto& op : f.body) k.body.push_back(op.get());
  k.operands.assign(f.operands.begin(), f.operands.end());
  k.yields.assign(f.yields.begin(), f.yields.end());
  for (const auto& r : f.results) k.results.push_back(r.get());
  return k;
}

std::string formReductions(const Operation& f, bool stitch, ReductionForm& p) {
  if (f.kind != OpKind::Fusion) return "op '" + std::string(f.name()) + "' is not a fusion";
  std::string e = formReductions(kernelOpsOf(f), stitch, p);
  p.fusion = &f;
  return e;
}

std::string formReductions(const KernelOps& f, bool stitch, ReductionForm& p) {
  p.stitch = stitch;
  p.kindName = kernelKindName(stitch ? KernelKind::Stitch : KernelKind::Input);
  if (f.results.empty() || f.yields.size() != f.results.size()) return "a kernel must yield its results";
  for (const Value* v : f.operands) p.inputIndex.emplace(v, p.inputIndex.size());

  for (const Operation* opp : f.body) {
    const Operation& op = *opp;
    for (const Value* v : op.operands)
      if (!p.inputIndex.count(v) && !p.defOf.count(v))
        return "%" + v->name + " is used in the kernel body but is not a fusion operand";
    if (op.results.size() != 1) return "op '" + std::string(op.name()) + "' must have one result";
    const Value* res = op.result();
    int dep = -1;
    Frame fr = Frame::Any;
    for (const Value* v : op.operands) {
      if (auto it = p.depPhase.find(v); it != p.depPhase.end()) dep = std::max(dep, it->second);
      Frame g = p.frame.count(v) ? p.frame[v] : Frame::Any;
      if (g != Frame::Any && fr != Frame::Any && g != fr)
        return "op '" + std::string(op.name()) + "' (%" + res->name + ") mixes reduced and unreduced dims in a " +
               p.kindName + " kernel; not supported yet";
      if (g != Frame::Any) fr = g;
    }
    if (isReduction(op)) {
      const Value* in = op.operands[0];
      if (in->type.dtype != res->type.dtype)
        return std::string(op.name()) + " (%" + res->name + ") from " + in->type.str() + " to " + res->type.str() +
               " is not supported";
      if (fr == Frame::Rows)
        return "reduction %" + res->name + " of a reduced value in a " + p.kindName + " kernel is not supported yet";
      std::vector<bool> red;
      bool keep = false;
      if (std::string e = parseAxes(op, red, keep); !e.empty()) return e;
      if (p.reductions.empty()) {
        p.space = in->type.dims;
        p.reduced = red;
      } else if (in->type.dims != p.space || red != p.reduced) {
        return "reductions of different shapes or axes in one " + std::string(p.kindName) + " kernel (%" + res->name +
               ") are not supported yet";
      }
      if (!stitch && dep >= 0)
        return "reduction %" + res->name + " of a reduced value in an input kernel is not supported yet";
      int ph = dep + 1;
      p.phase[&op] = ph;
      p.phases = std::max(p.phases, ph + 1);
      p.reductions.push_back(&op);
      dep = ph;
      fr = keep ? Frame::Full : Frame::Rows;
    } else if (!isPointwise(op)) {
      return "op '" + std::string(op.name()) + "' (%" + res->name + ") in a " + p.kindName +
             " kernel is not supported yet";
    }
    p.defOf[res] = &op;
    p.frame[res] = fr;
    p.depPhase[res] = dep;
  }
  if (p.reductions.empty()) return "%" + f.name + " has no reduction";
  size_t r = p.space.size();
  if (stitch) {
    for (size_t d = 0; d < r; ++d)
      if (p.reduced[d] != (d + 1 == r))
        return "a stitch kernel that reduces other than the last axis (%" + nameOf(*p.reductions[0]) +
               ") is not supported yet";
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
    const std::vector<DimExpr>& d = f.results[i]->type.dims;
    bool ok = fr == Frame::Rows ? d == p.kept
              : el              ? stitch && d == p.space
                                : d == (stitch ? rowKeep : p.keepShape);
    if (!ok)
      return "result %" + f.results[i]->name + " of type " + f.results[i]->type.str() + " does not fit the " +
             p.kindName + " kernel's space " + Type{DType::F32, p.space}.str() + "; not supported yet";
    p.resultFrame.push_back(fr);
    p.resultElem.push_back(el);
  }
  return "";
}

}  // namespace dscc::fuseops
