// `dscc compile`: a .dsc program to a shared library, an object file, a header or inspection output.
#include "tools/Commands.h"

namespace dscc::tools {

Command addCompileCommand(CLI::App& app) {
  auto* c = app.add_subcommand("compile", "compile a program to a shared library (not yet implemented)");
  return {c, [] { return 1; }};
}

}  // namespace dscc::tools
