// The index maps of ir/IndexMap.h on concrete indices, against the interpreter's results for each op.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "ir/IndexMap.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"

using namespace dscc;

namespace {

class IndexMapTest : public ::testing::Test {
 protected:
  IndexMapTest() : diags_(sm_, os_) { diags_.setCapture(true); }

  // Parses `text`, runs it on random inputs of `shapes` (floats, or integers
  // in [lo, hi) for i64 arguments) and returns the op defining the result.
  const Operation* run(const std::string& text, const std::vector<std::vector<int64_t>>& shapes, int64_t lo = -5,
                       int64_t hi = 5) {
    int id = sm_.addBuffer("t.dsc", text);
    mod_ = parseModule(sm_, id, diags_);
    if (!mod_) {
      ADD_FAILURE() << "parse failed";
      return nullptr;
    }
    Function* f = mod_->entry();
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    std::uniform_int_distribution<int64_t> ui(lo, hi - 1);
    inputs_.clear();
    for (size_t k = 0; k < shapes.size(); ++k) {
      DType dt = f->args[k]->type.dtype;
      Tensor t = Tensor::zeros(dt, shapes[k]);
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (isFloat(dt)) t.setF(i, u(rng));
        else t.setI(i, ui(rng));
      }
      inputs_.push_back(t);
      arith_.shapes[f->args[k].get()] = shapes[k];
    }
    outputs_.clear();
    if (!interpret(*f, inputs_, outputs_, diags_, &arith_.env)) {
      ADD_FAILURE() << "interpreter failed: " << os_.str();
      return nullptr;
    }
    const Operation* op = f->returns[0]->def;
    arith_.shapes[op->result()] = outputs_[0].shape;
    return op;
  }

  // Element `idx` of argument k (row-major).
  double at(size_t k, const std::vector<int64_t>& idx) {
    const Tensor& t = inputs_[k];
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      EXPECT_GE(idx[d], 0);
      EXPECT_LT(idx[d], t.shape[d]);
      flat = flat * t.shape[d] + idx[d];
    }
    return isFloat(t.dtype) ? t.getF(flat) : static_cast<double>(t.getI(flat));
  }

  // Calls fn(flat, multi-index) for every element of the result.
  template <class Fn>
  void forEachOut(Fn fn) {
    const Tensor& o = outputs_[0];
    ASSERT_GT(o.numel(), 0);
    for (int64_t flat = 0; flat < o.numel(); ++flat) {
      std::vector<int64_t> idx(o.shape.size());
      int64_t rest = flat;
      for (size_t d = idx.size(); d-- > 0;) {
        idx[d] = rest % o.shape[d];
        rest /= o.shape[d];
      }
      fn(flat, idx);
    }
  }

  double out(int64_t flat) {
    const Tensor& o = outputs_[0];
    return isFloat(o.dtype) ? o.getF(flat) : static_cast<double>(o.getI(flat));
  }

  SourceMgr sm_;
  std::ostringstream os_;
  DiagEngine diags_;
  std::unique_ptr<Module> mod_;
  std::vector<Tensor> inputs_, outputs_;
  IntIndexArith arith_;
};

TEST_F(IndexMapTest, Patterns) {
  const Operation* op = run("func @f(%x: f32[3, 4], %y: f32[4]) -> f32[3, 4] {\n  %r = add %x, %y\n  return %r\n}\n",
                            {{3, 4}, {4}});
  ASSERT_TRUE(op);
  EXPECT_EQ(opPattern(*op), OpPattern::Broadcast);
  op = run("func @f(%x: f32[3, 4]) -> f32[4, 3] {\n  %r = transpose %x\n  return %r\n}\n", {{3, 4}});
  ASSERT_TRUE(op);
  EXPECT_EQ(opPattern(*op), OpPattern::Injective);
  op = run("func @f(%x: f32[3, 4]) -> f32[3, 4] {\n  %r = exp %x\n  return %r\n}\n", {{3, 4}});
  ASSERT_TRUE(op);
  EXPECT_EQ(opPattern(*op), OpPattern::Elementwise);
}

