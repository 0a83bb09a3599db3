// Dead code elimination: drops ops whose results nothing uses.
#include "passes/DCE.h"

#include <algorithm>
#include <map>
#include <set>

namespace dscc {

void refreshFusionOperands(Operation& fusion) {
  if (fusion.kind != OpKind::Fusion) return;
  std::set<const Value*> inner;
  std::vector<Value*> used;
  for (const auto& b : fusion.body) {
    for (Value* v : b->operands)
      if (!inner.count(v) && std::find(used.begin(), used.end(), v) == used.end()) used.push_back(v);
    for (const auto& r : b->results) inner.insert(r.get());
  }
  fusion.operands = std::move(used);
}

void refreshAllFusionOperands(Function& f) {
  for (auto& op : f.ops) refreshFusionOperands(*op);
}

namespace {

// How many times each value is used (operands, yields, returns). Only looked
// up, never iterated, so keying by pointer keeps the pass deterministic.
using UseCounts = std::map<const Value*, int>;

void countUses(const std::vector<std::unique_ptr<Operation>>& ops, UseCounts& uses) {
  for (const auto& op : ops) {
    // A fusion's operand list is counted like any op's: it mirrors what the
    // body reads, and sweep() recounts it when the body shrinks.
    for (const Value* v : op->operands) ++uses[v];
    countUses(op->body, uses);
    for (const Value* v : op->yields) ++uses[v];
  }
}

void releaseUses(const Operation& op, UseCounts& uses) {
  for (const Value* v : op.operands) --uses[v];
  for (const auto& b : op.body) releaseUses(*b, uses);
  for (const Value* v : op.yields) --uses[v];
}

bool isDead(const Operation& op, const UseCounts& uses) {
  if (op.kind == OpKind::Check) return false;
  for (const auto& r : op.results) {
    auto it = uses.find(r.get());
    if (it != uses.end() && it->second > 0) return false;
  }
  return true;
}

// One sweep over `ops` from the last to the first, so a chain of dead ops
// goes in one sweep: removing a user releases its operands before their
// definitions are visited. Returns the number of ops removed.
int sweep(std::vector<std::unique_ptr<Operation>>& ops, UseCounts& uses) {
  int removed = 0;
  for (size_t i = ops.size(); i-- > 0;) {
    Operation& op = *ops[i];
    if (isDead(op, uses)) {
      releaseUses(op, uses);
      ops[i].reset();
      ++removed;
      continue;
    }
    if (op.kind == OpKind::Fusion) {
      // Yielded values are used by the yields, so the body keeps them.
      int inBody = sweep(op.body, uses);
      if (inBody) {
        // An outer value only the removed body ops read must not stay alive
        // through the fusion's stale operand list.
        for (const Value* v : op.operands) --uses[v];
        refreshFusionOperands(op);
        for (const Value* v : op.operands) ++uses[v];
      }
      removed += inBody;
    }
  }
  ops.erase(std::remove(ops.begin(), ops.end(), nullptr), ops.end());
  return removed;
}

}  // namespace

bool dce(Module& m, PassContext& ctx) {
  for (auto& f : m.funcs) {
    UseCounts uses;
    countUses(f->ops, uses);
    for (const Value* v : f->returns) ++uses[v];
    int total = 0;
    for (int n = sweep(f->ops, uses); n > 0; n = sweep(f->ops, uses)) total += n;
    if (ctx.opts.stats) ctx.os << "// dce stats of @" << f->name << ": " << total << " ops removed\n";
  }
  return true;
}

}  // namespace dscc
