// libFuzzer target: the tuning-file reader, and writing back and re-reading what it accepts.
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz/FuzzInput.h"
#include "tuner/TuningTable.h"

using namespace dscc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::MemFile f(data, size, "fuzz.yaml");
  if (f.path().empty()) return 0;
  tuner::TuningFile t;
  std::string err;
  if (!tuner::readTuning(f.path(), t, err)) return 0;
  // An accepted file writes back to one the reader accepts again.
  std::string text = tuner::writeTuning(t);
  fuzz::MemFile g(reinterpret_cast<const uint8_t*>(text.data()), text.size(), "again.yaml");
  tuner::TuningFile u;
  if (!tuner::readTuning(g.path(), u, err)) {
    std::fprintf(stderr, "the reader refused what it wrote:\n%s\n--- written:\n%s\n", err.c_str(), text.c_str());
    __builtin_trap();
  }
  return 0;
}
