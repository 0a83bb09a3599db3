// Unit tests for the reference interpreter; expected values are computed here independently.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numbers>
#include <sstream>

#include "ir/Interpreter.h"
#include "ir/Npy.h"
#include "ir/Parser.h"

using namespace dscc;
namespace fs = std::filesystem;

namespace {

Tensor makeF32(std::vector<int64_t> shape, const std::vector<double>& vals) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  for (size_t i = 0; i < vals.size(); ++i) t.setF(static_cast<int64_t>(i), vals[i]);
  return t;
}

Tensor makeInt(DType dt, std::vector<int64_t> shape, const std::vector<int64_t>& vals) {
  Tensor t = Tensor::zeros(dt, std::move(shape));
  for (size_t i = 0; i < vals.size(); ++i) t.setI(static_cast<int64_t>(i), vals[i]);
  return t;
}

// A tensor whose element k holds k, for checking where data moved.
Tensor counting(std::vector<int64_t> shape) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  for (int64_t k = 0; k < t.numel(); ++k) t.setF(k, static_cast<double>(k));
  return t;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t k = 0; k < t.numel(); ++k) v.push_back(t.getF(k));
  return v;
}

/// Parses a program and runs its entry function, capturing diagnostics.
class InterpTest : public ::testing::Test {
 protected:
  InterpTest() : diags_(sm_, os_) { diags_.setCapture(true); }

  /// Parses `text` (as file `name`); fails the test on a parse error.
  Function* parse(const std::string& text, const std::string& name = "test.dsc") {
    int id = sm_.addBuffer(name, text);
    mod_ = parseModule(sm_, id, diags_);
    if (!mod_) {
      std::string all;
      for (const auto& d : diags_.captured()) all += diags_.format(d) + "\n";
      ADD_FAILURE() << "parse failed:\n" << all;
      return nullptr;
    }
    return mod_->entry();
  }

  /// Runs `text` on `inputs`; returns whether the interpreter succeeded.
  bool run(const std::string& text, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
           DimBindings* env = nullptr) {
    Function* f = parse(text);
    if (!f) return false;
    return interpret(*f, inputs, outputs, diags_, env);
  }

  /// The single error message reported, or "" with a test failure.
  std::string onlyError() {
    EXPECT_EQ(diags_.errorCount(), 1);
    for (const auto& d : diags_.captured())
      if (d.severity == Severity::Error) return d.message;
    return "";
  }

  SourceMgr sm_;
  std::ostringstream os_;
  DiagEngine diags_;
  std::unique_ptr<Module> mod_;
};

TEST(InterpHandBuilt, AddOfBuiltFunction) {
  // Built through the IR structs, without the parser.
  Function f;
  f.name = "f";
  auto x = std::make_unique<Value>();
  x->name = "x";
  x->type = Type{DType::F32, {DimExpr::symbol("N")}};
  f.args.push_back(std::move(x));
  auto op = std::make_unique<Operation>();
  op->kind = OpKind::Add;
  op->operands = {f.args[0].get(), f.args[0].get()};
  auto r = std::make_unique<Value>();
  r->name = "y";
  r->type = f.args[0]->type;
  r->def = op.get();
  op->results.push_back(std::move(r));
  f.returns = {op->result()};
  f.resultTypes = {f.args[0]->type};
  f.ops.push_back(std::move(op));

  SourceMgr sm;
  std::ostringstream os;
  DiagEngine diags(sm, os);
  std::vector<Tensor> out;
  DimBindings env;
  ASSERT_TRUE(interpret(f, {makeF32({3}, {1, 2.5, -4})}, out, diags, &env));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{2, 5, -8}));
  EXPECT_EQ(env.at("N"), 3);
}

