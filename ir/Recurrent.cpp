// The attributes of the recurrent op `rnn` (declared in Recurrent.h).
#include "ir/Recurrent.h"

namespace dscc {
namespace {

// A string attribute that must be one of `names` (index into it), `dflt` when absent (-1: required).
std::string oneOf(const Operation& op, const char* name, std::initializer_list<const char*> names, int dflt, int& out,
                  Location& where) {
  const Attribute* a = op.attr(name);
  std::string list;
  for (const char* n : names) list += (list.empty() ? "\"" : ", \"") + std::string(n) + "\"";
  std::string head = "attribute '" + std::string(name) + "' of 'rnn'";
  if (!a) {
    if (dflt < 0) return "'rnn' needs attribute '" + std::string(name) + "' (one of " + list + ")";
    out = dflt;
    return "";
  }
  where = a->loc;
  if (a->kind == Attribute::Kind::String) {
    int i = 0;
    for (const char* n : names) {
      if (a->s == n) {
        out = i;
        return "";
      }
      ++i;
    }
  }
  return head + " must be one of " + list + (a->kind == Attribute::Kind::String ? ", not \"" + a->s + "\"" : "");
}

}  // namespace

const char* rnnCellName(RnnCell c) { return c == RnnCell::Lstm ? "lstm" : c == RnnCell::Gru ? "gru" : "rnn"; }
const char* rnnDirectionName(RnnDirection d) {
  return d == RnnDirection::Forward ? "forward" : d == RnnDirection::Reverse ? "reverse" : "bidirectional";
}
const char* rnnOutputName(RnnOutput o) { return o == RnnOutput::Y ? "y" : o == RnnOutput::YH ? "y_h" : "y_c"; }

std::string readRnnAttrs(const Operation& op, RnnAttrs& out, Location& where) {
  out = RnnAttrs();
  where = op.loc;
  int v = 0;
  if (std::string e = oneOf(op, "cell", {"lstm", "gru", "rnn"}, -1, v, where); !e.empty()) return e;
  out.cell = static_cast<RnnCell>(v);
  if (std::string e = oneOf(op, "direction", {"forward", "reverse", "bidirectional"}, 0, v, where); !e.empty()) return e;
  out.direction = static_cast<RnnDirection>(v);
  if (std::string e = oneOf(op, "output", {"y", "y_h", "y_c"}, 0, v, where); !e.empty()) return e;
  out.output = static_cast<RnnOutput>(v);
  if (out.output == RnnOutput::YC && out.cell != RnnCell::Lstm)
    return "output = \"y_c\" (the cell state) needs cell = \"lstm\"";
  const Attribute* h = op.attr("hidden_size");
  if (!h) return "'rnn' needs attribute 'hidden_size' (an integer >= 1)";
  where = h->loc;
  if (h->kind != Attribute::Kind::Int || h->i < 1 || h->i > 2147483647)
    return "attribute 'hidden_size' of 'rnn' must be an integer in [1, 2^31-1]";
  out.hidden = h->i;
  if (const Attribute* l = op.attr("linear_before_reset")) {
    where = l->loc;
    if (l->kind != Attribute::Kind::Bool) return "attribute 'linear_before_reset' of 'rnn' must be true or false";
    if (l->b && out.cell != RnnCell::Gru) return "attribute 'linear_before_reset' of 'rnn' applies to cell = \"gru\" only";
    out.linearBeforeReset = l->b;
  }
  where = op.loc;
  return "";
}

}  // namespace dscc
