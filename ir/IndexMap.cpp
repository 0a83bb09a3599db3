// Op patterns and the attribute readers of the index maps (ir/IndexMap.h).
#include "ir/IndexMap.h"

#include <algorithm>

namespace dscc {

namespace {

size_t normalise(int64_t a, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (a < 0) a += r;
  return a < 0 || a >= std::max<int64_t>(r, 1) ? 0 : static_cast<size_t>(a);
}

}  // namespace

bool isPointwise(const Operation& op) {
  switch (op.info().category) {
    case OpCategory::Unary: case OpCategory::Cast: case OpCategory::Binary: case OpCategory::Logical:
    case OpCategory::Compare: case OpCategory::Select:
      return true;
    default:
      return false;
  }
}

OpPattern opPattern(const Operation& op) {
  if (isPointwise(op)) {
    for (const Value* v : op.operands)
      if (v->type.dims != op.result()->type.dims) return OpPattern::Broadcast;
    return OpPattern::Elementwise;
  }
  switch (op.info().category) {
    case OpCategory::BroadcastTo: return OpPattern::Broadcast;
    case OpCategory::Reshape: case OpCategory::Transpose: case OpCategory::Concat: case OpCategory::Slice:
    case OpCategory::Gather: case OpCategory::Iota:
      return OpPattern::Injective;
    case OpCategory::Reduce: case OpCategory::ArgMax: return OpPattern::Reduction;
    default: return OpPattern::Opaque;
  }
}

bool readsAtKernelIndex(const Operation& op) {
  return isPointwise(op) || (opPattern(op) == OpPattern::Reduction && op.info().category != OpCategory::ArgMax);
}

const char* patternName(OpPattern p) {
  switch (p) {
    case OpPattern::Elementwise: return "elementwise";
    case OpPattern::Broadcast: return "broadcast";
    case OpPattern::Injective: return "injective";
    case OpPattern::Reduction: return "reduction";
    case OpPattern::Opaque: return "opaque";
  }
  return "?";
}

std::vector<size_t> reducedAxes(const Operation& op) {
  size_t rank = op.operands.empty() ? 0 : op.operands[0]->type.rank();
  std::vector<size_t> axes;
  if (op.kind == OpKind::ArgMax) {
    axes.push_back(opAxis(op, rank));
    return axes;
  }
  const Attribute* a = op.attr("axes");
  if (!a) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(d);
    return axes;
  }
  for (const Attribute& x : a->list) axes.push_back(normalise(x.i, rank));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

bool keepsDims(const Operation& op) {
  const Attribute* k = op.attr("keepdims");
  return k && k->kind == Attribute::Kind::Bool && k->b;
}

std::vector<size_t> transposePerm(const Operation& op) {
  size_t rank = op.operands[0]->type.rank();
  std::vector<size_t> perm;
  if (const Attribute* p = op.attr("perm")) {
    for (const Attribute& x : p->list) perm.push_back(normalise(x.i, rank));
  } else {
    for (size_t d = rank; d-- > 0;) perm.push_back(d);
  }
  return perm;
}

std::vector<SliceAxis> sliceAxes(const Operation& op) {
  size_t rank = op.operands[0]->type.rank();
  const Attribute* axes = op.attr("axes");
  const Attribute* starts = op.attr("starts");
  const Attribute* ends = op.attr("ends");
  const Attribute* steps = op.attr("steps");
  std::vector<SliceAxis> out;
  if (!starts || !ends) return out;
  for (size_t i = 0; i < starts->list.size(); ++i) {
    SliceAxis s;
    s.axis = axes && i < axes->list.size() ? normalise(axes->list[i].i, rank) : i;
    s.start = starts->list[i].asDim();
    s.end = i < ends->list.size() ? ends->list[i].asDim() : DimExpr(0);
    s.step = steps && i < steps->list.size() ? steps->list[i].i : 1;
    out.push_back(s);
  }
  return out;
}

size_t opAxis(const Operation& op, size_t rank, int64_t dflt) {
  const Attribute* a = op.attr("axis");
  return normalise(a && a->kind == Attribute::Kind::Int ? a->i : dflt, rank);
}

}  // namespace dscc
