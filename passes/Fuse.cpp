// The fusion planner: groups ops into library, loop, input, stitch and generic kernels.
#include "passes/Fuse.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ir/ConvEpilogue.h"
#include "ir/IndexMap.h"
#include "ir/KernelKind.h"
#include "ir/Rewrite.h"
#include "ir/Window.h"
#include "passes/FuseOps.h"
#include "passes/KernelAnalysis.h"
#include "passes/ShapeSolver.h"

namespace dscc {
namespace {

using namespace fuseops;

struct Planner {
  Function& f;
  PassContext& ctx;
  // The session's solver for f (with its facts and checks), else its own.
  std::unique_ptr<ShapeSolver> ownSolver;
  bool sessionLoaded = false;  // the session's solver existed: facts and checks are in it
  ShapeSolver& solver;
  std::vector<Operation*> order;            // top-level ops in program order
  std::map<const Operation*, size_t> index;  // position in `order`
  std::set<const Operation*> freeOps;
  std::map<const Operation*, int> group;     // op -> group id
  // Each group's ops, in the order they joined (assign keeps it with `group`).
  std::map<int, std::vector<Operation*>> members;
  std::map<int, std::vector<std::string>> remarks;
  std::vector<std::pair<std::vector<DimExpr>, std::vector<DimExpr>>> rowShapes;  // (input, result) dims of row reductions
  int nextGroup = 0;
  std::set<int> libraryGroups;  // groups holding a matmul
  // Uses of every top-level value and the returned values, built once after
  // redirectDims: usersOf and isReturned scan the whole function, which made
  // planning quadratic in the number of ops.
  std::map<const Value*, std::vector<Operation*>> useMap;
  std::set<const Value*> returnedSet;

  Planner(Function& fn, PassContext& c)
      : f(fn),
        ctx(c),
        ownSolver(c.solvers ? nullptr : std::make_unique<ShapeSolver>(c.opts.solverTimeoutMs)),
        solver(ownSolver ? *ownSolver : sessionSolver(c, fn, sessionLoaded)) {}

  // Puts op in group g.
  void assign(Operation* op, int g) {
    group[op] = g;
    members[g].push_back(op);
  }

  void buildUses() {
    useMap.clear();
    for (Operation* op : order) {
      std::set<const Value*> seen;  // each user once, as usersOf gives it
      for (const Value* v : op->operands)
        if (seen.insert(v).second) useMap[v].push_back(op);
    }
    returnedSet = std::set<const Value*>(f.returns.begin(), f.returns.end());
  }
  const std::vector<Operation*>& uses(const Value* v) {
    static const std::vector<Operation*> none;
    auto it = useMap.find(v);
    return it == useMap.end() ? none : it->second;
  }
  bool returned(const Value* v) const { return returnedSet.count(v) != 0; }
  // True when the group `in` yields v: it is returned or read by an op outside.
  bool yieldedBy(const Value* v, const std::set<const Operation*>& in) {
    if (returned(v)) return true;
    for (Operation* u : uses(v))
      if (!in.count(u)) return true;
    return false;
  }

  // Equality of two dims: structurally equal expressions (the common case:
  // a chain over one shape) without the solver, the rest once per pair of
  // canonical keys. The solver caches too, but only after building a - b.
  std::map<std::pair<std::string, std::string>, bool> sameMemo;
  bool same(const DimExpr& a, const DimExpr& b) {
    if (a == b) return true;
    auto key = std::make_pair(a.key(), b.key());
    if (key.second < key.first) std::swap(key.first, key.second);
    if (auto it = sameMemo.find(key); it != sameMemo.end()) return it->second;
    bool r = solver.equal(a, b).tri == Tri::Proved;
    sameMemo.emplace(std::move(key), r);
    return r;
  }

  // The users of a value, looking through reshapes (views); a reshape with a
  // use outside returns itself so it blocks the merge.
  void effectiveUsers(const Value* v, std::vector<Operation*>& out) {
    for (Operation* u : uses(v)) {
      if (u->kind == OpKind::Reshape && !returned(u->result())) effectiveUsers(u->result(), out);
      else out.push_back(u);
    }
  }

