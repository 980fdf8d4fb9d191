// Counts heap allocations (malloc, calloc, realloc, aligned_alloc, posix_memalign, operator new)
// made by any thread between start and stop, for the "run() does not allocate" tests. Link
// tests/common/allocation_counter.cpp into the test binary: it replaces those functions for the
// whole binary (not under AddressSanitizer, which owns malloc; then only operator new counts).
#pragma once

#include <cstdint>

namespace qdqrt::testing {

void start_counting_allocations();
// Stops counting and returns the allocations seen since start_counting_allocations().
int64_t stop_counting_allocations();

}  // namespace qdqrt::testing
