// Scalar LLVM IR for elementwise ops with the interpreter's semantics, element memory access, dim arithmetic.
#include "codegen/ElementOps.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "codegen/cpu/VectorMath.h"
#include "ir/IndexMap.h"
#include "ir/ValueFacts.h"

namespace dscc::codegen {
namespace {

// How elements are computed, as in the interpreter: f32 in float, f64 in
// double, integers in their own width (wrapping, which equals the
// interpreter's int64 arithmetic wrapped at every op's store), i1 as bool.
enum class Num { Float, Int, Bool };

Num numOf(DType t) {
  if (isFloat(t)) return Num::Float;
  if (isBool(t)) return Num::Bool;
  return Num::Int;
}

std::string dt(DType t) { return std::string(dtypeName(t)); }

llvm::Module& moduleOf(llvm::IRBuilderBase& b) { return *b.GetInsertBlock()->getModule(); }

// A call to the libm function `name` of type T(T) (tanhf/tanh, erff/erf),
// which LLVM has no intrinsic for.
llvm::Value* libm(llvm::IRBuilderBase& b, const char* f32Name, const char* f64Name, llvm::Value* x) {
  llvm::Type* t = x->getType();
  const char* name = t->isFloatTy() ? f32Name : f64Name;
  llvm::FunctionCallee fn = moduleOf(b).getOrInsertFunction(name, llvm::FunctionType::get(t, {t}, false));
  if (auto* decl = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    // No errno is ever read, so the calls are pure: the vectorisers may then
    // use vector math libraries, and unused calls may go.
    decl->setDoesNotThrow();
    decl->setDoesNotAccessMemory();
    decl->setWillReturn();
  }
  return b.CreateCall(fn, {x});
}

llvm::Value* fconst(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }

// f32 math on the CPU is inline polynomials (codegen/cpu/VectorMath.h); the GPU
// keeps libdevice's functions, and f64 keeps libm and libmvec.
bool inlineMath(llvm::IRBuilderBase& b, llvm::Value* x) {
  return x->getType()->getScalarType()->isFloatTy() &&
         !llvm::StringRef(moduleOf(b).getTargetTriple()).starts_with("nvptx");
}

llvm::Value* tanhOf(llvm::IRBuilderBase& b, llvm::Value* x) {
  return inlineMath(b, x) ? emitFastTanhF32(b, x) : libm(b, "tanhf", "tanh", x);
}

llvm::Value* erfOf(llvm::IRBuilderBase& b, llvm::Value* x) {
  return inlineMath(b, x) ? emitFastErfF32(b, x) : libm(b, "erff", "erf", x);
}

// exp(x), with results below the smallest normal number flushed to 0 (an
// absolute difference under 1.2e-38 in f32, 2.3e-308 in f64). Vector math
// libraries compute such lanes on a slow scalar path, and a masked softmax
// (scores of -1e4 and less) sends every row there. NaN stays NaN.
llvm::Value* expOf(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  if (inlineMath(b, x)) return emitFastExpF32(b, x);
  double lo = t->isFloatTy() ? -87.33654 : -708.39641;  // ln(FLT_MIN), ln(DBL_MIN)
  llvm::Value* tiny = b.CreateFCmpOLT(x, fconst(t, lo));
  llvm::Value* e = b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b.CreateSelect(tiny, fconst(t, 0.0), x));
  return b.CreateSelect(tiny, fconst(t, 0.0), e);
}

// The integer pow helper: a**e by squaring, wrapping at the width, 1 for
// e <= 0 (the interpreter rejects a negative exponent; code cannot report).
llvm::Function* intPowHelper(llvm::Module& m, llvm::IntegerType* t) {
  std::string name = "dscc.ipow.i" + std::to_string(t->getBitWidth());
  if (llvm::Function* f = m.getFunction(name)) return f;
  auto* f = llvm::Function::Create(llvm::FunctionType::get(t, {t, t}, false), llvm::GlobalValue::InternalLinkage,
                                   name, m);
  f->setDoesNotThrow();
  f->setDoesNotAccessMemory();
  llvm::LLVMContext& ctx = m.getContext();
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* head = llvm::BasicBlock::Create(ctx, "head", f);
  auto* body = llvm::BasicBlock::Create(ctx, "body", f);
  auto* done = llvm::BasicBlock::Create(ctx, "done", f);
  llvm::IRBuilder<> b(entry);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* r = b.CreatePHI(t, 2, "r");
  llvm::PHINode* base = b.CreatePHI(t, 2, "base");
  llvm::PHINode* e = b.CreatePHI(t, 2, "e");
  b.CreateCondBr(b.CreateICmpSGT(e, llvm::ConstantInt::get(t, 0)), body, done);
  b.SetInsertPoint(body);
  llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(e, llvm::ConstantInt::get(t, 1)), llvm::ConstantInt::get(t, 0));
  llvm::Value* r2 = b.CreateSelect(odd, b.CreateMul(r, base), r);
  llvm::Value* base2 = b.CreateMul(base, base);
  llvm::Value* e2 = b.CreateAShr(e, llvm::ConstantInt::get(t, 1));
  b.CreateBr(head);
  r->addIncoming(llvm::ConstantInt::get(t, 1), entry);
  r->addIncoming(r2, body);
  base->addIncoming(f->getArg(0), entry);
  base->addIncoming(base2, body);
  e->addIncoming(f->getArg(1), entry);
  e->addIncoming(e2, body);
  b.SetInsertPoint(done);
  b.CreateRet(r);
  return f;
}

