// How many threads an execution context may be asked for. A context's first run starts every
// thread of its pool; far more threads than the machine has only take turns on the cores, so a
// count beyond a few per hardware thread is a mistake (a typo, or "all" meant), refused at every
// boundary (CLI flags, Python) and clamped by the engine itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>

#include "core/status.h"

namespace qdqrt::engine {

inline constexpr int kContextThreadsPerHardwareThread = 4;
inline constexpr int kMinContextThreadLimit = 16;  // room for tests and oversubscription on small machines

inline int max_context_threads() {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(kMinContextThreadLimit, kContextThreadsPerHardwareThread * hardware);
}

// A thread count as a user gives it: 0 (every hardware thread) up to max_context_threads().
inline Status check_context_threads(int64_t threads) {
  if (threads < 0) return invalid_argument("thread count {} is negative (0 = every hardware thread)", threads);
  if (threads > max_context_threads()) {
    return invalid_argument("{} threads is more than the limit of {} on this machine ({} hardware threads)", threads,
                            max_context_threads(), std::max(1u, std::thread::hardware_concurrency()));
  }
  return Status::ok();
}

}  // namespace qdqrt::engine
