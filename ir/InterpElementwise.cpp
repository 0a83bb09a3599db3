// Interpreter kernels for elementwise ops: unary, cast, binary, logical, compare, select.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/InterpInternal.h"

namespace dscc::interp {
namespace {

// How elements of a dtype are computed: f32, f16 and bf16 in float (so results
// match a float32 implementation before rounding to the storage type), f64 in
// double, integers in int64 wrapped to their width, i1 as bool.
enum class Num { Float32, Float64, Int, Bool };

Num numOf(DType t) {
  if (t == DType::F64) return Num::Float64;
  if (isFloat(t)) return Num::Float32;
  if (isBool(t)) return Num::Bool;
  return Num::Int;
}

// Wrapping arithmetic without signed-overflow undefined behaviour.
int64_t wrapAdd(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t wrapSub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
int64_t wrapMul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

template <class T>
T unaryFloat(OpKind k, T x, bool tanhGelu) {
  switch (k) {
    case OpKind::Neg: return -x;
    case OpKind::Abs: return std::abs(x);
    case OpKind::Exp: return std::exp(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Rsqrt: return T(1) / std::sqrt(x);
    case OpKind::Tanh: return std::tanh(x);
    case OpKind::Sigmoid: return T(1) / (T(1) + std::exp(-x));
    case OpKind::Erf: return std::erf(x);
    case OpKind::Relu: return x < T(0) ? T(0) : x;  // NaN stays NaN, like numpy maximum
    case OpKind::Gelu:
      if (tanhGelu) {
        const T c = static_cast<T>(0.7978845608028654);  // sqrt(2/pi)
        return T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x)));
      }
      return T(0.5) * x * (T(1) + std::erf(x / static_cast<T>(1.4142135623730951)));
    case OpKind::Floor: return std::floor(x);
    case OpKind::Ceil: return std::ceil(x);
    case OpKind::Sin: return std::sin(x);
    case OpKind::Cos: return std::cos(x);
    case OpKind::Reciprocal: return T(1) / x;
    case OpKind::Sign: return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == T(0) ? T(0) : x;  // NaN stays NaN
    default: return x;
  }
}

int64_t unaryInt(OpKind k, int64_t x) {
  switch (k) {
    case OpKind::Neg: return wrapSub(0, x);
    case OpKind::Abs: return x < 0 ? wrapSub(0, x) : x;
    case OpKind::Relu: return x < 0 ? 0 : x;
    case OpKind::Not: return ~x;
    case OpKind::Sign: return x > 0 ? 1 : x < 0 ? -1 : 0;
    default: return x;
  }
}

template <class T>
T binaryFloat(OpKind k, T a, T b) {
  switch (k) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Pow: return std::pow(a, b);
    // numpy maximum/minimum propagate NaN from either side.
    case OpKind::Max: return std::isnan(a) ? a : std::isnan(b) ? b : (a < b ? b : a);
    case OpKind::Min: return std::isnan(a) ? a : std::isnan(b) ? b : (b < a ? b : a);
    default: return a;
  }
}

template <class T>
bool compare(OpKind k, T a, T b) {
  switch (k) {
    case OpKind::Eq: return a == b;
    case OpKind::Ne: return a != b;
    case OpKind::Lt: return a < b;
    case OpKind::Le: return a <= b;
    case OpKind::Gt: return a > b;
    case OpKind::Ge: return a >= b;
    default: return false;
  }
}

// Integer a**b for b >= 0 by squaring, wrapping like repeated multiplication.
int64_t powInt(int64_t a, int64_t b) {
  int64_t r = 1;
  while (b > 0) {
    if (b & 1) r = wrapMul(r, a);
    a = wrapMul(a, a);
    b >>= 1;
  }
  return r;
}

}  // namespace

bool runUnary(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  OpKind k = c.op.kind;
  Num n = numOf(x.dtype);
  if (!definedOn(k, x.dtype)) return c.fail(c.name() + " is not defined on " + std::string(dtypeName(x.dtype)));
  bool tanhGelu = false;
  if (const Attribute* a = c.op.attr("approximate")) {
    if (a->kind != Attribute::Kind::String || (a->s != "tanh" && a->s != "none"))
      return c.fail("attribute approximate of gelu must be \"tanh\" or \"none\"");
    tanhGelu = a->s == "tanh";
  }
  Tensor r = Tensor::zeros(c.outDType(), x.shape);
  int64_t cnt = x.numel();
  for (int64_t i = 0; i < cnt; ++i) {
    switch (n) {
      case Num::Float32: r.setF(i, unaryFloat<float>(k, static_cast<float>(x.getF(i)), tanhGelu)); break;
      case Num::Float64: r.setF(i, unaryFloat<double>(k, x.getF(i), tanhGelu)); break;
      case Num::Int: r.setI(i, unaryInt(k, x.getI(i))); break;
      case Num::Bool: r.setI(i, x.getI(i) == 0); break;
    }
  }
  out.push_back(std::move(r));
  return true;
}

