// Inline polynomial exp, tanh and erf for f32: Cephes' expf and tanhf, and the rational erf of Eigen and XLA.
#include "codegen/VectorMath.h"

#include <llvm/IR/Intrinsics.h>

namespace dscc::codegen {
namespace {

llvm::Value* c(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }

// a*x + y, fused where the target has FMA (llvm.fmuladd), so the same IR is
// right on every CPU.
llvm::Value* madd(llvm::IRBuilderBase& b, llvm::Value* a, llvm::Value* x, llvm::Value* y) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, x, y});
}

// Horner's rule over `coeffs` (highest degree first) at x.
llvm::Value* horner(llvm::IRBuilderBase& b, llvm::Value* x, std::initializer_list<double> coeffs) {
  llvm::Type* t = x->getType();
  auto it = coeffs.begin();
  llvm::Value* p = c(t, *it++);
  for (; it != coeffs.end(); ++it) p = madd(b, p, x, c(t, *it));
  return p;
}

llvm::Value* fabs(llvm::IRBuilderBase& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}

}  // namespace

llvm::Value* emitFastExpF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Type* it = t->getWithNewType(b.getInt32Ty());
  // Clamped to [-87.5, ln(FLT_MAX)], n below stays in [-126, 128]: at the top
  // +inf is set, at the bottom every result is under FLT_MIN
  // and flushed to 0 below. (NaN is clamped too and restored at the end.)
  llvm::Value* xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(t, -87.5));
  xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, xc, c(t, 88.72283905));
  // x = n*ln2 + r with |r| <= ln2/2; ln2 in two parts so n*C1 is exact.
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, madd(b, xc, c(t, 1.44269504088896341), c(t, 0.5)));
  llvm::Value* r = madd(b, n, c(t, -0.693359375), xc);
  r = madd(b, n, c(t, 2.12194440e-4), r);
  llvm::Value* p = horner(b, r, {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2,
                                 1.6666665459E-1, 5.0000001201E-1});
  llvm::Value* e = b.CreateFAdd(madd(b, p, b.CreateFMul(r, r), r), c(t, 1.0));
  // e * 2^n by adding n to e's exponent field (e is in [0.7, 1.42]): exponent
  // 255 is +inf where the true value overflows; at the bottom the field
  // underflows into denormal or negative bit patterns, all under FLT_MIN.
  llvm::Value* k = b.CreateShl(b.CreateFPToSI(n, it), llvm::ConstantInt::get(it, 23));
  e = b.CreateBitCast(b.CreateAdd(b.CreateBitCast(e, it), k), t);
  e = b.CreateSelect(b.CreateFCmpOLT(e, c(t, 1.17549435e-38)), c(t, 0.0), e);
  // At n = 128 a mantissa left in e would make a NaN pattern.
  e = b.CreateSelect(b.CreateFCmpOGE(x, c(t, 88.72283905)), llvm::ConstantFP::getInfinity(t), e);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, e);
}

llvm::Value* emitFastTanhF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* ax = fabs(b, x);
  // |x| < 0.625: x + x^3 P(x^2).
  llvm::Value* s = b.CreateFMul(x, x);
  llvm::Value* p = horner(b, s, {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
                                 -3.33332819422E-1});
  llvm::Value* small = madd(b, b.CreateFMul(p, s), x, x);
  // Otherwise 1 - 2/(e^{2|x|} + 1) with x's sign; e^{2|x|} = inf gives 1, and
  // NaN stays NaN through exp.
  llvm::Value* e = emitFastExpF32(b, b.CreateFMul(ax, c(t, 2.0)));
  llvm::Value* big = b.CreateFSub(c(t, 1.0), b.CreateFDiv(c(t, 2.0), b.CreateFAdd(e, c(t, 1.0))));
  big = b.CreateIntrinsic(llvm::Intrinsic::copysign, {t}, {big, x});
  return b.CreateSelect(b.CreateFCmpOLT(ax, c(t, 0.625)), small, big);
}

llvm::Value* emitFastErfF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  // erf(x) rounds to ±1 in f32 beyond ±3.92; clamping keeps the rational
  // function where it was fitted. Comparisons are false for NaN, so NaN
  // passes through.
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, c(t, 4.0)), c(t, 4.0), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, c(t, -4.0)), c(t, -4.0), xc);
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = horner(b, x2, {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                                  -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                                  -1.60960333262415e-02});
  llvm::Value* q = horner(b, x2, {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                                  -7.37332916720468e-03, -1.42647390514189e-02});
  // x * (p / q), not (x p) / q: x p is denormal for tiny x.
  llvm::Value* r = b.CreateFMul(xc, b.CreateFDiv(p, q));
  // From 3.919206 on, erf(x) rounds to 1 in f32; the fit would stay a few
  // ULP below it (and overshoot it elsewhere by one).
  r = b.CreateSelect(b.CreateFCmpOGT(r, c(t, 1.0)), c(t, 1.0), r);
  r = b.CreateSelect(b.CreateFCmpOLT(r, c(t, -1.0)), c(t, -1.0), r);
  llvm::Value* one = b.CreateIntrinsic(llvm::Intrinsic::copysign, {t}, {c(t, 1.0), x});
  return b.CreateSelect(b.CreateFCmpOGE(fabs(b, x), c(t, 3.919206)), one, r);
}

}  // namespace dscc::codegen
