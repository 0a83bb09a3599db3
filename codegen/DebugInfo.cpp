// `dscc compile -g`: one DISubprogram per generated function and a .dsc line on every instruction (DIBuilder).
#include "codegen/DebugInfo.h"

#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/Module.h>

#include <filesystem>

#include "codegen/Jit.h"
#include "codegen/ModelPlan.h"

namespace dscc::codegen {

namespace {

// The earliest line of a kernel: its fusion op's, else that of the first body op that has one.
int kernelLine(const KernelPlan& k) {
  if (!k.fusion) return 0;
  int line = k.fusion->loc.valid() ? k.fusion->loc.line : 0;
  for (const auto& op : k.fusion->body)
    if (op->loc.valid() && (line == 0 || op->loc.line < line)) line = op->loc.line;
  return line;
}

}  // namespace

void addDebugInfo(CodeModule& cm, const ModelPlan& plan, const std::string& file, bool optimized) {
  llvm::Module& m = cm.module();
  m.addModuleFlag(llvm::Module::Warning, "Debug Info Version", llvm::DEBUG_METADATA_VERSION);
  m.addModuleFlag(llvm::Module::Warning, "Dwarf Version", 5);
  std::filesystem::path p = std::filesystem::absolute(file);
  llvm::DIBuilder dib(m);
  llvm::DIFile* df = dib.createFile(p.filename().string(), p.parent_path().string());
  dib.createCompileUnit(llvm::dwarf::DW_LANG_C, df, "dscc", optimized, "", 0);
  llvm::DISubroutineType* ty = dib.createSubroutineType(dib.getOrCreateTypeArray({}));
  int hostLine = plan.func && plan.func->loc.valid() ? plan.func->loc.line : 1;
  // The line of each function: its kernel's, or 0 for the host function and helpers.
  auto lineOf = [&](const llvm::Function& fn) {
    std::string name = fn.getName().str();
    for (const KernelPlan& k : plan.kernels)
      if (name.rfind(k.symbol + ".", 0) == 0 || name == k.symbol) return kernelLine(k);
    return 0;
  };
  for (llvm::Function& fn : m) {
    if (fn.isDeclaration() || fn.getSubprogram()) continue;
    int own = lineOf(fn);
    int line = own ? own : hostLine;
    std::string name = fn.getName().str();
    auto flags = llvm::DISubprogram::SPFlagDefinition;
    if (optimized) flags |= llvm::DISubprogram::SPFlagOptimized;
    if (fn.hasLocalLinkage()) flags |= llvm::DISubprogram::SPFlagLocalToUnit;
    llvm::DISubprogram* sp =
        dib.createFunction(df, name, name, df, line, ty, line, llvm::DINode::FlagPrototyped, flags);
    fn.setSubprogram(sp);
    auto* loc = llvm::DILocation::get(m.getContext(), line, 0, sp);
    for (llvm::BasicBlock& bb : fn)
      for (llvm::Instruction& inst : bb) {
        inst.setDebugLoc(loc);
        // In the host function, a launch (a call passing a kernel function) is on that kernel's line.
        if (own || !llvm::isa<llvm::CallBase>(inst)) continue;
        for (const llvm::Use& u : llvm::cast<llvm::CallBase>(inst).args())
          if (auto* callee = llvm::dyn_cast<llvm::Function>(u.get()); callee && !callee->isDeclaration())
            if (int l = lineOf(*callee)) {
              inst.setDebugLoc(llvm::DILocation::get(m.getContext(), l, 0, sp));
              break;
            }
      }
  }
  dib.finalize();
}

}  // namespace dscc::codegen
