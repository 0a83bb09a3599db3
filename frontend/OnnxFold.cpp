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
  OValue o;
  o.type.dtype = dt;
  if (vector) o.type.dims.push_back(DimExpr(int64_t(e.size())));
  o.elems = std::move(e);
  return o;
}

int64_t truncDiv(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }

// Elementwise integer arithmetic on known values (rank <= 1, broadcasting).
bool foldBinary(Ctx& c, const onnx::NodeProto& n, const std::string& op) {
  OValue *a = input(c, n, 0), *b = input(c, n, 1);
  if (!a || !b || !a->elems || !b->elems || a->type.dtype != b->type.dtype) return false;
  const auto &x = *a->elems, &y = *b->elems;
  if (x.size() != y.size() && x.size() != 1 && y.size() != 1) return false;
  size_t len = std::max(x.size(), y.size());
  bool vector = a->type.rank() == 1 || b->type.rank() == 1;
  std::vector<DimExpr> r;
  DType dt = a->type.dtype;
  // A divisor that is a size computed from sizes (torch.export's numel // (b * c) for a view's last dim) must be
  // proved positive by the facts: at 0 the model divides by zero.
  auto positive = [&](const DimExpr& q) {
    if (q.isConst()) return q.constValue() > 0;
    if (compareDims(c, "<", DimExpr(0), q) == Tri::Proved) return true;
    std::set<std::string> syms;
    q.collectSymbols(syms);
    if (n.output_size() > 0 && !syms.empty())
      c.unknownWhy[n.output(0)] = c.nodeTag + " divides by " + q.str() +
                                  ", which the facts do not prove positive (a fact such as --where '" + *syms.begin() +
                                  " >= 1' decides it)";
    return false;
  };
  for (size_t k = 0; k < len; ++k) {
    const DimExpr& p = x[x.size() == 1 ? 0 : k];
    const DimExpr& q = y[y.size() == 1 ? 0 : k];
    if (op == "Add") r.push_back(p + q);
    else if (op == "Sub") r.push_back(p - q);
    else if (op == "Mul") r.push_back(p * q);
    else if (op == "Div") {
      if (p.isConst() && q.isConst()) {
        if (q.constValue() == 0) return false;
        r.push_back(DimExpr(truncDiv(p.constValue(), q.constValue())));
      } else if (positive(q)) {
        r.push_back(DimExpr::floorDiv(p, q));  // sizes are non-negative: floor is truncation
      } else {
        return false;
      }
    } else if (op == "Mod") {
      if (p.isConst() && q.isConst() && q.constValue() != 0) {
        int64_t m = p.constValue() % q.constValue();
        if (m != 0 && (m < 0) != (q.constValue() < 0)) m += q.constValue();
        r.push_back(DimExpr(m));
      } else if (positive(q)) {
        r.push_back(DimExpr::mod(p, q));
      } else {
        return false;
      }
    } else if (op == "Max") r.push_back(simplified(c, DimExpr::max(p, q)));
    else if (op == "Min") r.push_back(simplified(c, DimExpr::min(p, q)));
    else if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual") {
      // Decided by the solver where the facts decide it (a dim is never -1:
      // TorchScript's `expand(-1)` compares a shape with -1).
      bool swap = op == "Greater" || op == "GreaterOrEqual";
      std::string rel = op == "Equal" ? "==" : (op == "Less" || op == "Greater") ? "<" : "<=";
      Tri t = compareDims(c, rel, swap ? q : p, swap ? p : q);
      if (t == Tri::Unknown) return false;
      r.push_back(DimExpr(t == Tri::Proved ? 1 : 0));
      dt = DType::I1;
    } else if (op == "And" || op == "Or" || op == "Xor") {
      if (!p.isConst() || !q.isConst()) return false;
      bool u = p.constValue() != 0, w = q.constValue() != 0;
      r.push_back(DimExpr(op == "And" ? (u && w) : op == "Or" ? (u || w) : (u != w)));
    } else return false;
  }
  define(c, n, 0, known(dt, std::move(r), vector));
  return true;
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

// A small integer tensor whose every element is known (constant contents, or known elements that are all constants).
std::shared_ptr<const Tensor> smallIntConstant(const OValue* v) {
  if (!v || !(isInteger(v->type.dtype) || isBool(v->type.dtype))) return nullptr;
  if (v->cst) return v->cst->numel() <= 64 ? v->cst : nullptr;
  if (!v->elems || v->type.rank() > 1) return nullptr;
  std::vector<int64_t> shape;
  if (v->type.rank() == 1) shape.push_back(int64_t(v->elems->size()));
  auto t = std::make_shared<Tensor>(Tensor::zeros(v->type.dtype, shape));
  for (size_t k = 0; k < v->elems->size(); ++k) {
    if (!(*v->elems)[k].isConst()) return nullptr;
    t->setI(int64_t(k), (*v->elems)[k].constValue());
  }
  return t;
}

