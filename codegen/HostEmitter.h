// The emitter of a model's host function (internal to codegen/): shared parts in HostEmitter.cpp and HostOps.cpp, the CPU's in cpu/HostCpu.cpp, the GPU's in gpu/HostGpu.cpp.
//
// What the host function does is documented in HostCodegen.h; where each
// value lives is decided beforehand by planBuffers (BufferPlan.h). The order
// in which members emit IR is part of the output (dims are cached by
// expression in the block that first needs them), so code that computes a
// value for several branches emits it before the branches.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/BufferPlan.h"
#include "codegen/ElementOps.h"
#include "codegen/HostCodegen.h"
#include "codegen/Jit.h"

namespace dscc::codegen {

// dscc_status values (runtime/dscc_runtime.h); they are fixed by the ABI.
constexpr int kInvalidArgument = 1, kShapeMismatch = 2, kFactViolated = 3, kOutOfMemory = 4;

/// Emits the kernels, the host function and the exported data of one model.
class HostEmitter {
 public:
  /// `gpu`: the model's GPU kernels (null for the CPU); `sourceDir` as emitModel's.
  /// File constants go to `e` (not the module) from now on.
  void setExternalData(ExternalData* e) { external_ = e; }
  HostEmitter(const ModelPlan& plan, CodeModule& m, const GpuArtifact* gpu, std::string sourceDir)
      : plan_(plan), f_(*plan.func), owner_(m), mod_(m.module()), ctx_(m.context()), b_(ctx_), gpu_(gpu),
        sourceDir_(std::move(sourceDir)) {}

  /// Emits everything; "" or the error.
  std::string emit(const std::string& source);
  /// After an error: the source location it concerns (the argument, op,
  /// fact or function), or an invalid one when it has none.
  Location errorLoc() const { return errorLoc_; }

 private:
  // ---- runtime declarations and IR helpers (HostEmitter.cpp) ----
  llvm::Type* ptrTy() { return b_.getPtrTy(); }
  llvm::Type* i32() { return b_.getInt32Ty(); }
  llvm::Type* i64() { return b_.getInt64Ty(); }
  llvm::FunctionCallee declare(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args, bool vararg = false);
  void declareRuntime();
  llvm::Value* str(const std::string& s);
  // Branches to the failure exit with `status` unless `ok`; `fmt` and `args`
  // make the message (printf style, %lld for sizes).
  void require(llvm::Value* ok, int status, const std::string& fmt, std::vector<llvm::Value*> args = {});
  // Ends the current block in the failure exit with `status`.
  void fail(llvm::Value* status);
  // Calls a runtime function returning dscc_status and fails on non-OK.
  void checked(llvm::FunctionCallee callee, std::vector<llvm::Value*> args);
  // An alloca in the entry block (so it is allocated once per call).
  llvm::Value* entryAlloca(llvm::Type* t, size_t n, const std::string& name);
  llvm::Value* i64Array(const std::vector<llvm::Value*>& vals, const std::string& name);
  llvm::Value* ptrArray(const std::vector<llvm::Value*>& vals, const std::string& name);
  llvm::Value* dim(const DimExpr& e) { return dims_->emit(e); }
  llvm::Value* bytes(const Type& t);
  // The values of the symbols of `es`, for messages: "S = %lld, T = %lld".
  std::string symbolList(const std::vector<DimExpr>& es, std::vector<llvm::Value*>& args);
  static std::string escape(const std::string& s);

  // ---- the host function (HostEmitter.cpp) ----
  std::string emitHost();
  std::vector<std::string> collectSymbols();
  // Where symbol `s` first appears: the argument whose type has it, else the
  // fact, else the op whose result type or relation has it, else the function.
  Location symbolLoc(const std::string& s) const;
  llvm::Value* cmp(CmpOp op, llvm::Value* a, llvm::Value* c);
  llvm::Value* factHolds(const Fact& fact);
  llvm::Value* relationHolds(const CheckRelation& r);
  void emitArena();
  // Where kernels read and write a value.
  llvm::Value* address(const Value* v);
  // Where the host reads a value it computes with (scalar arithmetic).
  llvm::Value* hostAddress(const Value* v);
  void emitData(const std::string& source);

