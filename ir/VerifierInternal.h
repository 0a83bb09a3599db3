// The op checker shared by the verifier's files (Verifier.cpp: the driver and
// the elementwise, reduction and composite ops; VerifyMovement.cpp: data movement).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/Verifier.h"
#include "ir/Window.h"

namespace dscc::verifier_detail {

// One op's verification: reports errors and computes result types.
class OpChecker {
 public:
  OpChecker(Function& f, Operation& op, DiagEngine& d, ShapeOracle& o)
      : f_(f), op_(op), diags_(d), oracle_(o) {}

  bool run();

 private:
  bool err(Location l, const std::string& m) {
    diags_.error(l.valid() ? l : op_.loc, m);
    ok_ = false;
    return false;
  }
  bool err(const std::string& m) { return err(op_.loc, m); }
  std::string opName() const { return std::string(op_.name()); }
  const Type& in(size_t i) const { return op_.operands[i]->type; }
  std::string operandName(size_t i) const { return "%" + op_.operands[i]->name; }

  // Attribute accessors: report a located error on a wrong kind.
  std::optional<int64_t> intAttr(const char* n, std::optional<int64_t> dflt);
  std::optional<bool> boolAttr(const char* n, bool dflt);
  std::optional<std::vector<int64_t>> intListAttr(const char* n);
  std::optional<int64_t> axisAttr(const char* n, size_t rank, std::optional<int64_t> dflt);

  bool sameDType(size_t a, size_t b);
  /// Checks the first operand's dtype against the op's domain (Ops.def).
  bool requireDomain();
  bool requireFloat(size_t i);
  bool requireNumeric(size_t i);
  std::optional<std::vector<DimExpr>> broadcast(const std::vector<std::vector<DimExpr>>& shapes);
  /// `what` names the failure for a compile error; `need` says what must hold for a run-time check.
  bool checkEqualDims(const DimExpr& a, const DimExpr& b, const std::string& what, const std::string& need);
  /// d == want || d == 1, as a dim of an operand stretched to a result dim.
  bool checkBroadcastsTo(const DimExpr& d, const DimExpr& want, const std::string& what, const std::string& need);
  void exampleNote();

  bool inferUnary();
  bool inferBinary();
  bool inferSelect();
  bool inferReduce();
  bool inferArgMax();
  bool inferSoftmax();
  bool inferLayerNorm();
  bool inferMatmul();
  // Sliding windows (VerifyWindow.cpp).
  bool inferConv();
  /// conv_transpose: operands, channels and the result size (VerifyWindow.cpp).
  bool inferConvTranspose();
  bool inferPool();
  /// Reads conv/pool attributes for `spatial` dims, reporting a located error.
  bool windowAttrs(size_t spatial, WindowAttrs& a);
  /// The window along spatial dim `i` fits in the padded input: proved, a compile error, or a run-time check.
  bool windowFits(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k);
  // Recurrent layers (VerifyRecurrent.cpp).
  bool inferRnn();
  bool inferReshape();
  bool inferTranspose();
  bool inferBroadcastTo();
  bool inferConcat();
  bool inferSlice();
  bool inferGather();
  // Data-dependent writes and scans (VerifyScatter.cpp).
  bool inferScatter();
  bool inferCumSum();
  bool inferIota();
  bool inferConstant();
  bool inferDim();
  bool inferFusion();

  void setResult(Type t);

  Function& f_;
  Operation& op_;
  DiagEngine& diags_;
  ShapeOracle& oracle_;
  bool ok_ = true;
};


}  // namespace dscc::verifier_detail
