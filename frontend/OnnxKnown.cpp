// Import-time folding of small integer tensors of any rank whose elements are known dim expressions ("size values"):
// data movement (Reshape, Transpose, Slice, Concat, Gather, Squeeze, Unsqueeze, Expand, Flatten) and elementwise
// integer arithmetic with broadcasting, so that shape data routed through matrices (TorchScript's F.pad reverses its
// pads as a [-1, 2] matrix) stays known.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <climits>

#include "frontend/OnnxInternal.h"

namespace dscc::frontend {

OValue knownValue(DType dt, const std::vector<int64_t>& shape, std::vector<DimExpr> e) {
  OValue o;
  o.type.dtype = dt;
  for (int64_t d : shape) o.type.dims.push_back(DimExpr(d));
  o.elems = std::move(e);
  return o;
}

std::optional<std::vector<int64_t>> knownShape(const OValue& v) {
  if (!v.elems) return std::nullopt;
  std::vector<int64_t> s;
  int64_t count = 1;
  for (const DimExpr& d : v.type.dims) {
    if (!d.isConst()) return std::nullopt;
    s.push_back(d.constValue());
    count *= d.constValue();
  }
  if (count != int64_t(v.elems->size())) return std::nullopt;
  return s;
}

namespace {

using Shape = std::vector<int64_t>;

int64_t countOf(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape stridesOf(const Shape& s) {
  Shape st(s.size(), 1);
  for (int64_t k = int64_t(s.size()) - 2; k >= 0; --k) st[k] = st[k + 1] * s[k + 1];
  return st;
}

// Visits every index of `shape` in row-major order.
template <class Fn>
void forEachIndex(const Shape& shape, const Fn& fn) {
  int64_t total = countOf(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < total; ++k) {
    fn(idx);
    for (int64_t a = int64_t(shape.size()) - 1; a >= 0; --a) {
      if (++idx[a] < shape[a]) break;
      idx[a] = 0;
    }
  }
}

// An input whose contents are known, with its static shape.
struct Known {
  DType dtype;
  Shape shape;
  const std::vector<DimExpr>* e;
};

std::optional<Known> knownInput(Ctx& c, const onnx::NodeProto& n, int i) {
  OValue* v = input(c, n, i);
  if (!v) return std::nullopt;
  auto s = knownShape(*v);
  if (!s) return std::nullopt;
  return Known{v->type.dtype, *s, &*v->elems};
}

// The elements of input `i` when known and all constant (axes, a target shape, indices, bounds).
std::optional<std::vector<int64_t>> constInput(Ctx& c, const onnx::NodeProto& n, int i) {
  OValue* v = input(c, n, i);
  if (!v || !v->elems) return std::nullopt;
  std::vector<int64_t> r;
  for (const DimExpr& d : *v->elems) {
    if (!d.isConst()) return std::nullopt;
    r.push_back(d.constValue());
  }
  return r;
}

// Axes from the attribute before `inputFrom`, from input 1 after; nullopt when the input is given but not constant.
std::optional<std::vector<int64_t>> axesOf(Ctx& c, const onnx::NodeProto& n, int64_t inputFrom) {
  if (c.opset < inputFrom) return attrInts(n, "axes").value_or(std::vector<int64_t>{});
  if (!input(c, n, 1)) return std::vector<int64_t>{};
  return constInput(c, n, 1);
}

// Defines output 0 as the elements of `x` at the flat indices `from` (row-major over `shape`); false when too many.
bool defineMoved(Ctx& c, const onnx::NodeProto& n, const Known& x, const Shape& shape, const std::vector<int64_t>& from) {
  if (countOf(shape) > kMaxKnownElems) return false;
  std::vector<DimExpr> e;
  e.reserve(from.size());
  for (int64_t f : from) e.push_back((*x.e)[f]);
  define(c, n, 0, knownValue(x.dtype, shape, std::move(e)));
  return true;
}

bool foldReshape(Ctx& c, const onnx::NodeProto& n, const Known& x) {
  auto target = constInput(c, n, 1);
  if (!target) return false;
  bool allowzero = attrInt(n, "allowzero", 0) != 0;
  Shape out;
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < target->size(); ++k) {
    int64_t d = (*target)[k];
    if (d == 0 && !allowzero) {
      if (k >= x.shape.size()) return false;
      d = x.shape[k];
    }
    if (d == -1) {
      if (infer >= 0) return false;
      infer = int64_t(k);
      out.push_back(1);
      continue;
    }
    if (d < 0 || d > kMaxKnownElems) return false;
    out.push_back(d);
    known *= d;
    if (known > kMaxKnownElems) return false;
  }
  int64_t count = countOf(x.shape);
  if (infer >= 0) {
    if (known == 0 || count % known != 0) return false;
    out[infer] = count / known;
  } else if (known != count) {
    return false;
  }
  std::vector<int64_t> from(count);
  for (int64_t k = 0; k < count; ++k) from[k] = k;
  return defineMoved(c, n, x, out, from);
}

bool foldTranspose(Ctx& c, const onnx::NodeProto& n, const Known& x) {
  int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> perm = attrInts(n, "perm").value_or(std::vector<int64_t>{});
  if (perm.empty())
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  if (int64_t(perm.size()) != rank) return false;
  Shape out;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) return false;
    seen[p] = true;
    out.push_back(x.shape[p]);
  }
  Shape st = stridesOf(x.shape);
  std::vector<int64_t> from;
  forEachIndex(out, [&](const std::vector<int64_t>& idx) {
    int64_t f = 0;
    for (int64_t a = 0; a < rank; ++a) f += idx[a] * st[perm[a]];
    from.push_back(f);
  });
  return defineMoved(c, n, x, out, from);
}

