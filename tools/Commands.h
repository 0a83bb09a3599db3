// The subcommands of the `dscc` driver: each file adds its own options and returns how to run it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "frontend/OnnxImporter.h"

namespace dscc::tools {

/// A registered subcommand: its CLI11 app, and the action to run when it was given.
struct Command {
  CLI::App* app = nullptr;
  /// Runs the command with the parsed options; returns the exit status.
  std::function<int()> run;
};

/// `dscc run FILE`: a .dsc program in the interpreter, or a compiled model (.so).
Command addRunCommand(CLI::App& app);
/// `dscc compile FILE -o OUT`: the compiler driver (tools/CompileCommand.cpp).
Command addCompileCommand(CLI::App& app);
/// `dscc compile ARGS...` in this process, as the command line runs it (the
/// same options, checks and session): `args` in command-line order, without
/// "compile". Reports on std::cerr (text output on std::cout); returns the
/// exit status. Used by `dscc run --target` and the Python module.
int runCompileCommand(const std::vector<std::string>& args);
/// `dscc explain FILE --dim ...`: kernels and the versions that run at given sizes.
Command addExplainCommand(CLI::App& app);
/// `dscc view FILE -o page.html`: the program as a graph in a self-contained HTML page (tools/ViewCommand.cpp).
Command addViewCommand(CLI::App& app);
/// `dscc import model.onnx -o model.dsc`: an ONNX model as a program (tools/ImportCommand.cpp).
Command addImportCommand(CLI::App& app);
/// Adds the import options (`--symbolic-dims`, `--where FACT`, `--const
/// NAME=FILE.npy`) to `cmd`, stored into `o`; they apply to ONNX models.
void addImportOptions(CLI::App* cmd, const std::shared_ptr<frontend::ImportOptions>& o);
/// The import options as command-line arguments again (for a child `dscc compile`).
std::vector<std::string> importOptionArgs(const frontend::ImportOptions& o);

}  // namespace dscc::tools
