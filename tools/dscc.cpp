// dscc: the user-facing driver; each subcommand lives in its own file (tools/*Command.cpp).
#include <CLI/CLI.hpp>
#include <iostream>

#include "ir/IR.h"
#include "tools/Commands.h"

using namespace dscc;

namespace {

constexpr const char* kVersion = "0.1.0";

int cmdOps() {
  for (const auto& o : allOps()) {
    std::string n(o.name);
    n.resize(14, ' ');
    std::cout << n << o.summary << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dscc: compile and run tensor programs with dynamic shapes"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "print the version and exit");

  auto* ops = app.add_subcommand("ops", "list every op of the IR with a one-line summary");
  std::vector<tools::Command> commands;
  commands.push_back(tools::addRunCommand(app));
  commands.push_back(tools::addCompileCommand(app));
  commands.push_back(tools::addExplainCommand(app));
  commands.push_back(tools::addImportCommand(app));
  // Make's spellings -MD and -MF are long options to CLI11.
  std::vector<std::string> args;
  for (int i = argc - 1; i > 0; --i) {
    std::string a = argv[i];
    args.push_back(a == "-MD" ? "--MD" : a == "-MF" ? "--MF" : a);
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (version) {
    std::cout << "dscc " << kVersion << "\n";
    return 0;
  }
  if (*ops) return cmdOps();
  for (const auto& c : commands)
    if (*c.app) return c.run();
  std::cout << app.help();
  return 0;
}
