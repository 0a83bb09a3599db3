// The recursive-descent parser of the textual IR, with error recovery.
#include "ir/Parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

#include "ir/Lexer.h"
#include "ir/Sizes.h"
#include "ir/Verifier.h"

namespace dscc {
namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, DiagEngine& diags) : toks_(std::move(toks)), diags_(diags) {}

  std::unique_ptr<Module> parseModule(int file);
  /// Parses one dim expression (used by parseDimExpr).
  std::optional<DimExpr> parseWholeExpr() {
    auto e = parseExpr();
    if (e && cur().kind != Tok::Eof) return error(cur().loc, "unexpected " + describe(cur()) + " after expression"), std::nullopt;
    return e;
  }

 private:
  // Thrown to abandon the current statement; the caller resynchronises.
  struct ParseError {};

  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  Token take() { return pos_ + 1 < toks_.size() ? toks_[pos_++] : toks_[pos_]; }
  bool at(Tok k) const { return cur().kind == k; }
  bool atIdent(const char* s) const { return cur().kind == Tok::Ident && cur().text == s; }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  void error(Location loc, const std::string& msg) { diags_.error(loc, msg); }
  [[noreturn]] void fail(Location loc, const std::string& msg) {
    // An Error token was already reported by the lexer; do not pile on.
    if (cur().kind != Tok::Error) error(loc, msg);
    throw ParseError{};
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::Ident: return "'" + t.text + "'";
      case Tok::ValueName: return "'%" + t.text + "'";
      case Tok::FuncName: return "'@" + t.text + "'";
      case Tok::Int: case Tok::Float: return "'" + t.text + "'";
      case Tok::String: return "string";
      default: return tokName(t.kind);
    }
  }
  Token expect(Tok k, const std::string& what) {
    if (!at(k)) fail(cur().loc, "expected " + what + ", found " + describe(cur()));
    return take();
  }
  // Skips to the first token on a later line that can start a statement.
  void syncStatement(int line) {
    while (!at(Tok::Eof)) {
      const Token& t = cur();
      if (t.loc.line > line && (t.kind == Tok::ValueName || t.kind == Tok::RBrace ||
                                (t.kind == Tok::Ident && (t.text == "return" || t.text == "func" ||
                                                          t.text == "check" || t.text == "yield"))))
        return;
      take();
    }
  }
  void syncFunction() {
    while (!at(Tok::Eof) && !atIdent("func")) take();
  }

  std::unique_ptr<Function> parseFunction();
  void parseSignature(Function& f);
  void parseFact(Function& f);
  bool parseStatement(Function& f, std::vector<std::unique_ptr<Operation>>& into);  // false after `return`
  void parseOpRest(Function& f, Operation& op);
  void parseFusionBody(Function& f, Operation& op);
  Attribute parseAttrValue();
  Attribute parseLiteral();
  Attribute parseNumber();
  Type parseType();
  std::vector<Type> parseTypeList();
  void parseResults(Function& f);
  std::optional<DimExpr> parseExpr();
  DimExpr parseExprOrFail();
  DimExpr parseSum();
  DimExpr parseProduct();
  DimExpr parseUnary();
  DimExpr parsePrimary();
  Value* lookupValue(const Token& t);
  void define(Value* v);

  // Guards recursion so deeply nested input is an error, not a stack overflow.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxDepth) p.fail(p.cur().loc, "nesting is deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };
  static constexpr int kMaxDepth = 200;
  // Bounds on one dim expression's normal form. Products expand (a product
  // of 20 sums of 9 symbols has 9^20 terms) and each `+` or `*` copies the
  // polynomial, so without them a few hundred bytes of text took minutes.
  // Real dims have a handful of terms of low degree.
  static constexpr size_t kMaxDimTerms = 1024;
  static constexpr size_t kMaxDimDegree = 256;
  static size_t degree(const DimExpr& e) {
    size_t d = 0;
    for (const DimTerm& t : e.terms()) d = std::max(d, t.atoms.size());
    return d;
  }
  void checkSize(Location l, size_t terms, size_t deg) {
    if (terms > kMaxDimTerms)
      fail(l, "dim expression is too large: " + std::to_string(terms) + " terms, over the limit of " +
                  std::to_string(kMaxDimTerms));
    if (deg > kMaxDimDegree)
      fail(l, "dim expression is too large: degree " + std::to_string(deg) + ", over the limit of " +
                  std::to_string(kMaxDimDegree));
  }
  // Checks that building an expression did not overflow 64 bits.
  void checkOverflow(Location l) {
    if (DimExpr::takeOverflow()) fail(l, "dim expression is out of range of 64-bit integers");
  }
  // A stand-in for a value whose definition failed: later uses stay quiet.
  Value* placeholder(const std::string& name, Location loc) {
    auto v = std::make_unique<Value>();
    v->name = name;
    v->loc = loc;
    v->poisoned = true;
    Value* p = v.get();
    orphans_.push_back(std::move(v));
    values_[name] = p;
    return p;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  DiagEngine& diags_;
  Function* fn_ = nullptr;
  std::map<std::string, Value*> values_;
  std::vector<std::unique_ptr<Value>> orphans_;
  int depth_ = 0;
  bool allowAnon_ = false;   // `?` is a dim only inside types
  bool quietUndefined_ = false;  // after a broken signature, unknown names are not news
};

