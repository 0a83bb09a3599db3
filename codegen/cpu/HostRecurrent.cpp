// The host side of rnn kernels: one call of dscc_rnn_f32 with the sizes evaluated at run time.
#include "codegen/HostEmitter.h"
#include "codegen/RecurrentPlan.h"

#include <llvm/IR/Constants.h>

namespace dscc::codegen {

std::string HostEmitter::emitRnnKernel(const Operation& op, const KernelPlan& k) {
  const RnnPlan& p = *k.rnn;
  auto* ptr = ptrTy();
  auto opt = [&](const std::optional<size_t>& i) -> llvm::Value* {
    return i ? address(op.operands.at(*i)) : llvm::ConstantPointerNull::get(b_.getPtrTy());
  };
  llvm::FunctionCallee rnn = declare("dscc_rnn_f32", i32(), {ptr, i32(), i32(), i32(), i32(), i64(), i64(), i64(), i64(),
                                                             ptr, ptr, ptr, ptr, ptr, ptr, ptr});
  checked(rnn, {ctxArg_, b_.getInt32(static_cast<int32_t>(p.attrs.cell)),
                b_.getInt32(static_cast<int32_t>(p.attrs.direction)), b_.getInt32(p.attrs.linearBeforeReset ? 1 : 0),
                b_.getInt32(static_cast<int32_t>(p.attrs.output)), dim(p.seq), dim(p.batch), dim(p.input),
                b_.getInt64(p.attrs.hidden), address(op.operands.at(p.x)), address(op.operands.at(p.w)),
                address(op.operands.at(p.r)), opt(p.b), opt(p.h0), opt(p.c0), address(op.result(0))});
  return "";
}

}  // namespace dscc::codegen
