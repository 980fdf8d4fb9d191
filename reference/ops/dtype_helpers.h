// Element types in the reference kernels: dispatch from a DataType to a C++ type, conversions
// without undefined behaviour, numpy's wrapping integer arithmetic, integer ranges and
// type-independent element copies.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt::reference {

// ---- dtype dispatch ----
// f(std::type_identity<T>{}) for the element type T of dtype; f returns Status.

template <class F>
Status visit_numeric(const Node& node, const char* what, DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat: return f(std::type_identity<float>{});
    case DataType::kDouble: return f(std::type_identity<double>{});
    case DataType::kInt8: return f(std::type_identity<int8_t>{});
    case DataType::kUint8: return f(std::type_identity<uint8_t>{});
    case DataType::kInt16: return f(std::type_identity<int16_t>{});
    case DataType::kUint16: return f(std::type_identity<uint16_t>{});
    case DataType::kInt32: return f(std::type_identity<int32_t>{});
    case DataType::kUint32: return f(std::type_identity<uint32_t>{});
    case DataType::kInt64: return f(std::type_identity<int64_t>{});
    case DataType::kUint64: return f(std::type_identity<uint64_t>{});
    default: return unsupported_dtype(node, what, dtype);
  }
}

template <class F>
Status visit_numeric_or_bool(const Node& node, const char* what, DataType dtype, F&& f) {
  if (dtype == DataType::kBool) return f(std::type_identity<bool>{});
  return visit_numeric(node, what, dtype, std::forward<F>(f));
}

template <class F>
Status visit_float(const Node& node, const char* what, DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat: return f(std::type_identity<float>{});
    case DataType::kDouble: return f(std::type_identity<double>{});
    default: return unsupported_dtype(node, what, dtype);
  }
}

// ---- conversions and arithmetic ----

// double -> T without undefined behaviour: NaN gives 0, out-of-range values clamp (integer T).
template <class T>
T cast_from_double(double value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    if (std::isnan(value)) return 0;
    if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  }
}

// Integer add/sub/mul wrap around like numpy: computed in an unsigned type at least as wide as
// unsigned int (so small types do not promote to signed int), where overflow is defined.
template <class T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
T wrapping_add(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <class T>
T wrapping_sub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <class T>
T wrapping_mul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}

// [lowest, highest] of an integer element type (int4: [-8, 7]).
std::pair<int64_t, int64_t> integer_range(DataType dtype);
// Writes an integer (already in range) into element `index` of an integer tensor.
void store_integer(Tensor& tensor, int64_t index, int64_t value);

// ---- element copies independent of dtype ----

inline void copy_element(std::byte* dst, int64_t dst_index, const std::byte* src, int64_t src_index, size_t size) {
  std::memcpy(dst + dst_index * static_cast<int64_t>(size), src + src_index * static_cast<int64_t>(size), size);
}

inline const std::byte* bytes_of(const Tensor& tensor) { return static_cast<const std::byte*>(tensor.raw_data()); }
inline std::byte* bytes_of(Tensor& tensor) { return static_cast<std::byte*>(tensor.raw_data()); }

}  // namespace qdqrt::reference
