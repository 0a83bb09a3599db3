// NumPy `.npy` reading and writing, with a real parser for the header dict.
#include "ir/Npy.h"

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <memory>
#include <new>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/Sizes.h"

namespace dscc {

// Tensor bytes are native-endian and the files are little-endian; rather than
// carry untested swapping code, refuse to build where they would differ.
static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// The largest header read (np.save writes a few hundred bytes; 1 MiB leaves
// room for any honest writer and bounds a hostile one).
constexpr uint64_t kMaxHeaderLen = 1 << 20;
constexpr const char* kSupported = "<f4 <f2 <f8 <i8 <i4 |i1 <i1 |b1 <V2";

/// One Python literal from the header. Tuples and lists keep their items; the
/// source text is kept so unsupported values can be quoted in messages.
struct PyValue {
  enum Kind { Str, Bool, Int, None, Tuple, List, Dict } kind = None;
  std::string str;
  bool boolean = false;
  int64_t integer = 0;
  bool intOverflow = false;
  std::vector<PyValue> items;
  std::string_view text;
};

/// Recursive-descent parser for the literal subset `np.save` emits (and that
/// `ast.literal_eval` would accept for it), so key order, spacing and trailing
/// commas do not matter.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  bool parseTop(PyValue& out, std::string& why) {
    if (!parseValue(out, why, 0)) return false;
    skipSpace();
    if (pos_ != s_.size()) {
      why = "unexpected text after the header dict";
      return false;
    }
    if (out.kind != PyValue::Dict) {
      why = "the header is not a dict";
      return false;
    }
    return true;
  }

  /// Keys of the dict parsed by parseTop, parallel to its items.
  std::vector<std::string> keys;

private:
  std::string_view s_;
  size_t pos_ = 0;

  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool startsWith(std::string_view w) const { return s_.substr(pos_, w.size()) == w; }

  bool parseString(PyValue& v, std::string& why) {
    char q = s_[pos_++];
    v.kind = PyValue::Str;
    while (pos_ < s_.size() && s_[pos_] != q) {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        c = s_[pos_++];
      }
      v.str += c;
    }
    if (pos_ >= s_.size()) {
      why = "unterminated string";
      return false;
    }
    ++pos_;
    return true;
  }

  bool parseInt(PyValue& v, std::string& why) {
    v.kind = PyValue::Int;
    bool neg = false;
    if (s_[pos_] == '-' || s_[pos_] == '+') neg = s_[pos_++] == '-';
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') {
      why = "malformed number";
      return false;
    }
    uint64_t mag = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      uint64_t digit = uint64_t(s_[pos_++] - '0');
      if (mag > (uint64_t(INT64_MAX) - digit) / 10) v.intOverflow = true;
      else mag = mag * 10 + digit;
    }
    // Python 2 era files spell long integers with an L suffix.
    if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;
    v.integer = neg ? -int64_t(mag) : int64_t(mag);
    return true;
  }

  bool parseSequence(PyValue& v, char close, std::string& why, int depth) {
    ++pos_;
    bool sawComma = false;
    while (true) {
      if (eat(close)) break;
      PyValue item;
      if (!parseValue(item, why, depth + 1)) return false;
      v.items.push_back(std::move(item));
      if (eat(close)) break;
      if (!eat(',')) {
        why = std::string("expected ',' or '") + close + "'";
        return false;
      }
      sawComma = true;
    }
    // As in Python, `(5)` is just a parenthesized 5, not a 1-tuple.
    if (v.kind == PyValue::Tuple && v.items.size() == 1 && !sawComma) {
      PyValue inner = std::move(v.items[0]);
      v = std::move(inner);
    }
    return true;
  }

  bool parseDict(PyValue& v, std::string& why, int depth) {
    ++pos_;
    while (true) {
      if (eat('}')) return true;
      skipSpace();
      if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) {
        why = "expected a quoted key";
        return false;
      }
      PyValue key;
      if (!parseString(key, why)) return false;
      if (!eat(':')) {
        why = "expected ':' after key '" + key.str + "'";
        return false;
      }
      PyValue item;
      if (!parseValue(item, why, depth + 1)) return false;
      if (depth == 0) keys.push_back(key.str);
      v.items.push_back(std::move(item));
      if (eat('}')) return true;
      if (!eat(',')) {
        why = "expected ',' or '}'";
        return false;
      }
    }
  }

  bool parseValue(PyValue& v, std::string& why, int depth) {
    // Nesting is bounded so a hostile header cannot exhaust the stack.
    if (depth > 32) {
      why = "header nested too deeply";
      return false;
    }
    skipSpace();
    if (pos_ >= s_.size()) {
      why = "header ends early";
      return false;
    }
    size_t start = pos_;
    bool ok;
    char c = s_[pos_];
    if (c == '\'' || c == '"') {
      ok = parseString(v, why);
    } else if (c == '(') {
      v.kind = PyValue::Tuple;
      ok = parseSequence(v, ')', why, depth);
    } else if (c == '[') {
      v.kind = PyValue::List;
      ok = parseSequence(v, ']', why, depth);
    } else if (c == '{') {
      v.kind = PyValue::Dict;
      ok = parseDict(v, why, depth);
    } else if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
      ok = parseInt(v, why);
    } else if (startsWith("True") || startsWith("False")) {
      v.kind = PyValue::Bool;
      v.boolean = c == 'T';
      pos_ += v.boolean ? 4 : 5;
      ok = true;
    } else if (startsWith("None")) {
      v.kind = PyValue::None;
      pos_ += 4;
      ok = true;
    } else {
      why = std::string("unexpected character '") + c + "'";
      ok = false;
    }
    v.text = s_.substr(start, pos_ - start);
    return ok;
  }
};

