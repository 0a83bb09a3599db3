// Chains of elementwise ops after a conv as oneDNN post-ops (ConvEpilogue.h).
#include "ir/ConvEpilogue.h"

#include <algorithm>
#include <limits>

namespace dscc {

bool scalarConstant(const Value* v, double& out) {
  if (!v || !v->def || v->def->kind != OpKind::Constant || v->type.dtype != DType::F32 || v->type.rank() != 0)
    return false;
  const Attribute* a = v->def->attr("value");
  if (a && a->kind == Attribute::Kind::Splat && !a->list.empty()) a = &a->list[0];
  if (a && a->kind == Attribute::Kind::Dense && a->list.size() == 1) a = &a->list[0];
  if (!a || (a->kind != Attribute::Kind::Float && a->kind != Attribute::Kind::Int)) return false;
  // The value the program computes with: the literal rounded to f32.
  out = static_cast<float>(a->kind == Attribute::Kind::Float ? a->f : static_cast<double>(a->i));
  return true;
}

namespace {

/// `op` is binary `kind` of `x` and a scalar constant (either side, where `commutes`): its value.
bool withConstant(const Operation* op, OpKind kind, const Value* x, double& c, bool commutes = true) {
  if (op->kind != kind || op->operands.size() != 2) return false;
  if (op->operands[0] == x && scalarConstant(op->operands[1], c)) return true;
  return commutes && op->operands[1] == x && scalarConstant(op->operands[0], c);
}

/// ops[i..i+4] are the importer's HardSwish of `x`: mul(x, 1/6), add 1/2, min 1, max 0, mul by x.
bool hardswishAt(const std::vector<const Operation*>& ops, size_t i, const Value* x) {
  if (i + 5 > ops.size()) return false;
  double k[4];
  const Value* h = x;
  const OpKind kinds[4] = {OpKind::Mul, OpKind::Add, OpKind::Min, OpKind::Max};
  for (int s = 0; s < 4; ++s) {
    if (!withConstant(ops[i + s], kinds[s], h, k[s])) return false;
    h = ops[i + s]->result();
  }
  if (k[0] != static_cast<float>(1.0 / 6) || k[1] != 0.5 || k[2] != 1.0 || k[3] != 0.0) return false;
  const Operation* m = ops[i + 4];
  return m->kind == OpKind::Mul && m->operands.size() == 2 &&
         ((m->operands[0] == x && m->operands[1] == h) || (m->operands[0] == h && m->operands[1] == x));
}

}  // namespace

std::string matchConvEpilogue(const Value* convOut, const std::vector<const Operation*>& ops,
                              std::vector<ConvPostOp>& out) {
  out.clear();
  if (convOut->type.dtype != DType::F32) return "the conv's result is not f32";
  const double inf = std::numeric_limits<double>::infinity();
  const Value* cur = convOut;
  using K = ConvPostOp::Kind;
  for (size_t i = 0; i < ops.size();) {
    const Operation* op = ops[i];
    if (op->results.size() != 1 || op->result()->type.dtype != DType::F32 || op->result()->type.dims != convOut->type.dims)
      return "%" + op->result()->name + " is not of the conv result's type";
    double c = 0;
    ConvPostOp p;
    size_t len = 1;
    if (hardswishAt(ops, i, cur)) {
      p.kind = K::Hardswish, len = 5;
    } else if (op->kind == OpKind::Relu && op->operands[0] == cur) {
      p.kind = K::Relu;
    } else if (withConstant(op, OpKind::Mul, cur, c)) {
      p = {K::Linear, c, 0};
    } else if (withConstant(op, OpKind::Add, cur, c)) {
      p = {K::Linear, 1, c};
    } else if (withConstant(op, OpKind::Sub, cur, c, false)) {
      p = {K::Linear, 1, -c};
    } else if (withConstant(op, OpKind::Min, cur, c)) {
      p = {K::Clip, -inf, c};
    } else if (withConstant(op, OpKind::Max, cur, c)) {
      p = {K::Clip, c, inf};
    } else if (op->kind == OpKind::Add && op->operands.size() == 2 &&
               (op->operands[0] == cur) != (op->operands[1] == cur)) {
      const Value* other = op->operands[op->operands[0] == cur ? 1 : 0];
      // The other tensor is read while the result is written: it must come from outside the kernel.
      bool inside = other == convOut;
      for (size_t j = 0; j < i; ++j) inside |= other == ops[j]->result();
      if (inside) return "%" + op->result()->name + " adds a value of the chain itself";
      if (other->type.dtype != DType::F32 || other->type.dims != convOut->type.dims)
        return "%" + op->result()->name + " adds a tensor of other dims than the conv's result";
      p.kind = K::Add, p.src = other;
    } else {
      return "%" + op->result()->name + " (" + std::string(op->name()) +
             ") is not a post-op of the chain (relu, HardSwish, add/mul/min/max by a scalar constant, add of a "
             "tensor of the result's dims)";
    }
    // A clip after a clip (min then max: the importer's HardSigmoid) is one clip.
    if (p.kind == K::Clip && !out.empty() && out.back().kind == K::Clip) {
      out.back().a = std::max(out.back().a, p.a), out.back().b = std::min(out.back().b, p.b);
      if (out.back().a > out.back().b) return "%" + op->result()->name + " clips to an empty range";
    } else {
      for (const ConvPostOp& q : out)
        if (q.kind == p.kind && p.kind != K::Add)
          // oneDNN 2.6 runs a repeated eltwise kind with the first one's arguments; the runtime would fall
          // back to a separate pass (runtime/DnnlChannelsLast.cpp), which the kernel it is fused into loses.
          return "%" + op->result()->name + " repeats a post-op kind of the chain";
      out.push_back(p);
    }
    cur = ops[i + len - 1]->result();
    i += len;
  }
  return "";
}

}  // namespace dscc