std::optional<DimExpr> Parser::parseExpr() {
  try {
    DimExpr e = parseSum();
    checkOverflow(cur().loc);
    return e;
  } catch (ParseError&) {
    return std::nullopt;
  }
}

DimExpr Parser::parseExprOrFail() { return parseSum(); }

DimExpr Parser::parseSum() {
  DepthGuard g(*this);
  Location l = cur().loc;
  DimExpr e = parseProduct();
  while (at(Tok::Plus) || at(Tok::Minus)) {
    Location opLoc = cur().loc;
    bool plus = take().kind == Tok::Plus;
    DimExpr r = parseProduct();
    e = plus ? e + r : e - r;
    checkSize(opLoc, e.terms().size(), degree(e));
  }
  checkOverflow(l);
  return e;
}

DimExpr Parser::parseProduct() {
  DimExpr e = parseUnary();
  while (at(Tok::Star) || at(Tok::Slash) || at(Tok::Percent)) {
    Token op = take();
    DimExpr r = parseUnary();
    if (op.kind != Tok::Star && r.isConst() && r.constValue() == 0)
      fail(op.loc, std::string(op.kind == Tok::Slash ? "division" : "modulus") + " by zero in dim expression");
    // Checked before multiplying: the expansion is what costs.
    if (op.kind == Tok::Star) {
      checkSize(op.loc, e.terms().size() * r.terms().size(), degree(e) + degree(r));
      e = e * r;
    }
    else if (op.kind == Tok::Slash) {
      if (e.isConst() && r.isConst() && e.constValue() % r.constValue() != 0)
        fail(op.loc, e.str() + "/" + r.str() + " is not an exact division");
      e = DimExpr::div(e, r);
    } else {
      e = DimExpr::mod(e, r);
    }
  }
  return e;
}

DimExpr Parser::parseUnary() {
  DepthGuard g(*this);
  if (accept(Tok::Minus)) return -parseUnary();
  return parsePrimary();
}

DimExpr Parser::parsePrimary() {
  const Token& t = cur();
  if (t.kind == Tok::Int) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.text.c_str(), &end, 10);
    if (errno == ERANGE) fail(t.loc, "integer '" + t.text + "' is out of range");
    take();
    return DimExpr(static_cast<int64_t>(v));
  }
  if (t.kind == Tok::Question) {
    if (!fn_ || !allowAnon_) fail(t.loc, "'?' is only allowed in a type");
    take();
    return fn_->freshSymbol();
  }
  if (t.kind == Tok::LParen) {
    take();
    DimExpr e = parseSum();
    expect(Tok::RParen, "')'");
    return e;
  }
  if (t.kind == Tok::Ident) {
    static const char* fns[] = {"min", "max", "floordiv", "ceildiv", "bcast"};
    for (const char* fnName : fns) {
      if (t.text == fnName && peek().kind == Tok::LParen) {
        Token name = take();
        take();
        DimExpr a = parseSum();
        expect(Tok::Comma, "','");
        DimExpr b = parseSum();
        expect(Tok::RParen, "')'");
        std::string n = name.text;
        if ((n == "floordiv" || n == "ceildiv") && b.isConst() && b.constValue() == 0)
          fail(name.loc, "division by zero in dim expression");
        if (n == "min") return DimExpr::min(a, b);
        if (n == "max") return DimExpr::max(a, b);
        if (n == "floordiv") return DimExpr::floorDiv(a, b);
        if (n == "ceildiv") return DimExpr::ceilDiv(a, b);
        if (a != b && a.isConst() && b.isConst() && a.constValue() != 1 && b.constValue() != 1)
          fail(name.loc, "bcast(" + a.str() + ", " + b.str() + ") can never hold");
        return DimExpr::bcast(a, b);
      }
    }
    if (parseDType(t.text)) fail(t.loc, "dtype name '" + t.text + "' cannot be used as a symbol");
    if (t.text == "where" || t.text == "in" || t.text == "func" || t.text == "return")
      fail(t.loc, "expected dim expression, found keyword '" + t.text + "'");
    Token n = take();
    return DimExpr::symbol(n.text);
  }
  fail(t.loc, "expected dim expression, found " + describe(t));
}

