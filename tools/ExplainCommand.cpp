// `dscc explain`: the kernels of a program and which version of each runs at given sizes.
#include "tools/Commands.h"

namespace dscc::tools {

Command addExplainCommand(CLI::App& app) {
  auto* c = app.add_subcommand("explain", "show kernels and the versions chosen at given sizes (not yet implemented)");
  return {c, [] { return 1; }};
}

}  // namespace dscc::tools
