// Unit tests for .npy reading and writing, cross-checked against real NumPy.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "ir/Npy.h"

using namespace dscc;
namespace fs = std::filesystem;

namespace {

const DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                            DType::I64, DType::I32, DType::I8,   DType::I1};

/// A fresh directory per test, removed afterwards.
class NpyTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "dscc-npytest-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// Runs a Python script (with numpy imported as np and the temp dir as D)
  /// and returns its exit status; output goes to `out`.
  int python(const std::string& body, std::string* out = nullptr) {
    std::string script = path("script.py");
    std::ofstream(script) << "import numpy as np, os, sys\nD = " << '"' << dir_.string() << '"'
                          << "\n" << body << "\n";
    std::string log = path("python.log");
    int rc = std::system(("/usr/bin/python3 " + script + " > " + log + " 2>&1").c_str());
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    if (out) *out = ss.str();
    if (rc != 0) ADD_FAILURE() << "python failed:\n" << body << "\n---\n" << ss.str();
    return rc;
  }

  void writeBytes(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
  }

  /// Reads `name`, expecting failure; returns the message.
  std::string readError(const std::string& name) {
    std::string err;
    auto t = readNpy(path(name), &err);
    EXPECT_FALSE(t.has_value()) << name;
    EXPECT_NE(err.find(path(name)), std::string::npos) << err;
    return err;
  }

  fs::path dir_;
};

/// A v1.0 file with the given header dict text and body, padded like NumPy.
std::string npyFile(const std::string& dict, const std::string& body, int major = 1) {
  std::string header = dict;
  size_t pre = major == 1 ? 10 : 12;
  header += std::string(64 - (pre + header.size() + 1) % 64, ' ') + "\n";
  std::string f = "\x93NUMPY";
  f += char(major);
  f += char(0);
  for (size_t k = 0; k < (major == 1 ? 2u : 4u); ++k) f += char((header.size() >> (8 * k)) & 0xFF);
  return f + header + body;
}

Tensor randomTensor(DType dt, std::vector<int64_t> shape, std::mt19937_64& rng) {
  Tensor t = Tensor::zeros(dt, std::move(shape));
  std::uniform_real_distribution<double> real(0.01, 100.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double sign = rng() & 1 ? -1.0 : 1.0;
    int64_t mag = int64_t(rng() % 120) + 1;
    if (isFloat(dt)) t.setF(i, sign * real(rng));
    else if (dt == DType::I64) t.setI(i, int64_t(rng() | 1));
    else if (dt == DType::I32) t.setI(i, int64_t(int32_t(rng() | 1)));
    else if (dt == DType::I8) t.setI(i, int64_t(sign) * mag);
    else t.setI(i, int64_t(rng() & 1));
  }
  return t;
}

std::string hex(const std::vector<uint8_t>& b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

}  // namespace

TEST_F(NpyTest, RoundTripEveryDType) {
  std::mt19937_64 rng(42);
  const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {5}, {2, 3}, {2, 0, 3}, {3, 4, 5}};
  for (DType dt : kAllDTypes) {
    for (const auto& shape : shapes) {
      Tensor t = randomTensor(dt, shape, rng);
      std::string p = path("rt.npy");
      std::string err;
      ASSERT_TRUE(writeNpy(p, t, &err)) << err;
      // NumPy aligns the data to 64 bytes; our header must do the same.
      size_t fileSize = fs::file_size(p);
      EXPECT_EQ((fileSize - t.bytes.size()) % 64, 0u) << t.typeStr();
      auto back = readNpy(p, &err);
      ASSERT_TRUE(back.has_value()) << t.typeStr() << ": " << err;
      EXPECT_EQ(back->dtype, dt);
      EXPECT_EQ(back->shape, t.shape);
      EXPECT_EQ(back->bytes, t.bytes) << t.typeStr();
    }
  }
}

