// GPU kernels through LLVM's NVPTX backend: grid-stride entry wrappers around the shared kernel bodies, libdevice math, PTX text.
#include "codegen/gpu/GpuKernels.h"

#include <map>
#include <mutex>
#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include "codegen/ElementGenerator.h"
#include "codegen/GenericKernel.h"
#include "codegen/ElementOps.h"
#include "codegen/HostCodegen.h"
#include "codegen/Jit.h"
#include "codegen/KernelCommon.h"
#include "codegen/LibraryPlan.h"
#include "codegen/ReductionLowering.h"
#include "codegen/gpu/GpuRecurrent.h"
#include "codegen/gpu/GpuScatter.h"
#include "codegen/gpu/GpuWindow.h"

// The NVPTX initialisers are C functions of libLLVM.
extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace dscc::codegen {

namespace {
// Chunks per row of a split version (at least one, as the kernel counts them).
DimExpr splitChunks(const KernelPlan& k, const KernelVariant& v) {
  return DimExpr::max(DimExpr::ceilDiv(k.iface.guards.rowLength, DimExpr(v.splitChunk)), DimExpr(1));
}
}  // namespace

std::vector<const Operation*> gpuIndexChecks(const KernelPlan& k) {
  if (k.scatter) return {k.scatter->op};
  if (k.kind == KernelKind::Generic && k.fusion) return gatherChecks(*k.fusion);
  return {};
}

DimExpr splitWorkspaceElements(const KernelPlan& k, const KernelVariant& v) {
  return k.iface.units * splitChunks(k, v) * DimExpr(k.iface.guards.reductions);
}

std::string parseCudaTarget(const std::string& target, std::string* err) {
  if (target == "cuda:sm_80") return "sm_80";
  if (target == "cuda:sm_90") return "sm_90";
  if (err) *err = "unknown target '" + target + "' (expected cpu, cuda:sm_80 or cuda:sm_90)";
  return "";
}

namespace {

/// A grid-stride entry's arguments as its body takes them: the inputs, the outputs, the symbols' values.
struct EntryArgs {
  std::vector<llvm::Value*> ins, outs, sizes;
};

EntryArgs entryArgs(llvm::Function* fn, size_t nIn, size_t nOut, size_t nSyms) {
  EntryArgs a;
  for (size_t q = 0; q < nIn; ++q) a.ins.push_back(fn->getArg(q));
  for (size_t q = 0; q < nOut; ++q) a.outs.push_back(fn->getArg(nIn + q));
  for (size_t s = 0; s < nSyms; ++s) a.sizes.push_back(fn->getArg(nIn + nOut + s));
  return a;
}

void initNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}



constexpr const char* kTriple = "nvptx64-nvidia-cuda";

std::unique_ptr<llvm::TargetMachine> makeMachine(const GpuOptions& opts, std::string& err) {
  initNvptx();
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!target) return nullptr;
  llvm::TargetOptions to;
  // PTX 7.8 is the first with sm_90; both architectures use it so one
  // ptxas (CUDA 11.8 or later) accepts either.
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      kTriple, opts.arch, "+ptx78", to, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) err = "cannot create an NVPTX target machine for " + opts.arch;
  return tm;
}

// Calls into libm and LLVM math intrinsics that NVPTX cannot lower become
// calls to libdevice's __nv_* functions.
void useLibdevice(llvm::Module& m) {
  static const std::map<std::string, std::string> libmNames = {
      {"erff", "__nv_erff"}, {"erf", "__nv_erf"}, {"tanhf", "__nv_tanhf"}, {"tanh", "__nv_tanh"}};
  static const std::map<llvm::Intrinsic::ID, std::string> intrinsics = {
      {llvm::Intrinsic::exp, "exp"}, {llvm::Intrinsic::log, "log"}, {llvm::Intrinsic::pow, "pow"},
      {llvm::Intrinsic::sin, "sin"}, {llvm::Intrinsic::cos, "cos"}, {llvm::Intrinsic::exp2, "exp2"},
      {llvm::Intrinsic::log2, "log2"}};
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& i : bb)
        if (auto* c = llvm::dyn_cast<llvm::CallInst>(&i)) calls.push_back(c);
  for (llvm::CallInst* c : calls) {
    llvm::Function* callee = c->getCalledFunction();
    if (!callee) continue;
    std::string target;
    if (auto it = libmNames.find(callee->getName().str()); it != libmNames.end()) target = it->second;
    if (auto it = intrinsics.find(callee->getIntrinsicID()); it != intrinsics.end()) {
      bool f32 = c->getType()->isFloatTy();
      target = "__nv_" + it->second + (f32 ? "f" : "");
    }
    if (target.empty()) continue;
    llvm::FunctionCallee nv = m.getOrInsertFunction(target, callee->getFunctionType());
    std::vector<llvm::Value*> args(c->arg_begin(), c->arg_end());
    llvm::IRBuilder<> b(c);
    llvm::CallInst* repl = b.CreateCall(nv, args);
    c->replaceAllUsesWith(repl);
    c->eraseFromParent();
  }
}

