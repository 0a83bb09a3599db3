// Tokens of the textual IR and the lexer that produces them.
#pragma once

#include <string>
#include <vector>

#include "ir/Diagnostics.h"

namespace dscc {

/// Token kinds. Punctuation kinds are named after their spelling.
enum class Tok {
  Eof, Ident, ValueName /* %x */, FuncName /* @f */, Int, Float, String,
  LParen, RParen, LBracket, RBracket, LBrace, RBrace, Less, Greater, Comma, Colon,
  Equal, Arrow, Plus, Minus, Star, Slash, Percent, Question, EqEq, NotEq, LessEq,
  GreaterEq, Error
};

/// One token with its text (for names: without the sigil; for strings:
/// unescaped contents) and location.
struct Token {
  Tok kind = Tok::Eof;
  std::string text;
  Location loc;
};

/// Splits buffer `file` into tokens. Bad characters and unterminated strings
/// are reported to `diags` and produce an Error token, so parsing continues.
std::vector<Token> lex(const SourceMgr& sm, int file, DiagEngine& diags);

/// Human-readable name of a token kind for "expected X" messages.
std::string tokName(Tok k);

}  // namespace dscc
