// What `dscc explain` says about each kernel, as data: `dscc explain` prints it and `dscc view` draws it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/ModelPlan.h"
#include "ir/IR.h"
#include "ir/KernelKind.h"

namespace dscc::tools {

/// One guard of a kernel, as explain reports it.
struct GuardExplain {
  std::string kind;           ///< vector, index32, schedule, broadcast-free
  std::string text;           ///< the condition (`D % 8 == 0`)
  bool proved = false;        ///< proved from the facts: no run-time test
  std::optional<bool> holds;  ///< at the given sizes (unset without sizes, or when a dim cannot be evaluated)
  bool aligned = false;       ///< also tests the pointers per call
};

/// One kernel of a plan, as explain reports it.
struct KernelExplain {
  size_t index = 0;
  std::string result;  ///< the fusion's first result (`%name` without the %)
  std::string symbol;  ///< the kernel's symbol (`main.k3`), what profiles call it
  KernelKind kind = KernelKind::Loop;  ///< which lowering took it
  std::string type;    ///< the first result's type
  std::string ops;     ///< the ops of its body, space separated
  std::string blas;    ///< library kernels: the BLAS call at the sizes (`sgemm: M=.. N=.. K=..`); "" otherwise
  bool hasKernel = true;  ///< false: a library kernel with no epilogue (only the BLAS runs)
  std::vector<GuardExplain> guards;
  std::vector<std::string> versions;  ///< names, most specialised first
  std::string tuned;                  ///< with --tuning: the range and configuration that apply ("" untuned)
  std::string runs;                   ///< the function that runs at the sizes; "" without sizes or epilogue
  std::string text;                   ///< explain's block for this kernel, exactly as it prints it
};

/// Describes every kernel of `plan` at sizes `env` (null: no sizes, so no
/// guard values and no version chosen), in program order.
std::vector<KernelExplain> explainKernels(const codegen::ModelPlan& plan, const DimBindings* env);

}  // namespace dscc::tools
