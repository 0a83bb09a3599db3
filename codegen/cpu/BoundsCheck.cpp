// Bounds checks on a lowered CPU kernel's loads and stores of its input and output buffers (codegen/cpu/BoundsCheck.h).
//
// Works on the LLVM function rather than inside each lowering: every kernel
// kind reads `inputs[k]` and writes `outputs[i]` through GEP chains from the
// pointer it loads out of those arrays, so one walk over the function finds
// every buffer access of every kind (scalar, vector and masked vector, any
// dtype).
#include "codegen/cpu/BoundsCheck.h"

#include <map>
#include <optional>

#include <llvm/ADT/APInt.h>
#include <llvm/Analysis/Utils/Local.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include "codegen/ElementOps.h"
#include "codegen/KernelCommon.h"

namespace dscc::codegen {

namespace {

// One buffer of the kernel: inputs[k] (output = false) or outputs[k].
struct BufferRef {
  bool output = false;
  size_t index = 0;
  llvm::LoadInst* base = nullptr;  // the load of the buffer's pointer out of its array
};

// The buffer `p` (an address) points into, with the GEPs from its base
// pointer (outermost first), or nullopt when it is not a GEP chain from a
// pointer loaded out of `inputs` or `outputs` (an alloca, a phi, ...).
std::optional<BufferRef> traceBuffer(llvm::Value* p, llvm::Function& fn, std::vector<llvm::GEPOperator*>& geps) {
  const llvm::DataLayout& dl = fn.getParent()->getDataLayout();
  while (auto* g = llvm::dyn_cast<llvm::GEPOperator>(p)) {
    geps.push_back(g);
    p = g->getPointerOperand();
  }
  auto* base = llvm::dyn_cast<llvm::LoadInst>(p);
  if (!base || !base->getType()->isPointerTy()) return std::nullopt;
  llvm::Value* slot = base->getPointerOperand();
  uint64_t slotIndex = 0;
  if (auto* g = llvm::dyn_cast<llvm::GEPOperator>(slot)) {
    llvm::APInt off(64, 0);
    if (!g->accumulateConstantOffset(dl, off)) return std::nullopt;
    slotIndex = off.getZExtValue() / dl.getPointerSize();
    slot = g->getPointerOperand();
  }
  auto* arg = llvm::dyn_cast<llvm::Argument>(slot);
  if (!arg || arg->getParent() != &fn || arg->getArgNo() > 1) return std::nullopt;
  return BufferRef{arg->getArgNo() == 1, slotIndex, base};
}

// The module's reporter: prints the message and aborts. One per module,
// internal, cold and never inlined, so each check is a compare and a branch.
llvm::Function* reporter(llvm::Module& m) {
  const char* name = "dscc.bounds_violation";
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, ptr, i64, i64}, false);
  auto* f = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, name, m);
  f->addFnAttr(llvm::Attribute::Cold);
  f->addFnAttr(llvm::Attribute::NoInline);
  f->addFnAttr(llvm::Attribute::NoReturn);
  llvm::FunctionCallee dprintf =
      m.getOrInsertFunction("dprintf", llvm::FunctionType::get(i32, {i32, ptr}, true));
  llvm::FunctionCallee abortFn = m.getOrInsertFunction("abort", llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false));
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value* fmt = b.CreateGlobalString(
      "dscc: out-of-bounds %s in kernel %s: element %lld of %s, which has %lld elements\n", "dscc.bounds.fmt");
  auto a = f->arg_begin();
  llvm::Value* what = &*a++;
  llvm::Value* kernel = &*a++;
  llvm::Value* buffer = &*a++;
  llvm::Value* index = &*a++;
  llvm::Value* size = &*a;
  b.CreateCall(dprintf, {b.getInt32(2), fmt, what, kernel, index, buffer, size});
  b.CreateCall(abortFn)->setDoesNotReturn();
  b.CreateUnreachable();
  return f;
}

}  // namespace