  // True when a value computed in group g from `v` has the group's full
  // size: v (a reduction's result) is read again at its input's size.
  // Memo by (value, group, the group's space): consumers are planned first,
  // so what lies downstream of v is settled when v is asked about. Without
  // it every reduction walked all of its kernel again (quadratic: 20,000 ops
  // took a minute).
  std::map<std::tuple<const Value*, int, std::string>, bool> fullSizeMemo;
  bool reachesFullSize(const Value* v, int g, std::set<const Value*>& seen) {
    auto key = std::make_tuple(v, g, info[g].space.str() + "#" + std::to_string(info[g].views.size()));
    if (auto it = fullSizeMemo.find(key); it != fullSizeMemo.end()) return it->second;
    bool r = reachesFullSizeUncached(v, g, seen);
    fullSizeMemo[key] = r;
    return r;
  }
  bool reachesFullSizeUncached(const Value* v, int g, std::set<const Value*>& seen) {
    if (!seen.insert(v).second) return false;
    std::vector<Operation*> us;
    effectiveUsers(v, us);
    for (Operation* u : us) {
      if (!group.count(u) || group[u] != g) continue;
      if (inSpace(u->result()->type.dims, g)) return true;
      for (auto& r : u->results)
        if (reachesFullSize(r.get(), g, seen)) return true;
    }
    return false;
  }

  // p reads the result of a reduction not yet planned (through views): the
  // place to cut a chain of stitched reductions, so that the reduction, its
  // input and p start the next kernel together.
  bool readsReduction(const Operation* p) {
    for (const Value* v : p->operands) {
      const Operation* d = v->def;
      while (d && d->kind == OpKind::Reshape && !d->operands.empty()) d = d->operands[0]->def;
      if (d && !group.count(d) && classify(*d, freeOps) == Cls::Reduction) return true;
    }
    return false;
  }

  void planLibrary(Operation* mm) {
    int g = nextGroup++;
    assign(mm, g);
    libraryGroups.insert(g);
    if (mm->kind != OpKind::Matmul) return;  // conv and pool read their operands as they are
    // Operand layout: transposes and reshapes used only by this matmul.
    for (const Value* v : mm->operands) {
      Operation* d = v->def;
      while (d && !group.count(d) && layoutCompatible(*d) && uses(d->result()).size() == 1 &&
             !returned(d->result())) {
        assign(d, g);
        d = d->operands[0]->def;
      }
    }
  }

  // A conv whose elementwise consumers may join it as oneDNN post-ops: a channels-last f32 conv on the CPU
  // (runtime/DnnlChannelsLast.cpp applies them; the GPU targets have no conv call yet).
  bool postOpsConv(const Operation& op) const {
    return op.kind == OpKind::Conv && ctx.opts.target == KernelTarget::Cpu && isChannelsLast(op) &&
           op.result()->type.dtype == DType::F32;
  }

