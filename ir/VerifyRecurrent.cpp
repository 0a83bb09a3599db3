// Verification and result-type inference of the recurrent op `rnn` (attributes in ir/Recurrent.h).
#include "ir/Recurrent.h"
#include "ir/VerifierInternal.h"

namespace dscc::verifier_detail {

bool OpChecker::inferRnn() {
  RnnAttrs a;
  Location where;
  if (std::string e = readRnnAttrs(op_, a, where); !e.empty()) return err(where, e);
  static const char* const roles[] = {"input x", "weight w", "recurrence r", "bias b", "initial_h", "initial_c"};
  const size_t n = op_.operands.size();
  if (n == 6 && a.cell != RnnCell::Lstm)
    return err("'rnn' with cell = \"" + std::string(rnnCellName(a.cell)) + "\" takes no initial_c (6th operand)");
  for (size_t i = 1; i < n; ++i)
    if (!sameDType(0, i)) return false;
  const Type& x = in(0);
  if (x.rank() != 3) return err("the input x of 'rnn' must have rank 3 ([seq, batch, input]), but " + operandName(0) + " is " + x.str());
  const DimExpr D(a.dirs()), GH(a.gates() * a.hidden), H(a.hidden);
  const DimExpr &S = x.dims[0], &N = x.dims[1], &I = x.dims[2];
  // Each operand's expected dims, with what the dim means for messages.
  struct Want { std::vector<DimExpr> dims; std::vector<const char*> what; };
  const std::string shapeOf[] = {"", "[dirs, gates*hidden, input]", "[dirs, gates*hidden, hidden]", "[dirs, 2*gates*hidden]",
                                 "[dirs, batch, hidden]", "[dirs, batch, hidden]"};
  const Want wants[] = {{},
                        {{D, GH, I}, {"directions", "gates times hidden_size", "input size"}},
                        {{D, GH, H}, {"directions", "gates times hidden_size", "hidden_size"}},
                        {{D, DimExpr(2) * GH}, {"directions", "2 times gates times hidden_size"}},
                        {{D, N, H}, {"directions", "batch", "hidden_size"}},
                        {{D, N, H}, {"directions", "batch", "hidden_size"}}};
  for (size_t i = 1; i < n; ++i) {
    const Type& t = in(i);
    const Want& w = wants[i];
    if (t.rank() != w.dims.size())
      return err("the " + std::string(roles[i]) + " of 'rnn' must have rank " + std::to_string(w.dims.size()) + " (" +
                 shapeOf[i] + "), but " + operandName(i) + " is " + t.str());
    for (size_t d = 0; d < w.dims.size(); ++d) {
      std::string what = "dim " + std::to_string(d) + " of the " + roles[i] + " of 'rnn' (" + w.what[d] + ", " +
                         w.dims[d].str() + " for " + rnnCellName(a.cell) + ", " + rnnDirectionName(a.direction) +
                         ", hidden_size " + std::to_string(a.hidden) + ")";
      if (!checkEqualDims(t.dims[d], w.dims[d], what + " does not match " + operandName(i) + " " + t.str(),
                          what + " matches"))
        return false;
    }
  }
  if (a.output == RnnOutput::Y) setResult(Type{x.dtype, {S, D, N, H}});
  else setResult(Type{x.dtype, {D, N, H}});
  return true;
}

}  // namespace dscc::verifier_detail
