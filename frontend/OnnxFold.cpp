// Import-time evaluation of shape arithmetic (Shape, Gather, Concat, Slice, ...) into dim expressions, and node helpers.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "frontend/OnnxInternal.h"

namespace dscc::frontend {

const onnx::AttributeProto* findAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attrInt(const onnx::NodeProto& n, const std::string& name, int64_t dflt) {
  const auto* a = findAttr(n, name);
  return a ? a->i() : dflt;
}

double attrFloat(const onnx::NodeProto& n, const std::string& name, double dflt) {
  const auto* a = findAttr(n, name);
  return a ? a->f() : dflt;
}

std::string attrString(const onnx::NodeProto& n, const std::string& name, const std::string& dflt) {
  const auto* a = findAttr(n, name);
  return a ? a->s() : dflt;
}

std::optional<std::vector<int64_t>> attrInts(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = findAttr(n, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

OValue* input(Ctx& c, const onnx::NodeProto& n, int i) {
  if (i >= n.input_size() || n.input(i).empty()) return nullptr;
  return &c.vals.at(n.input(i));
}

OValue& need(Ctx& c, const onnx::NodeProto& n, int i) {
  OValue* v = input(c, n, i);
  if (!v) throw ImportError("input " + std::to_string(i) + " is required");
  return *v;
}

std::vector<DimExpr> knownInts(Ctx& c, const onnx::NodeProto& n, int i, const char* what) {
  OValue& v = need(c, n, i);
  if (!v.elems) {
    auto why = c.unknownWhy.find(n.input(i));
    throw ImportError(std::string(what) + " (input " + std::to_string(i) + ", '" + n.input(i) +
                      "') must be known when importing: a constant or computed from shapes" +
                      (why != c.unknownWhy.end() ? "; unknown because " + why->second : ""));
  }
  return *v.elems;
}

std::vector<int64_t> constInts(Ctx& c, const onnx::NodeProto& n, int i, const char* what) {
  std::vector<int64_t> r;
  for (const DimExpr& d : knownInts(c, n, i, what)) {
    if (!d.isConst())
      throw ImportError(std::string(what) + " (input " + std::to_string(i) + ") must be constant, not " + d.str());
    r.push_back(d.constValue());
  }
  return r;
}

void define(Ctx& c, const onnx::NodeProto& n, int i, OValue v) {
  if (i < n.output_size() && !n.output(i).empty()) c.vals[n.output(i)] = std::move(v);
}

namespace {

OValue known(DType dt, std::vector<DimExpr> e, bool vector) {
  std::vector<int64_t> shape;
  if (vector) shape.push_back(int64_t(e.size()));
  return knownValue(dt, shape, std::move(e));
}

// Casts and arithmetic on small float constants (a window's length from its
// size, a grid's side as the square root of a count), so the Range or shape
// they feed is known; computed in double and rounded once to the dtype, which
// for one + - * / sqrt is the dtype's own result.
bool foldFloat(Ctx& c, const onnx::NodeProto& n, const std::string& op) {
  OValue* a = input(c, n, 0);
  if (!a || a->type.rank() > 1) return false;
  auto contents = [](const OValue& v) -> std::optional<std::vector<double>> {
    std::vector<double> r;
    if (v.cst) {
      if (v.cst->numel() > 64) return std::nullopt;
      for (int64_t k = 0; k < v.cst->numel(); ++k) r.push_back(v.cst->getF(k));
    } else if (v.elems) {
      for (const auto& d : *v.elems) {
        if (!d.isConst()) return std::nullopt;
        r.push_back(double(d.constValue()));
      }
    } else {
      return std::nullopt;
    }
    return r;
  };
  auto x = contents(*a);
  if (!x) return false;
  DType dt = a->type.dtype;
  std::vector<double> r;
  bool vector = a->type.rank() == 1;
  if (op == "Cast") {
    DType to = dtypeOf(int(attrInt(n, "to", 1)));
    if (!isFloat(to)) {
      // A float size cast to an integer one (sqrt(positions) as a side, PyTorch's
      // int(n ** 0.5)): truncated toward zero, and then known elements a shape can use.
      if (!isFloat(dt) || (to != DType::I64 && to != DType::I32)) return false;
      std::vector<int64_t> shape;
      if (a->type.rank() == 1) shape.push_back(int64_t(x->size()));
      auto t = std::make_shared<Tensor>(Tensor::zeros(to, shape));
      for (size_t k = 0; k < x->size(); ++k) {
        if (!std::isfinite((*x)[k]) || std::fabs((*x)[k]) > 9e18) return false;
        t->setF(int64_t(k), std::trunc((*x)[k]));
      }
      define(c, n, 0, constantValue(t));
      return true;
    }
    dt = to;
    r = *x;
  } else if (op == "Sqrt" || op == "Floor" || op == "Ceil") {
    if (!isFloat(dt)) return false;
    for (double v : *x) r.push_back(op == "Sqrt" ? std::sqrt(v) : op == "Floor" ? std::floor(v) : std::ceil(v));
  } else {
    OValue* b = input(c, n, 1);
    if (!b || n.input_size() != 2 || b->type.rank() > 1 || b->type.dtype != dt || !isFloat(dt)) return false;
    auto y = contents(*b);
    if (!y || (x->size() != y->size() && x->size() != 1 && y->size() != 1)) return false;
    vector |= b->type.rank() == 1;
    for (size_t k = 0; k < std::max(x->size(), y->size()); ++k) {
      double p = (*x)[x->size() == 1 ? 0 : k], q = (*y)[y->size() == 1 ? 0 : k];
      r.push_back(op == "Add" ? p + q : op == "Sub" ? p - q : op == "Mul" ? p * q : op == "Pow" ? std::pow(p, q) : p / q);
    }
  }
  std::vector<int64_t> shape;
  if (vector) shape.push_back(int64_t(r.size()));
  auto t = std::make_shared<Tensor>(Tensor::zeros(dt, shape));
  for (size_t k = 0; k < r.size(); ++k) t->setF(int64_t(k), r[k]);
  OValue o;
  o.type.dtype = dt;
  for (int64_t d : shape) o.type.dims.push_back(DimExpr(d));
  o.cst = t;
  define(c, n, 0, o);
  return true;
}

}  // namespace

bool foldNode(Ctx& c, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  auto in = [&](int i) { return input(c, n, i); };
  auto hasElems = [&](int i) { return in(i) && in(i)->elems; };
  if (op == "Constant") {
    std::shared_ptr<Tensor> t;
    if (const auto* a = findAttr(n, "value")) {
      t = tensorOf(a->t(), c.external);
    } else if (const auto* a = findAttr(n, "value_float")) {
      t = std::make_shared<Tensor>(Tensor::zeros(DType::F32, {}));
      t->setF(0, a->f());
    } else if (const auto* a = findAttr(n, "value_int")) {
      t = std::make_shared<Tensor>(Tensor::zeros(DType::I64, {}));
      t->setI(0, a->i());
    } else if (const auto* a = findAttr(n, "value_floats")) {
      t = std::make_shared<Tensor>(Tensor::zeros(DType::F32, {a->floats_size()}));
      for (int k = 0; k < a->floats_size(); ++k) t->setF(k, a->floats(k));
    } else if (const auto* a = findAttr(n, "value_ints")) {
      t = std::make_shared<Tensor>(Tensor::zeros(DType::I64, {a->ints_size()}));
      for (int k = 0; k < a->ints_size(); ++k) t->setI(k, a->ints(k));
    } else {
      throw ImportError("only tensor, float(s) and int(s) values are supported");
    }
    define(c, n, 0, constantValue(t));
    return true;
  }
  if (op == "Shape") {
    const Type& t = need(c, n, 0).type;
    int64_t r = int64_t(t.rank());
    int64_t start = attrInt(n, "start", 0), end = attrInt(n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    std::vector<DimExpr> e;
    for (int64_t k = start; k < end; ++k) e.push_back(t.dims[k]);
    define(c, n, 0, known(DType::I64, e, true));
    return true;
  }
  if (op == "Size") {
    define(c, n, 0, known(DType::I64, {product(need(c, n, 0).type.dims, 0, need(c, n, 0).type.rank())}, false));
    return true;
  }
  if ((op == "Cast" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Sqrt" ||
       op == "Floor" || op == "Ceil") &&
      foldFloat(c, n, op))
    return true;
  if (foldKnown(c, n)) return true;
  if (op == "ReduceProd" && hasElems(0) && in(0)->type.rank() == 1 && n.input_size() == 1) {
    DimExpr p(1);
    for (const auto& d : *in(0)->elems) p = p * d;
    define(c, n, 0, known(in(0)->type.dtype, {p}, attrInt(n, "keepdims", 1) != 0));
    return true;
  }
  if (op == "ConstantOfShape" && hasElems(0)) {
    const auto* a = findAttr(n, "value");
    auto v = a ? tensorOf(a->t(), c.external) : nullptr;
    DType dt = v ? v->dtype : DType::F32;
    if (!(isInteger(dt) || isBool(dt))) return false;
    std::vector<int64_t> shape;
    int64_t count = 1;
    for (const DimExpr& d : *in(0)->elems) {
      if (!d.isConst() || d.constValue() < 0 || d.constValue() > kMaxKnownElems) return false;
      shape.push_back(d.constValue());
      count *= d.constValue();
      if (count > kMaxKnownElems) return false;
    }
    int64_t val = v && v->numel() ? v->getI(0) : 0;
    define(c, n, 0, knownValue(dt, shape, std::vector<DimExpr>(count, DimExpr(val))));
    return true;
  }
  if (op == "Range" && hasElems(0) && hasElems(1) && hasElems(2) && in(0)->type.rank() == 0) {
    DimExpr s = (*in(0)->elems)[0], l = (*in(1)->elems)[0], d = (*in(2)->elems)[0];
    if (!s.isConst() || !l.isConst() || !d.isConst() || d.constValue() == 0) return false;
    std::vector<DimExpr> r;
    for (int64_t v = s.constValue(); d.constValue() > 0 ? v < l.constValue() : v > l.constValue(); v += d.constValue()) {
      if (int64_t(r.size()) >= kMaxKnownElems) return false;
      r.push_back(DimExpr(v));
    }
    define(c, n, 0, known(in(0)->type.dtype, r, true));
    return true;
  }
  return false;
}

}  // namespace dscc::frontend
