// unfuse: fusion ops back to their bodies' ops at the top level (the inverse of fuse's rewrite).
#include <algorithm>
#include <map>

#include "passes/Fuse.h"

namespace dscc {

void unfuse(Function& f, const std::map<const Operation*, size_t>& pos) {
  std::map<const Value*, Value*> yielded;
  std::vector<std::unique_ptr<Operation>> flat;
  std::vector<std::unique_ptr<Operation>> fusions;  // kept alive until every use is redirected
  for (auto& op : f.ops) {
    if (op->kind != OpKind::Fusion) {
      flat.push_back(std::move(op));
      continue;
    }
    for (size_t i = 0; i < op->yields.size(); ++i) yielded[op->results[i].get()] = op->yields[i];
    for (auto& b : op->body) flat.push_back(std::move(b));
    fusions.push_back(std::move(op));
  }
  for (auto& op : flat)
    for (auto& v : op->operands)
      if (auto it = yielded.find(v); it != yielded.end()) v = it->second;
  for (auto& v : f.returns)
    if (auto it = yielded.find(v); it != yielded.end()) v = it->second;
  std::stable_sort(flat.begin(), flat.end(), [&](const auto& a, const auto& b) {
    return pos.at(a.get()) < pos.at(b.get());
  });
  f.ops = std::move(flat);
}

}  // namespace dscc
