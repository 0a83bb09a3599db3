// The subcommands of the `dscc` driver: each file adds its own options and returns how to run it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

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
/// `dscc explain FILE --dim ...`: kernels and the versions that run at given sizes.
Command addExplainCommand(CLI::App& app);
/// `dscc import model.onnx -o model.dsc`: an ONNX model as a program (tools/ImportCommand.cpp).
Command addImportCommand(CLI::App& app);

}  // namespace dscc::tools