TEST_F(InterpTest, SliceNegativeStepAndClamping) {
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%x: f32[10]) -> f32[3] {\n"
                  "  %a = slice %x {starts = [-2], ends = [-100], steps = [-3]}\n"
                  "  return %a\n}\n",
                  {counting({10})}, out));
  // x[-2:-100:-3] == [8, 5, 2]
  EXPECT_EQ(values(out[0]), (std::vector<double>{8, 5, 2}));

  ASSERT_TRUE(run("func @f(%x: f32[10]) -> f32[2] {\n"
                  "  %a = slice %x {starts = [3], ends = [100], steps = [4]}\n"
                  "  return %a\n}\n",
                  {counting({10})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{3, 7}));

  // Two axes in a different order, both stepping backwards from clamped bounds:
  // axis 1: 3, 1; axis 0: start 5 clamps to 2, end -10 wraps to -7 and clamps to -1.
  ASSERT_TRUE(run("func @f(%x: f32[3, 4]) -> f32[3, 2] {\n"
                  "  %a = slice %x {axes = [1, 0], starts = [-1, 5], ends = [-5, -10], steps = [-2, -1]}\n"
                  "  return %a\n}\n",
                  {counting({3, 4})}, out));
  std::vector<double> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) want.push_back((2 - i) * 4 + (3 - 2 * j));
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(out[0]), want);
}

TEST_F(InterpTest, SliceSymbolicBoundsAndEmpty) {
  std::vector<Tensor> out;
  const char* prog = "func @f(%x: f32[S]) -> f32[?] {\n"
                     "  %a = slice %x {starts = [1], ends = [S-1]}\n"
                     "  return %a\n}\n";
  ASSERT_TRUE(run(prog, {counting({6})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 2, 3, 4}));
  // With S = 1 the range is empty, not negative.
  ASSERT_TRUE(run(prog, {counting({1})}, out));
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{0}));
}

TEST_F(InterpTest, SliceZeroStepIsAnError) {
  Function* f = parse("func @f(%x: f32[4]) -> f32[4] {\n  return %x\n}\n");
  ASSERT_NE(f, nullptr);
  // The verifier rejects a literal zero step, so set it after parsing.
  auto op = std::make_unique<Operation>();
  op->kind = OpKind::Slice;
  op->operands = {f->args[0].get()};
  op->setAttr("starts", Attribute::makeList({Attribute::makeInt(0)}));
  op->setAttr("ends", Attribute::makeList({Attribute::makeInt(4)}));
  op->setAttr("steps", Attribute::makeList({Attribute::makeInt(0)}));
  auto r = std::make_unique<Value>();
  r->type = f->args[0]->type;
  op->results.push_back(std::move(r));
  f->ops.push_back(std::move(op));
  std::vector<Tensor> out;
  EXPECT_FALSE(interpret(*f, {counting({4})}, out, diags_));
  EXPECT_NE(onlyError().find("step"), std::string::npos);
}

TEST_F(InterpTest, GatherNegativeIndices) {
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%a: f32[4, 3], %i: i64[2, 2]) -> f32[2, 2, 3] {\n"
                  "  %g = gather %a, %i {axis = 0}\n"
                  "  return %g\n}\n",
                  {counting({4, 3}), makeInt(DType::I64, {2, 2}, {-1, 0, 2, -4})}, out));
  std::vector<double> want;
  for (int row : {3, 0, 2, 0})
    for (int c = 0; c < 3; ++c) want.push_back(row * 3 + c);
  EXPECT_EQ(values(out[0]), want);

  ASSERT_TRUE(run("func @f(%a: f32[4, 3], %i: i32[2]) -> f32[4, 2] {\n"
                  "  %g = gather %a, %i {axis = -1}\n"
                  "  return %g\n}\n",
                  {counting({4, 3}), makeInt(DType::I32, {2}, {-3, 2})}, out));
  want.clear();
  for (int r = 0; r < 4; ++r)
    for (int c : {0, 2}) want.push_back(r * 3 + c);
  EXPECT_EQ(values(out[0]), want);
}

