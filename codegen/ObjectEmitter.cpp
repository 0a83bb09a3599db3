// Ahead-of-time code generation for the host architecture with LLVM's TargetMachine (PIC objects and assembly).
#include "codegen/ObjectEmitter.h"

#include <memory>
#include <mutex>

#include <llvm/ADT/StringMap.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/Jit.h"

namespace dscc::codegen {
namespace {

struct Target {
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string triple, cpu, features;
};

std::string makeTarget(const ObjectOptions& opts, Target& t) {
  static std::once_flag initOnce;
  std::call_once(initOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  t.triple = llvm::sys::getDefaultTargetTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) return "codegen: no LLVM target for " + t.triple + ": " + err;
  std::string features;
  if (opts.cpu == "native") {
    t.cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    // Sorted, so the same machine always gets the same feature string.
    std::vector<std::string> fs;
    for (const auto& kv : host) fs.push_back((kv.second ? "+" : "-") + kv.first().str());
    std::sort(fs.begin(), fs.end());
    for (const std::string& f : fs) features += (features.empty() ? "" : ",") + f;
  } else {
    t.cpu = opts.cpu;
  }
  llvm::CodeGenOptLevel level = opts.optLevel <= 0   ? llvm::CodeGenOptLevel::None
                                : opts.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                : opts.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                                     : llvm::CodeGenOptLevel::Aggressive;
  llvm::TargetOptions to;
  t.features = features;
  t.tm.reset(target->createTargetMachine(t.triple, t.cpu, features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!t.tm) return "codegen: cannot create a target machine for " + t.triple + " (" + t.cpu + ")";
  return "";
}

}  // namespace

std::string describeTarget(const ObjectOptions& opts) {
  Target t;
  if (std::string e = makeTarget(opts, t); !e.empty()) return e;
  return t.triple + ", " + t.cpu;
}

std::string targetKey(const ObjectOptions& opts) {
  Target t;
  if (std::string e = makeTarget(opts, t); !e.empty()) return e;
  return t.triple + "\ncpu " + t.cpu + "\nfeatures " + t.features + "\n-O" + std::to_string(opts.optLevel) +
         (opts.optimizeSize ? " -Os" : "");
}

std::string optimizeModule(CodeModule& m, const ObjectOptions& opts) {
  if (std::string msgs = verifyModule(m); !msgs.empty()) return "codegen: invalid LLVM IR (a dscc bug):\n" + msgs;
  return optimizeModule(m.module(), opts);
}

std::string optimizeModule(llvm::Module& m, const ObjectOptions& opts) {
  Target t;
  if (std::string e = makeTarget(opts, t); !e.empty()) return e;
  m.setDataLayout(t.tm->createDataLayout());
  m.setTargetTriple(t.triple);
  if (opts.optimizeSize)
    for (llvm::Function& fn : m)
      if (!fn.isDeclaration()) fn.addFnAttr(llvm::Attribute::OptimizeForSize);
  runOptPipeline(m, *t.tm, opts.optLevel, /*libmvec=*/llvm::Triple(t.triple).getArch() == llvm::Triple::x86_64,
                 opts.optimizeSize);
  return "";
}

std::string emitMachineCode(CodeModule& m, const ObjectOptions& opts, bool assembly, std::string& out) {
  return emitMachineCode(m.module(), opts, assembly, out);
}

std::string emitMachineCode(llvm::Module& m, const ObjectOptions& opts, bool assembly, std::string& out) {
  Target t;
  if (std::string e = makeTarget(opts, t); !e.empty()) return e;
  m.setDataLayout(t.tm->createDataLayout());
  m.setTargetTriple(t.triple);
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  auto kind = assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
  if (t.tm->addPassesToEmitFile(pm, os, nullptr, kind)) return "codegen: the target cannot emit this file type";
  pm.run(m);
  out.assign(buf.begin(), buf.end());
  return "";
}

}  // namespace dscc::codegen
