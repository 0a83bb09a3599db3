// Interpreter kernels for data movement and values (reshape ... gather, iota, constant, dim).
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "ir/InterpInternal.h"
#include "ir/Interpreter.h"
#include "ir/Npy.h"

namespace dscc::interp {
namespace {

// Fills `dst` (its shape fixed) from `src`: the element of dst at multi-index p
// is the element of src at flat index base + sum(p[d] * st[d]). Transpose,
// slice and broadcast are all this walk with different strides.
void stridedCopy(const Tensor& src, int64_t base, const Shape& st, Tensor& dst) {
  size_t es = dtypeSize(src.dtype), r = dst.shape.size();
  int64_t n = dst.numel();
  Shape pos(r, 0);
  int64_t at = base;
  for (int64_t k = 0; k < n; ++k) {
    std::memcpy(dst.bytes.data() + static_cast<size_t>(k) * es, src.bytes.data() + static_cast<size_t>(at) * es, es);
    for (size_t d = r; d-- > 0;) {
      if (++pos[d] < dst.shape[d]) {
        at += st[d];
        break;
      }
      at -= st[d] * (dst.shape[d] - 1);
      pos[d] = 0;
    }
  }
}

}  // namespace

Tensor permuted(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape xs = stridesOf(x.shape), shape(perm.size()), st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) shape[i] = x.shape[size_t(perm[i])], st[i] = xs[size_t(perm[i])];
  Tensor r = Tensor::zeros(x.dtype, shape);
  stridedCopy(x, 0, st, r);
  return r;
}

namespace {

// Every dim of result `i`'s type, which must all be known from the bindings.
bool knownTypeShape(OpCtx& c, Shape& out) {
  std::vector<std::optional<int64_t>> dims;
  if (!c.typeShape(0, dims)) return false;
  out.clear();
  for (size_t k = 0; k < dims.size(); ++k) {
    if (!dims[k])
      return c.fail("dim " + std::to_string(k) + " of the type of " + c.name() + " (" +
                    c.op.result()->type.dims[k].str() + ") is not known from the inputs");
    out.push_back(*dims[k]);
  }
  return true;
}

// Stores a scalar literal into element `i`, converting like the IR literal would.
bool storeLiteral(Tensor& t, int64_t i, const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::Float: t.setF(i, a.f); return true;
    case Attribute::Kind::Int:
      if (isFloat(t.dtype)) t.setF(i, static_cast<double>(a.i));
      else t.setI(i, a.i);
      return true;
    case Attribute::Kind::Bool: t.setI(i, a.b ? 1 : 0); return true;
    default: return false;
  }
}

// Flattens a nested dense literal row-major, checking its nesting against `shape`.
bool flattenDense(const std::vector<Attribute>& list, const Shape& shape, size_t level,
                  std::vector<const Attribute*>& flat, std::string& err) {
  if (static_cast<int64_t>(list.size()) != shape[level]) {
    err = "dense literal has " + std::to_string(list.size()) + " entries at depth " + std::to_string(level) +
          " but the type says " + std::to_string(shape[level]);
    return false;
  }
  for (const Attribute& e : list) {
    if (level + 1 < shape.size()) {
      if (e.kind != Attribute::Kind::List) {
        err = "dense literal is nested less deeply than the type's rank " + std::to_string(shape.size());
        return false;
      }
      if (!flattenDense(e.list, shape, level + 1, flat, err)) return false;
    } else {
      if (e.kind == Attribute::Kind::List) {
        err = "dense literal is nested more deeply than the type's rank " + std::to_string(shape.size());
        return false;
      }
      flat.push_back(&e);
    }
  }
  return true;
}

}  // namespace

bool runReshape(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  std::vector<std::optional<int64_t>> dims;
  if (!c.typeShape(0, dims)) return false;
  const Type& t = c.op.result()->type;
  int unknown = -1;
  int64_t known = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k]) {
      known *= *dims[k];
    } else if (unknown >= 0) {
      return c.fail("reshape to " + t.str() + " has more than one dim that the inputs do not determine");
    } else {
      unknown = static_cast<int>(k);
    }
  }
  int64_t n = x.numel();
  Shape shape(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) shape[k] = dims[k].value_or(0);
  if (unknown >= 0) {
    if (known == 0 || n % known != 0)
      return c.fail("reshape of " + x.typeStr() + " (" + std::to_string(n) + " elements) to " + t.str() +
                    " leaves no whole size for dim " + std::to_string(unknown));
    shape[static_cast<size_t>(unknown)] = n / known;
  } else if (known != n) {
    return c.fail("reshape of " + x.typeStr() + " (" + std::to_string(n) + " elements) to " +
                  typeStr(t.dtype, shape) + " (" + std::to_string(known) + " elements)");
  }
  if (x.dtype != t.dtype) return c.fail("reshape cannot change the dtype of " + x.typeStr() + " to " + t.str());
  Tensor r = x;
  r.shape = shape;
  out.push_back(std::move(r));
  return true;
}

