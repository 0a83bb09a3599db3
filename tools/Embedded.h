// The weights a compiled model embeds (dscc_model_file_constants), given back to its program text when it is read again (`dscc run --check`, `dscc view`).
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "ir/IR.h"
#include "ir/Tensor.h"

namespace dscc::tools {

/// One entry of a compiled model's dscc_model_file_constants (HostEmitter::emitData); a null path ends the table.
struct EmbeddedFile {
  const char* path;
  const void* data;
  int64_t bytes;
};

/// Gives each file constant of `m` the data the model embedded for its path,
/// so neither the weight files nor the model they came from are needed.
/// Constants whose declared size differs keep reading their file.
inline void useEmbeddedConstants(Module& m, const EmbeddedFile* table) {
  std::map<std::string, const EmbeddedFile*> byPath;
  for (const EmbeddedFile* e = table; e && e->path; ++e) byPath.emplace(e->path, e);
  for (auto& f : m.funcs)
    walkOps(f->ops, [&](Operation& op) {
      const Attribute* v = op.attr("value");
      if (op.kind != OpKind::Constant || op.results.size() != 1 || !v || v->kind != Attribute::Kind::File) return;
      auto it = byPath.find(v->s);
      const Type& t = op.result()->type;
      if (it == byPath.end()) return;
      std::vector<int64_t> shape;
      int64_t bytes = static_cast<int64_t>(dtypeSize(t.dtype));
      for (const DimExpr& d : t.dims) {
        if (!d.isConst() || d.constValue() < 0 || __builtin_mul_overflow(bytes, d.constValue(), &bytes)) return;
        shape.push_back(d.constValue());
      }
      if (bytes != it->second->bytes) return;  // not what this program declares: read the file instead
      Tensor data = Tensor::zeros(t.dtype, shape);
      std::memcpy(data.bytes.data(), it->second->data, data.bytes.size());
      Attribute a = *v;
      a.data = std::make_shared<const Tensor>(std::move(data));
      op.setAttr("value", std::move(a));
    });
}

}  // namespace dscc::tools