llvm::Value* unaryFloat(llvm::IRBuilderBase& b, const Operation& op, llvm::Value* x) {
  llvm::Type* t = x->getType();
  auto one = [&] { return fconst(t, 1.0); };
  switch (op.kind) {
    case OpKind::Neg: return b.CreateFNeg(x);
    case OpKind::Abs: return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    case OpKind::Exp:
      if (inlineMath(b, x) && nonPositive(op.operands[0])) return emitFastExpNonPositiveF32(b, x);
      return expOf(b, x);
    case OpKind::Log: return b.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
    case OpKind::Sqrt: return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case OpKind::Rsqrt: return b.CreateFDiv(one(), b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case OpKind::Tanh: return tanhOf(b, x);
    case OpKind::Sigmoid:
      if (inlineMath(b, x)) return emitFastSigmoidF32(b, x);
      return b.CreateFDiv(one(), b.CreateFAdd(one(), expOf(b, b.CreateFNeg(x))));
    case OpKind::Erf: return erfOf(b, x);
    // x < 0 ? 0 : x keeps NaN, like numpy maximum(x, 0).
    case OpKind::Relu: return b.CreateSelect(b.CreateFCmpOLT(x, fconst(t, 0.0)), fconst(t, 0.0), x);
    case OpKind::Gelu: {
      bool tanhForm = isTanhGelu(op);
      if (!tanhForm && inlineMath(b, x)) return emitFastGeluF32(b, x);
      llvm::Value* halfX = b.CreateFMul(fconst(t, 0.5), x);
      if (tanhForm) {
        // 0.5*x*(1 + tanh(sqrt(2/pi) * (x + 0.044715*x^3))), in the interpreter's order.
        llvm::Value* cube = b.CreateFMul(b.CreateFMul(b.CreateFMul(fconst(t, 0.044715), x), x), x);
        llvm::Value* inner = b.CreateFMul(fconst(t, 0.7978845608028654), b.CreateFAdd(x, cube));
        return b.CreateFMul(halfX, b.CreateFAdd(one(), tanhOf(b, inner)));
      }
      llvm::Value* e = erfOf(b, b.CreateFDiv(x, fconst(t, 1.4142135623730951)));
      return b.CreateFMul(halfX, b.CreateFAdd(one(), e));
    }
    case OpKind::Floor: return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
    case OpKind::Ceil: return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
    case OpKind::Sin: return b.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
    case OpKind::Cos: return b.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
    case OpKind::Reciprocal: return b.CreateFDiv(one(), x);
    case OpKind::Sign: {  // x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x (NaN)
      llvm::Value* zeroOrNaN = b.CreateSelect(b.CreateFCmpOEQ(x, fconst(t, 0.0)), fconst(t, 0.0), x);
      llvm::Value* neg = b.CreateSelect(b.CreateFCmpOLT(x, fconst(t, 0.0)), fconst(t, -1.0), zeroOrNaN);
      return b.CreateSelect(b.CreateFCmpOGT(x, fconst(t, 0.0)), one(), neg);
    }
    default: return x;
  }
}

llvm::Value* unaryInt(llvm::IRBuilderBase& b, OpKind k, llvm::Value* x) {
  llvm::Type* t = x->getType();
  switch (k) {
    case OpKind::Neg: return b.CreateNeg(x);
    // abs(INT_MIN) wraps to INT_MIN, as the interpreter's wrapping negation.
    case OpKind::Abs: return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
    case OpKind::Relu: return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, llvm::ConstantInt::get(t, 0));
    case OpKind::Not: return b.CreateNot(x);
    case OpKind::Sign:  // (x > 0) - (x < 0)
      return b.CreateSub(b.CreateZExt(b.CreateICmpSGT(x, llvm::ConstantInt::get(t, 0)), t),
                         b.CreateZExt(b.CreateICmpSLT(x, llvm::ConstantInt::get(t, 0)), t));
    default: return x;
  }
}

