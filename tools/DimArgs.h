// `--dim NAME=N` as `dscc run` and `dscc explain` take it: each a symbol of the model, given once.
#pragma once

#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "ir/Diagnostics.h"
#include "ir/IR.h"

namespace dscc::tools {

/// The symbols of `f`: those of its argument and result types, its facts and
/// the result types of its ops (symbols bound late, docs/ir.md), sorted.
inline std::set<std::string> functionSymbols(const Function& f) {
  std::set<std::string> s;
  for (const auto& a : f.args)
    for (const DimExpr& d : a->type.dims) d.collectSymbols(s);
  for (const Type& t : f.resultTypes)
    for (const DimExpr& d : t.dims) d.collectSymbols(s);
  walkOps(f.ops, [&](Operation& op) {
    for (const auto& r : op.results)
      for (const DimExpr& d : r->type.dims) d.collectSymbols(s);
  });
  for (const Fact& fact : f.facts) {
    fact.lhs.collectSymbols(s);
    fact.rhs.collectSymbols(s);
    fact.hi.collectSymbols(s);
  }
  return s;
}

/// Parses `dims` (each `NAME=N`, N an integer >= 0) into `env`. Fails, with
/// `err` (a message without the `dscc: error:` prefix), on a malformed one, a
/// NAME given twice, or a NAME that is not a symbol of `f` (the message lists
/// the model's symbols). Callers treat a failure as a usage error (exit 2).
inline bool parseDimArgs(const std::vector<std::string>& dims, const Function& f, DimBindings& env, std::string& err) {
  std::set<std::string> symbols = functionSymbols(f);
  for (const std::string& d : dims) {
    size_t eq = d.find('=');
    std::string name = eq == std::string::npos ? d : d.substr(0, eq);
    int64_t v = -1;
    bool good = eq != std::string::npos && eq > 0;
    if (good) {
      try {
        size_t used = 0;
        v = std::stoll(d.substr(eq + 1), &used);
        good = used == d.size() - eq - 1 && v >= 0;
      } catch (...) {
        good = false;
      }
    }
    if (!good) {
      err = "bad --dim '" + d + "' (expected NAME=N with N >= 0)";
      return false;
    }
    if (!symbols.count(name)) {
      std::string list;
      for (const std::string& s : symbols) list += (list.empty() ? "" : ", ") + s;
      err = "--dim " + name + ": '" + name + "' is not a symbol of @" + f.name +
            (list.empty() ? " (it has no symbols)" : " (its symbols: " + list + ")");
      return false;
    }
    if (env.count(name)) {
      err = "--dim " + name + " is given twice";
      return false;
    }
    env[name] = v;
  }
  return true;
}

/// The sizes `dscc explain` and `dscc view` choose versions at: every input
/// symbol bound in `env` and every fact of `f` holding. Returns 0, or the
/// exit status after the error is reported: 2 (a usage error) for a missing
/// --dim, 1 for a broken fact (a located error through `diags`).
inline int checkExplainSizes(const Function& f, const DimBindings& env, DiagEngine& diags) {
  std::set<std::string> needed;
  for (const auto& a : f.args)
    for (const DimExpr& d : a->type.dims) d.collectSymbols(needed);
  for (const std::string& s : needed)
    if (!env.count(s)) {
      std::cerr << "dscc: error: give a size for every symbol: --dim " << s << "=N is missing\n";
      return 2;
    }
  for (const Fact& fact : f.facts) {
    std::string why;
    if (!fact.holds(env, &why)) {
      diags.error(fact.loc, "these sizes break the fact '" + fact.str() + "'" + (why.empty() ? "" : ": " + why) +
                                "; the compiled model rejects them (DSCC_FACT_VIOLATED)");
      return 1;
    }
  }
  return 0;
}

}  // namespace dscc::tools