bool runTranspose(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  size_t rank = x.rank();
  std::vector<int64_t> perm;
  bool present = false;
  if (!c.intListAttr("perm", perm, present)) return false;
  if (!present)
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != rank)
    return c.fail("perm of transpose has " + std::to_string(perm.size()) + " entries but the operand has rank " +
                  std::to_string(rank));
  std::vector<bool> seen(rank, false);
  Shape xs = stridesOf(x.shape), shape(rank), st(rank);
  for (size_t i = 0; i < rank; ++i) {
    auto p = normAxis(perm[i], rank);
    if (!p || seen[static_cast<size_t>(*p)]) return c.fail("perm of transpose is not a permutation of 0.." + std::to_string(rank - 1));
    seen[static_cast<size_t>(*p)] = true;
    shape[i] = x.shape[static_cast<size_t>(*p)];
    st[i] = xs[static_cast<size_t>(*p)];
  }
  Tensor r = Tensor::zeros(x.dtype, shape);
  stridedCopy(x, 0, st, r);
  out.push_back(std::move(r));
  return true;
}

bool runBroadcastTo(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  std::vector<std::optional<int64_t>> dims;
  if (!c.typeShape(0, dims)) return false;
  const Type& t = c.op.result()->type;
  if (x.rank() > dims.size())
    return c.fail("broadcast_to cannot lower the rank of " + x.typeStr() + " to " + t.str());
  size_t off = dims.size() - x.rank();
  Shape shape(dims.size()), st(dims.size(), 0), xs = stridesOf(x.shape);
  for (size_t k = 0; k < dims.size(); ++k) {
    // A dim the bindings do not fix yet takes the operand's size (numpy's -1).
    if (!dims[k] && k < off)
      return c.fail("dim " + std::to_string(k) + " of the type of broadcast_to (" + t.dims[k].str() +
                    ") is not known from the inputs");
    shape[k] = dims[k] ? *dims[k] : x.shape[k - off];
    if (k < off) continue;
    int64_t xd = x.shape[k - off];
    if (xd == shape[k]) st[k] = xs[k - off];
    else if (xd != 1)
      return c.fail("cannot broadcast " + x.typeStr() + " to " + typeStr(t.dtype, shape) + ": dim " +
                    std::to_string(k - off) + " is " + std::to_string(xd));
  }
  if (x.dtype != t.dtype) return c.fail("broadcast_to cannot change the dtype of " + x.typeStr() + " to " + t.str());
  Tensor r = Tensor::zeros(x.dtype, shape);
  stridedCopy(x, 0, st, r);
  out.push_back(std::move(r));
  return true;
}

bool runConcat(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& first = *c.in[0];
  size_t rank = first.rank();
  if (rank == 0) return c.fail("operands of concat must have rank 1 or more");
  size_t axis = 0;
  if (!c.axisAttr(rank, 0, true, axis)) return false;
  Shape shape = first.shape;
  shape[axis] = 0;
  for (const Tensor* t : c.in) {
    bool same = t->dtype == first.dtype && t->rank() == rank;
    for (size_t d = 0; same && d < rank; ++d) same = d == axis || t->shape[d] == first.shape[d];
    if (!same)
      return c.fail("operands of concat along axis " + std::to_string(axis) + " do not match: " + first.typeStr() +
                    " and " + t->typeStr());
    shape[axis] += t->shape[axis];
  }
  Tensor r = Tensor::zeros(first.dtype, shape);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < rank; ++d) inner *= shape[d];
  size_t es = dtypeSize(first.dtype);
  uint8_t* dst = r.bytes.data();
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor* t : c.in) {
      size_t chunk = static_cast<size_t>(t->shape[axis] * inner) * es;
      if (chunk == 0) continue;  // an empty operand has no data pointer (memcpy of NULL is UB: UBSan found it)
      std::memcpy(dst, t->bytes.data() + static_cast<size_t>(o) * chunk, chunk);
      dst += chunk;
    }
  out.push_back(std::move(r));
  return true;
}

