// Library kernels of one rnn: the operands and sizes of its runtime call or GPU kernels (RecurrentPlan.h).
#include "codegen/RecurrentPlan.h"

#include <algorithm>

namespace dscc::codegen {

bool isRnnKernel(const Operation& fusion) {
  return std::any_of(fusion.body.begin(), fusion.body.end(), [](const auto& op) { return op->kind == OpKind::Rnn; });
}

std::string planRnnKernel(const Operation& fusion, bool gpu, RnnPlan& out) {
  out = RnnPlan();
  const Operation* op = nullptr;
  for (const auto& b : fusion.body)
    if (b->kind == OpKind::Rnn) op = b.get();
  if (!op) return "codegen: the library kernel holds no rnn";
  if (fusion.body.size() != 1 || fusion.yields.size() != 1 || fusion.yields[0] != op->result())
    return "codegen: an rnn kernel holds the rnn alone (no fused prologue or epilogue)";
  const DType dt = op->operands[0]->type.dtype;
  // The GPU's kernels widen every float to f64 (GpuRecurrent.h); the CPU's runtime call is f32.
  if (gpu && !isFloat(dt))
    return "codegen: rnn of " + std::string(dtypeName(dt)) + " has no GPU kernel (f32, f64, f16 and bf16 do)";
  if (!gpu && dt != DType::F32) return "codegen: rnn of " + std::string(dtypeName(dt)) + " is not supported yet (f32 only)";
  std::vector<size_t> idx;
  for (const Value* v : op->operands) {
    auto it = std::find(fusion.operands.begin(), fusion.operands.end(), v);
    if (it == fusion.operands.end()) return "codegen: operand %" + v->name + " of rnn is not an operand of its kernel";
    idx.push_back(static_cast<size_t>(it - fusion.operands.begin()));
  }
  Location where;
  if (std::string e = readRnnAttrs(*op, out.attrs, where); !e.empty()) return e;
  out.op = op;
  out.dtype = dt;
  out.gpu = gpu;
  out.x = idx[0];
  out.w = idx[1];
  out.r = idx[2];
  if (idx.size() > 3) out.b = idx[3];
  if (idx.size() > 4) out.h0 = idx[4];
  if (idx.size() > 5) out.c0 = idx[5];
  const auto& xd = op->operands[0]->type.dims;
  out.seq = xd[0];
  out.batch = xd[1];
  out.input = xd[2];
  return "";
}

}  // namespace dscc::codegen