std::optional<DType> descrToDType(std::string_view d) {
  if (d == "<f4") return DType::F32;
  if (d == "<f2") return DType::F16;
  if (d == "<f8") return DType::F64;
  if (d == "<i8") return DType::I64;
  if (d == "<i4") return DType::I32;
  if (d == "|i1" || d == "<i1") return DType::I8;
  if (d == "|b1") return DType::I1;
  // NumPy canonicalizes void types to '|V2', so a bf16 array viewed as raw
  // bytes and saved by NumPy arrives with that spelling.
  if (d == "<V2" || d == "|V2") return DType::BF16;
  return std::nullopt;
}

std::string_view dtypeToDescr(DType t) {
  switch (t) {
    case DType::F32: return "<f4";
    case DType::F16: return "<f2";
    case DType::BF16: return "<V2";
    case DType::F64: return "<f8";
    case DType::I64: return "<i8";
    case DType::I32: return "<i4";
    case DType::I8: return "|i1";
    case DType::I1: return "|b1";
  }
  return "";
}

uint32_t readLE(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t k = 0; k < n; ++k) v |= uint32_t(p[k]) << (8 * k);
  return v;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

bool fail(std::string* err, const std::string& path, const std::string& msg) {
  if (err) *err = path + ": " + msg;
  return false;
}

/// Opens `path` for reading the header and data by their sizes: only a
/// regular file qualifies, as /dev/zero, a FIFO or a terminal has no size to
/// bound the read and would make it run forever. `size` receives its length.
FilePtr openRegular(const std::string& path, uint64_t& size, std::string* err) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  errno = 0;
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    fail(err, path, std::string("cannot open: ") + std::strerror(errno));
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    fail(err, path, "not a regular file (a device, FIFO or directory has no size to read by)");
    return nullptr;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  FilePtr f(fdopen(fd, "rb"));
  if (!f) {
    close(fd);
    fail(err, path, std::string("cannot open: ") + std::strerror(errno));
    return nullptr;
  }
  size = uint64_t(st.st_size);
  return f;
}

bool readExactly(std::FILE* f, uint8_t* out, size_t n, const std::string& path, std::string* err) {
  if (n && std::fread(out, 1, n, f) != n)
    return fail(err, path, std::ferror(f) ? std::string("read error: ") + std::strerror(errno)
                                          : std::string("the file shrank while being read"));
  return true;
}

/// `s` with bytes outside printable ASCII as \xNN, so a hostile header cannot
/// put control characters or a NUL into a message.
std::string printable(std::string_view s) {
  std::string o;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      o += char(c);
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      o += b;
    }
  }
  return o;
}

