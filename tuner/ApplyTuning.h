// `dscc compile --tuning` / `dscc explain --tuning`: checks a tuning file against a model's plan and attaches its range tables.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>

#include "codegen/ModelPlan.h"
#include "passes/ShapeSolver.h"
#include "tuner/TuningTable.h"

namespace dscc::tuner {

/// The vector widths the configurations of `t` use (ranges and fallbacks).
std::set<int> tuningWidths(const TuningFile& t);

/// Checks `t` (read from `file`) against `plan` and sets
/// plan.kernels[i].tuning for every kernel it tunes. `plans` maps each width of
/// tuningWidths(t) to a plan of the same function with that vector width.
///
/// Errors (returned, located at the line of `file`): ranges of one kernel that
/// overlap (with a witness size in both), ranges that leave part of the
/// governing size's declared domain (interval bounds over the `where` facts)
/// uncovered when the kernel has no fallback (with a witness), a kernel index
/// the model does not have. Warnings (to `warn`, the default is then used):
/// a kernel whose fingerprint or governing size no longer matches (stale), a
/// file made for another function or target.
std::string applyTuning(const TuningFile& t, const std::string& file, ShapeSolver& solver, codegen::ModelPlan& plan,
                        const std::map<int, const codegen::ModelPlan*>& plans, std::ostream& warn);

/// Reads tuning file `file` and applies it to `plan` (planned with vector
/// width `baseWidth`); `planWidth(w)` plans the same function with width w
/// (null after printing why). Returns "" or the error to print.
std::string loadTuning(const std::string& file, ShapeSolver& solver, codegen::ModelPlan& plan, int baseWidth,
                       const std::function<const codegen::ModelPlan*(int)>& planWidth, std::ostream& warn);

}  // namespace dscc::tuner
