// The element generator: the value of any kernel-body value at an index, through the ops' index maps (internal to codegen/).
//
// The generator computes "the value of %v at index i" for every op of the IR
// that can sit in a kernel (elementwise, broadcast, reshape, transpose,
// slice, concat, gather, iota, reductions over any axes, argmax, a matmul as
// a loop over K), as XLA's elemental emitter does: each op asks its operands
// for the elements its index map (ir/IndexMap.h) names, values are memoised
// per (value, index) within the scope where they dominate, and reductions
// open a loop nest over their reduced axes with the kept ones taken from the
// output index.
//
// Every kernel form is a schedule around this one generator: the form lays
// out the loops, tiles, vector lanes and index width, and asks for the
// element of each result at the index it has reached. How the kernel's
// inputs are read is the schedule's part (ElementSource), because that is
// where forms differ: the generic form (GenericKernel.cpp) linearises a full
// index into each input; loop rows (KernelLowering.cpp) read through row
// pointers whose strides were merged across dims, and hand the generator
// only the position along the row.
//
// Numerics are the interpreter's: elementwise ops through ElementOps, float
// sums, means and products accumulated in f64 in row-major order of the
// reduced elements (the interpreter's order, so sums agree to the bit), max
// and min propagating NaN, integers in i64 wrapping to their width; argmax
// takes the first maximum and the first NaN. Where the interpreter reports a
// data error the generated code gives a defined value: max/min of nothing is
// -inf/+inf (integers: the type's min/max), argmax of nothing 0, an integer
// mean of nothing 0. A gather index out of range is read clamped into the dim
// (the address stays inside the buffer) and also reported: each gather keeps
// a flag (and, for indices computed in the kernel, the smallest bad one) in
// registers, which reportChecks() hands to the host's cell (gatherChecks,
// below) when the schedule's elements are done; the host turns a set flag
// into the interpreter's error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/Kernel.h"
#include "ir/IR.h"

namespace dscc::codegen {

class DimEmitter;
struct LlvmArith;

/// An index of a value: one i64 per dim, outermost first. A schedule whose
/// source reads every value aligned (ElementSource::aligned) may use a
/// shorter index of its own (a loop row's position).
using ElementIndex = std::vector<llvm::Value*>;

/// One index component (or element value) over the W lanes of a vector
/// block (ElementGenerator::genLanes): `each` holds one scalar per lane when
/// the lanes differ in no known pattern ("general"); otherwise lane l is
/// `base + stride * l` (an index component; stride 0: the same value in
/// every lane, "uniform", the only form an element value takes besides
/// general). Compile-time strides are what let a schedule read W
/// consecutive elements as one vector and a value constant along the row as
/// one scalar.
struct Lanes {
  llvm::Value* base = nullptr;
  int64_t stride = 0;
  std::vector<llvm::Value*> each;
  bool general() const { return !each.empty(); }
  bool uniform() const { return each.empty() && stride == 0; }
};
/// An index over a vector block's lanes: one Lanes per dim, outermost first.
using LaneIndex = std::vector<Lanes>;

/// The schedule's part of element access: how a kernel reads its inputs.
class ElementSource {
 public:
  virtual ~ElementSource() = default;

  /// The element of kernel input `v` (an operand of the fusion) at `idx`, in
  /// register form.
  virtual llvm::Value* load(const Value* v, const ElementIndex& idx) = 0;

  /// True when every value of the kernel is read at the schedule's element:
  /// an elementwise op's operands are asked at its own index, and the loads
  /// place broadcast operands (loop rows, reduction frames). False: at their
  /// broadcast source (ir/IndexMap.h), the generator's index maps.
  virtual bool aligned() const { return false; }

  /// The index at which `v` is generated when asked for at `idx` (default:
  /// `idx`). A schedule whose index names a frame (stitch and input kernels:
  /// the full space or the kept rows) maps it to the frame `v` lives in, so
  /// a value constant along the row is one value for the row.
  virtual ElementIndex canonical(const Value* v, const ElementIndex& idx) { (void)v; return idx; }

  /// True when the schedule keeps the memo (recall, remember) instead of the
  /// generator's scopes: a reduction's contexts (per unit, row, element,
  /// vector lane) are not nested as scopes are, and the schedule itself
  /// stores the finished reductions there.
  virtual bool ownsMemo() const { return false; }
  /// The value known for `v` at `idx` in the schedule's memo, or null.
  virtual llvm::Value* recall(const Value* v, const ElementIndex& idx) { (void)v, (void)idx; return nullptr; }
  /// Records `x` as the value of `v` at `idx` in the schedule's memo.
  virtual void remember(const Value* v, const ElementIndex& idx, llvm::Value* x) { (void)v, (void)idx, (void)x; }

  /// `v` at `idx` computed where the schedule places it (a value constant
  /// over a row, hoisted to the row's block), or null: here.
  virtual llvm::Value* place(const Value* v, const ElementIndex& idx) { (void)v, (void)idx; return nullptr; }

