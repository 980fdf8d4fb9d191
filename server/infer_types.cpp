#include "server/infer_types.h"

#include <array>
#include <utility>

#include "server/serve_error.h"

namespace qdqrt::server {

namespace {

constexpr std::array<std::pair<DataType, const char*>, 12> kKserveNames = {{
    {DataType::kBool, "BOOL"},
    {DataType::kUint8, "UINT8"},
    {DataType::kUint16, "UINT16"},
    {DataType::kUint32, "UINT32"},
    {DataType::kUint64, "UINT64"},
    {DataType::kInt8, "INT8"},
    {DataType::kInt16, "INT16"},
    {DataType::kInt32, "INT32"},
    {DataType::kInt64, "INT64"},
    {DataType::kFloat16, "FP16"},
    {DataType::kFloat, "FP32"},
    {DataType::kDouble, "FP64"},
}};

}  // namespace

int http_status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadRequest: return 400;
    case ErrorKind::kNotFound: return 404;
    case ErrorKind::kTooLarge: return 413;
    case ErrorKind::kTooManyRequests: return 429;
    case ErrorKind::kUnavailable: return 503;
    case ErrorKind::kInternal: return 500;
  }
  return 500;
}

const char* kserve_dtype_name(DataType dtype) {
  for (const auto& [type, name] : kKserveNames) {
    if (type == dtype) return name;
  }
  return "";
}

DataType dtype_from_kserve_name(const std::string& name) {
  for (const auto& [type, text] : kKserveNames) {
    if (name == text) return type;
  }
  return DataType::kUndefined;
}

std::optional<int64_t> checked_element_count(const Shape& shape, int64_t limit) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    if (dim != 0 && count > limit / dim) return std::nullopt;
    count *= dim;
  }
  return count;
}

}  // namespace qdqrt::server