// Slice with constant starts, ends, axes and steps (negative steps too), ONNX's clamping.
bool foldSlice(Ctx& c, const onnx::NodeProto& n, const Known& x) {
  int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = attrInts(n, "starts").value_or(std::vector<int64_t>{});
    ends = attrInts(n, "ends").value_or(std::vector<int64_t>{});
    axes = attrInts(n, "axes").value_or(std::vector<int64_t>{});
  } else {
    auto s = constInput(c, n, 1), e = constInput(c, n, 2);
    if (!s || !e) return false;
    starts = *s, ends = *e;
    if (input(c, n, 3)) {
      auto a = constInput(c, n, 3);
      if (!a) return false;
      axes = *a;
    }
    if (input(c, n, 4)) {
      auto st = constInput(c, n, 4);
      if (!st) return false;
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return false;
  std::vector<int64_t> first(rank, 0), step(rank, 1);
  Shape out = x.shape;
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank || seen[a] || steps[k] == 0 || steps[k] == INT64_MIN) return false;
    seen[a] = true;
    int64_t d = x.shape[a], s = starts[k], e = ends[k], st = steps[k];
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t len;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      len = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      len = s > e ? (s - e - 1) / -st + 1 : 0;
    }
    first[a] = s;
    step[a] = st;
    out[a] = len;
  }
  Shape st = stridesOf(x.shape);
  std::vector<int64_t> from;
  forEachIndex(out, [&](const std::vector<int64_t>& idx) {
    int64_t f = 0;
    for (int64_t a = 0; a < rank; ++a) f += (first[a] + idx[a] * step[a]) * st[a];
    from.push_back(f);
  });
  return defineMoved(c, n, x, out, from);
}

