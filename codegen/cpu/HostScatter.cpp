// The host side of scatter and cumsum kernels: one dscc_scatter / dscc_cumsum call with the sizes evaluated at run time.
#include "codegen/HostEmitter.h"
#include "codegen/ScatterPlan.h"

namespace dscc::codegen {

std::string HostEmitter::emitScatterKernel(const Operation& op, const KernelPlan& k) {
  const ScatterPlan& p = *k.scatter;
  auto* ptr = ptrTy();
  llvm::FunctionCallee fn = declare("dscc_scatter", i32(), {ptr, i32(), i32(), i32(), i64(), i64(), i64(), ptr, ptr, ptr, ptr});
  checked(fn, {ctxArg_, b_.getInt32(static_cast<int32_t>(p.dtype)), b_.getInt32(static_cast<int32_t>(p.reduction)),
               b_.getInt32(static_cast<int32_t>(p.indexDType)), dim(p.rows), dim(p.count), dim(p.inner),
               address(op.operands.at(p.data)), address(op.operands.at(p.indices)), address(op.operands.at(p.updates)),
               address(op.result(0))});
  return "";
}

std::string HostEmitter::emitScanKernel(const Operation& op, const KernelPlan& k) {
  const ScanPlan& p = *k.scan;
  auto* ptr = ptrTy();
  llvm::FunctionCallee fn = declare("dscc_cumsum", i32(), {ptr, i32(), i32(), i32(), i64(), i64(), i64(), ptr, ptr});
  checked(fn, {ctxArg_, b_.getInt32(static_cast<int32_t>(p.dtype)), b_.getInt32(p.attrs.exclusive ? 1 : 0),
               b_.getInt32(p.attrs.reverse ? 1 : 0), dim(p.outer), dim(p.len), dim(p.inner),
               address(op.operands.at(p.x)), address(op.result(0))});
  return "";
}

}  // namespace dscc::codegen