TEST_F(InterpTest, GatherOutOfRange) {
  std::vector<Tensor> out;
  EXPECT_FALSE(run("func @f(%a: f32[4], %i: i64[2]) -> f32[2] {\n"
                   "  %g = gather %a, %i\n"
                   "  return %g\n}\n",
                   {counting({4}), makeInt(DType::I64, {2}, {1, -5})}, out));
  std::string msg = onlyError();
  EXPECT_NE(msg.find("-5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("size 4"), std::string::npos) << msg;
}

TEST_F(InterpTest, ReductionsWithKeepdims) {
  Tensor x = counting({2, 3, 4});
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%x: f32[2, 3, 4]) -> f32[1, 3, 1], f32[3], f32[], f32[2, 1, 4] {\n"
                  "  %s = reduce_sum %x {axes = [-1, 0], keepdims = true}\n"
                  "  %m = reduce_max %x {axes = [0, 2]}\n"
                  "  %p = reduce_prod %x\n"
                  "  %a = reduce_mean %x {axes = [1], keepdims = true}\n"
                  "  return %s, %m, %p, %a\n}\n",
                  {x}, out));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(out[2].shape, (std::vector<int64_t>{}));
  EXPECT_EQ(out[3].shape, (std::vector<int64_t>{2, 1, 4}));
  for (int j = 0; j < 3; ++j) {
    double sum = 0, mx = -1;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) {
        double v = i * 12 + j * 4 + k;
        sum += v;
        mx = std::max(mx, v);
      }
    EXPECT_EQ(out[0].getF(j), sum);
    EXPECT_EQ(out[1].getF(j), mx);
  }
  EXPECT_EQ(out[2].getF(0), 0.0);  // element 0 is 0
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double mean = 0;
      for (int j = 0; j < 3; ++j) mean += i * 12 + j * 4 + k;
      EXPECT_FLOAT_EQ(out[3].getF(i * 4 + k), static_cast<float>(mean / 3));
    }
}

TEST_F(InterpTest, ReductionsOverEmptyDims) {
  std::vector<Tensor> out;
  Tensor x = Tensor::zeros(DType::F32, {0, 3});
  ASSERT_TRUE(run("func @f(%x: f32[N, 3]) -> f32[3], f32[3], f32[3] {\n"
                  "  %s = reduce_sum %x {axes = [0]}\n"
                  "  %p = reduce_prod %x {axes = [0]}\n"
                  "  %m = reduce_mean %x {axes = [0]}\n"
                  "  return %s, %p, %m\n}\n",
                  {x}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, 1, 1}));
  EXPECT_TRUE(std::isnan(out[2].getF(0)));

  EXPECT_FALSE(run("func @f(%x: f32[N, 3]) -> f32[3] {\n"
                   "  %m = reduce_max %x {axes = [0]}\n"
                   "  return %m\n}\n",
                   {x}, out));
  EXPECT_EQ(onlyError(), "reduce_max over an empty dim");
}

TEST_F(InterpTest, ArgMaxTiesAndNaN) {
  std::vector<Tensor> out;
  Tensor x = makeF32({2, 4}, {1, 5, 5, 2, 3, NAN, 7, NAN});
  ASSERT_TRUE(run("func @f(%x: f32[2, 4]) -> i64[2, 1] {\n"
                  "  %a = argmax %x {axis = 1, keepdims = true}\n"
                  "  return %a\n}\n",
                  {x}, out));
  EXPECT_EQ(out[0].dtype, DType::I64);
  EXPECT_EQ(out[0].getI(0), 1);  // first of the tied 5s
  EXPECT_EQ(out[0].getI(1), 1);  // first NaN
}

TEST_F(InterpTest, BroadcastingWithSizeZeroAndOne) {
  std::vector<Tensor> out;
  const char* prog = "func @f(%a: f32[A, B], %b: f32[C]) -> f32[?, ?] {\n"
                     "  %s = add %a, %b\n"
                     "  return %s\n}\n";
  ASSERT_TRUE(run(prog, {makeF32({2, 1}, {10, 20}), makeF32({3}, {1, 2, 3})}, out));
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{11, 12, 13, 21, 22, 23}));

  ASSERT_TRUE(run(prog, {Tensor::zeros(DType::F32, {0, 1}), makeF32({3}, {1, 2, 3})}, out));
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{0, 3}));

  ASSERT_TRUE(run(prog, {Tensor::zeros(DType::F32, {2, 1}), Tensor::zeros(DType::F32, {0})}, out));
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 0}));

  EXPECT_FALSE(run(prog, {Tensor::zeros(DType::F32, {2, 2}), Tensor::zeros(DType::F32, {3})}, out));
  EXPECT_EQ(diags_.errorCount(), 1);

  // A scalar broadcasts against anything.
  ASSERT_TRUE(run("func @f(%a: f32[], %b: f32[2, 2]) -> f32[2, 2] {\n"
                  "  %s = mul %a, %b\n"
                  "  return %s\n}\n",
                  {makeF32({}, {3}), makeF32({2, 2}, {1, 2, 3, 4})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{3, 6, 9, 12}));
}

