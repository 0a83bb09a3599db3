// The foldConstants pass.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "ir/IR.h"
#include "ir/Tensor.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Evaluates, in program order, every op (not check, fusion, constant, dim, nor
/// the operand-less iota, which is already as cheap as a constant) whose
/// operands all come from inline `constant` ops (a literal, splat or dense
/// value; not a file) with fully static types of at most 1024 elements, and
/// whose static result has at most 1024 elements. The op runs alone in the
/// reference interpreter and becomes, in place (same name, same type), a
/// `constant` holding the result: a scalar literal for rank 0, else
/// dense<...>. Floats print as the shortest decimal that rounds back to the
/// same element. An op the interpreter rejects (integer division by zero, an
/// out-of-range gather index, ...) is kept so the error still happens at run
/// time. Folded ops feed later folds; the constants they read are left for
/// dce. Fusion ops and their bodies are skipped: a fusion is a kernel already
/// planned, so fold before fusing. With --stats prints how many ops it folded
/// per function.
bool foldConstants(Module& m, PassContext& ctx);

/// The value of `v` when it is computed from constants alone: `v` and every
/// op it depends on are ops outside fusions (not check, fusion nor dim; no
/// function argument) with one result of a static type of at most
/// `maxElements` elements, down to inline constants and file constants
/// already read (loadFileConstants; no file is read here). The ops run in
/// the reference interpreter, which fold-constants and fold-conv-affine thus
/// share. nullopt if some op is not such, or the interpreter rejects one
/// (its diagnostics are swallowed).
std::optional<Tensor> constantValue(const Value* v, const SourceMgr& sm, int64_t maxElements);

/// The `value` attribute of a constant holding `t`: a scalar literal for rank
/// 0, else dense<...>, floats as the shortest decimal that reads back to the
/// same element. nullopt if some element has no literal that re-parses (the
/// most negative i64: `-` then an i64 overflow).
std::optional<Attribute> literalOf(const Tensor& t);

/// Every file path the module's constants name, so that new ones do not collide.
std::set<std::string> filePaths(const Module& m);

/// A constant op (not inserted) holding `t`, named `name`: a literal when it
/// has at most 1024 elements, else a file constant whose data is `t` already,
/// its path fresh in `paths` and made from `like`'s file when it has one
/// (nothing is written; the artifact embeds the data). Null when it does not
/// verify (reported).
std::unique_ptr<Operation> makeTensorConstant(Function& f, Tensor t, const Value& like, const std::string& name,
                                              Location loc, std::set<std::string>& paths, DiagEngine& diags);

}  // namespace dscc
