// Inline polynomial exp, tanh, sigmoid, erf and gelu for f32: Cephes' range reduction with our own fits, and the rational erf of Eigen and XLA.
#include "codegen/cpu/VectorMath.h"

#include <cmath>

#include <llvm/IR/Intrinsics.h>

namespace dscc::codegen {
namespace {

llvm::Value* c(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }

// a*x + y, fused where the target has FMA (llvm.fmuladd), so the same IR is
// right on every CPU.
llvm::Value* madd(llvm::IRBuilderBase& b, llvm::Value* a, llvm::Value* x, llvm::Value* y) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, x, y});
}

// Horner's rule over `n` coefficients (highest degree first), each scaled by
// `scale` and, with `halve`, by 1/2^k for the power k of the argument (a
// polynomial in x/2 as one in x).
llvm::Value* hornerScaled(llvm::IRBuilderBase& b, llvm::Value* x, const double* coeffs, size_t n, double scale,
                          bool halve) {
  llvm::Type* t = x->getType();
  auto coef = [&](size_t i) { return c(t, std::ldexp(coeffs[i] * scale, halve ? -int(n - 1 - i) : 0)); };
  llvm::Value* p = coef(0);
  for (size_t i = 1; i < n; ++i) p = madd(b, p, x, coef(i));
  return p;
}

// Horner's rule over `coeffs` (highest degree first) at x.
llvm::Value* horner(llvm::IRBuilderBase& b, llvm::Value* x, std::initializer_list<double> coeffs) {
  return hornerScaled(b, x, coeffs.begin(), coeffs.size(), 1.0, false);
}

llvm::Value* fabs(llvm::IRBuilderBase& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}

// x = n*ln2 + r with |r| <= ln2/2, and e^r: the part of every exp below.
// n is rounded by adding 1.5*2^23 + bias (the float's ulp there is 1), so
// t's bits are bits(1.5*2^23) + bias + n and no float-to-int conversion is
// needed; shifting them left by 23 leaves (bias + n) << 23, the magic
// number's own bits shift out. Integer operations on NaN's bits are
// defined, unlike fptosi of NaN (poison).
struct ExpParts {
  llvm::Value* bits;  ///< (bias + n) << 23 as i32
  llvm::Value* er;    ///< e^r in [0.7, 1.42]
};

ExpParts expReduce(llvm::IRBuilderBase& b, llvm::Value* x, int bias) {
  llvm::Type* t = x->getType();
  llvm::Type* it = t->getWithNewType(b.getInt32Ty());
  const double magic = 12582912.0 + bias;
  llvm::Value* tn = madd(b, x, c(t, 1.44269504088896341), c(t, magic));
  llvm::Value* n = b.CreateFSub(tn, c(t, magic));
  // ln2 in two parts so n*C1 is exact.
  llvm::Value* r = madd(b, n, c(t, -0.693359375), x);
  r = madd(b, n, c(t, 2.12194440e-4), r);
  // e^r = 1 + r + r^2 P(r), P of degree 4 fitted for the least maximum
  // relative error on [-ln2/2, ln2/2] by scripts/fit-vector-math.py: 3.9e-9
  // with the coefficients rounded to f32, 0.03 ULP, so the result's error is
  // its roundings'. Cephes' degree 5 is one FMA more for nothing f32 shows.
  llvm::Value* p = horner(b, r, {1.3753256670940655e-3, 8.3687969828302733e-3, 4.1669492654446798e-2,
                                 1.6666519750009728e-1, 4.9999988809356799e-1});
  llvm::Value* er = b.CreateFAdd(madd(b, p, b.CreateFMul(r, r), r), c(t, 1.0));
  return {b.CreateShl(b.CreateBitCast(tn, it), llvm::ConstantInt::get(it, 23)), er};
}

// x clamped to at most `hi` / at least `lo`. A compare and select, not
// llvm.minnum: x86 has no minnum instruction (it takes three), and the
// select form is one vminps/vmaxps. NaN passes through.
llvm::Value* atMost(llvm::IRBuilderBase& b, llvm::Value* x, double hi) {
  llvm::Value* h = c(x->getType(), hi);
  return b.CreateSelect(b.CreateFCmpOGT(x, h), h, x);
}
llvm::Value* atLeast(llvm::IRBuilderBase& b, llvm::Value* x, double lo) {
  llvm::Value* l = c(x->getType(), lo);
  return b.CreateSelect(b.CreateFCmpOLT(x, l), l, x);
}