/// Validates the parsed header dict and extracts dtype and shape.
bool interpretHeader(const std::string& path, const PyValue& dict, const std::vector<std::string>& keys,
                     DType& dtype, std::vector<int64_t>& shape, std::string* err) {
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shp = nullptr;
  for (size_t k = 0; k < keys.size(); ++k) {
    const PyValue** slot = keys[k] == "descr" ? &descr
                         : keys[k] == "fortran_order" ? &fortran
                         : keys[k] == "shape" ? &shp
                         : nullptr;
    if (!slot) return fail(err, path, "malformed .npy header: unexpected key '" + keys[k] + "'");
    if (*slot) return fail(err, path, "malformed .npy header: duplicate key '" + keys[k] + "'");
    *slot = &dict.items[k];
  }
  if (!descr || !fortran || !shp) {
    std::string missing = !descr ? "descr" : !fortran ? "fortran_order" : "shape";
    return fail(err, path, "malformed .npy header: missing key '" + missing + "'");
  }

  std::string descrText = printable(descr->kind == PyValue::Str ? descr->str : std::string(descr->text));
  std::optional<DType> dt = descr->kind == PyValue::Str ? descrToDType(descr->str) : std::nullopt;
  if (!dt)
    return fail(err, path,
                "unsupported dtype '" + descrText + "' (supported: " + kSupported + ")");
  dtype = *dt;

  if (fortran->kind != PyValue::Bool)
    return fail(err, path, "malformed .npy header: fortran_order is not True or False");
  if (fortran->boolean)
    return fail(err, path,
                "Fortran-order arrays are not supported; save with np.ascontiguousarray");

  if (shp->kind != PyValue::Tuple)
    return fail(err, path, "malformed .npy header: shape is not a tuple");
  for (const PyValue& d : shp->items) {
    if (d.kind != PyValue::Int)
      return fail(err, path, "malformed .npy header: shape entry '" + std::string(d.text) +
                                 "' is not an integer");
    if (d.intOverflow)
      return fail(err, path, "dimension " + std::string(d.text) + " is too large");
    if (d.integer < 0)
      return fail(err, path, "negative dimension " + std::to_string(d.integer) + " in shape");
    shape.push_back(d.integer);
  }
  return true;
}

}  // namespace

std::optional<Tensor> readNpy(const std::string& path, std::string* err) {
  uint64_t fileSize = 0;
  FilePtr f = openRegular(path, fileSize, err);
  if (!f) return std::nullopt;
  // The preamble: magic, version, header length.
  uint8_t pre[kMagicLen + 2 + 4];
  size_t preLen = std::min<uint64_t>(fileSize, sizeof pre);
  if (!readExactly(f.get(), pre, preLen, path, err)) return std::nullopt;

  if (preLen < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0) {
    fail(err, path, "not a .npy file (bad magic)");
    return std::nullopt;
  }
  if (preLen < kMagicLen + 2) {
    fail(err, path, "truncated .npy header");
    return std::nullopt;
  }
  int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(err, path, "unsupported .npy format version " + std::to_string(major) + "." +
                        std::to_string(minor));
    return std::nullopt;
  }
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t preamble = kMagicLen + 2 + lenBytes;
  if (preLen < preamble) {
    fail(err, path, "truncated .npy header");
    return std::nullopt;
  }
  uint64_t headerLen = readLE(pre + kMagicLen + 2, lenBytes);
  if (headerLen > fileSize - preamble) {
    fail(err, path, "truncated .npy header (header length " + std::to_string(headerLen) +
                        " exceeds the file)");
    return std::nullopt;
  }
  // NumPy's headers are a few hundred bytes; a larger one is not a real file.
  if (headerLen > kMaxHeaderLen) {
    fail(err, path, "malformed .npy header: " + std::to_string(headerLen) + " bytes, over the limit of " +
                        std::to_string(kMaxHeaderLen));
    return std::nullopt;
  }
  // The preamble read may have taken bytes past a short header (v1: 10
  // bytes of preamble, 12 read): read the header again from its start
  // (found by fuzz_npy: a 1-byte header overflowed the copy).
  std::string headerBuf(headerLen, '\0');
  if (std::fseek(f.get(), long(preamble), SEEK_SET) != 0) {
    fail(err, path, "cannot seek to the .npy header");
    return std::nullopt;
  }
  if (!readExactly(f.get(), reinterpret_cast<uint8_t*>(headerBuf.data()), headerLen, path, err))
    return std::nullopt;
  std::string_view header(headerBuf);

  HeaderParser parser(header);
  PyValue dict;
  std::string why;
  if (!parser.parseTop(dict, why)) {
    fail(err, path, "malformed .npy header: " + printable(why));
    return std::nullopt;
  }
  Tensor t;
  if (!interpretHeader(path, dict, parser.keys, t.dtype, t.shape, err)) return std::nullopt;

  uint64_t body = fileSize - preamble - headerLen;
  // Zero dims are skipped so a zero-size array with huge other dims is still
  // rejected: later stride arithmetic over those dims would overflow.
  int64_t bytesIfNonEmpty = int64_t(dtypeSize(t.dtype));
  for (int64_t d : t.shape) {
    if (d != 0 && __builtin_mul_overflow(bytesIfNonEmpty, d, &bytesIfNonEmpty)) {
      fail(err, path, "shape " + t.typeStr() + " is too large (element count overflows)");
      return std::nullopt;
    }
  }
  uint64_t need = t.numel() == 0 ? 0 : uint64_t(bytesIfNonEmpty);
  if (body < need) {
    fail(err, path, "truncated data: shape " + t.typeStr() + " needs " + std::to_string(need) +
                        " bytes but the file has " + std::to_string(body));
    return std::nullopt;
  }
  if (body > need) {
    fail(err, path, std::to_string(body - need) + " unexpected trailing bytes after the data for " +
                        t.typeStr());
    return std::nullopt;
  }
  // The size is real (the file holds it), but may still pass the limits.
  std::string big = sizeProblem(t.shape, int64_t(dtypeSize(t.dtype)), memoryLimit());
  if (!big.empty()) {
    fail(err, path, big);
    return std::nullopt;
  }
  try {
    t.bytes.resize(need);
  } catch (const std::bad_alloc&) {
    fail(err, path, "cannot allocate " + std::to_string(need) + " bytes for " + t.typeStr() + ": out of memory");
    return std::nullopt;
  }
  if (!readExactly(f.get(), t.bytes.data(), need, path, err)) return std::nullopt;
  // Keep the tensor's i1 invariant (0 or 1) whatever byte values the file holds.
  if (t.dtype == DType::I1)
    for (uint8_t& b : t.bytes) b = b != 0;
  return t;
}