  // ---- top-level ops (HostOps.cpp) ----
  std::string emitOp(const Operation& op);
  std::string emitOpOnHost(const Operation& op);
  std::string emitConstant(const Operation& op);
  /// The address of `tensor`'s bytes in the model: in the external blob for
  /// a `file` constant when there is one, else a private global named
  /// `const.NAME`.
  llvm::Constant* embedBytes(const std::shared_ptr<const Tensor>& tensor, bool file, const std::string& name);
  llvm::Value* guardHolds(const GuardPlan& g);
  // Whether pointer `p` is a multiple of `bytes` (a power of two).
  llvm::Value* alignedTo(llvm::Value* p, int64_t bytes);
  // The grain of a launch whose units each do `work` elements: at least one
  // unit, chunks of about `chunk` elements.
  llvm::Value* grainOf(int64_t chunk, llvm::Value* work);
  // Adds to each Stream guard's condition in `holds` that `outs` are 64-byte aligned.
  void streamAligned(const KernelPlan& k, const std::vector<llvm::Value*>& outs, std::vector<llvm::Value*>& holds);
  // Launches the version of kernel `k` that its guards select.
  void launch(const KernelPlan& k, size_t kIndex, const std::vector<llvm::Value*>& ins,
              const std::vector<llvm::Value*>& outs);
  // After kernel `k`'s launch: fails the call when its g-th gather `op`
  // flagged an index outside [-D, D) in `cell` (ElementGenerator.h,
  // gatherChecks); `ins` are the kernel's operands, `count` the indices'.
  void checkGather(const KernelPlan& k, const Operation& op, const std::vector<llvm::Value*>& ins, llvm::Value* cell,
                   size_t g, llvm::Value* D, llvm::Value* count);
  // The smallest bad index kept in word 1 of check g of `cell`.
  llvm::Value* leastIndex(llvm::Value* cell, size_t g);
  std::string emitKernel(const Operation& op);
  /// A conv or pool kernel on the CPU: one dscc_conv_f32 / dscc_pool_f32 call (cpu/HostWindow.cpp).
  std::string emitWindowKernel(const Operation& op, const KernelPlan& k);
  /// An rnn kernel: one dscc_rnn_f32 call (cpu/HostRecurrent.cpp).
  std::string emitRnnKernel(const Operation& op, const KernelPlan& k);
  /// A scatter or cumsum kernel: one dscc_scatter / dscc_cumsum call (cpu/HostScatter.cpp).
  std::string emitScatterKernel(const Operation& op, const KernelPlan& k);
  std::string emitScanKernel(const Operation& op, const KernelPlan& k);
  /// GPU: a scatter, cumsum, conv, conv_transpose, pool or rnn kernel as its launches in order (gpu/HostGpu.cpp,
  /// gpu/GpuScatter.h, gpu/GpuWindow.h; an rnn's per-step launches in a loop over time steps, gpu/GpuRecurrent.h).
  std::string launchGpuData(const Operation& op, size_t kIndex);
  // The dscc_kernel_info constant of one launch of `k` (runtime/dscc_generated.h):
  // `function` (its version `version`) or a library call ("sgemm", "copy").
  // `countBytes` false: the launch reports no traffic (a RowSplit combine; the first launch counts the kernel's).
  llvm::Value* kernelInfo(const KernelPlan& k, const std::string& function, const std::string& version,
                          bool countBytes = true);
  // The guard cascade over `p`'s versions (kernel `symbol`): a block
  // `prefix + name` per version, entered when the guards it assumes hold
  // (`holds`, per guard of `p`), in which `call(v)` emits the call; all
  // continue at `join`. Shared by plain and tuned dispatch.
  void versionCascade(const KernelPlan& p, const std::string& symbol, const std::string& prefix,
                      const std::vector<llvm::Value*>& holds, llvm::BasicBlock* join,
                      const std::function<void(size_t)>& call);

  // ---- CPU (cpu/HostCpu.cpp) ----
  std::string emitKernels();
  std::string emitKernelVersion(const KernelPlan& p, size_t v, const std::string& name, llvm::Function*& fn);
  void prepareRowSplit(const KernelPlan& p);
  void launchCpu(const KernelPlan& k, const KernelPlan& p, size_t v, llvm::Function* fn, const std::string& name,
                 llvm::Value* inArr, llvm::Value* outArr, const std::vector<llvm::Value*>& outs, llvm::Value* sizes,
                 llvm::Value* units, llvm::Value* grain);
  void prepareHostOutput(llvm::Value* outputs, size_t i);
  void launchTuned(const KernelPlan& k, size_t kIndex, llvm::Value* inArr, llvm::Value* outArr,
                   const std::vector<llvm::Value*>& outs, llvm::Value* sizes, llvm::Value* units, llvm::Value* work);