Type Parser::parseType() {
  Token t = cur();
  if (t.kind != Tok::Ident) fail(t.loc, "expected type, found " + describe(t));
  auto dt = parseDType(t.text);
  if (!dt) fail(t.loc, "unknown dtype '" + t.text + "' (expected f32, f16, bf16, f64, i64, i32, i8 or i1)");
  take();
  Type ty;
  ty.dtype = *dt;
  expect(Tok::LBracket, "'[' after dtype");
  struct AnonScope {
    bool& flag;
    bool old;
    ~AnonScope() { flag = old; }
  } scope{allowAnon_, allowAnon_};
  allowAnon_ = true;
  if (!at(Tok::RBracket)) {
    do {
      Location l = cur().loc;
      DimExpr d = parseSum();
      checkOverflow(l);
      if (d.isConst() && d.constValue() < 0) fail(l, "dim " + d.str() + " is negative");
      if (ty.dims.size() == size_t(kMaxRank)) fail(l, "a type has at most " + std::to_string(kMaxRank) + " dims");
      ty.dims.push_back(d);
    } while (accept(Tok::Comma));
  }
  expect(Tok::RBracket, "']' or ',' in type");
  return ty;
}

// `-> T, ...` or `-> (T, ...)`; in parentheses a result may be named,
// `-> (logits: f32[B, V], "out:0": i64[B])`, as an imported model's outputs are.
void Parser::parseResults(Function& f) {
  bool paren = accept(Tok::LParen);
  std::map<std::string, Location> seen;
  do {
    std::string name;
    if (paren && (at(Tok::Ident) || at(Tok::String)) && peek().kind == Tok::Colon) {
      Token n = take();
      take();
      if (n.text.empty()) fail(n.loc, "a result name must not be empty");
      if (!seen.emplace(n.text, n.loc).second) fail(n.loc, "result name '" + n.text + "' is used twice");
      name = n.text;
    }
    f.resultNames.push_back(name);
    f.resultTypes.push_back(parseType());
  } while (accept(Tok::Comma));
  if (paren) expect(Tok::RParen, "')'");
}

std::vector<Type> Parser::parseTypeList() {
  std::vector<Type> out;
  bool paren = accept(Tok::LParen);
  do out.push_back(parseType());
  while (accept(Tok::Comma));
  if (paren) expect(Tok::RParen, "')'");
  return out;
}

Value* Parser::lookupValue(const Token& t) {
  auto it = values_.find(t.text);
  if (it != values_.end()) return it->second;
  if (quietUndefined_) return placeholder(t.text, t.loc);
  fail(t.loc, "use of undefined value '%" + t.text + "'");
}

void Parser::define(Value* v) {
  auto [it, fresh] = values_.emplace(v->name, v);
  if (!fresh) {
    error(v->loc, "redefinition of '%" + v->name + "'");
    diags_.note(it->second->loc, "previous definition is here");
    it->second = v;
  }
}

std::unique_ptr<Module> Parser::parseModule(int file) {
  auto m = std::make_unique<Module>();
  m->file = file;
  std::map<std::string, Location> seen;
  while (!at(Tok::Eof)) {
    if (!atIdent("func")) {
      error(cur().loc, "expected 'func', found " + describe(cur()));
      take();
      syncFunction();
      continue;
    }
    if (auto f = parseFunction()) {
      auto [it, fresh] = seen.emplace(f->name, f->loc);
      if (!fresh) {
        error(f->loc, "redefinition of function '@" + f->name + "'");
        diags_.note(it->second, "previous definition is here");
      }
      m->funcs.push_back(std::move(f));
    }
  }
  if (m->funcs.empty() && diags_.errorCount() == 0)
    error(cur().loc, "file contains no function");
  return m;
}