llvm::Value* binaryFloat(llvm::IRBuilderBase& b, OpKind k, llvm::Value* x, llvm::Value* y) {
  switch (k) {
    case OpKind::Add: return b.CreateFAdd(x, y);
    case OpKind::Sub: return b.CreateFSub(x, y);
    case OpKind::Mul: return b.CreateFMul(x, y);
    case OpKind::Div: return b.CreateFDiv(x, y);
    case OpKind::Pow: return b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
    case OpKind::Max:
    case OpKind::Min: {
      // numpy maximum/minimum: NaN from either side wins, else the
      // interpreter's a < b ? b : a (which also fixes the sign of a zero
      // result, unlike llvm.maxnum/maximum).
      llvm::Value* pick = k == OpKind::Max ? b.CreateSelect(b.CreateFCmpOLT(x, y), y, x)
                                           : b.CreateSelect(b.CreateFCmpOLT(y, x), y, x);
      llvm::Value* nanY = b.CreateSelect(b.CreateFCmpUNO(y, y), y, pick);
      return b.CreateSelect(b.CreateFCmpUNO(x, x), x, nanY);
    }
    default: return x;
  }
}

llvm::Value* binaryInt(llvm::IRBuilderBase& b, OpKind k, llvm::Value* x, llvm::Value* y) {
  auto* t = llvm::cast<llvm::IntegerType>(x->getType());
  llvm::Value* zero = llvm::ConstantInt::get(t, 0);
  switch (k) {
    case OpKind::Add: return b.CreateAdd(x, y);
    case OpKind::Sub: return b.CreateSub(x, y);
    case OpKind::Mul: return b.CreateMul(x, y);
    case OpKind::Div: {
      // Truncating division; y == -1 negates (wrapping INT_MIN, where sdiv
      // traps) and y == 0 gives 0 (the interpreter reports an error there).
      llvm::Value* minusOne = b.CreateICmpEQ(y, llvm::ConstantInt::getSigned(t, -1));
      llvm::Value* isZero = b.CreateICmpEQ(y, zero);
      llvm::Value* safe = b.CreateSelect(b.CreateOr(minusOne, isZero), llvm::ConstantInt::get(t, 1), y);
      llvm::Value* q = b.CreateSDiv(x, safe);
      return b.CreateSelect(minusOne, b.CreateNeg(x), b.CreateSelect(isZero, zero, q));
    }
    case OpKind::Pow: return b.CreateCall(intPowHelper(moduleOf(b), t), {x, y});
    case OpKind::Max: return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
    case OpKind::Min: return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
    case OpKind::And: return b.CreateAnd(x, y);
    case OpKind::Or: return b.CreateOr(x, y);
    default: return x;
  }
}

