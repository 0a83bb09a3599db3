// Generated loop kernels (codegen/) against the reference interpreter on the unfused program, at many sizes.
//
// Each program goes through the default pipeline; every loop kernel it yields
// is lowered, verified, JIT-compiled and called on random data, once over the
// whole range and once in three uneven chunks. Its outputs are compared with
// the values the interpreter computes for the same names in the original,
// unfused program. Kernel operands that the pipeline created (constants) are
// taken from the interpreter running the fused program, never from generated
// code. Tolerances: f32 rel 1e-5 + abs 1e-6, f64 rel 1e-12 + abs 1e-14,
// integers and i1 exact; NaN matches NaN.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "codegen/Jit.h"
#include "codegen/GenericKernel.h"
#include "codegen/KernelLowering.h"
#include "codegen/ReductionLowering.h"
#include "ir/Interpreter.h"
#include "ir/KernelKind.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"
#include "test/unit/CodegenHarness.h"

using namespace dscc;
using namespace dscc::codegen;
using namespace dscc::codegentest;

namespace {
const char* kFloatUnary = R"(
func @main(%x: T[N, D]) -> (T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D],
                            T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D]) {
  %neg = neg %x
  %abs = abs %x
  %exp = exp %x
  %log = log %abs
  %sqrt = sqrt %abs
  %rsqrt = rsqrt %abs
  %tanh = tanh %x
  %sigmoid = sigmoid %x
  %erf = erf %x
  %relu = relu %x
  %floor = floor %x
  %ceil = ceil %x
  %sin = sin %x
  %cos = cos %x
  %recip = reciprocal %x
  %s1 = add %neg, %exp
  %s2 = add %s1, %log
  %s3 = add %s2, %sqrt
  %s4 = add %s3, %rsqrt
  %s5 = add %s4, %tanh
  %s6 = add %s5, %sigmoid
  %s7 = add %s6, %erf
  %s8 = add %s7, %relu
  %s9 = add %s8, %floor
  %s10 = add %s9, %ceil
  %s11 = add %s10, %sin
  %s12 = add %s11, %cos
  %s13 = add %s12, %recip
  return %s13, %neg, %exp, %log, %sqrt, %rsqrt, %tanh, %sigmoid, %erf, %relu, %floor, %ceil, %sin, %cos, %recip, %abs
}
)";

// Binary ops with a row bias, a column and a NaN; compares on floors so
// that ties occur; select on a comparison.
const char* kFloatBinary = R"(
func @main(%x: T[N, D], %y: T[D], %z: T[N, 1]) -> (T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D],
    T[N, D], T[N, D], T[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], T[N, D]) {
  %add = add %x, %y
  %sub = sub %x, %z
  %mul = mul %y, %x
  %div = div %x, %y
  %ax = abs %x
  %pow = pow %ax, %y
  %max = max %x, %z
  %min = min %y, %x
  %zero = sub %x, %x
  %nan = div %zero, %zero
  %maxnan = max %nan, %x
  %minnan = min %x, %nan
  %fx = floor %x
  %fy = floor %y
  %eq = eq %fx, %fy
  %ne = ne %fx, %fy
  %lt = lt %fx, %fy
  %le = le %fx, %fy
  %gt = gt %fx, %fy
  %ge = ge %nan, %fy
  %sel = select %lt, %x, %z
  return %add, %sub, %mul, %div, %pow, %max, %min, %maxnan, %minnan, %eq, %ne, %lt, %le, %gt, %ge, %sel
}
)";

