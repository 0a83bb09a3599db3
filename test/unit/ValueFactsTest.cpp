// ir/ValueFacts.h: which values the ops make non-negative, checked against the interpreter's data.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <sstream>

#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/ValueFacts.h"

using namespace dscc;

namespace {

// Every result of @main, in order, with what nonNegative says of it; the
// function runs on inputs in [-3, 3) so a wrong "non-negative" shows as a
// negative element.
const char* kProgram = R"(
func @main(%x: f32[4, 9], %y: f32[4, 9], %i: i32[4, 9]) -> (f32[4, 9], f32[4, 9], f32[4, 9], f32[4, 9], f32[4, 9],
    f32[4, 9], f32[4, 9], f32[4, 9], f32[4], f32[9, 4], f32[4, 9], f32[4, 9], f32[4, 9], f32[4, 9], f32[4, 9],
    f32[4, 9], i32[4, 9], f32[4, 9], f32[4, 9], f32[4]) {
  %e = exp %x
  %a = abs %x
  %s = sqrt %a
  %g = sigmoid %x
  %r = relu %x
  %sq = mul %x, %x
  %d = sub %x, %y
  %dd = mul %d, %d
  %sum = reduce_sum %dd {axes = [1]}
  %t = transpose %e {perm = [1, 0]}
  %q = div %e, %sq
  %mx = max %x, %e
  %add = add %e, %a
  %neg = neg %e
  %xy = mul %x, %y
  %mn = min %x, %e
  %ii = mul %i, %i
  %sub = sub %e, %a
  %plain = add %x, %y
  %rsum = reduce_sum %d {axes = [1]}
  return %e, %a, %s, %g, %r, %sq, %d, %dd, %sum, %t, %q, %mx, %add, %neg, %xy, %mn, %ii, %sub, %plain, %rsum
}
)";

// Parses a program and runs it on random inputs in [-3, 3) (i32 arguments:
// those times 1000, truncated), so each claim can be checked on data.
class ValueFactsTest : public ::testing::Test {
 protected:
  ValueFactsTest() : diags_(sm_, os_) {}

  Function* parse(const char* text) {
    mod_ = parseModule(sm_, sm_.addBuffer("t.dsc", text), diags_);
    EXPECT_TRUE(mod_) << os_.str();
    return mod_ ? mod_->entry() : nullptr;
  }

  std::vector<Tensor> run(const Function& f, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-3, 3);
    std::vector<Tensor> in;
    for (const auto& a : f.args) {
      Tensor t = Tensor::zeros(a->type.dtype, {4, 9});
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (isFloat(a->type.dtype)) t.setF(i, u(rng));
        else t.setI(i, static_cast<int64_t>(u(rng) * 1000));
      }
      in.push_back(t);
    }
    std::vector<Tensor> out;
    EXPECT_TRUE(interpret(f, in, out, diags_)) << os_.str();
    return out;
  }

  std::ostringstream os_;
  SourceMgr sm_;
  DiagEngine diags_;
  std::unique_ptr<Module> mod_;
};

TEST_F(ValueFactsTest, NonNegative) {
  Function* f = parse(kProgram);
  ASSERT_TRUE(f);
  // e a s g r sq d dd sum t q mx add neg xy mn ii sub plain rsum
  const std::vector<bool> want = {true,  true,  true,  true,  true, true,  false, true,  true, true,
                                  true,  true,  true,  false, false, false, false, false, false, false};
  ASSERT_EQ(f->returns.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(nonNegative(f->returns[k]), want[k]) << "%" << f->returns[k]->name;
  EXPECT_FALSE(nonNegative(f->args[0].get()));  // an argument: unknown

  std::vector<Tensor> out = run(*f, 11);
  ASSERT_EQ(out.size(), want.size());
  // What is claimed holds on data; and the data would show a wrong claim
  // (each value said "unknown" above does have a negative element here,
  // except the i32 square: integers are never claimed).
  for (size_t k = 0; k < want.size(); ++k) {
    bool anyNegative = false;
    for (int64_t i = 0; i < out[k].numel(); ++i) {
      double v = isFloat(out[k].dtype) ? out[k].getF(i) : static_cast<double>(out[k].getI(i));
      if (v < 0) anyNegative = true;
    }
    std::string n = f->returns[k]->name;
    if (want[k]) {
      EXPECT_FALSE(anyNegative) << "%" << n << " was said non-negative";
    } else if (n != "ii") {
      EXPECT_TRUE(anyNegative) << "%" << n << ": the test data should show a negative";
    }
  }
}

TEST_F(ValueFactsTest, NonPositive) {
  const char* text = R"(
func @main(%x: f32[4, 9], %y: f32[4, 9]) -> (f32[4, 9], f32[4, 9], f32[4, 9], f32[4, 9], f32[4, 9], f32[4, 9]) {
  %m = reduce_max %x {axes = [1], keepdims = true}
  %shift = sub %x, %m
  %my = reduce_max %y {axes = [1], keepdims = true}
  %other = sub %x, %my
  %m0 = reduce_max %x {axes = [0], keepdims = true}
  %shift0 = sub %x, %m0
  %e = exp %x
  %ne = neg %e
  %nx = neg %x
  %back = sub %m, %x
  return %shift, %other, %shift0, %ne, %nx, %back
}
)";
  Function* f = parse(text);
  ASSERT_TRUE(f);
  const std::vector<bool> want = {true, false, true, true, false, false};
  ASSERT_EQ(f->returns.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(nonPositive(f->returns[k]), want[k]) << "%" << f->returns[k]->name;
  std::vector<Tensor> out = run(*f, 5);
  ASSERT_EQ(out.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    bool anyPositive = false;
    for (int64_t i = 0; i < out[k].numel(); ++i) anyPositive = anyPositive || out[k].getF(i) > 0;
    EXPECT_EQ(anyPositive, !want[k]) << "%" << f->returns[k]->name;
  }
}

}  // namespace
