// 8-bit quantized element types shared by the supporting kernels (qs8 = int8, qu8 = uint8).
// Header-only and constexpr: safe to include from every per-ISA source file.
#pragma once

#include <cstdint>

namespace qdqrt::kernels {

template <class T>
struct QTraits;

template <>
struct QTraits<int8_t> {
  static constexpr int32_t min = -128;
  static constexpr int32_t max = 127;
  static constexpr const char* prefix = "qs8";
};

template <>
struct QTraits<uint8_t> {
  static constexpr int32_t min = 0;
  static constexpr int32_t max = 255;
  static constexpr const char* prefix = "qu8";
};

// A kernel implementation and its XNNPACK-style name ("qs8-vadd-minmax-avx512").
template <class Fn>
struct NamedKernel {
  Fn fn = nullptr;
  const char* name = "";
  explicit operator bool() const { return fn != nullptr; }
};

}  // namespace qdqrt::kernels
