// Library kernels as BLAS calls: the layout analysis of the matmul's operands and the epilogue as a loop kernel.
#include "codegen/LibraryPlan.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/KernelCommon.h"
#include "ir/IndexMap.h"
#include "passes/ShapeSolver.h"

namespace dscc::codegen {
namespace {

/// A strided view of a buffer: element (i_0, ...) lives at sum_k i_k * strides[k].
struct View {
  std::vector<DimExpr> dims, strides;
  bool dense = true;  ///< strides are the row-major strides of dims
};

/// Answers the dim equalities the analysis needs: normal forms first, the solver for the rest.
struct Dims {
  ShapeSolver* solver;

  bool same(const DimExpr& a, const DimExpr& b) const {
    if (a == b) return true;
    return solver && solver->equal(a, b).tri == Tri::Proved;
  }
  bool one(const DimExpr& d) const { return same(d, DimExpr(1)); }
};

std::vector<DimExpr> denseStrides(const std::vector<DimExpr>& dims) {
  std::vector<DimExpr> s(dims.size());
  DimExpr acc(1);
  for (size_t k = dims.size(); k-- > 0;) {
    s[k] = acc;
    acc = acc * dims[k];
  }
  return s;
}

/// The strides of `v` reshaped to `out` without moving data, or false when
/// no strides describe it (dims merged that are not contiguous in memory).
/// Dims are matched in groups of equal products: a group with one input dim
/// splits it, a group of several merges them first. Dims of 1 never matter,
/// so they are skipped and get stride 1.
bool restride(const View& v, const std::vector<DimExpr>& out, const Dims& d, std::vector<DimExpr>& strides) {
  strides.assign(out.size(), DimExpr(1));
  size_t i = 0, j = 0;
  while (true) {
    while (i < v.dims.size() && d.one(v.dims[i])) ++i;
    while (j < out.size() && d.one(out[j])) ++j;
    if (i == v.dims.size() || j == out.size()) return i == v.dims.size() && j == out.size();
    // The smallest group [i, i2] x [j, j2] with equal products.
    size_t i2 = i, j2 = j;
    bool found = false;
    for (i2 = i; i2 < v.dims.size() && !found; ++i2)
      for (j2 = j; j2 < out.size() && !found; ++j2)
        found = d.same(product(v.dims, i, i2 + 1), product(out, j, j2 + 1));
    if (!found) return false;
    --i2, --j2;  // the loops stepped past the match
    // The group's input dims must form one run of memory.
    DimExpr inner;
    bool haveInner = false;
    for (size_t k = i2 + 1; k-- > i;) {
      if (d.one(v.dims[k])) continue;
      if (haveInner && !d.same(v.strides[k], inner)) return false;
      inner = v.strides[k] * v.dims[k];
      if (!haveInner) haveInner = true;
    }
    DimExpr s;
    for (size_t k = i2 + 1; k-- > i;)
      if (!d.one(v.dims[k])) {
        s = v.strides[k];
        break;
      }
    for (size_t k = j2 + 1; k-- > j;) {
      strides[k] = d.one(out[k]) ? DimExpr(1) : s;
      if (!d.one(out[k])) s = s * out[k];
    }
    i = i2 + 1, j = j2 + 1;
  }
}

/// One matmul operand while its prologue is replayed.
struct Layout {
  size_t operand = 0;
  std::vector<DimExpr> copyDims, copyStrides;
  View view;