bool foldConcat(Ctx& c, const onnx::NodeProto& n) {
  if (n.input_size() < 1) return false;
  std::vector<Known> xs;
  for (int i = 0; i < n.input_size(); ++i) {
    auto x = knownInput(c, n, i);
    if (!x || x->dtype != (xs.empty() ? x->dtype : xs[0].dtype) ||
        x->shape.size() != (xs.empty() ? x->shape.size() : xs[0].shape.size()))
      return false;
    xs.push_back(*x);
  }
  int64_t rank = int64_t(xs[0].shape.size()), axis = attrInt(n, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  Shape out = xs[0].shape;
  out[axis] = 0;
  for (const Known& x : xs) {
    for (int64_t a = 0; a < rank; ++a)
      if (a != axis && x.shape[a] != out[a]) return false;
    out[axis] += x.shape[axis];
  }
  if (countOf(out) > kMaxKnownElems) return false;
  // Row-major: for each index before the axis, each input's block of its axis and the dims after it in turn.
  int64_t outer = countOf(Shape(out.begin(), out.begin() + axis));
  std::vector<DimExpr> e;
  for (int64_t o = 0; o < outer; ++o)
    for (const Known& x : xs) {
      int64_t block = countOf(Shape(x.shape.begin() + axis, x.shape.end()));
      e.insert(e.end(), x.e->begin() + o * block, x.e->begin() + (o + 1) * block);
    }
  define(c, n, 0, knownValue(xs[0].dtype, out, std::move(e)));
  return true;
}

bool foldGather(Ctx& c, const onnx::NodeProto& n, const Known& x) {
  auto idx = constInput(c, n, 1);
  OValue* iv = input(c, n, 1);
  auto ishape = iv ? knownShape(*iv) : std::nullopt;
  int64_t rank = int64_t(x.shape.size()), axis = attrInt(n, "axis", 0);
  if (!idx || !ishape || rank == 0) return false;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ishape->begin(), ishape->end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  int64_t d = x.shape[axis];
  std::vector<int64_t> rows;
  for (int64_t i : *idx) {
    if (i < -d || i >= d) throw ImportError("index " + std::to_string(i) + " is out of range");
    rows.push_back(i < 0 ? i + d : i);
  }
  int64_t outer = countOf(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t inner = countOf(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  std::vector<int64_t> from;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r : rows)
      for (int64_t k = 0; k < inner; ++k) from.push_back((o * d + r) * inner + k);
  return defineMoved(c, n, x, out, from);
}

bool foldUnsqueeze(Ctx& c, const onnx::NodeProto& n, const Known& x) {
  auto axes = axesOf(c, n, 13);
  if (!axes || axes->empty()) return false;
  int64_t rank = int64_t(x.shape.size() + axes->size());
  std::vector<bool> added(rank, false);
  for (int64_t a : *axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || added[a]) return false;
    added[a] = true;
  }
  Shape out;
  size_t k = 0;
  for (int64_t a = 0; a < rank; ++a) out.push_back(added[a] ? 1 : x.shape[k++]);
  std::vector<int64_t> from(x.e->size());
  for (size_t f = 0; f < from.size(); ++f) from[f] = int64_t(f);
  return defineMoved(c, n, x, out, from);
}

bool foldSqueeze(Ctx& c, const onnx::NodeProto& n, const Known& x) {
  auto axes = axesOf(c, n, 13);
  if (!axes) return false;
  int64_t rank = int64_t(x.shape.size());
  std::vector<bool> drop(rank, false);
  if (axes->empty()) {
    for (int64_t a = 0; a < rank; ++a) drop[a] = x.shape[a] == 1;
  } else {
    for (int64_t a : *axes) {
      if (a < 0) a += rank;
      if (a < 0 || a >= rank || x.shape[a] != 1) return false;
      drop[a] = true;
    }
  }
  Shape out;
  for (int64_t a = 0; a < rank; ++a)
    if (!drop[a]) out.push_back(x.shape[a]);
  std::vector<int64_t> from(x.e->size());
  for (size_t f = 0; f < from.size(); ++f) from[f] = int64_t(f);
  return defineMoved(c, n, x, out, from);
}

bool foldFlatten(Ctx& c, const onnx::NodeProto& n, const Known& x) {
  int64_t rank = int64_t(x.shape.size()), axis = attrInt(n, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return false;
  Shape out{countOf(Shape(x.shape.begin(), x.shape.begin() + axis)), countOf(Shape(x.shape.begin() + axis, x.shape.end()))};
  std::vector<int64_t> from(x.e->size());
  for (size_t f = 0; f < from.size(); ++f) from[f] = int64_t(f);
  return defineMoved(c, n, x, out, from);
}

// Numpy's broadcast of `shapes`; nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes)
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[rank - s.size() + k];
      if (s[k] == o || s[k] == 1) continue;
      if (o != 1) return std::nullopt;
      o = s[k];
    }
  return out;
}

