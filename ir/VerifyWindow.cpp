// Verification and result-type inference of the sliding-window ops, `conv`, `conv_transpose` and `pool` (size rules in ir/Window.h).
#include "ir/VerifierInternal.h"
#include "ir/Window.h"

namespace dscc::verifier_detail {

bool OpChecker::windowAttrs(size_t spatial, WindowAttrs& a) {
  Location where;
  std::string e = readWindowAttrs(op_, spatial, a, where);
  if (!e.empty()) return err(where, e);
  return true;
}

bool OpChecker::windowFits(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  if (a.autoPad == AutoPad::SameUpper || a.autoPad == AutoPad::SameLower) return true;  // padded to fit
  // In ceil mode a pool's one window may hang past the end padding (windowLeastRoom); `span` is then the least
  // extent that holds it.
  const bool hang = a.ceilMode && a.autoPad == AutoPad::Explicit && a.strides[i] > 1;
  DimExpr span = windowLeastRoom(a, i, k), room = windowPaddedIn(a, i, in, k);
  DimExpr slack = room - span;
  std::string what = "the window of '" + opName() + "' " + (hang ? "starts in" : "fits in") +
                     " the padded input along spatial dim " + std::to_string(i);
  if (slack.isConst()) {
    if (slack.constValue() >= 0) return true;
    return err("the window of '" + opName() + "' along spatial dim " + std::to_string(i) + " spans " +
               windowSpan(a, i, k).str() + (hang ? " (ceil mode: it needs " + span.str() + ")" : "") +
               ", more than the padded input's " + room.str());
  }
  // span <= room as max(span, room) == room, which the solver may prove from the facts (H in [7, 64]).
  Tri t = oracle_.equal(DimExpr::max(span, room), room);
  if (t == Tri::Proved) return true;
  if (t == Tri::Disproved) {
    err("the window of '" + opName() + "' along spatial dim " + std::to_string(i) + " spans " +
        windowSpan(a, i, k).str() + (hang ? " (ceil mode: it needs " + span.str() + ")" : "") +
        ", more than the padded input's " + room.str() + " at every size the facts allow");
    exampleNote();
    return false;
  }
  oracle_.requireAtRuntime({"le", span, room, what}, &op_);
  return true;
}

bool OpChecker::inferConv() {
  if (op_.kind == OpKind::ConvTranspose) return inferConvTranspose();  // same category (a library call), other rule
  // A channels_last conv is checked in channels-first order; its result is permuted back at the end.
  const bool cl = isChannelsLast(op_);
  Type x = in(0);
  if (cl) x.dims = toChannelsFirst(x.dims);
  const Type& w = in(1);
  if (!sameDType(0, 1)) return false;  // (floats: the op's domain, Ops.def)
  if (x.rank() < 3)
    return err("'conv' needs an input of rank >= 3 ([N, C, spatial...]), but " + operandName(0) + " is " + x.str());
  if (w.rank() != x.rank())
    return err("the weight of 'conv' must have the input's rank " + std::to_string(x.rank()) +
               " ([M, C/group, k...]), but " + operandName(1) + " is " + w.str());
  const size_t n = x.rank() - 2;
  WindowAttrs a;
  if (!windowAttrs(n, a)) return false;
  const DimExpr &C = x.dims[1], &M = w.dims[0];
  DimExpr G(a.group);
  if (C.isConst() && C.constValue() % a.group != 0)
    return err("group " + std::to_string(a.group) + " of 'conv' does not divide the " + C.str() + " input channels");
  if (M.isConst() && M.constValue() % a.group != 0)
    return err("group " + std::to_string(a.group) + " of 'conv' does not divide the " + M.str() + " output channels");
  if (!M.isConst()) oracle_.requireAtRuntime({"divisible", M, G, "group of 'conv' divides its output channels"}, &op_);
  if (!checkEqualDims(C, w.dims[1] * G, "input channels of 'conv' do not match the weight's channels times group",
                      "input channels of 'conv' equal the weight's channels times group"))
    return false;
  if (op_.operands.size() == 3) {
    if (!sameDType(0, 2)) return false;
    const Type& b = in(2);
    if (b.rank() != 1) return err("the bias of 'conv' must have rank 1 ([M]), but " + operandName(2) + " is " + b.str());
    if (!checkEqualDims(b.dims[0], M, "the bias of 'conv' does not match the output channels",
                        "the bias of 'conv' has one value per output channel"))
      return false;
  }
  Type t{x.dtype, {x.dims[0], M}};
  for (size_t i = 0; i < n; ++i) {
    const DimExpr& k = w.dims[2 + i];
    if (k.isConst() && k.constValue() < 1) return err("the kernel of 'conv' is empty along spatial dim " + std::to_string(i));
    if (!windowFits(a, i, x.dims[2 + i], k)) return false;
    t.dims.push_back(windowOutDim(a, i, x.dims[2 + i], k));
  }
  if (cl) t.dims = toChannelsLast(t.dims);
  setResult(t);
  return true;
}

bool OpChecker::inferConvTranspose() {
  const Type &x = in(0), &w = in(1);
  if (!sameDType(0, 1)) return false;
  if (x.rank() < 3)
    return err("'conv_transpose' needs an input of rank >= 3 ([N, C, spatial...]), but " + operandName(0) + " is " +
               x.str());
  if (w.rank() != x.rank())
    return err("the weight of 'conv_transpose' must have the input's rank " + std::to_string(x.rank()) +
               " ([C, M/group, k...]), but " + operandName(1) + " is " + w.str());
  const size_t n = x.rank() - 2;
  WindowAttrs a;
  if (!windowAttrs(n, a)) return false;
  const DimExpr& C = x.dims[1];
  DimExpr G(a.group), M = w.dims[1] * G;
  if (C.isConst() && C.constValue() % a.group != 0)
    return err("group " + std::to_string(a.group) + " of 'conv_transpose' does not divide the " + C.str() +
               " input channels");
  if (!C.isConst()) oracle_.requireAtRuntime({"divisible", C, G, "group of 'conv_transpose' divides its input channels"}, &op_);
  if (!checkEqualDims(C, w.dims[0], "input channels of 'conv_transpose' do not match the weight's dim 0",
                      "input channels of 'conv_transpose' equal the weight's dim 0"))
    return false;
  if (op_.operands.size() == 3) {
    if (!sameDType(0, 2)) return false;
    const Type& b = in(2);
    if (b.rank() != 1)
      return err("the bias of 'conv_transpose' must have rank 1 ([M]), but " + operandName(2) + " is " + b.str());
    if (!checkEqualDims(b.dims[0], M, "the bias of 'conv_transpose' does not match the output channels (weight dim 1 times group)",
                        "the bias of 'conv_transpose' has one value per output channel"))
      return false;
  }
  Type t{x.dtype, {x.dims[0], M}};
  for (size_t i = 0; i < n; ++i) {
    const DimExpr& k = w.dims[2 + i];
    if (k.isConst() && k.constValue() < 1)
      return err("the kernel of 'conv_transpose' is empty along spatial dim " + std::to_string(i));
    DimExpr o = transposeOutDim(a, i, x.dims[2 + i], k);
    // A size must not be negative (a small input with large pads): a compile error when it is everywhere the facts
    // allow, nothing when they prove it, else a run-time check.
    std::string what = "the result of 'conv_transpose' has a size >= 0 along spatial dim " + std::to_string(i);
    if (o.isConst()) {
      if (o.constValue() < 0)
        return err("the result of 'conv_transpose' along spatial dim " + std::to_string(i) + " has size " + o.str() +
                   " (the pads cut more than the " + std::to_string(a.strides[i]) + "*(in-1) + span points there are)");
    } else {
      Tri tr = oracle_.equal(DimExpr::max(DimExpr(0), o), o);
      if (tr == Tri::Disproved) {
        err("the result of 'conv_transpose' along spatial dim " + std::to_string(i) + " has size " + o.str() +
            ", negative at every size the facts allow");
        exampleNote();
        return false;
      }
      if (tr != Tri::Proved) oracle_.requireAtRuntime({"le", DimExpr(0), o, what}, &op_);
    }
    t.dims.push_back(o);
  }
  setResult(t);
  return true;
}

bool OpChecker::inferPool() {
  const bool cl = isChannelsLast(op_);
  Type x = in(0);
  if (cl) x.dims = toChannelsFirst(x.dims);

  if (x.rank() < 3)
    return err("'pool' needs an input of rank >= 3 ([N, C, spatial...]), but " + operandName(0) + " is " + x.str());
  const size_t n = x.rank() - 2;
  WindowAttrs a;
  if (!windowAttrs(n, a)) return false;
  // argmax: the dims a max pool has (one size rule for both), i64 indices into the operand.
  Type t{a.isArgmax ? DType::I64 : x.dtype, {x.dims[0], x.dims[1]}};
  for (size_t i = 0; i < n; ++i) {
    DimExpr k(a.kernel[i]);
    if (!windowFits(a, i, x.dims[2 + i], k)) return false;
    t.dims.push_back(windowOutDim(a, i, x.dims[2 + i], k));
  }
  if (cl) t.dims = toChannelsLast(t.dims);
  setResult(t);
  return true;
}

}  // namespace dscc::verifier_detail