// Reshape, Transpose and Slice of a small integer constant of any rank, computed here so that the shape data
// TorchScript builds through them is known: F.pad's pads are reversed as a [-1, 2] matrix
// (Reshape, Slice with step -1, Transpose, Reshape back) before the Pad that needs them when importing.
bool foldConstantMovement(Ctx& c, const onnx::NodeProto& n, const std::string& op) {
  auto x = smallIntConstant(input(c, n, 0));
  if (!x) return false;
  int64_t rank = x->rank();
  std::vector<int64_t> outShape;
  std::vector<int64_t> from;  // per output element (row-major), the input element's flat index
  auto strides = [](const std::vector<int64_t>& shape) {
    std::vector<int64_t> st(shape.size(), 1);
    for (int64_t k = int64_t(shape.size()) - 2; k >= 0; --k) st[k] = st[k + 1] * shape[k + 1];
    return st;
  };
  // Visits every index of `shape` in row-major order.
  auto forEach = [](const std::vector<int64_t>& shape, const auto& fn) {
    int64_t total = 1;
    for (int64_t d : shape) total *= d;
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t k = 0; k < total; ++k) {
      fn(idx);
      for (int64_t a = int64_t(shape.size()) - 1; a >= 0; --a) {
        if (++idx[a] < shape[a]) break;
        idx[a] = 0;
      }
    }
  };
  if (op == "Reshape") {
    auto target = smallIntConstant(input(c, n, 1));
    if (!target || target->rank() != 1) return false;
    bool allowzero = attrInt(n, "allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (int64_t k = 0; k < target->numel(); ++k) {
      int64_t d = target->getI(k);
      if (d == 0 && !allowzero) {
        if (k >= rank) return false;
        d = x->shape[k];
      }
      if (d == -1) {
        if (infer >= 0) return false;
        infer = k;
        outShape.push_back(1);
        continue;
      }
      if (d < 0) return false;
      outShape.push_back(d);
      known *= d;
    }
    if (infer >= 0) {
      if (known == 0 || x->numel() % known != 0) return false;
      outShape[infer] = x->numel() / known;
    } else if (known != x->numel()) {
      return false;
    }
    for (int64_t k = 0; k < x->numel(); ++k) from.push_back(k);
  } else if (op == "Transpose") {
    std::vector<int64_t> perm = attrInts(n, "perm").value_or(std::vector<int64_t>{});
    if (perm.empty())
      for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
    if (int64_t(perm.size()) != rank) return false;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank) return false;
      outShape.push_back(x->shape[p]);
    }
    auto st = strides(x->shape);
    forEach(outShape, [&](const std::vector<int64_t>& idx) {
      int64_t f = 0;
      for (int64_t a = 0; a < rank; ++a) f += idx[a] * st[perm[a]];
      from.push_back(f);
    });
  } else if (op == "Slice") {
    std::vector<int64_t> starts, ends, axes, steps;
    auto ints = [&](int i, std::vector<int64_t>& out) {
      auto t = smallIntConstant(input(c, n, i));
      if (!t || t->rank() != 1) return false;
      for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->getI(k));
      return true;
    };
    if (c.opset < 10) {
      starts = attrInts(n, "starts").value_or(std::vector<int64_t>{});
      ends = attrInts(n, "ends").value_or(std::vector<int64_t>{});
      axes = attrInts(n, "axes").value_or(std::vector<int64_t>{});
    } else if (!ints(1, starts) || !ints(2, ends) || (input(c, n, 3) && !ints(3, axes)) ||
               (input(c, n, 4) && !ints(4, steps))) {
      return false;
    }
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return false;
    std::vector<int64_t> first(rank, 0), step(rank, 1);
    outShape = x->shape;
    std::vector<bool> seen(rank, false);
    for (size_t k = 0; k < starts.size(); ++k) {
      int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
      if (a < 0 || a >= rank || seen[a] || steps[k] == 0) return false;
      seen[a] = true;
      int64_t d = x->shape[a], s = starts[k], e = ends[k], st = steps[k];
      if (s < 0) s += d;
      if (e < 0) e += d;
      int64_t len;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
        len = e > s ? (e - s + st - 1) / st : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
        len = s > e ? (s - e - st - 1) / -st : 0;
      }
      first[a] = s;
      step[a] = st;
      outShape[a] = len;
    }
    auto st = strides(x->shape);
    forEach(outShape, [&](const std::vector<int64_t>& idx) {
      int64_t f = 0;
      for (int64_t a = 0; a < rank; ++a) f += (first[a] + idx[a] * step[a]) * st[a];
      from.push_back(f);
    });
  } else {
    return false;
  }
  auto t = std::make_shared<Tensor>(Tensor::zeros(x->dtype, outShape));
  for (size_t k = 0; k < from.size(); ++k) t->setI(int64_t(k), x->getI(from[k]));
  define(c, n, 0, constantValue(t));
  return true;
}

