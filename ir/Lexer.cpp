// The lexer of the textual IR.
#include "ir/Lexer.h"

#include <cctype>
#include <cstdio>

namespace dscc {

std::string tokName(Tok k) {
  switch (k) {
    case Tok::Eof: return "end of file";
    case Tok::Ident: return "identifier";
    case Tok::ValueName: return "value name";
    case Tok::FuncName: return "function name";
    case Tok::Int: return "integer";
    case Tok::Float: return "float";
    case Tok::String: return "string";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::Less: return "'<'";
    case Tok::Greater: return "'>'";
    case Tok::Comma: return "','";
    case Tok::Colon: return "':'";
    case Tok::Equal: return "'='";
    case Tok::Arrow: return "'->'";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::Percent: return "'%'";
    case Tok::Question: return "'?'";
    case Tok::EqEq: return "'=='";
    case Tok::NotEq: return "'!='";
    case Tok::LessEq: return "'<='";
    case Tok::GreaterEq: return "'>='";
    case Tok::Error: return "invalid token";
  }
  return "token";
}

namespace {
bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}
}  // namespace

std::vector<Token> lex(const SourceMgr& sm, int file, DiagEngine& diags) {
  const std::string& s = sm.text(file);
  std::vector<Token> out;
  size_t i = 0;
  int line = 1, col = 1;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < s.size(); ++k, ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r') {
      advance(1);
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    Token t;
    t.loc = {file, line, col};
    size_t start = i;
    if ((c == '%' || c == '@') && i + 1 < s.size() && isIdentChar(s[i + 1])) {
      advance(1);
      while (i < s.size() && isIdentChar(s[i])) advance(1);
      t.kind = c == '%' ? Tok::ValueName : Tok::FuncName;
      t.text = s.substr(start + 1, i - start - 1);
    } else if (isIdentStart(c)) {
      while (i < s.size() && isIdentChar(s[i])) advance(1);
      t.kind = Tok::Ident;
      t.text = s.substr(start, i - start);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      bool isFloat = false;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) advance(1);
      if (i < s.size() && s[i] == '.') {
        isFloat = true;
        advance(1);
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) advance(1);
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
          isFloat = true;
          advance(j - i);
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) advance(1);
        }
      }
      t.kind = isFloat ? Tok::Float : Tok::Int;
      t.text = s.substr(start, i - start);
      if (i < s.size() && isIdentStart(s[i])) {
        while (i < s.size() && isIdentChar(s[i])) advance(1);
        diags.error(t.loc, "invalid number '" + s.substr(start, i - start) + "'");
        t.kind = Tok::Error;
      }
    } else if (c == '"') {
      advance(1);
      std::string v;
      bool closed = false;
      while (i < s.size() && s[i] != '\n') {
        if (s[i] == '"') {
          closed = true;
          advance(1);
          break;
        }
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] != '\n') {
          char e = s[i + 1];
          v += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          advance(2);
          continue;
        }
        v += s[i];
        advance(1);
      }
      if (!closed) {
        diags.error(t.loc, "unterminated string");
        t.kind = Tok::Error;
      } else {
        t.kind = Tok::String;
        t.text = v;
      }
    } else {
      auto two = [&](char a, char b) { return c == a && i + 1 < s.size() && s[i + 1] == b; };
      size_t n = 1;
      if (two('-', '>')) { t.kind = Tok::Arrow; n = 2; }
      else if (two('=', '=')) { t.kind = Tok::EqEq; n = 2; }
      else if (two('!', '=')) { t.kind = Tok::NotEq; n = 2; }
      else if (two('<', '=')) { t.kind = Tok::LessEq; n = 2; }
      else if (two('>', '=')) { t.kind = Tok::GreaterEq; n = 2; }
      else {
        switch (c) {
          case '(': t.kind = Tok::LParen; break;
          case ')': t.kind = Tok::RParen; break;
          case '[': t.kind = Tok::LBracket; break;
          case ']': t.kind = Tok::RBracket; break;
          case '{': t.kind = Tok::LBrace; break;
          case '}': t.kind = Tok::RBrace; break;
          case '<': t.kind = Tok::Less; break;
          case '>': t.kind = Tok::Greater; break;
          case ',': t.kind = Tok::Comma; break;
          case ':': t.kind = Tok::Colon; break;
          case '=': t.kind = Tok::Equal; break;
          case '+': t.kind = Tok::Plus; break;
          case '-': t.kind = Tok::Minus; break;
          case '*': t.kind = Tok::Star; break;
          case '/': t.kind = Tok::Slash; break;
          case '%': t.kind = Tok::Percent; break;
          case '?': t.kind = Tok::Question; break;
          default: {
            // One error per run of bad bytes (a UTF-8 character is several).
            size_t j = i;
            while (j < s.size() && static_cast<unsigned char>(s[j]) >= 0x80) ++j;
            n = j > i ? j - i : 1;
            std::string shown = s.substr(i, n);
            // A control byte (NUL, ESC) is shown as \xNN, not written raw to the terminal.
            if (n == 1 && (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f)) {
              char hex[8];
              std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(s[i]));
              shown = hex;
            }
            diags.error(t.loc, "unexpected character '" + shown + "'");
            t.kind = Tok::Error;
          }
        }
      }
      t.text = s.substr(start, n);
      advance(n);
    }
    out.push_back(t);
  }
  Token eof;
  eof.kind = Tok::Eof;
  eof.loc = {file, line, col};
  out.push_back(eof);
  return out;
}

}  // namespace dscc
