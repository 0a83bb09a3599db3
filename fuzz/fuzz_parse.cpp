// libFuzzer target: the lexer, parser and verifier on arbitrary text, and the printer on what parses.
#include <cstdint>
#include <sstream>
#include <string>

#include "ir/Parser.h"
#include "ir/Printer.h"

using namespace dscc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SourceMgr sm;
  std::ostringstream diagOut;
  DiagEngine diags(sm, diagOut);
  int id = sm.addBuffer("fuzz.dsc", std::string(reinterpret_cast<const char*>(data), size));
  auto m = parseModule(sm, id, diags);
  if (!m) return 0;
  // What parses must print; the printed text must parse again (round trip).
  std::string text = printModule(*m);
  SourceMgr sm2;
  std::ostringstream diagOut2;
  DiagEngine diags2(sm2, diagOut2);
  int id2 = sm2.addBuffer("printed.dsc", text);
  auto again = parseModule(sm2, id2, diags2);
  if (!again) {
    // A module that does not survive its own printing is a printer or parser bug.
    __builtin_trap();
  }
  return 0;
}
