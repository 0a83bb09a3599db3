// `dscc import model.onnx -o model.dsc`: writes an ONNX model as a dscc program plus its weights (.npy) next to it.
#include <filesystem>
#include <iostream>
#include <memory>

#include "frontend/OnnxImporter.h"
#include "tools/Commands.h"

namespace dscc::tools {
namespace {

struct ImportOpts {
  std::string file, output;
  std::shared_ptr<frontend::ImportOptions> io = std::make_shared<frontend::ImportOptions>();
};

int cmdImport(const ImportOpts& o) {
  const frontend::ImportOptions& io = *o.io;
  if (!frontend::isOnnxPath(o.file)) {
    std::cerr << "dscc: error: '" << o.file << "' is not an ONNX model (expected a .onnx file)\n";
    return 1;
  }
  bool toStdout = o.output.empty();
  // Weights go next to the program as STEM.NAME.npy.
  std::string prefix = toStdout ? "" : std::filesystem::path(o.output).stem().string() + ".";
  frontend::Imported imp;
  if (!frontend::importOnnx(o.file, io, prefix, imp, std::cerr)) return 1;
  if (toStdout) {
    if (!imp.weights.empty()) {
      std::cerr << "dscc: error: the model has weights, which are written as files next to the program; give -o "
                   "FILE.dsc\n";
      return 1;
    }
    std::cout << imp.text;
    return 0;
  }
  std::string err;
  if (!frontend::writeImported(imp, o.output, &err)) {
    std::cerr << "dscc: error: " << err << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

Command addImportCommand(CLI::App& app) {
  auto o = std::make_shared<ImportOpts>();
  auto* cmd = app.add_subcommand("import", "convert an ONNX model to a dscc program (docs/onnx.md)");
  cmd->add_option("file", o->file, "the ONNX model (.onnx)")->required();
  cmd->add_option("-o,--output", o->output, "the .dsc program to write (weights: STEM.NAME.npy beside it); without it, "
                                            "the program goes to standard output (models without weights)");
  addImportOptions(cmd, o->io);
  return {cmd, [o] { return cmdImport(*o); }};
}

void addImportOptions(CLI::App* cmd, const std::shared_ptr<frontend::ImportOptions>& o) {
  cmd->add_flag("--symbolic-dims", o->symbolicDims,
                "ONNX models: make every static dim of a graph input a symbol (INPUT_dK)");
  cmd->add_option("--where", o->facts, "ONNX models: FACT about the symbols, e.g. 'batch in [1, 64]' (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option_function<std::vector<std::string>>(
         "--const",
         [o](const std::vector<std::string>& v) {
           for (const std::string& c : v) {
             size_t eq = c.find('=');
             if (eq == std::string::npos || eq == 0 || eq + 1 == c.size())
               throw CLI::ValidationError("--const", "bad '" + c + "' (expected NAME=FILE.npy)");
             o->consts[c.substr(0, eq)] = c.substr(eq + 1);
           }
         },
         "ONNX models: NAME=FILE.npy binds graph input NAME to a constant (repeatable)")
      ->allow_extra_args(false);
}

std::vector<std::string> importOptionArgs(const frontend::ImportOptions& o) {
  std::vector<std::string> a;
  if (o.symbolicDims) a.push_back("--symbolic-dims");
  for (const auto& f : o.facts) a.push_back("--where=" + f);
  for (const auto& [name, file] : o.consts) a.push_back("--const=" + name + "=" + file);
  return a;
}

}  // namespace dscc::tools
