// Unit tests of dim-expression normal forms, printing and evaluation.
#include <gtest/gtest.h>

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