std::unique_ptr<Function> Parser::parseFunction() {
  auto f = std::make_unique<Function>();
  fn_ = f.get();
  values_.clear();
  quietUndefined_ = false;
  int errorsBefore = diags_.errorCount();
  f->loc = take().loc;  // 'func'
  try {
    parseSignature(*f);
  } catch (ParseError&) {
    quietUndefined_ = true;
    // Resynchronise at the body if we can find it, else at the next function.
    while (!at(Tok::Eof) && !at(Tok::LBrace) && !atIdent("func")) take();
    if (!at(Tok::LBrace)) return nullptr;
    take();
  }
  bool returned = false;
  while (!at(Tok::Eof) && !at(Tok::RBrace)) {
    if (atIdent("func")) break;
    int line = cur().loc.line;
    bool isReturn = atIdent("return");
    try {
      if (returned) fail(cur().loc, "operation after 'return'");
      returned = !parseStatement(*f, f->ops);
    } catch (ParseError&) {
      returned |= isReturn;
      syncStatement(line);
    }
  }
  if (!accept(Tok::RBrace)) error(cur().loc, "expected '}' at the end of function '@" + f->name + "'");
  // A function with other errors may have lost its return to recovery.
  if (!returned && diags_.errorCount() == errorsBefore)
    error(f->loc, "function '@" + f->name + "' has no 'return'");
  fn_ = nullptr;
  return f;
}

void Parser::parseSignature(Function& f) {
  Token name = expect(Tok::FuncName, "function name like '@main'");
  f.name = name.text;
  f.loc = name.loc;
  expect(Tok::LParen, "'('");
  if (!at(Tok::RParen)) {
    do {
      Token a = expect(Tok::ValueName, "argument name like '%x'");
      expect(Tok::Colon, "':' after argument name");
      auto v = std::make_unique<Value>();
      v->name = a.text;
      v->loc = a.loc;
      v->type = parseType();
      v->index = static_cast<int>(f.args.size());
      define(v.get());
      f.args.push_back(std::move(v));
    } while (accept(Tok::Comma));
  }
  expect(Tok::RParen, "')' or ',' after argument");
  expect(Tok::Arrow, "'->' and result types");
  parseResults(f);
  if (atIdent("where")) {
    take();
    do parseFact(f);
    while (accept(Tok::Comma));
  }
  expect(Tok::LBrace, "'{' to start the body");
}

void Parser::parseFact(Function& f) {
  Fact fact;
  fact.loc = cur().loc;
  fact.lhs = parseSum();
  if (atIdent("in")) {
    take();
    fact.kind = Fact::Kind::Range;
    expect(Tok::LBracket, "'[' after 'in'");
    fact.rhs = parseSum();
    expect(Tok::Comma, "','");
    fact.hi = parseSum();
    expect(Tok::RBracket, "']'");
  } else {
    static const std::pair<Tok, CmpOp> ops[] = {{Tok::EqEq, CmpOp::Eq}, {Tok::NotEq, CmpOp::Ne},
                                                {Tok::Less, CmpOp::Lt}, {Tok::LessEq, CmpOp::Le},
                                                {Tok::Greater, CmpOp::Gt}, {Tok::GreaterEq, CmpOp::Ge}};
    bool found = false;
    for (auto [t, op] : ops)
      if (at(t)) {
        take();
        fact.op = op;
        found = true;
        break;
      }
    if (!found) fail(cur().loc, "expected 'in' or a comparison in fact, found " + describe(cur()));
    fact.rhs = parseSum();
  }
  f.facts.push_back(fact);
}