TEST_F(NpyTest, WritesNumPyStyleHeader) {
  Tensor t = Tensor::zeros(DType::I1, {5});
  std::string err;
  ASSERT_TRUE(writeNpy(path("h.npy"), t, &err)) << err;
  std::ifstream in(path("h.npy"), std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(all.size(), 64u + 5u);
  EXPECT_EQ(all.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t hlen = uint8_t(all[8]) | (uint8_t(all[9]) << 8);
  // 10 + 58 header chars + '\n' is 69, so the data starts at 128.
  EXPECT_EQ(10 + hlen, 128u);
  std::string header = all.substr(10, hlen);
  EXPECT_EQ(header.rfind("{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }", 0), 0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
}

TEST_F(NpyTest, NumPyReadsWhatWeWrite) {
  std::mt19937_64 rng(3);
  const char* npStr[] = {"<f4", "<f2", "|V2", "<f8", "<i8", "<i4", "|i1", "|b1"};
  std::string script = "out = open(os.path.join(D, 'seen.txt'), 'w')\n";
  std::vector<Tensor> written;
  int n = 0;
  for (DType dt : kAllDTypes) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {4}, {2, 3}, {2, 0}}) {
      written.push_back(randomTensor(dt, shape, rng));
      std::string name = "w" + std::to_string(n++) + ".npy";
      std::string err;
      ASSERT_TRUE(writeNpy(path(name), written.back(), &err)) << err;
      script += "a = np.load(os.path.join(D, '" + name + "'))\n"
                "out.write('%s %s %s\\n' % (a.dtype.str, list(a.shape), a.tobytes().hex()))\n";
    }
  }
  ASSERT_EQ(python(script), 0);
  std::ifstream seen(path("seen.txt"));
  for (const Tensor& t : written) {
    std::string line;
    ASSERT_TRUE(std::getline(seen, line));
    std::string shape = "[";
    for (size_t k = 0; k < t.shape.size(); ++k) shape += (k ? ", " : "") + std::to_string(t.shape[k]);
    shape += "]";
    std::string want = std::string(npStr[int(t.dtype)]) + " " + shape + " " + hex(t.bytes);
    EXPECT_EQ(line, want) << t.typeStr();
  }

  // Values, not just bytes: NumPy sees the numbers we stored.
  Tensor f = Tensor::zeros(DType::F32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) f.setF(i, i * 0.5 - 1);
  Tensor b = Tensor::zeros(DType::I1, {3});
  b.setI(0, 1);
  b.setI(2, 1);
  std::string err;
  ASSERT_TRUE(writeNpy(path("f.npy"), f, &err)) << err;
  ASSERT_TRUE(writeNpy(path("b.npy"), b, &err)) << err;
  EXPECT_EQ(python("a = np.load(os.path.join(D, 'f.npy'))\n"
                   "assert a.dtype == np.float32 and a.flags.c_contiguous\n"
                   "assert np.array_equal(a, (np.arange(6) * 0.5 - 1).reshape(2, 3)), a\n"
                   "b = np.load(os.path.join(D, 'b.npy'))\n"
                   "assert b.dtype == np.bool_ and b.tolist() == [True, False, True], b\n"),
            0);
}