  // After the other kernels are planned: a loop kernel that only applies an
  // epilogue to a library call's output (bias vectors, scalars, activations,
  // an output transpose) joins the call; for a conv (postOpsConv), a chain
  // of post-ops (ir/ConvEpilogue.h), which may add a tensor (a residual). Reductions keep what they took, so
  // bias + residual stays with its layer_norm.
  void absorbEpilogues() {
    // Members of each group in program order, kept up to date as groups
    // merge, so a merge costs the sizes of the two groups, not the program's.
    for (auto& [g, ms] : members) sortByIndex(ms);
    for (Operation* mm : order) {
      if ((mm->kind != OpKind::Matmul && !postOpsConv(*mm)) || !group.count(mm)) continue;
      int g = group[mm];
      const Type& out = mm->result()->type;
      for (bool changed = true; changed;) {
        changed = false;
        std::set<int> consumers;
        bool isOut = false;
        for (Operation* op : members[g]) {
          isOut |= returned(op->result());
          for (Operation* u : uses(op->result()))
            if (!group.count(u) || group[u] != g) consumers.insert(group.count(u) ? group[u] : -1);
        }
        if (consumers.size() != 1 || *consumers.begin() < 0 || isOut) break;
        int l = *consumers.begin();
        std::vector<Operation*> ops = members[l];
        // Group l joins g: its members (in program order) and no remarks of its own.
        auto join = [&](int from) {
          for (Operation* op : members[from]) group[op] = g;
          std::vector<Operation*>& mg = members[g];
          mg.insert(mg.end(), members[from].begin(), members[from].end());
          sortByIndex(mg);
          members.erase(from);
          remarks.erase(from);
          changed = true;
        };
        if (members[g].size() + ops.size() > kMaxKernelOps) {
          if (ctx.opts.fusionRemarks)
            remarks[l].push_back("not an epilogue of library call %" + mm->result()->name + ": together they would hold " +
                                 std::to_string(members[g].size() + ops.size()) + " ops, more than one kernel holds");
          break;
        }
        if (mm->kind == OpKind::Conv) {
          if (libraryGroups.count(l)) break;  // the next conv or matmul: no post-op, and no remark to make
          // A conv takes as post-ops what ir/ConvEpilogue.h matches, nothing else: codegen lowers it by the
          // same match. The chain's values before its end are the conv's own, so none may be read outside.
          std::vector<const Operation*> chain;
          for (Operation* op : members[g])
            if (op != mm) chain.push_back(op);
          chain.insert(chain.end(), ops.begin(), ops.end());
          std::vector<ConvPostOp> post;
          std::string no = matchConvEpilogue(mm->result(), chain, post);
          std::set<const Operation*> both(chain.begin(), chain.end());
          both.insert(mm);
          for (size_t i = 0; no.empty() && i + 1 < chain.size(); ++i)
            if (yieldedBy(chain[i]->result(), both)) no = "%" + chain[i]->result()->name + " is read outside the chain";
          if (!no.empty()) {
            if (ctx.opts.fusionRemarks) remarks[l].push_back("not a post-op of conv %" + mm->result()->name + ": " + no);
            break;
          }
          join(l);
          continue;
        }
        bool ok = true;
        for (Operation* op : ops) {
          if (classify(*op, freeOps) != Cls::Elementwise || !isPointwise(*op) ||
              !same(numel(op->result()->type), numel(out))) {
            ok = false;
            break;
          }
          for (const Value* w : op->operands) {
            bool inside = w->def && group.count(w->def) && (group[w->def] == g || group[w->def] == l);
            const Type& t = w->type;
            bool bias = t.rank() == 0 || (t.rank() == 1 && !out.dims.empty() && same(t.dims[0], out.dims.back()));
            ok &= inside || bias;
          }
        }
        if (!ok) {
          if (ctx.opts.fusionRemarks) remarks[l].push_back("not an epilogue of library call %" + mm->result()->name + " (that needs only elementwise ops over its output, with bias or scalar operands)");
          break;
        }
        join(l);
      }
    }
  }

  struct GroupInfo {
    DimExpr space;  // element count of the iteration space
    // The shapes the space is written in: the first member's, and those of
    // members that reach the group through a view (a reshape: the identity
    // on the flat index). A value whose dims are one of these, up to literal
    // 1s, is read through the identity index map.
    std::vector<std::vector<DimExpr>> views;
    bool hasRowReduction = false;
    // Data movement (injective ops other than reshape) is in the group.
    bool hasMovement = false;
    bool hasArgmax = false;  // argmax: no stitch lowering takes it
    std::vector<const Operation*> reductions;  // in the group, in joining order
    // The first reduction that is not a last-axis reduction of the first
    // one's rows (kept as reductions join, so a join does not compare the
    // new reduction with every one in the group).
    const Operation* otherRows = nullptr;
    size_t ops = 0;  // ops in the group, for kMaxKernelOps
    // The input dims of the group's first reduction used at full size (a stitch).
    std::vector<DimExpr> stitchRows;
    bool stitch = false;
  };
  std::map<int, GroupInfo> info;

  // Group g reads a value of dims `d` at its own index: d is, up to 1s,
  // one of the shapes the group's space is written in (the index maps
  // between them are the identity).
  bool inSpace(const std::vector<DimExpr>& d, int g) {
    std::vector<DimExpr> s = squeezed(d);
    for (const auto& v : info[g].views)
      if (sameDims(squeezed(v), s)) return true;
    return false;
  }

  // p's result reaches its users through a reshape: a view, whose index map
  // is the identity on the flat index, so there the element counts compare.
  bool readThroughView(const Operation* p) {
    for (auto& r : p->results)
      for (Operation* u : uses(r.get()))
        if (u->kind == OpKind::Reshape) return true;
    return false;
  }

