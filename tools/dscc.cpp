// dscc: the user-facing driver; each subcommand lives in its own file (tools/*Command.cpp).
#include <CLI/CLI.hpp>
#include <iostream>

#include "ir/IR.h"
#include "tools/Commands.h"
#include "tools/ToolMain.h"

using namespace dscc;

namespace {

int cmdOps() {
  for (const auto& o : allOps()) {
    std::string n(o.name);
    n.resize(14, ' ');
    std::cout << n << o.summary << "\n";
  }
  return 0;
}

// gcc's spellings of the dependency and optimisation flags, as CLI11 options:
// -MD -MMD -MP become --MD --MMD --MP; -MF/-MT (value attached or next) become --MF/--MT VALUE; a bare -O is -O1.
std::vector<std::string> compilerStyleArgs(int argc, char** argv) {
  std::vector<std::string> in, out;
  for (int i = 1; i < argc; ++i) in.push_back(argv[i]);
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string& a = in[i];
    if (a == "-MD" || a == "-MMD" || a == "-MP") {
      out.push_back("-" + a);
    } else if (a.rfind("-MF", 0) == 0 || a.rfind("-MT", 0) == 0) {
      out.push_back("-" + a.substr(0, 3));
      if (a.size() > 3) out.push_back(a.substr(3));
      else if (i + 1 < in.size()) out.push_back(in[++i]);
    } else if (a == "-O") {
      out.push_back("-O1");
    } else {
      out.push_back(a);
    }
  }
  return {out.rbegin(), out.rend()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dscc: compile and run tensor programs with dynamic shapes"};
  app.require_subcommand(0, 1);
  tools::addVersionFlag(app, "dscc");

  auto* ops = app.add_subcommand("ops", "list every op of the IR with a one-line summary");
  std::vector<tools::Command> commands;
  commands.push_back(tools::addRunCommand(app));
  commands.push_back(tools::addCompileCommand(app));
  commands.push_back(tools::addExplainCommand(app));
  commands.push_back(tools::addImportCommand(app));
  commands.push_back(tools::addViewCommand(app));
  std::vector<std::string> args = compilerStyleArgs(argc, argv);
  if (int rc = tools::parseCommandLine(app, "dscc", args); rc >= 0) return rc;

  if (*ops) return cmdOps();
  for (const auto& c : commands)
    if (*c.app) return c.run();
  // No subcommand: a usage error, as `gcc` with no input is.
  std::cerr << app.help();
  std::cerr << "dscc: error: no command given (compile, run, explain, view, import, ops)\n";
  return tools::kUsageError;
}
