// Library kernels of one scatter or cumsum: their operands and sizes, for a runtime call or GPU launches (ScatterPlan.h).
#include "codegen/ScatterPlan.h"

#include <algorithm>

namespace dscc::codegen {
namespace {

const Operation* findOp(const Operation& fusion, OpKind k) {
  for (const auto& b : fusion.body)
    if (b->kind == k) return b.get();
  return nullptr;
}

// "" when `op` is alone in `fusion` (the planner puts library calls in kernels of their own) and every operand is
// one of the fusion's; `idx` gets their fusion operand indices.
std::string alone(const Operation& fusion, const Operation& op, std::vector<size_t>& idx) {
  std::string name(op.name());
  if (fusion.body.size() != 1 || fusion.yields.size() != 1 || fusion.yields[0] != op.result())
    return "codegen: a " + name + " kernel holds the " + name + " alone (no fused prologue or epilogue)";
  for (const Value* v : op.operands) {
    auto it = std::find(fusion.operands.begin(), fusion.operands.end(), v);
    if (it == fusion.operands.end()) return "codegen: operand %" + v->name + " of " + name + " is not an operand of its kernel";
    idx.push_back(static_cast<size_t>(it - fusion.operands.begin()));
  }
  return "";
}

DimExpr product(const std::vector<DimExpr>& ds, size_t from, size_t to) {
  DimExpr p(1);
  for (size_t i = from; i < to; ++i) p = p * ds[i];
  return p;
}

}  // namespace

bool isScatterKernel(const Operation& fusion) { return findOp(fusion, OpKind::Scatter) != nullptr; }
bool isScanKernel(const Operation& fusion) { return findOp(fusion, OpKind::CumSum) != nullptr; }

std::string planScatterKernel(const Operation& fusion, bool gpu, ScatterPlan& out) {
  out = ScatterPlan();
  const Operation* op = findOp(fusion, OpKind::Scatter);
  if (!op) return "codegen: the library kernel holds no scatter";
  std::vector<size_t> idx;
  if (std::string e = alone(fusion, *op, idx); !e.empty()) return e;
  Location where;
  if (std::string e = readScatterReduction(*op, out.reduction, where); !e.empty()) return e;
  const auto& dd = op->operands[0]->type.dims;
  out.op = op;
  out.data = idx[0];
  out.indices = idx[1];
  out.updates = idx[2];
  out.rows = dd[0];
  out.inner = product(dd, 1, dd.size());
  out.count = product(op->operands[1]->type.dims, 0, op->operands[1]->type.rank());
  out.dtype = op->operands[0]->type.dtype;
  out.indexDType = op->operands[1]->type.dtype;
  out.gpu = gpu;
  return "";
}

std::string planScanKernel(const Operation& fusion, bool gpu, ScanPlan& out) {
  out = ScanPlan();
  const Operation* op = findOp(fusion, OpKind::CumSum);
  if (!op) return "codegen: the library kernel holds no cumsum";
  std::vector<size_t> idx;
  if (std::string e = alone(fusion, *op, idx); !e.empty()) return e;
  const Type& t = op->operands[0]->type;
  Location where;
  if (std::string e = readScanAttrs(*op, t.rank(), out.attrs, where); !e.empty()) return e;
  out.op = op;
  out.x = idx[0];
  out.outer = product(t.dims, 0, out.attrs.axis);
  out.len = t.dims[out.attrs.axis];
  out.inner = product(t.dims, out.attrs.axis + 1, t.rank());
  out.dtype = t.dtype;
  out.gpu = gpu;
  return "";
}

}  // namespace dscc::codegen