bool Parser::parseStatement(Function& f, std::vector<std::unique_ptr<Operation>>& into) {
  if (atIdent("yield")) fail(cur().loc, "'yield' outside a fusion body");
  if (atIdent("return")) {
    f.returnLoc = take().loc;
    int line = f.returnLoc.line;
    if (at(Tok::ValueName) || cur().loc.line == line) {
      do f.returns.push_back(lookupValue(expect(Tok::ValueName, "value to return")));
      while (accept(Tok::Comma));
    }
    return false;
  }
  std::vector<Token> names;
  // An op without results (`check {...}`) starts with its name.
  if (!at(Tok::Ident)) {
    do names.push_back(expect(Tok::ValueName, "'%name =' or 'return'"));
    while (accept(Tok::Comma));
    expect(Tok::Equal, "'=' after result name");
  }
  Token opTok = cur();
  auto kind = opTok.kind == Tok::Ident ? lookupOp(opTok.text) : std::nullopt;
  if (!kind) {
    for (const Token& n : names) placeholder(n.text, n.loc);
    if (opTok.kind != Tok::Ident) fail(opTok.loc, "expected op name, found " + describe(opTok));
    fail(opTok.loc, "unknown op '" + opTok.text + "' (`dscc ops` lists them)");
  }
  take();
  // From here on a failure still defines the names, so later uses stay quiet.
  struct Poison {
    Parser& p;
    const std::vector<Token>& names;
    bool armed = true;
    ~Poison() {
      if (armed)
        for (const Token& n : names)
          if (!p.values_.count(n.text)) p.placeholder(n.text, n.loc);
    }
  } poison{*this, names};
  auto op = std::make_unique<Operation>();
  op->kind = *kind;
  op->loc = opTok.loc;
  for (const Token& n : names) {
    auto v = std::make_unique<Value>();
    v->name = n.text;
    v->loc = n.loc;
    v->def = op.get();
    v->index = static_cast<int>(op->results.size());
    op->results.push_back(std::move(v));
  }
  parseOpRest(f, *op);
  // Define after parsing operands: `%x = add %x, %x` must not see itself.
  poison.armed = false;
  for (auto& r : op->results) define(r.get());
  inferOpTypes(f, *op, diags_);
  into.push_back(std::move(op));
  return true;
}

void Parser::parseFusionBody(Function& f, Operation& op) {
  // The body sees outer values; its own names vanish at the closing brace.
  std::map<std::string, Value*> outer = values_;
  while (!at(Tok::Eof) && !atIdent("yield") && !at(Tok::RBrace) && !atIdent("func")) {
    int line = cur().loc.line;
    try {
      if (atIdent("return")) fail(cur().loc, "'return' inside a fusion body; end the body with 'yield'");
      parseStatement(f, op.body);
    } catch (ParseError&) {
      syncStatement(line);
    }
  }
  if (!atIdent("yield")) {
    values_ = outer;
    fail(cur().loc, "expected 'yield' at the end of the fusion body, found " + describe(cur()));
  }
  op.yieldLoc = take().loc;
  if (at(Tok::ValueName)) {
    do op.yields.push_back(lookupValue(expect(Tok::ValueName, "value to yield")));
    while (accept(Tok::Comma));
  }
  values_ = outer;
  expect(Tok::RBrace, "'}' after yield");
}

void Parser::parseOpRest(Function& f, Operation& op) {
  int line = op.loc.line;
  if (op.kind == OpKind::Constant) {
    op.setAttr("value", parseLiteral());
  } else if (at(Tok::ValueName) && cur().loc.line == line) {
    do op.operands.push_back(lookupValue(expect(Tok::ValueName, "operand")));
    while (accept(Tok::Comma));
  }
  if (accept(Tok::LBrace)) {
    if (!at(Tok::RBrace)) {
      do {
        Token n = expect(Tok::Ident, "attribute name");
        expect(Tok::Equal, "'=' after attribute name");
        Attribute a = parseAttrValue();
        a.loc = n.loc;
        if (op.attr(n.text)) error(n.loc, "duplicate attribute '" + n.text + "'");
        op.setAttr(n.text, a);
      } while (accept(Tok::Comma));
    }
    expect(Tok::RBrace, "'}' or ',' after attribute");
  }
  if (accept(Tok::Colon)) {
    std::vector<Type> ts = parseTypeList();
    if (ts.size() != op.results.size())
      fail(op.loc, "op has " + std::to_string(op.results.size()) + " result name(s) but " +
                       std::to_string(ts.size()) + " type(s)");
    for (size_t i = 0; i < ts.size(); ++i) op.results[i]->type = ts[i];
    op.hasExplicitType = true;
  }
  if (op.kind == OpKind::Fusion) {
    if (!at(Tok::LBrace)) fail(cur().loc, "expected '{' and a body after 'fusion'");
    take();
    parseFusionBody(f, op);
    return;
  }
  if (cur().loc.line == line && !at(Tok::Eof) && !at(Tok::RBrace))
    fail(cur().loc, "unexpected " + describe(cur()) + " after operation");
}

