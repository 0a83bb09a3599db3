// More ONNX operators, decomposed into dscc ops: hyperbolic math, Round, Mod, Hardmax, Trilu, Pad, OneHot, depth/space.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <limits>

#include "frontend/OnnxBuilder.h"
#include "frontend/OnnxInternal.h"
#include "ir/Verifier.h"

namespace dscc::frontend {

namespace {

using B = NodeBuilder;


// Round half to even: floor, then up past one half, or at one half to the even neighbour.
Value* roundEven(B& b, Value* x) {
  Value* fl = b.un(OpKind::Floor, x);
  Value* frac = b.sub(x, fl);
  Value* half = b.k(x, 0.5);
  Value* up = b.add(fl, b.k(x, 1));
  Value* odd = b.sub(fl, b.mul(b.k(x, 2), b.un(OpKind::Floor, b.div(fl, b.k(x, 2)))));
  Value* tie = b.add(fl, odd);
  return b.sel(b.cmp(OpKind::Gt, frac, half), up, b.sel(b.cmp(OpKind::Lt, frac, half), fl, tie));
}

// data[c_0, ..., c_{m-1}, rest...] for i64 index tensors c_j of one shape S:
// one `gather` from data flattened to [D_0 * ... * D_{m-1}, rest...] at the
// linear index (linearIndex), so GatherND and GatherElements read each element
// once (no one-hot selection). The result's dims are S + rest.
Value* gatherAt(B& b, Value* data, const std::vector<Value*>& coords, const std::vector<bool>& trusted) {
  const std::vector<DimExpr>& dims = data->type.dims;
  size_t m = coords.size();
  Value* lin = linearIndex(b, dims, coords, trusted);
  std::vector<DimExpr> flat{product(dims, 0, m)};
  flat.insert(flat.end(), dims.begin() + long(m), dims.end());
  Value* rows = m == 1 ? data : b.reshape(data, flat);
  return b.op(OpKind::Gather, {rows, lin}, {{"axis", Attribute::makeInt(0)}});
}

// NegativeLogLikelihoodLoss over `logp` [N, C, d...] at integer targets
// [N, d...]: the picked entries by a one-hot mask (so out-of-range ignored
// targets need no gather), weighted, reduced as `reduction` says.
Value* nll(B& b, Value* logp, Value* t, Value* w, const std::string& reduction, std::optional<int64_t> ignore) {
  const auto& d = logp->type.dims;
  size_t r = d.size();
  if (r < 2) throw ImportError("the input must have rank >= 2");
  DType dt = logp->type.dtype;
  t = b.cast(t, DType::I64);
  std::vector<DimExpr> td = t->type.dims, bd(r, DimExpr(1));
  td.insert(td.begin() + 1, DimExpr(1));
  Value* t1 = b.reshape(t, td);
  Value* mask = b.cast(b.cmp(OpKind::Eq, t1, b.iota(DType::I64, d, 1)), dt);
  if (ignore) mask = b.mul(mask, b.cast(b.cmp(OpKind::Ne, t1, b.c.scalar(DType::I64, double(*ignore))), dt));
  if (w) {
    bd[1] = d[1];
    mask = b.mul(mask, b.reshape(w, bd));
  }
  Attrs ax1 = {{"axes", intList({1})}, {"keepdims", Attribute::makeBool(false)}};
  Value* loss = b.un(OpKind::Neg, b.op(OpKind::ReduceSum, {b.mul(logp, mask)}, ax1));
  if (reduction == "none") return loss;
  Value* total = b.op(OpKind::ReduceSum, {loss}, {{"keepdims", Attribute::makeBool(false)}});
  if (reduction == "sum") return total;
  if (reduction != "mean") throw ImportError("reduction '" + reduction + "' is not supported");
  Value* weight = b.op(OpKind::ReduceSum, {mask}, {{"keepdims", Attribute::makeBool(false)}});
  return b.div(total, weight);
}

// atan by three half-angle steps, atan(t) = 2 atan(t / (1 + sqrt(1 + t^2))),
// which bring any angle below pi/16 (|u| < 0.2), then the odd Taylor series
// to u^15 (remainder below 1e-11 relative).
Value* atan(B& b, Value* x) {
  Value* u = x;
  for (int i = 0; i < 3; ++i)
    u = b.div(u, b.add(b.k(x, 1), b.un(OpKind::Sqrt, b.add(b.k(x, 1), b.mul(u, u)))));
  Value* u2 = b.mul(u, u);
  // Horner over v = u^2 with c_i = (-1)^i / (2i + 1), i = 7 .. 0.
  Value* sum = b.k(x, -1.0 / 15);
  for (int i = 6; i >= 0; --i) sum = b.add(b.k(x, (i % 2 ? -1.0 : 1.0) / (2 * i + 1)), b.mul(u2, sum));
  return b.mul(b.k(x, 8), b.mul(u, sum));
}

}  // namespace

Value* linearIndex(B& b, const std::vector<DimExpr>& dims, const std::vector<Value*>& coords,
                   const std::vector<bool>& trusted) {
  size_t m = coords.size();
  Value *lin = nullptr, *bad = nullptr;
  for (size_t j = 0; j < m; ++j) {
    Value* cj = coords[j];
    Value* dj = b.c.dimValue(dims[j]);
    if (!trusted[j]) {
      Value* zero = b.k(cj, 0);
      cj = b.sel(b.cmp(OpKind::Lt, cj, zero), b.add(cj, dj), cj);
      Value* outside = b.op(OpKind::Or, {b.cmp(OpKind::Lt, cj, zero), b.cmp(OpKind::Ge, cj, dj)});
      bad = bad ? b.op(OpKind::Or, {bad, outside}) : outside;
    }
    lin = lin ? b.add(b.mul(lin, dj), cj) : cj;
  }
  if (bad) lin = b.sel(bad, b.c.dimValue(product(dims, 0, m)), lin);
  return lin;
}

bool convertMore(Ctx& c, const onnx::NodeProto& n) {
  if (convertOpset23(c, n)) return true;
  if (convertVision(c, n)) return true;
  if (convertResize(c, n)) return true;
  if (convertRecurrent(c, n)) return true;
  if (convertScatter(c, n)) return true;
  B b{c, n};
  const std::string& op = n.op_type();
  if (op == "If") {
    // A condition known at import (a constant, or shape arithmetic the facts
    // decide): the branch taken is imported in place of the node.
    OValue& cnd = need(c, n, 0);
    if (!cnd.elems || cnd.elems->size() != 1 || !(*cnd.elems)[0].isConst())
      throw ImportError("the condition must be known when importing (a constant, or computed from shapes and decided "
                        "by the --where facts); data-dependent control flow is not supported");
    bool then = (*cnd.elems)[0].constValue() != 0;
    const auto* branch = findAttr(n, then ? "then_branch" : "else_branch");
    if (!branch || !branch->has_g()) throw ImportError(std::string("no ") + (then ? "then_branch" : "else_branch"));
    const onnx::GraphProto& g = branch->g();
    if (g.output_size() != n.output_size())
      throw ImportError("the branch has " + std::to_string(g.output_size()) + " outputs for the node's " +
                        std::to_string(n.output_size()));
    for (const auto& t : g.initializer()) c.vals[t.name()] = constantValue(tensorOf(t, c.external));
    for (const auto& inner : g.node()) {
      for (int i = 0; i < inner.input_size(); ++i)
        if (!inner.input(i).empty() && !c.vals.count(inner.input(i)))
          throw ImportError("branch node '" + inner.name() + "' (" + inner.op_type() + "): input '" + inner.input(i) +
                            "' is not defined before it");
      try {
        if (!foldNode(c, inner)) convertNode(c, inner);
      } catch (const ImportError& e) {
        throw ImportError("in its " + std::string(then ? "then" : "else") + " branch, node '" + inner.name() + "' (" +
                          inner.op_type() + "): " + e.what());
      }
    }
    for (int i = 0; i < g.output_size(); ++i) {
      auto it = c.vals.find(g.output(i).name());
      if (it == c.vals.end()) throw ImportError("the branch's output '" + g.output(i).name() + "' is not computed");
      define(c, n, i, it->second);
    }
    return true;
  }
  if (op == "NegativeLogLikelihoodLoss" || op == "SoftmaxCrossEntropyLoss") {
    std::optional<int64_t> ignore;
    if (findAttr(n, "ignore_index")) ignore = attrInt(n, "ignore_index", 0);
    Value* x = b.in(0);
    Value* w = input(c, n, 2) ? b.in(2) : nullptr;
    if (op == "SoftmaxCrossEntropyLoss")
      x = b.op(OpKind::LogSoftmax, {x}, {{"axis", Attribute::makeInt(1)}});
    b.out(nll(b, x, b.in(1), w, attrString(n, "reduction", "mean"), ignore));
    if (n.output_size() > 1 && !n.output(1).empty()) define(c, n, 1, c.wrap(x));
    return true;
  }
  if (op == "GatherElements") {
    // out[i] = data[i_0, ..., idx[i], ..., i_{r-1}]: one gather at the linear index.
    Value *data = b.in(0), *idx = b.cast(b.in(1), DType::I64);
    size_t r = data->type.rank();
    if (idx->type.rank() != r) throw ImportError("data and indices must have the same rank");
    int64_t ax = b.axis(attrInt(n, "axis", 0), r);
    std::vector<Value*> coords;
    std::vector<bool> trusted;
    for (size_t d = 0; d < r; ++d) {
      coords.push_back(int64_t(d) == ax ? idx : b.iota(DType::I64, idx->type.dims, int64_t(d)));
      trusted.push_back(int64_t(d) != ax);
    }
    b.out(gatherAt(b, data, coords, trusted));
    return true;
  }
  if (op == "GatherND") {
    // out[s, rest] = data[batch(s), idx[s, 0], ..., idx[s, k-1], rest] for s
    // over indices' dims but the last (k entries): one gather at the linear index.
    Value *data = b.in(0), *idx = b.cast(b.in(1), DType::I64);
    int64_t bd = attrInt(n, "batch_dims", 0);
    size_t q = idx->type.rank(), r = data->type.rank();
    if (q < 1) throw ImportError("the indices need rank 1 or more");
    const DimExpr& kd = idx->type.dims[q - 1];
    if (!kd.isConst()) throw ImportError("the last dim of the indices must be a number, not " + kd.str());
    int64_t k = kd.constValue();
    if (k < 1) throw ImportError("the indices' last dim is " + std::to_string(k) + "; it must be 1 or more");
    if (bd < 0 || size_t(bd) >= q || size_t(bd) > r || size_t(bd + k) > r)
      throw ImportError("batch_dims " + std::to_string(bd) + " and " + std::to_string(k) +
                        " index entries do not fit data of rank " + std::to_string(r) + " and indices of rank " +
                        std::to_string(q));
    std::vector<DimExpr> s(idx->type.dims.begin(), idx->type.dims.end() - 1);
    std::vector<Value*> coords;
    std::vector<bool> trusted;
    for (int64_t d = 0; d < bd; ++d) {
      coords.push_back(b.iota(DType::I64, s, d));
      trusted.push_back(true);
    }
    for (int64_t j = 0; j < k; ++j) {
      Value* cj = b.op(OpKind::Slice, {idx}, {{"axes", intList({int64_t(q) - 1})}, {"starts", intList({j})},
                                              {"ends", intList({j + 1})}});
      coords.push_back(b.reshape(cj, s));
      trusted.push_back(false);
    }
    b.out(gatherAt(b, data, coords, trusted));
    return true;
  }
  if (op == "Einsum") {
    // Each operand's diagonals taken first (a repeated letter: elements off
    // the diagonal zeroed, one axis summed away), '...' spelled out as letters
    // of its own (right-aligned, numpy-broadcast), then each operand
    // transposed into one letter order (output letters, then summed ones),
    // broadcast, multiplied, and summed over the letters not in the output.
    std::string eq;
    for (char ch : attrString(n, "equation", "")) if (ch != ' ') eq += ch;
    size_t arrow = eq.find("->");
    std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms(1);
    for (char ch : lhs) {
      if (ch == ',') terms.emplace_back();
      else terms.back().push_back(ch);
    }
    if (int(terms.size()) != n.input_size()) throw ImportError("the equation has " + std::to_string(terms.size()) + " operands");
    std::vector<Value*> vals;
    for (size_t i = 0; i < terms.size(); ++i) vals.push_back(b.in(int(i)));
    // Letters for the ellipsis dims: ones the equation does not use.
    std::string spare;
    for (char ch = 'A'; ch <= 'Z'; ++ch) if (eq.find(ch) == std::string::npos) spare += ch;
    for (char ch = 'a'; ch <= 'z'; ++ch) if (eq.find(ch) == std::string::npos) spare += ch;
    size_t ell = 0;  // the most dims any '...' stands for
    for (size_t i = 0; i < terms.size(); ++i) {
      size_t dots = terms[i].find("...");
      if (dots == std::string::npos) continue;
      size_t named = terms[i].size() - 3;
      if (vals[i]->type.rank() < named) throw ImportError("operand " + std::to_string(i) + " has too small a rank");
      ell = std::max(ell, vals[i]->type.rank() - named);
    }
    if (ell > spare.size()) throw ImportError("'...' stands for too many dims");
    std::string ellL = spare.substr(0, ell);
    for (size_t i = 0; i < terms.size(); ++i)
      if (size_t dots = terms[i].find("..."); dots != std::string::npos) {
        size_t e = vals[i]->type.rank() - (terms[i].size() - 3);
        terms[i] = terms[i].substr(0, dots) + ellL.substr(ell - e) + terms[i].substr(dots + 3);
      }
    for (size_t i = 0; i < terms.size(); ++i) {
      std::string& t = terms[i];
      for (char ch : t)
        if (!std::isalpha(static_cast<unsigned char>(ch))) throw ImportError("bad equation '" + eq + "'");
      if (vals[i]->type.rank() != t.size())
        throw ImportError("operand " + std::to_string(i) + " has rank " + std::to_string(vals[i]->type.rank()));
      // Diagonals: keep the elements where the two axes of a repeated letter agree, sum the second away.
      for (size_t p1 = 0; p1 < t.size(); ++p1)
        for (size_t p2 = t.size(); p2-- > p1 + 1;) {
          if (t[p2] != t[p1]) continue;
          Value* v = vals[i];
          std::vector<DimExpr> md(v->type.rank(), DimExpr(1));
          md[p1] = v->type.dims[p1];
          md[p2] = v->type.dims[p2];
          Value* on = b.cmp(OpKind::Eq, b.iota(DType::I64, md, int64_t(p1)), b.iota(DType::I64, md, int64_t(p2)));
          if (isBool(v->type.dtype)) throw ImportError("bool operands are not supported");
          v = b.sel(on, v, b.k(v, 0));
          vals[i] = b.op(OpKind::ReduceSum, {v}, {{"axes", intList({int64_t(p2)})}, {"keepdims", Attribute::makeBool(false)}});
          t.erase(p2, 1);
        }
    }
    std::map<char, int> count;
    for (const auto& t : terms)
      for (char ch : t) ++count[ch];
    std::string outL;
    if (arrow != std::string::npos) {
      outL = eq.substr(arrow + 2);
      if (size_t dots = outL.find("..."); dots != std::string::npos) outL = outL.substr(0, dots) + ellL + outL.substr(dots + 3);
      for (char ch : outL)
        if (!count.count(ch) || std::count(outL.begin(), outL.end(), ch) > 1)
          throw ImportError("bad output letters in '" + eq + "'");
    } else {
      outL = ellL;
      for (auto& [ch, k] : count) if (k == 1 && ellL.find(ch) == std::string::npos) outL += ch;
    }
    std::string order = outL;
    for (const auto& t : terms)
      for (char ch : t) if (order.find(ch) == std::string::npos) order += ch;
    Value* acc = nullptr;
    for (size_t i = 0; i < terms.size(); ++i) {
      Value* v = vals[i];
      const std::string& t = terms[i];
      std::map<char, DimExpr> dimOf;
      for (size_t p = 0; p < t.size(); ++p) dimOf[t[p]] = v->type.dims[p];
      std::vector<int64_t> perm;
      for (char ch : order)
        if (size_t p = t.find(ch); p != std::string::npos) perm.push_back(int64_t(p));
      bool identity = true;
      for (size_t k2 = 0; k2 < perm.size(); ++k2) identity &= perm[k2] == int64_t(k2);
      if (!identity) v = b.transpose(v, perm);
      std::vector<DimExpr> full;
      for (char ch : order) full.push_back(dimOf.count(ch) ? dimOf[ch] : DimExpr(1));
      if (full != v->type.dims) v = b.reshape(v, full);
      acc = acc ? b.mul(acc, v) : v;
    }
    std::vector<int64_t> sum;
    for (size_t k2 = outL.size(); k2 < order.size(); ++k2) sum.push_back(int64_t(k2));
    if (!sum.empty())
      acc = b.op(OpKind::ReduceSum, {acc}, {{"axes", intList(sum)}, {"keepdims", Attribute::makeBool(false)}});
    b.out(acc);
    return true;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    Value* x = b.in(0);
    std::vector<int64_t> ax;
    for (size_t d = 2; d < x->type.rank(); ++d) ax.push_back(int64_t(d));
    if (ax.empty()) throw ImportError("the input must have rank >= 3");
    OpKind kd = op == "GlobalMaxPool" ? OpKind::ReduceMax : OpKind::ReduceMean;
    b.out(b.op(kd, {x}, {{"axes", intList(ax)}, {"keepdims", Attribute::makeBool(true)}}));
    return true;
  }
  if (op == "EyeLike") {
    Value* x = b.in(0);
    if (x->type.rank() != 2) throw ImportError("the input must have rank 2");
    DType dt = findAttr(n, "dtype") ? dtypeOf(int(attrInt(n, "dtype", 1))) : x->type.dtype;
    const auto& d = x->type.dims;
    Value* diff = b.sub(b.iota(DType::I64, d, 1), b.iota(DType::I64, d, 0));
    b.out(b.cast(b.cmp(OpKind::Eq, diff, c.scalar(DType::I64, double(attrInt(n, "k", 0)))), dt));
    return true;
  }
  if (op == "Atan" || op == "Asin" || op == "Acos") {
    Value* x = b.in(0);
    if (op == "Atan") {
      b.out(atan(b, x));
      return true;
    }
    // asin(x) = 2 atan(x / (1 + sqrt(1 - x^2))), finite at x = +-1.
    Value* r = b.un(OpKind::Sqrt, b.sub(b.k(x, 1), b.mul(x, x)));
    Value* as = b.mul(b.k(x, 2), atan(b, b.div(x, b.add(b.k(x, 1), r))));
    b.out(op == "Asin" ? as : b.sub(b.k(x, M_PI / 2), as));
    return true;
  }
  if (op == "Sinh" || op == "Cosh") {
    Value* x = b.in(0);
    Value *e = b.un(OpKind::Exp, x), *em = b.un(OpKind::Exp, b.un(OpKind::Neg, x));
    b.out(b.mul(op == "Sinh" ? b.sub(e, em) : b.add(e, em), b.k(x, 0.5)));
    return true;
  }
  if (op == "Asinh" || op == "Acosh") {
    Value* x = b.in(0);
    Value* r = b.un(OpKind::Sqrt, b.add(b.mul(x, x), b.k(x, op == "Asinh" ? 1 : -1)));
    b.out(b.un(OpKind::Log, b.add(x, r)));
    return true;
  }
  if (op == "Atanh") {
    Value* x = b.in(0);
    Value* one = b.k(x, 1);
    b.out(b.mul(b.k(x, 0.5), b.un(OpKind::Log, b.div(b.add(one, x), b.sub(one, x)))));
    return true;
  }
  if (op == "Round") {
    b.out(roundEven(b, b.in(0)));
    return true;
  }
  if (op == "IsInf") {
    Value* x = b.in(0);
    double inf = std::numeric_limits<double>::infinity();
    bool pos = attrInt(n, "detect_positive", 1) != 0, neg = attrInt(n, "detect_negative", 1) != 0;
    Value* p = b.cmp(OpKind::Eq, x, b.k(x, inf));
    Value* m = b.cmp(OpKind::Eq, x, b.k(x, -inf));
    b.out(pos && neg ? b.op(OpKind::Or, {p, m}) : pos ? p : neg ? m : b.cmp(OpKind::Ne, x, x));
    return true;
  }
  if (op == "Shrink") {
    Value* x = b.in(0);
    double l = attrFloat(n, "lambd", 0.5), bias = attrFloat(n, "bias", 0.0);
    Value* lo = b.sel(b.cmp(OpKind::Lt, x, b.k(x, -l)), b.add(x, b.k(x, bias)), b.k(x, 0));
    b.out(b.sel(b.cmp(OpKind::Gt, x, b.k(x, l)), b.sub(x, b.k(x, bias)), lo));
    return true;
  }
  if (op == "Mod") {
    Value *x = b.in(0), *y = b.in(1);
    bool fmod = attrInt(n, "fmod", 0) != 0;
    if (isFloat(x->type.dtype)) {
      if (!fmod) throw ImportError("fmod = 0 on floats is not allowed");
      Value* t = b.div(x, y);
      Value* q = b.sel(b.cmp(OpKind::Lt, t, b.k(t, 0)), b.un(OpKind::Ceil, t), b.un(OpKind::Floor, t));
      b.out(b.sub(x, b.mul(q, y)));
      return true;
    }
    Value* r = b.sub(x, b.mul(b.div(x, y), y));  // C remainder: integer division truncates
    if (!fmod) {
      Value* zero = b.k(r, 0);
      Value* differ = b.cmp(OpKind::Ne, b.cmp(OpKind::Lt, r, zero), b.cmp(OpKind::Lt, y, zero));
      Value* fix = b.op(OpKind::And, {b.cmp(OpKind::Ne, r, zero), differ});
      r = b.sel(fix, b.add(r, y), r);
    }
    b.out(r);
    return true;
  }
  if (op == "Hardmax") {
    Value* x = b.in(0);
    size_t r = x->type.rank();
    int64_t ax = b.axis(attrInt(n, "axis", c.opset >= 13 ? -1 : 1), r);
    std::vector<DimExpr> d = x->type.dims;
    Value* v = x;
    if (c.opset < 13 && ax != int64_t(r) - 1) v = b.reshape(x, {product(d, 0, ax), product(d, ax, r)}), ax = 1;
    Value* idx = b.op(OpKind::ArgMax, {v}, {{"axis", Attribute::makeInt(ax)}, {"keepdims", Attribute::makeBool(true)}});
    Value* io = b.iota(DType::I64, v->type.dims, ax);
    Value* h = b.cast(b.cmp(OpKind::Eq, io, idx), x->type.dtype);
    b.out(h->type.dims == d ? h : b.reshape(h, d));
    return true;
  }
  if (op == "Trilu") {
    Value* x = b.in(0);
    size_t r = x->type.rank();
    if (r < 2) throw ImportError("the input must have rank >= 2");
    DimExpr kk(0);
    if (input(c, n, 1)) kk = knownInts(c, n, 1, "k")[0];
    std::vector<DimExpr> d = {x->type.dims[r - 2], x->type.dims[r - 1]};
    Value* diff = b.sub(b.iota(DType::I64, d, 1), b.iota(DType::I64, d, 0));  // col - row
    Value* kv = c.dimValue(kk);
    Value* keep = attrInt(n, "upper", 1) ? b.cmp(OpKind::Ge, diff, kv) : b.cmp(OpKind::Le, diff, kv);
    b.out(b.sel(keep, x, b.k(x, 0)));
    return true;
  }
  if (op == "Pad") {
    Value* x = b.in(0);
    size_t r = x->type.rank();
    std::string mode = attrString(n, "mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
      throw ImportError("mode '" + mode + "' is not supported (constant, edge, reflect and wrap are)");
    std::vector<int64_t> pads, axes;
    // Pads computed from sizes (Swin pads its feature map up to whole windows: (4 - H % 4) % 4), in constant and
    // edge mode, where a band of p elements is a fill or a broadcast whatever p is; each must be >= 0 at every
    // size the facts allow (a negative one would be a slice whose sign the program does not know).
    std::vector<DimExpr> symPads;
    double value = 0;
    if (c.opset < 11) {
      pads = attrInts(n, "pads").value_or(std::vector<int64_t>{});
      value = attrFloat(n, "value", 0.0);
    } else {
      std::vector<DimExpr> known = knownInts(c, n, 1, "pads");
      bool allConst = std::all_of(known.begin(), known.end(), [](const DimExpr& d) { return d.isConst(); });
      if (!allConst && mode != "constant" && mode != "edge")
        throw ImportError("pads (input 1) computed from sizes are supported in constant and edge mode only, not '" +
                          mode + "'");
      for (const DimExpr& d : known) {
        if (!d.isConst() && compareDims(c, "<=", DimExpr(0), d) != Tri::Proved)
          throw ImportError("pads (input 1) computed from sizes must be >= 0 at every size the facts allow, but " +
                            d.str() + " may not be");
        pads.push_back(d.isConst() ? d.constValue() : 0);
      }
      if (!allConst) symPads = known;
      if (OValue* cv = input(c, n, 2)) {
        if (!cv->cst) throw ImportError("the constant value must be known when importing");
        value = cv->cst->getF(0);
      }
      if (input(c, n, 3))
        for (int64_t a : constInts(c, n, 3, "axes")) axes.push_back(b.axis(a, r));
    }
    if (axes.empty())
      for (size_t a = 0; a < r; ++a) axes.push_back(int64_t(a));
    if (pads.size() != 2 * axes.size()) throw ImportError("pads must have two entries per axis");
    Value* v = x;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i], lo = pads[i], hi = pads[i + axes.size()];
      // A pad computed from sizes (>= 0, proved above): its band's length is that dim expression.
      DimExpr loDim(lo), hiDim(hi);
      if (!symPads.empty()) loDim = symPads[i], hiDim = symPads[i + axes.size()];
      if (lo < 0 || hi < 0) {
        DimExpr dim = v->type.dims[a];
        v = b.op(OpKind::Slice, {v}, {{"axes", intList({a})}, {"starts", Attribute::makeList({Attribute::makeInt(std::max<int64_t>(-lo, 0))})},
                                      {"ends", Attribute::makeList({Attribute::makeDim(dim - DimExpr(std::max<int64_t>(-hi, 0)))})}});
        lo = std::max<int64_t>(lo, 0), hi = std::max<int64_t>(hi, 0);
      }
      std::vector<Value*> parts;
      std::vector<DimExpr> d = v->type.dims;
      DimExpr len = d[a];
      // A slice of v along a: [start, end) by step (ends may be dims).
      auto cut = [&](int64_t start, DimExpr end, int64_t step) {
        return b.op(OpKind::Slice, {v}, {{"axes", intList({a})}, {"starts", intList({start})},
                                         {"ends", Attribute::makeList({Attribute::makeDim(end)})},
                                         {"steps", intList({step})}});
      };
      // The band of `p` elements before (before=true) or after v along a.
      auto band = [&](int64_t p, bool before) -> Value* {
        d[a] = before ? loDim : hiDim;
        if (mode == "constant") return b.fill(v, value, d);
        if (mode == "edge")  // the first or last slice, repeated
          return b.op(OpKind::BroadcastTo, {before ? cut(0, DimExpr(1), 1) : cut(-1, len, 1)}, {},
                      Type{v->type.dtype, d});
        if (mode == "reflect")  // x[p], ..., x[1] before; x[n-2], ..., x[n-1-p] after
          return before ? cut(p, DimExpr(0), -1) : cut(-2, DimExpr(-2 - p), -1);
        return before ? cut(-p, len, 1) : cut(0, DimExpr(p), 1);  // wrap
      };
      if (lo > 0 || !loDim.isConst()) parts.push_back(band(lo, true));
      parts.push_back(v);
      if (hi > 0 || !hiDim.isConst()) parts.push_back(band(hi, false));
      if (parts.size() > 1) v = b.op(OpKind::Concat, parts, {{"axis", Attribute::makeInt(a)}});
    }
    b.out(v);
    return true;
  }
  if (op == "OneHot") {
    Value* idx = b.cast(b.in(0), DType::I64);
    OValue& dep0 = need(c, n, 1);
    std::vector<DimExpr> depth;
    if (dep0.cst && isFloat(dep0.cst->dtype)) depth.push_back(DimExpr(int64_t(dep0.cst->getF(0))));
    else depth = knownInts(c, n, 1, "depth");
    OValue& vals = need(c, n, 2);
    Value* values = c.use(vals, n.input(2));
    size_t r = idx->type.rank() + 1;
    int64_t ax = b.axis(attrInt(n, "axis", -1), r);
    DimExpr dep = depth[0];
    Value* dv = c.dimValue(dep);
    idx = b.sel(b.cmp(OpKind::Lt, idx, b.k(idx, 0)), b.add(idx, dv), idx);
    std::vector<DimExpr> ud = idx->type.dims, od = idx->type.dims;
    ud.insert(ud.begin() + ax, DimExpr(1));
    od.insert(od.begin() + ax, dep);
    Value* hit = b.cmp(OpKind::Eq, b.reshape(idx, ud), b.iota(DType::I64, od, ax));
    auto pick = [&](int64_t i) {
      return b.reshape(b.op(OpKind::Slice, {values}, {{"axes", intList({0})}, {"starts", intList({i})}, {"ends", intList({i + 1})}}), {});
    };
    b.out(b.sel(hit, pick(1), pick(0)));
    return true;
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    Value* x = b.in(0);
    if (x->type.rank() != 4) throw ImportError("the input must have rank 4");
    DimExpr bs(attrInt(n, "blocksize", 1));
    const auto& d = x->type.dims;
    if (op == "SpaceToDepth") {
      Value* t = b.reshape(x, {d[0], d[1], DimExpr::div(d[2], bs), bs, DimExpr::div(d[3], bs), bs});
      t = b.transpose(t, {0, 3, 5, 1, 2, 4});
      b.out(b.reshape(t, {d[0], d[1] * bs * bs, DimExpr::div(d[2], bs), DimExpr::div(d[3], bs)}));
      return true;
    }
    DimExpr cc = DimExpr::div(d[1], bs * bs);
    bool crd = attrString(n, "mode", "DCR") == "CRD";
    Value* t = crd ? b.reshape(x, {d[0], cc, bs, bs, d[2], d[3]}) : b.reshape(x, {d[0], bs, bs, cc, d[2], d[3]});
    t = crd ? b.transpose(t, {0, 1, 4, 2, 5, 3}) : b.transpose(t, {0, 3, 4, 1, 5, 2});
    b.out(b.reshape(t, {d[0], cc, d[2] * bs, d[3] * bs}));
    return true;
  }
  if (op == "MeanVarianceNormalization") {
    Value* x = b.in(0);
    auto ax = attrInts(n, "axes").value_or(std::vector<int64_t>{0, 2, 3});
    Attrs a = {{"axes", intList(ax)}, {"keepdims", Attribute::makeBool(true)}};
    Value* mean = b.op(OpKind::ReduceMean, {x}, a);
    Value* dev = b.sub(x, mean);
    Value* var = b.op(OpKind::ReduceMean, {b.mul(dev, dev)}, a);
    b.out(b.div(dev, b.add(b.un(OpKind::Sqrt, var), b.k(x, 1e-9))));
    return true;
  }
  return false;
}

}  // namespace dscc::frontend
