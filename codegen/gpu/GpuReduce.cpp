// Warp shuffles, shared memory and barriers through LLVM's NVVM intrinsics, for the cooperative GPU reduction schedules.
#include "codegen/gpu/GpuReduce.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <vector>

namespace dscc::codegen {
namespace {

// Shared memory is address space 3 in NVPTX.
constexpr unsigned kShared = 3;

bool onNvptx(llvm::IRBuilderBase& b) {
  return llvm::StringRef(b.GetInsertBlock()->getModule()->getTargetTriple()).starts_with("nvptx");
}

// Elsewhere (the unit tests' CPU emulation of a block, one thread per GPU
// thread) the same operations are calls the test harness defines.
llvm::Value* emulated(llvm::IRBuilderBase& b, const char* name, llvm::Type* ret, std::vector<llvm::Value*> args) {
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  llvm::FunctionCallee f =
      b.GetInsertBlock()->getModule()->getOrInsertFunction(name, llvm::FunctionType::get(ret, types, false));
  return b.CreateCall(f, args);
}

// Lane `lane ^ mask`'s 32 bits.
llvm::Value* shfl32(llvm::IRBuilderBase& b, llvm::Value* v, int mask) {
  if (!onNvptx(b)) return emulated(b, "dscc_emu_shfl_bfly_i32", b.getInt32Ty(), {v, b.getInt32(mask)});
  return b.CreateIntrinsic(b.getInt32Ty(), llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
                           {b.getInt32(-1), v, b.getInt32(mask), b.getInt32(0x1f)});
}

// Lane `lane ^ mask`'s value of `x`, whatever its type (up to 64 bits).
llvm::Value* shfl(llvm::IRBuilderBase& b, llvm::Value* x, int mask) {
  llvm::Type* t = x->getType();
  unsigned bits = t->getPrimitiveSizeInBits().getFixedValue();
  llvm::Type* it = b.getIntNTy(bits);
  llvm::Value* v = t->isIntegerTy() ? x : b.CreateBitCast(x, it);
  llvm::Value* r = nullptr;
  if (bits == 64) {
    llvm::Value* lo = shfl32(b, b.CreateTrunc(v, b.getInt32Ty()), mask);
    llvm::Value* hi = shfl32(b, b.CreateTrunc(b.CreateLShr(v, 32), b.getInt32Ty()), mask);
    r = b.CreateOr(b.CreateZExt(lo, it), b.CreateShl(b.CreateZExt(hi, it), 32));
  } else {
    r = shfl32(b, bits == 32 ? v : b.CreateZExt(v, b.getInt32Ty()), mask);
    if (bits != 32) r = b.CreateTrunc(r, it);
  }
  return t->isIntegerTy() ? r : b.CreateBitCast(r, t);
}

}  // namespace

llvm::Value* emitThreadIdX(llvm::IRBuilderBase& b) {
  if (!onNvptx(b)) return emulated(b, "dscc_emu_tid_x", b.getInt32Ty(), {});
  return b.CreateIntrinsic(b.getInt32Ty(), llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {});
}

void emitBarrier(llvm::IRBuilderBase& b) {
  if (!onNvptx(b)) {
    emulated(b, "dscc_emu_barrier", b.getVoidTy(), {});
    return;
  }
  b.CreateIntrinsic(b.getVoidTy(), llvm::Intrinsic::nvvm_barrier0, {});
}

llvm::GlobalVariable* emitSharedArray(llvm::IRBuilderBase& b, llvm::Type* t, int64_t n, const std::string& name) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto* at = llvm::ArrayType::get(t, static_cast<uint64_t>(n));
  auto* g = new llvm::GlobalVariable(*m, at, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(at),
                                     name, nullptr, llvm::GlobalValue::NotThreadLocal, onNvptx(b) ? kShared : 0);
  g->setAlignment(llvm::Align(8));
  return g;
}

llvm::Value* emitWarpAllReduce(llvm::IRBuilderBase& b, llvm::Value* x, const Combine& combine) {
  // After the step with mask m, lanes l and l^m hold combine(a, b) and
  // combine(b, a): equal, as every combine is commutative.
  for (int mask = 16; mask >= 1; mask /= 2) x = combine(x, shfl(b, x, mask));
  return x;
}

llvm::Value* emitBlockAllReduce(llvm::IRBuilderBase& b, llvm::Value* x, int lanes, const Combine& combine,
                                const std::string& name) {
  int warps = lanes / 32;
  llvm::Value* w = emitWarpAllReduce(b, x, combine);
  if (warps <= 1) return w;
  llvm::Type* t = x->getType();
  llvm::GlobalVariable* sh = emitSharedArray(b, t, warps, name);
  llvm::Value* tid = emitThreadIdX(b);
  llvm::Value* warp = b.CreateLShr(tid, 5);
  // The first barrier: the previous row's readers are done with the array.
  emitBarrier(b);
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* write = llvm::BasicBlock::Create(b.getContext(), name + ".write", fn);
  auto* after = llvm::BasicBlock::Create(b.getContext(), name + ".written", fn);
  b.CreateCondBr(b.CreateICmpEQ(b.CreateAnd(tid, 31), b.getInt32(0)), write, after);
  b.SetInsertPoint(write);
  b.CreateStore(w, b.CreateInBoundsGEP(sh->getValueType(), sh, {b.getInt32(0), warp}));
  b.CreateBr(after);
  b.SetInsertPoint(after);
  emitBarrier(b);
  llvm::Value* r = nullptr;
  for (int k = 0; k < warps; ++k) {
    llvm::Value* v = b.CreateLoad(t, b.CreateConstInBoundsGEP2_32(sh->getValueType(), sh, 0, k));
    r = r ? combine(r, v) : v;
  }
  return r;
}

}  // namespace dscc::codegen
