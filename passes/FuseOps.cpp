// The fusion planner's view of single ops: classes and the forms the lowerings take (declared in FuseOps.h).
#include "passes/FuseOps.h"

#include <algorithm>
#include <vector>

#include "ir/IndexMap.h"

namespace dscc::fuseops {

bool isFreeOp(const Operation& op, const std::set<const Operation*>& freeSet) {
  switch (op.kind) {
    case OpKind::Constant: case OpKind::Dim: case OpKind::Check: case OpKind::Reshape: return true;
    default: break;
  }
  // Scalar math on shapes and constants (cast of a dim) is host arithmetic;
  // a reduction or a reshape of kernel data is not.
  if (op.results.size() == 1 && op.result()->type.rank() == 0 && isPointwise(op)) {
    for (const Value* v : op.operands)
      if (!v->def || !freeSet.count(v->def) || v->type.rank() != 0 || v->def->kind == OpKind::Reshape) return false;
    return true;
  }
  return false;
}

// The planner's classes, from the op patterns of ir/IndexMap.h: reductions,
// the opaque ops it knows (matmul, composites not yet decomposed), and
// everything an index map describes (elementwise to injective).
Cls classify(const Operation& op, const std::set<const Operation*>& freeSet) {
  if (isFreeOp(op, freeSet)) return Cls::Free;
  if (opPattern(op) == OpPattern::Reduction) return Cls::Reduction;
  switch (op.info().category) {
    case OpCategory::Softmax: case OpCategory::LayerNorm: return Cls::Composite;
    case OpCategory::Matmul: case OpCategory::Conv: case OpCategory::Pool: case OpCategory::Recurrent:
    case OpCategory::Scatter: case OpCategory::Scan:
      return Cls::Matmul;  // library calls
    default: return Cls::Elementwise;
  }
}

DimExpr numel(const Type& t) {
  DimExpr p(1);
  for (const auto& d : t.dims) p = p * d;
  return p;
}

// The stitch lowering's form: argmax aside, a reduction of the last axis alone.
bool lastAxisReduction(const Operation& op) {
  size_t r = op.operands[0]->type.rank();
  return op.kind != OpKind::ArgMax && r > 0 && reducedAxes(op) == std::vector<size_t>{r - 1};
}

// Reduced axes are the trailing ones: a row reduction.
bool isRowReduction(const Operation& op) {
  const Type& in = op.operands[0]->type;
  std::vector<int64_t> axes;
  if (op.kind == OpKind::ArgMax) {
    const Attribute* a = op.attr("axis");
    axes.push_back(a ? a->i : 0);
  } else if (const Attribute* a = op.attr("axes")) {
    for (const auto& x : a->list) axes.push_back(x.i);
  } else {
    for (size_t i = 0; i < in.rank(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::set<int64_t> s;
  for (int64_t x : axes) s.insert(x < 0 ? x + static_cast<int64_t>(in.rank()) : x);
  int64_t r = static_cast<int64_t>(in.rank());
  for (int64_t k = r - static_cast<int64_t>(s.size()); k < r; ++k)
    if (!s.count(k)) return false;
  return !s.empty();
}

// A transpose the BLAS can read or write through strides: the contiguous
// input axis stays among the two innermost output axes.
bool layoutCompatible(const Operation& op) {
  if (op.kind == OpKind::Reshape) return true;
  if (op.kind != OpKind::Transpose) return false;
  const Type& t = op.operands[0]->type;
  size_t r = t.rank();
  if (r < 2) return true;
  const Attribute* p = op.attr("perm");
  if (!p) return r == 2;
  int64_t last = static_cast<int64_t>(r) - 1;
  return p->list[r - 1].i == last || p->list[r - 2].i == last;
}

bool movesData(const Operation& op) {
  return (opPattern(op) == OpPattern::Injective && op.kind != OpKind::Reshape) || op.kind == OpKind::BroadcastTo;
}

std::vector<DimExpr> squeezed(const std::vector<DimExpr>& d) {
  std::vector<DimExpr> r;
  for (const DimExpr& x : d)
    if (!(x.isConst() && x.constValue() == 1)) r.push_back(x);
  return r;
}

void redirectDims(Function& f) {
  for (auto& opp : f.ops) {
    Operation* op = opp.get();
    if (op->kind != OpKind::Dim || op->operands.empty() || !op->operands[0]->def) continue;
    const Value* v = op->operands[0];
    const Attribute* ax = op->attr("axis");
    if (!ax || ax->kind != Attribute::Kind::Int) continue;
    int64_t a = ax->i < 0 ? ax->i + static_cast<int64_t>(v->type.rank()) : ax->i;
    if (a < 0 || a >= static_cast<int64_t>(v->type.rank())) continue;
    const DimExpr& want = v->type.dims[static_cast<size_t>(a)];
    for (const auto& arg : f.args) {
      auto it = std::find(arg->type.dims.begin(), arg->type.dims.end(), want);
      if (it == arg->type.dims.end()) continue;
      op->operands[0] = arg.get();
      op->setAttr("axis", Attribute::makeInt(it - arg->type.dims.begin()));
      break;
    }
  }
}

}  // namespace dscc::fuseops
