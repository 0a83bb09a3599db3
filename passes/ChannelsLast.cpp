// The channels-last layout pass: convs and pools of the CPU target run on [N, spatial..., C] tensors, and the transposes that layout needs move out of the way.
//
// Why: the CPU's oneDNN kernels (brgconv, brdgmm) read and write channels-last tensors directly; on
// channels-first ones each call reordered its input in and its result out, and on MobileNetV3 those
// reorders bounded the early depthwise convs (bench/results/2026-12-06-vision-blocked.md). ONNX Runtime
// keeps its blocked layout between layers for the same reason.
//
// How, as the layout optimisers of TensorFlow (grappler) and XLA do it, in three steps over the IR:
//   1. each f32 conv and pool becomes transpose(x, to last) -> op {channels_last} -> transpose(to first);
//   2. a "to first" transpose sinks through the elementwise ops, reductions and concats that read it: the op
//      is computed on the channels-last values (a scalar, a constant or a [N, C, 1...] operand is transposed
//      itself, which costs nothing or a copy of C values per image) and the transpose moves to its result;
//   3. "to last" of "to first" cancels, and a conv or pool left with a real transpose on both sides (alone,
//      with nothing channels-last to talk to) goes back to channels first.
// What remains are transposes where the network meets the outside: the image in, a head's input out.
#include "passes/ChannelsLast.h"

#include <algorithm>
#include <set>

#include "ir/IndexMap.h"
#include "ir/Rewrite.h"
#include "ir/Window.h"

namespace dscc {
namespace {

bool isPerm(const Operation* op, const std::vector<int64_t>& perm) {
  if (!op || op->kind != OpKind::Transpose || op->operands[0]->type.rank() != perm.size()) return false;
  std::vector<size_t> p = transposePerm(*op);
  return std::equal(p.begin(), p.end(), perm.begin(), perm.end(),
                    [](size_t a, int64_t b) { return int64_t(a) == b; });
}


Attribute permAttr(const std::vector<int64_t>& p) {
  std::vector<Attribute> l;
  for (int64_t x : p) l.push_back(Attribute::makeInt(x));
  return Attribute::makeList(std::move(l));
}

/// The steps on one function. Only transposes this pass made move or cancel: a model's own transpose of the
/// same permutation (rank 3: [0, 2, 1] is either) is left where the model put it.
class Rewriter {
 public:
  Rewriter(Function& f, DiagEngine& diags) : f_(f), diags_(diags) {}

  /// A "to first" transpose this pass made (its operand is channels-last).
  bool isToFirst(const Operation* op) const { return op && toFirst_.count(op); }
  /// A "to last" transpose this pass made.
  bool isToLast(const Operation* op) const { return op && toLast_.count(op); }

  /// Step 1 on every eligible conv and pool; false on an internal verification failure (reported).
  bool convert() {
    // Decided on the program as it is, before any op is replaced.
    std::set<const Operation*> chosen;
    for (const auto& op : f_.ops)
      if (eligible(*op) && hasNeighbour(*op)) chosen.insert(op.get());
    for (size_t i = 0; i < f_.ops.size(); ++i) {
      Operation& op = *f_.ops[i];
      if (!chosen.count(&op)) continue;
      const size_t r = op.operands[0]->type.rank();
      auto toLast = transpose(op.operands[0], channelsLastPerm(r), op.loc, toLast_);
      if (!toLast) return false;
      std::vector<Value*> operands = op.operands;
      operands[0] = toLast->result();
      auto attrs = op.attrs;
      attrs.erase(std::remove_if(attrs.begin(), attrs.end(), [](const auto& a) { return a.first == "channels_last"; }),
                  attrs.end());
      attrs.emplace_back("channels_last", Attribute::makeBool(true));
      Type t = op.result()->type;
      t.dims = toChannelsLast(t.dims);
      auto cl = makeOp(f_, op.kind, operands, attrs, freshName(f_, op.result()->name + ".cl"), op.loc, diags_, t);
      if (!cl) return false;
      auto toFirst = transpose(cl->result(), channelsFirstPerm(r), op.loc, toFirst_);
      if (!toFirst) return false;
      replaceAllUses(f_, op.result(), toFirst->result());
      const std::string name = op.result()->name;
      Value *clv = cl->result(), *firstv = toFirst->result();
      std::vector<std::unique_ptr<Operation>> three;
      three.push_back(std::move(toLast));
      three.push_back(std::move(cl));
      three.push_back(std::move(toFirst));
      f_.ops.erase(f_.ops.begin() + std::ptrdiff_t(i));
      f_.ops.insert(f_.ops.begin() + std::ptrdiff_t(i), std::make_move_iterator(three.begin()),
                    std::make_move_iterator(three.end()));
      // The op keeps the program's name (kernels, profiles and errors name it); the transpose gets a new one.
      rename(name, clv, firstv);
      i += 2;
    }
    return true;
  }