TEST_F(InterpTest, SelectBroadcastsAllThree) {
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%c: i1[2, 1], %a: f32[3], %b: f32[]) -> f32[2, 3] {\n"
                  "  %s = select %c, %a, %b\n"
                  "  return %s\n}\n",
                  {makeInt(DType::I1, {2, 1}, {1, 0}), makeF32({3}, {1, 2, 3}), makeF32({}, {-1})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 2, 3, -1, -1, -1}));
}

TEST_F(InterpTest, IntegerDivisionAndPow) {
  std::vector<Tensor> out;
  const char* prog = "func @f(%a: i32[4], %b: i32[4], %e: i32[4]) -> i32[4], i32[4] {\n"
                     "  %d = div %a, %b\n"
                     "  %p = pow %a, %e\n"
                     "  return %d, %p\n}\n";
  ASSERT_TRUE(run(prog,
                  {makeInt(DType::I32, {4}, {-7, 7, 9, -2}), makeInt(DType::I32, {4}, {2, -2, 3, 3}),
                   makeInt(DType::I32, {4}, {2, 0, 3, 3})},
                  out));
  // Truncation toward zero, not numpy's floor division.
  EXPECT_EQ(values(out[0]), (std::vector<double>{-3, -3, 3, 0}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{49, 1, 729, -8}));
  EXPECT_FALSE(interpret(*mod_->entry(),
                         {makeInt(DType::I32, {4}, {2, 2, 2, 2}), makeInt(DType::I32, {4}, {1, 1, 1, 1}),
                          makeInt(DType::I32, {4}, {1, 1, -1, 1})},
                         out, diags_));
  EXPECT_EQ(onlyError(), "integer pow with negative exponent -1");
}

TEST_F(InterpTest, IntegerDivisionByZero) {
  std::vector<Tensor> out;
  EXPECT_FALSE(run("func @f(%a: i64[2], %b: i64[2]) -> i64[2] {\n"
                   "  %d = div %a, %b\n"
                   "  return %d\n}\n",
                   {makeInt(DType::I64, {2}, {1, 2}), makeInt(DType::I64, {2}, {1, 0})}, out));
  EXPECT_NE(onlyError().find("division by zero"), std::string::npos);
}

TEST_F(InterpTest, CastTruncatesAndTestsNonzero) {
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%x: f32[4]) -> i32[4], i1[4], i8[4] {\n"
                  "  %i = cast %x {to = i32}\n"
                  "  %b = cast %x {to = i1}\n"
                  "  %w = cast %i {to = i8}\n"
                  "  return %i, %b, %w\n}\n",
                  {makeF32({4}, {-1.7, 2.9, 0.0, 300.5})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{-1, 2, 0, 300}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{-1, 2, 0, 300 - 256}));
}

TEST_F(InterpTest, MatmulBatchBroadcastVectorsAndTranspose) {
  std::vector<Tensor> out;
  Tensor a = counting({2, 1, 2, 3});  // [2, 1, M=2, K=3]
  Tensor b = counting({3, 3, 2});     // [3, K=3, N=2]
  ASSERT_TRUE(run("func @f(%a: f32[2, 1, 2, 3], %b: f32[3, 3, 2]) -> f32[2, 3, 2, 2] {\n"
                  "  %c = matmul %a, %b\n"
                  "  return %c\n}\n",
                  {a, b}, out));
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          double s = 0;
          for (int k = 0; k < 3; ++k) s += a.getF(p * 6 + i * 3 + k) * b.getF(q * 6 + k * 2 + j);
          EXPECT_EQ(out[0].getF(((p * 3 + q) * 2 + i) * 2 + j), s);
        }

  // 1-D on both sides is a dot product; transpose_b reads b as [K, N] from [N, K].
  Tensor v = makeF32({3}, {1, 2, 3});
  Tensor w = counting({2, 3});  // [N=2, K=3], used transposed
  ASSERT_TRUE(run("func @f(%v: f32[3], %w: f32[2, 3]) -> f32[], f32[2] {\n"
                  "  %d = matmul %v, %v\n"
                  "  %t = matmul %v, %w {transpose_b = true}\n"
                  "  return %d, %t\n}\n",
                  {v, w}, out));
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{}));
  EXPECT_EQ(out[0].getF(0), 14.0);
  EXPECT_EQ(values(out[1]), (std::vector<double>{0 * 1 + 1 * 2 + 2 * 3, 3 * 1 + 4 * 2 + 5 * 3}));
}