// Integer ops against a row vector: wrapping arithmetic, truncating division,
// bitwise logic, signed compares.
const char* kIntOps = R"(
func @main(%x: T[N, D], %y: T[D]) -> (T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D], T[N, D],
    T[N, D], T[N, D], T[N, D], T[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D],
    i1[N, D], T[N, D]) {
  %neg = neg %x
  %abs = abs %x
  %relu = relu %x
  %not = not %x
  %add = add %x, %y
  %sub = sub %y, %x
  %mul = mul %x, %y
  %div = div %x, %y
  %max = max %x, %y
  %min = min %y, %x
  %and = and %x, %y
  %or = or %x, %y
  %eq = eq %x, %y
  %ne = ne %x, %y
  %lt = lt %x, %y
  %le = le %x, %y
  %gt = gt %x, %y
  %ge = ge %x, %y
  %sel = select %lt, %x, %y
  return %neg, %abs, %relu, %not, %add, %sub, %mul, %div, %max, %min, %and, %or,
         %eq, %ne, %lt, %le, %gt, %ge, %sel
}
)";

const char* kIntPow = R"(
func @main(%x: T[N, D], %e: T[D]) -> T[N, D] {
  %p = pow %x, %e
  return %p
}
)";

// i1 logic, i1 compares (false < true) and select of every value dtype.
const char* kBoolOps = R"(
func @main(%a: i1[N, D], %b: i1[D], %x: f64[N, D], %i: i32[N, D], %j: i64[D]) ->
    (i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], i1[N, D], f64[N, D],
     i32[N, D], i64[N, D], i1[N, D]) {
  %not = not %a
  %and = and %a, %b
  %or = or %not, %b
  %eq = eq %a, %b
  %ne = ne %a, %b
  %lt = lt %a, %b
  %le = le %a, %b
  %gt = gt %a, %b
  %ge = ge %a, %b
  %nx = neg %x
  %sx = select %a, %x, %nx
  %ni = neg %i
  %si = select %b, %i, %ni
  %jj = neg %j
  %sj = select %a, %j, %jj
  %sb = select %lt, %a, %not
  return %not, %and, %or, %eq, %ne, %lt, %le, %gt, %ge, %sx, %si, %sj, %sb
}
)";

// Every cast between f32, f64, i64, i32, i8 and i1, on values large enough
// to truncate, wrap and round twice, plus infinities and NaN.
const char* kCasts = R"(
func @main(%x: f32[N, D], %l: i64[N, D], %b: i1[N, D], %e: f64[N, D]) -> (
    i64[N, D], i32[N, D], i8[N, D], i1[N, D], f32[N, D], f32[N, D],
    f64[N, D], i64[N, D], i32[N, D], i8[N, D], i1[N, D],
    f32[N, D], i64[N, D], i32[N, D], i8[N, D], i1[N, D],
    f32[N, D], f64[N, D], i32[N, D], i8[N, D], i1[N, D],
    f32[N, D], f64[N, D], i64[N, D], i8[N, D], i1[N, D],
    f32[N, D], f64[N, D], i64[N, D], i32[N, D], i1[N, D],
    f32[N, D], f64[N, D], i64[N, D], i32[N, D], i8[N, D],
    i32[N, D], i64[N, D], i1[N, D], i32[N, D], i64[N, D]) {
  %k = constant 1000.75 : f32[]
  %big = mul %x, %k
  %kl = constant 98765432109 : i64[]
  %bl = mul %l, %kl
  %d = cast %big {to = f64}
  %i = cast %bl {to = i32}
  %s = cast %big {to = i8}
  %f2d = cast %big {to = f64}
  %f2l = cast %big {to = i64}
  %f2i = cast %big {to = i32}
  %f2s = cast %big {to = i8}
  %f2b = cast %big {to = i1}
  %d2f = cast %d {to = f32}
  %d2l = cast %d {to = i64}
  %d2i = cast %d {to = i32}
  %d2s = cast %d {to = i8}
  %d2b = cast %d {to = i1}
  %l2f = cast %bl {to = f32}
  %l2d = cast %bl {to = f64}
  %l2i = cast %bl {to = i32}
  %l2s = cast %bl {to = i8}
  %l2b = cast %bl {to = i1}
  %i2f = cast %i {to = f32}
  %i2d = cast %i {to = f64}
  %i2l = cast %i {to = i64}
  %i2s = cast %i {to = i8}
  %i2b = cast %i {to = i1}
  %s2f = cast %s {to = f32}
  %s2d = cast %s {to = f64}
  %s2l = cast %s {to = i64}
  %s2i = cast %s {to = i32}
  %s2b = cast %s {to = i1}
  %b2f = cast %b {to = f32}
  %b2d = cast %b {to = f64}
  %b2l = cast %b {to = i64}
  %b2i = cast %b {to = i32}
  %b2s = cast %b {to = i8}
  %zero = sub %x, %x
  %inf = div %x, %zero
  %nan = div %zero, %zero
  %inf2i = cast %inf {to = i32}
  %inf2l = cast %inf {to = i64}
  %nan2b = cast %nan {to = i1}
  %nan2i = cast %nan {to = i32}
  %zero2l = cast %zero {to = i64}
  %e2l = cast %e {to = i64}
  %e2i = cast %e {to = i32}
  %e2s = cast %e {to = i8}
  %e2b = cast %e {to = i1}
  %e2f = cast %e {to = f32}
  %l2fdirect = cast %l {to = f32}
  return %e2l, %e2i, %e2s, %e2b, %e2f, %l2fdirect, %f2d, %f2l, %f2i, %f2s, %f2b, %d2f, %d2l, %d2i, %d2s, %d2b, %l2f, %l2d, %l2i, %l2s, %l2b,
         %i2f, %i2d, %i2l, %i2s, %i2b, %s2f, %s2d, %s2l, %s2i, %s2b, %b2f, %b2d, %b2l, %b2i, %b2s,
         %inf2i, %inf2l, %nan2b, %nan2i, %zero2l
}
)";