// The flat index into an operand of shape `s` of the element broadcast to index `idx` of the result (rank `idx.size()`).
int64_t broadcastFrom(const Shape& s, const Shape& st, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  size_t lead = idx.size() - s.size();
  for (size_t k = 0; k < s.size(); ++k)
    if (s[k] != 1) f += idx[lead + k] * st[k];
  return f;
}

// Each result element of `xs` broadcast together, from `fn` of the operands' elements there; false when they do not
// broadcast, the result is too large, or `fn` cannot decide an element.
template <class Fn>
bool foldElementwise(Ctx& c, const onnx::NodeProto& n, const std::vector<Known>& xs, DType dt, const Fn& fn) {
  std::vector<Shape> shapes;
  for (const Known& x : xs) shapes.push_back(x.shape);
  auto out = broadcastShapes(shapes);
  if (!out || countOf(*out) > kMaxKnownElems) return false;
  std::vector<Shape> strides;
  for (const Known& x : xs) strides.push_back(stridesOf(x.shape));
  std::vector<DimExpr> e;
  bool ok = true;
  forEachIndex(*out, [&](const std::vector<int64_t>& idx) {
    if (!ok) return;
    std::vector<const DimExpr*> args;
    for (size_t i = 0; i < xs.size(); ++i) args.push_back(&(*xs[i].e)[broadcastFrom(xs[i].shape, strides[i], idx)]);
    std::optional<DimExpr> r = fn(args);
    if (!r) ok = false;
    else e.push_back(std::move(*r));
  });
  if (!ok) return false;
  define(c, n, 0, knownValue(dt, *out, std::move(e)));
  return true;
}

int64_t truncDiv(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }

// Elementwise integer arithmetic and comparisons on known values (numpy broadcasting).
bool foldBinary(Ctx& c, const onnx::NodeProto& n, const std::string& op) {
  if (n.input_size() != 2) return false;
  auto a = knownInput(c, n, 0), b = knownInput(c, n, 1);
  if (!a || !b || a->dtype != b->dtype) return false;
  bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual";
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
  auto fn = [&](const std::vector<const DimExpr*>& args) -> std::optional<DimExpr> {
    const DimExpr &p = *args[0], &q = *args[1];
    if (op == "Add") return p + q;
    if (op == "Sub") return p - q;
    if (op == "Mul") return p * q;
    if (op == "Div") {
      if (p.isConst() && q.isConst()) {
        // x / 0 and INT64_MIN / -1 (which traps on x86) are left to the program.
        if (q.constValue() == 0 || (q.constValue() == -1 && p.constValue() == INT64_MIN)) return std::nullopt;
        return DimExpr(truncDiv(p.constValue(), q.constValue()));
      }
      if (positive(q)) return DimExpr::floorDiv(p, q);  // sizes are non-negative: floor is truncation
      return std::nullopt;
    }
    if (op == "Mod") {
      if (p.isConst() && q.isConst() && q.constValue() != 0) {
        int64_t m = q.constValue() == -1 ? 0 : p.constValue() % q.constValue();  // INT64_MIN % -1 traps
        if (m != 0 && (m < 0) != (q.constValue() < 0)) m += q.constValue();
        return DimExpr(m);
      }
      if (positive(q)) return DimExpr::mod(p, q);
      return std::nullopt;
    }
    if (op == "Max") return simplified(c, DimExpr::max(p, q));
    if (op == "Min") return simplified(c, DimExpr::min(p, q));
    if (compare) {
      // Decided by the solver where the facts decide it (a dim is never -1:
      // TorchScript's `expand(-1)` compares a shape with -1).
      bool swap = op == "Greater" || op == "GreaterOrEqual";
      std::string rel = op == "Equal" ? "==" : (op == "Less" || op == "Greater") ? "<" : "<=";
      Tri t = compareDims(c, rel, swap ? q : p, swap ? p : q);
      if (t == Tri::Unknown) return std::nullopt;
      return DimExpr(t == Tri::Proved ? 1 : 0);
    }
    if (op == "And" || op == "Or" || op == "Xor") {
      if (!p.isConst() || !q.isConst()) return std::nullopt;
      bool u = p.constValue() != 0, w = q.constValue() != 0;
      return DimExpr(op == "And" ? (u && w) : op == "Or" ? (u || w) : (u != w));
    }
    return std::nullopt;
  };
  return foldElementwise(c, n, {*a, *b}, compare ? DType::I1 : a->dtype, fn);
}

}  // namespace

