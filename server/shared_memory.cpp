#include "server/shared_memory.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qdqrt::server {

SharedMemoryRegion::SharedMemoryRegion(std::string name, std::string key, uint64_t offset, uint64_t byte_size,
                                       void* mapping, size_t mapping_size, size_t page_offset)
    : name_(std::move(name)),
      key_(std::move(key)),
      offset_(offset),
      byte_size_(byte_size),
      mapping_(mapping),
      mapping_size_(mapping_size),
      page_offset_(page_offset) {}

SharedMemoryRegion::~SharedMemoryRegion() { ::munmap(mapping_, mapping_size_); }

Result<uint8_t*> SharedMemoryRegion::window(uint64_t offset, uint64_t size, const std::string& what) const {
  if (offset > byte_size_ || size > byte_size_ - offset) {
    return invalid_argument("{}: shared_memory_offset {} + shared_memory_byte_size {} runs past shared memory region "
                            "'{}' of {} bytes",
                            what, offset, size, name_, byte_size_);
  }
  return static_cast<uint8_t*>(mapping_) + page_offset_ + offset;
}

Status SharedMemoryRegistry::register_region(const std::string& name, const std::string& key, uint64_t offset,
                                             uint64_t byte_size) {
  if (name.empty() || name.size() > 255) return invalid_argument("a shared memory region needs a name of 1 to 255 bytes");
  if (key.empty() || key.size() > 255) {
    return invalid_argument("shared memory region '{}': 'key' must name a shared memory object (1 to 255 bytes)", name);
  }
  if (byte_size == 0) return invalid_argument("shared memory region '{}': 'byte_size' must be above 0", name);
  {
    std::lock_guard lock(mutex_);
    if (regions_.contains(name)) return invalid_argument("shared memory region '{}' is already registered", name);
    if (regions_.size() >= kMaxRegions) {
      return invalid_argument("shared memory region '{}': {} regions are registered already", name, kMaxRegions);
    }
  }
  int fd = ::shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return invalid_argument("shared memory region '{}': cannot open shared memory object '{}': {}", name, key,
                            std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return invalid_argument("shared memory region '{}': '{}' is not a shared memory object", name, key);
  }
  uint64_t object_size = static_cast<uint64_t>(info.st_size);
  if (offset > object_size || byte_size > object_size - offset) {
    ::close(fd);
    return invalid_argument("shared memory region '{}': 'offset' {} + 'byte_size' {} runs past the {} bytes of '{}'",
                            name, offset, byte_size, object_size, key);
  }
  uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t aligned = offset - offset % page;
  size_t page_offset = static_cast<size_t>(offset - aligned);
  size_t mapping_size = static_cast<size_t>(byte_size) + page_offset;
  void* mapping = ::mmap(nullptr, mapping_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(aligned));
  int map_error = errno;
  ::close(fd);  // the mapping keeps the object
  if (mapping == MAP_FAILED) {
    return invalid_argument("shared memory region '{}': cannot map '{}': {}", name, key, std::strerror(map_error));
  }
  auto region = std::make_shared<const SharedMemoryRegion>(name, key, offset, byte_size, mapping, mapping_size, page_offset);
  std::lock_guard lock(mutex_);
  // Registered meanwhile by another call: this mapping goes with `region`.
  if (!regions_.emplace(name, std::move(region)).second) {
    return invalid_argument("shared memory region '{}' is already registered", name);
  }
  return Status::ok();
}

Status SharedMemoryRegistry::unregister(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (name.empty()) {
    regions_.clear();
    return Status::ok();
  }
  if (regions_.erase(name) == 0) return invalid_argument("shared memory region '{}' is not registered", name);
  return Status::ok();
}

Result<std::vector<SharedMemoryStatus>> SharedMemoryRegistry::status(const std::string& name) const {
  std::lock_guard lock(mutex_);
  std::vector<SharedMemoryStatus> list;
  for (const auto& [region_name, region] : regions_) {
    if (name.empty() || name == region_name) {
      list.push_back({region->name(), region->key(), region->offset(), region->byte_size()});
    }
  }
  if (!name.empty() && list.empty()) return invalid_argument("shared memory region '{}' is not registered", name);
  return list;
}

Result<std::shared_ptr<const SharedMemoryRegion>> SharedMemoryRegistry::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto found = regions_.find(name);
  if (found == regions_.end()) return invalid_argument("shared memory region '{}' is not registered", name);
  return found->second;
}

}  // namespace qdqrt::server