// ln(FLT_MIN) rounded towards zero: e^x is a normal float from here up (by
// 4.5e-6 relative, far above exp's error), and no float lies between it and
// the true ln(FLT_MIN), so flushing below it flushes exactly the results
// under FLT_MIN.
constexpr double kLnMin = -87.33654022216796875;

}  // namespace

llvm::Value* emitFastExpF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  // Clamped to [-87.5, ln(FLT_MAX)], so n is in [-126, 128]; e^r * 2^n by
  // adding n to e^r's exponent field. At the bottom the field underflows
  // into denormal or tiny patterns, all under FLT_MIN and flushed to 0 by
  // compare and select (no arithmetic on a denormal, which would take a
  // microcode assist); from ln(FLT_MAX) on the result is +inf (at n = 128 a
  // mantissa left in e^r would make a NaN pattern).
  ExpParts p = expReduce(b, atLeast(b, atMost(b, x, 88.72283905), -87.5), 0);
  llvm::Value* e = b.CreateBitCast(b.CreateAdd(b.CreateBitCast(p.er, p.bits->getType()), p.bits), t);
  e = b.CreateSelect(b.CreateFCmpOLT(x, c(t, kLnMin)), c(t, 0.0), e);
  e = b.CreateSelect(b.CreateFCmpOGE(x, c(t, 88.72283905)), llvm::ConstantFP::getInfinity(t), e);
  // NaN's bits may carry payload into the exponent add.
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, e);
}

llvm::Value* emitFastExpNonPositiveF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  // Sigmoid's core: x clamped to at least ln(FLT_MIN), so n is in [-126, 0]
  // and 2^n a normal float built from its bits; e^r * 2^n by one
  // multiplication, exact, so the same value as emitFastExpF32's exponent
  // add, and NaN passes through it. Every result computed is at least
  // FLT_MIN; below ln(FLT_MIN) the result is flushed to 0 (also -inf).
  // Without an upper clamp, an overflow select and a NaN select, the exp is
  // 5 vector instructions shorter (a softmax's exp loop 15%).
  ExpParts p = expReduce(b, atLeast(b, x, kLnMin), 127);
  llvm::Value* e = b.CreateFMul(p.er, b.CreateBitCast(p.bits, t));
  return b.CreateSelect(b.CreateFCmpOLT(x, c(t, kLnMin)), c(t, 0.0), e);
}

llvm::Value* emitFastTanhF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  // x P(x^2) / Q(x^2), a rational of degrees 9 and 8 fitted for the least
  // maximum relative error on [0, 9] by scripts/fit-vector-math.py: 4e-8,
  // under half an ULP; the roundings of evaluating it are most of the error.
  // Eigen's and XLA's degrees 13 and 6 take one FMA more. P(0) = Q(0) = 1.
  // From 9.01 on, tanh rounds to 1; x is clamped to +-10, where the fit
  // (past its range, from 9.2 on) exceeds 1 and the clamp below makes it 1
  // exactly. NaN passes through every clamp.
  llvm::Value* xc = atLeast(b, atMost(b, x, 10.0), -10.0);
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = horner(b, x2, {1.334317846e-08, 2.061439049e-05, 3.496553253e-03, 1.338205801e-01, 1.0});
  llvm::Value* q = horner(b, x2, {7.775767276e-07, 3.286753576e-04, 2.588133660e-02, 4.671538087e-01, 1.0});
  llvm::Value* r = b.CreateFMul(xc, b.CreateFDiv(p, q));
  // Near 1 the roundings of P, Q and P/Q (up to ~5 ULP together) could
  // carry the fit past 1: a min and a max (not FMA-pipe work) keep it in range.
  r = atLeast(b, atMost(b, r, 1.0), -1.0);
  // Below 0.0004, tanh(x) rounds to x: x itself, where P/Q may be an ULP
  // off 1 near the top of that range.
  return b.CreateSelect(b.CreateFCmpOLT(fabs(b, x), c(t, 0.0004)), x, r);
}

