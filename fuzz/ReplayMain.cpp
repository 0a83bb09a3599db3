// A main for the fuzz targets without libFuzzer's engine: runs LLVMFuzzerTestOneInput once on every file named (or in a folder named).
//
// Builds that are not DSCC_FUZZ (gcc, with or without DSCC_SANITIZE) link
// each fuzz target with this instead of -fsanitize=fuzzer, so the seed
// corpora and the crash regressions of test/fuzz/ replay everywhere
// (ctest fuzz_regression_TARGET, through scripts/fuzz-corpus.sh --replay).
// Arguments starting with '-' (libFuzzer's options) are ignored. A crash is
// the sanitizer's or the signal's; this prints each file before it runs, so
// the last line names the input that crashed.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (!a.empty() && a[0] == '-') continue;
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      for (const auto& e : fs::directory_iterator(a, ec))
        if (e.is_regular_file()) files.push_back(e.path().string());
    } else if (fs::is_regular_file(a, ec)) {
      files.push_back(a);
    } else {
      std::fprintf(stderr, "replay: error: '%s' is neither a file nor a folder\n", a.c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::fprintf(stderr, "replay: %s\n", f.c_str());
    std::ifstream in(f, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "replay: %zu inputs ran without a crash\n", files.size());
  return 0;
}
