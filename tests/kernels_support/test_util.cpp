#include "test_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

namespace qdqrt::kernels::testing {

GuardedBytes::GuardedBytes(size_t bytes, Placement placement) : bytes_(bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t body = ((bytes + kCanaryBytes + page - 1) / page) * page;
  mapping_bytes_ = body + 2 * page;
  void* mapping = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) std::abort();
  mapping_ = static_cast<uint8_t*>(mapping);
  mprotect(mapping_, page, PROT_NONE);
  mprotect(mapping_ + page + body, page, PROT_NONE);
  uint8_t* body_begin = mapping_ + page;
  std::memset(body_begin, kCanary, body);
  if (placement == Placement::kEndAtGuardPage) {
    data_ = body_begin + body - bytes;
    canary_ = data_ - kCanaryBytes;
  } else {
    data_ = body_begin;
    canary_ = data_ + bytes;
  }
}

GuardedBytes::~GuardedBytes() { munmap(mapping_, mapping_bytes_); }

std::string GuardedBytes::check_canaries() const {
  for (size_t i = 0; i < kCanaryBytes; ++i) {
    if (canary_[i] != kCanary) {
      return std::string("canary byte ") + std::to_string(i) + (canary_ < data_ ? " before" : " after") +
             " the buffer was overwritten";
    }
  }
  return "";
}

}  // namespace qdqrt::kernels::testing
