// Verification and result-type inference of `scatter` and `cumsum` (attributes in ir/Scatter.h).
#include "ir/Scatter.h"
#include "ir/VerifierInternal.h"

namespace dscc::verifier_detail {

// scatter %data [N, rest...], %indices [S...], %updates [S..., rest...]: the result is data's type.
bool OpChecker::inferScatter() {
  ScatterReduction red;
  Location where;
  if (std::string e = readScatterReduction(op_, red, where); !e.empty()) return err(where, e);
  const Type& data = in(0);
  const Type& idx = in(1);
  const Type& upd = in(2);
  if (data.rank() == 0) return err("'scatter' needs data of rank >= 1, but " + operandName(0) + " is " + data.str());
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    return err("the indices of 'scatter' must be i32 or i64, but " + operandName(1) + " is " + idx.str());
  if (!sameDType(0, 2)) return false;
  if (red != ScatterReduction::None && isBool(data.dtype))
    return err("'scatter' with reduction = \"" + std::string(scatterReductionName(red)) + "\" needs a non-i1 operand, but " +
               operandName(0) + " is " + data.str());
  std::vector<DimExpr> want = idx.dims;
  want.insert(want.end(), data.dims.begin() + 1, data.dims.end());
  std::string shape = "[" + std::to_string(idx.rank()) + " index dims, then data's dims after the first]";
  if (upd.rank() != want.size())
    return err("the updates of 'scatter' must have rank " + std::to_string(want.size()) + " " + shape + ", but " +
               operandName(2) + " is " + upd.str());
  for (size_t d = 0; d < want.size(); ++d) {
    std::string what = "dim " + std::to_string(d) + " of the updates of 'scatter' (" +
                       (d < idx.rank() ? "indices' dim " + std::to_string(d)
                                       : "data's dim " + std::to_string(d - idx.rank() + 1)) +
                       ", " + want[d].str() + ")";
    if (!checkEqualDims(upd.dims[d], want[d], what + " does not match " + operandName(2) + " " + upd.str(),
                        what + " matches"))
      return false;
  }
  setResult(data);
  return true;
}

// cumsum %x {axis, exclusive, reverse}: same type as x.
bool OpChecker::inferCumSum() {
  const Type& x = in(0);
  if (x.rank() == 0) return err("'cumsum' needs an operand of rank >= 1, but " + operandName(0) + " is " + x.str());
  ScanAttrs a;
  Location where;
  if (std::string e = readScanAttrs(op_, x.rank(), a, where); !e.empty()) return err(where, e);
  setResult(x);
  return true;
}

}  // namespace dscc::verifier_detail
