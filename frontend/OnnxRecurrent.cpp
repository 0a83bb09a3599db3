// ONNX's recurrent operators as dscc's `rnn` op: LSTM, GRU and RNN, one `rnn` per output the node names.
#include <cctype>

#include <onnx/onnx_pb.h>

#include "frontend/OnnxBuilder.h"
#include "frontend/OnnxInternal.h"
#include "ir/Recurrent.h"

namespace dscc::frontend {

namespace {

bool present(const onnx::NodeProto& n, int i) { return n.input_size() > i && !n.input(i).empty(); }

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// ONNX's activations list, accepted only when it spells out the defaults (per direction): other
// activations, alphas and betas are refused, not guessed.
void checkActivations(const onnx::NodeProto& n, RnnCell cell, int64_t dirs) {
  if (const onnx::AttributeProto* a = findAttr(n, "activations")) {
    std::vector<std::string> one = cell == RnnCell::Lstm ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
                                   : cell == RnnCell::Gru ? std::vector<std::string>{"sigmoid", "tanh"}
                                                          : std::vector<std::string>{"tanh"};
    std::string got;
    bool ok = a->strings_size() == static_cast<int>(one.size() * dirs);
    for (int i = 0; i < a->strings_size(); ++i) {
      got += (i ? ", " : "") + a->strings(i);
      if (ok && lower(a->strings(i)) != one[i % one.size()]) ok = false;
    }
    if (!ok) {
      std::string want;
      for (int64_t d = 0; d < dirs; ++d)
        for (const auto& s : one) want += (want.empty() ? "" : ", ") + s;
      throw ImportError("attribute 'activations' = [" + got + "] is not supported; only the defaults [" + want +
                        "] are");
    }
  }
  for (const char* name : {"activation_alpha", "activation_beta"})
    if (const onnx::AttributeProto* a = findAttr(n, name); a && a->floats_size() > 0)
      throw ImportError("attribute '" + std::string(name) + "' is not supported (default activations only)");
}

void recurrent(NodeBuilder& b, const onnx::NodeProto& n, RnnCell cell) {
  const std::string& op = n.op_type();
  std::string dir = attrString(n, "direction", "forward");
  RnnDirection direction = dir == "forward"         ? RnnDirection::Forward
                           : dir == "reverse"       ? RnnDirection::Reverse
                           : dir == "bidirectional" ? RnnDirection::Bidirectional
                                                    : throw ImportError("attribute 'direction' = '" + dir +
                                                                        "' is not one of forward, reverse, bidirectional");
  const int64_t dirs = direction == RnnDirection::Bidirectional ? 2 : 1;
  const int64_t gates = cell == RnnCell::Lstm ? 4 : cell == RnnCell::Gru ? 3 : 1;
  checkActivations(n, cell, dirs);
  if (findAttr(n, "clip")) throw ImportError("attribute 'clip' is not supported (cell values are not clipped)");
  if (cell == RnnCell::Lstm && attrInt(n, "input_forget", 0) != 0)
    throw ImportError("attribute 'input_forget' = 1 (coupled input and forget gates) is not supported");
  const int64_t layout = attrInt(n, "layout", 0);
  if (layout != 0 && layout != 1) throw ImportError("attribute 'layout' must be 0 or 1, got " + std::to_string(layout));
  // sequence_lens: every batch entry would need its own length; dscc runs the whole sequence for all, so
  // the input is refused rather than ignored (docs/onnx.md).
  if (present(n, 4))
    throw ImportError("input 'sequence_lens' ('" + n.input(4) + "') is not supported: every sequence must be the full length");
  if (cell == RnnCell::Lstm && present(n, 7))
    throw ImportError("input 'P' (peephole weights, '" + n.input(7) + "') is not supported");

  Value* x = b.in(0);
  Value* w = b.in(1);
  if (x->type.rank() != 3) throw ImportError(op + " needs an input X of rank 3, got " + x->type.str());
  if (w->type.rank() != 3) throw ImportError(op + " needs a weight W of rank 3, got " + w->type.str());
  int64_t hidden = attrInt(n, "hidden_size", 0);
  if (!findAttr(n, "hidden_size")) {
    // Optional in ONNX: W's rows are gates * hidden_size.
    const DimExpr& rows = w->type.dims[1];
    if (!rows.isConst() || rows.constValue() % gates != 0)
      throw ImportError("attribute 'hidden_size' is missing and W " + w->type.str() + " does not give it");
    hidden = rows.constValue() / gates;
  }
  if (hidden < 1) throw ImportError("attribute 'hidden_size' must be >= 1, got " + std::to_string(hidden));
  // layout 1 (batch first): transposed to dscc's [seq, batch, ...] on the way in and back on the way out.
  if (layout == 1) x = b.transpose(x, {1, 0, 2});
  const DimExpr batch = x->type.dims[1];
  std::vector<Value*> ops{x, w, b.in(2)};
  const bool hasH = present(n, 5), hasC = cell == RnnCell::Lstm && present(n, 6);
  // Operands are positional (x, w, r, b, initial_h, initial_c): a later one given makes the earlier ones zeros.
  auto zeros = [&](std::vector<DimExpr> d, const char* name) {
    return b.c.emit(OpKind::BroadcastTo, {b.k(x, 0.0)}, {}, Type{x->type.dtype, std::move(d)}, name);
  };
  if (present(n, 3)) ops.push_back(b.in(3));
  else if (hasH || hasC) ops.push_back(zeros({DimExpr(dirs), DimExpr(2 * gates * hidden)}, "zero_bias"));
  auto state = [&](int i) {
    if (!present(n, i)) return zeros({DimExpr(dirs), batch, DimExpr(hidden)}, "zero_state");
    Value* v = b.in(i);
    return layout == 1 && v->type.rank() == 3 ? b.transpose(v, {1, 0, 2}) : v;
  };
  if (hasH || hasC) ops.push_back(state(5));
  if (hasC) ops.push_back(state(6));
  Attrs a{{"cell", Attribute::makeString(rnnCellName(cell))},
          {"direction", Attribute::makeString(rnnDirectionName(direction))},
          {"hidden_size", Attribute::makeInt(hidden)}};
  if (cell == RnnCell::Gru && attrInt(n, "linear_before_reset", 0) != 0)
    a.push_back({"linear_before_reset", Attribute::makeBool(true)});
  const int outs = std::min(n.output_size(), cell == RnnCell::Lstm ? 3 : 2);
  for (int i = 0; i < outs; ++i) {
    if (n.output(i).empty()) continue;
    RnnOutput o = static_cast<RnnOutput>(i);
    Attrs ai = a;
    if (o != RnnOutput::Y) ai.push_back({"output", Attribute::makeString(rnnOutputName(o))});
    Value* v = b.c.emit(OpKind::Rnn, ops, ai, std::nullopt, n.output(i));
    if (layout == 1) v = b.transpose(v, o == RnnOutput::Y ? std::vector<int64_t>{2, 0, 1, 3} : std::vector<int64_t>{1, 0, 2});
    b.out(v, i);
  }
}

}  // namespace

bool convertRecurrent(Ctx& c, const onnx::NodeProto& n) {
  NodeBuilder b{c, n};
  const std::string& op = n.op_type();
  if (op == "LSTM") recurrent(b, n, RnnCell::Lstm);
  else if (op == "GRU") recurrent(b, n, RnnCell::Gru);
  else if (op == "RNN") recurrent(b, n, RnnCell::Rnn);
  else return false;
  return true;
}

}  // namespace dscc::frontend
