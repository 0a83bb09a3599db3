// Lowering of loop kernels (`fusion {kind = "loop"}`) to LLVM IR loop nests over symbolic sizes.
//
// The calling convention (CPU):
//
//   void NAME(void** inputs, void** outputs, const int64_t* sizes, int64_t begin, int64_t end);
//
//  - `inputs[k]` points at the dense row-major data of the fusion's operand k
//    (in operand order), `outputs[i]` at the buffer of its result i;
//  - `sizes[j]` is the value of `KernelInterface::symbols[j]`: every symbol
//    used by the dims of the fusion's operand and result types, sorted by
//    name in byte order (`?N` anonymous symbols sort before letters);
//  - [begin, end) is a range of flat (row-major) element indices of the
//    iteration space, the results' shape, with `0 <= begin <= end <=
//    units`; out-of-range bounds are clamped, an empty range does
//    nothing and reads no pointer.
//
// The range is the parallel mapping, and the only part that differs between
// targets: the CPU runtime gives each thread one chunk of [0, units);
// a GPU kernel derives [begin, end) from its block and thread ids and calls
// the same body (emitLoopKernelRange), so both share the kernel body.
//
// Elements are stored as the interpreter stores them (i1 as one byte 0/1) and
// computed as it computes them: f32 in float, f64 in double, integers wrapping
// at their width (equal to computing in int64 and wrapping each result), with
// libm for tanh and erf. Where the interpreter reports a data error the
// generated code cannot, it gives a defined value instead of trapping:
// integer division by zero gives 0, integer pow with a negative exponent 1.
//
// Inputs must not overlap outputs, except that an output may be the very
// buffer of an input of the same shape (an in-place update).
//
// Vectorisation: dims of the iteration space that every operand reads alike
// (all contiguous, or all broadcast) are merged, so same-shape operands see a
// flat 1-D loop. The innermost loop runs over one row of the merged shape
// with unit-stride pointers, loads of operands broadcast along the row
// hoisted out of it, and a second, strided copy of the loop for the operands
// whose innermost dim is 1 only at run time (a symbolic size that broadcasts).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/Kernel.h"
#include "ir/IR.h"

namespace llvm {
class Function;
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace dscc::codegen {

class CodeModule;

/// The C type of a lowered loop kernel (the common KernelFn).
using LoopKernelFn = KernelFn;

/// Plans the loop kernel `fusion` once for all its versions (its operands'
/// accesses, merged dims and interface); null with `error` set when it
/// cannot be lowered (describeLoopKernel's reasons).
std::shared_ptr<const KernelForm> planLoopKernel(const Operation& fusion, std::string* error);

/// Checks that the loop kernel `fusion` can be lowered and describes its
/// interface. Returns "" on success, else why not (an unsupported op or
/// dtype, a kernel kind other than "loop", results of different shapes).
std::string describeLoopKernel(const Operation& fusion, KernelInterface& out);

/// Lowers the loop kernel `fusion` to a function `name` with the CPU calling
/// convention in `m`. On an unsupported kernel returns the error and leaves
/// `m` without a function of that name.
/// `variant` selects the version (its assumptions are not checked here: the
/// host code guards the call).
LoweredKernel lowerLoopKernel(const Operation& fusion, CodeModule& m, const std::string& name,
                              const KernelVariant& variant = {});

/// As above, from the kernel's form (planLoopKernel), which every version shares.
LoweredKernel lowerLoopKernel(const KernelForm& form, CodeModule& m, const std::string& name,
                              const KernelVariant& variant = {});

/// Adds an empty function `name` of the KernelFn type (codegen/Kernel.h) to
/// `m`, with its argument names and attributes, for any kernel kind to fill;
/// null with `error` set if `m` already has that name.
llvm::Function* createKernelFunction(CodeModule& m, const std::string& name, std::string* error);

/// Emits, at `b`'s insertion point, the code that computes the flat elements
/// [begin, end) of the loop kernel `fusion` (i64 values); `inputs`, `outputs`
/// and `sizes` are pointer values with the meaning of the CPU convention.
/// Leaves `b` at the end of a block that falls through after the range is
/// done. This is the body every target shares: a target only wraps it in a
/// function and chooses begin and end. Returns "" or an error message, as
/// describeLoopKernel (then nothing is emitted).
std::string emitLoopKernelRange(const Operation& fusion, llvm::IRBuilderBase& b, llvm::Value* inputs,
                                llvm::Value* outputs, llvm::Value* sizes, llvm::Value* begin, llvm::Value* end,
                                const KernelVariant& variant = {});

}  // namespace dscc::codegen
