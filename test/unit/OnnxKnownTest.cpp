// Unit tests of the ONNX importer's folding of known integer tensors of any rank (frontend/OnnxKnown.cpp).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "frontend/OnnxInternal.h"

using namespace dscc;
using namespace dscc::frontend;

namespace {

DimExpr S(const char* n) { return DimExpr::symbol(n); }

// An importer context at opset 18 without facts.
struct Fold {
  Ctx c;
  Fold() { c.opset = 18; }
  // Binds `name` to known contents `e` of shape `shape`.
  void known(const std::string& name, const std::vector<int64_t>& shape, std::vector<DimExpr> e,
             DType dt = DType::I64) {
    c.vals[name] = knownValue(dt, shape, std::move(e));
  }
  void ints(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int64_t>& v) {
    std::vector<DimExpr> e;
    for (int64_t x : v) e.push_back(DimExpr(x));
    known(name, shape, e);
  }
  // Folds node `op` (inputs, output "y", integer-list and integer attributes); true when it folded.
  bool run(const std::string& op, const std::vector<std::string>& ins,
           const std::vector<std::pair<std::string, std::vector<int64_t>>>& listAttrs = {},
           const std::vector<std::pair<std::string, int64_t>>& intAttrs = {}) {
    onnx::NodeProto n;
    n.set_op_type(op);
    for (const auto& i : ins) n.add_input(i);
    n.add_output("y");
    for (const auto& [k, v] : listAttrs) {
      auto* a = n.add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : v) a->add_ints(x);
    }
    for (const auto& [k, v] : intAttrs) {
      auto* a = n.add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
    c.vals.erase("y");
    return foldNode(c, n);
  }
  std::vector<int64_t> shape() { return *knownShape(c.vals.at("y")); }
  std::vector<DimExpr> elems() { return *c.vals.at("y").elems; }
};

}  // namespace

// TorchScript's F.pad: amounts (last dim first, before/after) as a [-1, 2] matrix, rows reversed, transposed, flat.
TEST(OnnxKnown, PadMatrixRoute) {
  Fold f;
  DimExpr bh = DimExpr::mod(S("H"), DimExpr(3)), eh = DimExpr::mod(DimExpr(4) - DimExpr::mod(S("H"), DimExpr(4)), DimExpr(4));
  DimExpr bw = DimExpr::mod(S("W"), DimExpr(3)), ew = S("W") * DimExpr(2);
  f.known("given", {8}, {DimExpr(0), DimExpr(0), bw, ew, bh, eh, DimExpr(0), DimExpr(0)});
  f.ints("rowshape", {2}, {-1, 2});
  f.ints("neg1", {1}, {-1});
  f.ints("tostart", {1}, {INT64_MIN + 1});
  f.ints("zero", {1}, {0});
  ASSERT_TRUE(f.run("Reshape", {"given", "rowshape"}));
  f.c.vals["mat"] = f.c.vals.at("y");
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{4, 2}));
  ASSERT_TRUE(f.run("Slice", {"mat", "neg1", "tostart", "zero", "neg1"}));
  f.c.vals["rows"] = f.c.vals.at("y");
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(f.elems(), (std::vector<DimExpr>{DimExpr(0), DimExpr(0), bh, eh, bw, ew, DimExpr(0), DimExpr(0)}));
  ASSERT_TRUE(f.run("Transpose", {"rows"}, {{"perm", {1, 0}}}));
  f.c.vals["cols"] = f.c.vals.at("y");
  ASSERT_TRUE(f.run("Reshape", {"cols", "neg1"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{8}));
  EXPECT_EQ(f.elems(), (std::vector<DimExpr>{DimExpr(0), bh, bw, DimExpr(0), DimExpr(0), eh, ew, DimExpr(0)}));
  // Cast keeps the shape and the elements.
  f.c.vals["flat"] = f.c.vals.at("y");
  ASSERT_TRUE(f.run("Cast", {"flat"}, {}, {{"to", onnx::TensorProto::INT32}}));
  EXPECT_EQ(f.c.vals.at("y").type.dtype, DType::I32);
  EXPECT_EQ(f.elems()[5], eh);
}

