// printKernelCount: the kernels of each function after fusion, by kind (dscc-opt --print-kernel-count).
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "passes/Fuse.h"

namespace dscc {

void printKernelCount(const Module& m, std::ostream& os) {
  for (const auto& f : m.funcs) {
    std::map<std::string, int> kinds;
    int total = 0;
    std::vector<std::string> lines;
    for (const auto& op : f->ops) {
      std::string k;
      if (op->kind == OpKind::Fusion) k = op->attr("kind")->s;
      else {
        switch (op->kind) {
          case OpKind::Constant: case OpKind::Dim: case OpKind::Check: case OpKind::Reshape: continue;
          default: k = "unfused";
        }
        if (op->results.size() == 1 && op->result()->type.rank() == 0 && op->kind == OpKind::Cast) continue;
      }
      ++kinds[k];
      ++total;
      std::string l = "//   " + k + ":";
      for (const auto& r : op->results) l += " %" + r->name;
      l += " (" + std::to_string(op->kind == OpKind::Fusion ? op->body.size() : 1) + " ops)";
      lines.push_back(l);
    }
    os << "// kernels of @" << f->name << ": " << total;
    std::string sep = " (";
    for (const auto& [k, c] : kinds) {
      os << sep << k << " " << c;
      sep = ", ";
    }
    os << (kinds.empty() ? "" : ")") << "\n";
    for (const auto& l : lines) os << l << "\n";
  }
}

}  // namespace dscc
