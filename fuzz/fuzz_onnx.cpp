// libFuzzer target: the ONNX importer (frontend/) on arbitrary bytes as a model file.
#include <cstdint>
#include <sstream>
#include <string>

#include "frontend/OnnxImporter.h"
#include "fuzz/FuzzInput.h"

using namespace dscc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::MemFile f(data, size, "fuzz.onnx");
  if (f.path().empty()) return 0;
  SourceMgr sm;
  std::ostringstream out;
  DiagEngine diags(sm, out);
  frontend::ImportOptions opts;
  frontend::importOnnxModule(f.path(), opts, sm, diags, out);
  return 0;
}
