// Ranges for random integer inputs: followed from each argument to the gathers it indexes, or to its use as a mask.
#include "ir/InputRanges.h"

#include <map>
#include <set>

namespace dscc {

std::vector<std::optional<InputRange>> inputRanges(const Function& f, const DimBindings& env) {
  // Every use of each value at the function's top level.
  std::map<const Value*, std::vector<std::pair<const Operation*, size_t>>> uses;
  for (const auto& op : f.ops)
    for (size_t i = 0; i < op->operands.size(); ++i) uses[op->operands[i]].push_back({op.get(), i});

  std::vector<std::optional<InputRange>> r(f.args.size());
  for (size_t k = 0; k < f.args.size(); ++k) {
    const Value* arg = f.args[k].get();
    if (!isInteger(arg->type.dtype)) continue;
    std::optional<int64_t> table;
    std::string gatherAt;
    bool mask = false;
    std::set<const Value*> seen{arg};
    std::vector<const Value*> work{arg};
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      for (const auto& [op, i] : uses[v]) {
        auto follow = [&, op = op] {
          for (const auto& res : op->results)
            if (seen.insert(res.get()).second) work.push_back(res.get());
        };
        switch (op->kind) {
          case OpKind::Gather:
          case OpKind::Scatter: {
            if (i != 1) break;  // the table itself (or the updates), not its indices
            const Type& data = op->operands[0]->type;
            int64_t axis = 0;  // a scatter writes rows of dim 0
            if (const Attribute* a = op->attr("axis"); a && a->kind == Attribute::Kind::Int) axis = a->i;
            if (axis < 0) axis += int64_t(data.rank());
            if (axis < 0 || axis >= int64_t(data.rank())) break;
            if (auto rows = data.dims[size_t(axis)].evaluate(env); rows && *rows > 0 && (!table || *rows < *table)) {
              table = *rows;
              gatherAt = op->results.empty() ? "" : " (" + std::string(op->name()) + " into %" + op->result()->name + ")";
            }
            break;
          }
          case OpKind::Cast:
            if (const Attribute* to = op->attr("to"); to && to->kind == Attribute::Kind::DType && !isInteger(to->dtype))
              mask = true;  // an integer turned into a float or i1: a mask or a flag, not a count
            else
              follow();
            break;
          case OpKind::Reshape:
          case OpKind::Transpose:
          case OpKind::BroadcastTo:
          case OpKind::Slice:
          case OpKind::Concat: follow(); break;
          case OpKind::Eq:
          case OpKind::Ne:
          case OpKind::Lt:
          case OpKind::Le:
          case OpKind::Gt:
          case OpKind::Ge:
          case OpKind::Select: mask = true; break;
          default: break;
        }
      }
    }
    if (table) r[k] = InputRange{0, *table, "indices into a table of " + std::to_string(*table) + " rows" + gatherAt};
    else if (mask) r[k] = InputRange{0, 2, "a mask (0 or 1)"};
  }
  return r;
}

}  // namespace dscc
