// ONNX's vision operators as dscc's ops: Conv, ConvTranspose, MaxPool (its Indices too) and AveragePool become `conv`,
// `conv_transpose` and `pool`; GroupNormalization becomes layer_norm over a grouped reshape.
#include <onnx/onnx_pb.h>

#include <algorithm>

#include "frontend/OnnxBuilder.h"
#include "frontend/OnnxInternal.h"
#include "ir/Window.h"

namespace dscc::frontend {

namespace {

// The attributes conv and pool share: strides, dilations, pads or auto_pad.
// ONNX's NOTSET is dscc's explicit pads (the default); SAME_UPPER, SAME_LOWER
// and VALID become auto_pad, so the pads follow the sizes at run time.
Attrs windowAttrs(const onnx::NodeProto& n, size_t spatial) {
  Attrs a;
  auto list = [&](const char* name, size_t want) {
    auto v = attrInts(n, name);
    if (!v) return;
    if (v->size() != want)
      throw ImportError("attribute '" + std::string(name) + "' has " + std::to_string(v->size()) +
                        " entries, but the input has " + std::to_string(spatial) + " spatial dims (expected " +
                        std::to_string(want) + ")");
    a.push_back({name, intList(*v)});
  };
  list("strides", spatial);
  list("dilations", spatial);
  std::string ap = attrString(n, "auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER" || ap == "VALID") {
    std::string low = ap == "SAME_UPPER" ? "same_upper" : ap == "SAME_LOWER" ? "same_lower" : "valid";
    a.push_back({"auto_pad", Attribute::makeString(low)});
    // ONNX says pads are not used with auto_pad; a model may still carry zeros.
    if (auto p = attrInts(n, "pads"))
      for (int64_t v : *p)
        if (v != 0) throw ImportError("attribute 'pads' must not be given with auto_pad = " + ap);
  } else if (ap == "NOTSET") {
    list("pads", 2 * spatial);
  } else {
    throw ImportError("auto_pad = '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  return a;
}

size_t spatialRank(const Value* x, const char* op) {
  if (x->type.rank() < 3)
    throw ImportError(std::string(op) + " needs an input of rank >= 3 ([N, C, spatial...]), got " + x->type.str());
  return x->type.rank() - 2;
}

// The weight of Conv or ConvTranspose (`op`) against input `x`: the same rank, and
// 'kernel_shape' (redundant with the weight's shape in ONNX) agreeing with it; a contradiction is an
// error, not a guess. A symbolic weight dim (--symbolic-dims) is the weight's actual size, which the
// size rule reads at run time. Returns the spatial rank.
size_t checkWeight(const Value* x, const Value* w, const onnx::NodeProto& n, const char* op) {
  size_t sp = spatialRank(x, op);
  if (w->type.rank() != x->type.rank())
    throw ImportError("the weight must have the input's rank " + std::to_string(x->type.rank()) + ", got " +
                      w->type.str());
  if (auto ks = attrInts(n, "kernel_shape")) {
    if (ks->size() != sp) throw ImportError("attribute 'kernel_shape' has " + std::to_string(ks->size()) + " entries, expected " + std::to_string(sp));
    for (size_t i = 0; i < sp; ++i)
      if (w->type.dims[2 + i].isConst() && w->type.dims[2 + i] != DimExpr((*ks)[i]))
        throw ImportError("attribute 'kernel_shape' says " + std::to_string((*ks)[i]) + " for spatial dim " +
                          std::to_string(i) + " but the weight is " + w->type.str());
  }
  return sp;
}

void conv(NodeBuilder& b, const onnx::NodeProto& n) {
  Value* x = b.in(0);
  Value* w = b.in(1);
  size_t sp = checkWeight(x, w, n, "Conv");
  Attrs a = windowAttrs(n, sp);
  int64_t group = attrInt(n, "group", 1);
  if (group < 1) throw ImportError("attribute 'group' must be >= 1, got " + std::to_string(group));
  if (group != 1) a.push_back({"group", Attribute::makeInt(group)});
  std::vector<Value*> ops{x, w};
  if (n.input_size() > 2 && !n.input(2).empty()) ops.push_back(b.in(2));
  b.out(b.op(OpKind::Conv, ops, a));
}

// ConvTranspose: the weight is [C, M/group, k...]. output_shape (spatial sizes, or ONNX's full [N, M, ...]) is
// kept as the op's attribute, which derives the pads from the sizes as auto_pad does; ONNX ignores 'pads' then.
void convTranspose(NodeBuilder& b, const onnx::NodeProto& n) {
  Value* x = b.in(0);
  Value* w = b.in(1);
  size_t sp = checkWeight(x, w, n, "ConvTranspose");
  Attrs a = windowAttrs(n, sp);
  auto os = attrInts(n, "output_shape");
  if (os) {
    std::vector<int64_t> v = *os;
    if (v.size() == sp + 2) v.erase(v.begin(), v.begin() + 2);
    if (v.size() != sp)
      throw ImportError("attribute 'output_shape' has " + std::to_string(os->size()) + " entries, but the input has " +
                        std::to_string(sp) + " spatial dims");
    a.erase(std::remove_if(a.begin(), a.end(), [](const auto& kv) { return kv.first == "pads"; }), a.end());
    a.push_back({"output_shape", intList(v)});
  }
  if (auto op = attrInts(n, "output_padding")) {
    if (op->size() != sp)
      throw ImportError("attribute 'output_padding' has " + std::to_string(op->size()) + " entries, but the input has " +
                        std::to_string(sp) + " spatial dims");
    if (std::any_of(op->begin(), op->end(), [](int64_t v) { return v != 0; })) a.push_back({"output_padding", intList(*op)});
  }
  int64_t group = attrInt(n, "group", 1);
  if (group < 1) throw ImportError("attribute 'group' must be >= 1, got " + std::to_string(group));
  if (group != 1) a.push_back({"group", Attribute::makeInt(group)});
  std::vector<Value*> ops{x, w};
  if (n.input_size() > 2 && !n.input(2).empty()) ops.push_back(b.in(2));
  b.out(b.op(OpKind::ConvTranspose, ops, a));
}

void pool(NodeBuilder& b, const onnx::NodeProto& n, bool isMax) {
  const char* name = isMax ? "MaxPool" : "AveragePool";
  Value* x = b.in(0);
  size_t sp = spatialRank(x, name);
  auto ks = attrInts(n, "kernel_shape");
  if (!ks) throw ImportError("attribute 'kernel_shape' is required");
  if (ks->size() != sp)
    throw ImportError("attribute 'kernel_shape' has " + std::to_string(ks->size()) + " entries, but the input has " +
                      std::to_string(sp) + " spatial dims");
  Attrs a{{"kind", Attribute::makeString(isMax ? "max" : "avg")}, {"kernel_shape", intList(*ks)}};
  Attrs w = windowAttrs(n, sp);
  a.insert(a.end(), w.begin(), w.end());
  if (attrInt(n, "ceil_mode", 0) != 0) a.push_back({"ceil_mode", Attribute::makeBool(true)});
  if (!isMax && attrInt(n, "count_include_pad", 0) != 0) a.push_back({"count_include_pad", Attribute::makeBool(true)});
  b.out(b.op(OpKind::Pool, {x}, a));
  // MaxPool's second output (Indices): an argmax pool over the same windows, numbered as storage_order says.
  // storage_order orders nothing else, so without Indices it is not read.
  if (isMax && n.output_size() > 1 && !n.output(1).empty()) {
    int64_t order = attrInt(n, "storage_order", 0);
    if (order != 0 && order != 1)
      throw ImportError("attribute 'storage_order' must be 0 (row-major) or 1 (column-major), got " +
                        std::to_string(order));
    a[0].second = Attribute::makeString("argmax");
    if (order == 1) a.push_back({"storage_order", Attribute::makeInt(1)});
    b.out(b.c.emit(OpKind::Pool, {x}, a, std::nullopt, n.output(1)), 1);  // named after the Indices output
  }
}

// GroupNormalization: x [N, C, ...] normalised per image over each group of C/num_groups channels (biased
// variance), then scaled and shifted per channel. Opset 18 gives scale and bias per group ([num_groups], each value
// for all channels of its group); opset 21 per channel ([C]) and stash_type, the precision of the normalisation.
// Decomposed as layer_norm over [N, G, C/G * spatial] (one reduced axis: a stitch kernel after decomposition) and a
// per-channel multiply-add in x's shape, which fuses into it; C/G is exact division, checked where C is a symbol.
void groupNorm(NodeBuilder& b, const onnx::NodeProto& n, int64_t opset) {
  Value *x = b.in(0), *scale = b.in(1), *bias = b.in(2);
  const Type xt = x->type;
  if (xt.rank() < 2) throw ImportError("the input must have rank >= 2 ([N, C, ...]), got " + xt.str());
  const int64_t G = attrInt(n, "num_groups", 0);
  if (G < 1) throw ImportError("attribute 'num_groups' must be given and >= 1, got " + std::to_string(G));
  const DimExpr& C = xt.dims[1];
  if (C.isConst() && C.constValue() % G != 0)
    throw ImportError("num_groups " + std::to_string(G) + " does not divide the " + C.str() + " channels");
  const bool perGroup = opset < 21;
  DimExpr want = perGroup ? DimExpr(G) : C;
  for (Value* v : {scale, bias})
    if (v->type.rank() != 1 || (v->type.dims[0].isConst() && want.isConst() && v->type.dims[0] != want))
      throw ImportError(std::string(v == scale ? "scale" : "bias") + " must be [" + want.str() + "] (" +
                        (perGroup ? "one value per group before opset 21" : "one value per channel from opset 21") +
                        "), got " + v->type.str());
  Value* xs = x;
  // stash_type (opset 21; 1 = f32, the default): the normalisation's precision for f16/bf16 inputs.
  if (!perGroup && attrInt(n, "stash_type", 1) == 1 && (xt.dtype == DType::F16 || xt.dtype == DType::BF16))
    xs = b.cast(x, DType::F32);
  DimExpr inner = DimExpr::div(C, DimExpr(G));
  for (size_t d = 2; d < xt.rank(); ++d) inner = inner * xt.dims[d];
  Value* flat = b.reshape(xs, {xt.dims[0], DimExpr(G), inner});
  Value* y = b.op(OpKind::LayerNorm, {flat, b.fill(flat, 1, {inner}), b.fill(flat, 0, {inner})},
                  {{"axis", Attribute::makeInt(2)}, {"epsilon", Attribute::makeFloat(attrFloat(n, "epsilon", 1e-5))}});
  y = b.cast(b.reshape(y, xt.dims), xt.dtype);
  // Scale and bias as [C, 1, ...] against x; a per-group value spread over its group's channels first.
  auto perChannel = [&](Value* v) {
    if (perGroup) v = b.reshape(b.op(OpKind::BroadcastTo, {b.reshape(v, {DimExpr(G), DimExpr(1)})}, {},
                                     Type{v->type.dtype, {DimExpr(G), DimExpr::div(C, DimExpr(G))}}),
                                {C});
    std::vector<DimExpr> d(xt.rank() - 1, DimExpr(1));
    d[0] = C;
    return b.reshape(v, d);
  };
  Value* s = perChannel(scale);  // (named: argument order is unspecified, and the printed order should be stable)
  b.out(b.add(b.mul(y, s), perChannel(bias)));
}

// LpPool: (sum over the window of |x|^p)^(1/p), zeros in the padding. The sum is an average pool counting the
// padding times the window's points (every window lies in the padded extent without ceil mode, so the divisor is
// the whole kernel), between elementwise ops that fuse around the pool's library call. In ceil mode (explicit
// pads; auto_pad ignores it, as for the other pools) the last window may reach past the end padding, where the
// average would divide by fewer points: the end pads grow by stride - 1, which makes every window of the ceil
// mode's lie in the padded extent (floor((R + s - 1) / s) = ceil(R / s)), and a slice to the ceil mode's size
// (ir/Window.h's rule) drops the one window that rule drops for starting in the end padding.
void lpPool(NodeBuilder& b, const onnx::NodeProto& n) {
  Value* x = b.in(0);
  size_t sp = spatialRank(x, "LpPool");
  auto ks = attrInts(n, "kernel_shape");
  if (!ks) throw ImportError("attribute 'kernel_shape' is required");
  if (ks->size() != sp)
    throw ImportError("attribute 'kernel_shape' has " + std::to_string(ks->size()) + " entries, but the input has " +
                      std::to_string(sp) + " spatial dims");
  const double p = static_cast<double>(attrInt(n, "p", 2));
  if (p < 1) throw ImportError("attribute 'p' must be >= 1, got " + std::to_string(static_cast<int64_t>(p)));
  Attrs a{{"kind", Attribute::makeString("avg")}, {"kernel_shape", intList(*ks)}};
  Attrs w = windowAttrs(n, sp);
  const bool ceil = attrInt(n, "ceil_mode", 0) != 0 && attrString(n, "auto_pad", "NOTSET") == "NOTSET";
  // The window geometry as the pool op reads it (strides, dilations, pads checked by windowAttrs above).
  WindowAttrs geo;
  geo.n = sp;
  geo.kernel = *ks;
  geo.ceilMode = true;
  geo.strides = attrInts(n, "strides").value_or(std::vector<int64_t>(sp, 1));
  geo.dilations = attrInts(n, "dilations").value_or(std::vector<int64_t>(sp, 1));
  std::vector<int64_t> pads = attrInts(n, "pads").value_or(std::vector<int64_t>(2 * sp, 0));
  geo.padsBegin.assign(pads.begin(), pads.begin() + sp);
  geo.padsEnd.assign(pads.begin() + sp, pads.end());
  if (ceil) {
    for (size_t i = 0; i < sp; ++i) {
      if (geo.strides[i] < 1) throw ImportError("attribute 'strides' must be >= 1, got " + std::to_string(geo.strides[i]));
      pads[sp + i] += geo.strides[i] - 1;
    }
    auto it = std::find_if(w.begin(), w.end(), [](const auto& x) { return x.first == "pads"; });
    if (it != w.end()) it->second = intList(pads);
    else w.push_back({"pads", intList(pads)});
  }
  a.insert(a.end(), w.begin(), w.end());
  a.push_back({"count_include_pad", Attribute::makeBool(true)});
  double points = 1;
  for (int64_t k : *ks) points *= static_cast<double>(k);
  Value* pw = p == 2 ? b.mul(x, x) : b.un(OpKind::Abs, x);
  if (p != 1 && p != 2) pw = b.op(OpKind::Pow, {pw, b.k(x, p)});
  Value* pooled = b.op(OpKind::Pool, {pw}, a);
  if (ceil) {
    std::vector<Attribute> axes, starts, ends;
    for (size_t i = 0; i < sp; ++i) {
      axes.push_back(Attribute::makeInt(int64_t(i) + 2));
      starts.push_back(Attribute::makeInt(0));
      ends.push_back(Attribute::makeDim(windowOutDim(geo, i, x->type.dims[i + 2], DimExpr(geo.kernel[i]))));
    }
    pooled = b.op(OpKind::Slice, {pooled}, {{"axes", Attribute::makeList(axes)}, {"starts", Attribute::makeList(starts)},
                                            {"ends", Attribute::makeList(ends)}});
  }
  Value* sum = b.mul(pooled, b.k(x, points));
  b.out(p == 1 ? sum : p == 2 ? b.un(OpKind::Sqrt, sum) : b.op(OpKind::Pow, {sum, b.k(x, 1.0 / p)}));
}

}  // namespace

bool convertVision(Ctx& c, const onnx::NodeProto& n) {
  NodeBuilder b{c, n};
  const std::string& op = n.op_type();
  if (op == "Conv") {
    conv(b, n);
    return true;
  }
  if (op == "GroupNormalization") {
    groupNorm(b, n, c.opset);
    return true;
  }
  if (op == "LpPool") {
    lpPool(b, n);
    return true;
  }
  if (op == "ConvTranspose") {
    convTranspose(b, n);
    return true;
  }
  if (op == "MaxPool" || op == "AveragePool") {
    pool(b, n, op == "MaxPool");
    return true;
  }
  return false;
}

}  // namespace dscc::frontend