bool runSlice(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  size_t rank = x.rank();
  std::vector<int64_t> axes, starts, ends, steps;
  bool hasAxes = false, hasStarts = false, hasEnds = false, hasSteps = false;
  if (!c.intListAttr("axes", axes, hasAxes) || !c.intListAttr("starts", starts, hasStarts) ||
      !c.intListAttr("ends", ends, hasEnds) || !c.intListAttr("steps", steps, hasSteps))
    return false;
  if (!hasStarts || !hasEnds) return c.fail("slice needs starts and ends attributes");
  if (!hasAxes)
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (!hasSteps) steps.assign(axes.size(), 1);
  if (starts.size() != axes.size() || ends.size() != axes.size() || steps.size() != axes.size())
    return c.fail("axes, starts, ends and steps of slice have different lengths");
  Shape xs = stridesOf(x.shape), shape = x.shape, st = xs;
  int64_t base = 0;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto ax = normAxis(axes[i], rank);
    if (!ax) return c.fail("axis " + std::to_string(axes[i]) + " of slice is out of range for rank " + std::to_string(rank));
    size_t a = static_cast<size_t>(*ax);
    if (seen[a]) return c.fail("axis " + std::to_string(axes[i]) + " of slice is repeated");
    seen[a] = true;
    int64_t D = x.shape[a], step = steps[i], start = starts[i], end = ends[i], len = 0;
    if (step == 0) return c.fail("step of slice along axis " + std::to_string(a) + " is 0");
    // numpy's slice.indices(D): wrap negatives once, then clamp.
    if (step > 0) {
      if (start < 0) start += D;
      if (end < 0) end += D;
      start = std::clamp<int64_t>(start, 0, D);
      end = std::clamp<int64_t>(end, 0, D);
      len = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      if (start < 0) start += D;
      if (end < 0) end += D;
      start = std::clamp<int64_t>(start, -1, D - 1);
      end = std::clamp<int64_t>(end, -1, D - 1);
      len = start > end ? (start - end - 1) / -step + 1 : 0;
    }
    shape[a] = len;
    st[a] = xs[a] * step;
    if (len > 0) base += start * xs[a];
  }
  Tensor r = Tensor::zeros(x.dtype, shape);
  stridedCopy(x, base, st, r);
  out.push_back(std::move(r));
  return true;
}

bool runGather(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& a = *c.in[0];
  const Tensor& idx = *c.in[1];
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    return c.fail("indices of gather must be i32 or i64, not " + std::string(dtypeName(idx.dtype)));
  if (a.rank() == 0) return c.fail("the operand of gather must have rank 1 or more");
  size_t axis = 0;
  if (!c.axisAttr(a.rank(), 0, false, axis)) return false;
  int64_t D = a.shape[axis], outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= a.shape[d];
  for (size_t d = axis + 1; d < a.rank(); ++d) inner *= a.shape[d];
  int64_t m = idx.numel();
  std::vector<int64_t> where(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) {
    int64_t v = idx.getI(j), w = v < 0 ? v + D : v;
    if (w < 0 || w >= D)
      return c.fail("gather index " + std::to_string(v) + " is out of range for dim " + std::to_string(axis) +
                    " of size " + std::to_string(D));
    where[static_cast<size_t>(j)] = w;
  }
  Shape shape(a.shape.begin(), a.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), a.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, a.shape.end());
  Tensor r = Tensor::zeros(a.dtype, shape);
  size_t chunk = static_cast<size_t>(inner) * dtypeSize(a.dtype);
  uint8_t* dst = r.bytes.data();
  if (chunk == 0) {  // nothing to copy, and the tensors may have no data pointer (memcpy of NULL is UB)
    out.push_back(std::move(r));
    return true;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      std::memcpy(dst, a.bytes.data() + static_cast<size_t>(o * D + where[static_cast<size_t>(j)]) * chunk, chunk);
      dst += chunk;
    }
  out.push_back(std::move(r));
  return true;
}

bool runIota(OpCtx& c, std::vector<Tensor>& out) {
  Shape shape;
  if (!knownTypeShape(c, shape)) return false;
  size_t axis = 0;
  if (!c.axisAttr(shape.size(), 0, true, axis)) return false;
  Tensor r = Tensor::zeros(c.outDType(), shape);
  int64_t inner = 1, len = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  int64_t n = r.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = (i / inner) % len;
    if (isFloat(r.dtype)) r.setF(i, static_cast<double>(v));
    else r.setI(i, v);
  }
  out.push_back(std::move(r));
  return true;
}

