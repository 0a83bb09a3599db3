// IR rewriting helpers shared by the passes.
#include "ir/Rewrite.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ir/Verifier.h"

namespace dscc {

void replaceAllUses(Function& f, const Value* from, Value* to) {
  walkOps(f.ops, [&](Operation& op) {
    for (auto& v : op.operands)
      if (v == from) v = to;
    for (auto& v : op.yields)
      if (v == from) v = to;
  });
  for (auto& v : f.returns)
    if (v == from) v = to;
}

std::vector<Operation*> usersOf(const Function& f, const Value* v) {
  std::vector<Operation*> out;
  walkOps(f.ops, [&](Operation& op) {
    if (std::find(op.operands.begin(), op.operands.end(), v) != op.operands.end()) out.push_back(&op);
  });
  return out;
}

bool isReturned(const Function& f, const Value* v) {
  return std::find(f.returns.begin(), f.returns.end(), v) != f.returns.end();
}

bool isUnused(const Function& f, const Value* v) {
  if (isReturned(f, v)) return false;
  bool used = false;
  walkOps(f.ops, [&](Operation& op) {
    used |= std::find(op.operands.begin(), op.operands.end(), v) != op.operands.end();
    used |= std::find(op.yields.begin(), op.yields.end(), v) != op.yields.end();
  });
  return !used;
}

std::string freshName(const Function& f, const std::string& base) {
  std::set<std::string> names;
  for (const auto& a : f.args) names.insert(a->name);
  walkOps(f.ops, [&](Operation& op) {
    for (const auto& r : op.results) names.insert(r->name);
  });
  if (!names.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "." + std::to_string(i);
    if (!names.count(n)) return n;
  }
}

std::unique_ptr<Operation> makeOp(Function& f, OpKind kind, std::vector<Value*> operands,
                                  std::vector<std::pair<std::string, Attribute>> attrs,
                                  const std::string& name, Location loc, DiagEngine& diags,
                                  std::optional<Type> type) {
  auto op = std::make_unique<Operation>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->loc = loc;
  auto r = std::make_unique<Value>();
  r->name = freshName(f, name);
  r->loc = loc;
  r->def = op.get();
  if (type) {
    r->type = *type;
    op->hasExplicitType = true;
  }
  op->results.push_back(std::move(r));
  if (!inferOpTypes(f, *op, diags)) return nullptr;
  op->hasExplicitType = true;
  return op;
}

std::unique_ptr<Operation> makeScalarConstant(Function& f, DType dt, double v, const std::string& name,
                                              Location loc, DiagEngine& diags) {
  Attribute a = isFloat(dt) ? Attribute::makeFloat(v)
                : dt == DType::I1 ? Attribute::makeBool(v != 0)
                                  : Attribute::makeInt(static_cast<int64_t>(std::trunc(v)));
  return makeOp(f, OpKind::Constant, {}, {{"value", a}}, name, loc, diags, Type{dt, {}});
}

}  // namespace dscc