TEST_F(NpyTest, ReadsFilesWrittenByNumPy) {
  ASSERT_EQ(python("s = lambda n, a: np.save(os.path.join(D, n), a)\n"
                   "s('f32.npy', (np.arange(6, dtype=np.float32) * 0.25 - 0.5).reshape(2, 3))\n"
                   "s('f64.npy', np.array([0.1, -1e300, 5e-324, 3.0]))\n"
                   "s('i64.npy', np.array([[-(2**63), 2**63 - 1], [7, -8]], dtype=np.int64))\n"
                   "s('i32.npy', np.array([-(2**31), 2**31 - 1, 0], dtype=np.int32))\n"
                   "s('i8.npy', np.array([-128, 127, -1, 5], dtype=np.int8))\n"
                   "s('bool.npy', np.array([[True, False], [False, True]]))\n"
                   "s('f16.npy', np.array([1.0, -2.0, 0.1, 65504.0, 2.0**-24, np.inf],"
                   " dtype=np.float16))\n"
                   "s('scalar.npy', np.float32(2.5))\n"
                   "s('empty.npy', np.zeros((3, 0), dtype=np.int32))\n"),
            0);
  std::string err;
  auto f32 = readNpy(path("f32.npy"), &err);
  ASSERT_TRUE(f32) << err;
  EXPECT_EQ(f32->typeStr(), "f32[2, 3]");
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(f32->getF(i), i * 0.25 - 0.5);

  auto f64 = readNpy(path("f64.npy"), &err);
  ASSERT_TRUE(f64) << err;
  EXPECT_EQ(f64->typeStr(), "f64[4]");
  EXPECT_EQ(f64->getF(0), 0.1);
  EXPECT_EQ(f64->getF(1), -1e300);
  EXPECT_EQ(f64->getF(2), 5e-324);
  EXPECT_EQ(f64->getF(3), 3.0);

  auto i64 = readNpy(path("i64.npy"), &err);
  ASSERT_TRUE(i64) << err;
  EXPECT_EQ(i64->typeStr(), "i64[2, 2]");
  EXPECT_EQ(i64->getI(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64->getI(1), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64->getI(2), 7);
  EXPECT_EQ(i64->getI(3), -8);

  auto i32 = readNpy(path("i32.npy"), &err);
  ASSERT_TRUE(i32) << err;
  EXPECT_EQ(i32->typeStr(), "i32[3]");
  EXPECT_EQ(i32->getI(0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32->getI(1), std::numeric_limits<int32_t>::max());

  auto i8 = readNpy(path("i8.npy"), &err);
  ASSERT_TRUE(i8) << err;
  EXPECT_EQ(i8->typeStr(), "i8[4]");
  EXPECT_EQ(i8->getI(0), -128);
  EXPECT_EQ(i8->getI(1), 127);
  EXPECT_EQ(i8->getI(2), -1);
  EXPECT_EQ(i8->getI(3), 5);

  auto bl = readNpy(path("bool.npy"), &err);
  ASSERT_TRUE(bl) << err;
  EXPECT_EQ(bl->typeStr(), "i1[2, 2]");
  EXPECT_EQ(bl->bytes, (std::vector<uint8_t>{1, 0, 0, 1}));

  auto f16 = readNpy(path("f16.npy"), &err);
  ASSERT_TRUE(f16) << err;
  EXPECT_EQ(f16->typeStr(), "f16[6]");
  const uint16_t wantHalf[] = {0x3C00, 0xC000, 0x2E66, 0x7BFF, 0x0001, 0x7C00};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(f16->data<uint16_t>()[k], wantHalf[k]) << k;

  auto sc = readNpy(path("scalar.npy"), &err);
  ASSERT_TRUE(sc) << err;
  EXPECT_EQ(sc->typeStr(), "f32[]");
  EXPECT_EQ(sc->getF(0), 2.5);

  auto em = readNpy(path("empty.npy"), &err);
  ASSERT_TRUE(em) << err;
  EXPECT_EQ(em->typeStr(), "i32[3, 0]");
  EXPECT_TRUE(em->bytes.empty());
}

TEST_F(NpyTest, ReadsFormatVersions2And3) {
  ASSERT_EQ(python("from numpy.lib import format as F\n"
                   "a = np.arange(12, dtype=np.int32).reshape(3, 4)\n"
                   "for v in [(1, 0), (2, 0), (3, 0)]:\n"
                   "    with open(os.path.join(D, 'v%d.npy' % v[0]), 'wb') as f:\n"
                   "        F.write_array(f, a, version=v)\n"),
            0);
  for (int v : {1, 2, 3}) {
    std::string err;
    std::string p = path("v" + std::to_string(v) + ".npy");
    std::ifstream in(p, std::ios::binary);
    char pre[8];
    in.read(pre, 8);
    EXPECT_EQ(pre[6], char(v));
    auto t = readNpy(p, &err);
    ASSERT_TRUE(t) << err;
    EXPECT_EQ(t->typeStr(), "i32[3, 4]");
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(t->getI(i), i);
  }
}

TEST_F(NpyTest, ConversionsMatchNumPy) {
  // NumPy's float->half and half->float casts are correctly rounded, so they
  // are an independent oracle for ours on random bit patterns and all halves.
  ASSERT_EQ(python("import warnings\nwarnings.simplefilter('ignore')\n"
                   "rng = np.random.default_rng(5)\n"
                   "bits = rng.integers(0, 2**32, 100000, dtype=np.uint64).astype(np.uint32)\n"
                   "hb = rng.integers(0, 0x7C00, 50000).astype(np.uint16).view(np.float16)\n"
                   "hb = hb.astype(np.float32).view(np.uint32)\n"
                   "off = rng.choice(np.array([0x1000, 0xFFF, 0x1001, 0x800], np.uint32), 50000)\n"
                   "sign = rng.integers(0, 2, 50000).astype(np.uint32) << 31\n"
                   "f = np.concatenate([bits, (hb + off) | sign]).view(np.float32)\n"
                   "np.save(os.path.join(D, 'f.npy'), f)\n"
                   "np.save(os.path.join(D, 'h.npy'), f.astype(np.float16))\n"
                   "allh = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)\n"
                   "np.save(os.path.join(D, 'allh.npy'), allh.astype(np.float32))\n"
                   "lo = rng.integers(0, 0x7BFF, 20000).astype(np.uint16)\n"
                   "a = lo.view(np.float16).astype(np.float64)\n"
                   "b = (lo + 1).view(np.float16).astype(np.float64)\n"
                   "mid = (a + b) / 2\n"
                   "eps = (b - a) * 2.0**-30\n"
                   "d = np.concatenate([rng.uniform(-70000, 70000, 20000), mid, mid + eps, mid - eps])\n"
                   "np.save(os.path.join(D, 'd.npy'), d)\n"
                   "np.save(os.path.join(D, 'dh.npy'), d.astype(np.float16))\n"),
            0);
  std::string err;
  auto f = readNpy(path("f.npy"), &err);
  auto h = readNpy(path("h.npy"), &err);
  ASSERT_TRUE(f && h) << err;
  ASSERT_EQ(f->numel(), h->numel());
  for (int64_t i = 0; i < f->numel(); ++i) {
    float x = f->data<float>()[i];
    uint16_t want = h->data<uint16_t>()[i];
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(halfToFloat(floatToHalf(x))));
      continue;
    }
    ASSERT_EQ(floatToHalf(x), want) << std::hexfloat << x;
  }

  auto allh = readNpy(path("allh.npy"), &err);
  ASSERT_TRUE(allh) << err;
  ASSERT_EQ(allh->numel(), 65536);
  for (int64_t i = 0; i < 65536; ++i) {
    float want = allh->data<float>()[i];
    float got = halfToFloat(uint16_t(i));
    if (std::isnan(want)) ASSERT_TRUE(std::isnan(got)) << i;
    else ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << i;
  }

  // From doubles, including points just past half midpoints where rounding
  // via float first would go wrong.
  auto d = readNpy(path("d.npy"), &err);
  auto dh = readNpy(path("dh.npy"), &err);
  ASSERT_TRUE(d && dh) << err;
  Tensor mine = Tensor::zeros(DType::F16, d->shape);
  for (int64_t i = 0; i < d->numel(); ++i) {
    mine.setF(i, d->getF(i));
    ASSERT_EQ(mine.data<uint16_t>()[i], dh->data<uint16_t>()[i]) << std::hexfloat << d->getF(i);
  }
}