  /// The element of elementwise `op` at `idx` from its operands' elements
  /// when the schedule computes it otherwise (a division by a row's value
  /// as a reciprocal multiply), or null: emitElementwiseOp. It may rewrite
  /// `args` first (vector lanes splat scalars).
  virtual llvm::Value* combine(const Operation& op, const ElementIndex& idx, std::vector<llvm::Value*>& args) {
    (void)op, (void)idx, (void)args;
    return nullptr;
  }

  /// Lane mode (ElementGenerator::genLanes): kernel input `v` at the lanes of
  /// `idx`, or an empty Lanes (the default): the generator reads each lane
  /// with load(). A schedule reads W consecutive elements as one vector
  /// where the flat index has stride 1.
  virtual Lanes loadLanes(const Value* v, const LaneIndex& idx) { (void)v, (void)idx; return {}; }

  /// Lane mode: the lanes being generated are valid only where `ok` holds
  /// (a division whose lanes might cross a multiple of the divisor, a
  /// concat whose lanes might straddle two operands). The schedule branches
  /// to a scalar path when it does not; the default asks for no lane mode.
  virtual void laneCheck(llvm::Value* ok) { (void)ok; }
};

/// The gathers of `fusion`'s body, in body order: the ones a kernel checks.
/// A kernel holding any reads `inputs[K]` (K: the fusion's operand count) as
/// the address of 2 i64 per gather, its check cell, which the host zeroes
/// before the launch (so a GPU's cells are one memset): a kernel that reads
/// an index outside [-D, D) sets word 0 to 1, and raises word 1 to
/// encodeLeastIndex(w) (codegen/Kernel.h) of its smallest such index w (atomically: the
/// launch's threads share the cell; 0 is "none"). Word 1 is kept where the
/// indices are computed in the kernel, and, with recordLeastIndices (the
/// GPU, whose host cannot read the indices after the call), for every
/// gather; elsewhere the CPU host finds the first bad index in the indices'
/// row-major order (the interpreter's) and the kernel keeps only the flag.
/// A null `inputs[K]` reports nothing (measuring runs).
std::vector<const Operation*> gatherChecks(const Operation& fusion);

/// Emits the report of bad index `w` (i64) into the 2 words at `words` (a
/// check cell's): word 0 |= 1 and, with `least`, word 1 = umax(word 1,
/// encodeLeastIndex(w)), both atomic. The kernels that check indices share it.
void emitBadIndex(llvm::IRBuilderBase& b, llvm::Value* words, llvm::Value* w, bool least);



/// The generator of one kernel's elements. Build it, call prepareIndexing
/// in the kernel's setup block when the kernel holds more than elementwise
/// ops (or its schedule needs dims), then gen() wherever an element is needed.
class ElementGenerator {
 public:
  /// The generator of `fusion`'s body values, emitting with `b`; inputs read through `src`.
  ElementGenerator(const Operation& fusion, llvm::IRBuilderBase& b, ElementSource& src);
  ~ElementGenerator();
  ElementGenerator(const ElementGenerator&) = delete;
  ElementGenerator& operator=(const ElementGenerator&) = delete;

  /// Emits, at the builder's insertion point (a kernel's setup block, which
  /// dominates every element), the dims of every operand, body value and
  /// result, the starts of slices, and the pointers to the input and output
  /// buffers (`inputs[k]`, `outputs[i]`: the KernelFn convention); `entry`
  /// is the function's entry block, where accumulators get their slots. The
  /// ops that move data and reductions need it.
  void prepareIndexing(DimEmitter& dims, llvm::BasicBlock* entry, llvm::Value* inputs, llvm::Value* outputs);

  /// Emits, at the builder's point (which every path through the schedule's
  /// elements reaches, after the last), the report of the gather checks
  /// into the host's cell (gatherChecks): nothing when the kernel has no
  /// gather. A schedule that calls prepareIndexing calls it once at its end.
  void reportChecks();

  /// The value of `v` at `idx`, in register form, memoised in the innermost scope.
  llvm::Value* gen(const Value* v, const ElementIndex& idx);

  /// Dim `d` of `v` (after prepareIndexing).
  llvm::Value* dim(const Value* v, size_t d) const { return dims_.at(v).at(d); }

  /// The row-major flat index of `idx` in the dims of `v` (after prepareIndexing).
  llvm::Value* linearIndex(const Value* v, const ElementIndex& idx);

  /// The buffer of kernel input `v` / of result `i` (after prepareIndexing).
  llvm::Value* inputBuffer(const Value* v) const;
  llvm::Value* outputBuffer(size_t i) const { return out_.at(i); }