bool writeNpy(const std::string& path, const Tensor& t, std::string* err) {
  uint64_t need = dtypeSize(t.dtype);
  for (int64_t d : t.shape) {
    if (d < 0) return fail(err, path, "cannot write tensor with negative dimension: " + t.typeStr());
    if (__builtin_mul_overflow(need, uint64_t(d), &need))
      return fail(err, path, "cannot write tensor: size of " + t.typeStr() + " overflows");
  }
  if (need != t.bytes.size())
    return fail(err, path, "cannot write tensor: " + t.typeStr() + " needs " + std::to_string(need) +
                               " bytes but holds " + std::to_string(t.bytes.size()));

  std::string dict = "{'descr': '" + std::string(dtypeToDescr(t.dtype)) +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t k = 0; k < t.shape.size(); ++k) {
    if (k) dict += ", ";
    dict += std::to_string(t.shape[k]);
  }
  if (t.shape.size() == 1) dict += ',';  // a 1-tuple needs its comma in Python
  dict += "), }";

  // NumPy's padding rule: spaces then '\n' so the data starts 64-byte aligned.
  auto padded = [&](size_t preamble) {
    size_t padLen = 64 - (preamble + dict.size() + 1) % 64;
    return dict + std::string(padLen, ' ') + '\n';
  };
  int major = 1;
  std::string header = padded(kMagicLen + 4);
  if (header.size() > 0xFFFF) {
    major = 2;
    header = padded(kMagicLen + 6);
  }

  std::string pre(kMagic, kMagicLen);
  pre += char(major);
  pre += char(0);
  size_t lenBytes = major == 1 ? 2 : 4;
  for (size_t k = 0; k < lenBytes; ++k) pre += char((header.size() >> (8 * k)) & 0xFF);

  errno = 0;
  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) return fail(err, path, std::string("cannot open for writing: ") + std::strerror(errno));
  bool ok = std::fwrite(pre.data(), 1, pre.size(), f.get()) == pre.size() &&
            std::fwrite(header.data(), 1, header.size(), f.get()) == header.size();
  // An empty vector's data() may be null, which fwrite must not be given.
  if (ok && !t.bytes.empty()) {
    std::vector<uint8_t> norm;
    const std::vector<uint8_t>* body = &t.bytes;
    if (t.dtype == DType::I1) {
      // NumPy bools must be exactly 0 or 1.
      norm.resize(t.bytes.size());
      for (size_t k = 0; k < norm.size(); ++k) norm[k] = t.bytes[k] != 0;
      body = &norm;
    }
    ok = std::fwrite(body->data(), 1, body->size(), f.get()) == body->size();
  }
  std::FILE* raw = f.release();
  if (std::fclose(raw) != 0) ok = false;
  if (!ok) return fail(err, path, "write error");
  return true;
}

}  // namespace dscc
