// ONNX external data: tensors whose bytes live in a file beside the model (`location`, `offset`, `length`), read through a mapping.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "frontend/OnnxInternal.h"

namespace dscc::frontend {

namespace fs = std::filesystem;

ExternalData::ExternalData(const std::string& modelPath) {
  std::error_code ec;
  fs::path dir = fs::path(modelPath).parent_path();
  if (dir.empty()) dir = ".";
  fs::path canon = fs::canonical(dir, ec);
  dir_ = ec ? fs::absolute(dir, ec).lexically_normal().string() : canon.string();
}

ExternalData::~ExternalData() {
  for (auto& [path, m] : maps_)
    if (m.data && m.size) munmap(const_cast<char*>(m.data), m.size);
}

namespace {

// A non-negative decimal integer written as a string ("offset", "length").
int64_t parseCount(const std::string& key, const std::string& v) {
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    throw ImportError("external data " + key + " '" + v + "' is not a non-negative integer");
  return std::stoll(v);
}

}  // namespace

std::string ExternalData::resolve(const std::string& location) const {
  if (location.empty()) throw ImportError("external data has an empty location");
  fs::path loc(location);
  // The location is relative to the model's folder and stays inside it, as
  // ONNX requires: an absolute path, a `..` that climbs out, or a symbolic
  // link that points out would let a model file read any file of the user's.
  if (loc.is_absolute())
    throw ImportError("external data location '" + location + "' is absolute; it must be relative to the model's folder");
  fs::path norm = loc.lexically_normal();
  if (norm.empty() || *norm.begin() == "..")
    throw ImportError("external data location '" + location + "' leaves the model's folder");
  std::error_code ec;
  fs::path full = fs::weakly_canonical(fs::path(dir_) / norm, ec);
  if (ec) throw ImportError("external data location '" + location + "': " + ec.message());
  fs::path rel = full.lexically_relative(dir_);
  if (rel.empty() || *rel.begin() == "..")
    throw ImportError("external data location '" + location + "' leaves the model's folder (it resolves to '" +
                      full.string() + "')");
  return full.string();
}

const ExternalData::Map& ExternalData::map(const std::string& location) {
  std::string path = resolve(location);
  if (auto it = maps_.find(path); it != maps_.end()) return it->second;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw ImportError("external data file '" + location + "' (beside the model) cannot be opened: " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ImportError("external data file '" + location + "' is not a regular file");
  }
  Map m;
  m.size = size_t(st.st_size);
  if (m.size) {
    void* p = mmap(nullptr, m.size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw ImportError("external data file '" + location + "' cannot be mapped: " + std::strerror(e));
    }
    madvise(p, m.size, MADV_SEQUENTIAL);
    m.data = static_cast<const char*>(p);
  }
  ::close(fd);
  return maps_.emplace(path, m).first->second;
}

std::string_view ExternalData::bytes(const onnx::TensorProto& t, size_t need) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parseCount("offset", kv.value());
    else if (kv.key() == "length") length = parseCount("length", kv.value());
  }
  if (location.empty()) throw ImportError("tensor '" + t.name() + "' keeps its data externally but names no location");
  if (length >= 0 && size_t(length) != need)
    throw ImportError("tensor '" + t.name() + "' has " + std::to_string(length) + " bytes of external data for " +
                      std::to_string(need) + " bytes of elements");
  const Map& m = map(location);
  if (size_t(offset) > m.size || need > m.size - size_t(offset))
    throw ImportError("tensor '" + t.name() + "': external data file '" + location + "' holds " +
                      std::to_string(m.size) + " bytes, too few for " + std::to_string(need) + " bytes at offset " +
                      std::to_string(offset));
  return std::string_view(m.data + offset, need);
}

}  // namespace dscc::frontend