Attribute Parser::parseNumber() {
  Location l = cur().loc;
  bool neg = accept(Tok::Minus);
  if (at(Tok::Float) || (at(Tok::Ident) && (cur().text == "inf" || cur().text == "nan"))) {
    Token t = take();
    double v = t.text == "inf" ? INFINITY : t.text == "nan" ? NAN : std::strtod(t.text.c_str(), nullptr);
    if (t.kind == Tok::Float && std::isinf(v)) fail(t.loc, "float '" + t.text + "' is out of range");
    Attribute a = Attribute::makeFloat(neg ? -v : v);
    a.loc = l;
    return a;
  }
  if (at(Tok::Int)) {
    Token t = take();
    // The sign is read with the digits, so -9223372036854775808 (INT64_MIN,
    // whose magnitude alone does not fit) is in range.
    std::string digits = (neg ? "-" : "") + t.text;
    errno = 0;
    long long v = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno == ERANGE) fail(t.loc, "integer '" + digits + "' is out of range");
    Attribute a = Attribute::makeInt(v);
    a.loc = l;
    return a;
  }
  if (!neg && (atIdent("true") || atIdent("false"))) return Attribute::makeBool(take().text == "true");
  fail(cur().loc, "expected number, found " + describe(cur()));
}

Attribute Parser::parseLiteral() {
  if (atIdent("dense") && peek().kind == Tok::Less) {
    take();
    take();
    std::function<Attribute()> elem = [&]() -> Attribute {
      DepthGuard g(*this);
      if (accept(Tok::LBracket)) {
        std::vector<Attribute> xs;
        if (!at(Tok::RBracket)) {
          do xs.push_back(elem());
          while (accept(Tok::Comma));
        }
        expect(Tok::RBracket, "']' or ',' in dense literal");
        return Attribute::makeList(xs);
      }
      return parseNumber();
    };
    Attribute a = elem();
    expect(Tok::Greater, "'>' to close dense<...>");
    if (a.kind == Attribute::Kind::List) a.kind = Attribute::Kind::Dense;
    else a = [&] { Attribute d; d.kind = Attribute::Kind::Dense; d.list = {a}; d.b = true; return d; }();
    return a;
  }
  if (atIdent("splat") && peek().kind == Tok::Less) {
    take();
    take();
    Attribute v = parseNumber();
    expect(Tok::Greater, "'>' to close splat<...>");
    Attribute a;
    a.kind = Attribute::Kind::Splat;
    a.list = {v};
    return a;
  }
  if (atIdent("file") && peek().kind == Tok::LParen) {
    take();
    take();
    Token s = expect(Tok::String, "file path string");
    expect(Tok::RParen, "')'");
    Attribute a;
    a.kind = Attribute::Kind::File;
    a.s = s.text;
    return a;
  }
  return parseNumber();
}

Attribute Parser::parseAttrValue() {
  DepthGuard g(*this);
  Location l = cur().loc;
  Attribute a;
  if (accept(Tok::LBracket)) {
    std::vector<Attribute> xs;
    if (!at(Tok::RBracket)) {
      do xs.push_back(parseAttrValue());
      while (accept(Tok::Comma));
    }
    expect(Tok::RBracket, "']' or ',' in list");
    a = Attribute::makeList(xs);
  } else if (at(Tok::String)) {
    a = Attribute::makeString(take().text);
  } else if (atIdent("true") || atIdent("false")) {
    a = Attribute::makeBool(take().text == "true");
  } else if (at(Tok::Ident) && parseDType(cur().text)) {
    a = Attribute::makeDType(*parseDType(take().text));
  } else if (at(Tok::Float) || atIdent("inf") || atIdent("nan") ||
             (at(Tok::Minus) && (peek().kind == Tok::Float || (peek().kind == Tok::Ident &&
                                                                (peek().text == "inf" || peek().text == "nan"))))) {
    a = parseNumber();
  } else {
    a = Attribute::makeDim(parseSum());
  }
  a.loc = l;
  return a;
}

}  // namespace

std::unique_ptr<Module> parseModule(const SourceMgr& sm, int file, DiagEngine& diags) {
  int before = diags.errorCount();
  Parser p(lex(sm, file, diags), diags);
  auto m = p.parseModule(file);
  if (diags.errorCount() == before) verifyModule(*m, diags);
  if (diags.errorCount() != before) return nullptr;
  return m;
}

std::optional<DimExpr> parseDimExpr(const std::string& text, std::string* err) {
  SourceMgr sm;
  int id = sm.addBuffer("<dim>", text);
  std::ostringstream os;
  DiagEngine d(sm, os);
  d.setCapture(true);
  Parser p(lex(sm, id, d), d);
  auto e = p.parseWholeExpr();
  if (!e || d.errorCount()) {
    if (err) *err = d.captured().empty() ? "invalid dim expression" : d.captured()[0].message;
    return std::nullopt;
  }
  return e;
}

}  // namespace dscc