TEST_F(InterpTest, SoftmaxAndLayerNorm) {
  std::vector<Tensor> out;
  Tensor x = makeF32({2, 3}, {1, 2, 3, -1, 0, 4});
  ASSERT_TRUE(run("func @f(%x: f32[2, 3], %g: f32[3], %b: f32[1]) -> f32[2, 3], f32[2, 3], f32[2, 3] {\n"
                  "  %s = softmax %x {axis = 0}\n"
                  "  %l = log_softmax %x\n"
                  "  %n = layer_norm %x, %g, %b {epsilon = 0.5}\n"
                  "  return %s, %l, %n\n}\n",
                  {x, makeF32({3}, {1, 2, 3}), makeF32({1}, {0.25})}, out));
  for (int c = 0; c < 3; ++c) {
    double e0 = std::exp(x.getF(c)), e1 = std::exp(x.getF(3 + c));
    EXPECT_NEAR(out[0].getF(c), e0 / (e0 + e1), 1e-6);
    EXPECT_NEAR(out[0].getF(3 + c), e1 / (e0 + e1), 1e-6);
  }
  for (int r = 0; r < 2; ++r) {
    double sum = 0, mean = 0, var = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(x.getF(r * 3 + c)), mean += x.getF(r * 3 + c) / 3;
    for (int c = 0; c < 3; ++c) var += (x.getF(r * 3 + c) - mean) * (x.getF(r * 3 + c) - mean) / 3;
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(out[1].getF(r * 3 + c), x.getF(r * 3 + c) - std::log(sum), 1e-5);
      EXPECT_NEAR(out[2].getF(r * 3 + c), (x.getF(r * 3 + c) - mean) / std::sqrt(var + 0.5) * (c + 1) + 0.25, 1e-5);
    }
  }
}

TEST_F(InterpTest, ReshapeWithUnknownDimBindsIt) {
  std::vector<Tensor> out;
  DimBindings env;
  ASSERT_TRUE(run("func @f(%x: f32[S, 6]) -> f32[T, 4] {\n"
                  "  %r = reshape %x : f32[?, 4]\n"
                  "  return %r\n}\n",
                  {counting({2, 6})}, out, &env));
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(env.at("T"), 3);
  EXPECT_EQ(values(out[0]), values(counting({12})));
}

TEST_F(InterpTest, ReshapeNotExactIsReported) {
  std::vector<Tensor> out;
  EXPECT_FALSE(run("func @f(%x: f32[S]) -> f32[2, S/2] {\n"
                   "  %r = reshape %x : f32[2, S/2]\n"
                   "  return %r\n}\n",
                   {counting({5})}, out));
  std::string msg = onlyError();
  EXPECT_NE(msg.find("S/2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not divisible"), std::string::npos) << msg;
}

TEST_F(InterpTest, OpResultShapeMismatch) {
  std::vector<Tensor> out;
  // The verifier cannot disprove S + T == S, so the check happens at run time.
  EXPECT_FALSE(run("func @f(%x: f32[S], %y: f32[T]) -> f32[S] {\n"
                   "  %c = concat %x, %y {axis = 0} : f32[S]\n"
                   "  return %c\n}\n",
                   {counting({3}), counting({2})}, out));
  EXPECT_EQ(onlyError(), "result of concat has dim 0 = 5 but its type says S = 3");
}

