// dscc-run: `dscc run` alone, for machines that build only the runtime (-DDSCC_RUNTIME_ONLY=ON, no LLVM or Z3).
#include <CLI/CLI.hpp>
#include <iostream>

#include "tools/Commands.h"
#include "tools/ToolMain.h"

int main(int argc, char** argv) {
  CLI::App app{"dscc-run: run compiled dscc models (and .dsc files in the interpreter); see `dscc run`"};
  app.require_subcommand(1, 1);
  dscc::tools::Command run = dscc::tools::addRunCommand(app);
  dscc::tools::addVersionFlag(app, "dscc-run");
  std::vector<std::string> args = dscc::tools::reversedArgs(argc, argv);
  if (int rc = dscc::tools::parseCommandLine(app, "dscc-run", args); rc >= 0) return rc;
  return run.run();
}
