// Arithmetic on sizes that come from models and engine files (dims, element counts, bytes,
// offsets): a static dim of 2^40 must give an error, not a wrapped (undefined) int64.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace qdqrt {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
  return result;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) return std::nullopt;
  return result;
}

// a + b, or INT64_MAX when it does not fit (totals that are only reported).
inline int64_t saturating_add(int64_t a, int64_t b) { return checked_add(a, b).value_or(INT64_MAX); }

// The product of non-negative dims, nullopt when one is negative or the product overflows.
inline std::optional<int64_t> checked_product(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) return std::nullopt;
    std::optional<int64_t> next = checked_mul(count, dim);
    if (!next) return std::nullopt;
    count = *next;
  }
  return count;
}

// value rounded up to a multiple of `alignment` (> 0), nullopt when that overflows.
inline std::optional<int64_t> checked_align_up(int64_t value, int64_t alignment) {
  std::optional<int64_t> padded = checked_add(value, alignment - 1);
  if (!padded) return std::nullopt;
  return *padded / alignment * alignment;
}

}  // namespace qdqrt