std::string linkLibdevice(llvm::Module& m, const std::string& path) {
  bool needed = false;
  for (llvm::Function& f : m)
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) needed = true;
  if (!needed) return "";
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(path, diag, m.getContext());
  if (!lib) return "codegen: cannot read libdevice '" + path + "' (the CUDA toolkit's nvvm/libdevice): " +
                   diag.getMessage().str();
  lib->setTargetTriple(m.getTargetTriple());
  lib->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(lib), llvm::Linker::LinkOnlyNeeded))
    return "codegen: linking libdevice failed";
  return "";
}

void markKernel(llvm::Module& m, llvm::Function* f) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, "kernel"),
                          llvm::ValueAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))};
  m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, md));
}

// Builds an entry `name` with `nPtr` pointer and `nI64` i64 parameters and a
// grid-stride loop over [0, units) (the last parameter); `body(b, params, u)`
// emits the work of thread unit `u`.
llvm::Function* gridStrideEntry(llvm::Module& m, const std::string& name, size_t nPtr, size_t nI64,
                                const std::function<void(llvm::IRBuilder<>&, llvm::Function*, llvm::Value*)>& body) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  std::vector<llvm::Type*> params(nPtr, b.getPtrTy());
  params.insert(params.end(), nI64 + 1, b.getInt64Ty());
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), params, false),
                                    llvm::GlobalValue::ExternalLinkage, name, m);
  for (size_t k = 0; k < nPtr; ++k) fn->addParamAttr(k, llvm::Attribute::NoAlias);
  markKernel(m, fn);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* loop = llvm::BasicBlock::Create(ctx, "unit", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.SetInsertPoint(entry);
  auto sreg = [&](llvm::Intrinsic::ID id) {
    return b.CreateZExt(b.CreateIntrinsic(b.getInt32Ty(), id, {}), b.getInt64Ty());
  };
  llvm::Value* tid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* bid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* bdim = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* gdim = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  llvm::Value* first = b.CreateAdd(b.CreateMul(bid, bdim), tid, "first");
  llvm::Value* step = b.CreateMul(bdim, gdim, "step");
  llvm::Value* units = fn->getArg(nPtr + nI64);
  b.CreateCondBr(b.CreateICmpSLT(first, units), loop, done);
  b.SetInsertPoint(loop);
  llvm::PHINode* u = b.CreatePHI(b.getInt64Ty(), 2, "u");
  u->addIncoming(first, entry);
  body(b, fn, u);
  llvm::Value* next = b.CreateAdd(u, step);
  u->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, units), loop, done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return fn;
}

// Stores `vals` in a fresh stack array (which SROA removes again once the
// body is inlined) in the entry block of `fn`.
llvm::Value* stackArray(llvm::IRBuilder<>& b, llvm::Function* fn, llvm::Type* t, const std::vector<llvm::Value*>& vals) {
  llvm::IRBuilder<> eb(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  llvm::Value* a = eb.CreateAlloca(t, eb.getInt32(std::max<size_t>(vals.size(), 1)));
  for (size_t k = 0; k < vals.size(); ++k) eb.CreateStore(vals[k], eb.CreateConstInBoundsGEP1_64(t, a, k));
  return a;
}

}  // namespace