  // Every user reads p's result through the identity index map: an
  // elementwise or broadcasting op whose result has p's dims (up to 1s), a
  // reduction (p is its input, the space it loops over), a composite of
  // the same shape (softmax, layer_norm), or a view (a
  // reshape: the identity on the flat index). Any other map (p broadcast
  // into a larger result, data movement) is not the identity.
  bool readAtOwnIndex(const Operation* p) {
    const Value* v = p->result();
    std::vector<DimExpr> d = squeezed(v->type.dims);
    for (Operation* u : uses(v)) {
      // Views, and moves that read each element at most once per operand
      // (the element generator computes p per read; the kernel is generic).
      // A reshape is a view only where the counts are proved equal.
      if (u->kind == OpKind::Reshape && same(numel(u->result()->type), numel(v->type))) continue;
      if (u->kind == OpKind::Transpose || u->kind == OpKind::Slice || u->kind == OpKind::Concat) continue;
      if (u->kind == OpKind::BroadcastTo && sameDims(squeezed(u->result()->type.dims), d)) continue;  // adds 1s
      // A gather of no more elements than p has: computing p per read costs
      // no more than computing each element once.
      if (u->kind == OpKind::Gather && u->operands[0] == v && same(numel(u->result()->type), numel(v->type))) continue;
      Cls c = classify(*u, freeOps);
      if (c == Cls::Reduction) continue;
      bool pointwise = (c == Cls::Elementwise && isPointwise(*u)) || c == Cls::Composite;
      if (!pointwise || !sameDims(squeezed(u->result()->type.dims), d)) return false;
    }
    return true;
  }

  // A value of dims `d` is a row of group g's space: the kept dims of a
  // row reduction whose input is in the space (the stitch and input
  // lowerings compute such values once per row).
  bool isRow(const std::vector<DimExpr>& d, int g) {
    // rowShapes holds each distinct pair once (plan() dedups them), so this
    // is linear in the distinct row shapes, not in the reductions.
    std::vector<DimExpr> s = squeezed(d);
    for (const auto& [in, kept] : rowShapes)
      if (sameDims(squeezed(kept), s) && inSpace(in, g)) return true;
    return false;
  }

  bool sameDims(const std::vector<DimExpr>& a, const std::vector<DimExpr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  }