bool runCast(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& x = *c.in[0];
  DType to = c.outDType();
  if (const Attribute* a = c.op.attr("to"); a && a->kind == Attribute::Kind::DType && a->dtype != to)
    return c.fail("cast to " + std::string(dtypeName(a->dtype)) + " declares a result of type " +
                  c.op.result()->type.str());
  Tensor r = Tensor::zeros(to, x.shape);
  int64_t cnt = x.numel();
  // setF truncates toward zero into integers and tests != 0 into i1, which is
  // what a cast means; integer sources go through setI so large i64 stay exact.
  for (int64_t i = 0; i < cnt; ++i) {
    if (isFloat(x.dtype)) r.setF(i, x.getF(i));
    else if (isFloat(to)) r.setF(i, static_cast<double>(x.getI(i)));
    else r.setI(i, x.getI(i));
  }
  out.push_back(std::move(r));
  return true;
}

bool runBinary(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& a = *c.in[0];
  const Tensor& b = *c.in[1];
  OpKind k = c.op.kind;
  OpCategory cat = c.op.info().category;
  if (a.dtype != b.dtype)
    return c.fail("operands of " + c.name() + " have different dtypes " + std::string(dtypeName(a.dtype)) +
                  " and " + std::string(dtypeName(b.dtype)));
  Num n = numOf(a.dtype);
  if (cat == OpCategory::Logical && (n == Num::Float32 || n == Num::Float64))
    return c.fail(c.name() + " is not defined on " + std::string(dtypeName(a.dtype)));
  auto shape = broadcastShapes(a.shape, b.shape);
  if (!shape)
    return c.fail("operands of " + c.name() + " do not broadcast: " + a.typeStr() + " and " + b.typeStr());
  std::vector<int64_t> ia = broadcastIndex(a.shape, *shape), ib = broadcastIndex(b.shape, *shape);
  Tensor r = Tensor::zeros(c.outDType(), *shape);
  int64_t cnt = r.numel();
  for (int64_t i = 0; i < cnt; ++i) {
    int64_t pa = ia[static_cast<size_t>(i)], pb = ib[static_cast<size_t>(i)];
    if (cat == OpCategory::Compare) {
      bool v = false;
      switch (n) {
        case Num::Float32: v = compare(k, static_cast<float>(a.getF(pa)), static_cast<float>(b.getF(pb))); break;
        case Num::Float64: v = compare(k, a.getF(pa), b.getF(pb)); break;
        case Num::Int:
        case Num::Bool: v = compare(k, a.getI(pa), b.getI(pb)); break;
      }
      r.setI(i, v);
      continue;
    }
    if (n == Num::Float32) {
      r.setF(i, binaryFloat<float>(k, static_cast<float>(a.getF(pa)), static_cast<float>(b.getF(pb))));
      continue;
    }
    if (n == Num::Float64) {
      r.setF(i, binaryFloat<double>(k, a.getF(pa), b.getF(pb)));
      continue;
    }
    // Integers and i1 (as 0/1; setI stores i1 as != 0).
    int64_t x = a.getI(pa), y = b.getI(pb), v = 0;
    switch (k) {
      case OpKind::Add: v = wrapAdd(x, y); break;
      case OpKind::Sub: v = wrapSub(x, y); break;
      case OpKind::Mul: v = wrapMul(x, y); break;
      case OpKind::Div:
        if (y == 0) return c.fail("integer division by zero in div");
        // INT64_MIN / -1 overflows in C; wrapping gives INT64_MIN back.
        v = (y == -1) ? wrapSub(0, x) : x / y;
        break;
      case OpKind::Pow:
        if (y < 0) return c.fail("integer pow with negative exponent " + std::to_string(y));
        v = powInt(x, y);
        break;
      case OpKind::Max: v = std::max(x, y); break;
      case OpKind::Min: v = std::min(x, y); break;
      case OpKind::And: v = x & y; break;
      case OpKind::Or: v = x | y; break;
      default: return c.fail("the interpreter does not know " + c.name());
    }
    r.setI(i, v);
  }
  out.push_back(std::move(r));
  return true;
}

bool runSelect(OpCtx& c, std::vector<Tensor>& out) {
  const Tensor& cond = *c.in[0];
  const Tensor& a = *c.in[1];
  const Tensor& b = *c.in[2];
  if (cond.dtype != DType::I1) return c.fail("condition of select must be i1, not " + std::string(dtypeName(cond.dtype)));
  if (a.dtype != b.dtype || a.dtype != c.outDType())
    return c.fail("operands of select have different dtypes " + std::string(dtypeName(a.dtype)) + " and " +
                  std::string(dtypeName(b.dtype)));
  auto ab = broadcastShapes(a.shape, b.shape);
  auto shape = ab ? broadcastShapes(cond.shape, *ab) : std::nullopt;
  if (!shape)
    return c.fail("operands of select do not broadcast: " + cond.typeStr() + ", " + a.typeStr() + " and " +
                  b.typeStr());
  std::vector<int64_t> ic = broadcastIndex(cond.shape, *shape), ia = broadcastIndex(a.shape, *shape),
                       ib = broadcastIndex(b.shape, *shape);
  Tensor r = Tensor::zeros(a.dtype, *shape);
  size_t es = dtypeSize(a.dtype);
  int64_t cnt = r.numel();
  for (int64_t i = 0; i < cnt; ++i) {
    size_t k = static_cast<size_t>(i);
    const Tensor& src = cond.getI(ic[k]) ? a : b;
    int64_t from = cond.getI(ic[k]) ? ia[k] : ib[k];
    std::memcpy(r.bytes.data() + k * es, src.bytes.data() + static_cast<size_t>(from) * es, es);
  }
  out.push_back(std::move(r));
  return true;
}

}  // namespace dscc::interp
