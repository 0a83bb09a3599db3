// Ahead-of-time compilation of a CodeModule for the host's architecture: optimised IR, assembly, object files.
#pragma once

#include <string>

namespace llvm {
class Module;
}  // namespace llvm

namespace dscc::codegen {

class CodeModule;

/// How to compile ahead of time.
struct ObjectOptions {
  /// 0-3, like -O.
  int optLevel = 2;
  /// -Os: optimise for size (LLVM's Os pipeline; every function gets `optsize`).
  bool optimizeSize = false;
  /// The CPU to tune and select instructions for: "native" (this machine's,
  /// with its features), or an LLVM CPU name such as "x86-64-v3".
  std::string cpu = "native";
};

/// Verifies `m` and runs the -O pipeline for the target on it, in place.
/// Returns "" or the verifier's / target lookup's error.
std::string optimizeModule(CodeModule& m, const ObjectOptions& opts);

/// Generates machine code for `m` (already optimised): an ELF relocatable
/// object (position independent, for shared libraries) or, with `assembly`,
/// its assembly text. Returns "" or an error; the bytes go to `out`.
std::string emitMachineCode(CodeModule& m, const ObjectOptions& opts, bool assembly, std::string& out);

/// The target triple and CPU that `opts` selects, e.g. "x86_64-pc-linux-gnu, znver3".
std::string describeTarget(const ObjectOptions& opts);

/// Everything about the target and options that decides the machine code for
/// a module: triple, CPU, its feature string (for `native`, this machine's),
/// -O level and -Os. Part of every compile cache key (codegen/CompileCache.h).
std::string targetKey(const ObjectOptions& opts);

/// optimizeModule and emitMachineCode on a bare module (one whose context the
/// caller owns, e.g. a kernel compiled on a worker thread).
std::string optimizeModule(llvm::Module& m, const ObjectOptions& opts);
/// See optimizeModule(llvm::Module&, ...).
std::string emitMachineCode(llvm::Module& m, const ObjectOptions& opts, bool assembly, std::string& out);

}  // namespace dscc::codegen
