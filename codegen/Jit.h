// LLVM modules with their contexts, IR text and verification, and the in-process JIT for the host CPU.
#pragma once

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
namespace orc {
class LLJIT;
}  // namespace orc
}  // namespace llvm

namespace dscc::codegen {

/// An LLVM module together with the context that owns its types and
/// constants, so callers outside codegen/ can hold one without LLVM headers.
class CodeModule {
 public:
  /// An empty module named `name`.
  explicit CodeModule(const std::string& name);
  ~CodeModule();
  CodeModule(CodeModule&&) noexcept;
  CodeModule& operator=(CodeModule&&) noexcept;

  /// The module; valid until the CodeModule is moved from or handed to a Jit.
  llvm::Module& module() const { return *mod_; }
  /// The context owning the module's types and constants.
  llvm::LLVMContext& context() const { return *ctx_; }

 private:
  friend class Jit;
  std::unique_ptr<llvm::LLVMContext> ctx_;
  std::unique_ptr<llvm::Module> mod_;
};

/// Runs the new pass manager's default pipeline, as `opt -O<level>` does, with
/// the target machine so the vectoriser sees the target's registers and costs.
/// `libmvec`: math calls may become calls of glibc's vector math library
/// (x86-64 only; whatever runs the code must link libmvec). `size`: the -Os
/// pipeline (level is then taken as 2).
void runOptPipeline(llvm::Module& m, llvm::TargetMachine& tm, int level, bool libmvec = false, bool size = false);

/// The module as LLVM assembly text (what `--emit=llvm` prints).
std::string emitLLVMText(const CodeModule& m);

/// Runs the LLVM verifier on every function of `m`. Returns "" when all are
/// well formed, else the verifier's messages, one function after another.
std::string verifyModule(const CodeModule& m);

/// Compiles modules in memory for the host CPU (x86-64) with ORC's LLJIT and
/// hands out the addresses of their functions. Functions stay valid while the
/// Jit lives. Calls to libm (tanhf, erff, ...) resolve in the running process.
class Jit {
 public:
  /// A JIT for the host at optimisation level `optLevel` (0-3, like -O);
  /// null with `err` set when LLVM cannot target the host.
  static std::unique_ptr<Jit> create(std::string* err, int optLevel = 2);
  ~Jit();

  /// Verifies `m`, optimises it with the -O pipeline for the host CPU (its
  /// vector width and cost model) and adds it to the JIT. Consumes `m`.
  /// Returns false with `err` set on a verifier or JIT error.
  bool addModule(CodeModule m, std::string* err);

  /// Optimises `m` in place exactly as addModule does, without adding it:
  /// the IR the host will run, for inspection (`--emit=llvm` after -O) and tests.
  void optimize(CodeModule& m) const;

  /// Compiles (on first use) and returns function `name` of an added module;
  /// null with `err` set when there is no such function.
  void* lookup(const std::string& name, std::string* err);

  /// The host's target triple (e.g. `x86_64-pc-linux-gnu`).
  std::string targetTriple() const;

 private:
  Jit() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  int optLevel_ = 2;
};

}  // namespace dscc::codegen
