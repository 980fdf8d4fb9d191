// Memory running out at one chosen allocation, for the exception-barrier tests: while
// g_failing_allocation_size holds N, every `operator new` of exactly N bytes throws
// std::bad_alloc (SIZE_MAX, the default: none does). Replaces the global operator new of the
// test binary (failing_allocation.cpp).
#pragma once

#include <atomic>
#include <cstddef>

extern std::atomic<std::size_t> g_failing_allocation_size;
