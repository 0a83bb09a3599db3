// The sliding-window geometry of `conv`, `conv_transpose` and `pool` (declared in Window.h).
#include "ir/Window.h"

#include <optional>

namespace dscc {
namespace {

constexpr int64_t kMaxWindowAttr = 2147483647;

// A list of n integers (default `dflt` each when absent); "" or why not.
std::string intList(const Operation& op, const char* name, size_t n, int64_t dflt, int64_t lo,
                    std::vector<int64_t>& out, Location& where) {
  const Attribute* a = op.attr(name);
  out.assign(n, dflt);
  if (!a) return "";
  where = a->loc;
  std::string head = "attribute '" + std::string(name) + "' of '" + std::string(op.name()) + "'";
  if (a->kind != Attribute::Kind::List) return head + " must be a list of integers";
  if (a->list.size() != n)
    return head + " has " + std::to_string(a->list.size()) + " entries, but the operand has " +
           std::to_string(n / (std::string(name) == "pads" ? 2 : 1)) + " spatial dims (expected " + std::to_string(n) + ")";
  for (size_t i = 0; i < n; ++i) {
    if (a->list[i].kind != Attribute::Kind::Int) return head + " must be a list of integers";
    if (a->list[i].i < lo) return head + " must hold integers >= " + std::to_string(lo) + ", not " + std::to_string(a->list[i].i);
    // Bounded so that spans and padded sizes stay far from 64-bit overflow.
    if (a->list[i].i > kMaxWindowAttr)
      return head + " must hold integers <= " + std::to_string(kMaxWindowAttr) + ", not " + std::to_string(a->list[i].i);
    out[i] = a->list[i].i;
  }
  return "";
}

std::string boolOf(const Operation& op, const char* name, bool& out, Location& where) {
  const Attribute* a = op.attr(name);
  if (!a) return "";
  where = a->loc;
  if (a->kind != Attribute::Kind::Bool)
    return "attribute '" + std::string(name) + "' of '" + std::string(op.name()) + "' must be true or false";
  out = a->b;
  return "";
}

}  // namespace

const char* autoPadName(AutoPad p) {
  switch (p) {
    case AutoPad::SameUpper: return "same_upper";
    case AutoPad::SameLower: return "same_lower";
    case AutoPad::Valid: return "valid";
    case AutoPad::Explicit: break;
  }
  return "";
}

std::string readWindowAttrs(const Operation& op, size_t n, WindowAttrs& out, Location& where) {
  out = WindowAttrs();
  out.n = n;
  where = op.loc;
  const std::string name(op.name());
  if (std::string e = intList(op, "strides", n, 1, 1, out.strides, where); !e.empty()) return e;
  if (std::string e = intList(op, "dilations", n, 1, 1, out.dilations, where); !e.empty()) return e;
  std::vector<int64_t> pads;
  if (std::string e = intList(op, "pads", 2 * n, 0, 0, pads, where); !e.empty()) return e;
  out.padsBegin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  out.padsEnd.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  if (const Attribute* a = op.attr("auto_pad")) {
    where = a->loc;
    if (a->kind != Attribute::Kind::String ||
        (a->s != "same_upper" && a->s != "same_lower" && a->s != "valid" && a->s != "explicit"))
      return "attribute 'auto_pad' of '" + name + "' must be \"same_upper\", \"same_lower\", \"valid\" or \"explicit\"";
    out.autoPad = a->s == "same_upper" ? AutoPad::SameUpper
                  : a->s == "same_lower" ? AutoPad::SameLower
                  : a->s == "valid"      ? AutoPad::Valid
                                         : AutoPad::Explicit;
    if (out.autoPad != AutoPad::Explicit && op.attr("pads"))
      return "'" + name + "' takes 'pads' or auto_pad = \"" + a->s + "\", not both";
  }
  if (op.kind == OpKind::Conv || op.kind == OpKind::ConvTranspose) {
    if (const Attribute* g = op.attr("group")) {
      where = g->loc;
      if (g->kind != Attribute::Kind::Int || g->i < 1 || g->i > kMaxWindowAttr)
        return "attribute 'group' of '" + name + "' must be an integer in [1, " + std::to_string(kMaxWindowAttr) + "]";
      out.group = g->i;
    }
    if (op.kind == OpKind::Conv) return boolOf(op, "channels_last", out.channelsLast, where);
    if (std::string e = intList(op, "output_padding", n, 0, 0, out.outputPadding, where); !e.empty()) return e;
    if (op.attr("output_shape")) {
      // The result's spatial sizes as ONNX states them; the pads follow from them (Window.h), so both may not be given.
      if (std::string e = intList(op, "output_shape", n, 0, 0, out.outputShape, where); !e.empty()) return e;
      if (op.attr("pads")) {
        where = op.attr("pads")->loc;
        return "'conv_transpose' takes 'pads' or 'output_shape', not both (the pads follow from the output shape)";
      }
    }
    where = op.loc;
    return "";
  }
  const Attribute* k = op.attr("kind");
  if (!k) return "'pool' needs attribute 'kind' (\"max\", \"avg\" or \"argmax\")";
  where = k->loc;
  if (k->kind != Attribute::Kind::String || (k->s != "max" && k->s != "avg" && k->s != "argmax"))
    return "attribute 'kind' of 'pool' must be \"max\", \"avg\" or \"argmax\"";
  out.isMax = k->s == "max";
  out.isArgmax = k->s == "argmax";
  if (!op.attr("kernel_shape")) {
    where = op.loc;
    return "'pool' needs attribute 'kernel_shape' (one size per spatial dim)";
  }
  if (std::string e = intList(op, "kernel_shape", n, 1, 1, out.kernel, where); !e.empty()) return e;
  if (std::string e = boolOf(op, "ceil_mode", out.ceilMode, where); !e.empty()) return e;
  if (std::string e = boolOf(op, "count_include_pad", out.countIncludePad, where); !e.empty()) return e;
  if (std::string e = boolOf(op, "channels_last", out.channelsLast, where); !e.empty()) return e;
  if ((out.isMax || out.isArgmax) && op.attr("count_include_pad")) {
    where = op.attr("count_include_pad")->loc;
    return "attribute 'count_include_pad' is for kind = \"avg\" only";
  }
  if (const Attribute* so = op.attr("storage_order")) {
    where = so->loc;
    if (!out.isArgmax) return "attribute 'storage_order' is for kind = \"argmax\" only";
    if (so->kind != Attribute::Kind::Int || (so->i != 0 && so->i != 1))
      return "attribute 'storage_order' of 'pool' must be 0 (row-major) or 1 (column-major)";
    out.storageOrder = so->i;
  }
  // The indices number the channels-first operand (ONNX's), which a channels-last operand does not hold; the
  // layout pass leaves argmax pools channels-first (passes/ChannelsLast.cpp).
  if (out.isArgmax && out.channelsLast) {
    where = op.attr("channels_last")->loc;
    return "kind = \"argmax\" has no channels_last form (its indices number the channels-first operand)";
  }
  where = op.loc;
  return "";
}

bool isChannelsLast(const Operation& op) {
  const Attribute* a = op.attr("channels_last");
  return a && a->kind == Attribute::Kind::Bool && a->b;
}

std::vector<int64_t> channelsLastPerm(size_t r) {
  std::vector<int64_t> p = {0};
  for (size_t i = 2; i < r; ++i) p.push_back(int64_t(i));
  if (r > 1) p.push_back(1);
  return p;
}

std::vector<int64_t> channelsFirstPerm(size_t r) {
  std::vector<int64_t> p = {0};
  if (r > 1) p.push_back(int64_t(r - 1));
  for (size_t i = 1; i + 1 < r; ++i) p.push_back(int64_t(i));
  return p;
}

DimExpr windowSpan(const WindowAttrs& a, size_t i, const DimExpr& k) {
  return DimExpr(a.dilations[i]) * (k - DimExpr(1)) + DimExpr(1);
}

namespace {

// SAME: the total padding that makes ceil(in / s) windows fit.
DimExpr sameTotal(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  DimExpr s(a.strides[i]);
  DimExpr out = DimExpr::ceilDiv(in, s);
  return DimExpr::max(DimExpr(0), (out - DimExpr(1)) * s + windowSpan(a, i, k) - in);
}

}  // namespace

DimExpr windowPadBegin(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  switch (a.autoPad) {
    case AutoPad::Explicit: return DimExpr(a.padsBegin[i]);
    case AutoPad::Valid: return DimExpr(0);
    case AutoPad::SameUpper: return DimExpr::floorDiv(sameTotal(a, i, in, k), DimExpr(2));
    case AutoPad::SameLower: {
      DimExpr t = sameTotal(a, i, in, k);
      return t - DimExpr::floorDiv(t, DimExpr(2));
    }
  }
  return DimExpr(0);
}

DimExpr windowPadEnd(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  switch (a.autoPad) {
    case AutoPad::Explicit: return DimExpr(a.padsEnd[i]);
    case AutoPad::Valid: return DimExpr(0);
    case AutoPad::SameUpper: case AutoPad::SameLower:
      return sameTotal(a, i, in, k) - windowPadBegin(a, i, in, k);
  }
  return DimExpr(0);
}

DimExpr windowPaddedIn(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  return in + windowPadBegin(a, i, in, k) + windowPadEnd(a, i, in, k);
}

DimExpr windowLeastRoom(const WindowAttrs& a, size_t i, const DimExpr& k) {
  DimExpr span = windowSpan(a, i, k);
  if (!a.ceilMode || a.autoPad != AutoPad::Explicit) return span;
  return span - DimExpr(a.strides[i] - 1);
}

DimExpr windowOutDim(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  DimExpr s(a.strides[i]);
  if (a.autoPad == AutoPad::SameUpper || a.autoPad == AutoPad::SameLower) return DimExpr::ceilDiv(in, s);
  DimExpr room = windowPaddedIn(a, i, in, k) - windowSpan(a, i, k);
  if (!a.ceilMode || a.autoPad == AutoPad::Valid) return DimExpr::floorDiv(room, s) + DimExpr(1);
  DimExpr lastStart = DimExpr::floorDiv(in + windowPadBegin(a, i, in, k) - DimExpr(1), s);
  return DimExpr::min(DimExpr::ceilDiv(room, s), lastStart) + DimExpr(1);
}

namespace {

// conv_transpose's total derived padding along dim i for a result of size `out` (ONNX's total_padding).
DimExpr transposeTotal(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k, const DimExpr& out) {
  return DimExpr(a.strides[i]) * (in - DimExpr(1)) + DimExpr(a.outputPadding[i]) + windowSpan(a, i, k) - out;
}

// The derived pads' result size: output_shape, else in*stride for SAME; nullopt when the pads are stated.
std::optional<DimExpr> derivedOut(const WindowAttrs& a, size_t i, const DimExpr& in) {
  if (!a.outputShape.empty()) return DimExpr(a.outputShape[i]);
  if (a.autoPad == AutoPad::SameUpper || a.autoPad == AutoPad::SameLower) return in * DimExpr(a.strides[i]);
  return std::nullopt;
}

}  // namespace

DimExpr transposePadBegin(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  if (auto out = derivedOut(a, i, in)) {
    DimExpr t = transposeTotal(a, i, in, k, *out), half = DimExpr::floorDiv(t, DimExpr(2));
    // ONNX: SAME_UPPER puts the odd unit at the end; NOTSET (output_shape) and SAME_LOWER at the start.
    return a.autoPad == AutoPad::SameUpper ? half : t - half;
  }
  return a.autoPad == AutoPad::Valid ? DimExpr(0) : DimExpr(a.padsBegin[i]);
}

DimExpr transposePadEnd(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  if (auto out = derivedOut(a, i, in)) {
    DimExpr t = transposeTotal(a, i, in, k, *out);
    // Cut from the full result, output_padding included: the total minus the begin pad, less output_padding.
    return t - transposePadBegin(a, i, in, k) - DimExpr(a.outputPadding[i]);
  }
  DimExpr pe = a.autoPad == AutoPad::Valid ? DimExpr(0) : DimExpr(a.padsEnd[i]);
  return pe - DimExpr(a.outputPadding[i]);
}

DimExpr transposeOutDim(const WindowAttrs& a, size_t i, const DimExpr& in, const DimExpr& k) {
  if (auto out = derivedOut(a, i, in)) return *out;
  return DimExpr(a.strides[i]) * (in - DimExpr(1)) + windowSpan(a, i, k) - transposePadBegin(a, i, in, k) -
         transposePadEnd(a, i, in, k);
}

}  // namespace dscc
