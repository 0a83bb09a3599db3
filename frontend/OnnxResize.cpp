// ONNX's Resize and Upsample decomposed into iota, elementwise math and gathers, one resized axis at a time.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "frontend/OnnxBuilder.h"
#include "frontend/OnnxInternal.h"

namespace dscc::frontend {

namespace {

using B = NodeBuilder;

// How output coordinates map to input ones, and how samples are weighed.
struct Mode {
  std::string interp = "nearest";    // nearest, linear, cubic
  std::string coord = "half_pixel";  // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
};

// One resized axis: the output size, and the scale when `scales` gave it
// (with sizes the scale is out / in, computed at run time).
struct Axis {
  int64_t axis;
  DimExpr out;
  std::optional<double> scale;
};

// floor(D * s) for a float scale s: a float is p / 2^k exactly, so the size
// is floordiv(D * p, 2^k) with no rounding of its own, as ONNX's reference
// computes it (in doubles) for every D a size can be.
DimExpr scaledDim(const DimExpr& d, double s) {
  if (!(s > 0) || !std::isfinite(s)) throw ImportError("a scale must be positive and finite, got " + std::to_string(s));
  if (d.isConst()) return DimExpr(int64_t(std::floor(double(d.constValue()) * s)));
  int64_t q = 1;
  double p = s;
  while (p != std::floor(p) && q < (int64_t(1) << 40)) p *= 2, q *= 2;
  if (p != std::floor(p) || p > double(int64_t(1) << 40))
    throw ImportError("the scale " + std::to_string(s) + " of a symbolic dim is not a fraction dscc can keep exact");
  int64_t pi = int64_t(p);
  while (pi % 2 == 0 && q > 1) pi /= 2, q /= 2;
  return q == 1 ? d * DimExpr(pi) : DimExpr::floorDiv(d * DimExpr(pi), DimExpr(q));
}

// The source coordinate (f64 [out]) of each output index along one axis.
Value* sourceCoord(B& b, const Mode& m, Value* in, const Axis& ax, Value* outF) {
  Value* x = b.cast(b.iota(DType::I64, {ax.out}, 0), DType::F64);
  auto k = [&](double v) { return b.c.scalar(DType::F64, v); };
  // ONNX's scale: the given one, else out / in; the resized length is scale * in.
  Value* scale = ax.scale ? k(*ax.scale) : b.div(outF, in);
  Value* length = ax.scale ? b.mul(k(*ax.scale), in) : outF;
  Value* half = k(0.5);
  if (m.coord == "asymmetric") return b.div(x, scale);
  if (m.coord == "half_pixel") return b.sub(b.div(b.add(x, half), scale), half);
  if (m.coord == "tf_half_pixel_for_nn") return b.div(b.add(x, half), scale);
  if (m.coord == "pytorch_half_pixel") {
    // A single output sample sits at -0.5 (ONNX's rule, so its neighbours are the first element).
    Value* hp = b.sub(b.div(b.add(x, half), scale), half);
    return b.sel(b.cmp(OpKind::Gt, outF, k(1)), hp, b.op(OpKind::BroadcastTo, {k(-0.5)}, {}, hp->type));
  }
  if (m.coord == "align_corners") {
    // x * (in - 1) / (length - 1); a length of 1 maps to 0 (the division is guarded, not only selected away).
    Value* one = k(1);
    Value* single = b.cmp(OpKind::Eq, length, one);
    Value* den = b.sel(single, one, b.sub(length, one));
    Value* ac = b.div(b.mul(x, b.sub(in, one)), den);
    return b.sel(single, b.op(OpKind::BroadcastTo, {k(0)}, {}, ac->type), ac);
  }
  if (m.coord == "half_pixel_symmetric") {
    // Centres the resized grid: offset = in / 2 * (1 - out / length).
    Value* adj = b.div(outF, length);
    Value* offset = b.mul(b.div(in, k(2)), b.sub(k(1), adj));
    return b.add(offset, b.sub(b.div(b.add(x, half), scale), half));
  }
  throw ImportError("coordinate_transformation_mode '" + m.coord + "' is not supported");
}

// Index i64 `i` clamped into [0, in): the border element repeats, as ONNX's edge padding.
Value* clampIndex(B& b, Value* i, Value* inI) {
  Value* zero = b.c.scalar(DType::I64, 0);
  Value* last = b.sub(inI, b.c.scalar(DType::I64, 1));
  return b.op(OpKind::Min, {b.op(OpKind::Max, {i, zero}), last});
}

// v with weights w (f64 [out]) broadcast along `axis`, in v's dtype.
Value* weigh(B& b, Value* v, Value* w, int64_t axis) {
  std::vector<DimExpr> d(v->type.rank(), DimExpr(1));
  d[size_t(axis)] = v->type.dims[size_t(axis)];
  return b.mul(v, b.reshape(b.cast(w, v->type.dtype), d));
}

// The cubic convolution weights of the four taps floor(x) - 1 .. floor(x) + 2 at fraction r.
std::vector<Value*> cubicWeights(B& b, Value* r, double a) {
  auto k = [&](double v) { return b.c.scalar(DType::F64, v); };
  // |t| <= 1: (a + 2)|t|^3 - (a + 3)|t|^2 + 1; 1 < |t| < 2: a|t|^3 - 5a|t|^2 + 8a|t| - 4a.
  auto near = [&](Value* t) { return b.add(b.mul(b.mul(b.sub(b.mul(k(a + 2), t), k(a + 3)), t), t), k(1)); };
  auto far = [&](Value* t) {
    return b.sub(b.mul(b.add(b.mul(b.sub(b.mul(k(a), t), k(5 * a)), t), k(8 * a)), t), k(4 * a));
  };
  Value* one = k(1);
  Value* rc = b.sub(one, r);
  return {far(b.add(r, one)), near(r), near(rc), far(b.add(rc, one))};
}

// v resized along one axis.
Value* resizeAxis(B& b, const Mode& m, Value* v, const Axis& ax) {
  const DimExpr& len = v->type.dims[size_t(ax.axis)];
  Value* inI = b.c.dimValue(len);
  Value* in = b.cast(inI, DType::F64);
  Value* outF = b.cast(b.c.dimValue(ax.out), DType::F64);
  Value* x = sourceCoord(b, m, in, ax, outF);
  Attrs at{{"axis", Attribute::makeInt(ax.axis)}};
  auto gather = [&](Value* idx) { return b.op(OpKind::Gather, {v, clampIndex(b, idx, inI)}, at); };
  Value* fl = b.un(OpKind::Floor, x);
  if (m.interp == "nearest") {
    Value* r = b.sub(x, fl);
    Value* half = b.c.scalar(DType::F64, 0.5);
    Value* pick;
    if (m.nearest == "round_prefer_floor") pick = b.add(fl, b.cast(b.cmp(OpKind::Gt, r, half), DType::F64));
    else if (m.nearest == "round_prefer_ceil") pick = b.add(fl, b.cast(b.cmp(OpKind::Ge, r, half), DType::F64));
    else if (m.nearest == "floor") pick = fl;
    else if (m.nearest == "ceil") pick = b.un(OpKind::Ceil, x);
    else throw ImportError("nearest_mode '" + m.nearest + "' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil");
    return gather(b.cast(pick, DType::I64));
  }
  if (!isFloat(v->type.dtype))
    throw ImportError("mode '" + m.interp + "' on " + v->type.str() + " is not supported (only on floats; nearest is on any type)");
  Value* r = b.sub(x, fl);
  Value* base = b.cast(fl, DType::I64);
  std::vector<int64_t> offs;
  std::vector<Value*> w;
  if (m.interp == "linear") {
    offs = {0, 1};
    w = {b.sub(b.c.scalar(DType::F64, 1), r), r};
  } else {
    offs = {-1, 0, 1, 2};
    w = cubicWeights(b, r, m.cubicA);
  }
  std::vector<Value*> idx;
  for (int64_t o : offs) idx.push_back(o ? b.add(base, b.c.scalar(DType::I64, double(o))) : base);
  if (m.excludeOutside) {
    // Taps outside the input weigh nothing; the others are renormalised to sum to 1.
    Value* sum = nullptr;
    for (size_t t = 0; t < idx.size(); ++t) {
      Value* inside = b.op(OpKind::And, {b.cmp(OpKind::Ge, idx[t], b.c.scalar(DType::I64, 0)), b.cmp(OpKind::Lt, idx[t], inI)});
      w[t] = b.mul(w[t], b.cast(inside, DType::F64));
      sum = sum ? b.add(sum, w[t]) : w[t];
    }
    for (auto& wt : w) wt = b.div(wt, sum);
  }
  Value* acc = nullptr;
  for (size_t t = 0; t < idx.size(); ++t) {
    Value* term = weigh(b, gather(idx[t]), w[t], ax.axis);
    acc = acc ? b.add(acc, term) : term;
  }
  return acc;
}

// The scales input (or attribute) as doubles; empty when absent or empty.
std::vector<double> knownScales(Ctx& c, const onnx::NodeProto& n, int i) {
  OValue* s = input(c, n, i);
  if (!s) return {};
  if (!s->cst)
    throw ImportError("the scales (input " + std::to_string(i) + ", '" + n.input(i) +
                      "') must be known when importing: a constant (sizes may be computed from shapes)");
  std::vector<double> out;
  for (int64_t k = 0; k < s->cst->numel(); ++k) out.push_back(s->cst->getF(k));
  return out;
}

void resize(B& b, const onnx::NodeProto& n, bool upsample) {
  Ctx& c = b.c;
  Value* x = b.in(0);
  size_t r = x->type.rank();
  Mode m;
  m.interp = attrString(n, "mode", "nearest");
  if (m.interp == "bilinear" || m.interp == "trilinear") m.interp = "linear";  // Upsample-7's spellings
  if (m.interp != "nearest" && m.interp != "linear" && m.interp != "cubic")
    throw ImportError("mode '" + m.interp + "' is not one of nearest, linear, cubic");
  std::vector<double> scales;
  std::optional<std::vector<DimExpr>> sizes;
  std::vector<int64_t> axes;
  if (upsample || c.opset < 11) {
    // Upsample and Resize-10: scales only, asymmetric coordinates, nearest rounds down.
    m.coord = "asymmetric";
    m.nearest = "floor";
    if (upsample && c.opset < 9) {
      auto s = findAttr(n, "scales");
      if (!s) throw ImportError("attribute 'scales' is required");
      for (float f : s->floats()) scales.push_back(f);
    } else {
      scales = knownScales(c, n, 1);
    }
    if (scales.empty()) throw ImportError("the scales are required");
  } else {
    m.coord = attrString(n, "coordinate_transformation_mode", "half_pixel");
    m.nearest = attrString(n, "nearest_mode", "round_prefer_floor");
    m.cubicA = attrFloat(n, "cubic_coeff_a", -0.75);
    m.excludeOutside = attrInt(n, "exclude_outside", 0) != 0;
    if (attrInt(n, "antialias", 0) != 0) throw ImportError("antialias = 1 is not supported");
    if (m.coord == "tf_crop_and_resize")
      throw ImportError("coordinate_transformation_mode 'tf_crop_and_resize' is not supported");
    // Exporters pass an empty constant for the one not given (opset 11 needs the scales input).
    auto present = [&](int i) {
      OValue* v = input(c, n, i);
      return v && !(v->cst && v->cst->numel() == 0);
    };
    if (present(3)) {
      if (present(2)) throw ImportError("only one of scales and sizes may be given");
      sizes = knownInts(c, n, 3, "sizes");
    } else {
      scales = knownScales(c, n, 2);
      if (scales.empty()) throw ImportError("one of scales and sizes must be given");
    }
    if (auto a = attrInts(n, "axes"))
      for (int64_t v : *a) axes.push_back(b.axis(v, r));
  }
  if (axes.empty())
    for (size_t a = 0; a < r; ++a) axes.push_back(int64_t(a));
  size_t given = sizes ? sizes->size() : scales.size();
  if (given != axes.size())
    throw ImportError(std::string(sizes ? "sizes" : "scales") + " has " + std::to_string(given) + " entries for " +
                      std::to_string(axes.size()) + " axes (input " + x->type.str() + ")");
  std::vector<Axis> plan;
  std::string policy = attrString(n, "keep_aspect_ratio_policy", "stretch");
  if (sizes && policy != "stretch") {
    // One scale for every axis, the smallest (not_larger) or largest (not_smaller) of sizes / in; known dims only.
    if (policy != "not_larger" && policy != "not_smaller")
      throw ImportError("keep_aspect_ratio_policy '" + policy + "' is not one of stretch, not_larger, not_smaller");
    std::optional<double> s;
    for (size_t i = 0; i < axes.size(); ++i) {
      const DimExpr& d = x->type.dims[size_t(axes[i])];
      if (!d.isConst() || !(*sizes)[i].isConst())
        throw ImportError("keep_aspect_ratio_policy '" + policy + "' over the symbolic size " + d.str() + " is not supported");
      double q = double((*sizes)[i].constValue()) / double(d.constValue());
      s = !s ? q : policy == "not_larger" ? std::min(*s, q) : std::max(*s, q);
    }
    for (int64_t a : axes) {
      int64_t d = x->type.dims[size_t(a)].constValue();
      plan.push_back({a, DimExpr(int64_t(std::round(*s * double(d)))), s});
    }
  } else {
    for (size_t i = 0; i < axes.size(); ++i) {
      const DimExpr& d = x->type.dims[size_t(axes[i])];
      if (sizes) plan.push_back({axes[i], simplified(c, (*sizes)[i]), std::nullopt});
      else plan.push_back({axes[i], simplified(c, scaledDim(d, scales[i])), scales[i]});
    }
  }
  Value* v = x;
  for (const Axis& ax : plan) {
    const DimExpr& d = v->type.dims[size_t(ax.axis)];
    // An axis kept as it is maps every index to itself in every mode but tf_half_pixel_for_nn.
    bool same = ax.scale ? *ax.scale == 1.0 : ax.out == d;
    if (same && m.coord != "tf_half_pixel_for_nn") continue;
    v = resizeAxis(b, m, v, ax);
  }
  if (v == x) v = b.op(OpKind::Reshape, {x}, {}, x->type);  // the node still defines its own value
  b.out(v);
}

}  // namespace

bool convertResize(Ctx& c, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op != "Resize" && op != "Upsample") return false;
  B b{c, n};
  resize(b, n, op == "Upsample");
  return true;
}

}  // namespace dscc::frontend
