// Unit tests of dim-expression normal forms, printing and evaluation.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/DimExpr.h"
#include "ir/Parser.h"

using namespace dscc;

namespace {
DimExpr P(const std::string& s) {
  std::string err;
  auto e = parseDimExpr(s, &err);
  EXPECT_TRUE(e.has_value()) << s << ": " << err;
  return e ? *e : DimExpr(-999);
}
DimExpr S(const char* n) { return DimExpr::symbol(n); }
}  // namespace

TEST(DimExpr, PolynomialNormalForm) {
  EXPECT_EQ(P("B*S"), P("S*B"));
  EXPECT_EQ(P("(S+1)*(S-1)"), P("S*S-1"));
  EXPECT_EQ(P("2*S+3*S"), P("5*S"));
  EXPECT_EQ(P("S-S"), DimExpr(0));
  EXPECT_NE(P("S+1"), P("S"));
  EXPECT_EQ(P("B*S+S").str(), "B*S+S");
  EXPECT_EQ(P("1+S").str(), "S+1");
  EXPECT_EQ(P("3-S").str(), "-S+3");
  EXPECT_EQ(P("S*S*B").str(), "B*S*S");
}

TEST(DimExpr, ExactDivisionSimplifies) {
  EXPECT_EQ(DimExpr::div(P("B*S"), S("S")), S("B"));
  EXPECT_EQ(DimExpr::div(P("4*S+8"), DimExpr(4)), P("S+2"));
  EXPECT_EQ(DimExpr::div(P("S+1"), P("S+1")), DimExpr(1));
  // Not provably exact: stays an opaque atom that prints and re-parses.
  DimExpr h = DimExpr::div(S("S"), DimExpr(2));
  EXPECT_FALSE(h.isConst());
  EXPECT_EQ(h.str(), "S/2");
  EXPECT_EQ(P(h.str()), h);
  EXPECT_EQ(P("2*(S/2)").str(), "2*(S/2)");
  EXPECT_EQ(P("(S+1)/2").str(), "(S+1)/2");
}

TEST(DimExpr, MinMaxUseSymbolsNonNegative) {
  EXPECT_EQ(DimExpr::min(DimExpr(1), P("S+1")), DimExpr(1));
  EXPECT_EQ(DimExpr::max(DimExpr(0), S("S")), S("S"));
  EXPECT_EQ(DimExpr::min(P("S+3"), P("S+1")), P("S+1"));
  // S vs T is not decided by normalisation.
  DimExpr m = DimExpr::min(S("S"), S("T"));
  EXPECT_EQ(m.str(), "min(S, T)");
  EXPECT_EQ(m, DimExpr::min(S("T"), S("S")));
}

TEST(DimExpr, FloorCeilModBcast) {
  EXPECT_EQ(DimExpr::floorDiv(DimExpr(-7), DimExpr(2)), DimExpr(-4));
  EXPECT_EQ(DimExpr::ceilDiv(DimExpr(7), DimExpr(2)), DimExpr(4));
  EXPECT_EQ(DimExpr::mod(DimExpr(-7), DimExpr(3)), DimExpr(2));
  EXPECT_EQ(DimExpr::mod(P("8*S"), DimExpr(4)), DimExpr(0));
  EXPECT_EQ(DimExpr::bcast(S("S"), DimExpr(1)), S("S"));
  EXPECT_EQ(DimExpr::bcast(S("S"), S("S")), S("S"));
  EXPECT_EQ(DimExpr::bcast(S("S"), S("T")).str(), "bcast(S, T)");
}