llvm::Value* compare(llvm::IRBuilderBase& b, OpKind k, Num n, llvm::Value* x, llvm::Value* y) {
  using P = llvm::CmpInst::Predicate;
  if (n == Num::Float) {
    // Ordered comparisons are false on NaN, and != is true, as in C.
    P p = k == OpKind::Eq ? P::FCMP_OEQ : k == OpKind::Ne ? P::FCMP_UNE : k == OpKind::Lt ? P::FCMP_OLT
        : k == OpKind::Le ? P::FCMP_OLE : k == OpKind::Gt ? P::FCMP_OGT : P::FCMP_OGE;
    return b.CreateFCmp(p, x, y);
  }
  // i1 compares as 0 < 1: unsigned (a signed i1 `true` would be -1).
  bool u = n == Num::Bool;
  P p = k == OpKind::Eq ? P::ICMP_EQ : k == OpKind::Ne ? P::ICMP_NE
      : k == OpKind::Lt ? (u ? P::ICMP_ULT : P::ICMP_SLT) : k == OpKind::Le ? (u ? P::ICMP_ULE : P::ICMP_SLE)
      : k == OpKind::Gt ? (u ? P::ICMP_UGT : P::ICMP_SGT) : (u ? P::ICMP_UGE : P::ICMP_SGE);
  return b.CreateICmp(p, x, y);
}

llvm::Value* cast(llvm::IRBuilderBase& b, DType from, DType to, llvm::Value* x) {
  llvm::LLVMContext& ctx = b.getContext();
  // Of x's shape: a vector of explicit CPU stitch rows casts lane by lane.
  llvm::Type* dst = x->getType()->getWithNewType(registerType(ctx, to));
  if (from == to) return x;
  Num nf = numOf(from), nt = numOf(to);
  if (nf == Num::Float) {
    if (nt == Num::Float) return roundToDType(b, to, b.CreateFPCast(x, dst));
    if (nt == Num::Bool) return b.CreateFCmpUNE(x, fconst(x->getType(), 0.0));  // NaN != 0
    // Truncation toward zero into int64 as Tensor::setF: NaN and infinities
    // give 0, values beyond int64 saturate; then wrap to the width.
    llvm::Value* sat = b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt64Ty(), x->getType()}, {x});
    llvm::Value* inf = b.CreateFCmpOEQ(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                                       llvm::ConstantFP::getInfinity(x->getType()));
    return b.CreateTrunc(b.CreateSelect(inf, b.getInt64(0), sat), dst);
  }
  if (nf == Num::Bool) return nt == Num::Float ? b.CreateUIToFP(x, dst) : b.CreateZExt(x, dst);
  if (nt == Num::Float && (to == DType::F16 || to == DType::BF16))
    return roundToDType(b, to, b.CreateFPTrunc(b.CreateSIToFP(x, b.getDoubleTy()), dst));
  // From an integer.
  if (nt == Num::Bool) return b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  if (nt == Num::Int) return b.CreateSExtOrTrunc(x, dst);
  // The interpreter converts through double, so an i64 becoming f32 is
  // rounded twice; do the same to get the same float.
  if (from == DType::I64 && to == DType::F32) return b.CreateFPTrunc(b.CreateSIToFP(x, b.getDoubleTy()), dst);
  return b.CreateSIToFP(x, dst);
}

}  // namespace

llvm::Value* emitElementwiseValue(llvm::IRBuilderBase& b, const Operation& op, llvm::ArrayRef<llvm::Value*> args);

bool dtypeSupported(DType t) {
  switch (t) {
    case DType::F32: case DType::F64: case DType::I64: case DType::I32: case DType::I8: case DType::I1:
    case DType::F16: case DType::BF16: return true;
  }
  return false;
}