  // Can op P (not yet grouped) join group g by the iteration spaces?
  // Updates g's space when it can.
  //
  // A stitch (a reduction whose result the group uses again at the size of
  // its input) is only formed as the stitch lowering takes it: reductions of
  // the last axes of one shape, no data movement. Any other group can hold
  // any op: what the loop, input and stitch lowerings do not take is lowered
  // by the element generator, whose cost stays linear unless a reduction is
  // re-read at its input's size, which is exactly the stitch case.
  bool joinsSpace(Operation* p, int g, std::string& why, const std::vector<Operation*>& users) {
    GroupInfo& gi = info[g];
    Cls c = classify(*p, freeOps);
    DimExpr out = numel(p->result()->type);
    // Users that move data and read each element of p once per operand
    // slot (transpose, reshape, slice, concat): p joins at any element
    // count, as the element generator computes it per read (a value
    // concatenated twice is computed twice). A gather may read an element
    // many times: only data movement, which costs a load, joins it.
    auto readsOnce = [&](const Operation* u) {
      if (u->kind == OpKind::Transpose || u->kind == OpKind::Reshape || u->kind == OpKind::Slice ||
          u->kind == OpKind::Concat)
        return true;
      return u->kind == OpKind::Gather && u->operands[0] == p->result() && movesData(*p);
    };
    bool movedOnly = !users.empty() && std::all_of(users.begin(), users.end(), readsOnce) &&
                     std::any_of(users.begin(), users.end(), [](const Operation* u) { return movesData(*u); });
    // (A reduction at the group's space goes on below: re-read at its input's
    // size it must be a stitch.)
    if (movedOnly && !gi.stitch &&
        (c == Cls::Elementwise || (c == Cls::Reduction && !inSpace(p->result()->type.dims, g)))) {
      gi.hasMovement = true;
      return true;
    }
    if (movesData(*p) && gi.stitch) {
      why = "%" + p->result()->name + " moves data (" + std::string(p->name()) + ") and the kernel is a stitch";
      return false;
    }
    if (c == Cls::Elementwise || c == Cls::Composite) {
      if (p->results.size() == 1 && readAtOwnIndex(p)) return true;
      if (isRow(p->result()->type.dims, g)) return true;
      // A cast of an argument (f16 gamma widened to f32) is cheaper to redo
      // per element than to store and read back; a cast of a computed value
      // would bring that value's chain in, recomputed per read.
      if (p->kind == OpKind::Cast && (!p->operands[0]->def || freeOps.count(p->operands[0]->def))) return true;
      why = "%" + p->result()->name + " of type " + p->result()->type.str() + " is not read at the kernel's index " +
            "(its shape is not provably the kernel's, nor a view or a row of it)";
      return false;
    }
    if (c == Cls::Reduction) {
      DimExpr in = numel(p->operands[0]->type);
      std::set<const Value*> seen;
      const Operation* r0 = gi.reductions.empty() ? nullptr : gi.reductions.front();
      bool here = inSpace(p->operands[0]->type.dims, g);  // it loops over the group's space
      bool full = here && reachesFullSize(p->result(), g, seen);
      // Over another input space (of any size) but to the kept space of the
      // group's reductions: one (generic) kernel computes them side by side.
      // Not when a reduction of the group reads p: that is a chain (seed
      // 6007 program 197), not two reductions side by side.
      bool chained = std::any_of(users.begin(), users.end(),
                                 [&](const Operation* u) { return classify(*u, freeOps) == Cls::Reduction; });
      if (!here && !gi.stitch && r0 && !full && !chained &&
          sameDims(squeezed(p->result()->type.dims), squeezed(r0->result()->type.dims)))
        return true;
      if (here && !full && !gi.stitch) {
        // Several reductions, one input kernel: over one kept space (with
        // different inputs or axes the kernel is generic, see kindOf).
        if (r0 && !same(out, numel(r0->result()->type))) {
          why = "reduction %" + p->result()->name + " keeps " + out.str() + " elements, not the " +
                numel(r0->result()->type).str() + " of %" + r0->result()->name + " (one kernel reduces to one kept space)";
          return false;
        }
        return true;
      }
      if (here) {
        // Its result is used in the group at the full size (or the group is
        // a stitch already): it must be a stitch the stitch lowering takes.
        const std::vector<DimExpr>& dims = p->operands[0]->type.dims;
        std::string no = !lastAxisReduction(*p)                             ? "it does not reduce the last axis alone"
                         : gi.hasMovement                                     ? "the kernel moves data"
                         : gi.hasArgmax                                       ? "the kernel holds an argmax"
                         : gi.stitch && !sameDims(gi.stitchRows, dims)        ? "its rows differ from the kernel's"
                                                                              : "";
        if (no.empty() && !gi.reductions.empty()) {
          const Operation* r0 = gi.reductions.front();
          const Operation* r = !lastAxisReduction(*r0) || !sameDims(r0->operands[0]->type.dims, dims) ? r0
                                                                                                     : gi.otherRows;
          if (r) no = "the kernel holds reduction %" + r->result()->name + " of other rows";
        }
        if (!no.empty()) {
          why = "reduction %" + p->result()->name + " would be re-read at its input's size (a stitch) but " + no;
          return false;
        }
        if (!gi.stitch) gi.stitchRows = dims;
        gi.stitch = true;
        return true;
      }
      if (gi.stitch) {
        why = "reduction %" + p->result()->name + " over " + in.str() + " elements does not match the stitch's rows";
        return false;
      }
      // The group becomes the reduction's loop with an epilogue, which the
      // input lowering computes at the kept space: the group's values must
      // have its size (a value broadcast from the reduced one to a larger
      // shape is not an epilogue: seeds 6012 program 208, 6020 program 167).
      // A group that moves data is generic: its users read p at most once
      // per element (readAtOwnIndex), at any size.
      if (readAtOwnIndex(p) && (same(gi.space, out) || gi.hasMovement)) {
        gi.space = in;
        gi.views = {p->operands[0]->type.dims};
        return true;
      }
      why = "reduction %" + p->result()->name + " over " + in.str() + " elements does not match the kernel's " +
            gi.space.str();
      return false;
    }
    why = "library call";
    return false;
  }

