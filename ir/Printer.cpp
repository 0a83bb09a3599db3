// Printing the IR as text that re-parses to the same program.
#include "ir/Printer.h"

#include <cctype>

namespace dscc {

namespace {
std::string printOpIndented(const Operation& op, const std::string& indent);
}

std::string printOp(const Operation& op) { return printOpIndented(op, ""); }

namespace {
// A result name as the parser reads it back: bare when it is an identifier, else a string.
std::string resultNameText(const std::string& n) {
  bool ident = !n.empty() && (std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_');
  for (char c : n) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$');
  if (ident) return n;
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = n;
  return a.str();
}
}  // namespace

namespace {
std::string printOpIndented(const Operation& op, const std::string& indent) {
  std::string s;
  for (size_t i = 0; i < op.results.size(); ++i) s += (i ? ", %" : "%") + op.results[i]->name;
  if (!op.results.empty()) s += " = ";
  s += op.name();
  if (op.kind == OpKind::Constant) {
    if (const Attribute* v = op.attr("value")) s += " " + v->str();
  }
  for (size_t i = 0; i < op.operands.size(); ++i) s += (i ? ", %" : " %") + op.operands[i]->name;
  bool first = true;
  for (const auto& [name, a] : op.attrs) {
    if (op.kind == OpKind::Constant && name == "value") continue;
    s += first ? " {" : ", ";
    first = false;
    s += name + " = " + a.str();
  }
  if (!first) s += "}";
  if (op.results.empty()) return s;
  s += " :";
  for (size_t i = 0; i < op.results.size(); ++i) s += (i ? ", " : " ") + op.results[i]->type.str();
  if (op.kind == OpKind::Fusion) {
    s += " {\n";
    for (const auto& b : op.body) s += indent + "    " + printOpIndented(*b, indent + "  ") + "\n";
    s += indent + "    yield";
    for (size_t i = 0; i < op.yields.size(); ++i) s += (i ? ", %" : " %") + op.yields[i]->name;
    s += "\n" + indent + "  }";
  }
  return s;
}
}  // namespace

std::string printResultTypes(const Function& f) {
  bool named = false;
  for (size_t i = 0; i < f.resultTypes.size(); ++i) named = named || !f.resultName(i).empty();
  std::string s = named ? "(" : "";
  for (size_t i = 0; i < f.resultTypes.size(); ++i) {
    s += i ? ", " : "";
    if (!f.resultName(i).empty()) s += resultNameText(f.resultName(i)) + ": ";
    s += f.resultTypes[i].str();
  }
  return named ? s + ")" : s;
}

std::string printFunction(const Function& f) {
  std::string s = "func @" + f.name + "(";
  for (size_t i = 0; i < f.args.size(); ++i)
    s += (i ? ", %" : "%") + f.args[i]->name + ": " + f.args[i]->type.str();
  s += ") -> ";
  s += printResultTypes(f);
  if (!f.facts.empty()) {
    s += "\n    where ";
    for (size_t i = 0; i < f.facts.size(); ++i) s += (i ? ", " : "") + f.facts[i].str();
  }
  s += " {\n";
  for (const auto& op : f.ops) s += "  " + printOp(*op) + "\n";
  s += "  return";
  for (size_t i = 0; i < f.returns.size(); ++i) s += (i ? ", %" : " %") + f.returns[i]->name;
  s += "\n}\n";
  return s;
}

std::string printModule(const Module& m) {
  std::string s;
  for (size_t i = 0; i < m.funcs.size(); ++i) s += (i ? "\n" : "") + printFunction(*m.funcs[i]);
  return s;
}

}  // namespace dscc
