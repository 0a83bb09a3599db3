// Bounds checks on a lowered CPU kernel's buffer accesses (`dscc compile --check-bounds`, docs/hardening.md).
#pragma once

#include <string>

#include "codegen/Kernel.h"

namespace dscc::codegen {

/// What addBoundsChecks did to one kernel.
struct BoundsCheckStats {
  int checked = 0;    ///< loads and stores of input and output buffers given a check
  int unchecked = 0;  ///< accesses whose buffer could not be traced (through a phi or select): left as they were
};

/// Instruments `fn`, a kernel lowered with the CPU calling convention of
/// codegen/Kernel.h (`inputs`, `outputs`, `sizes`, `begin`, `end`) whose
/// buffers `iface` describes: before every load and store whose address is
/// a chain of GEPs from `inputs[k]` or `outputs[i]`, the byte range it
/// touches is compared with the buffer's size (its type's element count,
/// evaluated from `sizes`). An access outside it calls an internal helper
/// that prints `dscc: out-of-bounds ... in kernel KERNEL: ... element INDEX
/// of BUFFER, which has SIZE elements` to stderr and aborts, instead of
/// reading or writing outside the buffer. Call before any optimisation
/// (the addresses are still plain GEP chains then).
BoundsCheckStats addBoundsChecks(llvm::Function& fn, const KernelInterface& iface, const std::string& kernel);

}  // namespace dscc::codegen