  void sortByIndex(std::vector<Operation*>& ops) {
    std::sort(ops.begin(), ops.end(), [&](Operation* a, Operation* b) { return index[a] < index[b]; });
  }

  // Can op p join group g? By the spaces (joinsSpace), and, where g is or
  // becomes a stitch, by the stitch form: the group with p is formed as the
  // stitch lowering forms it (formReductions, the code codegen plans from),
  // and p stays out when it lacks the form. Every op that joins a stitch is
  // checked so, and ops only join, so a stitch the planner forms has its
  // form: legality by construction, not by planning again.
  bool tryJoin(Operation* p, int g, std::string& why, const std::vector<Operation*>& users) {
    GroupInfo before = info[g];
    if (!joinsSpace(p, g, why, users)) return false;
    if (!info[g].stitch) return true;
    std::vector<Operation*> ops = members[g];
    ops.push_back(p);
    sortByIndex(ops);
    ReductionForm form;
    std::string no = formReductions(groupKernelOps(ops, [this](const Value* v, const std::set<const Operation*>& in) {
                                      return yieldedBy(v, in);
                                    }),
                                    true, form);
    if (no.empty()) return true;
    why = !before.stitch ? "reduction %" + p->result()->name +
                               " would be re-read at its input's size (a stitch) but that stitch lacks the stitch form (" +
                               no + ")"
                         : "%" + p->result()->name + " would leave the stitch without the stitch form (" + no + ")";
    info[g] = std::move(before);
    return false;
  }

  static ShapeSolver& sessionSolver(PassContext& c, const Function& fn, bool& loaded) {
    bool created = false;
    ShapeSolver& s = c.solvers->of(fn, &created);
    loaded = !created;
    return s;
  }

