// The form of a stitch or input kernel, computed once from its ops: the reductions' space, the frame and phase of each value, what the results store.
//
// The fusion planner asks it of every stitch and input kernel it forms (a
// kernel whose form this refuses is planned again or made generic), and the
// reduction lowering (codegen/ReductionPlan.cpp) builds its plan on it, so the
// two cannot disagree on what a lowerable reduction kernel is.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace dscc::fuseops {

/// The index space a value's dims right-align to. Full: the reductions'
/// input shape; Rows: the kept dims (values derived from a keepdims=false
/// reduction); Any: either (fusion operands and values computed only from
/// them are read in whichever frame their user has).
enum class Frame { Any, Full, Rows };

/// True for reduce_* ops.
bool isReduction(const Operation& op);

/// The form of a stitch or input kernel (a fusion op's body).
struct ReductionForm {
  const Operation* fusion = nullptr;  ///< set by the fusion op's form (codegen), null for KernelOps
  bool stitch = false;
  const char* kindName = "";  ///< kernelKindName of the kind formed, for messages
  std::vector<DimExpr> space, kept, keepShape;  ///< S, K, S with 1 at reduced dims
  std::vector<bool> reduced;                    ///< per dim of S
  std::map<const Value*, size_t> inputIndex;     ///< fusion operand -> its position
  std::map<const Value*, const Operation*> defOf;  ///< body values
  std::map<const Value*, Frame> frame;             ///< body values
  /// The latest phase of the reductions a body value depends on (-1: none).
  /// A phase, not the set of reductions: the sets grew along a chain of
  /// stitched reductions, which made planning quadratic in the kernel's size.
  std::map<const Value*, int> depPhase;
  std::vector<const Operation*> reductions;
  std::map<const Operation*, int> phase;
  int phases = 0;
  bool column = false;                       ///< an input kernel whose last axis is kept
  std::set<std::pair<size_t, Frame>> reads;  ///< (operand, frame) pairs the kernel reads
  std::vector<Frame> resultFrame;
  std::vector<bool> resultElem;

  const std::vector<DimExpr>& dims(Frame f) const { return f == Frame::Rows ? kept : space; }
  Frame frameOf(const Value* v, Frame ctx) const {
    auto it = frame.find(v);
    Frame f = it == frame.end() ? Frame::Any : it->second;
    return f == Frame::Any ? (ctx == Frame::Any ? Frame::Full : ctx) : f;
  }
  /// True when `v`, read in frame `f`, varies along the reduced dims.
  bool elem(const Value* v, Frame f) const;
  /// Checks ranks against the frames and records which operands are read
  /// where: "" or why `v` does not fit frame `f`.
  std::string check(const Value* v, Frame f);

 private:
  bool elemUncached(const Value* v, Frame f) const;
  std::string checkUncached(const Value* v, Frame f);
  // Memos of elem and check by (value, frame): a value read twice (`mul %v,
  // %v`) made both walks exponential in the kernel's depth (docs/hardening.md).
  mutable std::map<std::pair<const Value*, Frame>, bool> elemMemo_;
  std::set<std::pair<const Value*, Frame>> checkedOk_;
};

/// A kernel's ops, as a fusion op holds them or as the planner is forming
/// them (before any fusion op exists): what formReductions reads.
struct KernelOps {
  std::string name;                      ///< for messages: the kernel's first result
  std::vector<const Operation*> body;    ///< in program order
  std::vector<const Value*> operands;    ///< values read from outside the body
  std::vector<const Value*> yields;      ///< body values it stores
  std::vector<const Value*> results;     ///< what each yield is stored as (its dims and name)
};

/// The KernelOps of a fusion op: its body, operands, yields and results.
KernelOps kernelOpsOf(const Operation& fusion);

/// Forms the kernel `k` (stitch when `stitch`, else input): as below. The
/// planner asks it of a group as ops join it, so it forms only kernels that
/// have their kind's form.
std::string formReductions(const KernelOps& k, bool stitch, ReductionForm& out);

/// Forms `fusion` (a fusion op whose kind is stitch when `stitch`, else input):
/// its space, reduced dims, phases, frames and what each result stores.
/// Returns "" or why the stitch or input lowering cannot take it (a reduction
/// of a reduced value, a value mixing reduced and unreduced dims, a stitch
/// over other than the last axis, an operand of a higher rank than its
/// frame, results of another shape). Dtypes are not its business: the code
/// generator handles every dtype.
std::string formReductions(const Operation& fusion, bool stitch, ReductionForm& out);

}  // namespace dscc::fuseops
