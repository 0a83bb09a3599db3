// Shared by the fuzz targets: the input bytes as a file the readers can open by path (an in-memory memfd).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace dscc::fuzz {

/// The fuzzer's bytes as a regular file under /proc/self/fd, closed when this
/// goes out of scope. The readers under test take paths (they check that the
/// file is regular and read it by its size), so a memfd exercises exactly
/// that code without touching the disk.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size, const char* name) {
    fd_ = memfd_create(name, 0);
    if (fd_ < 0) return;
    size_t done = 0;
    while (done < size) {
      ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() {
    if (fd_ >= 0) close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  /// "" when the memfd could not be made.
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace dscc::fuzz
