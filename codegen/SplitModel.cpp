// Splitting a model's module into per-kernel modules (CloneModule, renamed by content) and compiling them from bitcode on worker threads, each in its own LLVMContext.
#include "codegen/SplitModel.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "codegen/CompileCache.h"
#include "codegen/Jit.h"
#include "codegen/ModelPlan.h"

namespace dscc::codegen {

struct SplitModel::Kernel {
  std::string key, symbol;
  std::unique_ptr<llvm::Module> module;  // in the host module's context, until compiled
};

SplitModel::SplitModel() = default;
SplitModel::~SplitModel() = default;
size_t SplitModel::kernelCount() const { return kernels_.size(); }
const std::string& SplitModel::kernelKey(size_t i) const { return kernels_[i]->key; }
const std::string& SplitModel::kernelSymbol(size_t i) const { return kernels_[i]->symbol; }

namespace {

std::string printModule(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os, nullptr);
  return text;
}

// Removes every declaration and global the kernel does not use, so its IR
// (and key) depends on nothing else in the model.
void dropUnused(llvm::Module& m, llvm::Function* keep) {
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = m.begin(); it != m.end();) {
      llvm::Function& f = *it++;
      if (&f != keep && f.use_empty()) {
        f.eraseFromParent();
        changed = true;
      }
    }
    for (auto it = m.global_begin(); it != m.global_end();) {
      llvm::GlobalVariable& g = *it++;
      g.removeDeadConstantUsers();
      if (g.use_empty()) {
        g.eraseFromParent();
        changed = true;
      }
    }
  }
}

// Functions and globals in an order that depends only on what they are:
// the model's order (which kernel first declared tanhf) would otherwise make
// equal kernels print differently. Declarations and helpers by name, the
// kernel last.
void canonicalOrder(llvm::Module& m, llvm::Function* kernel) {
  std::vector<llvm::Function*> fns;
  for (llvm::Function& f : m)
    if (&f != kernel) fns.push_back(&f);
  std::sort(fns.begin(), fns.end(), [](llvm::Function* a, llvm::Function* b) {
    if (a->isDeclaration() != b->isDeclaration()) return a->isDeclaration();
    return a->getName() < b->getName();
  });
  fns.push_back(kernel);
  for (llvm::Function* f : fns) {
    f->removeFromParent();
    m.getFunctionList().push_back(f);
  }
  std::vector<llvm::GlobalVariable*> gvs;
  for (llvm::GlobalVariable& g : m.globals()) gvs.push_back(&g);
  std::sort(gvs.begin(), gvs.end(), [](llvm::GlobalVariable* a, llvm::GlobalVariable* b) { return a->getName() < b->getName(); });
  for (llvm::GlobalVariable* g : gvs) {
    g->removeFromParent();
    m.insertGlobalVariable(g);
  }
}

// `f` and every definition with local linkage it reaches (helpers such as
// dscc.ipow.i64, constant tables): what its module must define itself.
std::set<const llvm::GlobalValue*> localClosure(llvm::Function* f) {
  std::set<const llvm::GlobalValue*> seen = {f};
  std::vector<const llvm::Value*> work;
  auto visit = [&](const llvm::Value* v, auto& self) -> void {
    if (auto* gv = llvm::dyn_cast<llvm::GlobalValue>(v)) {
      if (gv->hasLocalLinkage() && !gv->isDeclaration() && seen.insert(gv).second) work.push_back(gv);
      return;
    }
    if (auto* c = llvm::dyn_cast<llvm::Constant>(v))
      for (const llvm::Use& op : c->operands()) self(op.get(), self);
  };
  work.push_back(f);
  while (!work.empty()) {
    const llvm::Value* v = work.back();
    work.pop_back();
    if (auto* fn = llvm::dyn_cast<llvm::Function>(v)) {
      for (const llvm::BasicBlock& bb : *fn)
        for (const llvm::Instruction& i : bb)
          for (const llvm::Use& op : i.operands()) visit(op.get(), visit);
    } else if (auto* g = llvm::dyn_cast<llvm::GlobalVariable>(v); g && g->hasInitializer()) {
      visit(g->getInitializer(), visit);
    }
  }
  return seen;
}

}  // namespace