BoundsCheckStats addBoundsChecks(llvm::Function& fn, const KernelInterface& iface, const std::string& kernel) {
  BoundsCheckStats stats;
  if (fn.arg_size() < 3 || fn.empty()) return stats;
  llvm::Module& m = *fn.getParent();
  const llvm::DataLayout& dl = m.getDataLayout();

  // The accesses first: instrumenting splits blocks.
  struct Access {
    llvm::Instruction* inst;
    llvm::Value* ptr;
    llvm::Type* type;
    BufferRef buf;
    std::vector<llvm::GEPOperator*> geps;
    bool load = true;
    llvm::Value* mask = nullptr;  // llvm.masked.load/store: <N x i1>, the lanes accessed
  };
  std::vector<Access> accesses;
  for (llvm::BasicBlock& bb : fn)
    for (llvm::Instruction& inst : bb) {
      llvm::Value* ptr = nullptr;
      llvm::Type* ty = nullptr;
      llvm::Value* mask = nullptr;
      bool load = true;
      auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
      if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
        ptr = ld->getPointerOperand();
        ty = ld->getType();
      } else if (auto* st = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
        ptr = st->getPointerOperand();
        ty = st->getValueOperand()->getType();
        load = false;
      } else if (ii && ii->getIntrinsicID() == llvm::Intrinsic::masked_load) {
        ptr = ii->getArgOperand(0);
        ty = ii->getType();
        mask = ii->getArgOperand(2);
      } else if (ii && ii->getIntrinsicID() == llvm::Intrinsic::masked_store) {
        ptr = ii->getArgOperand(1);
        ty = ii->getArgOperand(0)->getType();
        mask = ii->getArgOperand(3);
        load = false;
      } else {
        continue;
      }
      llvm::Value* root = ptr->stripInBoundsOffsets();
      // The loads of the buffer pointers and of `sizes`, and locals, are not buffer accesses.
      if (llvm::isa<llvm::Argument>(root) || llvm::isa<llvm::AllocaInst>(root) || llvm::isa<llvm::GlobalValue>(root))
        continue;
      std::vector<llvm::GEPOperator*> geps;
      std::optional<BufferRef> buf = traceBuffer(ptr, fn, geps);
      size_t count = !buf ? 0 : buf->output ? iface.outputs.size() : iface.inputs.size();
      if (!buf || buf->index >= count) {
        ++stats.unchecked;
        continue;
      }
      accesses.push_back({&inst, ptr, ty, *buf, std::move(geps), load, mask});
    }
  if (accesses.empty()) return stats;

  // Each buffer's size in bytes and elements, computed once in the entry
  // block, right after the load of its pointer (which follows the entry's
  // allocas): the sizes are symbols' values, known on entry.
  llvm::IRBuilder<> b(fn.getContext());
  std::map<llvm::LoadInst*, std::pair<llvm::Value*, llvm::Value*>> sizes;  // base -> (elements, bytes)
  std::map<llvm::LoadInst*, llvm::Value*> names;
  llvm::BasicBlock& entry = fn.getEntryBlock();
  b.SetInsertPoint(&entry, entry.getFirstInsertionPt());
  while (llvm::isa<llvm::AllocaInst>(&*b.GetInsertPoint())) b.SetInsertPoint(b.GetInsertPoint()->getNextNode());
  std::vector<std::string> symbols = iface.symbols;
  DimEmitter dims(b, fn.getArg(2), symbols);
  llvm::Value* kernelName = b.CreateGlobalString(kernel, "dscc.bounds.kernel");
  for (const Access& a : accesses) {
    if (sizes.count(a.buf.base)) continue;
    const Type& t = a.buf.output ? iface.outputs[a.buf.index] : iface.inputs[a.buf.index];
    llvm::Value* elems = dims.emit(numel(t));
    llvm::Value* bytes = b.CreateMul(elems, b.getInt64(dl.getTypeAllocSize(storageType(fn.getContext(), t.dtype))));
    sizes[a.buf.base] = {elems, bytes};
    std::string label = std::string(a.buf.output ? "output " : "input ") + std::to_string(a.buf.index);
    std::string name = a.buf.base->getName().str();
    size_t dot = name.find('.');
    if (dot != std::string::npos && dot + 1 < name.size()) label += " (%" + name.substr(dot + 1) + ")";
    names[a.buf.base] = b.CreateGlobalString(label, "dscc.bounds.buffer");
  }

  llvm::Function* report = reporter(m);
  llvm::Value* loadText = b.CreateGlobalString("load", "dscc.bounds.load");
  llvm::Value* storeText = b.CreateGlobalString("store", "dscc.bounds.store");
  llvm::MDNode* unlikely = llvm::MDBuilder(fn.getContext()).createBranchWeights(1, 1u << 20);
  for (const Access& a : accesses) {
    b.SetInsertPoint(a.inst);
    // The byte offset of the address from the buffer's base: each GEP's
    // offset, innermost (nearest the base) first.
    llvm::Value* off = b.getInt64(0);
    for (auto it = a.geps.rbegin(); it != a.geps.rend(); ++it)
      off = b.CreateAdd(off, b.CreateSExtOrTrunc(llvm::emitGEPOffset(&b, dl, *it), b.getInt64Ty()));
    auto [elems, bytes] = sizes[a.buf.base];
    uint64_t width = dl.getTypeStoreSize(a.type);
    llvm::Value* end = b.CreateAdd(off, b.getInt64(width));
    llvm::Value* bad = nullptr;
    if (a.mask) {
      // A masked access touches the lanes from its first set mask bit to
      // its last: those bytes must be inside the buffer (none: no access).
      auto* vt = llvm::cast<llvm::FixedVectorType>(a.type);
      unsigned n = vt->getNumElements();
      uint64_t lane = dl.getTypeStoreSize(vt->getElementType());
      llvm::Value* bits = b.CreateZExt(b.CreateBitCast(a.mask, b.getIntNTy(n)), b.getInt64Ty());
      llvm::Value* first = b.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, bits, b.getFalse());
      llvm::Value* last = b.CreateSub(b.getInt64(63), b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, bits, b.getFalse()));
      llvm::Value* from = b.CreateAdd(off, b.CreateMul(first, b.getInt64(lane)));
      llvm::Value* to = b.CreateAdd(off, b.CreateMul(b.CreateAdd(last, b.getInt64(1)), b.getInt64(lane)));
      llvm::Value* out = b.CreateOr(b.CreateICmpSLT(from, b.getInt64(0)), b.CreateICmpSGT(to, bytes));
      bad = b.CreateAnd(b.CreateICmpNE(bits, b.getInt64(0)), out, "oob");
      off = from;
    } else {
      bad = b.CreateOr(b.CreateICmpSLT(off, b.getInt64(0)), b.CreateICmpSGT(end, bytes), "oob");
    }
    llvm::Instruction* then = llvm::SplitBlockAndInsertIfThen(bad, a.inst, true, unlikely);
    b.SetInsertPoint(then);
    const Type& t = a.buf.output ? iface.outputs[a.buf.index] : iface.inputs[a.buf.index];
    llvm::Value* index = b.CreateSDiv(off, b.getInt64(dl.getTypeAllocSize(storageType(fn.getContext(), t.dtype))));
    llvm::Value* what = a.load ? loadText : storeText;
    b.CreateCall(report, {what, kernelName, names[a.buf.base], index, elems});
    ++stats.checked;
  }
  return stats;
}

}  // namespace dscc::codegen