TEST_F(IndexMapTest, BroadcastOfBothOperands) {
  const Operation* op = run("func @f(%x: f32[4, 1], %y: f32[3]) -> f32[4, 3] {\n  %r = sub %x, %y\n  return %r\n}\n",
                            {{4, 1}, {3}});
  ASSERT_TRUE(op);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    double a = at(0, broadcastSource(arith_, op->operands[0], op->result()->type.dims, oi));
    double b = at(1, broadcastSource(arith_, op->operands[1], op->result()->type.dims, oi));
    EXPECT_FLOAT_EQ(out(flat), static_cast<float>(a - b));
  });
}

TEST_F(IndexMapTest, BroadcastToStretchesSymbolicOnes) {
  // D is 1 at run time: the symbolic dim stretches, read at 0.
  const Operation* op = run(
      "func @f(%x: f32[3, D]) -> f32[2, 3, 5] where D in [1, 5] {\n  %r = broadcast_to %x : f32[2, 3, 5]\n  "
      "return %r\n}\n",
      {{3, 1}});
  ASSERT_TRUE(op);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    EXPECT_EQ(out(flat), at(0, broadcastSource(arith_, op->operands[0], op->result()->type.dims, oi)));
  });
}

TEST_F(IndexMapTest, Transpose) {
  const Operation* op =
      run("func @f(%x: f32[3, 4, 5]) -> f32[5, 3, 4] {\n  %r = transpose %x {perm = [2, 0, 1]}\n  return %r\n}\n",
          {{3, 4, 5}});
  ASSERT_TRUE(op);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    EXPECT_EQ(out(flat), at(0, transposeSource(arith_, *op, oi)));
  });
}

TEST_F(IndexMapTest, ReshapeSplitsAndMerges) {
  const Operation* op = run("func @f(%x: f32[6, 4]) -> f32[2, 3, 4] {\n  %r = reshape %x : f32[2, 3, 4]\n  return %r\n}\n",
                            {{6, 4}});
  ASSERT_TRUE(op);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    EXPECT_EQ(out(flat), at(0, reshapeSource(arith_, *op, oi)));
  });
  op = run("func @f(%x: f32[2, 3, 4]) -> f32[4, 6] {\n  %r = reshape %x : f32[4, 6]\n  return %r\n}\n", {{2, 3, 4}});
  ASSERT_TRUE(op);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    EXPECT_EQ(out(flat), at(0, reshapeSource(arith_, *op, oi)));
  });
}

TEST_F(IndexMapTest, SliceWithNegativeBoundsAndSteps) {
  for (const char* attrs : {"axes = [0, 1], starts = [-1, 1], ends = [-100, 100], steps = [-2, 2]",
                            "axes = [1], starts = [-2], ends = [0], steps = [-1]",
                            "starts = [1, -5], ends = [-1, 5], steps = [3, 1]"}) {
    std::string text = "func @f(%x: f32[7, 6]) -> f32[?, ?] {\n  %r = slice %x {" + std::string(attrs) +
                       "}\n  return %r\n}\n";
    const Operation* op = run(text, {{7, 6}});
    ASSERT_TRUE(op) << attrs;
    forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
      EXPECT_EQ(out(flat), at(0, sliceSource(arith_, *op, oi))) << attrs;
    });
  }
}

TEST_F(IndexMapTest, SliceWithSymbolicBound) {
  const Operation* op = run(
      "func @f(%x: f32[N, 3]) -> f32[?, 3] where N in [2, 9] {\n  %r = slice %x {axes = [0], starts = [1], ends = "
      "[N]}\n  return %r\n}\n",
      {{6, 3}});
  ASSERT_TRUE(op);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    EXPECT_EQ(out(flat), at(0, sliceSource(arith_, *op, oi)));
  });
}

