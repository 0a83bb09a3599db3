// Opset 23's transformer operators as IR programs: RMSNormalization, RotaryEmbedding and Attention.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>

#include "frontend/OnnxBuilder.h"
#include "frontend/OnnxInternal.h"

namespace dscc::frontend {

namespace {

// Opset 23's RotaryEmbedding: the first rotary_embedding_dim channels of
// each head rotated by the cos/sin of its position (halves, or interleaved
// pairs), the rest kept; input [b, heads, s, d] or [b, s, heads*d]
// (num_heads); caches [b, s, rd/2], or [positions, rd/2] read at position_ids.
Value* rotary(NodeBuilder& b, const onnx::NodeProto& n) {
  Value* x = b.in(0);
  Value *cosv = b.in(1), *sinv = b.in(2);
  OValue* pos = input(b.c, n, 3);
  bool inter = attrInt(n, "interleaved", 0) != 0;
  int64_t heads = attrInt(n, "num_heads", 0);
  size_t r = x->type.rank();
  if (r != 3 && r != 4) throw ImportError("the input must have rank 3 or 4, not " + std::to_string(r));
  const auto& xd = x->type.dims;
  Value* t;  // [b, s, heads, d]
  if (r == 4) {
    t = b.transpose(x, {0, 2, 1, 3});
  } else {
    if (heads <= 0) throw ImportError("num_heads is required for a rank-3 input");
    t = b.reshape(x, {xd[0], xd[1], DimExpr(heads), DimExpr::div(xd[2], DimExpr(heads))});
  }
  const DimExpr& hd = t->type.dims[3];
  if (!hd.isConst()) throw ImportError("the head size must be a number, not " + hd.str());
  int64_t d = hd.constValue(), rd = attrInt(n, "rotary_embedding_dim", 0);
  if (rd == 0) rd = d;
  if (rd < 2 || rd > d || rd % 2) throw ImportError("rotary_embedding_dim " + std::to_string(rd) + " does not fit head size " + std::to_string(d));
  auto slice = [&](Value* v, int64_t from, int64_t to, int64_t step) {
    return b.op(OpKind::Slice, {v}, {{"axes", intList({3})}, {"starts", intList({from})}, {"ends", intList({to})},
                                     {"steps", intList({step})}});
  };
  Value* xr = rd == d ? t : slice(t, 0, rd, 1);
  if (pos) {
    Value* p = b.c.use(*pos, n.input(3));
    cosv = b.op(OpKind::Gather, {cosv, p}, {{"axis", Attribute::makeInt(0)}});
    sinv = b.op(OpKind::Gather, {sinv, p}, {{"axis", Attribute::makeInt(0)}});
  }
  if (cosv->type.rank() != 3) throw ImportError("the cos/sin caches must give [batch, seq, rotary_embedding_dim/2]");
  auto heads1 = [&](Value* v) {
    const auto& cd = v->type.dims;
    return b.reshape(v, {cd[0], cd[1], DimExpr(1), cd[2]});
  };
  cosv = heads1(cosv), sinv = heads1(sinv);
  Value* x1 = inter ? slice(xr, 0, rd, 2) : slice(xr, 0, rd / 2, 1);
  Value* x2 = inter ? slice(xr, 1, rd, 2) : slice(xr, rd / 2, rd, 1);
  Value* re = b.sub(b.mul(cosv, x1), b.mul(sinv, x2));
  Value* im = b.add(b.mul(sinv, x1), b.mul(cosv, x2));
  Value* rot;
  const auto& td = t->type.dims;
  if (inter) {
    std::vector<DimExpr> d5{td[0], td[1], td[2], DimExpr(rd / 2), DimExpr(1)};
    Value* pairs = b.op(OpKind::Concat, {b.reshape(re, d5), b.reshape(im, d5)}, {{"axis", Attribute::makeInt(4)}});
    rot = b.reshape(pairs, {td[0], td[1], td[2], DimExpr(rd)});
  } else {
    rot = b.op(OpKind::Concat, {re, im}, {{"axis", Attribute::makeInt(3)}});
  }
  if (rd < d) rot = b.op(OpKind::Concat, {rot, slice(t, rd, d, 1)}, {{"axis", Attribute::makeInt(3)}});
  return r == 4 ? b.transpose(rot, {0, 2, 1, 3}) : b.reshape(rot, xd);
}

// Opset 23's Attention: softmax(Q Kᵀ · scale + bias) V per head, with the
// past key/value concatenated before (present_key/present_value outputs),
// grouped-query heads repeated, softcap, a boolean or additive mask (a mask
// shorter than the keys padded with -inf), a causal mask aligned to the end
// (a query attends keys up to its own position plus the past's length), and
// rows whose bias masks every key giving 0. Inputs [b, heads, s, d] or
// [b, s, heads*d] (q_num_heads, kv_num_heads).
void attention(NodeBuilder& b, const onnx::NodeProto& n) {
  Ctx& c = b.c;
  Value *q = b.in(0), *k = b.in(1), *v = b.in(2);
  OValue* maskIn = input(c, n, 3);
  OValue *pastK = input(c, n, 4), *pastV = input(c, n, 5);
  if (input(c, n, 6)) throw ImportError("nonpad_kv_seqlen (opset 24) is not supported");
  if ((pastK == nullptr) != (pastV == nullptr)) throw ImportError("past_key and past_value must be given together");
  size_t r = q->type.rank();
  if (r != 3 && r != 4) throw ImportError("Q must have rank 3 or 4, not " + std::to_string(r));
  int64_t qh = attrInt(n, "q_num_heads", 0), kvh = attrInt(n, "kv_num_heads", 0);
  auto heads = [&](Value* x, int64_t h) {  // [b, s, h*d] -> [b, h, s, d]
    if (r == 4) return x;
    if (h <= 0) throw ImportError("q_num_heads and kv_num_heads are required for rank-3 inputs");
    const auto& d = x->type.dims;
    return b.transpose(b.reshape(x, {d[0], d[1], DimExpr(h), DimExpr::div(d[2], DimExpr(h))}), {0, 2, 1, 3});
  };
  q = heads(q, qh), k = heads(k, kvh), v = heads(v, kvh);
  if (pastK) {
    k = b.op(OpKind::Concat, {c.use(*pastK, n.input(4)), k}, {{"axis", Attribute::makeInt(2)}});
    v = b.op(OpKind::Concat, {c.use(*pastV, n.input(5)), v}, {{"axis", Attribute::makeInt(2)}});
  }
  b.out(k, 1);
  b.out(v, 2);
  const DimExpr &hq = q->type.dims[1], &hk = k->type.dims[1], &sq = q->type.dims[2], &kv = k->type.dims[2];
  if (!hq.isConst() || !hk.isConst() || hk.constValue() <= 0 || hq.constValue() % hk.constValue())
    throw ImportError("the query heads (" + hq.str() + ") must be a multiple of the key heads (" + hk.str() + ")");
  auto repeat = [&](Value* x) {  // each of hk heads repeated hq/hk times in place (np.repeat)
    int64_t rep = hq.constValue() / hk.constValue();
    if (rep == 1) return x;
    const auto& d = x->type.dims;
    Value* t = b.reshape(x, {d[0], d[1], DimExpr(1), d[2], d[3]});
    t = b.op(OpKind::BroadcastTo, {t}, {}, Type{x->type.dtype, {d[0], d[1], DimExpr(rep), d[2], d[3]}});
    return b.reshape(t, {d[0], hq, d[2], d[3]});
  };
  Value *kr = repeat(k), *vr = repeat(v);
  const DimExpr& hd = q->type.dims[3];
  double scale = attrFloat(n, "scale", 0);
  if (!findAttr(n, "scale")) {
    if (!hd.isConst()) throw ImportError("the head size must be a number for the default scale, not " + hd.str());
    scale = 1 / std::sqrt(double(hd.constValue()));
  }
  Value* s = b.op(OpKind::Matmul, {b.mul(q, b.k(q, scale)), b.transpose(kr, {0, 1, 3, 2})});
  double cap = attrFloat(n, "softcap", 0);
  if (cap > 0) s = b.mul(b.un(OpKind::Tanh, b.mul(s, b.k(s, 1 / cap))), b.k(s, cap));
  if (n.output_size() > 3 && !n.output(3).empty()) {
    if (attrInt(n, "qk_matmul_output_mode", 0) != 0) throw ImportError("only qk_matmul_output_mode 0 is supported");
    b.out(s, 3);
  }
  const double ninf = -std::numeric_limits<double>::infinity();
  Value* bias = nullptr;
  if (maskIn) {
    Value* m = c.use(*maskIn, n.input(3));
    if (isBool(m->type.dtype)) m = b.sel(m, b.k(s, 0), b.k(s, ninf));
    else m = b.cast(m, s->type.dtype);
    const DimExpr& ml = m->type.dims.back();
    if (compareDims(c, "==", ml, kv) != Tri::Proved) {  // shorter: the missing keys are masked
      std::vector<DimExpr> pd = m->type.dims;
      pd.back() = kv - ml;
      m = b.op(OpKind::Concat, {m, b.fill(m, ninf, pd)}, {{"axis", Attribute::makeInt(int64_t(m->type.rank()) - 1)}});
    }
    bias = m;
  }
  if (attrInt(n, "is_causal", 0) != 0) {
    Value* i = b.iota(DType::I64, {sq, kv}, 0);
    Value* j = b.iota(DType::I64, {sq, kv}, 1);
    if (pastK) i = b.add(i, c.dimValue(pastK->type.dims[2]));
    Value* causal = b.sel(b.cmp(OpKind::Le, j, i), b.k(s, 0), b.k(s, ninf));
    bias = bias ? b.add(bias, causal) : causal;
  }
  DType dt = s->type.dtype;
  int64_t prec = attrInt(n, "softmax_precision", 0);
  DType sdt = prec ? dtypeOf(int(prec)) : dt;
  Value* logits = b.cast(bias ? b.add(s, bias) : s, sdt);
  Value* p = b.cast(b.op(OpKind::Softmax, {logits}, {{"axis", Attribute::makeInt(-1)}}), dt);
  if (bias) {  // a row whose bias masks every key: 0, not the NaN of a softmax over -inf
    Value* top = b.op(OpKind::ReduceMax, {bias}, {{"axes", intList({int64_t(bias->type.rank()) - 1})},
                                                  {"keepdims", Attribute::makeBool(true)}});
    p = b.sel(b.cmp(OpKind::Eq, top, b.k(top, ninf)), b.k(p, 0), p);
  }
  Value* y = b.op(OpKind::Matmul, {p, vr});
  if (r == 3) {
    const auto& d = y->type.dims;
    y = b.reshape(b.transpose(y, {0, 2, 1, 3}), {d[0], d[2], d[1] * d[3]});
  }
  b.out(y, 0);
}

}  // namespace

bool convertOpset23(Ctx& c, const onnx::NodeProto& n) {
  NodeBuilder b{c, n};
  const std::string& op = n.op_type();
  if (op == "RMSNormalization") {
    // Opset 23: x / sqrt(mean(x^2 over axis..last) + epsilon) * scale, in f32
    // for narrower inputs (stash_type 1, the only one defined).
    Value* x = b.in(0);
    Value* scale = b.in(1);
    size_t r = x->type.rank();
    int64_t axis = b.axis(attrInt(n, "axis", -1), r);
    if (attrInt(n, "stash_type", 1) != 1) throw ImportError("only stash_type 1 (float32) is defined");
    DType dt = x->type.dtype;
    Value* xf = b.cast(x, isFloat(dt) && dtypeSize(dt) < 4 ? DType::F32 : dt);
    std::vector<int64_t> axes;
    for (size_t d = size_t(axis); d < r; ++d) axes.push_back(int64_t(d));
    Value* ms = b.op(OpKind::ReduceMean, {b.mul(xf, xf)}, {{"axes", intList(axes)}, {"keepdims", Attribute::makeBool(true)}});
    Value* inv = b.un(OpKind::Rsqrt, b.add(ms, b.k(ms, attrFloat(n, "epsilon", 1e-5))));
    b.out(b.mul(b.cast(b.mul(xf, inv), dt), scale));
    return true;
  }
  if (op == "RotaryEmbedding") {
    b.out(rotary(b, n));
    return true;
  }
  if (op == "Attention") {
    attention(b, n);
    return true;
  }
  return false;
}

}  // namespace dscc::frontend
