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
  bool symbolicDims = false;
  std::vector<std::string> facts, consts;
};

int cmdImport(const ImportOpts& o) {
  frontend::ImportOptions io;
  io.symbolicDims = o.symbolicDims;
  io.facts = o.facts;
  for (const std::string& c : o.consts) {
    size_t eq = c.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == c.size()) {
      std::cerr << "dscc: error: bad --const '" << c << "' (expected NAME=FILE.npy)\n";
      return 1;
    }
    io.consts[c.substr(0, eq)] = c.substr(eq + 1);
  }
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
  cmd->add_flag("--symbolic-dims", o->symbolicDims, "make every static dim of a graph input a symbol (INPUT_dK)");
  cmd->add_option("--where", o->facts, "FACT: a fact about the symbols, e.g. 'batch in [1, 64]' (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--const", o->consts, "NAME=FILE.npy: bind graph input NAME to a constant (repeatable)")
      ->allow_extra_args(false);
  return {cmd, [o] { return cmdImport(*o); }};
}

}  // namespace dscc::tools
