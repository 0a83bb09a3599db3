// ONNX operators as dscc ops: elementwise, activations, reductions, normalisations, linear algebra, data movement.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "frontend/OnnxInternal.h"
#include "ir/Verifier.h"

namespace dscc::frontend {

namespace {

using Attrs = std::vector<std::pair<std::string, Attribute>>;

Attribute dims(const std::vector<DimExpr>& v) {
  std::vector<Attribute> l;
  for (const auto& x : v) l.push_back(Attribute::makeDim(x));
  return Attribute::makeList(l);
}

// One node's conversion, with short helpers over its inputs and outputs.
struct Conv {
  Ctx& c;
  const onnx::NodeProto& n;
  const std::string& op;

  Value* in(int i) { return c.use(need(c, n, i), n.input(i)); }
  Value* opt(int i) {
    OValue* v = input(c, n, i);
    return v ? c.use(*v, n.input(i)) : nullptr;
  }
  std::string outName(int i = 0) const { return i < n.output_size() ? n.output(i) : "t"; }
  void out(Value* v, int i = 0) { define(c, n, i, c.wrap(v)); }
  bool wants(int i) const { return i < n.output_size() && !n.output(i).empty(); }

  Value* emit(OpKind k, std::vector<Value*> ops, Attrs a = {}, std::optional<Type> t = std::nullopt) {
    return c.emit(k, std::move(ops), std::move(a), std::move(t), outName());
  }
  Value* k(const Value* like, double v) { return c.scalar(like->type.dtype, v); }
  Value* cast(Value* v, DType dt) {
    return v->type.dtype == dt ? v : emit(OpKind::Cast, {v}, {{"to", Attribute::makeDType(dt)}});
  }
  Value* reshape(Value* v, std::vector<DimExpr> d) { return emit(OpKind::Reshape, {v}, {}, Type{v->type.dtype, d}); }
  Value* bin(OpKind kd, Value* a, Value* b) { return emit(kd, {a, b}); }
  Value* un(OpKind kd, Value* a) { return emit(kd, {a}); }
  Value* sel(Value* cnd, Value* a, Value* b) { return emit(OpKind::Select, {cnd, a, b}); }
  int64_t axisOf(int64_t axis, size_t rank) {
    auto a = normalizeAxis(axis, rank);
    if (!a) throw ImportError("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return *a;
  }
  [[noreturn]] void unsupported(const std::string& why) { throw ImportError(why); }

  // Axes given as the attribute `axes` before `inputFrom`, as input 1 from it.
  std::optional<std::vector<int64_t>> axes(int64_t inputFrom) {
    if (c.opset >= inputFrom) {
      if (!input(c, n, 1)) return std::nullopt;
      return constInts(c, n, 1, "axes");
    }
    return attrInts(n, "axes");
  }

  Value* reduce(OpKind kd, Value* x, const std::optional<std::vector<int64_t>>& ax, bool keep) {
    Attrs a;
    if (ax) a.push_back({"axes", intList(*ax)});
    a.push_back({"keepdims", Attribute::makeBool(keep)});
    return emit(kd, {x}, a);
  }

  void reduction(int64_t axesInput) {
    Value* x = in(0);
    auto ax = axes(axesInput);
    bool keep = attrInt(n, "keepdims", 1) != 0;
    if (ax && ax->empty()) ax.reset();
    if (!ax && attrInt(n, "noop_with_empty_axes", 0)) return out(x);
    auto sum = [&](Value* v) { return reduce(OpKind::ReduceSum, v, ax, keep); };
    if (op == "ReduceSum") return out(sum(x));
    if (op == "ReduceMax") return out(reduce(OpKind::ReduceMax, x, ax, keep));
    if (op == "ReduceMin") return out(reduce(OpKind::ReduceMin, x, ax, keep));
    if (op == "ReduceMean") return out(reduce(OpKind::ReduceMean, x, ax, keep));
    if (op == "ReduceProd") return out(reduce(OpKind::ReduceProd, x, ax, keep));
    if (op == "ReduceL1") return out(sum(un(OpKind::Abs, x)));
    if (op == "ReduceSumSquare") return out(sum(bin(OpKind::Mul, x, x)));
    if (op == "ReduceL2") return out(un(OpKind::Sqrt, sum(bin(OpKind::Mul, x, x))));
    if (op == "ReduceLogSum") return out(un(OpKind::Log, sum(x)));
    // ReduceLogSumExp, max-subtracted.
    Value* mk = reduce(OpKind::ReduceMax, x, ax, true);
    Value* s = sum(un(OpKind::Exp, bin(OpKind::Sub, x, mk)));
    Value* m = keep ? mk : reduce(OpKind::ReduceMax, x, ax, false);
    out(bin(OpKind::Add, un(OpKind::Log, s), m));
  }

  // ONNX's opset < 13 softmax: flattened to 2-D at `axis`.
  void softmax(OpKind kd) {
    Value* x = in(0);
    size_t r = x->type.rank();
    if (c.opset >= 13) return out(emit(kd, {x}, {{"axis", Attribute::makeInt(attrInt(n, "axis", -1))}}));
    int64_t axis = r == 0 ? 0 : axisOf(attrInt(n, "axis", 1), r);
    if (axis == int64_t(r) - 1 || r <= 1) return out(emit(kd, {x}, {{"axis", Attribute::makeInt(-1)}}));
    const auto& d = x->type.dims;
    Value* flat = reshape(x, {product(d, 0, axis), product(d, axis, r)});
    out(reshape(emit(kd, {flat}, {{"axis", Attribute::makeInt(1)}}), d));
  }

  // Numpy-broadcast dims of two shapes (ONNX Expand is bidirectional).
  static std::vector<DimExpr> broadcastDims(std::vector<DimExpr> a, std::vector<DimExpr> b) {
    if (a.size() < b.size()) std::swap(a, b);
    b.insert(b.begin(), a.size() - b.size(), DimExpr(1));
    for (size_t k = 0; k < a.size(); ++k)
      if (a[k] == DimExpr(1)) a[k] = b[k];
      else if (b[k] != DimExpr(1) && a[k] != b[k]) a[k] = DimExpr::bcast(a[k], b[k]);
    return a;
  }

  void run();
  void more();
};

const std::map<std::string, OpKind>& unaryOps() {
  static const std::map<std::string, OpKind> m = {
      {"Neg", OpKind::Neg},   {"Abs", OpKind::Abs},     {"Exp", OpKind::Exp},       {"Log", OpKind::Log},
      {"Sqrt", OpKind::Sqrt}, {"Tanh", OpKind::Tanh},   {"Sigmoid", OpKind::Sigmoid}, {"Erf", OpKind::Erf},
      {"Relu", OpKind::Relu}, {"Floor", OpKind::Floor}, {"Ceil", OpKind::Ceil},     {"Sin", OpKind::Sin},
      {"Cos", OpKind::Cos},   {"Reciprocal", OpKind::Reciprocal}, {"Not", OpKind::Not},
      {"Sign", OpKind::Sign}};
  return m;
}

const std::map<std::string, OpKind>& binaryOps() {
  static const std::map<std::string, OpKind> m = {
      {"Add", OpKind::Add},  {"Sub", OpKind::Sub},   {"Mul", OpKind::Mul},  {"Div", OpKind::Div},
      {"And", OpKind::And},  {"Or", OpKind::Or},     {"Xor", OpKind::Ne},   {"Equal", OpKind::Eq},
      {"Less", OpKind::Lt},  {"LessOrEqual", OpKind::Le}, {"Greater", OpKind::Gt}, {"GreaterOrEqual", OpKind::Ge}};
  return m;
}

void Conv::run() {
  if (auto it = unaryOps().find(op); it != unaryOps().end()) return out(un(it->second, in(0)));
  if (auto it = binaryOps().find(op); it != binaryOps().end()) return out(bin(it->second, in(0), in(1)));
  if (op == "Max" || op == "Min" || op == "Sum" || op == "Mean") {
    OpKind kd = op == "Max" ? OpKind::Max : op == "Min" ? OpKind::Min : OpKind::Add;
    Value* acc = in(0);
    for (int i = 1; i < n.input_size(); ++i) acc = bin(kd, acc, in(i));
    if (op == "Mean" && n.input_size() > 1) acc = bin(OpKind::Div, acc, k(acc, n.input_size()));
    return out(acc);
  }
  if (op == "Pow") {
    Value* a = in(0);
    return out(bin(OpKind::Pow, a, cast(in(1), a->type.dtype)));
  }
  if (op == "Where") return out(sel(in(0), in(1), in(2)));
  if (op == "Cast") return out(cast(in(0), dtypeOf(int(attrInt(n, "to", 1)))));
  if (op == "CastLike") return out(cast(in(0), in(1)->type.dtype));
  if (op == "Identity") return define(c, n, 0, need(c, n, 0));
  if (op == "Dropout") {
    // Training mode drops elements at random; with a ratio of 0 it keeps them all, as inference does.
    if (OValue* t = input(c, n, 2); t && (!t->elems || (*t->elems)[0] != DimExpr(0))) {
      OValue* ratio = input(c, n, 1);
      if (ratio && !ratio->cst) throw ImportError("the ratio must be known when importing in training mode");
      bool zero = ratio && ratio->cst->numel() == 1 && ratio->cst->getF(0) == 0.0;
      if (!zero) unsupported("training mode with a ratio other than a constant 0 is not supported (it draws random numbers)");
    }
    if (attrInt(n, "is_test", 1) == 0 && c.opset < 7) unsupported("training mode is not supported (only inference)");
    Value* x = in(0);
    if (wants(1)) {
      Value* t = c.scalar(DType::I1, 1);
      out(emit(OpKind::BroadcastTo, {t}, {}, Type{DType::I1, x->type.dims}), 1);
    }
    return out(x);
  }
  if (op == "Clip") {
    Value* x = in(0);
    Value *lo = nullptr, *hi = nullptr;
    if (c.opset < 11) {
      double inf = std::numeric_limits<double>::infinity();
      lo = k(x, attrFloat(n, "min", -inf));
      hi = k(x, attrFloat(n, "max", inf));
    } else {
      lo = opt(1);
      hi = opt(2);
    }
    if (lo) x = bin(OpKind::Max, x, lo);
    if (hi) x = bin(OpKind::Min, x, hi);
    return out(x);
  }
  if (op == "LeakyRelu" || op == "PRelu") {
    Value* x = in(0);
    Value* slope = op == "PRelu" ? in(1) : k(x, attrFloat(n, "alpha", 0.01));
    // Before opset 7 a 1-D slope is per channel (dim 1), not numpy-broadcast.
    if (op == "PRelu" && c.opset < 7 && slope->type.rank() == 1 && x->type.rank() > 2) {
      std::vector<DimExpr> d(x->type.rank() - 1, DimExpr(1));
      d[0] = slope->type.dims[0];
      slope = reshape(slope, d);
    }
    return out(sel(bin(OpKind::Lt, x, k(x, 0)), bin(OpKind::Mul, x, slope), x));
  }
  if (op == "Elu" || op == "Selu") {
    Value* x = in(0);
    double alpha = attrFloat(n, "alpha", op == "Elu" ? 1.0 : 1.67326319217681884765625);
    Value* neg = bin(OpKind::Mul, k(x, alpha), bin(OpKind::Sub, un(OpKind::Exp, x), k(x, 1)));
    Value* r = sel(bin(OpKind::Le, x, k(x, 0)), neg, x);
    if (op == "Selu") r = bin(OpKind::Mul, r, k(x, attrFloat(n, "gamma", 1.05070102214813232421875)));
    return out(r);
  }
  if (op == "Celu") {
    Value* x = in(0);
    Value* a = k(x, attrFloat(n, "alpha", 1.0));
    Value* e = bin(OpKind::Mul, a, bin(OpKind::Sub, un(OpKind::Exp, bin(OpKind::Div, x, a)), k(x, 1)));
    return out(bin(OpKind::Add, bin(OpKind::Max, x, k(x, 0)), bin(OpKind::Min, e, k(x, 0))));
  }
  if (op == "HardSigmoid" || op == "HardSwish") {
    Value* x = in(0);
    double alpha = op == "HardSwish" ? 1.0 / 6 : attrFloat(n, "alpha", 0.2);
    double beta = op == "HardSwish" ? 0.5 : attrFloat(n, "beta", 0.5);
    Value* h = bin(OpKind::Add, bin(OpKind::Mul, x, k(x, alpha)), k(x, beta));
    h = bin(OpKind::Max, bin(OpKind::Min, h, k(x, 1)), k(x, 0));
    return out(op == "HardSwish" ? bin(OpKind::Mul, x, h) : h);
  }
  if (op == "Softplus") {
    Value* x = in(0);
    return out(un(OpKind::Log, bin(OpKind::Add, un(OpKind::Exp, x), k(x, 1))));
  }
  if (op == "Softsign") {
    Value* x = in(0);
    return out(bin(OpKind::Div, x, bin(OpKind::Add, un(OpKind::Abs, x), k(x, 1))));
  }
  if (op == "Mish") {
    Value* x = in(0);
    Value* sp = un(OpKind::Log, bin(OpKind::Add, un(OpKind::Exp, x), k(x, 1)));
    return out(bin(OpKind::Mul, x, un(OpKind::Tanh, sp)));
  }
  if (op == "ThresholdedRelu") {
    Value* x = in(0);
    return out(sel(bin(OpKind::Gt, x, k(x, attrFloat(n, "alpha", 1.0))), x, k(x, 0)));
  }
  if (op == "IsNaN") {
    Value* x = in(0);
    return out(bin(OpKind::Ne, x, x));
  }
  if (op == "Tan") {
    Value* x = in(0);
    return out(bin(OpKind::Div, un(OpKind::Sin, x), un(OpKind::Cos, x)));
  }
  if (op == "Gelu") {
    std::string approx = attrString(n, "approximate", "none");
    Attrs a;
    if (approx == "tanh") a.push_back({"approximate", Attribute::makeString("tanh")});
    else if (approx != "none") unsupported("approximate = '" + approx + "' is not supported");
    return out(emit(OpKind::Gelu, {in(0)}, a));
  }
  if (op == "ReduceSum") return reduction(13);
  if (op == "ReduceMax" || op == "ReduceMin" || op == "ReduceMean" || op == "ReduceProd" || op == "ReduceL1" ||
      op == "ReduceL2" || op == "ReduceSumSquare" || op == "ReduceLogSum" || op == "ReduceLogSumExp")
    return reduction(18);
  if (op == "ArgMax" || op == "ArgMin") {
    Value* x = in(0);
    int64_t axis = axisOf(attrInt(n, "axis", 0), x->type.rank());
    bool keep = attrInt(n, "keepdims", 1) != 0;
    if (op == "ArgMin") x = un(OpKind::Neg, x);
    Attrs a = {{"axis", Attribute::makeInt(axis)}, {"keepdims", Attribute::makeBool(keep)}};
    if (!attrInt(n, "select_last_index", 0)) return out(emit(OpKind::ArgMax, {x}, a));
    // The last index: the first one of the reversed axis, mirrored.
    Value* rev = emit(OpKind::Slice, {x}, {{"axes", intList({axis})}, {"starts", intList({-1})},
                                            {"ends", intList({-(int64_t(1) << 62)})},
                                            {"steps", intList({-1})}});
    Value* i = emit(OpKind::ArgMax, {rev}, a);
    Value* last = c.dimValue(x->type.dims[axis] - 1);
    return out(bin(OpKind::Sub, last, i));
  }
  if (op == "Softmax") return softmax(OpKind::Softmax);
  if (op == "LogSoftmax") return softmax(OpKind::LogSoftmax);
  more();
}

void Conv::more() {
  if (op == "LayerNormalization") {
    Value* x = in(0);
    Value* g = in(1);
    size_t r = x->type.rank();
    int64_t axis = axisOf(attrInt(n, "axis", -1), r);
    double eps = attrFloat(n, "epsilon", 1e-5);
    Value* b = opt(2);
    if (!b) b = emit(OpKind::BroadcastTo, {k(g, 0)}, {}, g->type);
    out(emit(OpKind::LayerNorm, {x, g, b}, {{"axis", Attribute::makeInt(axis)}, {"epsilon", Attribute::makeFloat(eps)}}));
    if (wants(1) || wants(2)) {
      std::vector<int64_t> ax;
      for (size_t d = axis; d < r; ++d) ax.push_back(int64_t(d));
      Value* mean = reduce(OpKind::ReduceMean, x, ax, true);
      Value* dev = bin(OpKind::Sub, x, mean);
      Value* var = reduce(OpKind::ReduceMean, bin(OpKind::Mul, dev, dev), ax, true);
      out(mean, 1);
      out(un(OpKind::Rsqrt, bin(OpKind::Add, var, k(var, eps))), 2);
    }
    return;
  }
  if (op == "BatchNormalization") {
    bool training = attrInt(n, "training_mode", 0) != 0;
    if (training && c.opset < 14) unsupported("training mode before opset 14 is not supported");
    if (!training && (wants(1) || wants(2) || wants(3) || wants(4)))
      unsupported("only the first output is supported in inference mode");
    Value *x = in(0), *scale = in(1), *bias = in(2), *mean = in(3), *var = in(4);
    size_t r = x->type.rank();
    if (r < 2) unsupported("the input must have rank >= 2");
    std::vector<DimExpr> d(r, DimExpr(1));
    d[1] = x->type.dims[1];
    auto chan = [&](Value* v) { return reshape(v, d); };
    if (training) {
      // The batch's own statistics (population variance) normalise; the
      // running ones move toward them by 1 - momentum.
      std::vector<int64_t> ax;
      for (size_t a = 0; a < r; ++a) if (a != 1) ax.push_back(int64_t(a));
      Value* bm = reduce(OpKind::ReduceMean, x, ax, false);
      Value* dev = bin(OpKind::Sub, x, chan(bm));
      Value* bv = reduce(OpKind::ReduceMean, bin(OpKind::Mul, dev, dev), ax, false);
      Value* inv = un(OpKind::Rsqrt, bin(OpKind::Add, chan(bv), k(bv, attrFloat(n, "epsilon", 1e-5))));
      out(bin(OpKind::Add, bin(OpKind::Mul, dev, bin(OpKind::Mul, inv, chan(scale))), chan(bias)), 0);
      double mom = attrFloat(n, "momentum", 0.9);
      auto run = [&](Value* old, Value* now) {
        return bin(OpKind::Add, bin(OpKind::Mul, old, k(old, mom)), bin(OpKind::Mul, cast(now, old->type.dtype), k(old, 1 - mom)));
      };
      if (wants(1)) out(run(mean, bm), 1);
      if (wants(2)) out(run(var, bv), 2);
      return;
    }
    Value* inv = un(OpKind::Rsqrt, bin(OpKind::Add, chan(var), k(var, attrFloat(n, "epsilon", 1e-5))));
    Value* y = bin(OpKind::Mul, bin(OpKind::Sub, x, chan(mean)), bin(OpKind::Mul, inv, chan(scale)));
    return out(bin(OpKind::Add, y, chan(bias)));
  }
  if (op == "InstanceNormalization") {
    Value *x = in(0), *scale = in(1), *bias = in(2);
    size_t r = x->type.rank();
    if (r < 3) unsupported("the input must have rank >= 3");
    std::vector<DimExpr> inner(x->type.dims.begin() + 2, x->type.dims.end());
    Value* one = emit(OpKind::BroadcastTo, {k(x, 1)}, {}, Type{x->type.dtype, inner});
    Value* zero = emit(OpKind::BroadcastTo, {k(x, 0)}, {}, Type{x->type.dtype, inner});
    Value* y = emit(OpKind::LayerNorm, {x, one, zero},
                    {{"axis", Attribute::makeInt(2)}, {"epsilon", Attribute::makeFloat(attrFloat(n, "epsilon", 1e-5))}});
    std::vector<DimExpr> d(r, DimExpr(1));
    d[1] = x->type.dims[1];
    return out(bin(OpKind::Add, bin(OpKind::Mul, y, reshape(scale, d)), reshape(bias, d)));
  }
  if (op == "MatMul") return out(bin(OpKind::Matmul, in(0), in(1)));
  if (op == "Gemm") {
    Value *a = in(0), *b = in(1);
    Value* y = emit(OpKind::Matmul, {a, b},
                    {{"transpose_a", Attribute::makeBool(attrInt(n, "transA", 0) != 0)},
                     {"transpose_b", Attribute::makeBool(attrInt(n, "transB", 0) != 0)}});
    double alpha = attrFloat(n, "alpha", 1.0), beta = attrFloat(n, "beta", 1.0);
    if (alpha != 1.0) y = bin(OpKind::Mul, y, k(y, alpha));
    if (Value* cc = opt(2); cc && beta != 0.0) {
      if (beta != 1.0) cc = bin(OpKind::Mul, cc, k(cc, beta));
      y = bin(OpKind::Add, y, cc);
    }
    return out(y);
  }
  if (op == "Transpose") {
    Attrs a;
    if (auto p = attrInts(n, "perm")) a.push_back({"perm", intList(*p)});
    return out(emit(OpKind::Transpose, {in(0)}, a));
  }
  if (op == "Concat") {
    std::vector<Value*> v;
    for (int i = 0; i < n.input_size(); ++i) v.push_back(in(i));
    return out(emit(OpKind::Concat, v, {{"axis", Attribute::makeInt(attrInt(n, "axis", 0))}}));
  }
  if (op == "Gather") return out(emit(OpKind::Gather, {in(0), in(1)}, {{"axis", Attribute::makeInt(attrInt(n, "axis", 0))}}));
  if (op == "Reshape") {
    Value* x = in(0);
    std::vector<DimExpr> shape;
    if (c.opset < 5) {
      for (int64_t v : attrInts(n, "shape").value_or(std::vector<int64_t>{})) shape.push_back(DimExpr(v));
    } else {
      shape = knownInts(c, n, 1, "the shape");
    }
    bool allowZero = attrInt(n, "allowzero", 0) != 0;
    int minus = -1;
    for (size_t k2 = 0; k2 < shape.size(); ++k2) {
      if (!shape[k2].isConst()) continue;
      int64_t v = shape[k2].constValue();
      if (v == 0 && !allowZero) {
        if (k2 >= x->type.rank()) unsupported("shape entry " + std::to_string(k2) + " is 0 beyond the input's rank");
        shape[k2] = x->type.dims[k2];
      } else if (v == -1) {
        if (minus >= 0) unsupported("the shape has more than one -1");
        minus = int(k2);
      } else if (v < 0) {
        unsupported("shape entry " + std::to_string(v) + " is negative");
      }
    }
    if (minus >= 0) {
      DimExpr rest(1);
      for (size_t k2 = 0; k2 < shape.size(); ++k2)
        if (int(k2) != minus) rest = rest * shape[k2];
      if (rest == DimExpr(0)) unsupported("the -1 entry cannot be inferred: the other entries multiply to 0");
      shape[minus] = DimExpr::div(product(x->type.dims, 0, x->type.rank()), rest);
    }
    return out(reshape(x, shape));
  }
  if (op == "Flatten") {
    Value* x = in(0);
    size_t r = x->type.rank();
    int64_t axis = attrInt(n, "axis", 1);
    if (axis < 0) axis += int64_t(r);
    if (axis < 0 || axis > int64_t(r)) unsupported("axis is out of range");
    return out(reshape(x, {product(x->type.dims, 0, axis), product(x->type.dims, axis, r)}));
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    Value* x = in(0);
    auto ax = axes(13);
    std::vector<DimExpr> d = x->type.dims;
    if (op == "Squeeze") {
      std::vector<bool> drop(d.size(), false);
      if (!ax) {
        for (size_t k2 = 0; k2 < d.size(); ++k2) {
          if (!d[k2].isConst()) unsupported("without axes, every dim must be static (dim " + std::to_string(k2) + " is " + d[k2].str() + ")");
          drop[k2] = d[k2] == DimExpr(1);
        }
      } else {
        for (int64_t a : *ax) {
          int64_t k2 = axisOf(a, d.size());
          // A symbolic dim must be 1 at run time: the reshape's element count checks it.
          if (d[k2].isConst() && d[k2] != DimExpr(1))
            unsupported("dim " + std::to_string(k2) + " is " + d[k2].str() + ", not 1");
          drop[k2] = true;
        }
      }
      std::vector<DimExpr> r;
      for (size_t k2 = 0; k2 < d.size(); ++k2)
        if (!drop[k2]) r.push_back(d[k2]);
      return out(reshape(x, r));
    }
    if (!ax) unsupported("axes are required");
    size_t rank = d.size() + ax->size();
    std::vector<bool> ins(rank, false);
    for (int64_t a : *ax) ins[axisOf(a, rank)] = true;
    std::vector<DimExpr> r;
    for (size_t k2 = 0, j = 0; k2 < rank; ++k2) r.push_back(ins[k2] ? DimExpr(1) : d[j++]);
    return out(reshape(x, r));
  }
  if (op == "Expand") {
    Value* x = in(0);
    auto shape = knownInts(c, n, 1, "the shape");
    return out(emit(OpKind::BroadcastTo, {x}, {}, Type{x->type.dtype, broadcastDims(x->type.dims, shape)}));
  }
  if (op == "Slice") {
    Value* x = in(0);
    std::vector<DimExpr> starts, ends;
    std::vector<int64_t> ax, steps;
    if (c.opset < 10) {
      for (int64_t v : attrInts(n, "starts").value_or(std::vector<int64_t>{})) starts.push_back(DimExpr(v));
      for (int64_t v : attrInts(n, "ends").value_or(std::vector<int64_t>{})) ends.push_back(DimExpr(v));
      ax = attrInts(n, "axes").value_or(std::vector<int64_t>{});
    } else {
      starts = knownInts(c, n, 1, "starts");
      ends = knownInts(c, n, 2, "ends");
      if (input(c, n, 3)) ax = constInts(c, n, 3, "axes");
      if (input(c, n, 4)) steps = constInts(c, n, 4, "steps");
    }
    if (ax.empty())
      for (size_t k2 = 0; k2 < starts.size(); ++k2) ax.push_back(int64_t(k2));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (starts.size() != ends.size() || ax.size() != starts.size() || steps.size() != starts.size())
      unsupported("starts, ends, axes and steps differ in length");
    for (auto& a : ax) a = axisOf(a, x->type.rank());
    // Symbolic bounds are sizes (non-negative); ONNX's huge sentinels (INT64_MIN/MAX) clamp to +-2^62.
    auto clampBound = [](DimExpr& d) {
      constexpr int64_t big = int64_t(1) << 62;
      if (d.isConst()) d = DimExpr(std::clamp(d.constValue(), -big, big));
    };
    for (auto& d : starts) clampBound(d);
    for (auto& d : ends) clampBound(d);
    // ONNX's rule for a bound b of a dim D: a negative b counts from the end
    // (b + D), then it is clamped to [0, D] (steps > 0). The IR's slice takes
    // a symbolic bound as a count from the start, so a symbolic b that may be
    // negative (T5's `x[-seq:]`) is rewritten exactly as
    // clamp(b + D * [b < 0], 0, D), with [b < 0] = min(max(-b, 0), 1); the
    // facts then simplify it (to min(b, D) when b >= 0 is proved, to
    // max(D - seq, 0) when b = -seq and seq >= 1).
    for (size_t k2 = 0; k2 < starts.size(); ++k2) {
      for (DimExpr* b : {&starts[k2], &ends[k2]}) {
        if (b->isConst() || compareDims(c, "<=", DimExpr(0), *b) == Tri::Proved) continue;
        const DimExpr& D = x->type.dims[size_t(ax[k2])];  // axes are normalised above
        if (steps[k2] < 0)
          unsupported("the bound " + b->str() + " may be negative with a negative step (give --where facts that make it "
                      "non-negative)");
        DimExpr negative = DimExpr::min(DimExpr::max(-*b, DimExpr(0)), DimExpr(1));
        *b = simplified(c, DimExpr::min(DimExpr::max(*b + D * negative, DimExpr(0)), D));
      }
    }
    // A step of INT64_MIN has no negation (the slice's size divides by -step);
    // any step longer than a dim takes one element, so +-2^62 is the same slice.
    for (auto& st : steps) st = std::clamp(st, -(int64_t(1) << 62), int64_t(1) << 62);
    return out(emit(OpKind::Slice, {x}, {{"axes", intList(ax)}, {"starts", dims(starts)}, {"ends", dims(ends)},
                                          {"steps", intList(steps)}}));
  }
  if (op == "Split") {
    Value* x = in(0);
    int64_t axis = axisOf(attrInt(n, "axis", 0), x->type.rank());
    DimExpr total = x->type.dims[axis];
    std::vector<DimExpr> sizes;
    if (c.opset >= 13 && input(c, n, 1)) sizes = knownInts(c, n, 1, "split");
    else if (auto attr = attrInts(n, "split"); c.opset < 13 && attr)
      for (int64_t v : *attr) sizes.push_back(DimExpr(v));
    if (sizes.empty()) {
      int64_t parts = c.opset >= 18 && findAttr(n, "num_outputs") ? attrInt(n, "num_outputs", 1) : n.output_size();
      DimExpr each = c.opset >= 18 ? DimExpr::ceilDiv(total, DimExpr(parts)) : DimExpr::div(total, DimExpr(parts));
      for (int64_t p = 0; p < parts; ++p)
        sizes.push_back(p + 1 < parts ? each : total - each * DimExpr(parts - 1));
    }
    DimExpr at(0);
    for (size_t p = 0; p < sizes.size(); ++p) {
      Value* s = c.emit(OpKind::Slice, {x}, {{"axes", intList({axis})}, {"starts", dims({at})}, {"ends", dims({at + sizes[p]})}},
                        std::nullopt, outName(int(p)));
      out(s, int(p));
      at = at + sizes[p];
    }
    return;
  }
  if (op == "ConstantOfShape") {
    auto shape = knownInts(c, n, 0, "the shape");
    const auto* a = findAttr(n, "value");
    std::shared_ptr<Tensor> v = a ? tensorOf(a->t(), c.external) : nullptr;
    DType dt = v ? v->dtype : DType::F32;
    double val = v && v->numel() ? v->getF(0) : 0.0;
    return out(emit(OpKind::BroadcastTo, {c.scalar(dt, val)}, {}, Type{dt, shape}));
  }
  if (op == "Range") {
    OValue &s = need(c, n, 0), &l = need(c, n, 1), &d = need(c, n, 2);
    DType dt = s.type.dtype;
    if (isFloat(dt)) {
      if (!s.cst || !l.cst || !d.cst) unsupported("start, limit and delta must be known when importing (constants)");
      double st = s.cst->getF(0), li = l.cst->getF(0), de = d.cst->getF(0);
      if (de == 0) unsupported("delta must not be 0");
      int64_t len = std::max<int64_t>(0, int64_t(std::ceil((li - st) / de)));
      Value* i = emit(OpKind::Iota, {}, {{"axis", Attribute::makeInt(0)}}, Type{dt, {DimExpr(len)}});
      return out(bin(OpKind::Add, bin(OpKind::Mul, i, k(i, de)), k(i, st)));
    }
    if (!s.elems || !l.elems || !d.elems)
      unsupported("start, limit and delta must be known when importing (constants or sizes)");
    DimExpr st = (*s.elems)[0], li = (*l.elems)[0], de = (*d.elems)[0];
    if (!de.isConst() || de.constValue() == 0) unsupported("delta must be a non-zero constant");
    DimExpr len = DimExpr::max(DimExpr(0), DimExpr::ceilDiv(li - st, de));
    if (de.constValue() < 0) len = DimExpr::max(DimExpr(0), DimExpr::ceilDiv(st - li, -de));
    Value* i = emit(OpKind::Iota, {}, {{"axis", Attribute::makeInt(0)}}, Type{dt, {len}});
    Value* r = de == DimExpr(1) ? i : bin(OpKind::Mul, i, cast(c.use(d), dt));
    if (st != DimExpr(0)) r = bin(OpKind::Add, r, cast(c.use(s), dt));
    return out(r);
  }
  if (op == "Tile") {
    Value* x = in(0);
    auto reps = knownInts(c, n, 1, "repeats");
    size_t r = x->type.rank();
    if (reps.size() != r) unsupported("repeats must have one entry per dim");
    std::vector<DimExpr> spread, wide, flat;
    for (size_t k2 = 0; k2 < r; ++k2) {
      spread.push_back(DimExpr(1));
      spread.push_back(x->type.dims[k2]);
      wide.push_back(reps[k2]);
      wide.push_back(x->type.dims[k2]);
      flat.push_back(reps[k2] * x->type.dims[k2]);
    }
    Value* b = emit(OpKind::BroadcastTo, {reshape(x, spread)}, {}, Type{x->type.dtype, wide});
    return out(reshape(b, flat));
  }
  if (op == "Size" || op == "Shape") unsupported("internal: not folded");
  if (convertMore(c, n)) return;
  unsupported("not supported");
}

}  // namespace

void convertNode(Ctx& c, const onnx::NodeProto& n) {
  Conv cv{c, n, n.op_type()};
  cv.run();
}

}  // namespace dscc::frontend
