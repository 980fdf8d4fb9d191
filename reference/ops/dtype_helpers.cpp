#include "reference/ops/dtype_helpers.h"

#include <cassert>

namespace qdqrt::reference {

std::pair<int64_t, int64_t> integer_range(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return {-128, 127};
    case DataType::kUint8: return {0, 255};
    case DataType::kInt16: return {-32768, 32767};
    case DataType::kUint16: return {0, 65535};
    case DataType::kInt4: return {-8, 7};
    case DataType::kUint4: return {0, 15};
    case DataType::kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DataType::kUint32: return {0, std::numeric_limits<uint32_t>::max()};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

void store_integer(Tensor& tensor, int64_t index, int64_t value) {
  switch (tensor.dtype()) {
    case DataType::kInt8:
    case DataType::kInt4: tensor.data<int8_t>()[index] = static_cast<int8_t>(value); break;
    case DataType::kUint8:
    case DataType::kUint4: tensor.data<uint8_t>()[index] = static_cast<uint8_t>(value); break;
    case DataType::kInt16: tensor.data<int16_t>()[index] = static_cast<int16_t>(value); break;
    case DataType::kUint16: tensor.data<uint16_t>()[index] = static_cast<uint16_t>(value); break;
    case DataType::kInt32: tensor.data<int32_t>()[index] = static_cast<int32_t>(value); break;
    case DataType::kUint32: tensor.data<uint32_t>()[index] = static_cast<uint32_t>(value); break;
    case DataType::kInt64: tensor.data<int64_t>()[index] = value; break;
    case DataType::kUint64: tensor.data<uint64_t>()[index] = static_cast<uint64_t>(value); break;
    default: assert(false && "store_integer on a non-integer tensor");
  }
}

}  // namespace qdqrt::reference