TEST_F(IndexMapTest, ConcatPieces) {
  const Operation* op = run(
      "func @f(%a: f32[2, 3], %b: f32[2, 1], %c: f32[2, 4]) -> f32[2, 8] {\n  %r = concat %a, %b, %c {axis = 1}\n  "
      "return %r\n}\n",
      {{2, 3}, {2, 1}, {2, 4}});
  ASSERT_TRUE(op);
  std::vector<int64_t> off = concatOffsets(arith_, *op);
  ASSERT_EQ(off, (std::vector<int64_t>{0, 3, 4, 8}));
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    size_t k = 0;
    while (oi[1] >= off[k + 1]) ++k;
    EXPECT_EQ(out(flat), at(k, concatSource(arith_, *op, off, k, oi)));
  });
}

TEST_F(IndexMapTest, GatherWithNegativeIndices) {
  const Operation* op = run(
      "func @f(%x: f32[3, 5, 2], %i: i64[2, 4]) -> f32[3, 2, 4, 2] {\n  %r = gather %x, %i {axis = 1}\n  return "
      "%r\n}\n",
      {{3, 5, 2}, {2, 4}}, -5, 5);
  ASSERT_TRUE(op);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    int64_t w = static_cast<int64_t>(at(1, gatherIndexSource(arith_, *op, oi)));
    EXPECT_EQ(out(flat), at(0, gatherDataSource(arith_, *op, oi, w)));
  });
}

TEST_F(IndexMapTest, ReductionsOverAxisSets) {
  struct Case {
    const char* attrs;
    const char* type;
  };
  for (const Case& c : {Case{"axes = [0, 2]", "f32[4]"}, Case{"axes = [0, 2], keepdims = true", "f32[1, 4, 1]"},
                        Case{"axes = [-1]", "f32[3, 4]"}, Case{"axes = [1], keepdims = true", "f32[3, 1, 5]"}}) {
    const char* attrs = c.attrs;
    std::string text = "func @f(%x: f32[3, 4, 5]) -> " + std::string(c.type) + " {\n  %r = reduce_sum %x {" +
                       attrs + "}\n  return %r\n}\n";
    const Operation* op = run(text, {{3, 4, 5}});
    ASSERT_TRUE(op) << attrs;
    std::vector<size_t> axes = reducedAxes(*op);
    forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
      // Sum over every combination of the reduced loop variables.
      std::vector<int64_t> red(axes.size(), 0);
      double sum = 0;
      for (bool more = true; more;) {
        sum += at(0, reductionSource(arith_, *op, oi, red));
        more = false;
        for (size_t k = axes.size(); k-- > 0;) {
          if (++red[k] < inputs_[0].shape[axes[k]]) {
            more = true;
            break;
          }
          red[k] = 0;
        }
      }
      EXPECT_NEAR(out(flat), sum, 1e-5) << attrs;
    });
  }
}

TEST_F(IndexMapTest, ArgmaxAndIota) {
  const Operation* op =
      run("func @f(%x: f32[3, 6, 2]) -> i64[3, 2] {\n  %r = argmax %x {axis = 1}\n  return %r\n}\n", {{3, 6, 2}});
  ASSERT_TRUE(op);
  EXPECT_EQ(reducedAxes(*op), (std::vector<size_t>{1}));
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) {
    int64_t best = 0;
    for (int64_t j = 1; j < 6; ++j)
      if (at(0, reductionSource(arith_, *op, oi, {j})) > at(0, reductionSource(arith_, *op, oi, {best}))) best = j;
    EXPECT_EQ(out(flat), static_cast<double>(best));
  });
  op = run("func @f(%x: f32[3, 4]) -> f32[3, 4] {\n  %i = iota {axis = 1} : f32[3, 4]\n  %r = mul %i, %x\n  "
           "return %i\n}\n",
           {{3, 4}});
  ASSERT_TRUE(op);
  EXPECT_EQ(opAxis(*op, 2), 1u);
  forEachOut([&](int64_t flat, const std::vector<int64_t>& oi) { EXPECT_EQ(out(flat), static_cast<double>(oi[1])); });
}

}  // namespace