TEST_F(NpyTest, RejectsUnsupportedNumPyFiles) {
  ASSERT_EQ(python("s = lambda n, a: np.save(os.path.join(D, n), a)\n"
                   "s('fortran.npy', np.asfortranarray(np.ones((2, 3), dtype=np.float32)))\n"
                   "s('big.npy', np.ones(3, dtype='>f4'))\n"
                   "s('u16.npy', np.ones(3, dtype=np.uint16))\n"
                   "s('c64.npy', np.ones(3, dtype=np.complex64))\n"
                   "s('struct.npy', np.zeros(2, dtype=[('a', '<i4'), ('b', '<f4')]))\n"
                   "s('obj.npy', np.array([1, 'x'], dtype=object))\n"
                   "s('trunc.npy', np.arange(10, dtype=np.float32))\n"
                   "p = os.path.join(D, 'trunc.npy')\n"
                   "data = open(p, 'rb').read()\n"
                   "open(p, 'wb').write(data[:-5])\n"
                   "open(os.path.join(D, 'trunchdr.npy'), 'wb').write(data[:40])\n"
                   "open(os.path.join(D, 'extra.npy'), 'wb').write(data + b'xyz')\n"),
            0);
  std::string e = readError("fortran.npy");
  EXPECT_NE(e.find("Fortran-order arrays are not supported; save with np.ascontiguousarray"),
            std::string::npos) << e;
  e = readError("big.npy");
  EXPECT_NE(e.find("unsupported dtype '>f4' (supported: "), std::string::npos) << e;
  e = readError("u16.npy");
  EXPECT_NE(e.find("unsupported dtype '<u2'"), std::string::npos) << e;
  e = readError("c64.npy");
  EXPECT_NE(e.find("unsupported dtype '<c8'"), std::string::npos) << e;
  e = readError("struct.npy");
  EXPECT_NE(e.find("unsupported dtype '[('a', '<i4'), ('b', '<f4')]'"), std::string::npos) << e;
  e = readError("obj.npy");
  EXPECT_NE(e.find("unsupported dtype '|O'"), std::string::npos) << e;
  e = readError("trunc.npy");
  EXPECT_NE(e.find("truncated data"), std::string::npos) << e;
  EXPECT_NE(e.find("40 bytes"), std::string::npos) << e;
  e = readError("trunchdr.npy");
  EXPECT_NE(e.find("truncated .npy header"), std::string::npos) << e;
  e = readError("extra.npy");
  EXPECT_NE(e.find("3 unexpected trailing bytes"), std::string::npos) << e;
}