llvm::Type* registerType(llvm::LLVMContext& ctx, DType t) {
  switch (t) {
    case DType::F32: return llvm::Type::getFloatTy(ctx);
    case DType::F64: return llvm::Type::getDoubleTy(ctx);
    case DType::I64: return llvm::Type::getInt64Ty(ctx);
    case DType::I32: return llvm::Type::getInt32Ty(ctx);
    case DType::I8: return llvm::Type::getInt8Ty(ctx);
    case DType::I1: return llvm::Type::getInt1Ty(ctx);
    case DType::F16: case DType::BF16: return llvm::Type::getFloatTy(ctx);
  }
  return nullptr;
}

llvm::Type* storageType(llvm::LLVMContext& ctx, DType t) {
  if (t == DType::F16) return llvm::Type::getHalfTy(ctx);
  if (t == DType::BF16) return llvm::Type::getBFloatTy(ctx);
  return t == DType::I1 ? llvm::Type::getInt8Ty(ctx) : registerType(ctx, t);
}

namespace {
// NVPTX converts bf16 in hardware (sm_80+); elsewhere LLVM would call
// __truncsfbf2, which older libgcc lacks, so the CPU does it with integers.
bool nativeBF16(llvm::IRBuilderBase& b) {
  return llvm::StringRef(moduleOf(b).getTargetTriple()).starts_with("nvptx");
}
}  // namespace

llvm::Value* toRegister(llvm::IRBuilderBase& b, DType t, llvm::Value* v) {
  switch (t) {
    case DType::I1: return b.CreateICmpNE(v, b.getInt8(0));  // any nonzero byte is true, as Tensor::getI
    case DType::F16: return b.CreateFPExt(v, b.getFloatTy());
    case DType::BF16: {
      if (nativeBF16(b)) return b.CreateFPExt(v, b.getFloatTy());
      llvm::Value* bits = b.CreateZExt(b.CreateBitCast(v, b.getInt16Ty()), b.getInt32Ty());
      return b.CreateBitCast(b.CreateShl(bits, 16), b.getFloatTy());
    }
    default: return v;
  }
}

llvm::Value* toStorage(llvm::IRBuilderBase& b, DType t, llvm::Value* v) {
  switch (t) {
    case DType::I1: return b.CreateZExt(v, b.getInt8Ty());
    case DType::F16: return b.CreateFPTrunc(v, b.getHalfTy());
    case DType::BF16: {
      if (nativeBF16(b)) return b.CreateFPTrunc(v, b.getBFloatTy());
      // Round to nearest even on the top 16 bits; a NaN keeps its sign and
      // top payload with the quiet bit set (as doubleToBF16).
      llvm::Value* x = b.CreateBitCast(v, b.getInt32Ty());
      llvm::Value* odd = b.CreateAnd(b.CreateLShr(x, 16), 1);
      llvm::Value* rounded = b.CreateLShr(b.CreateAdd(x, b.CreateAdd(b.getInt32(0x7fff), odd)), 16);
      llvm::Value* nan = b.CreateOr(b.CreateLShr(x, 16), b.getInt32(0x40));
      llvm::Value* r = b.CreateSelect(b.CreateFCmpUNO(v, v), nan, rounded);
      return b.CreateBitCast(b.CreateTrunc(r, b.getInt16Ty()), b.getBFloatTy());
    }
    default: return v;
  }
}

llvm::Value* roundToDType(llvm::IRBuilderBase& b, DType t, llvm::Value* v) {
  if (t != DType::F16 && t != DType::BF16) return v;
  if (v->getType()->isDoubleTy()) v = b.CreateFPTrunc(v, b.getFloatTy());
  return toRegister(b, t, toStorage(b, t, v));
}

llvm::Value* loadElement(llvm::IRBuilderBase& b, DType t, llvm::Value* ptr, uint64_t align, bool invariant) {
  llvm::Type* st = storageType(b.getContext(), t);
  llvm::LoadInst* l = b.CreateAlignedLoad(st, ptr, llvm::Align(align ? align : dtypeSize(t)));
  if (invariant) l->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
  return toRegister(b, t, l);
}

