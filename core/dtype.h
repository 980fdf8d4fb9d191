// Element types, numbered as ONNX's TensorProto.DataType so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace qdqrt {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBFloat16 = 16,
  kUint4 = 21,  // stored unpacked, one element per byte (uint8 storage)
  kInt4 = 22,   // stored unpacked, one element per byte (int8 storage)
};

// Bytes per element in qdqrt's in-memory storage (int4/uint4 take one byte each).
// 0 for kUndefined and kString (unsupported as tensor data).
size_t dtype_size(DataType dtype);
// "float32", "int8", ... as numpy spells them.
const char* dtype_name(DataType dtype);
// True for every value of the enum above except kUndefined (ONNX may send other numbers).
bool dtype_is_known(int32_t onnx_dtype);
bool dtype_is_integer(DataType dtype);
bool dtype_is_float(DataType dtype);

template <class T>
constexpr DataType dtype_of();
template <> constexpr DataType dtype_of<float>() { return DataType::kFloat; }
template <> constexpr DataType dtype_of<double>() { return DataType::kDouble; }
template <> constexpr DataType dtype_of<uint8_t>() { return DataType::kUint8; }
template <> constexpr DataType dtype_of<int8_t>() { return DataType::kInt8; }
template <> constexpr DataType dtype_of<uint16_t>() { return DataType::kUint16; }
template <> constexpr DataType dtype_of<int16_t>() { return DataType::kInt16; }
template <> constexpr DataType dtype_of<int32_t>() { return DataType::kInt32; }
template <> constexpr DataType dtype_of<int64_t>() { return DataType::kInt64; }
template <> constexpr DataType dtype_of<uint32_t>() { return DataType::kUint32; }
template <> constexpr DataType dtype_of<uint64_t>() { return DataType::kUint64; }
template <> constexpr DataType dtype_of<bool>() { return DataType::kBool; }

// True when a buffer of dtype can be read as T* (int4 as int8, uint4 as uint8, fp16/bf16 as uint16).
template <class T>
constexpr bool storage_matches(DataType dtype) {
  if (dtype == dtype_of<T>()) return true;
  if constexpr (std::is_same_v<T, int8_t>) return dtype == DataType::kInt4;
  if constexpr (std::is_same_v<T, uint8_t>) return dtype == DataType::kUint4;
  if constexpr (std::is_same_v<T, uint16_t>) return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
  return false;
}

}  // namespace qdqrt
