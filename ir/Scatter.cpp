// The attributes of `scatter` and `cumsum` (declared in Scatter.h).
#include "ir/Scatter.h"

namespace dscc {

namespace {
constexpr const char* kReductions[] = {"none", "add", "mul", "max", "min"};
}  // namespace

const char* scatterReductionName(ScatterReduction r) { return kReductions[static_cast<int>(r)]; }

std::string readScatterReduction(const Operation& op, ScatterReduction& out, Location& where) {
  out = ScatterReduction::None;
  const Attribute* a = op.attr("reduction");
  if (!a) return "";
  where = a->loc;
  if (a->kind == Attribute::Kind::String)
    for (int i = 0; i < 5; ++i)
      if (a->s == kReductions[i]) {
        out = static_cast<ScatterReduction>(i);
        return "";
      }
  return "attribute 'reduction' of 'scatter' must be one of \"none\", \"add\", \"mul\", \"max\", \"min\"" +
         (a->kind == Attribute::Kind::String ? ", not \"" + a->s + "\"" : std::string());
}

std::string readScanAttrs(const Operation& op, size_t rank, ScanAttrs& out, Location& where) {
  out = ScanAttrs();
  const Attribute* ax = op.attr("axis");
  if (!ax) return "'cumsum' needs attribute 'axis'";
  if (ax->kind != Attribute::Kind::Int) {
    where = ax->loc;
    return "attribute 'axis' of 'cumsum' must be an integer";
  }
  int64_t r = static_cast<int64_t>(rank), v = ax->i < 0 ? ax->i + r : ax->i;
  if (v < 0 || v >= r) {
    where = ax->loc;
    return "axis " + std::to_string(ax->i) + " is out of range for rank " + std::to_string(rank) + " in 'cumsum'";
  }
  out.axis = static_cast<size_t>(v);
  for (const char* name : {"exclusive", "reverse"}) {
    const Attribute* a = op.attr(name);
    if (!a) continue;
    if (a->kind != Attribute::Kind::Bool) {
      where = a->loc;
      return "attribute '" + std::string(name) + "' of 'cumsum' must be true or false";
    }
    (name[0] == 'e' ? out.exclusive : out.reverse) = a->b;
  }
  return "";
}

}  // namespace dscc
