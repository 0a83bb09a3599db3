// What values an integer argument may hold for the program to be defined: indices into a table, masks; for random inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace dscc {

/// The values random data for one argument is drawn from: [lo, hi), and why.
struct InputRange {
  int64_t lo = 0, hi = 4;
  /// "indices into a table of 30522 rows (gather at ...)", "a mask", or "" (the default).
  std::string why;
};

/// For each argument of `f` with an integer or i1 dtype, the range a random
/// value should come from so the program means something at sizes `env`:
/// - used (through casts, reshapes, slices, transposes, broadcasts, concats,
///   and additions of constants) as the indices of a `gather`: [0, V) where
///   V is the smallest table dim it indexes (a token id, a position, a token
///   type);
/// - else, converted to a float or compared (a padding mask): {0, 1};
/// - else nullopt (the caller's default).
/// Float arguments get nullopt.
std::vector<std::optional<InputRange>> inputRanges(const Function& f, const DimBindings& env);

}  // namespace dscc
