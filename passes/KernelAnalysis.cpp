// What a fused kernel is: its kind, reductions and why it is generic (declared in KernelAnalysis.h).
#include "passes/KernelAnalysis.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ir/IndexMap.h"

namespace dscc::fuseops {

std::string gemmRefusal(const Operation& mm, KernelTarget target) {
  const bool gpu = target == KernelTarget::Gpu;
  const Type &ta = mm.operands[0]->type, &tb = mm.operands[1]->type;
  if (ta.rank() >= 3 && tb.rank() >= 3)
    for (size_t k = 1; k + 2 <= std::min(ta.rank(), tb.rank()); ++k) {
      const DimExpr &x = ta.dims[ta.rank() - 2 - k], &y = tb.dims[tb.rank() - 2 - k];
      bool one = (x.isConst() && x.constValue() == 1) || (y.isConst() && y.constValue() == 1);
      if (!(x == y) && !one) return "batch dims of the matmul may broadcast only at run time";
    }
  DType dt = ta.dtype;
  if (dt == DType::F32 || (gpu && (dt == DType::F16 || dt == DType::BF16))) return "";
  return "no GEMM routine for a matmul of " + std::string(dtypeName(dt)) + (gpu ? "" : " on the cpu");
}

KernelOps groupKernelOps(const std::vector<Operation*>& ops,
                         const std::function<bool(const Value*, const std::set<const Operation*>&)>& yieldedBy) {
  KernelOps k;
  std::set<const Operation*> in(ops.begin(), ops.end());
  std::set<const Value*> inner, taken;
  for (const Operation* op : ops) {
    k.body.push_back(op);
    for (const Value* v : op->operands)
      if (!inner.count(v) && taken.insert(v).second) k.operands.push_back(v);
    for (const auto& r : op->results) inner.insert(r.get());
  }
  for (const Operation* op : ops)
    for (const auto& r : op->results)
      if (yieldedBy(r.get(), in)) {
        k.yields.push_back(r.get());
        k.results.push_back(r.get());
      }
  if (!k.results.empty()) k.name = k.results.front()->name;
  return k;
}

std::string checkGroupForm(const std::vector<Operation*>& ops, KernelKind k, const KindQueries& q) {
  if (k != KernelKind::Stitch && k != KernelKind::Input) return "";
  ReductionForm form;
  return formReductions(groupKernelOps(ops, q.yieldedBy), k == KernelKind::Stitch, form);
}

KernelKind kernelKind(const std::vector<Operation*>& ops, const KindQueries& q, std::string& why) {
  const std::set<const Operation*>& freeOps = q.freeOps;
  const auto& same = q.same;
  const auto& yieldedBy = q.yieldedBy;
  for (Operation* o : ops)
    if (o->kind == OpKind::Matmul) {
      std::string no = gemmRefusal(*o, q.target);
      if (no.empty()) return KernelKind::Library;
      why = "generic: %" + o->result()->name + " (matmul): " + no;
      return KernelKind::Generic;
    } else if (classify(*o, freeOps) == Cls::Matmul) {
      return KernelKind::Library;  // conv, pool, rnn, scatter, cumsum: runtime calls (GPU: scatter, cumsum are kernels of ours)
    }
  for (Operation* o : ops)
    if (classify(*o, freeOps) != Cls::Composite && !readsAtKernelIndex(*o)) {
      why = "generic: %" + o->result()->name + " (" + std::string(o->name()) + ") reads its operand at a computed index (" +
            patternName(opPattern(*o)) + "), which only the element generator lowers";
      return KernelKind::Generic;
    }
  bool red = false, stitch = false, nested = false;
  // Values computed (within the kernel) from a reduction's result, with
  // the element count of that reduction's input.
  std::map<const Value*, DimExpr> downstream;
  for (Operation* o : ops) {
    Cls c = classify(*o, freeOps);
    if (c == Cls::Composite) stitch = true;
    for (const Value* v : o->operands) {
      auto it = downstream.find(v);
      if (it == downstream.end()) continue;
      // Used again at the full size of the reduced input: a stitch.
      if (same(numel(o->result()->type), it->second)) stitch = true;
      downstream.emplace(o->result(), it->second);
    }
    if (c == Cls::Reduction) {
      red = true;
      nested |= downstream.count(o->operands[0]) != 0;
      downstream[o->result()] = numel(o->operands[0]->type);
    }
  }
  std::set<const Operation*> in(ops.begin(), ops.end());
  const Operation* r0 = nullptr;  // the first reduction
  for (Operation* o : ops)
    if (!r0 && classify(*o, freeOps) == Cls::Reduction) r0 = o;
  // A reduction of a reduced value that is not re-read at full size: no
  // input kernel takes it (random batch seed 3, program 86).
  if (red && !stitch && nested) {
    why = "generic: a reduction reads another reduction's result, which an input kernel does not take";
    return KernelKind::Generic;
  }
  if (red && !stitch) {
    // An input kernel yields reduced values only; one that also yields a
    // value at the reductions' full size is the stitch lowering's form
    // when every reduction reduces the last axis of the same rows (it
    // stores full-size results), else the element generator's.
    bool rowsAlike = true;
    bool oneSpace = true;  // the input lowering's form: one input space, one axis set
    for (Operation* o : ops)
      if (classify(*o, freeOps) == Cls::Reduction) {
        rowsAlike &= lastAxisReduction(*o) && o->operands[0]->type.dims == r0->operands[0]->type.dims;
        oneSpace &= o->operands[0]->type.dims == r0->operands[0]->type.dims && reducedAxes(*o) == reducedAxes(*r0);
        if (!oneSpace) {
          why = "generic: reductions %" + r0->result()->name + " and %" + o->result()->name +
                " differ in input dims or axes, which one input kernel does not reduce";
          return KernelKind::Generic;
        }
      }
    for (Operation* o : ops) {
      if (classify(*o, freeOps) == Cls::Reduction || downstream.count(o->result())) continue;
      if (!yieldedBy(o->result(), in) || !same(numel(o->result()->type), numel(r0->operands[0]->type))) continue;
      if (rowsAlike) return KernelKind::Stitch;
      why = "generic: %" + o->result()->name + " is yielded at the full size of reduction %" + r0->result()->name +
            ", which an input kernel does not store";
      return KernelKind::Generic;
    }
  }
  if (red) {
    // The input and stitch lowerings store what the reductions feed (a
    // reduced value, a stitch's full-size value); a value computed before
    // them (a scalar of other kernels' results broadcast into the input,
    // yielded too) only the element generator stores (seed 8001 program 277).
    for (Operation* o : ops) {
      if (classify(*o, freeOps) == Cls::Reduction || downstream.count(o->result()) || !yieldedBy(o->result(), in))
        continue;
      if (stitch && same(numel(o->result()->type), numel(r0->operands[0]->type))) continue;
      why = "generic: %" + o->result()->name + " is yielded but computed before the kernel's reductions, at " +
            "other than their input's size, which the input and stitch lowerings do not store";
      return KernelKind::Generic;
    }
  }
  if (!red && !stitch) {
    // A loop kernel stores every result at the index of one iteration
    // space: results whose dims differ as written (f32[M] beside
    // f32[bcast(K, M)], equal in count only by the checks: random batch
    // seed 3002, program 136) are stored by the element generator.
    const Value* first = nullptr;
    for (Operation* o : ops)
      for (const auto& r : o->results) {
        if (!yieldedBy(r.get(), in)) continue;
        if (!first) first = r.get();
        else if (r->type.dims != first->type.dims) {
          why = "generic: results %" + first->name + " (" + first->type.str() + ") and %" + r->name + " (" +
                r->type.str() + ") differ in shape, which one loop kernel does not store";
          return KernelKind::Generic;
        }
      }
  }
  return stitch ? KernelKind::Stitch : red ? KernelKind::Input : KernelKind::Loop;
}

KernelAnalysis analyzeKernel(const std::vector<Operation*>& ops, const KindQueries& q) {
  KernelAnalysis a;
  a.kind = kernelKind(ops, q, a.whyGeneric);
  if (std::string no = checkGroupForm(ops, a.kind, q); !no.empty()) {
    a.whyGeneric = "generic: it lacks the " + std::string(kernelKindName(a.kind)) + " form: " + no;
    a.kind = KernelKind::Generic;
  }
  for (const Operation* o : ops)
    if (classify(*o, q.freeOps) == Cls::Reduction) a.reductions.push_back(o);
  return a;
}

}  // namespace dscc::fuseops