  void plan() {
    if (ownSolver)
      for (const Fact& fact : f.facts) solver.addFact(fact);
    for (auto& op : f.ops) {
      index[op.get()] = order.size();
      order.push_back(op.get());
      // (A session's solver that infer-shapes loaded has them already.)
      if (op->kind == OpKind::Check && !sessionLoaded)
        if (auto r = checkRelation(*op)) solver.assume(*r);
    }
    redirectDims(f);
    buildUses();
    for (Operation* op : order)
      if (isFreeOp(*op, freeOps)) freeOps.insert(op);
    std::set<std::pair<std::string, std::string>> rowPairs;
    for (Operation* op : order)
      if (classify(*op, freeOps) == Cls::Reduction && isRowReduction(*op)) {
        const Type &in = op->operands[0]->type, &out = op->result()->type;
        if (!rowPairs.insert({in.str(), out.str()}).second) continue;
        rowShapes.emplace_back(in.dims, out.dims);
      }
    for (Operation* op : order)
      if (classify(*op, freeOps) == Cls::Matmul) planLibrary(op);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      // Consumers first: an op joins the kernel of its users.
      Operation* p = *it;
      if (group.count(p) || freeOps.count(p)) continue;
      std::vector<Operation*> users;
      for (auto& r : p->results) effectiveUsers(r.get(), users);
      // Dead code (fuse run without dce first) stays as it is: a kernel of
      // it would yield nothing.
      if (users.empty() && std::none_of(p->results.begin(), p->results.end(),
                                        [&](const auto& r) { return returned(r.get()); }))
        continue;
      std::set<int> ugroups;
      bool ungrouped = false;
      for (Operation* u : users) {
        if (group.count(u)) ugroups.insert(group[u]);
        else ungrouped = true;
      }
      int g = -1;
      std::string why;
      if (ugroups.size() == 1 && !ungrouped) {
        int cand = *ugroups.begin();
        bool library = libraryGroups.count(cand) != 0;
        // Reached through a reshape, p would bring the view into the kernel,
        // which the stitch lowering does not take.
        bool viaView = false;
        for (auto& r : p->results)
          for (Operation* u : uses(r.get())) viaView |= u->kind == OpKind::Reshape;
        if (library) why = "its user is a library call (no prologue fusion)";
        else if (viaView && info[cand].stitch) why = "it reaches the stitch through a reshape";
        else if (info[cand].ops >= kMaxKernelOps)
          why = "the kernel holds " + std::to_string(info[cand].ops) + " ops, the most one kernel holds";
        else if (info[cand].reductions.size() >= kMaxStitchReductions && readsReduction(p))
          why = "it reads a reduction and the kernel holds " + std::to_string(info[cand].reductions.size()) +
                " reductions, the most one kernel holds";
        else if (classify(*p, freeOps) == Cls::Reduction && info[cand].reductions.size() >= kMaxStitchReductions)
          why = "the kernel holds " + std::to_string(info[cand].reductions.size()) +
                " reductions, the most one kernel holds";
        else if (tryJoin(p, cand, why, users)) g = cand;
      } else if (ugroups.size() > 1 || ungrouped) {
        why = "its result is used by " + std::to_string(ugroups.size() + (ungrouped ? 1 : 0)) + " kernels or ops";
      }
      if (g < 0) {
        g = nextGroup++;
        Cls c = classify(*p, freeOps);
        const Type& t = c == Cls::Reduction ? p->operands[0]->type : p->result()->type;
        info[g].space = numel(t);
        info[g].views = {t.dims};
        if (!why.empty() && !users.empty() && ctx.opts.fusionRemarks)
          for (int ug : ugroups) remarks[ug].push_back("not fused with %" + p->result()->name + ": " + why);
      }
      assign(p, g);
      GroupInfo& gi = info[g];
      ++gi.ops;
      // Joined through a view: its shape is one more the space is written in.
      if (const Type& t = p->result()->type; classify(*p, freeOps) != Cls::Reduction && readThroughView(p) &&
                                             !inSpace(t.dims, g) && same(numel(t), gi.space))
        gi.views.push_back(t.dims);
      if (classify(*p, freeOps) == Cls::Reduction && isRowReduction(*p)) gi.hasRowReduction = true;
      if (movesData(*p)) gi.hasMovement = true;
      if (p->kind == OpKind::ArgMax) gi.hasArgmax = true;
      if (classify(*p, freeOps) == Cls::Reduction) {
        if (!gi.reductions.empty() && !gi.otherRows &&
            (!lastAxisReduction(*p) ||
             !sameDims(gi.reductions.front()->operands[0]->type.dims, p->operands[0]->type.dims)))
          gi.otherRows = p;
        gi.reductions.push_back(p);
      }
      // Views between this op and its kernel move in with it.
      for (auto& r : p->results)
        for (Operation* u : uses(r.get()))
          if (u->kind == OpKind::Reshape && !group.count(u)) {
            std::vector<Operation*> uu;
            effectiveUsers(u->result(), uu);
            bool allIn = !uu.empty() && std::all_of(uu.begin(), uu.end(), [&](Operation* x) {
              return group.count(x) && group[x] == g;
            });
            if (allIn) {
              assign(u, g);
              ++info[g].ops;
              info[g].hasMovement = true;  // no stitch takes a reshape inside
            }
          }
    }
  }

  void finish() { absorbEpilogues(); }

  // The analysis of a group (passes/KernelAnalysis.h), asking this
  // planner's solver and use map.
  KernelAnalysis analyze(const std::vector<Operation*>& ops) {
    KindQueries q{freeOps, ctx.opts.target, [this](const DimExpr& x, const DimExpr& y) { return same(x, y); },
                  [this](const Value* v, const std::set<const Operation*>& in) { return yieldedBy(v, in); }};
    return analyzeKernel(ops, q);
  }

