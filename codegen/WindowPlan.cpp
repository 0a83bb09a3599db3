// Library kernels of one conv, conv_transpose or pool: the operands, sizes and resolved pads of their runtime call or GPU launch (WindowPlan.h).
#include "codegen/WindowPlan.h"

#include <algorithm>

namespace dscc::codegen {

bool isWindowKernel(const Operation& fusion) {
  return std::any_of(fusion.body.begin(), fusion.body.end(), [](const auto& op) {
    return op->kind == OpKind::Conv || op->kind == OpKind::ConvTranspose || op->kind == OpKind::Pool;
  });
}

std::string planWindowKernel(const Operation& fusion, bool gpu, WindowPlan& out) {
  out = WindowPlan();
  const Operation* op = nullptr;
  for (const auto& b : fusion.body)
    if (b->kind == OpKind::Conv || b->kind == OpKind::ConvTranspose || b->kind == OpKind::Pool) op = b.get();
  if (!op) return "codegen: the library kernel holds no conv or pool";
  const std::string name(op->name());
  std::vector<const Operation*> chain;
  for (const auto& b : fusion.body)
    if (b.get() != op) chain.push_back(b.get());
  const Value* last = chain.empty() ? op->result() : chain.back()->result();
  if (fusion.body.front().get() != op || fusion.yields.size() != 1 || fusion.yields[0] != last)
    return "codegen: a " + name + " kernel holds the " + name + " first and yields its last value alone";
  if (!chain.empty()) {
    if (gpu) return "codegen: the GPU's " + name + " kernel takes no epilogue (post-ops are oneDNN's, on the CPU)";
    if (op->kind != OpKind::Conv || !isChannelsLast(*op))
      return "codegen: only a channels-last conv takes an epilogue (post-ops)";
    if (std::string e = matchConvEpilogue(op->result(), chain, out.post); !e.empty())
      return "codegen: the conv's epilogue is no post-op chain: " + e;
  }
  const DType dt = op->operands[0]->type.dtype;
  // The CPU's oneDNN calls are f32; the GPU's kernels (codegen/gpu/GpuWindow.h) take every float dtype, summing in
  // f64 as the interpreter does.
  if (!gpu && dt != DType::F32)
    return "codegen: " + name + " of " + std::string(dtypeName(dt)) + " is not supported yet (f32 only)";
  const size_t rank = op->operands[0]->type.rank();
  if (rank < 3 || rank > 5) return "codegen: " + name + " with " + std::to_string(rank - 2) + " spatial dims is not supported (1 to 3)";
  auto operandIndex = [&](const Value* v) -> std::optional<size_t> {
    auto it = std::find(fusion.operands.begin(), fusion.operands.end(), v);
    if (it == fusion.operands.end()) return std::nullopt;
    return static_cast<size_t>(it - fusion.operands.begin());
  };
  std::vector<size_t> idx;
  for (const Value* v : op->operands) {
    auto i = operandIndex(v);
    if (!i) return "codegen: operand %" + v->name + " of " + name + " is not an operand of its kernel";
    idx.push_back(*i);
  }
  Location where;
  if (std::string e = readWindowAttrs(*op, rank - 2, out.attrs, where); !e.empty()) return e;
  out.op = op;
  out.gpu = gpu;
  out.dtype = dt;
  out.x = idx[0];
  out.xDims = op->operands[0]->type.dims;
  out.yDims = op->result()->type.dims;
  if (out.attrs.channelsLast) {
    // The runtime and the GPU kernels take dims in channels-first order and the layout as a flag (dscc_generated.h).
    if (op->kind == OpKind::ConvTranspose) return "codegen: conv_transpose has no channels_last form";
    out.xDims = toChannelsFirst(out.xDims);
    out.yDims = toChannelsFirst(out.yDims);
  }
  if (op->kind == OpKind::Conv || op->kind == OpKind::ConvTranspose) {
    out.w = idx[1];
    if (idx.size() > 2) out.bias = idx[2];
    out.wDims = op->operands[1]->type.dims;
    out.kernel.assign(out.wDims.begin() + 2, out.wDims.end());
  } else {
    for (int64_t k : out.attrs.kernel) out.kernel.push_back(DimExpr(k));
  }
  for (const ConvPostOp& p : out.post) {
    std::optional<size_t> i = p.src ? operandIndex(p.src) : std::optional<size_t>(0);
    if (!i) return "codegen: the tensor %" + p.src->name + " a post-op adds is not an operand of its kernel";
    out.postSrc.push_back(*i);
  }
  for (size_t i = 0; i + 2 < rank && op->kind == OpKind::ConvTranspose; ++i) {
    // The pads cut from the full result (output_padding in the end one): what the runtime's size rule reads.
    out.padsBegin.push_back(transposePadBegin(out.attrs, i, out.xDims[2 + i], out.kernel[i]));
    out.padsEnd.push_back(transposePadEnd(out.attrs, i, out.xDims[2 + i], out.kernel[i]));
  }
  for (size_t i = 0; i + 2 < rank && op->kind != OpKind::ConvTranspose; ++i) {
    out.padsBegin.push_back(windowPadBegin(out.attrs, i, out.xDims[2 + i], out.kernel[i]));
    out.padsEnd.push_back(windowPadEnd(out.attrs, i, out.xDims[2 + i], out.kernel[i]));
  }
  return "";
}

}  // namespace dscc::codegen
