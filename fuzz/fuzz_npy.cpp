// libFuzzer target: the .npy reader (header parser, sizes, body) on arbitrary bytes.
#include <cstdint>
#include <string>

#include "fuzz/FuzzInput.h"
#include "ir/Npy.h"

using namespace dscc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::MemFile f(data, size, "fuzz.npy");
  if (f.path().empty()) return 0;
  std::string err;
  auto t = readNpy(f.path(), &err);
  if (t) {
    // Whatever is read is a consistent tensor.
    if (t->numel() < 0 || size_t(t->numel()) * dtypeSize(t->dtype) != t->bytes.size()) __builtin_trap();
    for (int64_t i = 0; i < t->numel() && i < 64; ++i) (void)t->getF(i);
  }
  return 0;
}