TEST(OnnxKnown, GatherAnyAxis) {
  Fold f;
  f.known("m", {2, 3}, {S("a"), S("b"), S("c"), S("d"), S("e"), DimExpr(7)});
  f.ints("idx", {2, 2}, {2, 0, -1, 1});
  ASSERT_TRUE(f.run("Gather", {"m", "idx"}, {}, {{"axis", 1}}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(f.elems(), (std::vector<DimExpr>{S("c"), S("a"), S("c"), S("b"), DimExpr(7), S("d"), DimExpr(7), S("e")}));
  f.ints("row", {}, {1});
  ASSERT_TRUE(f.run("Gather", {"m", "row"}, {}, {{"axis", 0}}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(f.elems(), (std::vector<DimExpr>{S("d"), S("e"), DimExpr(7)}));
  f.ints("bad", {1}, {3});
  EXPECT_THROW(f.run("Gather", {"m", "bad"}, {}, {{"axis", 1}}), ImportError);
}

TEST(OnnxKnown, ConcatSqueezeUnsqueezeFlatten) {
  Fold f;
  f.known("a", {2, 1}, {S("a"), S("b")});
  f.known("b", {2, 2}, {DimExpr(1), DimExpr(2), DimExpr(3), DimExpr(4)});
  ASSERT_TRUE(f.run("Concat", {"a", "b"}, {}, {{"axis", -1}}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.elems(), (std::vector<DimExpr>{S("a"), DimExpr(1), DimExpr(2), S("b"), DimExpr(3), DimExpr(4)}));
  f.c.vals["m"] = f.c.vals.at("y");
  f.ints("ax", {2}, {0, -1});
  ASSERT_TRUE(f.run("Unsqueeze", {"m", "ax"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{1, 2, 3, 1}));
  f.c.vals["u"] = f.c.vals.at("y");
  ASSERT_TRUE(f.run("Squeeze", {"u"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 3}));
  ASSERT_TRUE(f.run("Flatten", {"u"}, {}, {{"axis", 2}}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.elems()[3], S("b"));
  // A squeeze of an axis that is not 1 is left to the op (which refuses it).
  f.ints("ax1", {1}, {1});
  EXPECT_FALSE(f.run("Squeeze", {"u", "ax1"}));
}

TEST(OnnxKnown, SliceNegativeStepsAndClamping) {
  Fold f;
  f.known("m", {2, 4}, {S("a"), S("b"), S("c"), S("d"), DimExpr(5), DimExpr(6), DimExpr(7), DimExpr(8)});
  f.ints("starts", {2}, {100, -1});
  f.ints("ends", {2}, {INT64_MIN, -100});
  f.ints("axes", {2}, {1, 0});
  f.ints("steps", {2}, {-2, -1});
  ASSERT_TRUE(f.run("Slice", {"m", "starts", "ends", "axes", "steps"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.elems(), (std::vector<DimExpr>{DimExpr(8), DimExpr(6), S("d"), S("b")}));
  // A step as large as an int64 takes one element, without overflow.
  f.ints("s0", {1}, {0});
  f.ints("e0", {1}, {INT64_MAX});
  f.ints("a1", {1}, {1});
  f.ints("big", {1}, {INT64_MAX});
  ASSERT_TRUE(f.run("Slice", {"m", "s0", "e0", "a1", "big"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 1}));
  // Symbolic bounds are not folded.
  f.known("sym", {1}, {S("n")});
  EXPECT_FALSE(f.run("Slice", {"m", "s0", "sym", "a1"}));
}

TEST(OnnxKnown, BroadcastArithmeticWhereExpand) {
  Fold f;
  f.known("col", {2, 1}, {S("a"), S("b")});
  f.ints("row", {3}, {1, 2, 3});
  ASSERT_TRUE(f.run("Add", {"col", "row"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.elems()[5], S("b") + DimExpr(3));
  ASSERT_TRUE(f.run("Mul", {"row", "col"}));
  EXPECT_EQ(f.elems()[4], S("b") * DimExpr(2));
  f.ints("cond", {1, 3}, {1, 0, 1});
  f.c.vals.at("cond").type.dtype = DType::I1;
  f.ints("zero", {}, {0});
  ASSERT_TRUE(f.run("Where", {"cond", "col", "zero"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.elems(), (std::vector<DimExpr>{S("a"), DimExpr(0), S("a"), S("b"), DimExpr(0), S("b")}));
  f.ints("to", {2}, {3, 2});
  f.known("pair", {1, 2}, {S("p"), S("q")});
  ASSERT_TRUE(f.run("Expand", {"pair", "to"}));
  EXPECT_EQ(f.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(f.elems()[4], S("p"));
  ASSERT_TRUE(f.run("Neg", {"pair"}));
  EXPECT_EQ(f.elems()[1], -S("q"));
  // Shapes that do not broadcast, and results over the limit of known elements, are left to the ops.
  f.ints("four", {4}, {1, 2, 3, 4});
  EXPECT_FALSE(f.run("Add", {"row", "four"}));
  f.ints("huge", {2}, {16, 8});
  EXPECT_FALSE(f.run("Expand", {"pair", "huge"}));
}

TEST(OnnxKnown, ConstantsOfAnyRankAreKnown) {
  auto t = std::make_shared<Tensor>(Tensor::zeros(DType::I64, {2, 2, 2}));
  for (int64_t k = 0; k < 8; ++k) t->setI(k, k);
  OValue o = constantValue(t);
  ASSERT_TRUE(o.elems.has_value());
  EXPECT_EQ(*knownShape(o), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ((*o.elems)[7], DimExpr(7));
  auto big = std::make_shared<Tensor>(Tensor::zeros(DType::I64, {5, 13}));
  EXPECT_FALSE(constantValue(big).elems.has_value());
}
