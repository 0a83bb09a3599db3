// Scalar LLVM IR for elementwise ops, element loads/stores and dim expressions (internal to codegen/).
//
// Every kernel kind (loop, and later input, stitch and library epilogues) and
// every target computes its elements with these functions, so the numerics of
// generated code are defined in one place, after the interpreter's
// (ir/InterpElementwise.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/IRBuilder.h>

#include "ir/IR.h"

namespace dscc::codegen {

/// True for the dtypes generated code handles: all of them (f32, f16, bf16,
/// f64, i64, i32, i8, i1).
bool dtypeSupported(DType dt);

/// The type of an element of `dt` in registers (i1 for i1; f16 and bf16 are
/// computed in float, as the interpreter does).
llvm::Type* registerType(llvm::LLVMContext& ctx, DType dt);

/// The type of an element of `dt` in memory (i1 is stored as one byte, f16
/// as half, bf16 as bfloat).
llvm::Type* storageType(llvm::LLVMContext& ctx, DType dt);

/// A value loaded as storageType(dt) in its register form (f16/bf16 widened exactly).
llvm::Value* toRegister(llvm::IRBuilderBase& b, DType dt, llvm::Value* stored);

/// A register value in its storage form (f16/bf16 rounded to nearest even,
/// NaN kept a NaN, as Tensor::setF does).
llvm::Value* toStorage(llvm::IRBuilderBase& b, DType dt, llvm::Value* v);

/// `v` (register form) rounded to `dt`'s precision and widened again: the
/// value an op's f16/bf16 result has once stored, which the next op of a
/// fused chain must see. Other dtypes: `v`.
llvm::Value* roundToDType(llvm::IRBuilderBase& b, DType dt, llvm::Value* v);

/// Loads the element at `ptr` and converts it to its register form.
/// `align`: the pointer's known alignment in bytes (0: the element size).
/// `invariant`: the memory does not change while the kernel runs (a kernel's
/// inputs never share a buffer with its outputs, BufferPlan.cpp), so LLVM
/// may hoist the load out of loops that store (`!invariant.load`).
llvm::Value* loadElement(llvm::IRBuilderBase& b, DType dt, llvm::Value* ptr, uint64_t align = 0,
                         bool invariant = false);

/// Converts `v` from its register form and stores it at `ptr` (`align` as for loadElement).
void storeElement(llvm::IRBuilderBase& b, DType dt, llvm::Value* v, llvm::Value* ptr, uint64_t align = 0);

/// True for the ops emitElementwiseOp handles: the pointwise ops
/// (isPointwise, ir/IndexMap.h: unary, cast, binary, logical, compare,
/// select) that have a result.
bool isElementwise(const Operation& op);

/// Checks that `op` is an elementwise op that emitElementwiseOp can generate
/// for its dtypes. Returns "" or the reason it cannot.
std::string checkElementwiseOp(const Operation& op);

/// Emits `op` (which passed checkElementwiseOp) on one element of each
/// operand, given in register form; returns the result in register form.
/// Helpers it needs (libm declarations, integer pow) are added to the
/// module of `b`'s insertion block.
llvm::Value* emitElementwiseOp(llvm::IRBuilderBase& b, const Operation& op, llvm::ArrayRef<llvm::Value*> args);

/// Emits dim expressions as i64 arithmetic on the values of symbols, read
/// once each from a `sizes` array. Results are cached by expression, so every
/// emit must happen in one block that dominates all uses (a kernel's setup).
class DimEmitter {
 public:
  /// `symbols[k]` is the symbol whose value is `sizes[k]`.
  DimEmitter(llvm::IRBuilderBase& b, llvm::Value* sizes, std::vector<std::string> symbols);

  /// The value of `e`. Exact `/`, floordiv, ceildiv and mod follow
  /// DimExpr::evaluate; a zero divisor divides by 1 instead of trapping (the
  /// runtime's shape checks reject such sizes before any kernel runs).
  llvm::Value* emit(const DimExpr& e);

 private:
  llvm::Value* atom(const DimAtom& a);
  llvm::Value* symbol(const std::string& name);

  llvm::IRBuilderBase& b_;
  llvm::Value* sizes_;
  std::vector<std::string> symbols_;
  std::map<std::string, llvm::Value*> cache_;  // by DimExpr::key()
};

}  // namespace dscc::codegen
