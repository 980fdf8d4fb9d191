#include "tests/server/failing_allocation.h"

#include <cstdint>
#include <cstdlib>
#include <new>

std::atomic<std::size_t> g_failing_allocation_size{SIZE_MAX};

void* operator new(std::size_t size) {
  if (size == g_failing_allocation_size.load(std::memory_order_relaxed)) throw std::bad_alloc();
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}

void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
