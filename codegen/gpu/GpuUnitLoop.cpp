// The thread-unit loop of the GPU's kernels of their own and the helpers they share (GpuUnitLoop.h).
#include "codegen/gpu/GpuUnitLoop.h"

#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include "codegen/ElementOps.h"
#include "codegen/KernelLowering.h"

namespace dscc::codegen {

// Adds a body `name` (KernelFn) looping over thread units [begin, end) with `nIn` inputs and `nOut` outputs;
// `unit` emits one unit's work and leaves the builder in a block that falls through to the next unit. The dims
// it uses must be among `dimsUsed`: they are emitted once, before the loop (DimEmitter caches them there).
std::string unitLoop(CodeModule& m, const std::string& name, size_t nIn, size_t nOut,
                     const std::vector<std::string>& symbols, const std::vector<const DimExpr*>& dimsUsed,
                     const std::function<void(Unit&)>& unit) {
  std::string err;
  llvm::Function* fn = createKernelFunction(m, name, &err);
  if (!fn) return err;
  llvm::LLVMContext& ctx = m.context();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  auto load = [&](llvm::Value* arr, size_t i) {
    return b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), arr, i));
  };
  std::vector<llvm::Value*> ins, outs;
  for (size_t i = 0; i < nIn; ++i) ins.push_back(load(fn->getArg(0), i));
  for (size_t i = 0; i < nOut; ++i) outs.push_back(load(fn->getArg(1), i));
  DimEmitter dims(b, fn->getArg(2), symbols);
  for (const DimExpr* d : dimsUsed) dims.emit(*d);
  Unit state{b, ins, outs, dims, nullptr};
  llvm::Value* begin = fn->getArg(3);
  llvm::Value* end = fn->getArg(4);
  auto* loop = llvm::BasicBlock::Create(ctx, "unit", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
  llvm::BasicBlock* entry = b.GetInsertBlock();
  b.CreateCondBr(b.CreateICmpSLT(begin, end), loop, done);
  b.SetInsertPoint(loop);
  llvm::PHINode* u = b.CreatePHI(b.getInt64Ty(), 2, "u");
  u->addIncoming(begin, entry);
  state.u = u;
  unit(state);
  llvm::Value* next = b.CreateAdd(u, b.getInt64(1));
  u->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, end), loop, done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return "";
}

std::vector<std::string> symbolsOf(const std::vector<const DimExpr*>& ds) {
  std::set<std::string> syms;
  for (const DimExpr* d : ds) d->collectSymbols(syms);
  return {syms.begin(), syms.end()};
}

// Runs `then` (which leaves the builder in a block falling through) only when `cond` holds.
void when(llvm::IRBuilder<>& b, llvm::Value* cond, const char* name, const std::function<void()>& then) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* yes = llvm::BasicBlock::Create(b.getContext(), name, fn);
  auto* join = llvm::BasicBlock::Create(b.getContext(), std::string(name) + ".end", fn);
  b.CreateCondBr(cond, yes, join);
  b.SetInsertPoint(yes);
  then();
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

void forRange(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const char* name,
              const std::function<void(llvm::Value*)>& body) {
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::Function* fn = pre->getParent();
  auto* loop = llvm::BasicBlock::Create(b.getContext(), name, fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), std::string(name) + ".end", fn);
  b.CreateCondBr(b.CreateICmpSLT(lo, hi), loop, done);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, name);
  i->addIncoming(lo, pre);
  body(i);
  llvm::Value* next = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, hi), loop, done);
  b.SetInsertPoint(done);
}

// `d` (f64) rounded to f16 or bf16 once, as Tensor::setF does: first to f32 rounding to odd (truncate, then set
// the last bit when inexact), which keeps enough bits (24 >= 11 + 2) for the final round to nearest even to be
// the direct one; f32 rounding to nearest first could land on a tie and round twice.
llvm::Value* halfFromDouble(llvm::IRBuilder<>& b, DType dt, llvm::Value* d) {
  llvm::Value* f = b.CreateFPTrunc(d, b.getFloatTy());
  llvm::Value* back = b.CreateFPExt(f, b.getDoubleTy());
  llvm::Value* inexact = b.CreateFCmpONE(back, d);  // false for NaN
  llvm::Value* away = b.CreateFCmpOGT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                      b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  llvm::Value* fb = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value* trunc = b.CreateSelect(away, b.CreateSub(fb, b.getInt32(1)), fb);  // one step toward zero
  llvm::Value* odd = b.CreateSelect(inexact, b.CreateOr(trunc, b.getInt32(1)), fb);
  return toStorage(b, dt, b.CreateBitCast(odd, b.getFloatTy()));
}

}  // namespace dscc::codegen
