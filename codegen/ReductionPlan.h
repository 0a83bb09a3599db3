// The plan of a reduction kernel (internal to codegen/): frames, phases, results and the interface of stitch and input kernels.
//
// ReductionLowering emits code from it; see ReductionLowering.h for what the
// two kernel kinds compute.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/Kernel.h"
#include "codegen/KernelCommon.h"
#include "ir/IR.h"

namespace dscc::codegen::reduction {

// The index space a value's dims right-align to. Full: the reductions' input
// shape; Rows: the kept dims (values derived from a keepdims=false
// reduction); Any: either (fusion operands and values computed only from
// them are read in whichever frame their user has).
enum class Frame { Any, Full, Rows };

/// True for reduce_* ops.
bool isReduction(const Operation& op);

/// A planned stitch or input kernel.
struct Plan {
  const Operation* fusion = nullptr;
  bool stitch = false;
  const char* kindName = "";  ///< kernelKindName of the kind planned, for messages
  KernelInterface iface;
  std::vector<DimExpr> space, kept, keepShape;  // S, K, S with 1 at reduced dims
  std::vector<bool> reduced;                    // per dim of S
  std::map<const Value*, size_t> inputIndex;
  std::map<const Value*, const Operation*> defOf;  // body values
  std::map<const Value*, Frame> frame;             // body values
  // The latest phase of the reductions a body value depends on (-1: none).
  // A phase, not the set of reductions: the sets grew along a chain of
  // stitched reductions, which made planning quadratic in the kernel's size.
  std::map<const Value*, int> depPhase;
  std::vector<const Operation*> reductions;
  std::map<const Operation*, int> phase;
  int phases = 0;
  bool column = false;  // input kernel whose last axis is kept
  std::set<std::pair<size_t, Frame>> reads;  // (input, frame) pairs the kernel reads
  std::vector<Frame> resultFrame;
  std::vector<bool> resultElem;

  const std::vector<DimExpr>& dims(Frame f) const { return f == Frame::Rows ? kept : space; }
  Frame frameOf(const Value* v, Frame ctx) const {
    auto it = frame.find(v);
    Frame f = it == frame.end() ? Frame::Any : it->second;
    return f == Frame::Any ? (ctx == Frame::Any ? Frame::Full : ctx) : f;
  }
  // Memos of elem and check by (value, frame): a value read twice (`mul %v,
  // %v`) made both walks exponential in the kernel's depth (docs/hardening.md).
  mutable std::map<std::pair<const Value*, Frame>, bool> elemMemo;
  std::set<std::pair<const Value*, Frame>> checkedOk;

  // True when `v`, read in frame `f`, varies along the reduced dims.
  bool elem(const Value* v, Frame f) const {
    f = frameOf(v, f);
    auto key = std::make_pair(v, f);
    if (auto it = elemMemo.find(key); it != elemMemo.end()) return it->second;
    bool r = elemUncached(v, f);
    elemMemo[key] = r;
    return r;
  }
  bool elemUncached(const Value* v, Frame f) const {
    if (inputIndex.count(v)) {
      if (f == Frame::Rows) return false;
      size_t lead = space.size() - v->type.rank();
      for (size_t d = 0; d < v->type.rank(); ++d) {
        const DimExpr& x = v->type.dims[d];
        if (reduced[lead + d] && !(x.isConst() && x.constValue() == 1)) return true;
      }
      return false;
    }
    const Operation* op = defOf.at(v);
    if (isReduction(*op)) return false;
    for (const Value* o : op->operands)
      if (elem(o, f)) return true;
    return false;
  }
  // Checks ranks against the frames and records which inputs are read where.
  std::string check(const Value* v, Frame f) {
    f = frameOf(v, f);
    if (checkedOk.count({v, f})) return "";
    std::string e = checkUncached(v, f);
    if (e.empty()) checkedOk.insert({v, f});
    return e;
  }
  std::string checkUncached(const Value* v, Frame f) {
    if (v->type.rank() > dims(f).size())
      return err("%" + v->name + " of type " + v->type.str() + " has a higher rank than the " + kindName +
                 " kernel's space");
    if (auto it = inputIndex.find(v); it != inputIndex.end()) {
      reads.insert({it->second, f});
      return "";
    }
    const Operation* op = defOf.at(v);
    if (isReduction(*op)) return "";
    for (const Value* o : op->operands)
      if (std::string e = check(o, f); !e.empty()) return e;
    return "";
  }
};

/// Plans `f` (a fusion of KernelKind::Stitch when `stitch`, else Input): its
/// space, reduced dims, phases, frames and interface. "" or why it cannot be lowered.
std::string plan(const Operation& f, bool stitch, Plan& p);

}  // namespace dscc::codegen::reduction