llvm::Value* emitFastSigmoidF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  // 1/(1 + e^-x) with -x clamped to [ln(FLT_MIN), -ln(FLT_MIN)]: n in
  // [-126, 126], so 2^n is a normal float built from its bits and e^-x is
  // e^r * 2^n by one multiplication, which keeps NaN. Every value computed is
  // a normal float (no microcode assists on the masked -1e4 of attention);
  // results under FLT_MIN are flushed to 0, as exp's. Above 87.3 the result
  // rounds to 1.
  ExpParts p = expReduce(b, atLeast(b, atMost(b, b.CreateFNeg(x), -kLnMin), kLnMin), 127);
  llvm::Value* e = b.CreateFMul(p.er, b.CreateBitCast(p.bits, t));
  llvm::Value* r = b.CreateFDiv(c(t, 1.0), b.CreateFAdd(e, c(t, 1.0)));
  return b.CreateSelect(b.CreateFCmpOLT(x, c(t, kLnMin)), c(t, 0.0), r);
}

namespace {
// erf(z) = z P(z^2) / Q(z^2), Eigen's and XLA's rational (highest degree first).
constexpr double kErfP[] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                            -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                            -1.60960333262415e-02};
constexpr double kErfQ[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                            -7.37332916720468e-03, -1.42647390514189e-02};
constexpr double kSqrt2 = 1.4142135623730951;
}  // namespace

llvm::Value* emitFastErfF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  // erf(x) rounds to ±1 in f32 beyond ±3.92; clamping keeps the rational
  // function where it was fitted. Comparisons are false for NaN, so NaN
  // passes through.
  llvm::Value* xc = atLeast(b, atMost(b, x, 4.0), -4.0);
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = hornerScaled(b, x2, kErfP, 7, 1.0, false);
  llvm::Value* q = hornerScaled(b, x2, kErfQ, 5, 1.0, false);
  // x * (p / q), not (x p) / q: x p is denormal for tiny x.
  llvm::Value* r = b.CreateFMul(xc, b.CreateFDiv(p, q));
  // From 3.919206 on, erf(x) rounds to 1 in f32; the fit would stay a few
  // ULP below it (and overshoot it elsewhere by one).
  r = atLeast(b, atMost(b, r, 1.0), -1.0);
  llvm::Value* one = b.CreateIntrinsic(llvm::Intrinsic::copysign, {t}, {c(t, 1.0), x});
  return b.CreateSelect(b.CreateFCmpOGE(fabs(b, x), c(t, 3.919206)), one, r);
}

llvm::Value* emitFastGeluF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  // Phi(x) = 1/2 + erf(x/sqrt2)/2 = 1/2 + x P(x^2/2) / (2 sqrt2 Q(x^2/2)):
  // erf's rational at z = x/sqrt2 with 1/(2 sqrt2) and the powers of 1/2
  // in the coefficients (each rounded once to f32, from double). Then
  // gelu = x * (t + 1/2): no multiply by 1/sqrt2 or by 1/2 and no 1 +,
  // where the formula's order (interpreter, decompose) takes them, so two
  // FMA-pipe instructions fewer, the pipes gelu_bias was bound by. The
  // clamps are erf's at z = +-4 and +-3.919206 scaled by sqrt2: Phi is 0 or
  // 1 exactly beyond +-5.5427 (where erf rounds to +-1 in f32), and the fit
  // stays within [-1/2, 1/2]. NaN passes through every clamp.
  const double big = 3.919206 * kSqrt2;
  llvm::Value* xc = atLeast(b, atMost(b, x, 4.0 * kSqrt2), -4.0 * kSqrt2);
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = hornerScaled(b, x2, kErfP, 7, 0.5 / kSqrt2, true);
  llvm::Value* q = hornerScaled(b, x2, kErfQ, 5, 1.0, true);
  llvm::Value* r = atLeast(b, atMost(b, b.CreateFMul(xc, b.CreateFDiv(p, q)), 0.5), -0.5);
  llvm::Value* phi = b.CreateFAdd(r, c(t, 0.5));
  llvm::Value* tail = b.CreateSelect(b.CreateFCmpOGT(x, c(t, 0.0)), c(t, 1.0), c(t, 0.0));
  phi = b.CreateSelect(b.CreateFCmpOGE(fabs(b, x), c(t, big)), tail, phi);
  return b.CreateFMul(x, phi);
}

}  // namespace dscc::codegen
