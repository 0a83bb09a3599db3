// `dscc compile -g`: DWARF for generated code, so debuggers and profilers show kernel names and .dsc lines.
#pragma once

#include <string>

namespace dscc::codegen {

class CodeModule;
struct ModelPlan;

/// Gives every defined function of `m` a DISubprogram (its own name, in the
/// compile unit of `file`) and a line on each of its instructions: a
/// kernel's functions the line of its first op in the program, the host
/// function the line of the IR function (its kernel launches the kernel's
/// line), other helpers the host's line.
/// Granularity is one line per kernel, not per op inside it. Call before
/// optimizeModule, so inlining keeps the locations.
void addDebugInfo(CodeModule& m, const ModelPlan& plan, const std::string& file, bool optimized);

}  // namespace dscc::codegen