TEST_F(NpyTest, HeaderParsingIsTolerant) {
  std::string body(24, '\0');
  for (int k = 0; k < 6; ++k) body[4 * k] = char(k + 1);  // little-endian i32 1..6
  const char* dicts[] = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",
      "{ 'fortran_order' :False ,'shape':( 2 ,3 , ) ,\"descr\":\"<i4\" }",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L)}",
  };
  for (const char* dict : dicts) {
    writeBytes("ok.npy", npyFile(dict, body));
    std::string err;
    auto t = readNpy(path("ok.npy"), &err);
    ASSERT_TRUE(t) << dict << ": " << err;
    EXPECT_EQ(t->typeStr(), "i32[2, 3]");
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t->getI(i), i + 1);
  }
  // A bf16 body saved through a raw 2-byte view, and '<i1' for i8.
  writeBytes("bf.npy", npyFile("{'descr': '<V2', 'fortran_order': False, 'shape': (1,)}",
                               std::string("\x80\x3F", 2)));
  std::string err;
  auto bf = readNpy(path("bf.npy"), &err);
  ASSERT_TRUE(bf) << err;
  EXPECT_EQ(bf->typeStr(), "bf16[1]");
  EXPECT_EQ(bf->getF(0), 1.0);
  writeBytes("i1.npy", npyFile("{'descr': '<i1', 'fortran_order': False, 'shape': ()}", "\xFF"));
  auto i8 = readNpy(path("i1.npy"), &err);
  ASSERT_TRUE(i8) << err;
  EXPECT_EQ(i8->typeStr(), "i8[]");
  EXPECT_EQ(i8->getI(0), -1);
  // Bool bytes other than 0/1 still give a 0/1 tensor.
  writeBytes("b.npy", npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (2,)}",
                              std::string("\x00\x07", 2)));
  auto b = readNpy(path("b.npy"), &err);
  ASSERT_TRUE(b) << err;
  EXPECT_EQ(b->bytes, (std::vector<uint8_t>{0, 1}));
}

