// Helpers for passes that rewrite the IR: uses, replacement, fresh names, new ops.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/Diagnostics.h"
#include "ir/IR.h"

namespace dscc {

/// Replaces every use of `from` by `to`: operands (also inside fusion
/// bodies), fusion yields and the function's return values.
void replaceAllUses(Function& f, const Value* from, Value* to);
/// The ops (also inside fusion bodies) that use `v` as an operand, in
/// program order, each once.
std::vector<Operation*> usersOf(const Function& f, const Value* v);
/// True if `v` is returned by the function.
bool isReturned(const Function& f, const Value* v);
/// True if `v` has no use at all (operands, yields, returns).
bool isUnused(const Function& f, const Value* v);
/// A value name not used in `f`: `base` itself if free, else `base.1`, `base.2`, ...
std::string freshName(const Function& f, const std::string& base);

/// Builds an op (not yet inserted) with one result named `name` (made fresh)
/// and infers its type, or checks `type` when given. Reports to `diags` and
/// returns null if the op does not verify.
std::unique_ptr<Operation> makeOp(Function& f, OpKind kind, std::vector<Value*> operands,
                                  std::vector<std::pair<std::string, Attribute>> attrs,
                                  const std::string& name, Location loc, DiagEngine& diags,
                                  std::optional<Type> type = std::nullopt);
/// A scalar constant `constant V : DTYPE[]` (float value, converted for integer dtypes).
std::unique_ptr<Operation> makeScalarConstant(Function& f, DType dt, double v, const std::string& name,
                                              Location loc, DiagEngine& diags);

}  // namespace dscc