TEST(CodegenTest, Workloads) {
  std::string dir = std::string(DSCC_SOURCE_DIR) + "/bench/workloads/";
  // Both declare sizes from 1 up; T in gelu_bias scales rows of 3072.
  checkProgram(readFile(dir + "elementwise_chain.dsc"), grid({{"N", {1, 2, 7, 64, 65}}, {"D", {1, 3, 100, 129}}}));
  checkProgram(readFile(dir + "gelu_bias.dsc"), grid({{"T", {1, 2, 7, 33}}}));
}

TEST(CodegenTest, FloatUnaryOps) {
  for (const char* t : {"f32", "f64"}) {
    SCOPED_TRACE(t);
    Seen seen;
    checkProgram(withType(kFloatUnary, t), rowsByCols(), {.seen = &seen});
    for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Exp, OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Tanh,
                     OpKind::Sigmoid, OpKind::Erf, OpKind::Relu, OpKind::Floor, OpKind::Ceil, OpKind::Sin,
                     OpKind::Cos, OpKind::Reciprocal, OpKind::Add})
      EXPECT_TRUE(seen.ops.count(k)) << "no kernel computed " << opInfo(k).name;
  }
}

TEST(CodegenTest, GeluBothForms) {
  // The default pipeline decomposes gelu; fusing without decompose keeps the op.
  std::vector<const PassInfo*> passes = {lookupPass("infer-shapes"), lookupPass("fuse")};
  for (const char* t : {"f32", "f64"}) {
    SCOPED_TRACE(t);
    Seen seen;
    checkProgram(withType(R"(
func @main(%x: T[N, D], %b: T[D]) -> (T[N, D], T[N, D]) {
  %y = add %x, %b
  %e = gelu %y
  %t = gelu %y {approximate = "tanh"}
  return %e, %t
}
)", t), rowsByCols(), {.seen = &seen, .passes = passes});
    EXPECT_TRUE(seen.ops.count(OpKind::Gelu));
  }
}

TEST(CodegenTest, FloatBinaryCompareSelect) {
  for (const char* t : {"f32", "f64"}) {
    SCOPED_TRACE(t);
    Seen seen;
    checkProgram(withType(kFloatBinary, t), rowsByCols(), {.seen = &seen});
    for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Pow, OpKind::Max, OpKind::Min,
                     OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge, OpKind::Select})
      EXPECT_TRUE(seen.ops.count(k)) << "no kernel computed " << opInfo(k).name;
  }
}

