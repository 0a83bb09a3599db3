// Streaming (non-temporal) output stores: the assumptions a streaming version makes, and the late pass that uses them.
#include "codegen/cpu/Streaming.h"

#include <algorithm>

#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Local.h>

#include "codegen/KernelCommon.h"

namespace dscc::codegen {

namespace {
constexpr const char* kStreamAttr = "dscc-stream";
constexpr uint64_t kLine = 64;
}  // namespace

int streamLineElements(const KernelInterface& iface) {
  size_t narrowest = 0;
  for (const Type& t : iface.outputs)
    if (t.dtype != DType::I1) narrowest = narrowest ? std::min(narrowest, dtypeSize(t.dtype)) : dtypeSize(t.dtype);
  return narrowest ? static_cast<int>(kLine / narrowest) : 0;
}

bool streamingPays(const Operation& fusion) { return vectorMathCost(fusion) <= 3; }

void assumeStreamGuard(llvm::IRBuilderBase& b, const std::vector<llvm::Value*>& outputs, llvm::Value* extent,
                       int lineElements) {
  b.GetInsertBlock()->getParent()->addFnAttr(kStreamAttr);
  for (llvm::Value* p : outputs) b.CreateAlignmentAssumption(b.GetInsertBlock()->getModule()->getDataLayout(), p, kLine);
  llvm::Value* rem = b.CreateAnd(extent, llvm::ConstantInt::get(extent->getType(), lineElements - 1));
  b.CreateAssumption(b.CreateICmpEQ(rem, llvm::ConstantInt::get(extent->getType(), 0)));
}

bool peelsRows(const Operation& fusion) { return rowVectorValues(fusion) && vectorMathCost(fusion) == 0; }

void markStreaming(llvm::Function& fn) { fn.addFnAttr(kStreamAttr); }

void streamStore(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* ptr) {
  llvm::StoreInst* st = b.CreateAlignedStore(v, ptr, llvm::Align(kLine));
  llvm::LLVMContext& c = b.getContext();
  st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                  llvm::MDNode::get(c, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), 1))}));
}

int streamStores(llvm::Module& m) {
  if (llvm::Triple(m.getTargetTriple()).getArch() != llvm::Triple::x86_64) return 0;
  const llvm::DataLayout& dl = m.getDataLayout();
  int marked = 0;
  for (llvm::Function& fn : m) {
    if (fn.isDeclaration() || !fn.hasFnAttribute(kStreamAttr)) continue;
    llvm::DominatorTree dt(fn);
    llvm::AssumptionCache ac(fn);
    // The outputs: pointers loaded from the `outputs` argument (KernelFn).
    llvm::Value* outArg = fn.arg_size() > 1 ? fn.getArg(1) : nullptr;
    auto isOutput = [&](llvm::Value* ptr) {
      llvm::SmallVector<const llvm::Value*, 4> objs;
      llvm::getUnderlyingObjects(ptr, objs);
      return outArg && !objs.empty() && std::all_of(objs.begin(), objs.end(), [&](const llvm::Value* o) {
               auto* ld = llvm::dyn_cast<llvm::LoadInst>(o);
               return ld && llvm::getUnderlyingObject(ld->getPointerOperand()) == outArg;
             });
    };
    int here = 0;
    for (llvm::BasicBlock& bb : fn)
      for (llvm::Instruction& i : bb) {
        auto* st = llvm::dyn_cast<llvm::StoreInst>(&i);
        if (!st || st->isVolatile() || !st->getValueOperand()->getType()->isVectorTy()) continue;
        if (st->getMetadata(llvm::LLVMContext::MD_nontemporal)) {  // placed by the version (streamStore)
          ++here;
          continue;
        }
        uint64_t size = dl.getTypeStoreSize(st->getValueOperand()->getType()).getFixedValue();
        if (size < 16 || (size & (size - 1)) || !isOutput(st->getPointerOperand())) continue;
        uint64_t need = std::min(size, kLine);
        // The vectoriser's unrolled parts are constant offsets from the
        // first; peel them so the known-bits search keeps its depth for the
        // index.
        llvm::APInt offset(dl.getIndexTypeSizeInBits(st->getPointerOperandType()), 0);
        const llvm::Value* base = st->getPointerOperand()->stripAndAccumulateConstantOffsets(dl, offset, true);
        llvm::Align known = llvm::commonAlignment(llvm::getKnownAlignment(const_cast<llvm::Value*>(base), dl, st, &ac, &dt),
                                                  offset.getZExtValue());
        if (known.value() < need) continue;
        st->setAlignment(std::max(st->getAlign(), llvm::Align(need)));
        st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                        llvm::MDNode::get(m.getContext(), {llvm::ConstantAsMetadata::get(
                                                              llvm::ConstantInt::get(llvm::Type::getInt32Ty(m.getContext()), 1))}));
        ++here;
      }
    if (here > 0) {
      // Non-temporal stores are weakly ordered: fence them before the
      // range is reported done to another thread.
      for (llvm::BasicBlock& bb : fn)
        if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(bb.getTerminator())) {
          llvm::IRBuilder<> b(ret);
          b.CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});
        }
    }
    marked += here;
  }
  return marked;
}

}  // namespace dscc::codegen