void storeElement(llvm::IRBuilderBase& b, DType t, llvm::Value* v, llvm::Value* ptr, uint64_t align) {
  b.CreateAlignedStore(toStorage(b, t, v), ptr, llvm::Align(align ? align : dtypeSize(t)));
}

bool isElementwise(const Operation& op) {
  // ir/IndexMap.h's pointwise ops, with a result to compute (a malformed
  // op without one is refused here, not where its result is read).
  return !op.results.empty() && isPointwise(op);
}

std::string checkElementwiseOp(const Operation& op) {
  std::string name(op.name());
  if (!isElementwise(op)) return "op '" + name + "' is not elementwise";
  for (const Value* v : op.operands)
    if (!dtypeSupported(v->type.dtype)) return "dtype " + dt(v->type.dtype) + " of %" + v->name + " is not supported";
  for (const auto& r : op.results)
    if (!dtypeSupported(r->type.dtype)) return "dtype " + dt(r->type.dtype) + " of %" + r->name + " is not supported";
  if (op.results.size() != 1) return "'" + name + "' must have one result";
  DType in = op.operands.empty() ? op.result()->type.dtype : op.operands[0]->type.dtype;
  switch (op.info().category) {
    case OpCategory::Unary:
      if (!definedOn(op.kind, in)) return "'" + name + "' is not defined on " + dt(in);
      if (const Attribute* a = op.attr("approximate"))
        if (a->kind != Attribute::Kind::String || (a->s != "tanh" && a->s != "none"))
          return "attribute approximate of gelu must be \"tanh\" or \"none\"";
      return op.result()->type.dtype == in ? "" : "'" + name + "' must keep the dtype " + dt(in);
    case OpCategory::Cast: return "";
    case OpCategory::Binary:
    case OpCategory::Logical:
    case OpCategory::Compare: {
      if (op.operands[1]->type.dtype != in)
        return "operands of '" + name + "' have different dtypes " + dt(in) + " and " + dt(op.operands[1]->type.dtype);
      OpCategory c = op.info().category;
      if (!definedOn(op.kind, in)) return "'" + name + "' is not defined on " + dt(in);
      DType want = c == OpCategory::Compare ? DType::I1 : in;
      return op.result()->type.dtype == want ? "" : "'" + name + "' must give " + dt(want);
    }
    case OpCategory::Select: {
      if (in != DType::I1) return "condition of select must be i1, not " + dt(in);
      DType a = op.operands[1]->type.dtype;
      if (op.operands[2]->type.dtype != a || op.result()->type.dtype != a)
        return "operands of select have different dtypes";
      return "";
    }
    default: return "op '" + name + "' is not elementwise";
  }
}

llvm::Value* emitElementwiseOp(llvm::IRBuilderBase& b, const Operation& op, llvm::ArrayRef<llvm::Value*> args) {
  DType out = op.result()->type.dtype;
  llvm::Value* r = emitElementwiseValue(b, op, args);
  // Casts round themselves (from double directly where they can).
  return op.info().category == OpCategory::Cast ? r : roundToDType(b, out, r);
}

llvm::Value* emitElementwiseValue(llvm::IRBuilderBase& b, const Operation& op, llvm::ArrayRef<llvm::Value*> args) {
  DType in = op.operands[0]->type.dtype;
  Num n = numOf(in);
  switch (op.info().category) {
    case OpCategory::Unary:
      if (n == Num::Float) return unaryFloat(b, op, args[0]);
      if (n == Num::Bool) return b.CreateNot(args[0]);
      return unaryInt(b, op.kind, args[0]);
    case OpCategory::Cast: return cast(b, in, op.result()->type.dtype, args[0]);
    case OpCategory::Binary:
    case OpCategory::Logical:
      if (n == Num::Float) return binaryFloat(b, op.kind, args[0], args[1]);
      return binaryInt(b, op.kind, args[0], args[1]);  // i1 reaches here only for and/or
    case OpCategory::Compare: return compare(b, op.kind, n, args[0], args[1]);
    case OpCategory::Select: return b.CreateSelect(args[0], args[1], args[2]);
    default: return nullptr;
  }
}