TEST(CodegenTest, IntegerOps) {
  for (const char* t : {"i64", "i32", "i8"}) {
    // Wide values wrap to 0 in i8 now and then, which would divide by zero.
    for (Data d : {Data::Mixed, Data::Wide}) {
      if (d == Data::Wide && std::string(t) == "i8") continue;
      SCOPED_TRACE(std::string(t) + (d == Data::Wide ? " wide" : " small"));
      Seen seen;
      // x[0, 0] = INT_MIN and y[0] = -1: wrapping neg, abs and INT_MIN / -1.
      auto intMin = [](std::vector<Tensor>& in) {
        if (in[0].numel() == 0) return;
        int bits = static_cast<int>(dtypeSize(in[0].dtype)) * 8;
        in[0].setI(0, bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1)));
        in[1].setI(0, -1);
      };
      checkProgram(withType(kIntOps, t), rowsByCols(), {.data = d, .seen = &seen, .special = intMin});
      for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Relu, OpKind::Not, OpKind::Add, OpKind::Sub, OpKind::Mul,
                       OpKind::Div, OpKind::Max, OpKind::Min, OpKind::And, OpKind::Or, OpKind::Eq, OpKind::Ne,
                       OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge, OpKind::Select})
        EXPECT_TRUE(seen.ops.count(k)) << "no kernel computed " << opInfo(k).name;
    }
    SCOPED_TRACE(std::string(t) + " pow");
    checkProgram(withType(kIntPow, t), rowsByCols(), {.data = Data::Positive});
  }
}

TEST(CodegenTest, BoolOps) {
  Seen seen;
  // Any nonzero byte is true, as the interpreter reads i1.
  auto byteTwo = [](std::vector<Tensor>& in) {
    if (in[0].numel() > 0) in[0].bytes[0] = 2;
  };
  checkProgram(kBoolOps, rowsByCols(), {.seen = &seen, .special = byteTwo});
  for (OpKind k : {OpKind::Not, OpKind::And, OpKind::Or, OpKind::Eq, OpKind::Lt, OpKind::Ge, OpKind::Select})
    EXPECT_TRUE(seen.ops.count(k)) << "no kernel computed " << opInfo(k).name;
  EXPECT_TRUE(seen.dtypes.count(DType::I1));
}

TEST(CodegenTest, Casts) {
  Seen seen;
  auto edges = [](std::vector<Tensor>& in) {
    // f64 values past i32 and i64, infinities, NaN, -0, halves; the i64
    // 2^60 + 2^36 + 1 rounds to a different f32 directly than through f64.
    const double e[] = {3e9, -3e9, 1e19, -1e19, INFINITY, -INFINITY, NAN, -0.0, 2.5, -2.5, 1e-310};
    for (int64_t i = 0; i < in[3].numel() && i < 11; ++i) in[3].setF(i, e[i]);
    if (in[1].numel() > 0) in[1].setI(0, (int64_t(1) << 60) + (int64_t(1) << 36) + 1);
  };
  // Conversions are exact operations: compared bit for bit.
  checkProgram(kCasts, rowsByCols(), {.data = Data::Wide, .seen = &seen, .special = edges, .exact = true});
  EXPECT_TRUE(seen.ops.count(OpKind::Cast));
  for (DType d : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8, DType::I1})
    EXPECT_TRUE(seen.dtypes.count(d)) << "no cast from " << dtypeName(d);
}

