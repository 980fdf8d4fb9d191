// Test buffers that fail loudly on out-of-bounds access: the data ends exactly at a PROT_NONE page
// (any read or write past the end faults), and the bytes before it hold a canary that is checked
// for stray writes before the start.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace qdqrt::kernels::testing {

class GuardedBuffer {
 public:
  static constexpr uint8_t kCanary = 0xA5;
  static constexpr size_t kCanaryBytes = 256;

  explicit GuardedBuffer(size_t bytes) : bytes_(bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data_pages = (bytes + kCanaryBytes + page - 1) / page;
    mapped_bytes_ = (data_pages + 1) * page;
    void* mapped = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::runtime_error("mmap failed");
    mapped_ = static_cast<uint8_t*>(mapped);
    uint8_t* guard = mapped_ + data_pages * page;
    if (mprotect(guard, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
    data_ = guard - bytes;
    std::memset(mapped_, kCanary, data_pages * page);
  }
  ~GuardedBuffer() { munmap(mapped_, mapped_bytes_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data_);
  }
  size_t size() const { return bytes_; }

  // True if nothing wrote into the canary bytes just before the data.
  bool canary_intact() const {
    for (size_t i = 1; i <= kCanaryBytes; ++i) {
      if (data_[-static_cast<ptrdiff_t>(i)] != kCanary) return false;
    }
    return true;
  }

 private:
  size_t bytes_;
  size_t mapped_bytes_ = 0;
  uint8_t* mapped_ = nullptr;
  uint8_t* data_ = nullptr;
};

}  // namespace qdqrt::kernels::testing
