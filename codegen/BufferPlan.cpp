// Buffer assignment by liveness: inputs, aliases, outputs and shared scratch slots of a model's function (codegen/BufferPlan.h).
#include "codegen/BufferPlan.h"

#include <algorithm>
#include <set>

#include "codegen/gpu/GpuKernels.h"
#include "codegen/gpu/GpuRecurrent.h"
#include "codegen/gpu/GpuScatter.h"
#include "codegen/KernelCommon.h"
#include "codegen/LibraryPlan.h"

namespace dscc::codegen {

const Value* BufferPlan::root(const Value* v) const {
  auto it = places.find(v);
  while (it != places.end() && it->second.kind == BufferPlace::Alias) {
    v = it->second.of;
    it = places.find(v);
  }
  return v;
}

const BufferPlace* BufferPlan::placeOf(const Value* v) const {
  auto it = places.find(root(v));
  return it == places.end() ? nullptr : &it->second;
}

size_t BufferPlan::slotCount() const {
  size_t n = 0;
  for (auto& [s, _] : slotValues) n = std::max(n, s + 1);
  for (auto& [s, _] : slotTemps) n = std::max(n, s + 1);
  return n;
}

const KernelPlan* kernelOf(const ModelPlan& plan, const Operation* op) {
  for (const KernelPlan& k : plan.kernels)
    if (k.fusion == op) return &k;
  return nullptr;
}

namespace {

// The first slot free before op `now` (a new one if none is), taken until op `until`.
size_t acquire(std::vector<size_t>& slotFreeAt, size_t now, size_t until) {
  for (size_t s = 0; s < slotFreeAt.size(); ++s)
    if (slotFreeAt[s] < now) {
      slotFreeAt[s] = until;
      return s;
    }
  slotFreeAt.push_back(until);
  return slotFreeAt.size() - 1;
}

}  // namespace

BufferPlan planBuffers(const ModelPlan& plan, bool gpu) {
  const Function& f = *plan.func;
  BufferPlan bp;
  auto& places = bp.places;
  for (size_t i = 0; i < f.args.size(); ++i) places[f.args[i].get()] = {BufferPlace::Input, i};
  std::map<const Value*, size_t> lastUse;
  const size_t kEnd = f.ops.size() + 1;
  for (const auto& op : f.ops)
    if (op->kind == OpKind::Reshape) places[op->result()] = {BufferPlace::Alias, 0, op->operands[0]};
  for (size_t i = 0; i < f.ops.size(); ++i)
    for (const Value* v : f.ops[i]->operands) {
      const Value* r = bp.root(v);
      lastUse[r] = std::max(lastUse[r], i);
    }
  for (const Value* v : f.returns) lastUse[bp.root(v)] = kEnd;
  // A returned kernel result is written straight into its output buffer (the
  // first output, when a value is returned more than once).
  for (size_t i = 0; i < f.returns.size(); ++i) {
    const Value* v = f.returns[i];
    if (v->def && v->def->kind == OpKind::Fusion && !places.count(v)) places[v] = {BufferPlace::Output, i};
  }
  std::vector<size_t> slotFreeAt;  // op index after which the slot is free
  for (size_t i = 0; i < f.ops.size(); ++i) {
    const Operation& op = *f.ops[i];
    // On the GPU, values made on the host (constants, dims, scalar
    // arithmetic) are copied to a device slot for the kernels to read, held
    // to the end of the call.
    if (gpu && op.kind != OpKind::Fusion && op.kind != OpKind::Reshape && op.kind != OpKind::Check)
      for (const auto& r : op.results) {
        size_t slot = acquire(slotFreeAt, i, kEnd);
        bp.mirror[r.get()] = slot;
        bp.slotTemps[slot].push_back(r->type);
      }
    if (op.kind != OpKind::Fusion) continue;
    for (const auto& r : op.results) {
      if (places.count(r.get())) continue;
      size_t slot = acquire(slotFreeAt, i, lastUse.count(r.get()) ? lastUse[r.get()] : i);
      places[r.get()] = {BufferPlace::Scratch, slot};
      bp.slotValues[slot].push_back(r.get());
    }
    // Library kernels may need temporaries alive during the op only.
    const KernelPlan* k = kernelOf(plan, &op);
    if (k && k->gemm) {
      std::vector<std::pair<std::string, Type>> temps;
      DType gdt = k->gemm->matmul->operands[0]->type.dtype;
      if (!k->gemm->a.copyDims.empty()) temps.push_back({"a", Type{gdt, k->gemm->a.copyDims}});
      if (!k->gemm->b.copyDims.empty()) temps.push_back({"b", Type{gdt, k->gemm->b.copyDims}});
      if (k->gemm->epilogue && !k->gemm->epilogueInPlace) temps.push_back({"c", k->gemm->matmul->result()->type});
      for (auto& [name, t] : temps) {
        size_t slot = acquire(slotFreeAt, i, i);
        bp.tempSlot[{&op, name}] = slot;
        bp.slotTemps[slot].push_back(t);
      }
    }
    // A GPU scatter without reduction: one i64 per row, its last update; a GPU cumsum: one per column and chunk
    // of its chunked form (codegen/gpu/GpuScatter.h).
    if (gpu && k && ((k->scatter && gpuScatterNeedsWorkspace(*k->scatter)) || k->scan)) {
      size_t slot = acquire(slotFreeAt, i, i);
      bp.tempSlot[{&op, "ws"}] = slot;
      bp.slotTemps[slot].push_back(Type{DType::I64, {k->scatter ? gpuScatterWorkspace(*k->scatter)
                                                                 : gpuScanWorkspace(*k->scan, kGpuScanChunk)}});
    }
    // A GPU rnn: its states between steps and the input projection, in f64 (codegen/gpu/GpuRecurrent.h).
    if (gpu && k && k->rnn) {
      size_t slot = acquire(slotFreeAt, i, i);
      bp.tempSlot[{&op, "ws"}] = slot;
      bp.slotTemps[slot].push_back(Type{DType::F64, {gpuRnnWorkspace(*k->rnn)}});
    }
    // Split and tile-split versions (GPU) and row-split versions (CPU): the workspace of
    // partial reductions, one per op.
    if (k)
      for (const KernelVariant& v : k->versions) {
        bool split = gpu && v.schedule == GpuSchedule::Split;
        bool rows = gpu ? v.schedule == GpuSchedule::TileSplit : v.schedule == GpuSchedule::RowSplit;
        if ((split || rows) && !bp.tempSlot.count({&op, "ws"})) {
          size_t slot = acquire(slotFreeAt, i, i);
          bp.tempSlot[{&op, "ws"}] = slot;
          bp.slotTemps[slot].push_back(
              Type{DType::I64, {split ? splitWorkspaceElements(*k, v) : rowSplitWorkspaceElements(k->iface)}});
        }
      }
  }
  return bp;
}

}  // namespace dscc::codegen