DimEmitter::DimEmitter(llvm::IRBuilderBase& b, llvm::Value* sizes, std::vector<std::string> symbols)
    : b_(b), sizes_(sizes), symbols_(std::move(symbols)) {}

llvm::Value* DimEmitter::symbol(const std::string& name) {
  std::string key = "sym:" + name;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  size_t k = 0;
  while (k < symbols_.size() && symbols_[k] != name) ++k;
  // describeLoopKernel collects every symbol, so k is in range.
  llvm::Value* p = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), sizes_, k);
  llvm::Value* v = b_.CreateAlignedLoad(b_.getInt64Ty(), p, llvm::Align(8), name);
  cache_[key] = v;
  return v;
}

llvm::Value* DimEmitter::atom(const DimAtom& a) {
  if (a.kind == DimAtomKind::Sym) return symbol(a.name);
  llvm::Value* p = emit(a.args[0]);
  llvm::Value* q = emit(a.args[1]);
  llvm::Value* zero = b_.getInt64(0);
  auto safeDivisor = [&] { return b_.CreateSelect(b_.CreateICmpEQ(q, zero), b_.getInt64(1), q); };
  switch (a.kind) {
    case DimAtomKind::Div: return b_.CreateSDiv(p, safeDivisor());
    case DimAtomKind::FloorDiv:
    case DimAtomKind::CeilDiv:
    case DimAtomKind::Mod: {
      // C's truncating quotient and remainder, adjusted as floorDivI,
      // ceilDivI (= -floorDiv(-p, q)) and floorModI do.
      llvm::Value* d = safeDivisor();
      llvm::Value* t = b_.CreateSDiv(p, d);
      llvm::Value* r = b_.CreateSRem(p, d);
      llvm::Value* inexact = b_.CreateICmpNE(r, zero);
      llvm::Value* signsDiffer = b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(d, zero));
      if (a.kind == DimAtomKind::FloorDiv)
        return b_.CreateSub(t, b_.CreateZExt(b_.CreateAnd(inexact, signsDiffer), b_.getInt64Ty()));
      if (a.kind == DimAtomKind::CeilDiv)
        return b_.CreateAdd(t, b_.CreateZExt(b_.CreateAnd(inexact, b_.CreateNot(signsDiffer)), b_.getInt64Ty()));
      return b_.CreateSelect(b_.CreateAnd(inexact, signsDiffer), b_.CreateAdd(r, d), r);
    }
    case DimAtomKind::Min: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, p, q);
    case DimAtomKind::Max: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, p, q);
    // bcast(p, q): p unless p is the 1 that stretches to q.
    case DimAtomKind::Bcast: return b_.CreateSelect(b_.CreateICmpEQ(p, b_.getInt64(1)), q, p);
    case DimAtomKind::Sym: break;
  }
  return zero;
}

llvm::Value* DimEmitter::emit(const DimExpr& e) {
  std::string key = e.key();
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  llvm::Value* sum = nullptr;
  for (const DimTerm& t : e.terms()) {
    llvm::Value* prod = nullptr;
    for (const DimAtomPtr& a : t.atoms) {
      llvm::Value* v = atom(*a);
      prod = prod ? b_.CreateMul(prod, v) : v;
    }
    if (!prod) prod = b_.getInt64(t.coeff);
    else if (t.coeff != 1) prod = b_.CreateMul(b_.getInt64(t.coeff), prod);
    sum = sum ? b_.CreateAdd(sum, prod) : prod;
  }
  if (!sum) sum = b_.getInt64(0);
  cache_[key] = sum;
  return sum;
}

}  // namespace dscc::codegen
