// The host side of conv, conv_transpose and pool kernels: one call of dscc_conv_f32 (with its post-ops: dscc_conv_f32_post_info), dscc_conv_transpose_f32, dscc_pool_f32 or (argmax) dscc_pool_argmax_f32 with the sizes evaluated at run time.
#include "codegen/HostEmitter.h"
#include "codegen/WindowPlan.h"

#include <llvm/IR/Constants.h>

namespace dscc::codegen {

std::string HostEmitter::emitWindowKernel(const Operation& op, const KernelPlan& k) {
  const WindowPlan& w = *k.window;
  auto* p = ptrTy();
  auto arr = [&](const std::vector<DimExpr>& ds, const std::string& n) {
    std::vector<llvm::Value*> vs;
    for (const DimExpr& d : ds) vs.push_back(dim(d));
    return i64Array(vs, n);
  };
  auto ints = [&](const std::vector<int64_t>& v, const std::string& n) {
    std::vector<llvm::Value*> vs;
    for (int64_t x : v) vs.push_back(b_.getInt64(x));
    return i64Array(vs, n);
  };
  const int32_t n = static_cast<int32_t>(w.xDims.size() - 2);
  llvm::Value* x = address(op.operands.at(w.x));
  llvm::Value* y = address(op.result(0));
  llvm::Value* strides = ints(w.attrs.strides, "win.strides");
  llvm::Value* dilations = ints(w.attrs.dilations, "win.dilations");
  llvm::Value* pb = arr(w.padsBegin, "win.pads_begin");
  llvm::Value* pe = arr(w.padsEnd, "win.pads_end");
  if (w.op->kind == OpKind::Conv || w.op->kind == OpKind::ConvTranspose) {
    // The *_info entry points record the call when profiling is on (kernelInfo; no size names of its own:
    // the runtime names the output's dims d0..). conv_transpose takes the same arguments (its pads are the
    // ones cut from its full result, WindowPlan.h).
    const bool tr = w.op->kind == OpKind::ConvTranspose;
    std::vector<llvm::Type*> params = {p, i32(), p, p, p, p, p, p, p, i64(), p, p, p, p};
    llvm::Value* bias = w.bias ? address(op.operands.at(*w.bias)) : llvm::ConstantPointerNull::get(b_.getPtrTy());
    std::vector<llvm::Value*> args = {ctxArg_, b_.getInt32(n), arr(w.xDims, "conv.x_dims"), x,
                                      arr(w.wDims, "conv.w_dims"), address(op.operands.at(w.w)), bias,
                                      arr(w.yDims, "conv.y_dims"), y, b_.getInt64(w.attrs.group), strides, dilations,
                                      pb, pe};
    if (!tr) {
      // A weight that is a host constant (a model's) is passed with its content key, so the runtime keeps it
      // reordered into oneDNN's layout instead of reordering it per call (dscc_generated.h).
      auto key = constKey_.find(op.operands.at(w.w));
      params.push_back(i64());
      args.push_back(b_.getInt64(key == constKey_.end() ? 0 : key->second));
      params.push_back(i32());
      args.push_back(b_.getInt32(w.attrs.channelsLast ? 1 : 0));
    }
    if (!w.post.empty()) {
      // The epilogue as oneDNN post-ops (WindowPlan::post): kinds, two float arguments each, and the tensors
      // an Add reads (null for the others), in parallel arrays (dscc_generated.h).
      const size_t np = w.post.size();
      llvm::Value* kinds = entryAlloca(i32(), np, "conv.post_kinds");
      llvm::Value* fargs = entryAlloca(b_.getFloatTy(), 2 * np, "conv.post_args");
      std::vector<llvm::Value*> srcs;
      for (size_t i = 0; i < np; ++i) {
        const ConvPostOp& po = w.post[i];
        b_.CreateStore(b_.getInt32(static_cast<int32_t>(po.kind)), b_.CreateConstInBoundsGEP1_64(i32(), kinds, i));
        b_.CreateStore(llvm::ConstantFP::get(b_.getFloatTy(), po.a),
                       b_.CreateConstInBoundsGEP1_64(b_.getFloatTy(), fargs, 2 * i));
        b_.CreateStore(llvm::ConstantFP::get(b_.getFloatTy(), po.b),
                       b_.CreateConstInBoundsGEP1_64(b_.getFloatTy(), fargs, 2 * i + 1));
        srcs.push_back(po.src ? address(op.operands.at(w.postSrc[i])) : llvm::ConstantPointerNull::get(b_.getPtrTy()));
      }
      params.insert(params.end(), {i32(), p, p, p});
      args.insert(args.end(), {b_.getInt32(static_cast<int32_t>(np)), kinds, fargs, ptrArray(srcs, "conv.post_srcs")});
    }
    params.push_back(p);
    args.push_back(kernelInfo(k, k.symbol + (tr ? ".conv_transpose" : ".conv"), tr ? "conv_transpose" : "conv", false));
    const char* fn = tr ? "dscc_conv_transpose_f32_info" : w.post.empty() ? "dscc_conv_f32_info" : "dscc_conv_f32_post_info";
    checked(declare(fn, i32(), params), args);
    return "";
  }
  if (w.attrs.isArgmax) {
    // MaxPool's Indices: a runtime call of ours (runtime/PoolArgmax.cpp), not oneDNN; never channels-last.
    llvm::FunctionCallee argmax =
        declare("dscc_pool_argmax_f32_info", i32(), {p, i32(), i32(), p, p, p, p, p, p, p, p, p, p});
    checked(argmax, {ctxArg_, b_.getInt32(n), b_.getInt32(static_cast<int32_t>(w.attrs.storageOrder)),
                     arr(w.xDims, "pool.x_dims"), x, arr(w.yDims, "pool.y_dims"), y, ints(w.attrs.kernel, "pool.kernel"),
                     strides, dilations, pb, pe, kernelInfo(k, k.symbol + ".pool_argmax", "pool_argmax", false)});
    return "";
  }
  llvm::FunctionCallee pool =
      declare("dscc_pool_f32_info", i32(), {p, i32(), i32(), i32(), p, p, p, p, p, p, p, p, p, i32(), p});
  checked(pool, {ctxArg_, b_.getInt32(n), b_.getInt32(w.attrs.isMax ? 0 : 1), b_.getInt32(w.attrs.countIncludePad),
                 arr(w.xDims, "pool.x_dims"), x, arr(w.yDims, "pool.y_dims"), y, ints(w.attrs.kernel, "pool.kernel"),
                 strides, dilations, pb, pe, b_.getInt32(w.attrs.channelsLast ? 1 : 0),
                 kernelInfo(k, k.symbol + ".pool", "pool", false)});
  return "";
}

}  // namespace dscc::codegen