TEST_F(NpyTest, RejectsMalformedFiles) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}";
  const std::string body(8, '\0');
  struct Case {
    std::string bytes, want;
  } cases[] = {
      {"\x93NUMPZ\x01\x00", "bad magic"},
      {"", "bad magic"},
      {"\x93NUMPY\x01", "truncated .npy header"},
      {std::string("\x93NUMPY\x01\x00\xFF\x00", 10) + "{", "truncated .npy header"},
      {std::string("\x93NUMPY\x04\x00", 8) + std::string(60, ' '), "format version 4.0"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", body),
       "negative dimension -2"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", body),
       "overflows"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", body),
       "too large"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", body),
       "shape is not a tuple"},
      {npyFile("{'descr': '<f4', 'fortran_order': False}", body), "missing key 'shape'"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", body),
       "unexpected key 'x'"},
      {npyFile("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", body),
       "duplicate key 'descr'"},
      {npyFile("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", body), "malformed"},
      {npyFile("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", body), "malformed"},
      {npyFile("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", body), "fortran_order"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a')}", body),
       "not an integer"},
      {npyFile("[1, 2]", body), "not a dict"},
      {npyFile(ok, body) + "x", "1 unexpected trailing bytes"},
      {npyFile(ok, body.substr(1)), "truncated data"},
      {npyFile(std::string(40, '(') + ok, body), "nested too deeply"},
  };
  for (const Case& c : cases) {
    writeBytes("bad.npy", c.bytes);
    std::string e = readError("bad.npy");
    EXPECT_NE(e.find(c.want), std::string::npos) << "want '" << c.want << "' in: " << e;
  }
  std::string err;
  EXPECT_FALSE(readNpy(path("missing.npy"), &err));
  EXPECT_NE(err.find(path("missing.npy") + ": cannot open"), std::string::npos) << err;
}

TEST_F(NpyTest, EveryTruncationAndCorruptionFailsCleanly) {
  Tensor t = Tensor::zeros(DType::F64, {3, 2});
  for (int64_t i = 0; i < 6; ++i) t.setF(i, i + 0.5);
  std::string err;
  ASSERT_TRUE(writeNpy(path("full.npy"), t, &err)) << err;
  std::ifstream in(path("full.npy"), std::ios::binary);
  std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t n = 0; n < full.size(); ++n) {
    writeBytes("cut.npy", full.substr(0, n));
    EXPECT_FALSE(readNpy(path("cut.npy"), &err)) << n;
  }
  // Flipping header bytes must never crash; whatever parses must be consistent.
  std::mt19937 rng(11);
  for (int k = 0; k < 200; ++k) {
    std::string bad = full;
    for (int j = 0; j < 3; ++j) bad[rng() % 64] = char(rng());
    writeBytes("flip.npy", bad);
    auto r = readNpy(path("flip.npy"), &err);
    if (r) {
      EXPECT_EQ(r->bytes.size(), size_t(r->numel()) * dtypeSize(r->dtype));
    } else {
      EXPECT_FALSE(err.empty());
    }
  }
}

TEST_F(NpyTest, WriteErrors) {
  Tensor bad = Tensor::zeros(DType::F32, {2});
  bad.bytes.pop_back();
  std::string err;
  EXPECT_FALSE(writeNpy(path("x.npy"), bad, &err));
  EXPECT_NE(err.find("needs 8 bytes but holds 7"), std::string::npos) << err;
  EXPECT_FALSE(writeNpy(path("no/such/dir/x.npy"), Tensor::zeros(DType::F32, {1}), &err));
  EXPECT_NE(err.find("no/such/dir/x.npy: cannot open for writing"), std::string::npos) << err;
}

TEST_F(NpyTest, HugeRankUsesVersion2) {
  // 70000 unit dims give a header over 65535 bytes, which needs format 2.0.
  Tensor t = Tensor::zeros(DType::I8, std::vector<int64_t>(70000, 1));
  t.setI(0, -5);
  std::string err;
  ASSERT_TRUE(writeNpy(path("big.npy"), t, &err)) << err;
  std::ifstream in(path("big.npy"), std::ios::binary);
  char pre[8];
  in.read(pre, 8);
  EXPECT_EQ(pre[6], 2);
  auto back = readNpy(path("big.npy"), &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->rank(), 70000u);
  EXPECT_EQ(back->getI(0), -5);
}