bool foldNode(Ctx& c, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  auto in = [&](int i) { return input(c, n, i); };
  auto hasElems = [&](int i) { return in(i) && in(i)->elems; };
  if ((op == "Reshape" || op == "Transpose" || op == "Slice") && foldConstantMovement(c, n, op)) return true;
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
  if (op == "Identity" && hasElems(0)) {
    define(c, n, 0, *in(0));
    return true;
  }
  if ((op == "Cast" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Sqrt" ||
       op == "Floor" || op == "Ceil") &&
      foldFloat(c, n, op))
    return true;
  if (op == "Cast" && hasElems(0)) {
    DType to = dtypeOf(int(attrInt(n, "to", 1)));
    if (to != DType::I64 && to != DType::I32) return false;
    OValue o = known(to, *in(0)->elems, in(0)->type.rank() == 1);
    define(c, n, 0, o);
    return true;
  }
  if (op == "Not" && hasElems(0)) {
    std::vector<DimExpr> e;
    for (const auto& d : *in(0)->elems) {
      if (!d.isConst()) return false;
      e.push_back(DimExpr(d.constValue() == 0));
    }
    define(c, n, 0, known(in(0)->type.dtype, e, in(0)->type.rank() == 1));
    return true;
  }
  if (op == "Neg" && hasElems(0)) {
    std::vector<DimExpr> e;
    for (const auto& d : *in(0)->elems) e.push_back(-d);
    define(c, n, 0, known(in(0)->type.dtype, e, in(0)->type.rank() == 1));
    return true;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Max" || op == "Min" || op == "Equal" ||
      op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "And" || op == "Or" ||
      op == "Xor") {
    if (n.input_size() != 2) return false;
    return foldBinary(c, n, op);
  }
  if (op == "Gather" && hasElems(0) && hasElems(1) && in(0)->type.rank() == 1) {
    const auto& data = *in(0)->elems;
    std::vector<DimExpr> e;
    for (const auto& d : *in(1)->elems) {
      if (!d.isConst()) return false;
      int64_t i = d.constValue();
      if (i < 0) i += int64_t(data.size());
      if (i < 0 || i >= int64_t(data.size())) throw ImportError("index " + d.str() + " is out of range");
      e.push_back(data[i]);
    }
    define(c, n, 0, known(in(0)->type.dtype, e, in(1)->type.rank() == 1));
    return true;
  }
  if (op == "Unsqueeze" && hasElems(0) && in(0)->type.rank() == 0) {
    define(c, n, 0, known(in(0)->type.dtype, *in(0)->elems, true));
    return true;
  }
  if (op == "Squeeze" && hasElems(0) && in(0)->type.rank() == 1 && in(0)->elems->size() == 1) {
    define(c, n, 0, known(in(0)->type.dtype, *in(0)->elems, false));
    return true;
  }
  if (op == "Reshape" && hasElems(0) && hasElems(1)) {
    auto shape = *in(1)->elems;
    if (shape.size() > 1) return false;
    if (shape.size() == 1 && !(shape[0].isConst() && (shape[0].constValue() == -1 ||
                                                      shape[0].constValue() == int64_t(in(0)->elems->size()))))
      return false;
    if (shape.empty() && in(0)->elems->size() != 1) return false;
    define(c, n, 0, known(in(0)->type.dtype, *in(0)->elems, shape.size() == 1));
    return true;
  }
  if (op == "Concat" && n.input_size() >= 1) {
    std::vector<DimExpr> e;
    for (int i = 0; i < n.input_size(); ++i) {
      if (!hasElems(i) || in(i)->type.rank() != 1 || in(i)->type.dtype != in(0)->type.dtype) return false;
      e.insert(e.end(), in(i)->elems->begin(), in(i)->elems->end());
    }
    define(c, n, 0, known(in(0)->type.dtype, e, true));
    return true;
  }
  if (op == "Slice" && hasElems(0) && in(0)->type.rank() == 1) {
    std::vector<int64_t> starts, ends, steps{1};
    if (c.opset < 10) {
      starts = attrInts(n, "starts").value_or(std::vector<int64_t>{});
      ends = attrInts(n, "ends").value_or(std::vector<int64_t>{});
    } else {
      if (!hasElems(1) || !hasElems(2) || (in(3) && !in(3)->elems) || (in(4) && !in(4)->elems)) return false;
      for (int i = 1; i <= 4; ++i)
        if (in(i))
          for (const auto& d : *in(i)->elems)
            if (!d.isConst()) return false;
      starts = constInts(c, n, 1, "starts");
      ends = constInts(c, n, 2, "ends");
      if (in(4)) steps = constInts(c, n, 4, "steps");
    }
    if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 || steps[0] == 0) return false;
    const auto& data = *in(0)->elems;
    int64_t len = int64_t(data.size()), s = starts[0], e = ends[0], st = steps[0];
    if (s < 0) s += len;
    if (e < 0) e += len;
    std::vector<DimExpr> r;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, len);
      e = std::clamp<int64_t>(e, 0, len);
      for (int64_t k = s; k < e; k += st) r.push_back(data[k]);
    } else {
      s = std::clamp<int64_t>(s, -1, len - 1);
      e = std::clamp<int64_t>(e, -1, len - 1);
      for (int64_t k = s; k > e; k += st) r.push_back(data[k]);
    }
    define(c, n, 0, known(in(0)->type.dtype, r, true));
    return true;
  }
  if (op == "ReduceProd" && hasElems(0) && in(0)->type.rank() == 1 && n.input_size() == 1) {
    DimExpr p(1);
    for (const auto& d : *in(0)->elems) p = p * d;
    define(c, n, 0, known(in(0)->type.dtype, {p}, attrInt(n, "keepdims", 1) != 0));
    return true;
  }
  if (op == "Where" && hasElems(0) && hasElems(1) && hasElems(2)) {
    const auto &cnd = *in(0)->elems, &x = *in(1)->elems, &y = *in(2)->elems;
    size_t len = std::max({cnd.size(), x.size(), y.size()});
    std::vector<DimExpr> r;
    for (size_t k = 0; k < len; ++k) {
      auto at = [&](const std::vector<DimExpr>& v) -> const DimExpr& { return v[v.size() == 1 ? 0 : k]; };
      if ((cnd.size() != 1 && cnd.size() != len) || (x.size() != 1 && x.size() != len) ||
          (y.size() != 1 && y.size() != len) || !at(cnd).isConst())
        return false;
      r.push_back(at(cnd).constValue() ? at(x) : at(y));
    }
    bool vector = in(0)->type.rank() == 1 || in(1)->type.rank() == 1 || in(2)->type.rank() == 1;
    define(c, n, 0, known(in(1)->type.dtype, r, vector));
    return true;
  }
  if (op == "ConstantOfShape" && hasElems(0)) {
    const auto& shape = *in(0)->elems;
    const auto* a = findAttr(n, "value");
    auto v = a ? tensorOf(a->t(), c.external) : nullptr;
    DType dt = v ? v->dtype : DType::F32;
    if (shape.size() != 1 || !shape[0].isConst() || shape[0].constValue() > 64 || !(isInteger(dt) || isBool(dt)))
      return false;
    int64_t val = v && v->numel() ? v->getI(0) : 0;
    define(c, n, 0, known(dt, std::vector<DimExpr>(shape[0].constValue(), DimExpr(val)), true));
    return true;
  }
  if (op == "Range" && hasElems(0) && hasElems(1) && hasElems(2) && in(0)->type.rank() == 0) {
    DimExpr s = (*in(0)->elems)[0], l = (*in(1)->elems)[0], d = (*in(2)->elems)[0];
    if (!s.isConst() || !l.isConst() || !d.isConst() || d.constValue() == 0) return false;
    std::vector<DimExpr> r;
    for (int64_t v = s.constValue(); d.constValue() > 0 ? v < l.constValue() : v > l.constValue(); v += d.constValue()) {
      if (r.size() > 64) return false;
      r.push_back(DimExpr(v));
    }
    define(c, n, 0, known(in(0)->type.dtype, r, true));
    return true;
  }
  return false;
}

}  // namespace dscc::frontend