bool foldKnown(Ctx& c, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Concat") return foldConcat(c, n);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Max" || op == "Min" ||
      op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
      op == "And" || op == "Or" || op == "Xor")
    return foldBinary(c, n, op);
  auto x = knownInput(c, n, 0);
  if (!x) return false;
  if (op == "Identity") {
    define(c, n, 0, *input(c, n, 0));
    return true;
  }
  if (op == "Reshape") return foldReshape(c, n, *x);
  if (op == "Transpose") return foldTranspose(c, n, *x);
  if (op == "Slice") return foldSlice(c, n, *x);
  if (op == "Gather") return foldGather(c, n, *x);
  if (op == "Unsqueeze") return foldUnsqueeze(c, n, *x);
  if (op == "Squeeze") return foldSqueeze(c, n, *x);
  if (op == "Flatten") return foldFlatten(c, n, *x);
  if (op == "Expand") {
    auto shape = constInput(c, n, 1);
    if (!shape) return false;
    for (int64_t d : *shape)
      if (d < 0) return false;
    auto out = broadcastShapes({x->shape, *shape});
    if (!out || countOf(*out) > kMaxKnownElems) return false;
    Shape st = stridesOf(x->shape);
    std::vector<int64_t> from;
    forEachIndex(*out, [&](const std::vector<int64_t>& idx) { from.push_back(broadcastFrom(x->shape, st, idx)); });
    return defineMoved(c, n, *x, *out, from);
  }
  if (op == "Cast") {
    DType to = dtypeOf(int(attrInt(n, "to", 1)));
    if (to != DType::I64 && to != DType::I32) return false;
    return foldElementwise(c, n, {*x}, to, [](const std::vector<const DimExpr*>& a) { return std::optional(*a[0]); });
  }
  if (op == "Neg")
    return foldElementwise(c, n, {*x}, x->dtype, [](const std::vector<const DimExpr*>& a) { return std::optional(-*a[0]); });
  if (op == "Not")
    return foldElementwise(c, n, {*x}, x->dtype, [](const std::vector<const DimExpr*>& a) -> std::optional<DimExpr> {
      if (!a[0]->isConst()) return std::nullopt;
      return DimExpr(a[0]->constValue() == 0);
    });
  if (op == "Where") {
    auto p = knownInput(c, n, 1), q = knownInput(c, n, 2);
    if (!p || !q) return false;
    return foldElementwise(c, n, {*x, *p, *q}, p->dtype, [](const std::vector<const DimExpr*>& a) -> std::optional<DimExpr> {
      if (!a[0]->isConst()) return std::nullopt;
      return a[0]->constValue() ? *a[1] : *a[2];
    });
  }
  return false;
}

}  // namespace dscc::frontend
