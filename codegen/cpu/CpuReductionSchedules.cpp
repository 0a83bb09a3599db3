// CPU schedules of input kernels: RowSplit, the column sums of tall inputs in chunks of rows whose partials meet in a workspace.
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include "codegen/ElementOps.h"
#include "codegen/ReductionEmitter.h"

namespace dscc::codegen::reduction {

// --- input kernel, last axis kept, CPU RowSplit ---------------------------
// The workspace holds, per chunk and reduction, a slice of one accumulator
// per output (8-byte slots, the accumulator type from the slot's start).
llvm::Value* Emitter::rowSplitSlice(llvm::Value* part, size_t ri) {
  llvm::Value* at = b_.CreateMul(b_.CreateAdd(b_.CreateMul(part, idx(static_cast<int64_t>(p_.reductions.size()))),
                                              idx(static_cast<int64_t>(ri))),
                                 keptCount_);
  return b_.CreateInBoundsGEP(b_.getInt64Ty(), ws_, at);
}

// Launch 0: unit u is (chunk u / O, row of outputs u % O), O = the outputs
// over the last axis' length C. It sums the chunk's rows, whole, into its
// C accumulators, which stay in L1 or L2 while the rows stream past.
void Emitter::emitColumnPartials(llvm::Value* lo, llvm::Value* hi) {
  size_t d0 = 0;
  while (!p_.reduced[d0]) ++d0;
  llvm::Value* C = keptDim_.back();
  std::vector<llvm::Value*> outer(keptDim_.begin(), keptDim_.end() - 1);
  llvm::Value* O = splitOuter_;
  loop(lo, hi, 1, "unit", [&](llvm::Value* u) {
    llvm::Value* part = b_.CreateUDiv(u, O, "part");
    llvm::Value* orow = b_.CreateURem(u, O, "orow");
    llvm::Value* r0 = b_.CreateMul(part, chunkRows_, "r0", true, true);
    llvm::Value* r1 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(r0, chunkRows_), spaceDim_[d0],
                                               nullptr, "r1");
    std::vector<llvm::Value*> keptIx = unflatten(orow, outer);
    keptIx.push_back(nullptr);
    std::vector<llvm::Value*> full = spread(keptIx);
    llvm::Value* first = b_.CreateMul(orow, C, "", true, true);
    Accs accs;
    for (size_t ri = 0; ri < p_.reductions.size(); ++ri) {
      const Operation& r = *p_.reductions[ri];
      accs.emplace_back(&r, b_.CreateInBoundsGEP(accType(r), rowSplitSlice(part, ri), first));
    }
    loop(idx(0), C, 1, "init", [&](llvm::Value* c) {
      for (auto [r, arr] : accs) b_.CreateStore(accInit(*r), slot(*r, arr, c));
    });
    loop(r0, r1, 1, "rows", [&](llvm::Value* i) {
      full[d0] = i;
      reducedNest(d0 + 1, full, [&]() {
        vecLoop(C, W_ > 1, "cols", [&](llvm::Value* c, int) {
          Ctx e;
          e.full = full;
          e.full.back() = c;
          for (auto [r, arr] : accs) accumulate(*r, arr, c, e);
        });
      });
    });
  });
}

// Launch 1: blocks of outputs as emitColumns, each combining the chunks'
// partials in chunk order (the same bits whichever thread computed them).

}  // namespace dscc::codegen::reduction
