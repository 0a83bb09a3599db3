// Small builders of IR ops over one ONNX node's context, shared by the converters of the less common operators.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/OnnxInternal.h"
#include "ir/Verifier.h"

namespace dscc::frontend {

using Attrs = std::vector<std::pair<std::string, Attribute>>;

/// Small builders over one node's context: each op is named after the node's first output.
struct NodeBuilder {
  Ctx& c;
  const onnx::NodeProto& n;
  std::string name() const { return n.output_size() ? n.output(0) : "t"; }
  Value* in(int i) { return c.use(need(c, n, i), n.input(i)); }
  Value* op(OpKind k, std::vector<Value*> v, Attrs a = {}, std::optional<Type> t = std::nullopt) {
    return c.emit(k, std::move(v), std::move(a), std::move(t), name());
  }
  Value* k(const Value* like, double v) { return c.scalar(like->type.dtype, v); }
  Value* add(Value* a, Value* b) { return op(OpKind::Add, {a, b}); }
  Value* sub(Value* a, Value* b) { return op(OpKind::Sub, {a, b}); }
  Value* mul(Value* a, Value* b) { return op(OpKind::Mul, {a, b}); }
  Value* div(Value* a, Value* b) { return op(OpKind::Div, {a, b}); }
  Value* un(OpKind kd, Value* a) { return op(kd, {a}); }
  Value* sel(Value* cnd, Value* a, Value* b) { return op(OpKind::Select, {cnd, a, b}); }
  Value* cmp(OpKind kd, Value* a, Value* b) { return op(kd, {a, b}); }
  Value* cast(Value* v, DType dt) {
    return v->type.dtype == dt ? v : op(OpKind::Cast, {v}, {{"to", Attribute::makeDType(dt)}});
  }
  Value* iota(DType dt, std::vector<DimExpr> d, int64_t axis) {
    return op(OpKind::Iota, {}, {{"axis", Attribute::makeInt(axis)}}, Type{dt, std::move(d)});
  }
  Value* fill(const Value* like, double v, std::vector<DimExpr> d) {
    return op(OpKind::BroadcastTo, {k(like, v)}, {}, Type{like->type.dtype, std::move(d)});
  }
  Value* reshape(Value* v, std::vector<DimExpr> d) { return op(OpKind::Reshape, {v}, {}, Type{v->type.dtype, d}); }
  Value* transpose(Value* v, const std::vector<int64_t>& perm) {
    return op(OpKind::Transpose, {v}, {{"perm", intList(perm)}});
  }
  int64_t axis(int64_t a, size_t rank) {
    auto r = normalizeAxis(a, rank);
    if (!r) throw ImportError("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    return *r;
  }
  void out(Value* v, int i = 0) { define(c, n, i, c.wrap(v)); }
};

/// The linear index of element [c_0, ..., c_{m-1}] over the first m = coords.size() of `dims` (row-major), for
/// i64 coordinate tensors of one shape S (the result's). A coordinate not `trusted` (read from data) may be
/// negative (it wraps once, as ONNX says), and one outside [-D_j, D_j) makes the linear index D_0 * ... *
/// D_{m-1}: one past the last row, which gather and scatter refuse at run time instead of touching another
/// row (frontend/OnnxMoreOps.cpp; GatherND, GatherElements, ScatterND, ScatterElements use it).
Value* linearIndex(NodeBuilder& b, const std::vector<DimExpr>& dims, const std::vector<Value*>& coords,
                   const std::vector<bool>& trusted);

}  // namespace dscc::frontend
