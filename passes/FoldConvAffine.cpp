// Folding per-channel affine ops (an inference batch norm) after a conv into its constant weight and bias.
#include "passes/FoldConvAffine.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/Rewrite.h"
#include "ir/Tensor.h"
#include "passes/FoldConstants.h"

namespace dscc {
namespace {

// A weight is read whole through the interpreter; larger ones stay unfolded.
constexpr int64_t kMaxWeightElements = int64_t(1) << 26;
// The per-channel operands are small ([M] or a scalar); anything larger is
// not per-channel anyway, so it is not evaluated.
constexpr int64_t kMaxOperandElements = int64_t(1) << 20;
// New constants up to this size are literals, as fold-constants makes them.

// The affine steps a chain is made of, by where the conv's side `y` stands.
enum class Step { Add, SubConst /* y - c */, SubFrom /* c - y */, Mul, Div /* y / c */ };

// The conv attributes whose meaning this pass knows: with any other (a
// layout, say) the output channel need not be dim 1, so the conv is left alone.
bool onlyKnownAttrs(const Operation& conv) {
  static const std::set<std::string> known = {"strides", "dilations", "pads", "group", "auto_pad"};
  return std::all_of(conv.attrs.begin(), conv.attrs.end(), [](const auto& a) { return known.count(a.first) > 0; });
}

// The per-channel values of constant `c` broadcast against a result of rank
// `rank` whose dim 1 holds `channels` channels: one per channel, or nullopt
// if `c` varies along another dim or is not finite.
std::optional<std::vector<double>> perChannel(const Tensor& c, size_t rank, int64_t channels) {
  if (c.rank() > rank) return std::nullopt;
  // Broadcasting aligns the last dims: c's dim k is the result's dim k + rank - c.rank().
  int64_t at = 1 - static_cast<int64_t>(rank - c.rank());
  for (size_t k = 0; k < c.rank(); ++k)
    if (static_cast<int64_t>(k) != at && c.shape[k] != 1) return std::nullopt;
  bool varies = at >= 0 && c.shape[static_cast<size_t>(at)] != 1;
  if (varies && c.shape[static_cast<size_t>(at)] != channels) return std::nullopt;
  std::vector<double> s(static_cast<size_t>(channels));
  // Every other dim is 1, so channel m is flat element m.
  for (int64_t m = 0; m < channels; ++m) {
    s[static_cast<size_t>(m)] = c.getF(varies ? m : 0);
    if (!std::isfinite(s[static_cast<size_t>(m)])) return std::nullopt;
  }
  return s;
}

// The only user of `v` when it may join the chain: one op, outside fusions,
// and `v` not returned.
Operation* soleTopLevelUser(const Function& f, const Value* v) {
  if (isReturned(f, v)) return nullptr;
  auto users = usersOf(f, v);
  if (users.size() != 1) return nullptr;
  Operation* u = users[0];
  bool topLevel = std::any_of(f.ops.begin(), f.ops.end(), [&](const auto& op) { return op.get() == u; });
  return topLevel ? u : nullptr;
}

// What one rewrite does: the chain's ops and its composed scale and shift.
struct Chain {
  std::vector<Operation*> ops;
  std::vector<double> scale, shift;  // y_last = scale[m] * conv[m] + shift[m]
};

// Extends `ch` by `user` of `cur` if it is an affine step with a per-channel
// constant; false otherwise.
bool addStep(Chain& ch, Operation& user, const Value* cur, int64_t channels, const SourceMgr& sm) {
  if (user.operands.size() != 2 || user.results.size() != 1 || user.result()->type != cur->type) return false;
  bool first = user.operands[0] == cur;
  const Value* other = user.operands[first ? 1 : 0];
  if (other == cur) return false;
  Step step;
  switch (user.kind) {
    case OpKind::Add: step = Step::Add; break;
    case OpKind::Mul: step = Step::Mul; break;
    case OpKind::Sub: step = first ? Step::SubConst : Step::SubFrom; break;
    case OpKind::Div:
      if (!first) return false;  // c / y is not affine in y
      step = Step::Div;
      break;
    default: return false;
  }
  auto t = constantValue(other, sm, kMaxOperandElements);
  if (!t) return false;
  auto c = perChannel(*t, cur->type.rank(), channels);
  if (!c) return false;
  for (size_t m = 0; m < c->size(); ++m) {
    double& a = ch.scale[m];
    double& b = ch.shift[m];
    double k = (*c)[m];
    switch (step) {
      case Step::Add: b += k; break;
      case Step::SubConst: b -= k; break;
      case Step::SubFrom: a = -a; b = k - b; break;
      case Step::Mul: a *= k; b *= k; break;
      case Step::Div: a /= k; b /= k; break;
    }
  }
  ch.ops.push_back(&user);
  return true;
}

// Folds the chain after `conv` into new weight and bias constants; returns
// the number of ops folded (0: nothing changed).
int foldAfter(Function& f, Operation& conv, std::set<std::string>& paths, DiagEngine& diags) {
  if (conv.kind != OpKind::Conv || conv.results.size() != 1 || conv.operands.size() < 2 || !onlyKnownAttrs(conv))
    return 0;
  Value* y = conv.result();
  DType dt = y->type.dtype;
  if ((dt != DType::F32 && dt != DType::F64) || y->type.rank() < 2) return 0;
  Value* w = conv.operands[1];
  Value* bias = conv.operands.size() > 2 ? conv.operands[2] : nullptr;
  if (w->type.dtype != dt || (bias && bias->type.dtype != dt)) return 0;
  // The chain first, so that the constants are read only when there is one.
  if (!soleTopLevelUser(f, y)) return 0;
  const SourceMgr& sm = diags.sources();
  auto wt = constantValue(w, sm, kMaxWeightElements);
  if (!wt || wt->rank() < 1) return 0;
  int64_t channels = wt->shape[0];
  if (!y->type.dims[1].isConst() || y->type.dims[1].constValue() != channels) return 0;
  std::optional<Tensor> bt;
  if (bias) {
    bt = constantValue(bias, sm, kMaxWeightElements);
    if (!bt || bt->rank() != 1 || bt->shape[0] != channels) return 0;
  }
  Chain ch;
  ch.scale.assign(static_cast<size_t>(channels), 1.0);
  ch.shift.assign(static_cast<size_t>(channels), 0.0);
  const Value* cur = y;
  while (Operation* u = soleTopLevelUser(f, cur)) {
    if (!addStep(ch, *u, cur, channels, sm)) break;
    cur = u->result();
  }
  if (ch.ops.empty()) return 0;

  // New data, each element rounded once; the old constants stay as they are.
  Tensor nw = Tensor::zeros(dt, wt->shape), nb = Tensor::zeros(dt, {channels});
  int64_t row = channels ? wt->numel() / channels : 0;
  for (int64_t m = 0; m < channels; ++m) {
    double a = ch.scale[static_cast<size_t>(m)], b = ch.shift[static_cast<size_t>(m)];
    for (int64_t i = m * row; i < (m + 1) * row; ++i) nw.setF(i, a * wt->getF(i));
    nb.setF(m, a * (bt ? bt->getF(m) : 0.0) + b);
  }
  for (const Tensor* t : {&nw, &nb})
    for (int64_t i = 0; i < t->numel(); ++i)
      if (!std::isfinite(t->getF(i))) return 0;
  auto newW = makeTensorConstant(f, std::move(nw), *w, w->name + ".folded", conv.loc, paths, diags);
  if (!newW) return 0;
  // A chain of scales only leaves a conv without bias without one.
  bool needBias = bias != nullptr;
  for (int64_t m = 0; m < channels; ++m) needBias |= nb.getF(m) != 0.0;
  std::unique_ptr<Operation> newB;
  if (needBias) {
    newB = makeTensorConstant(f, std::move(nb), bias ? *bias : *y, (bias ? bias->name : y->name) + ".folded_bias",
                              conv.loc, paths, diags);
    if (!newB) return 0;
  }

  // The conv reads the new constants, placed just before it, and stands for the chain's last result.
  conv.operands[1] = newW->result();
  if (bias) conv.operands[2] = newB->result();
  else if (newB) conv.operands.push_back(newB->result());
  auto at = std::find_if(f.ops.begin(), f.ops.end(), [&](const auto& op) { return op.get() == &conv; });
  if (newB) at = f.ops.insert(at, std::move(newB));
  f.ops.insert(at, std::move(newW));
  replaceAllUses(f, cur, y);
  std::set<const Operation*> gone(ch.ops.begin(), ch.ops.end());
  f.ops.erase(std::remove_if(f.ops.begin(), f.ops.end(), [&](const auto& op) { return gone.count(op.get()) > 0; }),
              f.ops.end());
  return static_cast<int>(ch.ops.size());
}

}  // namespace

bool foldConvAffine(Module& m, PassContext& ctx) {
  std::set<std::string> paths = filePaths(m);
  for (auto& f : m.funcs) {
    std::vector<Operation*> convs;
    for (const auto& op : f->ops)
      if (op->kind == OpKind::Conv) convs.push_back(op.get());
    int folded = 0, into = 0;
    for (Operation* conv : convs) {
      int n = foldAfter(*f, *conv, paths, ctx.diags);
      folded += n;
      into += n > 0;
    }
    if (ctx.opts.stats)
      ctx.os << "// fold-conv-affine stats of @" << f->name << ": " << folded << " ops folded into " << into
             << " convs\n";
  }
  return true;
}

}  // namespace dscc
