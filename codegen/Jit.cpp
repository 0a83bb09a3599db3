// The ORC LLJIT wrapper (host target, -O pipeline), module ownership, IR text and verification.
#include "codegen/Jit.h"
#include "codegen/cpu/Streaming.h"

#include <mutex>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

namespace dscc::codegen {

CodeModule::CodeModule(const std::string& name)
    : ctx_(std::make_unique<llvm::LLVMContext>()), mod_(std::make_unique<llvm::Module>(name, *ctx_)) {}
// Out of line: the LLVM types are complete only here. Members are destroyed in
// reverse order, so the module goes before the context that owns its types.
CodeModule::~CodeModule() = default;
CodeModule::CodeModule(CodeModule&&) noexcept = default;
CodeModule& CodeModule::operator=(CodeModule&&) noexcept = default;

std::string emitLLVMText(const CodeModule& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.module().print(os, nullptr);
  os.flush();
  return text;
}

std::string verifyModule(const CodeModule& m) {
  std::string msgs;
  llvm::raw_string_ostream os(msgs);
  for (const llvm::Function& f : m.module()) {
    if (f.isDeclaration()) continue;
    if (llvm::verifyFunction(f, &os)) os << "(in function " << f.getName() << ")\n";
  }
  // Module-level rules (declarations, globals) that no single function covers.
  if (msgs.empty() && llvm::verifyModule(m.module(), &os)) os << "(module " << m.module().getName() << ")\n";
  os.flush();
  return msgs;
}

namespace {

llvm::CodeGenOptLevel codeGenLevel(int level) {
  switch (level) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

llvm::OptimizationLevel optimizationLevel(int level) {
  switch (level) {
    case 0: return llvm::OptimizationLevel::O0;
    case 1: return llvm::OptimizationLevel::O1;
    case 2: return llvm::OptimizationLevel::O2;
    default: return llvm::OptimizationLevel::O3;
  }
}

}  // namespace

void runOptPipeline(llvm::Module& m, llvm::TargetMachine& tm, int level, bool libmvec, bool size) {
  if (size) level = 2;
  // LLVM tunes recent Intel server CPUs to prefer 256-bit vectors (for the
  // clock drop of 512-bit code on Skylake-SP). Kernels are long vector
  // loops, and the loop vectoriser then widened a softmax row's loop to 8
  // lanes where an AVX-512 register has 16: prefer the whole register. No
  // effect where the widest vectors are narrower.
  if (llvm::Triple(m.getTargetTriple()).getArch() == llvm::Triple::x86_64)
    for (llvm::Function& fn : m)
      if (!fn.isDeclaration() && !fn.hasFnAttribute("prefer-vector-width"))
        fn.addFnAttr("prefer-vector-width", "512");
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  // What clang enables at -O2 and above; the loop vectoriser is the point.
  pto.LoopVectorization = level >= 2;
  pto.SLPVectorization = level >= 2;
  llvm::PassBuilder pb(&tm, pto);
  // With glibc's libmvec the vectorisers turn expf, erff, tanhf, ... into
  // calls of their 4- and 8-lane versions (the artifact links -lmvec).
  llvm::Triple triple(m.getTargetTriple());
  llvm::TargetLibraryInfoImpl tlii(triple);
  if (libmvec) {
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
    // glibc 2.35 added these; LLVM 19's preset does not list them yet.
    static const llvm::VecDesc extra[] = {
        {"erff", "_ZGVbN4v_erff", llvm::ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
        {"erff", "_ZGVdN8v_erff", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
        {"tanhf", "_ZGVbN4v_tanhf", llvm::ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
        {"tanhf", "_ZGVdN8v_tanhf", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
        {"erf", "_ZGVbN2v_erf", llvm::ElementCount::getFixed(2), false, "_ZGV_LLVM_N2v"},
        {"erf", "_ZGVdN4v_erf", llvm::ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
        {"tanh", "_ZGVbN2v_tanh", llvm::ElementCount::getFixed(2), false, "_ZGV_LLVM_N2v"},
        {"tanh", "_ZGVdN4v_tanh", llvm::ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"}};
    tlii.addVectorizableFunctions(extra);
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = level == 0 ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                                           : pb.buildPerModuleDefaultPipeline(size ? llvm::OptimizationLevel::Os
                                                                                 : optimizationLevel(level));
  mpm.run(m, mam);
  // After vectorisation: the streaming versions' vector stores (codegen/cpu/Streaming.h).
  if (level > 0) streamStores(m);
}

std::unique_ptr<Jit> Jit::create(std::string* err, int optLevel) {
  static std::once_flag initOnce;
  std::call_once(initOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto fail = [&](llvm::Error e) -> std::unique_ptr<Jit> {
    if (err) *err = llvm::toString(std::move(e));
    return nullptr;
  };
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return fail(jtmb.takeError());
  jtmb->setCodeGenOptLevel(codeGenLevel(optLevel));
  auto tm = jtmb->createTargetMachine();
  if (!tm) return fail(tm.takeError());
  auto lljit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
  if (!lljit) return fail(lljit.takeError());
  // libm and libc symbols (tanhf, erff, expf, ...) come from this process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*lljit)->getDataLayout().getGlobalPrefix());
  if (!gen) return fail(gen.takeError());
  (*lljit)->getMainJITDylib().addGenerator(std::move(*gen));

  std::unique_ptr<Jit> j(new Jit());
  j->jit_ = std::move(*lljit);
  j->tm_ = std::move(*tm);
  j->optLevel_ = optLevel;
  return j;
}

Jit::~Jit() = default;

std::string Jit::targetTriple() const { return tm_->getTargetTriple().str(); }

void Jit::optimize(CodeModule& m) const {
  // The target's layout and triple first: the optimiser's cost models read them.
  m.mod_->setDataLayout(tm_->createDataLayout());
  m.mod_->setTargetTriple(tm_->getTargetTriple().str());
  runOptPipeline(*m.mod_, *tm_, optLevel_);
}

bool Jit::addModule(CodeModule m, std::string* err) {
  // The optimiser trusts well-formed IR; a broken module is a lowering bug
  // to report, not to compile.
  if (std::string msgs = verifyModule(m); !msgs.empty()) {
    if (err) *err = "invalid LLVM IR:\n" + msgs;
    return false;
  }
  optimize(m);
  if (llvm::Error e = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(m.mod_), std::move(m.ctx_)))) {
    if (err) *err = llvm::toString(std::move(e));
    return false;
  }
  return true;
}

void* Jit::lookup(const std::string& name, std::string* err) {
  auto sym = jit_->lookup(name);
  if (!sym) {
    if (err) *err = llvm::toString(sym.takeError());
    return nullptr;
  }
  return sym->toPtr<void*>();
}

}  // namespace dscc::codegen