TEST(CodegenTest, BroadcastCorners) {
  // Size-1 dims on both sides, a scalar, and a lower-rank operand.
  checkProgram(R"(
func @main(%x: f32[N, 1], %y: f32[1, D], %s: f32[], %r: f32[D]) -> f32[N, D] {
  %a = add %x, %y
  %b = mul %a, %s
  %c = sub %b, %r
  return %c
}
)", rowsByCols());
  // Rank 3 with broadcasts in the middle and inner dims: [N, 3, D].
  checkProgram(R"(
func @main(%x: f32[N, 3, D], %y: f32[3, 1], %z: f32[D], %w: f32[N, 1, 1]) -> f32[N, 3, D] {
  %a = add %x, %y
  %b = mul %a, %z
  %c = sub %b, %w
  return %c
}
)", rowsByCols());
  // Same shapes in 3-D: the dims merge into one flat loop.
  checkProgram(R"(
func @main(%x: f64[A, B, C], %y: f64[A, B, C]) -> f64[A, B, C] {
  %a = mul %x, %y
  %b = add %a, %x
  return %b
}
)", grid({{"A", {0, 1, 3}}, {"B", {1, 2, 5}}, {"C", {1, 7, 33}}}));
  // A rank-0 kernel.
  checkProgram(R"(
func @main(%x: f32[], %y: f32[]) -> f32[] {
  %a = mul %x, %y
  %b = exp %a
  return %b
}
)", {DimBindings{}});
}

TEST(CodegenTest, RunTimeBroadcast) {
  // Symbolic dims that are 1 only at run time: [bcast(N, M), bcast(D, E)].
  // The innermost one takes the strided copy of the row loop.
  std::vector<DimBindings> sizes;
  for (int64_t n : {0, 1, 7, 65})
    for (int64_t m : {int64_t(1), n})
      for (int64_t d : {1, 3, 129})
        for (int64_t e : {int64_t(1), d}) sizes.push_back({{"N", n}, {"M", m}, {"D", d}, {"E", e}});
  Seen seen;
  checkProgram(R"(
func @main(%x: f32[N, D], %y: f32[M, E], %z: f32[E]) -> f32[bcast(N, M), bcast(D, E)] {
  %a = add %x, %y
  %b = mul %a, %z
  %c = tanh %b
  return %c
}
)", sizes, {.seen = &seen});
  EXPECT_EQ(seen.kernels, 1);
}

TEST(CodegenTest, DimExpressions) {
  // Each kind of atom sizes a middle or innermost loop, where a wrong value
  // changes which element is read: floordiv, ceildiv, min (three loops) ...
  checkProgram(R"(
func @main(%n: f32[N], %d: f32[D], %x: f32[floordiv(N, 2), ceildiv(D, 3), min(N, D) + 1],
           %y: f32[ceildiv(D, 3), 1], %w: f32[min(N, D) + 1]) -> f32[floordiv(N, 2), ceildiv(D, 3), min(N, D) + 1] {
  %a = add %x, %y
  %b = mul %a, %w
  return %b
}
)", rowsByCols());
  // ... floordiv and mod of negative values (floor, not C's truncation), max ...
  checkProgram(R"(
func @main(%n: f32[N], %d: f32[D], %x: f32[2, floordiv(N - 3, 2) + 2, max(N, D) % 3 + (N - 5) % 4],
           %y: f32[floordiv(N - 3, 2) + 2, 1], %w: f32[max(N, D) % 3 + (N - 5) % 4])
    -> f32[2, floordiv(N - 3, 2) + 2, max(N, D) % 3 + (N - 5) % 4] {
  %a = add %x, %y
  %b = mul %a, %w
  return %b
}
)", rowsByCols());
  // ... exact division and a polynomial.
  checkProgram(R"(
func @main(%h: f32[H], %x: f32[2, H / 4, 2 * D + 1], %y: f32[H / 4, 1], %z: f32[2 * D + 1])
    -> f32[2, H / 4, 2 * D + 1] {
  %a = mul %x, %y
  %b = add %a, %z
  return %b
}
)", grid({{"H", {0, 4, 12, 260}}, {"D", {0, 1, 50}}}));
}

