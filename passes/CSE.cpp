// Common subexpression elimination: one op per distinct computation in a block.
#include "passes/CSE.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/Rewrite.h"
#include "passes/DCE.h"

namespace dscc {
namespace {

// Ops whose operands may be swapped without changing the result (max and min
// too: both propagate NaN whichever side it is on).
bool isCommutative(OpKind k) {
  switch (k) {
    case OpKind::Add: case OpKind::Mul: case OpKind::Max: case OpKind::Min:
    case OpKind::And: case OpKind::Or: case OpKind::Eq: case OpKind::Ne:
      return true;
    default:
      return false;
  }
}

// Numbers values in the order the pass first meets them, so keys never depend
// on where values live in memory.
class ValueIds {
 public:
  size_t operator()(const Value* v) {
    auto [it, fresh] = ids_.emplace(v, ids_.size());
    return it->second;
  }

 private:
  std::map<const Value*, size_t> ids_;
};

// A type as text; dims use key() because every anonymous dim prints as `?`.
std::string typeKey(const Type& t) {
  std::string s(dtypeName(t.dtype));
  s += "[";
  for (const auto& d : t.dims) s += d.key() + ",";
  return s + "]";
}

// Everything that decides what an op computes. Attributes are sorted by name
// so `{a = 1, b = 2}` and `{b = 2, a = 1}` match.
std::string opKey(const Operation& op, ValueIds& ids) {
  std::vector<size_t> operands;
  for (const Value* v : op.operands) operands.push_back(ids(v));
  if (isCommutative(op.kind) && operands.size() == 2) std::sort(operands.begin(), operands.end());
  std::string s(op.name());
  s += "(";
  for (size_t id : operands) s += std::to_string(id) + ",";
  s += "){";
  std::vector<std::pair<std::string, std::string>> attrs;
  for (const auto& [n, a] : op.attrs) attrs.emplace_back(n, a.str());
  std::sort(attrs.begin(), attrs.end());
  for (const auto& [n, a] : attrs) s += n + "=" + a + ",";
  s += "}:";
  for (const auto& r : op.results) s += typeKey(r->type) + ",";
  return s;
}

// A check's relation; `what` only words the message, so it does not count.
std::string checkKey(const Operation& op) {
  auto r = checkRelation(op);
  if (!r) return "";
  return r->kind + "(" + r->lhs.key() + "," + r->rhs.key() + ")";
}

// Cleans one block in program order; returns the number of ops erased.
int cseBlock(Function& f, std::vector<std::unique_ptr<Operation>>& ops, ValueIds& ids) {
  int removed = 0;
  std::map<std::string, Operation*> seen;
  for (size_t i = 0; i < ops.size();) {
    Operation& op = *ops[i];
    if (op.kind == OpKind::Fusion) {
      removed += cseBlock(f, op.body, ids);
      ++i;
      continue;
    }
    std::string key = op.kind == OpKind::Check ? checkKey(op) : opKey(op, ids);
    auto [it, fresh] = seen.emplace(key, &op);
    if (fresh || key.empty()) {
      ++i;
      continue;
    }
    for (size_t r = 0; r < op.results.size(); ++r) replaceAllUses(f, op.result(r), it->second->result(r));
    // Erased at once: replaceAllUses walks the blocks and cannot skip holes.
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
    ++removed;
  }
  return removed;
}

}  // namespace

bool cse(Module& m, PassContext& ctx) {
  for (auto& f : m.funcs) {
    ValueIds ids;
    for (const auto& a : f->args) ids(a.get());
    int removed = cseBlock(*f, f->ops, ids);
    // Merging two outer values a fusion reads would list one of them twice.
    if (removed) refreshAllFusionOperands(*f);
    if (ctx.opts.stats) ctx.os << "// cse stats of @" << f->name << ": " << removed << " ops removed\n";
  }
  return true;
}

}  // namespace dscc
