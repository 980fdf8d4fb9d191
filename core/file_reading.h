// Reading files a user names (models, external data, engines, .npy inputs, data sets): only
// regular files, opened without blocking (a FIFO would block open() until a writer came) and read
// no further than the size fstat reports, so /dev/zero or a FIFO is refused instead of read forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace qdqrt {

// An open read-only descriptor of a regular file; closes it when destroyed.
class RegularFile {
 public:
  RegularFile() = default;
  RegularFile(int descriptor, uint64_t size) : descriptor_(descriptor), size_(size) {}
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int descriptor() const { return descriptor_; }
  uint64_t size() const { return size_; }  // at open time
  // Reads exactly `count` bytes at `offset` (refused past the size seen at open time).
  Status read_at(void* destination, size_t count, uint64_t offset, const std::string& what,
                 const std::string& path) const;

 private:
  int descriptor_ = -1;
  uint64_t size_ = 0;
};

// Opens `path` for reading if it is a regular file (after following symlinks): directories,
// FIFOs, sockets and devices are refused with "<what> '<path>' is a FIFO, not a regular file".
Result<RegularFile> open_regular_file(const std::string& path, const std::string& what);

// The whole file, refused when larger than max_bytes ("<what> '<path>' is N bytes, more than ...").
Result<std::string> read_regular_file(const std::string& path, const std::string& what, size_t max_bytes);

}  // namespace qdqrt