TEST(CodegenTest, InPlaceUpdate) {
  // The header allows an output to be the buffer of a same-shape input.
  const char* text = R"(
func @main(%x: f32[N, D], %y: f32[D]) -> f32[N, D] {
  %a = add %x, %y
  %b = tanh %a
  return %b
}
)";
  auto p = parse(text, defaultPipeline());
  auto ref = parse(text, {});
  ASSERT_TRUE(p && ref);
  std::vector<const Operation*> kernels = loopKernels(*p->fn);
  ASSERT_EQ(kernels.size(), 1u);
  CodeModule cm("inplace");
  LoweredKernel lk = lowerLoopKernel(*kernels[0], cm, "k");
  ASSERT_TRUE(lk.ok()) << lk.error;
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit && jit->addModule(std::move(cm), &err)) << err;
  auto fn = reinterpret_cast<LoopKernelFn>(jit->lookup("k", &err));
  ASSERT_TRUE(fn) << err;
  std::mt19937_64 rng(7);
  Tensor x = randomTensor(DType::F32, {5, 67}, Data::Mixed, rng), y = randomTensor(DType::F32, {67}, Data::Mixed, rng);
  std::vector<Tensor> want;
  ASSERT_TRUE(interpret(*ref->fn, {x, y}, want, ref->diags)) << ref->errors();
  int64_t sizes[] = {67, 5};  // D, N
  void* in[] = {x.bytes.data(), y.bytes.data()};
  void* out[] = {x.bytes.data()};
  fn(in, out, sizes, 0, 100);
  fn(in, out, sizes, 100, 5 * 67);
  EXPECT_EQ(compare(x.bytes.data(), want[0], false), "");
}

// A kernel's form is planned once and every version lowers from it: the scalar and a broadcast-free vector
// version of one loop kernel from one form, each against the interpreter; a form given to another kind's lowering
// is refused with an error, and no function is left.
TEST(CodegenTest, VersionsLowerFromOneForm) {
  const char* text = R"(
func @main(%x: f32[N, D], %y: f32[N, E]) -> f32[N, D] {
  %a = add %x, %y
  %b = tanh %a
  return %b
}
)";
  auto p = parse(text, defaultPipeline());
  auto ref = parse(text, {});
  ASSERT_TRUE(p && ref);
  std::vector<const Operation*> kernels = loopKernels(*p->fn);
  ASSERT_EQ(kernels.size(), 1u);
  std::string why;
  std::shared_ptr<const KernelForm> form = planLoopKernel(*kernels[0], &why);
  ASSERT_TRUE(form) << why;
  EXPECT_FALSE(form->iface.guards.broadcastPairs.empty()) << "E may broadcast to D at run time";
  KernelVariant plain, wide;
  wide.vectorWidth = 8;
  wide.broadcastFree = true;
  CodeModule cm("forms");
  LoweredKernel a = lowerLoopKernel(*form, cm, "plain", plain);
  LoweredKernel b = lowerLoopKernel(*form, cm, "wide", wide);
  ASSERT_TRUE(a.ok() && b.ok()) << a.error << b.error;
  CodeModule other("other");
  for (LoweredKernel lk : {lowerGenericKernel(*form, other, "g"), lowerStitchKernel(*form, other, "s"),
                           lowerInputKernel(*form, other, "i")}) {
    EXPECT_FALSE(lk.ok());
    EXPECT_NE(lk.error.find("another kind's form"), std::string::npos) << lk.error;
  }
  EXPECT_EQ(emitLLVMText(other).find("define"), std::string::npos) << "a refused form left a function";
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit && jit->addModule(std::move(cm), &err)) << err;
  std::mt19937_64 rng(9);
  Tensor x = randomTensor(DType::F32, {3, 40}, Data::Mixed, rng), y = randomTensor(DType::F32, {3, 40}, Data::Mixed, rng);
  std::vector<Tensor> want;
  ASSERT_TRUE(interpret(*ref->fn, {x, y}, want, ref->diags)) << ref->errors();
  for (const char* name : {"plain", "wide"}) {
    auto fn = reinterpret_cast<LoopKernelFn>(jit->lookup(name, &err));
    ASSERT_TRUE(fn) << err;
    Tensor out = randomTensor(DType::F32, {3, 40}, Data::Mixed, rng);
    int64_t sizes[] = {40, 40, 3};  // D, E, N (D a multiple of the vector width: its guard)
    void* in[] = {x.bytes.data(), y.bytes.data()};
    void* outs[] = {out.bytes.data()};
    fn(in, outs, sizes, 0, 3 * 40);
    EXPECT_EQ(compare(out.bytes.data(), want[0], false), "") << name;
  }
}