  /// Densifies the current view through a copy; false if the operand was already copied once.
  bool copy() {
    if (!copyDims.empty()) return false;
    copyDims = view.dims;
    copyStrides = view.strides;
    view.strides = denseStrides(view.dims);
    view.dense = true;
    return true;
  }
};

std::string str(const Value* v) { return "%" + v->name; }

/// Replays the prologue (reshapes and transposes from a fusion operand to `v`) on strides.
std::string traceOperand(const Operation& fusion, const Value* v, const std::set<const Operation*>& bodyOps,
                         const Dims& d, Layout& out) {
  std::vector<const Operation*> chain;
  const Value* root = v;
  while (root->def && bodyOps.count(root->def)) {
    const Operation* op = root->def;
    if (op->kind != OpKind::Reshape && op->kind != OpKind::Transpose)
      return "codegen: library kernel operand " + str(v) + " comes from '" + std::string(op->name()) +
             "'; only reshape and transpose may precede the matmul";
    chain.push_back(op);
    root = op->operands[0];
  }
  auto it = std::find(fusion.operands.begin(), fusion.operands.end(), root);
  if (it == fusion.operands.end()) return "codegen: " + str(root) + " is not an operand of the library kernel";
  out.operand = static_cast<size_t>(it - fusion.operands.begin());
  out.view.dims = root->type.dims;
  out.view.strides = denseStrides(root->type.dims);
  out.view.dense = true;
  for (auto op = chain.rbegin(); op != chain.rend(); ++op) {
    View& w = out.view;
    if ((*op)->kind == OpKind::Transpose) {
      std::vector<size_t> perm = transposePerm(**op);
      View t;
      for (size_t p : perm) {
        t.dims.push_back(w.dims[p]);
        t.strides.push_back(w.strides[p]);
      }
      t.dense = w.dense && std::is_sorted(perm.begin(), perm.end());
      w = std::move(t);
      continue;
    }
    const std::vector<DimExpr>& to = (*op)->result()->type.dims;
    if (w.dense) {
      w.dims = to;
      w.strides = denseStrides(to);
      continue;
    }
    std::vector<DimExpr> strides;
    if (restride(w, to, d, strides)) {
      w.dims = to;
      w.strides = std::move(strides);
      continue;
    }
    // Merges dims that are apart in memory: only a dense copy of the view before it reads right.
    if (!out.copy())
      return "codegen: operand " + str(v) + " of the library kernel needs more than one copy to become a matrix";
    w.dims = to;
    w.strides = denseStrides(to);
  }
  return "";
}

/// Turns the last two dims of `L`'s view (rows x cols of op(X)) into a BLAS matrix: unit stride along
/// one of them, else a dense copy. Sets `trans` (stored as cols x rows) and the row pitch `ld`.
std::string toMatrix(Layout& L, const Dims& d, const std::string& which, bool& trans, DimExpr& ld) {
  View& w = L.view;
  const size_t r = w.dims.size();
  const DimExpr &rows = w.dims[r - 2], &cols = w.dims[r - 1];
  if (d.one(cols) || d.same(w.strides[r - 1], DimExpr(1))) {
    trans = false;
    ld = d.one(rows) ? cols : w.strides[r - 2];
    return "";
  }
  if (d.one(rows) || d.same(w.strides[r - 2], DimExpr(1))) {
    trans = true;
    ld = d.one(cols) ? rows : w.strides[r - 1];
    return "";
  }
  if (!L.copy()) return "codegen: operand " + which + " of the library kernel needs more than one copy";
  trans = false;
  ld = cols;
  return "";
}

/// The batch strides of an operand whose view's batch dims are `dims` (aligned to the right of the
/// result's `batch`): a missing or size-1 dim broadcasts (stride 0).
std::string batchStrides(const View& w, size_t matrixDims, const std::vector<DimExpr>& batch, const Dims& d,
                         const std::string& which, std::vector<DimExpr>& out) {
  const size_t nb = w.dims.size() - matrixDims;
  out.assign(batch.size(), DimExpr(0));
  for (size_t t = 0; t < batch.size(); ++t) {
    if (t + nb < batch.size()) continue;
    const size_t k = t + nb - batch.size();
    if (d.same(w.dims[k], batch[t])) out[t] = d.one(batch[t]) ? DimExpr(0) : w.strides[k];
    else if (!d.one(w.dims[k]))
      return "codegen: batch dim " + w.dims[k].str() + " of matmul operand " + which +
             " may broadcast to " + batch[t].str() + " only at run time";
  }
  return "";
}

/// Builds the epilogue loop kernel from the body ops after the matmul (clones; the fusion is not changed).
std::string buildEpilogue(const Operation& fusion, const Operation& mm, const std::set<const Operation*>& prologue,
                          GemmPlan& out) {
  std::vector<const Operation*> ops;
  for (const auto& op : fusion.body)
    if (op.get() != &mm && !prologue.count(op.get())) ops.push_back(op.get());
  out.epilogue.reset();
  out.epilogueOperands.clear();
  out.epilogueInPlace = true;
  if (ops.empty()) {
    if (fusion.yields.size() != 1 || fusion.yields[0] != mm.result())
      return "codegen: a library kernel without an epilogue must yield exactly its matmul's result";
    return "";
  }
  auto epi = std::make_unique<Operation>();
  epi->kind = OpKind::Fusion;
  epi->loc = fusion.loc;
  setKernelKind(*epi, KernelKind::Loop);
  epi->operands.push_back(mm.result());
  std::map<const Value*, Value*> remap{{mm.result(), mm.result()}};
  const auto operandFor = [&](Value* v) -> std::string {
    if (remap.count(v)) return "";
    if (v->def && (prologue.count(v->def) || v->def == &mm))
      return "codegen: epilogue of the library kernel reads " + str(v) + " of its prologue";
    auto it = std::find(fusion.operands.begin(), fusion.operands.end(), v);
    if (it == fusion.operands.end()) return "codegen: epilogue value " + str(v) + " is defined after its use";
    out.epilogueOperands.push_back(static_cast<size_t>(it - fusion.operands.begin()));
    epi->operands.push_back(v);
    remap[v] = v;
    return "";
  };
  for (const Operation* op : ops) {
    auto c = std::make_unique<Operation>();
    c->kind = op->kind;
    c->attrs = op->attrs;
    c->loc = op->loc;
    c->hasExplicitType = op->hasExplicitType;
    for (Value* v : op->operands) {
      if (std::string e = operandFor(v); !e.empty()) return e;
      c->operands.push_back(remap.at(v));
    }
    for (const auto& r : op->results) {
      auto nv = std::make_unique<Value>(*r);
      nv->def = c.get();
      remap[r.get()] = nv.get();
      c->results.push_back(std::move(nv));
    }
    epi->body.push_back(std::move(c));
  }
  for (Value* y : fusion.yields) {
    if (!y->def || !remap.count(y) || y == mm.result())
      return "codegen: library kernel yields " + str(y) + ", which its epilogue does not compute";
    epi->yields.push_back(remap.at(y));
  }
  epi->yieldLoc = fusion.yieldLoc;
  for (const auto& r : fusion.results) {
    auto nv = std::make_unique<Value>(*r);
    nv->def = epi.get();
    epi->results.push_back(std::move(nv));
  }
  out.epilogueInPlace = fusion.results.size() == 1 && fusion.result()->type == mm.result()->type &&
                        std::all_of(ops.begin(), ops.end(), [](const Operation* op) { return isPointwise(*op); });
  out.epilogue = std::move(epi);
  return "";
}

}  // namespace

std::string planLibraryKernel(const Operation& fusion, ShapeSolver* solver, GemmPlan& out) {
  if (fusion.kind != OpKind::Fusion || kernelKindOf(fusion) != KernelKind::Library)
    return "codegen: not a library kernel (fusion {kind = \"library\"})";
  const Operation* mm = nullptr;
  std::set<const Operation*> bodyOps;
  for (const auto& op : fusion.body) {
    bodyOps.insert(op.get());
    if (op->kind != OpKind::Matmul) continue;
    if (mm) return "codegen: a library kernel with more than one matmul is not supported";
    mm = op.get();
  }
  if (!mm) return "codegen: the library kernel has no matmul";
  const DType dt = mm->operands[0]->type.dtype;
  if (dt != DType::F32 && dt != DType::F16 && dt != DType::BF16)
    return "codegen: matmul of " + std::string(dtypeName(dt)) + " is not supported yet";

  const Dims d{solver};
  out = GemmPlan();
  out.matmul = mm;
  Layout la, lb;
  if (std::string e = traceOperand(fusion, mm->operands[0], bodyOps, d, la); !e.empty()) return e;
  if (std::string e = traceOperand(fusion, mm->operands[1], bodyOps, d, lb); !e.empty()) return e;
  // The prologue: every op on the way from a fusion operand to the matmul.
  std::set<const Operation*> prologue;
  for (const Value* v : mm->operands)
    for (; v->def && bodyOps.count(v->def); v = v->def->operands[0]) prologue.insert(v->def);

  // The matmul's own transposes, and rank-1 operands as a 1 x K row and a K x 1 column.
  const auto boolAttr = [&](const char* n) {
    const Attribute* a = mm->attr(n);
    return a && a->b;
  };
  const bool aVec = la.view.dims.size() == 1, bVec = lb.view.dims.size() == 1;
  if (aVec) {
    la.view.dims.insert(la.view.dims.begin(), DimExpr(1));
    la.view.strides.insert(la.view.strides.begin(), la.view.strides[0] * la.view.dims[1]);
  } else if (boolAttr("transpose_a")) {
    const size_t r = la.view.dims.size();
    std::swap(la.view.dims[r - 1], la.view.dims[r - 2]);
    std::swap(la.view.strides[r - 1], la.view.strides[r - 2]);
    la.view.dense = false;
  }
  if (bVec) {
    lb.view.dims.push_back(DimExpr(1));
    lb.view.strides.push_back(DimExpr(1));
  } else if (boolAttr("transpose_b")) {
    const size_t r = lb.view.dims.size();
    std::swap(lb.view.dims[r - 1], lb.view.dims[r - 2]);
    std::swap(lb.view.strides[r - 1], lb.view.strides[r - 2]);
    lb.view.dense = false;
  }
  if (std::string e = toMatrix(la, d, "A", out.a.trans, out.a.ld); !e.empty()) return e;
  if (std::string e = toMatrix(lb, d, "B", out.b.trans, out.b.ld); !e.empty()) return e;
  const size_t ra = la.view.dims.size(), rb = lb.view.dims.size();
  out.M = la.view.dims[ra - 2];
  out.K = la.view.dims[ra - 1];
  out.N = lb.view.dims[rb - 1];
  if (!d.same(out.K, lb.view.dims[rb - 2]))
    return "codegen: matmul contracts " + out.K.str() + " with " + lb.view.dims[rb - 2].str();

  const std::vector<DimExpr>& res = mm->result()->type.dims;
  const size_t matrixDims = (aVec ? 0 : 1) + (bVec ? 0 : 1);
  if (res.size() < matrixDims) return "codegen: matmul result " + mm->result()->type.str() + " has too few dims";
  out.batchDims.assign(res.begin(), res.end() - static_cast<std::ptrdiff_t>(matrixDims));
  if (std::string e = batchStrides(la.view, 2, out.batchDims, d, "A", out.a.batchStrides); !e.empty()) return e;
  if (std::string e = batchStrides(lb.view, 2, out.batchDims, d, "B", out.b.batchStrides); !e.empty()) return e;

  // One big GEMM instead of a batch when B is shared by every batch entry
  // and A's batch entries follow each other like rows of one matrix
  // (x * W with x of [B, S, D]).
  const size_t nb = out.batchDims.size();
  bool fold = nb > 0 && !out.a.trans &&
              std::all_of(out.b.batchStrides.begin(), out.b.batchStrides.end(),
                          [](const DimExpr& s) { return s.isConst() && s.constValue() == 0; });
  DimExpr next = out.a.ld * out.M;  // where the next batch entry must start
  for (size_t t = nb; fold && t-- > 0;) {
    if (d.one(out.batchDims[t])) continue;
    fold = d.same(out.a.batchStrides[t], next);
    next = next * out.batchDims[t];
  }
  if (fold) {
    out.M = product(out.batchDims, 0, nb) * out.M;
    out.batchDims.clear();
    out.a.batchStrides.clear();
    out.b.batchStrides.clear();
  }

  out.ldc = out.N;
  out.batchStridesC.assign(out.batchDims.size(), DimExpr(0));
  DimExpr c = out.M * out.N;
  for (size_t t = out.batchDims.size(); t-- > 0;) {
    out.batchStridesC[t] = c;
    c = c * out.batchDims[t];
  }
  out.a.operand = la.operand;
  out.a.copyDims = std::move(la.copyDims);
  out.a.copyStrides = std::move(la.copyStrides);
  out.b.operand = lb.operand;
  out.b.copyDims = std::move(lb.copyDims);
  out.b.copyStrides = std::move(lb.copyStrides);
  return buildEpilogue(fusion, *mm, prologue, out);
}

}  // namespace dscc::codegen
