// The LLVM side of the helpers every kernel lowering shares (codegen/KernelCommon.h).
#include "codegen/KernelCommon.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"

namespace dscc::codegen {

int vectorMathCost(const Operation& fusion) {
  int cost = 0;
  for (const auto& op : fusion.body) {
    switch (op->kind) {
      case OpKind::Exp:
      case OpKind::Log: cost += 1; break;
      case OpKind::Tanh:
      case OpKind::Sigmoid:
      case OpKind::Erf:
      case OpKind::Sin:
      case OpKind::Cos:
      case OpKind::Pow: cost += 2; break;
      case OpKind::Gelu: cost += 3; break;
      default: break;
    }
  }
  return cost;
}

bool rowVectorValues(const Operation& fusion) {
  for (const Value* v : fusion.operands)
    if (v->type.dtype != DType::F32) return false;
  for (const auto& v : fusion.results)
    if (v->type.dtype != DType::F32) return false;
  for (const auto& op : fusion.body) {
    for (const auto& v : op->results)
      if (v->type.dtype != DType::F32 && v->type.dtype != DType::I1) return false;
    if (op->info().category != OpCategory::Reduce) continue;
    OpKind k = op->kind;
    if (k != OpKind::ReduceSum && k != OpKind::ReduceMean && k != OpKind::ReduceProd && k != OpKind::ReduceMax &&
        k != OpKind::ReduceMin)
      return false;
  }
  return true;
}

int64_t kernelChunkElements(const Operation& fusion) {
  return vectorMathCost(fusion) > 0 ? kChunkElements / 4 : kChunkElements;
}

llvm::Value* emitOperandStride(llvm::IRBuilderBase& b, DimEmitter& dims, const Type& t, size_t d, Access a,
                               llvm::Type* idxTy) {
  llvm::Value* s = b.CreateZExtOrTrunc(dims.emit(product(t.dims, d + 1)), idxTy);
  if (a == Access::Dynamic)
    s = b.CreateSelect(b.CreateICmpEQ(dims.emit(t.dims[d]), b.getInt64(1)), llvm::ConstantInt::get(idxTy, 0), s);
  return s;
}

llvm::Value* finishReduction(llvm::IRBuilderBase& b, const Operation& r, llvm::Value* acc, llvm::Value* count) {
  DType dt = r.result()->type.dtype;
  if (r.kind == OpKind::ReduceMean) {
    if (acc->getType()->isFloatingPointTy()) {
      acc = b.CreateFDiv(acc, b.CreateSIToFP(count, acc->getType()));
    } else {
      llvm::Value* zero = b.CreateICmpEQ(count, b.getInt64(0));
      llvm::Value* q = b.CreateSDiv(acc, b.CreateSelect(zero, b.getInt64(1), count));
      acc = b.CreateSelect(zero, b.getInt64(0), q);
    }
  }
  llvm::Type* t = registerType(b.getContext(), dt);
  // Accumulators are at least as wide as the result, so the cast narrows.
  if (isFloat(dt)) return roundToDType(b, dt, acc->getType() == t ? acc : b.CreateFPCast(acc, t));
  if (acc->getType() == t) return acc;
  if (dt == DType::I1) return b.CreateICmpNE(acc, b.getInt64(0));
  return b.CreateTrunc(acc, t);
}

}  // namespace dscc::codegen