  /// Step 2 to a fixpoint; false on an internal verification failure (reported).
  bool sink() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < f_.ops.size(); ++i) {
        Operation& op = *f_.ops[i];
        if (op.info().category == OpCategory::Transpose || !readsToFirst(op) || !sinkable(op)) continue;
        std::vector<std::unique_ptr<Operation>> made;
        Value *now = nullptr, *after = nullptr;
        if (!sinkThrough(op, made, now, after)) return false;
        const std::string name = op.result()->name;
        const size_t n = made.size();
        f_.ops.erase(f_.ops.begin() + std::ptrdiff_t(i));
        f_.ops.insert(f_.ops.begin() + std::ptrdiff_t(i), std::make_move_iterator(made.begin()),
                      std::make_move_iterator(made.end()));
        // As in convert: the new op takes the program's name, a transpose after it a new one.
        rename(name, now, after);
        i += n - 1;
        changed = true;
      }
    }
    return true;
  }

  /// Step 3a: "to last" of "to first" reads the channels-last value itself.
  void cancel() {
    for (auto& op : f_.ops)
      if (isToLast(op.get()) && isToFirst(op->operands[0]->def))
        replaceAllUses(f_, op->result(), op->operands[0]->def->operands[0]);
  }

  /// Step 3b: a conv or pool whose input and every live use are still transposes goes back to channels first.
  bool revertLonely() {
    const std::set<const Operation*> live = liveOps();
    for (size_t i = 0; i < f_.ops.size(); ++i) {
      Operation& op = *f_.ops[i];
      if ((op.kind != OpKind::Conv && op.kind != OpKind::Pool) || !isChannelsLast(op)) continue;
      if (!isToLast(op.operands[0]->def) || isReturned(f_, op.result())) continue;
      if (!live.count(&op)) continue;
      std::vector<Operation*> outs;
      for (Operation* u : usersOf(f_, op.result()))
        if (live.count(u)) outs.push_back(u);
      if (!std::all_of(outs.begin(), outs.end(), [&](const Operation* u) { return isToFirst(u); })) continue;
      std::vector<Value*> operands = op.operands;
      operands[0] = op.operands[0]->def->operands[0];
      auto attrs = op.attrs;
      attrs.erase(std::remove_if(attrs.begin(), attrs.end(), [](const auto& a) { return a.first == "channels_last"; }),
                  attrs.end());
      Type t = op.result()->type;
      t.dims = toChannelsFirst(t.dims);
      auto first = makeOp(f_, op.kind, operands, attrs, freshName(f_, op.result()->name + ".first"), op.loc, diags_, t);
      if (!first) return false;
      for (Operation* u : outs) replaceAllUses(f_, u->result(), first->result());
      {
        // The result takes the name the program gave it; the channels-last op, dead now, another.
        // The name the program gave: the op's, or (a returned result) the transpose's after it.
        std::string name = op.result()->name;
        if (name.size() > 3 && name.compare(name.size() - 3, 3, ".cl") == 0) name.resize(name.size() - 3);
        for (Value* v : {op.result(), outs.empty() ? nullptr : outs[0]->result()})
          if (v && v->name == name) v->name = freshName(f_, name + ".old");
        first->result()->name = name;
      }
      f_.ops.insert(f_.ops.begin() + std::ptrdiff_t(i) + 1, std::move(first));
    }
    return true;
  }

 private:
  /// The ops whose results reach a return or a check (dce's rule, without removing anything).
  std::set<const Operation*> liveOps() const {
    std::set<const Operation*> live;
    std::vector<const Operation*> work;
    auto mark = [&](const Value* v) {
      if (v->def && live.insert(v->def).second) work.push_back(v->def);
    };
    for (const Value* v : f_.returns) mark(v);
    for (const auto& op : f_.ops)
      if (op->kind == OpKind::Check && live.insert(op.get()).second) work.push_back(op.get());
    while (!work.empty()) {
      const Operation* op = work.back();
      work.pop_back();
      for (const Value* v : op->operands) mark(v);
    }
    return live;
  }

  /// Names an op made for the one named `name` and the transpose after it (`after`, may be null): the op
  /// keeps the name (kernels, profiles and errors name it), the transpose gets a new one, unless the function
  /// returns it (a result keeps the name it had: output files and headers use it).
  void rename(const std::string& name, Value* op, Value* after) {
    if (after && isReturned(f_, after)) {
      if (op->name != name + ".cl") op->name = freshName(f_, name + ".cl");
      after->name = name;
      return;
    }
    op->name = name;
    if (after) after->name = freshName(f_, name + ".t");
  }

  /// Ops a channels-last value may pass through on its way between two convs or pools (what step 2 sinks
  /// through).
  static bool passesLayout(const Operation& op) {
    switch (op.info().category) {
      case OpCategory::Unary: case OpCategory::Cast: case OpCategory::Binary: case OpCategory::Logical:
      case OpCategory::Compare: case OpCategory::Select: case OpCategory::Concat: case OpCategory::Reduce:
        return op.kind != OpKind::ArgMax;
      default:
        return false;
    }
  }

  /// True when another eligible conv or pool reads what `op` makes, or makes what it reads, through ops the
  /// layout passes (at most kReach of them): a conv alone would only gain a transpose on each side.
  bool hasNeighbour(const Operation& op) const {
    constexpr size_t kReach = 64;
    std::set<const Operation*> seen = {&op};
    std::vector<const Operation*> work;
    for (Operation* u : usersOf(f_, op.result())) work.push_back(u);
    while (!work.empty() && seen.size() < kReach) {
      const Operation* u = work.back();
      work.pop_back();
      if (!seen.insert(u).second) continue;
      if (eligible(*u)) return true;
      if (passesLayout(*u))
        for (Operation* w : usersOf(f_, u->result())) work.push_back(w);
    }
    seen = {&op};
    work = {op.operands[0]->def};
    while (!work.empty() && seen.size() < kReach) {
      const Operation* d = work.back();
      work.pop_back();
      if (!d || !seen.insert(d).second) continue;
      if (eligible(*d)) return true;
      if (passesLayout(*d))
        for (const Value* v : d->operands) work.push_back(v->def);
    }
    return false;
  }

  /// f32 (the CPU's oneDNN calls take f32), 1 to 3 spatial dims, not yet channels-last. Not an argmax pool: its
  /// indices number the channels-first operand (docs/ir.md), and its runtime loops read that layout.
  static bool eligible(const Operation& op) {
    if (op.kind != OpKind::Conv && op.kind != OpKind::Pool) return false;
    if (const Attribute* k = op.attr("kind"); op.kind == OpKind::Pool && k && k->kind == Attribute::Kind::String &&
                                               k->s == "argmax")
      return false;
    const Type& t = op.operands[0]->type;
    return t.dtype == DType::F32 && t.rank() >= 3 && t.rank() <= 5 && !isChannelsLast(op);
  }

  /// A transpose of `v` by `perm`, recorded in `mine` (toFirst_ or toLast_).
  std::unique_ptr<Operation> transpose(Value* v, const std::vector<int64_t>& perm, Location loc,
                                       std::set<const Operation*>& mine) {
    auto t = makeOp(f_, OpKind::Transpose, {v}, {{"perm", permAttr(perm)}}, freshName(f_, v->name + ".t"), loc, diags_);
    if (t) mine.insert(t.get());
    return t;
  }

  bool readsToFirst(const Operation& op) const {
    return std::any_of(op.operands.begin(), op.operands.end(), [&](const Value* v) { return isToFirst(v->def); });
  }

  /// An operand the channels-last form can read: a "to first" transpose's input, a scalar, or a value whose
  /// spatial dims are all 1 ([N, C, 1, ...]: its transpose is a copy of N*C values, or folds).
  bool cheapOperand(const Value* v, size_t r) const {
    if (v->type.rank() == 0) return true;
    if (v->type.rank() != r) return false;  // a lower-rank operand broadcasts against trailing dims
    if (isToFirst(v->def)) return true;
    for (size_t d = 2; d < r; ++d)
      if (!v->type.dims[d].isConst() || v->type.dims[d].constValue() != 1) return false;
    return true;
  }

  bool sinkable(const Operation& op) const {
    if (op.results.size() != 1 || !op.body.empty()) return false;
    switch (op.info().category) {
      case OpCategory::Unary: case OpCategory::Cast: case OpCategory::Binary: case OpCategory::Logical:
      case OpCategory::Compare: case OpCategory::Select: case OpCategory::Concat: {
        const size_t r = op.result()->type.rank();
        if (r < 3 || r > 5) return false;
        return std::all_of(op.operands.begin(), op.operands.end(), [&](const Value* v) { return cheapOperand(v, r); });
      }
      case OpCategory::Reduce:
        return op.kind != OpKind::ArgMax && isToFirst(op.operands[0]->def);
      case OpCategory::Dim:  // a size read off the transposed value (a mean's count) is read off its input
        return isToFirst(op.operands[0]->def);
      default:
        return false;
    }
  }

  /// The channels-last form of operand `v` (rank `r` result): the transpose's input, the scalar, or a new
  /// "to last" transpose appended to `made`.
  Value* lastForm(Value* v, size_t r, Location loc, std::vector<std::unique_ptr<Operation>>& made) {
    if (isToFirst(v->def)) return v->def->operands[0];
    if (v->type.rank() == 0) return v;
    auto t = transpose(v, channelsLastPerm(r), loc, toLast_);
    if (!t) return nullptr;
    Value* res = t->result();
    made.push_back(std::move(t));
    return res;
  }

  /// Replaces `op` (in `made`, with what it needs) by its channels-last form and the transpose back.
  bool sinkThrough(Operation& op, std::vector<std::unique_ptr<Operation>>& made, Value*& now, Value*& after) {
    const size_t r = op.operands[0]->type.rank();
    auto attrs = op.attrs;
    std::vector<Value*> operands;
    std::vector<int64_t> back;  // the transpose after the new op
    // The new op's type is the old one's, permuted: stated, so that the dims keep the forms the program
    // has (inferring them again from permuted operands may write a broadcast of equal dims differently).
    Type type = op.result()->type;
    if (op.kind == OpKind::Dim) {
      const Attribute* a = op.attr("axis");
      int64_t ax = a ? a->i : 0;
      if (ax < 0) ax += int64_t(r);
      std::vector<int64_t> last = channelsLastPerm(r);
      for (auto& [n, at] : attrs)
        if (n == "axis") at = Attribute::makeInt(int64_t(std::find(last.begin(), last.end(), ax) - last.begin()));
      operands.push_back(op.operands[0]->def->operands[0]);
    } else if (op.info().category == OpCategory::Reduce) {
      // NCHW axis a is NHWC position pos[a]; the axes reduced there, and the order of the kept ones.
      std::vector<int64_t> last = channelsLastPerm(r), pos(r);
      for (size_t p = 0; p < r; ++p) pos[size_t(last[p])] = int64_t(p);
      std::vector<size_t> axes = reducedAxes(op);
      std::vector<Attribute> lastAxes;
      std::vector<bool> reduced(r, false);
      for (size_t a : axes) reduced[a] = true;
      for (size_t p = 0; p < r; ++p)
        if (reduced[size_t(last[p])]) lastAxes.push_back(Attribute::makeInt(int64_t(p)));
      for (auto& [n, a] : attrs)
        if (n == "axes") a = Attribute::makeList(lastAxes);
      if (!op.attr("axes")) attrs.emplace_back("axes", Attribute::makeList(lastAxes));
      operands.push_back(op.operands[0]->def->operands[0]);
      if (keepsDims(op)) {
        back = channelsFirstPerm(r);
        type.dims = toChannelsLast(type.dims);
      } else {
        // Kept axes in NHWC order, as NCHW axes; the result wants them in NCHW order.
        std::vector<int64_t> keptLast, keptFirst;
        for (size_t p = 0; p < r; ++p)
          if (!reduced[size_t(last[p])]) keptLast.push_back(last[p]);
        for (size_t a = 0; a < r; ++a)
          if (!reduced[a]) keptFirst.push_back(int64_t(a));
        for (int64_t a : keptFirst)
          back.push_back(int64_t(std::find(keptLast.begin(), keptLast.end(), a) - keptLast.begin()));
        // Result dim i of the new op is kept axis keptLast[i], which the old result has at its place in keptFirst.
        for (size_t i = 0; i < keptLast.size(); ++i)
          type.dims[i] = op.result()->type.dims[size_t(
              std::find(keptFirst.begin(), keptFirst.end(), keptLast[i]) - keptFirst.begin())];
        bool identity = true;
        for (size_t i = 0; i < back.size(); ++i) identity = identity && back[i] == int64_t(i);
        if (identity || back.size() < 2) back.clear();
      }
    } else {
      const size_t rr = op.result()->type.rank();
      for (Value* v : op.operands) {
        Value* l = lastForm(v, rr, op.loc, made);
        if (!l) return false;
        operands.push_back(l);
      }
      if (op.kind == OpKind::Concat) {
        const Attribute* a = op.attr("axis");
        int64_t ax = a ? a->i : 0;
        if (ax < 0) ax += int64_t(rr);
        std::vector<int64_t> last = channelsLastPerm(rr);
        const int64_t p = int64_t(std::find(last.begin(), last.end(), ax) - last.begin());
        for (auto& [n, at] : attrs)
          if (n == "axis") at = Attribute::makeInt(p);
      }
      back = channelsFirstPerm(rr);
      type.dims = toChannelsLast(type.dims);
    }
    // The new op states its type only where the old one did (a cast's `to` carries its dtype).
    auto made1 = makeOp(f_, op.kind, operands, attrs, freshName(f_, op.result()->name + ".cl"), op.loc, diags_, type);
    if (!made1) return false;
    Value* res = now = made1->result();
    made.push_back(std::move(made1));
    if (!back.empty()) {
      // Of keepdims or elementwise results it is "to first" again, which may sink further; a reduction's
      // other reorders of kept axes are transposes of its own.
      std::set<const Operation*> other;
      const bool first = back == channelsFirstPerm(back.size());
      auto t = transpose(res, back, op.loc, first ? toFirst_ : other);
      if (!t) return false;
      res = t->result();
      made.push_back(std::move(t));
    }
    if (res != now) after = res;
    replaceAllUses(f_, op.result(), res);
    return true;
  }

  Function& f_;
  DiagEngine& diags_;
  std::set<const Operation*> toFirst_, toLast_;
};

}  // namespace

bool channelsLast(Module& m, PassContext& ctx) {
  // CPU only: oneDNN's direct kernels want [N, spatial..., C]; the GPU's kernels of ours (codegen/gpu/GpuWindow.h)
  // read NCHW with a thread per output element, and a layout change would only add transposes there.
  if (ctx.opts.target != KernelTarget::Cpu) return true;
  for (auto& f : m.funcs) {
    Rewriter r(*f, ctx.diags);
    if (!r.convert() || !r.sink()) return false;
    r.cancel();
    if (!r.revertLonely()) return false;
  }
  return true;
}

}  // namespace dscc