  // ---- GPU (gpu/HostGpu.cpp) ----
  void declareGpuRuntime();
  void loadGpuModule();
  void prepareDeviceOutput(llvm::Value* outputs, size_t i);
  void freeDeviceOutput(llvm::Value* tensor);
  // Copies a value the host made to its device slot, if it has one.
  void mirrorToDevice(const Value* v);
  // Before a kernel's version branches: the dims its launches read, and the
  // alignment its vector versions assume, folded into `holds`.
  void prepareGpuLaunch(const KernelPlan& k, size_t kIndex, const std::vector<llvm::Value*>& ins,
                        const std::vector<llvm::Value*>& outs, std::vector<llvm::Value*>& holds);
  void launchGpuVersion(const KernelPlan& k, size_t kIndex, size_t v, const std::vector<llvm::Value*>& ins,
                        const std::vector<llvm::Value*>& outs);
  const GpuKernel& gpuKernel(size_t kernel, size_t version, const std::string& copyOf);
  // `step`: the step index an entry with GpuKernel::takesStep takes after its symbols.
  void launchGpu(const GpuKernel& g, const std::vector<llvm::Value*>& ins, const std::vector<llvm::Value*>& outs,
                 llvm::Value* step = nullptr);
  // Index checks on the GPU (gpuIndexChecks): the kernels of f_ that report
  // into the call's check block, in program order, and each its first check.
  void planGpuChecks();
  // Before kernel `kIndex` launches: the size its checks compare against.
  void noteGpuCheckSizes(size_t kIndex);
  // After the call's last kernel: the check block read back (which waits for
  // the stream), the first flagged check in program order failing the call.
  void reportGpuChecks();
  // The printf format of an index error of `op` (a gather or scatter, "what"):
  // where it is, then "<what> index %lld is out of range for dim <axis> of size %lld".
  std::string indexErrorFormat(const Operation& op, const std::string& what, size_t axis);

  const ModelPlan& plan_;
  const Function& f_;
  Location errorLoc_;  // see errorLoc()
  CodeModule& owner_;
  llvm::Module& mod_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::vector<std::vector<llvm::Function*>> kernelFns_;
  std::vector<std::map<std::string, llvm::Function*>> tunedFns_;  // by function name, per kernel
  std::map<std::string, llvm::Function*> combineFns_;  // RowSplit versions' second launch, by the first's name
  llvm::FunctionCallee setError_, checkInput_, prepareOutput_, alloc_, free_, tensorFree_, launch_, gemm_, copy_, hgemm_, bgemm_;
  llvm::FunctionCallee streamMinBytes_;  // dscc_stream_min_bytes: the Stream guards' default threshold
  /// dscc_sgemm_const_b_info: a CPU matmul whose B is a host constant (packed once per context).
  llvm::FunctionCallee gemmConstB_;
  // GPU models only.
  const GpuArtifact* gpu_ = nullptr;
  llvm::FunctionCallee moduleGet_, cudaLaunch_, toDevice_, deviceCopy_, sync_, toHost_, memsetZero_;
  llvm::Value* module_ = nullptr;
  // The GPU's index checks: 2 i64 device words each, after the arena's slots.
  struct GpuCheck {
    const Operation* op = nullptr;  // the gather or scatter
    size_t kernel = 0;
    llvm::Value* size = nullptr;    // an i64 slot: the dim the index must fall in, stored at the launch
  };
  std::vector<GpuCheck> gpuChecks_;
  std::map<size_t, size_t> checkBase_;  // kernel index -> its first check
  llvm::Value* checkWords_ = nullptr;
  std::string sourceDir_;
  llvm::StructType* tensorTy_ = nullptr;
  llvm::Function* hostFn_ = nullptr;
  llvm::Value* ctxArg_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::BasicBlock* failBlock_ = nullptr;
  llvm::PHINode* failStatus_ = nullptr;
  llvm::Value* sizes_ = nullptr;
  llvm::Value* arenaSlot_ = nullptr;
  llvm::Value* allocated_ = nullptr;
  std::unique_ptr<DimEmitter> dims_;
  std::map<std::string, llvm::Value*> strings_;
  std::map<std::string, llvm::Value*> kernelInfos_;  // by function name
  BufferPlan buffers_;
  // Values the host made (constants, dims, scalars): their host address.
  std::map<const Value*, llvm::Value*> hostPtr_;
  /// The content key (xxh3 of the bytes) of each host constant, for dscc_sgemm_const_b.
  std::map<const Value*, uint64_t> constKey_;
  // File constants embedded so far: their path as written, data and size (for dscc_model_file_constants).
  struct EmbeddedFile {
    std::string path;
    llvm::Constant* data;
    uint64_t bytes;
  };
  std::vector<EmbeddedFile> embeddedFiles_;
  ExternalData* external_ = nullptr;
  llvm::GlobalVariable* externalSym_ = nullptr;
  std::vector<llvm::Value*> slotPtr_, inData_, outData_;
};

}  // namespace dscc::codegen
