// The plan of a reduction kernel (internal to codegen/): frames, phases, results and the interface of stitch and input kernels.
//
// The form comes from passes/ReductionForm.h; ReductionLowering emits code from it; see ReductionLowering.h for what the
// two kernel kinds compute.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/Kernel.h"
#include "codegen/KernelCommon.h"
#include "ir/IR.h"
#include "passes/ReductionForm.h"

namespace dscc::codegen::reduction {

using fuseops::Frame;
using fuseops::isReduction;

/// A planned stitch or input kernel: its form (passes/ReductionForm.h, the
/// same analysis the fusion planner asked when it formed the kernel) and
/// what the lowering adds, its interface and guard inputs.
struct Plan : fuseops::ReductionForm, KernelForm {
  bool stitch = false;  ///< a stitch kernel (else an input kernel)
};

/// Plans `f` (a fusion of KernelKind::Stitch when `stitch`, else Input): its
/// space, reduced dims, phases, frames and interface. "" or why it cannot be lowered.
std::string plan(const Operation& f, bool stitch, Plan& p);

}  // namespace dscc::codegen::reduction
