// ONNX's data-dependent writes and scans as dscc's `scatter` and `cumsum`: ScatterND, ScatterElements, Scatter
// (one scatter into the data flattened over the indexed dims, at linearIndex's index), CumSum.
#include <onnx/onnx_pb.h>

#include "frontend/OnnxBuilder.h"
#include "frontend/OnnxInternal.h"

namespace dscc::frontend {

namespace {

using B = NodeBuilder;

// The node's `reduction` as the IR spells it; opsets before 16 (ScatterND, ScatterElements) and Scatter have none.
Attrs reductionAttr(const onnx::NodeProto& n) {
  std::string r = attrString(n, "reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    throw ImportError("reduction '" + r + "' is not supported");
  if (r == "none") return {};
  return {{"reduction", Attribute::makeString(r)}};
}

// data with the rows of `data` flattened over its first m dims written at `lin` (shape S) from `upd`
// (S + data's dims after the first m), then given data's shape back.
Value* scatterAt(B& b, Value* data, size_t m, Value* lin, Value* upd, const Attrs& red) {
  const std::vector<DimExpr>& dims = data->type.dims;
  std::vector<DimExpr> flat{product(dims, 0, m)};
  flat.insert(flat.end(), dims.begin() + long(m), dims.end());
  Value* rows = m == 1 ? data : b.reshape(data, flat);
  Value* r = b.op(OpKind::Scatter, {rows, lin, upd}, red);
  return m == 1 ? r : b.reshape(r, dims);
}

// ScatterND: data [D_0, ..., D_{r-1}], indices [S..., k], updates [S..., D_k, ...]: updates[s] written (or
// combined) at data[indices[s, 0], ..., indices[s, k-1]]. k also follows from the ranks (q + r - 1 - rank of
// updates), so a symbolic last dim of the indices is reshaped to it (its size checked at run time).
void scatterND(B& b) {
  Value *data = b.in(0), *idx = b.cast(b.in(1), DType::I64), *upd = b.in(2);
  size_t r = data->type.rank(), q = idx->type.rank(), u = upd->type.rank();
  if (r < 1 || q < 1) throw ImportError("the data and the indices need rank 1 or more");
  if (u + 1 < q || q + r < u + 1 || q + r - 1 - u < 1)
    throw ImportError("updates of rank " + std::to_string(u) + " do not fit data of rank " + std::to_string(r) +
                      " and indices of rank " + std::to_string(q));
  const size_t k = q + r - 1 - u;
  if (k > r) throw ImportError("the indices' last dim " + std::to_string(k) + " is more than data's rank " + std::to_string(r));
  std::vector<DimExpr> s(idx->type.dims.begin(), idx->type.dims.end() - 1);
  const DimExpr& kd = idx->type.dims[q - 1];
  if (kd.isConst() && kd.constValue() != int64_t(k))
    throw ImportError("the indices' last dim is " + kd.str() + " but the ranks of data and updates need " + std::to_string(k));
  if (!kd.isConst()) {
    std::vector<DimExpr> sk = s;
    sk.push_back(DimExpr(int64_t(k)));
    idx = b.reshape(idx, sk);
  }
  std::vector<Value*> coords;
  for (size_t j = 0; j < k; ++j) {
    Value* cj = b.op(OpKind::Slice, {idx}, {{"axes", intList({int64_t(q) - 1})}, {"starts", intList({int64_t(j)})},
                                            {"ends", intList({int64_t(j) + 1})}});
    coords.push_back(b.reshape(cj, s));
  }
  Value* lin = linearIndex(b, data->type.dims, coords, std::vector<bool>(k, false));
  b.out(scatterAt(b, data, k, lin, upd, reductionAttr(b.n)));
}

// ScatterElements (and Scatter, opsets 9-10): updates[i] written (or combined) at data[i_0, ..., indices[i], ...,
// i_{r-1}] (the index replacing coordinate `axis`); indices and updates of one shape, at most data's per dim.
void scatterElements(B& b) {
  Value *data = b.in(0), *idx = b.cast(b.in(1), DType::I64), *upd = b.in(2);
  size_t r = data->type.rank();
  if (r < 1 || idx->type.rank() != r || upd->type.rank() != r)
    throw ImportError("data, indices and updates must have one rank (1 or more)");
  int64_t ax = b.axis(attrInt(b.n, "axis", 0), r);
  std::vector<Value*> coords;
  std::vector<bool> trusted;
  for (size_t d = 0; d < r; ++d) {
    coords.push_back(int64_t(d) == ax ? idx : b.iota(DType::I64, idx->type.dims, int64_t(d)));
    // An iota coordinate is in range where the indices' dim is provably data's; otherwise it is checked too.
    trusted.push_back(int64_t(d) != ax && idx->type.dims[d] == data->type.dims[d]);
  }
  Value* lin = linearIndex(b, data->type.dims, coords, trusted);
  // The scatter verifies updates' dims against the indices' (equal, or checked at run time under symbolic dims).
  b.out(scatterAt(b, data, r, lin, upd, reductionAttr(b.n)));
}

}  // namespace

bool convertScatter(Ctx& c, const onnx::NodeProto& n) {
  B b{c, n};
  const std::string& op = n.op_type();
  if (op == "ScatterND") {
    scatterND(b);
  } else if (op == "ScatterElements" || op == "Scatter") {
    scatterElements(b);
  } else if (op == "CumSum") {
    Value* x = b.in(0);
    if (x->type.rank() == 0) throw ImportError("the input must have rank 1 or more");
    std::vector<int64_t> axis = constInts(c, n, 1, "axis");
    if (axis.size() != 1) throw ImportError("the axis must be one integer");
    int64_t ax = b.axis(axis[0], x->type.rank());
    b.out(b.op(OpKind::CumSum, {x}, {{"axis", Attribute::makeInt(ax)},
                                     {"exclusive", Attribute::makeBool(attrInt(n, "exclusive", 0) != 0)},
                                     {"reverse", Attribute::makeBool(attrInt(n, "reverse", 0) != 0)}}));
  } else {
    return false;
  }
  return true;
}

}  // namespace dscc::frontend