std::string emitGpuKernels(const ModelPlan& plan, const GpuOptions& opts, std::string& ptx,
                           std::vector<GpuKernel>& kernels, std::string* llvmText) {
  std::string err;
  auto tm = makeMachine(opts, err);
  if (!tm) return "codegen: " + err;
  CodeModule cm(plan.func->name + ".gpu");
  llvm::Module& m = cm.module();
  m.setTargetTriple(kTriple);
  m.setDataLayout(tm->createDataLayout());
  kernels.clear();

  for (size_t ki = 0; ki < plan.kernels.size(); ++ki) {
    const KernelPlan& k = plan.kernels[ki];
    // Densifying copies of library operands: element i of the copy reads the
    // source at sum(index_d * stride_d).
    if (k.gemm) {
      for (const auto* o : {&k.gemm->a, &k.gemm->b}) {
        if (o->copyDims.empty()) continue;
        GpuKernel g;
        g.kernel = ki;
        g.copyOf = o == &k.gemm->a ? "a" : "b";
        g.entry = cIdentifier(k.symbol + ".copy_" + g.copyOf);
        std::set<std::string> syms;
        for (const DimExpr& d : o->copyDims) d.collectSymbols(syms);
        for (const DimExpr& s : o->copyStrides) s.collectSymbols(syms);
        g.symbols.assign(syms.begin(), syms.end());
        g.threadUnits = product(o->copyDims);
        const GemmOperandPlan& op = *o;
        gridStrideEntry(m, g.entry, 2, g.symbols.size(), [&](llvm::IRBuilder<>& b, llvm::Function* fn, llvm::Value* u) {
          std::vector<llvm::Value*> sizes;
          for (size_t s = 0; s < g.symbols.size(); ++s) sizes.push_back(fn->getArg(2 + s));
          DimEmitter dims(b, stackArray(b, fn, b.getInt64Ty(), sizes), g.symbols);
          llvm::Value* rest = u;
          llvm::Value* off = b.getInt64(0);
          for (size_t d = op.copyDims.size(); d-- > 0;) {
            llvm::Value* ext = b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, dims.emit(op.copyDims[d]), b.getInt64(1));
            off = b.CreateAdd(off, b.CreateMul(b.CreateURem(rest, ext), dims.emit(op.copyStrides[d])));
            rest = b.CreateUDiv(rest, ext);
          }
          llvm::Type* et = storageType(m.getContext(), k.gemm->matmul->operands[0]->type.dtype);
          llvm::Value* v = b.CreateLoad(et, b.CreateInBoundsGEP(et, fn->getArg(0), off));
          b.CreateStore(v, b.CreateInBoundsGEP(et, fn->getArg(1), u));
        });
        kernels.push_back(g);
      }
    }
    if (k.scatter || k.scan || k.window || k.rnn) {
      // A scatter, cumsum, window or rnn op: its launches in order (GpuScatter.h, GpuWindow.h, GpuRecurrent.h),
      // each a grid-stride entry over its thread units, taking the fusion's operands, then the result, the
      // workspace (when it has one) and the check words (a scatter), and an rnn's the step index after the symbols.
      DataKernel dk;
      std::string base = cIdentifier(k.symbol);
      std::string e = k.window    ? lowerGpuWindow(*k.window, cm, base + "_body", dk)
                      : k.rnn     ? lowerGpuRnn(*k.rnn, cm, base + "_body", dk)
                      : k.scatter ? lowerGpuScatter(*k.scatter, cm, base + "_body", dk)
                                  : lowerGpuScan(*k.scan, cm, base + "_body", dk);
      if (!e.empty()) return "kernel " + k.symbol + ": " + e;
      size_t nIn = k.fusion->operands.size(), nOut = (dk.hasWorkspace ? 2 : 1) + (dk.checks > 0 ? 1 : 0);
      // Version 0: the launches; version 1: a cumsum's chunked form (the host picks, gpuScanTakesChunks).
      std::vector<std::pair<size_t, const DataLaunch*>> all;
      for (const DataLaunch& l : dk.launches) all.push_back({0, &l});
      for (const DataLaunch& l : dk.longLaunches) all.push_back({1, &l});
      for (size_t l = 0; l < all.size(); ++l) {
        const DataLaunch& launch = *all[l].second;
        llvm::Function* bodyFn = m.getFunction(launch.name);
        bodyFn->setLinkage(llvm::GlobalValue::InternalLinkage);
        bodyFn->addFnAttr(llvm::Attribute::AlwaysInline);
        GpuKernel g;
        g.entry = base + "_" + launch.step;
        g.kernel = ki;
        g.version = all[l].first;
        g.phase = static_cast<int>(l);
        g.symbols = dk.symbols;
        g.threadUnits = launch.units;
        g.checks = gpuIndexChecks(k).size();  // dk.checks, as lowerGpuScatter planned them
        g.when = launch.when;
        g.takesStep = dk.takesStep;
        const size_t nSizes = g.symbols.size() + (dk.takesStep ? 1 : 0);
        gridStrideEntry(m, g.entry, nIn + nOut, nSizes,
                        [&](llvm::IRBuilder<>& b, llvm::Function* fn, llvm::Value* u) {
                          auto [ins, outs, sizes] = entryArgs(fn, nIn, nOut, nSizes);
                          b.CreateCall(bodyFn, {stackArray(b, fn, b.getPtrTy(), ins), stackArray(b, fn, b.getPtrTy(), outs),
                                                stackArray(b, fn, b.getInt64Ty(), sizes), u, b.CreateAdd(u, b.getInt64(1))});
                        });
        kernels.push_back(g);
      }
      continue;
    }
    if (!k.hasKernel) continue;
    for (size_t v = 0; v < k.versions.size(); ++v) {
      const KernelVariant& kv = k.versions[v];
      if (kv.schedule == GpuSchedule::Split || kv.schedule == GpuSchedule::TileSplit) {
        // One launch per phase; the workspace follows the outputs. A split:
        // phases + 1 launches of a block per (row, chunk). A tile split: tiles
        // of 32 (chunk, output) units, a block each, then a thread per output.
        bool tiles = kv.schedule == GpuSchedule::TileSplit;
        int last = tiles ? 1 : k.iface.guards.phases;
        size_t nIn = k.iface.inputs.size(), nOut = k.iface.outputs.size() + 1;
        for (int ph = 0; ph <= last; ++ph) {
          // Each group of `lanes` threads takes `per` consecutive units.
          int64_t lanes = tiles && ph == 1 ? 1 : kGpuBlockSize, per = tiles && ph == 0 ? 32 : 1;
          DimExpr units = !tiles   ? k.iface.units * splitChunks(k, kv)
                          : ph == 0 ? rowSplitChunks(k.iface.guards.splitRows) * k.iface.units
                                    : k.iface.units;
          std::string entry = cIdentifier(k.functionName(v)) + "_p" + std::to_string(ph);
          LoweredKernel lk = k.kind == KernelKind::Stitch ? lowerStitchKernel(*k.form, cm, entry + "_body", kv, ph)
                                                           : lowerInputKernel(*k.form, cm, entry + "_body", kv, ph);
          if (!lk.ok()) return "kernel " + k.symbol + ": " + lk.error;
          lk.fn->setLinkage(llvm::GlobalValue::InternalLinkage);
          lk.fn->addFnAttr(llvm::Attribute::AlwaysInline);
          GpuKernel g;
          g.entry = entry;
          g.kernel = ki;
          g.version = v;
          g.phase = ph;
          g.symbols = k.iface.symbols;
          g.threadUnits = (per > 1 ? DimExpr::ceilDiv(units, DimExpr(per)) : units) * DimExpr(lanes);
          llvm::Function* bodyFn = lk.fn;
          gridStrideEntry(m, g.entry, nIn + nOut, g.symbols.size(),
                          [&](llvm::IRBuilder<>& b, llvm::Function* fn, llvm::Value* u) {
                            auto [ins, outs, sizes] = entryArgs(fn, nIn, nOut, g.symbols.size());
                            llvm::Value* begin = lanes > 1 ? b.CreateUDiv(u, b.getInt64(lanes)) : u;
                            if (per > 1) begin = b.CreateMul(begin, b.getInt64(per));
                            b.CreateCall(bodyFn, {stackArray(b, fn, b.getPtrTy(), ins), stackArray(b, fn, b.getPtrTy(), outs),
                                                  stackArray(b, fn, b.getInt64Ty(), sizes), begin,
                                                  b.CreateAdd(begin, b.getInt64(per))});
                          });
          kernels.push_back(g);
        }
        continue;
      }
      // Generic kernels: an element per thread (no CPU tiles), as planned for the GPU.
      LoweredKernel lk = lowerKernelVersion(k, v, cm, cIdentifier(k.functionName(v)) + "_body");
      if (!lk.ok()) return "kernel " + k.symbol + ": " + lk.error;
      lk.fn->setLinkage(llvm::GlobalValue::InternalLinkage);
      lk.fn->addFnAttr(llvm::Attribute::AlwaysInline);
      GpuKernel g;
      g.entry = cIdentifier(k.functionName(v));
      g.kernel = ki;
      g.version = v;
      g.symbols = k.iface.symbols;
      bool loop = k.kind == KernelKind::Loop || k.kind == KernelKind::Library;
      g.unitWidth = loop ? std::max(1, kv.vectorWidth) : 1;
      g.threadUnits = g.unitWidth > 1 ? DimExpr::ceilDiv(k.iface.units, DimExpr(g.unitWidth)) : k.iface.units;
      // Cooperative schedules: `lanes` consecutive threads (a warp, a block)
      // share one unit (Tile: one block of 32 units). As the block size is a
      // multiple of `lanes`, the thread-unit count a multiple of it, every
      // group sees the same trip count of the grid-stride loop: the
      // shuffles and barriers inside are reached by all its threads.
      int lanes = scheduleLanes(kv.schedule);
      int64_t unitsPerGroup = kv.schedule == GpuSchedule::Tile ? 32 : 1;
      if (lanes > 1)
        g.threadUnits = DimExpr::ceilDiv(k.iface.units, DimExpr(unitsPerGroup)) * DimExpr(lanes);
      size_t nIn = k.iface.inputs.size(), nOut = k.iface.outputs.size();
      llvm::Function* bodyFn = lk.fn;
      int w = g.unitWidth;
      // A generic kernel's gathers report into their check words
      // (ElementGenerator.h, gatherChecks), a pointer the entry takes after
      // its outputs and the body after its inputs.
      g.checks = gpuIndexChecks(k).size();
      bool cell = g.checks > 0;
      gridStrideEntry(m, g.entry, nIn + nOut + cell, g.symbols.size(),
                      [&](llvm::IRBuilder<>& b, llvm::Function* fn, llvm::Value* u) {
                        auto [ins, outs, sizes] = entryArgs(fn, nIn, nOut + cell, g.symbols.size());
                        if (cell) {
                          ins.push_back(outs.back());
                          outs.pop_back();
                        }
                        llvm::Value* begin = w > 1 ? b.CreateMul(u, b.getInt64(w)) : u;
                        llvm::Value* end = b.CreateAdd(begin, b.getInt64(w));
                        if (lanes > 1) {
                          begin = b.CreateMul(b.CreateUDiv(u, b.getInt64(lanes)), b.getInt64(unitsPerGroup));
                          end = b.CreateAdd(begin, b.getInt64(unitsPerGroup));
                        }
                        b.CreateCall(bodyFn, {stackArray(b, fn, b.getPtrTy(), ins), stackArray(b, fn, b.getPtrTy(), outs),
                                              stackArray(b, fn, b.getInt64Ty(), sizes), begin, end});
                      });
      kernels.push_back(g);
    }
  }
  useLibdevice(m);
  if (std::string e = linkLibdevice(m, opts.libdevice); !e.empty()) return e;
  // Only the entries stay visible; libdevice and bodies inline into them.
  for (llvm::Function& f : m)
    if (!f.isDeclaration() && f.getLinkage() != llvm::GlobalValue::InternalLinkage) {
      bool entry = false;
      for (const GpuKernel& g : kernels) entry |= f.getName() == g.entry;
      if (!entry) f.setLinkage(llvm::GlobalValue::InternalLinkage);
    }
  if (std::string msgs = verifyModule(cm); !msgs.empty()) return "codegen: invalid GPU LLVM IR (a dscc bug):\n" + msgs;
  runOptPipeline(m, *tm, opts.optLevel);
  if (llvmText) *llvmText = emitLLVMText(cm);
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return "codegen: NVPTX cannot emit PTX";
  pm.run(m);
  ptx.assign(buf.begin(), buf.end());
  return "";
}

}  // namespace dscc::codegen