TEST_F(InterpTest, FunctionResultShapeMismatch) {
  std::vector<Tensor> out;
  EXPECT_FALSE(run("func @f(%x: f32[S], %y: f32[T]) -> f32[S] {\n"
                   "  %c = concat %x, %y {axis = 0}\n"
                   "  return %c\n}\n",
                   {counting({3}), counting({2})}, out));
  EXPECT_EQ(onlyError(), "result 0 of @f has dim 0 = 5 but its type says S = 3");
  // With an empty %y the shapes agree.
  diags_.clearCaptured();
  EXPECT_TRUE(interpret(*mod_->entry(), {counting({3}), counting({0})}, out, diags_));
}

TEST_F(InterpTest, InputShapeErrors) {
  std::vector<Tensor> out;
  const char* prog = "func @f(%x: f32[S], %y: f32[S, 2]) -> f32[S] {\n  return %x\n}\n";
  EXPECT_FALSE(run(prog, {counting({3}), counting({4, 2})}, out));
  EXPECT_EQ(onlyError(), "dim 0 of %y is 4 but S = 3 here");

  diags_.clearCaptured();
  int before = diags_.errorCount();
  EXPECT_FALSE(interpret(*mod_->entry(), {counting({3}), counting({3})}, out, diags_));
  EXPECT_EQ(diags_.errorCount(), before + 1);
  EXPECT_EQ(diags_.captured().at(0).message, "argument %y expects f32[S, 2] but got f32[3]");

  diags_.clearCaptured();
  Tensor wrong = Tensor::zeros(DType::F64, {3});
  EXPECT_FALSE(interpret(*mod_->entry(), {wrong, counting({3, 2})}, out, diags_));
  EXPECT_EQ(diags_.captured().at(0).message, "argument %x expects f32[S] but got f64[3]");
}

TEST_F(InterpTest, LinearDimsAreSolved) {
  std::vector<Tensor> out;
  DimBindings env;
  const char* prog = "func @f(%x: f32[2*N+1]) -> f32[2*N+1] {\n  return %x\n}\n";
  ASSERT_TRUE(run(prog, {counting({7})}, out, &env));
  EXPECT_EQ(env.at("N"), 3);
  EXPECT_FALSE(interpret(*mod_->entry(), {counting({6})}, out, diags_));
  EXPECT_NE(onlyError().find("2*N+1"), std::string::npos);
}

TEST_F(InterpTest, FactViolation) {
  std::vector<Tensor> out;
  const char* prog = "func @f(%x: f32[S]) -> f32[S] where S in [1, 4], S % 2 == 0 {\n  return %x\n}\n";
  ASSERT_TRUE(run(prog, {counting({4})}, out));
  EXPECT_FALSE(interpret(*mod_->entry(), {counting({5})}, out, diags_));
  ASSERT_EQ(diags_.errorCount(), 2);
  EXPECT_EQ(diags_.captured().at(0).message, "fact violated: 'S in [1, 4]' does not hold (S = 5)");
  EXPECT_EQ(diags_.captured().at(0).loc.line, 1);
}

