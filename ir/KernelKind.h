// The kinds of fused kernel (loop, input, stitch, generic, library): one enum, its text form, and a fusion op's kind.
//
// The kind is the `kind` attribute of a `fusion` op in the textual IR
// (`fusion %x {kind = "stitch"}`), so the enum lives with the IR: the
// verifier checks it, the planner (passes/Fuse.cpp) sets it, code generation
// and the tools read it. Everything else compares the enum, never the text.
#pragma once

#include <optional>
#include <string_view>

namespace dscc {

struct Operation;

/// Which lowering takes a fused kernel. Ordered as TVM orders op patterns:
/// from the kernels whose every op reads at the kernel's own index (a loop;
/// a loop reducing into its results, the input kernel; one re-reading its
/// reductions at full size, the stitch) to the element generator's generic
/// kernel (any index map), then the opaque library call.
enum class KernelKind {
  Loop,     ///< elementwise and broadcasting ops over one iteration space
  Input,    ///< reductions of one input space, with an epilogue at the kept space
  Stitch,   ///< last-axis reductions whose results are read again at the rows' full size
  Generic,  ///< any ops with an index map, lowered by the element generator
  Library   ///< one matmul as a BLAS call, with a layout prologue and an elementwise epilogue
};

/// The kind's text form, as the IR writes it: "loop", "input", "stitch",
/// "generic", "library".
const char* kernelKindName(KernelKind k);

/// The kind written `s` (kernelKindName's inverse); nullopt for any other text.
std::optional<KernelKind> parseKernelKind(std::string_view s);

/// The kind of a fusion op, from its `kind` attribute; nullopt when it has
/// none, or one that is not a string naming a kind (only an unverified op).
std::optional<KernelKind> kernelKindOf(const Operation& fusion);

/// Sets the `kind` attribute of a fusion op to `k` (as kernelKindName writes it).
void setKernelKind(Operation& fusion, KernelKind k);

}  // namespace dscc
