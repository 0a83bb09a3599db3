// Facts about the elements of a value that follow from the ops computing it.
#include "ir/ValueFacts.h"

#include "ir/IndexMap.h"

namespace dscc {

namespace {

// Bounded depth: the answer is only an optimisation, and a deep chain of
// adds must not cost more than its ops (each operand is visited once per
// path, so an unbounded walk over a DAG could be exponential).
bool nonNegativeAt(const Value* v, int depth) {
  if (!v || !v->def || depth > 12) return false;
  const Operation& op = *v->def;
  if (!isFloat(v->type.dtype)) return false;
  auto operand = [&](size_t i) { return i < op.operands.size() && nonNegativeAt(op.operands[i], depth + 1); };
  switch (op.kind) {
    case OpKind::Exp:
    case OpKind::Abs:
    case OpKind::Sqrt:
    case OpKind::Sigmoid:
    case OpKind::Relu: return true;
    case OpKind::Mul:
      return (op.operands.size() == 2 && op.operands[0] == op.operands[1]) || (operand(0) && operand(1));
    case OpKind::Add:
    case OpKind::Div:
    case OpKind::Min: return operand(0) && operand(1);
    case OpKind::Max: return operand(0) || operand(1);
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::BroadcastTo:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceMean: return operand(0);
    default: return false;
  }
}

}  // namespace

bool nonNegative(const Value* v) { return nonNegativeAt(v, 0); }

bool nonPositive(const Value* v) {
  if (!v || !v->def || !isFloat(v->type.dtype)) return false;
  const Operation& op = *v->def;
  if (op.kind == OpKind::Neg) return nonNegative(op.operands[0]);
  if (op.kind != OpKind::Sub || op.operands.size() != 2) return false;
  // With keepdims the maximum has the operand's rank and 1s at the reduced
  // axes, so broadcasting pairs each element with the maximum of the
  // elements it was reduced with, itself among them. Rounding is monotonic:
  // a <= m gives a - m <= 0.
  const Value* m = op.operands[1];
  const Operation* red = m->def;
  return red && red->kind == OpKind::ReduceMax && keepsDims(*red) && red->operands.size() == 1 &&
         red->operands[0] == op.operands[0] && m->type.rank() == op.operands[0]->type.rank();
}

}  // namespace dscc