  // Rewrites the function: one fusion op per group, in a dependency order.
  void rewrite() {
    std::map<int, std::vector<Operation*>> members;
    for (Operation* op : order)
      if (group.count(op)) members[group[op]].push_back(op);
    // Units: a group or a single free op; ordered by Kahn's algorithm with
    // the original position as the tie-break, so output is deterministic.
    std::map<const Operation*, int> unitOf;
    std::vector<std::vector<Operation*>> units;
    std::vector<int> unitGroup;
    for (Operation* op : order) {
      if (group.count(op)) {
        int g = group[op];
        if (members[g].front() != op) {
          unitOf[op] = unitOf[members[g].front()];
          continue;
        }
        unitOf[op] = static_cast<int>(units.size());
        units.push_back(members[g]);
        unitGroup.push_back(g);
      } else {
        unitOf[op] = static_cast<int>(units.size());
        units.push_back({op});
        unitGroup.push_back(-1);
      }
    }
    size_t n = units.size();
    std::vector<std::set<int>> succ(n);
    std::vector<int> indeg(n, 0);
    for (size_t u = 0; u < n; ++u)
      for (Operation* op : units[u])
        for (const Value* v : op->operands)
          if (v->def && unitOf.count(v->def)) {
            int from = unitOf[v->def];
            if (from != static_cast<int>(u) && succ[from].insert(static_cast<int>(u)).second) ++indeg[u];
          }
    std::set<std::pair<size_t, int>> ready;  // (first op index, unit)
    for (size_t u = 0; u < n; ++u)
      if (!indeg[u]) ready.insert({index[units[u].front()], static_cast<int>(u)});
    std::vector<int> sorted;
    while (!ready.empty()) {
      int u = ready.begin()->second;
      ready.erase(ready.begin());
      sorted.push_back(u);
      for (int s : succ[u])
        if (--indeg[s] == 0) ready.insert({index[units[s].front()], s});
    }
    // Take ownership of the old ops, then rebuild.
    std::map<const Operation*, std::unique_ptr<Operation>> owned;
    for (auto& op : f.ops) owned[op.get()] = std::move(op);
    f.ops.clear();
    for (int u : sorted) {
      if (unitGroup[u] < 0) {
        f.ops.push_back(std::move(owned[units[u].front()]));
        continue;
      }
      const auto& ops = units[u];
      std::set<const Operation*> inGroup(ops.begin(), ops.end());
      auto fu = std::make_unique<Operation>();
      fu->kind = OpKind::Fusion;
      fu->loc = ops.back()->loc;
      fu->hasExplicitType = true;
      KernelAnalysis a = analyze(ops);
      setKernelKind(*fu, a.kind);
      if (ctx.opts.fusionRemarks) {
        std::vector<Attribute> rs;
        if (auto it = remarks.find(unitGroup[u]); it != remarks.end())
          for (const auto& r : it->second) rs.push_back(Attribute::makeString(r));
        if (!a.whyGeneric.empty()) rs.push_back(Attribute::makeString(a.whyGeneric));
        if (!rs.empty()) fu->setAttr("remarks", Attribute::makeList(rs));
      }
      std::set<const Value*> inner, taken;
      for (Operation* op : ops) {
        for (const Value* v : op->operands)
          if (!inner.count(v) && taken.insert(v).second) fu->operands.push_back(const_cast<Value*>(v));
        for (auto& r : op->results) inner.insert(r.get());
      }
      // Results: inner values used outside the group or returned. Every
      // top-level user is either in the group or elsewhere (not yet placed,
      // or placed earlier), so the use map answers it.
      for (Operation* op : ops)
        for (auto& r : op->results) {
          if (!yieldedBy(r.get(), inGroup)) continue;
          auto res = std::make_unique<Value>();
          res->name = r->name;
          res->type = r->type;
          res->loc = r->loc;
          res->def = fu.get();
          res->index = static_cast<int>(fu->results.size());
          fu->yields.push_back(r.get());
          fu->results.push_back(std::move(res));
        }
      for (Operation* op : ops) fu->body.push_back(std::move(owned[op]));
      // Uses outside the body now read the fusion's results.
      Operation* raw = fu.get();
      f.ops.push_back(std::move(fu));
      for (size_t i = 0; i < raw->yields.size(); ++i) {
        const Value* in = raw->yields[i];
        Value* outV = raw->results[i].get();
        for (Operation* o : uses(in))
          if (auto it = owned.find(o); it != owned.end() && it->second && !inGroup.count(o))
            for (auto& v : it->second->operands)
              if (v == in) v = outV;
        for (auto& v : f.returns)
          if (v == in) v = outV;
      }
    }
  }
};

}  // namespace

bool fuse(Module& m, PassContext& ctx) {
  for (auto& f : m.funcs) {
    bool already = false;
    for (auto& op : f->ops) already |= op->kind == OpKind::Fusion;
    if (already) continue;  // planned once; a second run keeps the plan
    Planner p(*f, ctx);
    if (p.ownSolver) ctx.startupMs += p.solver.stats().startupMs;
    p.plan();
    p.finish();
    p.rewrite();
  }
  return true;
}

}  // namespace dscc