TEST_F(InterpTest, CheckOpsStopExecution) {
  std::vector<Tensor> out;
  const char* prog = "func @f(%x: f32[S], %y: f32[T]) -> f32[S] {\n"
                     "  check {kind = \"broadcastable\", lhs = S, rhs = T, what = \"add operands\"}\n"
                     "  %a = add %x, %y : f32[S]\n"
                     "  return %a\n}\n";
  ASSERT_TRUE(run(prog, {makeF32({2}, {1, 2}), makeF32({1}, {10})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{11, 12}));
  EXPECT_FALSE(interpret(*mod_->entry(), {counting({2}), counting({3})}, out, diags_));
  EXPECT_EQ(onlyError(), "run-time check (add operands) failed: 'broadcastable(S, T)' does not hold (S = 2, T = 3)");
}

TEST_F(InterpTest, BindSymbolsDirectly) {
  Function* f = parse("func @f(%x: f32[B, S+1], %y: f32[S]) -> f32[S] {\n  return %y\n}\n");
  ASSERT_NE(f, nullptr);
  DimBindings env;
  EXPECT_TRUE(bindSymbols(*f, {{2, 5}, {4}}, env, diags_));
  EXPECT_EQ(env.at("B"), 2);
  EXPECT_EQ(env.at("S"), 4);
  env.clear();
  EXPECT_FALSE(bindSymbols(*f, {{2, 5}, {5}}, env, diags_));
  EXPECT_EQ(onlyError(), "dim 1 of %x is 5 but S+1 = 6 here");
}

TEST_F(InterpTest, ConstantsDenseSplatIotaDim) {
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%x: f32[N, 3]) -> i32[2, 2], f32[N], f32[], i64[2, N], i64[] {\n"
                  "  %d = constant dense<[[1, 2], [3, -4]]> : i32[2, 2]\n"
                  "  %s = constant splat<0.5> : f32[N]\n"
                  "  %c = constant 2 : f32[]\n"
                  "  %i = iota {axis = 1} : i64[2, N]\n"
                  "  %n = dim %x {axis = 0}\n"
                  "  return %d, %s, %c, %i, %n\n}\n",
                  {counting({3, 3})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 2, 3, -4}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{2}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(out[4].getI(0), 3);
}

TEST_F(InterpTest, ConstantFileIsRelativeToTheProgram) {
  std::string tmpl = (fs::temp_directory_path() / "dscc-interptest-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  fs::path dir = tmpl;
  std::string err;
  ASSERT_TRUE(writeNpy((dir / "w.npy").string(), makeF32({2, 2}, {1, 2, 3, 4}), &err)) << err;
  Function* f = parse("func @f() -> f32[2, K] {\n"
                      "  %w = constant file(\"w.npy\") : f32[2, K]\n"
                      "  return %w\n}\n",
                      (dir / "prog.dsc").string());
  ASSERT_NE(f, nullptr);
  std::vector<Tensor> out;
  DimBindings env;
  ASSERT_TRUE(interpret(*f, {}, out, diags_, &env));
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(env.at("K"), 2);

  f = parse("func @f() -> f32[3] {\n"
            "  %w = constant file(\"w.npy\") : f32[3]\n"
            "  return %w\n}\n",
            (dir / "prog2.dsc").string());
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(interpret(*f, {}, out, diags_));
  EXPECT_EQ(onlyError(), "constant file 'w.npy' holds f32[2, 2] but the type says f32[3]");
  fs::remove_all(dir);
}

TEST_F(InterpTest, TransposeBroadcastToConcat) {
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%x: f32[2, 3], %y: f32[1, 3]) -> f32[3, 2], f32[4, 2, 3], f32[3, 3] {\n"
                  "  %t = transpose %x\n"
                  "  %b = broadcast_to %x : f32[4, 2, 3]\n"
                  "  %c = concat %x, %y {axis = -2}\n"
                  "  return %t, %b, %c\n}\n",
                  {counting({2, 3}), makeF32({1, 3}, {7, 8, 9})}, out));
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  for (int k = 0; k < 24; ++k) EXPECT_EQ(out[1].getF(k), k % 6);
  EXPECT_EQ(values(out[2]), (std::vector<double>{0, 1, 2, 3, 4, 5, 7, 8, 9}));
}

TEST_F(InterpTest, UnaryFloatAndIntegerOps) {
  std::vector<Tensor> out;
  ASSERT_TRUE(run("func @f(%x: f32[3], %i: i8[3], %b: i1[2]) -> f32[3], f32[3], i8[3], i8[3], i1[2] {\n"
                  "  %g = gelu %x\n"
                  "  %t = gelu %x {approximate = \"tanh\"}\n"
                  "  %n = neg %i\n"
                  "  %o = not %i\n"
                  "  %c = not %b\n"
                  "  return %g, %t, %n, %o, %c\n}\n",
                  {makeF32({3}, {-1, 0.5, 2}), makeInt(DType::I8, {3}, {-128, 5, 0}),
                   makeInt(DType::I1, {2}, {1, 0})},
                  out));
  for (int k = 0; k < 3; ++k) {
    double x = std::vector<double>{-1, 0.5, 2}[k];
    EXPECT_NEAR(out[0].getF(k), 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(out[1].getF(k), 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))), 1e-6);
  }
  EXPECT_EQ(values(out[2]), (std::vector<double>{-128, -5, 0}));  // -(-128) wraps in i8
  EXPECT_EQ(values(out[3]), (std::vector<double>{127, -6, -1}));
  EXPECT_EQ(values(out[4]), (std::vector<double>{0, 1}));
}

}  // namespace