// Rounding division by positive constants: nested divisions merge and whole multiples come out, so a chain
// of stride-2 layers prints (and is compared) as one division. Checked against integer arithmetic of its own at
// every x in [-50, 50] (negative numerators too: the identities hold for every integer).
TEST(DimExpr, RoundingDivisionByConstants) {
  EXPECT_EQ(P("floordiv(floordiv(floordiv(H-1, 2), 2), 2)").str(), "floordiv(H-1, 8)");
  EXPECT_EQ(P("ceildiv(ceildiv(L, 3), 2)").str(), "ceildiv(L, 6)");
  EXPECT_EQ(P("floordiv(L-6, 2)+1").str(), "floordiv(L, 2)-2");
  EXPECT_EQ(P("floordiv(H-2, 2)+1"), P("floordiv(H, 2)"));
  EXPECT_EQ(P("ceildiv(4*S+3, 4)").str(), "S+1");
  EXPECT_EQ(P("floordiv(4*S+3, 4)").str(), "S");
  // Mixed kinds, symbolic divisors and non-constant ones stay as they are.
  EXPECT_EQ(P("ceildiv(floordiv(H, 2), 2)").str(), "ceildiv(floordiv(H, 2), 2)");
  EXPECT_EQ(P("floordiv(floordiv(H, S), 2)").str(), "floordiv(floordiv(H, S), 2)");
  EXPECT_EQ(P("floordiv(2*S+H, S)").str(), "floordiv(H+2*S, S)");
  auto floorQ = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  auto ceilQ = [&](int64_t a, int64_t b) { return -floorQ(-a, b); };
  const std::vector<std::pair<std::string, std::function<int64_t(int64_t)>>> cases = {
      {"floordiv(floordiv(floordiv(x-1, 2), 2), 2)", [&](int64_t x) { return floorQ(floorQ(floorQ(x - 1, 2), 2), 2); }},
      {"ceildiv(ceildiv(x+5, 3), 4)", [&](int64_t x) { return ceilQ(ceilQ(x + 5, 3), 4); }},
      {"floordiv(6*x-7, 3)", [&](int64_t x) { return floorQ(6 * x - 7, 3); }},
      {"ceildiv(6*x-7, 3)", [&](int64_t x) { return ceilQ(6 * x - 7, 3); }},
      {"floordiv(floordiv(5*x+1, 5), 7)", [&](int64_t x) { return floorQ(floorQ(5 * x + 1, 5), 7); }},
  };
  for (const auto& [text, want] : cases) {
    DimExpr e = P(text);
    for (int64_t x = -50; x <= 50; ++x) {
      std::string err;
      auto v = e.evaluate({{"x", x}}, &err);
      ASSERT_TRUE(v) << text << ": " << err;
      EXPECT_EQ(*v, want(x)) << text << " as " << e.str() << " at x = " << x;
    }
  }
}

TEST(DimExpr, Evaluate) {
  DimBindings env{{"B", 2}, {"S", 7}};
  EXPECT_EQ(P("B*S+1").evaluate(env), 15);
  EXPECT_EQ(P("floordiv(S, 2)").evaluate(env), 3);
  EXPECT_EQ(P("ceildiv(S, 2)").evaluate(env), 4);
  EXPECT_EQ(P("S % 4").evaluate(env), 3);
  EXPECT_EQ(P("min(S, B)").evaluate(env), 2);
  std::string err;
  EXPECT_FALSE(P("S/2").evaluate(env, &err).has_value());
  EXPECT_NE(err.find("not exact"), std::string::npos) << err;
  err.clear();
  EXPECT_FALSE(P("T+1").evaluate(env, &err).has_value());
  EXPECT_NE(err.find("T"), std::string::npos) << err;
  err.clear();
  EXPECT_FALSE(P("bcast(S, B)").evaluate(env, &err).has_value());
  EXPECT_EQ(P("bcast(S, B)").evaluate({{"S", 7}, {"B", 1}}), 7);
}

TEST(DimExpr, SubstituteRenormalises) {
  DimExpr e = P("B*S/S + S");
  EXPECT_EQ(e, P("B+S"));
  DimExpr f = DimExpr::div(P("T"), DimExpr(2)).substitute({{"T", P("2*S")}});
  EXPECT_EQ(f, S("S"));
}

TEST(DimExpr, ParseErrors) {
  std::string err;
  EXPECT_FALSE(parseDimExpr("S+", &err));
  EXPECT_FALSE(parseDimExpr("S/0", &err));
  EXPECT_FALSE(parseDimExpr("f32", &err));
  EXPECT_FALSE(parseDimExpr("7/2", &err));
  EXPECT_FALSE(parseDimExpr("99999999999999999999", &err));
}
