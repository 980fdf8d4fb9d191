// Shared test helpers for the supporting kernels: guarded buffers, seeded generators, ISA sweeps.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"

namespace qdqrt::kernels::testing {

// A buffer of n elements inside mmap'ed memory with an inaccessible page on each side.
// kEndAtGuardPage puts the last element right before the guard page (a read or write past the
// end faults) and canary bytes before the start; kStartAtGuardPage mirrors it. check_canaries()
// reports any write into the canary zone.
enum class Placement { kEndAtGuardPage, kStartAtGuardPage };

class GuardedBytes {
 public:
  GuardedBytes(size_t bytes, Placement placement);
  ~GuardedBytes();
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }
  // Empty string when intact, else a description of the first damaged canary byte.
  std::string check_canaries() const;

 private:
  static constexpr size_t kCanaryBytes = 64;
  static constexpr uint8_t kCanary = 0xA5;
  size_t bytes_;
  uint8_t* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  uint8_t* data_ = nullptr;
  uint8_t* canary_ = nullptr;  // kCanaryBytes at the unguarded side
};

template <class T>
class Guarded {
 public:
  Guarded(size_t n, Placement placement) : bytes_(n * sizeof(T), placement), n_(n) {}
  T* data() const { return reinterpret_cast<T*>(bytes_.data()); }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  std::string check_canaries() const { return bytes_.check_canaries(); }
  void copy_from(const std::vector<T>& values) { std::memcpy(data(), values.data(), n_ * sizeof(T)); }
  std::vector<T> to_vector() const { return std::vector<T>(data(), data() + n_); }

 private:
  GuardedBytes bytes_;
  size_t n_;
};

inline Placement placement_for(size_t i) {
  return i % 2 ? Placement::kStartAtGuardPage : Placement::kEndAtGuardPage;
}

template <class T>
std::vector<T> random_bytes(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int> dist(std::is_signed_v<T> ? -128 : 0, std::is_signed_v<T> ? 127 : 255);
  std::vector<T> values(n);
  for (T& v : values) v = static_cast<T>(dist(rng));
  return values;
}

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

// Zero-points the sweeps use: 0, the type's extremes and mid, and an asymmetric value.
template <class T>
std::vector<int32_t> sweep_zero_points() {
  if constexpr (std::is_signed_v<T>) {
    return {0, -128, 127, -17};
  } else {
    return {0, 128, 255, 37};
  }
}

// Scales: random log-uniform in [1e-3, 1].
inline float random_scale(std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-3.0f, 0.0f);
  return std::pow(10.0f, dist(rng));
}

// Sizes with tails around every vector width used (8, 16, 32, 64 lanes).
inline std::vector<size_t> sweep_sizes() {
  return {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 127, 128, 129, 255, 1000};
}

// Isa levels to test: every level the CPU supports (the scalar kernels are what the others are compared to).
inline std::vector<Isa> test_isas() { return supported_isas(); }

template <class T>
std::string first_mismatch(const T* expected, const T* actual, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(T)) != 0) {
      return "index " + std::to_string(i) + ": expected " + std::to_string(+expected[i]) + ", got " +
             std::to_string(+actual[i]);
    }
  }
  return "";
}

template <class T>
const char* dtype_name() {
  return std::is_same_v<T, int8_t> ? "int8" : (std::is_same_v<T, uint8_t> ? "uint8" : "fp32");
}

}  // namespace qdqrt::kernels::testing