TEST(CodegenTest, UnsupportedKernelsGiveErrors) {
  auto expectError = [](const std::string& text, const std::string& needle) {
    auto p = parse(text, defaultPipeline());
    ASSERT_TRUE(p);
    bool any = false;
    for (const auto& op : p->fn->ops) {
      if (op->kind != OpKind::Fusion) continue;
      any = true;
      // The planner names kernels with data movement generic itself
      // (ir/IndexMap.h readsAtKernelIndex); relabelled, they check that the
      // loop lowering still refuses them with a located error.
      if (kernelKindOf(*op) == KernelKind::Generic) setKernelKind(*op, KernelKind::Loop);
      CodeModule cm("bad");
      LoweredKernel lk = lowerLoopKernel(*op, cm, "k");
      EXPECT_FALSE(lk.ok());
      EXPECT_NE(lk.error.find(needle), std::string::npos) << lk.error;
      KernelInterface iface;
      EXPECT_EQ(describeLoopKernel(*op, iface), lk.error);
      EXPECT_EQ(emitLLVMText(cm).find("define"), std::string::npos) << "a failed lowering left a function";
    }
    EXPECT_TRUE(any);
  };
  // A transpose fused into a loop kernel.
  expectError(R"(
func @main(%x: f32[N, D]) -> f32[D, N] {
  %t = transpose %x
  %u = exp %t
  return %u
}
)", "'transpose'");
  // A concat fused into a loop kernel.
  expectError(R"(
func @main(%x: f32[N, D]) -> f32[N, D + D] {
  %c = concat %x, %x {axis = 1}
  %u = exp %c
  return %u
}
)", "'concat'");
  expectError(R"(
func @main(%x: f32[N, D]) -> f32[N, D] {
  %u = softmax %x
  return %u
}
)", "stitch");
}

TEST(CodegenTest, LLVMTextAndVectorisedInnerLoop) {
  auto p = parse(R"(
func @main(%x: f32[N, D], %y: f32[D]) -> f32[N, D] {
  %a = add %x, %y
  %b = mul %a, %x
  return %b
}
)", defaultPipeline());
  ASSERT_TRUE(p);
  std::vector<const Operation*> kernels = loopKernels(*p->fn);
  ASSERT_EQ(kernels.size(), 1u);
  CodeModule cm("vec");
  LoweredKernel lk = lowerLoopKernel(*kernels[0], cm, "bias_mul");
  ASSERT_TRUE(lk.ok()) << lk.error;
  EXPECT_EQ(lk.iface.symbols, (std::vector<std::string>{"D", "N"}));
  EXPECT_EQ(lk.iface.units, DimExpr::symbol("N") * DimExpr::symbol("D"));
  std::string text = emitLLVMText(cm);
  EXPECT_NE(text.find("define void @bias_mul(ptr"), std::string::npos) << text;
  EXPECT_EQ(emitLLVMText(cm), text) << "output is not deterministic";
  std::string err;
  auto jit = Jit::create(&err);
  ASSERT_TRUE(jit) << err;
  jit->optimize(cm);
  std::string opt = emitLLVMText(cm);
  // Unit-stride rows: the optimiser widens the inner loop to vectors.
  EXPECT_TRUE(std::regex_search(opt, std::regex("<[0-9]+ x float>"))) << opt;
  EXPECT_NE(jit->targetTriple().find("x86_64"), std::string::npos);
}

}  // namespace

