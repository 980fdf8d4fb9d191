#include "core/file_reading.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

namespace qdqrt {

namespace {

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

}  // namespace

RegularFile::RegularFile(RegularFile&& other) noexcept
    : descriptor_(std::exchange(other.descriptor_, -1)), size_(other.size_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (descriptor_ >= 0) ::close(descriptor_);
    descriptor_ = std::exchange(other.descriptor_, -1);
    size_ = other.size_;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

Status RegularFile::read_at(void* destination, size_t count, uint64_t offset, const std::string& what,
                            const std::string& path) const {
  if (offset > size_ || size_ - offset < count) {
    return io_error("{} '{}': cannot read {} bytes at offset {}, the file has {}", what, path, count, offset, size_);
  }
  auto* out = static_cast<char*>(destination);
  size_t done = 0;
  while (done < count) {
    ssize_t got = ::pread(descriptor_, out + done, count - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return io_error("cannot read {} '{}': {}", what, path, std::strerror(errno));
    if (got == 0) return io_error("cannot read {} '{}': it shrank while being read", what, path);
    done += static_cast<size_t>(got);
  }
  return Status::ok();
}

Result<RegularFile> open_regular_file(const std::string& path, const std::string& what) {
  // Check before opening (open() of a FIFO without O_NONBLOCK waits for a writer), then again on
  // the descriptor: the path may have been replaced in between.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return io_error("{} '{}' does not exist", what, path);
    return io_error("cannot open {} '{}': {}", what, path, std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) return io_error("{} '{}' is {}, not a regular file", what, path, file_type_name(info.st_mode));
  int descriptor = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (descriptor < 0) return io_error("cannot open {} '{}': {}", what, path, std::strerror(errno));
  if (::fstat(descriptor, &info) != 0) {
    const int stat_errno = errno;
    ::close(descriptor);
    return io_error("cannot read {} '{}': {}", what, path, std::strerror(stat_errno));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(descriptor);
    return io_error("{} '{}' is {}, not a regular file", what, path, file_type_name(info.st_mode));
  }
  // Reads of a regular file never block; clear the flag anyway so callers see a plain descriptor.
  ::fcntl(descriptor, F_SETFL, ::fcntl(descriptor, F_GETFL) & ~O_NONBLOCK);
  return RegularFile(descriptor, static_cast<uint64_t>(info.st_size));
}

Result<std::string> read_regular_file(const std::string& path, const std::string& what, size_t max_bytes) {
  QDQRT_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path, what));
  if (file.size() > max_bytes) {
    return invalid_model("{} '{}' is {} bytes, more than the limit of {}", what, path, file.size(), max_bytes);
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(file.size()));
  } catch (const std::bad_alloc&) {
    return io_error("not enough memory: {} bytes for {} '{}'", file.size(), what, path);
  }
  QDQRT_RETURN_IF_ERROR(file.read_at(bytes.data(), bytes.size(), 0, what, path));
  return bytes;
}

}  // namespace qdqrt
