// What every dscc tool's main shares: the --version text and gcc-style usage errors (`TOOL: error: ...`, exit 2).
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "BuildInfo.h"
#include "runtime/dscc_runtime.h"

namespace dscc::tools {

/// The exit status of every usage error (unknown flag, bad or missing value), as gcc and clang use.
constexpr int kUsageError = 2;

/// `TOOL VERSION` on the first line (the form help2man reads), then the LLVM,
/// Z3 and ONNX versions the build used and the runtime's ABI and SONAME.
inline std::string versionText(const std::string& tool) {
  return tool + " " DSCC_VERSION_STRING "\nbuilt with LLVM " DSCC_BUILT_LLVM_VERSION ", Z3 " DSCC_BUILT_Z3_VERSION
               ", ONNX " DSCC_BUILT_ONNX_VERSION "\nruntime ABI " +
         std::to_string(DSCC_ABI_VERSION) + " (" DSCC_RUNTIME_SONAME ")";
}

/// Adds `--version` (printing versionText) to `app`.
inline void addVersionFlag(CLI::App& app, const std::string& tool) {
  app.set_version_flag("--version", [tool] { return versionText(tool); }, "print the version (and the LLVM, Z3 and ONNX versions) and exit");
}

/// Parses `args` (CLI11's order: last argument first). Returns -1 when the
/// tool should go on; otherwise the status to exit with: 0 after --help or
/// --version, kUsageError after printing `TOOL: error: MESSAGE`.
inline int parseCommandLine(CLI::App& app, const std::string& tool, std::vector<std::string>& args) {
  app.name(tool);  // "Usage: dscc compile [OPTIONS] file" in the help of a subcommand
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << tool << ": error: " << e.what() << " (see " << tool << " --help)\n";
    return kUsageError;
  }
  return -1;
}

/// The arguments of main in CLI11's order (last first), without argv[0].
inline std::vector<std::string> reversedArgs(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i > 0; --i) args.push_back(argv[i]);
  return args;
}

}  // namespace dscc::tools