// A generic kernel's gather check cell (ElementGenerator.h, gatherChecks): the host zeroes it; a bad index sets
// the flag, and word 1 keeps the smallest bad index where the indices are computed in the kernel or the kernel
// was planned for the GPU (leastIndices: its host reads the cell after the call, when the indices' buffer may
// hold another value); the CPU's plan keeps only the flag for operand indices (its host finds the first).
TEST(CodegenTest, GatherKeepsLeastIndexForGpu) {
  const std::string text = R"(
func @main(%w: f32[V, 3], %ids: i64[N]) -> f32[N, 3] {
  %e = gather %w, %ids {axis = 0}
  %t = tanh %e
  return %t
})";
  auto p = parse(text, defaultPipeline());
  ASSERT_TRUE(p) << "cannot plan";
  const Operation* kernel = nullptr;
  for (const auto& op : p->fn->ops)
    if (op->kind == OpKind::Fusion) kernel = op.get();
  ASSERT_TRUE(kernel && kernelKindOf(*kernel) == KernelKind::Generic);
  const int64_t V = 5, N = 7;
  std::mt19937_64 rng(11);
  Tensor w = randomTensor(DType::F32, {V, 3}, Data::Mixed, rng);
  for (bool gpu : {false, true})
    for (const std::vector<int64_t>& ids : std::vector<std::vector<int64_t>>{
             {0, 4, -5, -1, 2, 3, 1}, {2, 9, -8, 6, 0, -6, 5}, {1, 1, 1, 1, 1, 1, 9223372036854775807}}) {
      SCOPED_TRACE(std::string(gpu ? "GPU plan" : "CPU plan") + ", ids[1] = " + std::to_string(ids[1]));
      std::string e;
      std::shared_ptr<const KernelForm> form = planGenericKernel(*kernel, /*tiles=*/!gpu, false, &e, gpu);
      ASSERT_TRUE(form) << e;
      CodeModule cm("cells");
      LoweredKernel lk = lowerGenericKernel(*form, cm, "k");
      ASSERT_TRUE(lk.ok()) << lk.error;
      auto jit = Jit::create(&e);
      ASSERT_TRUE(jit && jit->addModule(std::move(cm), &e)) << e;
      auto fn = reinterpret_cast<KernelFn>(jit->lookup("k", &e));
      ASSERT_TRUE(fn) << e;
      std::optional<int64_t> bad;  // INT64_MAX itself is a bad index (its encoding is 0)
      for (int64_t v : ids)
        if (v < -V || v >= V) bad = std::min(bad.value_or(v), v);
      for (int threads : {1, 4}) {
        std::vector<float> out(N * 3);
        uint64_t cell[3] = {0, 0, 0x5A5A};
        void* in[] = {w.bytes.data(), const_cast<int64_t*>(ids.data()), cell};
        void* outs[] = {out.data()};
        std::vector<int64_t> sizes;
        DimBindings env;
        for (const std::string& s : form->iface.symbols) {
          sizes.push_back(s == "V" ? V : N);
          env[s] = sizes.back();
        }
        // Units are rows on the CPU (tiles) and flat elements on the GPU.
        const int64_t units = form->iface.units.evaluate(env).value_or(0);
        ASSERT_GT(units, 0);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
          ts.emplace_back([&, t] { fn(in, outs, sizes.data(), t * units / threads, (t + 1) * units / threads); });
        for (auto& th : ts) th.join();
        EXPECT_EQ(cell[2], 0x5A5Au) << "write past the cell";
        EXPECT_EQ(cell[0], bad ? 1u : 0u);
        if (!bad || !gpu) EXPECT_EQ(cell[1], 0u) << "word 1 kept without an index to keep";
        else EXPECT_EQ(decodeLeastIndex(cell[1]), *bad) << "not the smallest bad index";
        // Good indices read their rows; a bad one reads row 0 (the address stays in the buffer).
        for (int64_t n = 0; n < N; ++n) {
          int64_t row = ids[n] < -V || ids[n] >= V ? 0 : (ids[n] + V) % V;
          for (int64_t c = 0; c < 3; ++c)
            EXPECT_NEAR(out[n * 3 + c], std::tanh(w.getF(row * 3 + c)), 1e-6) << "element " << n << "," << c;
        }
      }
    }
}
