// Triton's system shared-memory extension: clients on the same host register a window of a POSIX
// shared-memory object by name, then pass inputs and receive outputs in it instead of in the
// request and response bodies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace qdqrt::server {

// One registered window [offset, offset + byte_size) of the object `key`, mapped read-write. A
// request holds a shared_ptr to the regions it uses: unregistering one mid-request unmaps it only
// after that request is done with it.
class SharedMemoryRegion {
 public:
  SharedMemoryRegion(std::string name, std::string key, uint64_t offset, uint64_t byte_size, void* mapping,
                     size_t mapping_size, size_t page_offset);
  ~SharedMemoryRegion();
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }
  uint64_t offset() const { return offset_; }
  uint64_t byte_size() const { return byte_size_; }
  // The window's bytes [offset, offset + size) of the region, or an error naming the region and
  // `what` (the tensor) when they are not inside it.
  Result<uint8_t*> window(uint64_t offset, uint64_t size, const std::string& what) const;

 private:
  std::string name_;
  std::string key_;
  uint64_t offset_;
  uint64_t byte_size_;
  void* mapping_;
  size_t mapping_size_;
  size_t page_offset_;  // where the registered window starts in the page-aligned mapping
};

struct SharedMemoryStatus {
  std::string name;
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

class SharedMemoryRegistry {
 public:
  // Regions registered at once; each holds a mapping.
  static constexpr size_t kMaxRegions = 1024;

  // Opens `key` with shm_open, checks the window lies within the object (fstat), maps it.
  Status register_region(const std::string& name, const std::string& key, uint64_t offset, uint64_t byte_size);
  // "" unregisters every region; an unknown name is an error.
  Status unregister(const std::string& name);
  // Every region, or the one named (an error when it is not registered).
  Result<std::vector<SharedMemoryStatus>> status(const std::string& name) const;
  Result<std::shared_ptr<const SharedMemoryRegion>> find(const std::string& name) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const SharedMemoryRegion>> regions_;
};

}  // namespace qdqrt::server