std::string SplitModel::split(CodeModule& cm, const ModelPlan& plan, const std::string& salt) {
  if (std::string msgs = verifyModule(cm); !msgs.empty()) return "codegen: invalid LLVM IR (a dscc bug):\n" + msgs;
  llvm::Module& m = cm.module();
  host_ = &cm;
  // Kernel functions in program order: every version, then the tuned configurations' versions.
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add = [&](const KernelPlan& k) {
    for (size_t v = 0; v < k.versions.size(); ++v)
      if (seen.insert(k.functionName(v)).second) names.push_back(k.functionName(v));
  };
  for (const KernelPlan& k : plan.kernels) {
    add(k);
    if (k.tuning)
      for (const TunedConfig& c : k.tuning->configs) add(c.plan);
  }
  std::map<std::string, llvm::Function*> bySymbol;  // declarations left in the host module
  for (const std::string& name : names) {
    llvm::Function* f = m.getFunction(name);
    if (!f || f->isDeclaration()) continue;  // a GPU model's kernels are PTX
    llvm::ValueToValueMapTy vmap;
    std::set<const llvm::GlobalValue*> own = localClosure(f);
    std::unique_ptr<llvm::Module> km =
        llvm::CloneModule(m, vmap, [&](const llvm::GlobalValue* gv) { return own.count(gv) > 0; });
    auto* kf = llvm::cast<llvm::Function>(vmap[f]);
    dropUnused(*km, kf);
    canonicalOrder(*km, kf);
    // Names do not change the machine code; without them equal kernels of
    // different models (or layers) have equal IR.
    kf->setName("dscc.kernel");
    for (llvm::Argument& a : kf->args()) a.setName("");
    for (llvm::BasicBlock& bb : *kf) {
      bb.setName("");
      for (llvm::Instruction& i : bb) i.setName("");
    }
    km->setModuleIdentifier("dscc.kernel");
    km->setSourceFileName("dscc.kernel");
    std::string text = printModule(*km);
    std::string symbol = "dscc.k." + sha256Hex(text).substr(0, 16);
    llvm::Function*& decl = bySymbol[symbol];
    if (!decl) {
      kf->setName(symbol);
      kf->setLinkage(llvm::GlobalValue::ExternalLinkage);
      kf->setVisibility(llvm::GlobalValue::HiddenVisibility);
      kf->setDSOLocal(true);
      km->setModuleIdentifier(symbol);
      km->setSourceFileName(symbol);
      auto k = std::make_unique<Kernel>();
      k->key = sha256Hex(salt + "\nkernel\n" + text);
      k->symbol = symbol;
      k->module = std::move(km);
      kernels_.push_back(std::move(k));
      f->deleteBody();
      f->setName(symbol);
      f->setLinkage(llvm::GlobalValue::ExternalLinkage);
      f->setVisibility(llvm::GlobalValue::HiddenVisibility);
      f->setDSOLocal(true);
      decl = f;
    } else {
      // The same code as an earlier kernel: one function serves both.
      f->replaceAllUsesWith(decl);
      f->eraseFromParent();
    }
  }
  hostKey_ = sha256Hex(salt + "\nhost\n" + printModule(m));
  return "";
}

std::string SplitModel::compile(const std::vector<size_t>& which, bool host, const ObjectOptions& opts, int threads,
                                std::vector<std::string>& objects, std::string& hostObject,
                                const std::function<void(size_t, size_t)>& progress) {
  objects.resize(kernels_.size());
  // Bitcode is written here, in the host module's context; each worker reads
  // it into a context of its own (LLVM contexts are single-threaded).
  std::vector<std::string> bitcode(which.size());
  for (size_t j = 0; j < which.size(); ++j) {
    llvm::raw_string_ostream os(bitcode[j]);
    llvm::WriteBitcodeToFile(*kernels_[which[j]]->module, os);
  }
  size_t total = which.size() + (host ? 1 : 0);
  std::mutex mu;
  size_t done = 0;
  std::vector<std::string> errors(which.size());
  auto finished = [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++done;
    if (progress) progress(done, total);
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t j; (j = next.fetch_add(1)) < which.size();) {
      llvm::LLVMContext ctx;
      auto mod = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode[j], kernels_[which[j]]->symbol), ctx);
      if (!mod) {
        errors[j] = "codegen: cannot read back kernel bitcode: " + llvm::toString(mod.takeError());
      } else if (std::string e = optimizeModule(**mod, opts); !e.empty()) {
        errors[j] = e;
      } else if (std::string e2 = emitMachineCode(**mod, opts, false, objects[which[j]]); !e2.empty()) {
        errors[j] = e2;
      }
      finished();
    }
  };
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  size_t n = std::min<size_t>(threads > 0 ? static_cast<size_t>(threads) : hw, which.size());
  std::vector<std::thread> pool;
  // This thread compiles the host module, then takes kernels too.
  for (size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  std::string hostError;
  if (host) {
    if (std::string e = optimizeModule(*host_, opts); !e.empty()) hostError = e;
    else if (std::string e2 = emitMachineCode(*host_, opts, false, hostObject); !e2.empty()) hostError = e2;
    finished();
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (!hostError.empty()) return hostError;
  for (const std::string& e : errors)
    if (!e.empty()) return e;
  return "";
}

}  // namespace dscc::codegen
