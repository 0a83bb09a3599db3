// The parser of the textual IR (`.dsc`), with error recovery.
#pragma once

#include <memory>

#include "ir/Diagnostics.h"
#include "ir/IR.h"

namespace dscc {

/// Parses buffer `file` of `sm`. Every error the parser can recover from is
/// reported to `diags` (it skips to the next line / op / function). Result
/// types are inferred or checked op by op as they are parsed (see Verifier.h).
/// Returns null if any error was reported.
std::unique_ptr<Module> parseModule(const SourceMgr& sm, int file, DiagEngine& diags);

/// Parses a dim expression from text (e.g. "B*S+1"); nullopt with `err` on failure.
std::optional<DimExpr> parseDimExpr(const std::string& text, std::string* err);

}  // namespace dscc