bool runConstant(OpCtx& c, std::vector<Tensor>& out) {
  const Attribute* v = c.op.attr("value");
  if (!v) return c.fail("constant has no value");
  const Type& t = c.op.result()->type;

  if (v->kind == Attribute::Kind::File && v->data) {
    std::vector<std::optional<int64_t>> dims;
    if (!c.typeShape(0, dims)) return false;
    const Tensor& d = *v->data;
    bool match = d.dtype == t.dtype && d.rank() == dims.size();
    for (size_t k = 0; match && k < dims.size(); ++k) match = !dims[k] || *dims[k] == d.shape[k];
    if (!match) return c.fail("constant file '" + v->s + "' holds " + d.typeStr() + " but the type says " + t.str());
    out.push_back(d);
    return true;
  }
  if (v->kind == Attribute::Kind::File) {
    std::filesystem::path p(v->s);
    int file = c.op.loc.file >= 0 ? c.op.loc.file : v->loc.file;
    // Relative paths name files next to the .dsc file, not in the working directory.
    if (p.is_relative() && file >= 0)
      p = std::filesystem::path(c.diags.sources().name(file)).parent_path() / p;
    std::string err;
    auto tensor = readNpy(p.string(), &err);
    if (!tensor) return c.fail("cannot read constant file '" + v->s + "': " + err);
    std::vector<std::optional<int64_t>> dims;
    if (!c.typeShape(0, dims)) return false;
    bool match = tensor->dtype == t.dtype && tensor->rank() == dims.size();
    for (size_t k = 0; match && k < dims.size(); ++k) match = !dims[k] || *dims[k] == tensor->shape[k];
    if (!match)
      return c.fail("constant file '" + v->s + "' holds " + tensor->typeStr() + " but the type says " + t.str());
    out.push_back(std::move(*tensor));
    return true;
  }

  Shape shape;
  if (!knownTypeShape(c, shape)) return false;
  Tensor r = Tensor::zeros(t.dtype, shape);
  int64_t n = r.numel();
  if (v->kind == Attribute::Kind::Dense) {
    std::vector<const Attribute*> flat;
    std::string err;
    if (shape.empty()) {
      // A scalar's dense literal is a single element.
      if (v->list.size() != 1 || v->list[0].kind == Attribute::Kind::List)
        return c.fail("dense literal for " + t.str() + " must hold exactly one element");
      flat.push_back(&v->list[0]);
    } else if (!flattenDense(v->list, shape, 0, flat, err)) {
      return c.fail(err);
    }
    for (int64_t i = 0; i < n; ++i)
      if (!storeLiteral(r, i, *flat[static_cast<size_t>(i)]))
        return c.fail("dense literal element " + flat[static_cast<size_t>(i)]->str() + " is not a number or bool");
  } else {
    const Attribute* lit = v;
    if (v->kind == Attribute::Kind::Splat) {
      if (v->list.empty()) return c.fail("splat literal has no value");
      lit = &v->list[0];
    }
    // A scalar literal with a larger type fills it, like a splat.
    for (int64_t i = 0; i < n; ++i)
      if (!storeLiteral(r, i, *lit)) return c.fail("constant value " + lit->str() + " is not a number or bool");
  }
  out.push_back(std::move(r));
  return true;
}

bool runDim(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  size_t axis = 0;
  if (!c.axisAttr(x.rank(), 0, true, axis)) return false;
  Tensor r = Tensor::zeros(c.outDType(), {});
  r.setI(0, x.shape[axis]);
  out.push_back(std::move(r));
  return true;
}

}  // namespace dscc::interp

namespace dscc {

bool loadFileConstants(Module& m, DiagEngine& diags, const std::string& baseDir) {
  bool ok = true;
  for (auto& f : m.funcs)
    walkOps(f->ops, [&](Operation& op) {
      if (op.kind != OpKind::Constant || op.results.size() != 1) return;
      const Attribute* v = op.attr("value");
      if (!v || v->kind != Attribute::Kind::File || v->data) return;
      Attribute a = *v;
      if (!baseDir.empty() && std::filesystem::path(a.s).is_relative()) {
        Attribute resolved = a;
        resolved.s = (std::filesystem::path(baseDir) / a.s).string();
        op.setAttr("value", resolved);
      }
      DimBindings env;
      interp::OpCtx c{op, {}, env, diags};
      std::vector<Tensor> out;
      bool read = interp::runConstant(c, out) && !out.empty();
      op.setAttr("value", a);
      if (!read) {
        ok = false;
        return;
      }
      a.data = std::make_shared<const Tensor>(std::move(out[0]));
      op.setAttr("value", std::move(a));
    });
  return ok;
}

}  // namespace dscc
