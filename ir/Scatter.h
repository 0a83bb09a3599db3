// The data-dependent write `scatter` and the scan `cumsum`: their attributes, read once for the verifier, the
// interpreter and codegen.
#pragma once

#include <cstdint>
#include <string>

#include "ir/IR.h"

namespace dscc {

/// How a `scatter` puts an update row into the data: replace it, or combine elementwise.
/// The values are those of dscc_scatter's `reduction` argument (runtime/dscc_runtime.h).
enum class ScatterReduction { None = 0, Add = 1, Mul = 2, Max = 3, Min = 4 };

/// Reads `reduction` of `op` (a `scatter`; absent: none). Returns "" or a message; on error `where` is the
/// attribute's location.
std::string readScatterReduction(const Operation& op, ScatterReduction& out, Location& where);
/// The attribute spelling ("none", "add", "mul", "max", "min").
const char* scatterReductionName(ScatterReduction r);

/// The attributes of one `cumsum`, read and checked.
struct ScanAttrs {
  size_t axis = 0;         ///< normalised against the operand's rank
  bool exclusive = false;  ///< each output leaves out its own element (starts at 0)
  bool reverse = false;    ///< sums from the end of the axis
};

/// Reads the attributes of `op` (a `cumsum` whose operand has rank `rank` >= 1). Returns "" or a message;
/// on error `where` is the offending attribute's location (or stays as it was: the op's).
std::string readScanAttrs(const Operation& op, size_t rank, ScanAttrs& out, Location& where);

}  // namespace dscc
