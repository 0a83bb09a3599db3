// ONNX import: a ModelProto file becomes a dscc program (text plus the weights it references).
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ir/Diagnostics.h"
#include "ir/IR.h"
#include "ir/Tensor.h"

namespace dscc::frontend {

/// How a model is imported (docs/onnx.md).
struct ImportOptions {
  /// Every static dim of a graph input becomes a fresh symbol (`x_d0`, ...).
  bool symbolicDims = false;
  /// Extra `where` facts, as written in the IR (`B in [1, 64]`, `S % 8 == 0`).
  std::vector<std::string> facts;
  /// Graph inputs bound to constants: ONNX input name -> .npy file.
  std::map<std::string, std::string> consts;
};

/// An imported model: the program's text and the weights it names.
struct Imported {
  /// The `.dsc` program: one `func @main`; weights are `constant file("NAME.npy")`.
  std::string text;
  /// The contents of each file the text names, by the name written in the text.
  std::map<std::string, std::shared_ptr<const Tensor>> weights;
  /// ONNX graph input name -> argument name of @main (names are sanitised).
  std::map<std::string, std::string> inputNames;
  /// ONNX graph output names, in return order.
  std::vector<std::string> outputNames;
  /// Line of `text` -> what of the model it came from (`node 'N' (Op, opset
  /// K; inputs f32[batch, 4])`, `graph inputs`), for diagnostics that must
  /// not cite lines of a text the user never saw.
  std::map<int, std::string> lineLabels;
};

/// Reads and converts `path`. Errors go to `err` as `PATH: error: node 'N'
/// (Op, opset K): message`; returns false after any. `weightPrefix` is
/// prepended to the weight file names written in the text (e.g. "model.").
bool importOnnx(const std::string& path, const ImportOptions& opts, const std::string& weightPrefix, Imported& out,
                std::ostream& err);

/// True if `path` names an ONNX model (by its `.onnx` extension).
bool isOnnxPath(const std::string& path);

/// Imports `path` and parses the program into buffer `path` of `sm` (so
/// diagnostics quote the imported line, which names its ONNX node), with the
/// weights attached to their constants. Returns null after reporting errors;
/// `names`, when given, receives the import's name maps.
std::unique_ptr<Module> importOnnxModule(const std::string& path, const ImportOptions& opts, SourceMgr& sm,
                                         DiagEngine& diags, std::ostream& err, Imported* names = nullptr);

/// Writes `imp` as `dscPath` plus one `.npy` per weight next to it (the text
/// names them relative to the program). Returns false with `err` set.
bool writeImported(const Imported& imp, const std::string& dscPath, std::string* err);

}  // namespace dscc::frontend
