#include "tests/common/allocation_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

extern "C" void* __libc_malloc(size_t size);
extern "C" void* __libc_calloc(size_t count, size_t size);
extern "C" void* __libc_realloc(void* pointer, size_t size);
extern "C" void* __libc_memalign(size_t alignment, size_t size);

namespace {
std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};
void count() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
void* allocate_or_throw(size_t size) {
  count();
  if (void* p = __libc_malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

namespace qdqrt::testing {
void start_counting_allocations() {
  allocations = 0;
  counting = true;
}
int64_t stop_counting_allocations() {
  counting = false;
  return allocations.load();
}
}  // namespace qdqrt::testing

#if !defined(__SANITIZE_ADDRESS__)
extern "C" void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
extern "C" void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* pointer, size_t size) {
  count();
  return __libc_realloc(pointer, size);
}
extern "C" void* aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
extern "C" int posix_memalign(void** pointer, size_t alignment, size_t size) {
  count();
  *pointer = __libc_memalign(alignment, size);
  return *pointer ? 0 : 12;  // ENOMEM
}
#endif
void* operator new(size_t size) { return allocate_or_throw(size); }
void* operator new[](size_t size) { return allocate_or_throw(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