  /// Lane mode, for vector versions: the element of `v` at the W lanes of
  /// `idx` (W: setLanes), uniform where every lane is the same, else one
  /// scalar per lane, each computed by the same rules as gen() (per lane,
  /// which LLVM's SLP vectoriser widens; loads through
  /// ElementSource::loadLanes). Index maps run on lanes with compile-time
  /// strides, so an operand read along the row keeps stride 1. Takes every
  /// op a generic kernel holds except reductions, argmax and matmul
  /// (laneModeTakes). Memoised in the lane scope (pushScope/popScope).
  Lanes genLanes(const Value* v, const LaneIndex& idx);
  /// The lane width of genLanes (>= 2).
  void setLanes(int w) { lanes_ = w; }
  /// Every gather keeps its smallest bad index in its cell's word 1, those
  /// whose indices are an operand included (gatherChecks). Before prepareIndexing.
  void recordLeastIndices() { leastIndices_ = true; }
  int lanes() const { return lanes_; }
  /// The scalar of lane `l` of `x` (emitted here for a strided one).
  llvm::Value* lane(const Lanes& x, int l);
  /// The row-major flat index of the lanes `idx` in the dims of `v` (after prepareIndexing).
  Lanes linearLanes(const Value* v, const LaneIndex& idx);

  /// A new innermost memo scope: values generated until popScope are
  /// forgotten then (they do not dominate what follows the scope's code).
  void pushScope() {
    scopes_.emplace_back();
    laneScopes_.emplace_back();
  }
  void popScope() {
    scopes_.pop_back();
    laneScopes_.pop_back();
  }

  /// for (x = lo; x < hi; x = body(x)), the body in its own memo scope;
  /// leaves the builder after the loop.
  template <class Body>
  void forStep(llvm::Value* lo, llvm::Value* hi, const std::string& name, Body body) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, name, fn);
    auto* loop = llvm::BasicBlock::Create(ctx_, name + ".body", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, name + ".end", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* x = b_.CreatePHI(b_.getInt64Ty(), 2, name + ".x");
    x->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(x, hi), loop, exit);
    b_.SetInsertPoint(loop);
    pushScope();
    llvm::Value* next = body(x);
    popScope();
    x->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }

  /// for (i = lo; i < hi; ++i) body(i), the body in its own memo scope.
  template <class Body>
  void forRange(llvm::Value* lo, llvm::Value* hi, const std::string& name, Body body) {
    forStep(lo, hi, name, [&](llvm::Value* i) {
      body(i);
      return b_.CreateAdd(i, b_.getInt64(1), "", true, true);
    });
  }

 private:
  using Key = std::pair<const Value*, ElementIndex>;

  llvm::Value* compute(const Value* v, const ElementIndex& oi);
  llvm::Value* concat(const Operation& op, const ElementIndex& oi);
  template <class Body>
  void reducedLoops(const Operation& op, Body body);
  llvm::Value* reduce(const Operation& op, const ElementIndex& oi);
  llvm::Value* matmul(const Operation& op, const ElementIndex& oi);
  llvm::Value* argmax(const Operation& op, const ElementIndex& oi);
  llvm::Value* entryAlloca(llvm::Type* t, const std::string& name);
  void checkGather(const Operation& op, llvm::Value* w);
  bool keepsLeast(const Operation& gather) const;
  Lanes computeLanes(const Value* v, const LaneIndex& oi);
  // The scalar index arithmetic's safe divisor and dim expressions, for lane mode.
  llvm::Value* nonZeroDivisor(llvm::Value* y);
  llvm::Value* exprValue(const DimExpr& e);
  Lanes concatLanes(const Operation& op, const LaneIndex& oi);

  const Operation& f_;
  llvm::IRBuilderBase& b_;
  llvm::LLVMContext& ctx_;
  ElementSource& src_;
  std::map<const Value*, const Operation*> defOf_;
  std::map<const Value*, size_t> inputIndex_;
  llvm::BasicBlock* entry_ = nullptr;
  std::unique_ptr<LlvmArith> arith_;
  std::map<const Value*, std::vector<llvm::Value*>> dims_;
  std::vector<llvm::Value*> in_, out_;
  // The gather checks: the host's cell (inputs[K]), and per gather its
  // entry-block slots, the flag (i1) and the smallest bad index (i64).
  llvm::Value* checkCell_ = nullptr;
  std::map<const Operation*, std::pair<llvm::Value*, llvm::Value*>> checkSlots_;
  std::vector<const Operation*> gathers_;
  bool leastIndices_ = false;
  std::vector<std::map<Key, llvm::Value*>> scopes_{1};
  // Lane mode: the memo keyed by (value, each component's base and stride,
  // or its lanes), and the divisions already checked for wrapping.
  using LaneKey = std::pair<const Value*, std::vector<std::pair<llvm::Value*, int64_t>>>;
  std::vector<std::map<LaneKey, Lanes>> laneScopes_{1};
  int lanes_ = 1;
  friend struct LaneArith;
};

/// True when genLanes takes every op of `fusion`'s body (no reduction,
/// argmax or matmul).
bool laneModeTakes(const Operation& fusion);

}  // namespace dscc::codegen
