#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace qdqrt {

int64_t shape_numel(const Shape& shape) {
  // A zero dim empties the tensor even when the other dims alone overflow ([2^40, 2^40, 0] is a
  // valid empty initializer); a product that overflows saturates instead of wrapping.
  for (int64_t dim : shape) {
    if (dim == 0) return 0;
  }
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(numel, dim, &numel)) return INT64_MAX;
  }
  return numel;
}

std::string shape_to_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Tensor::Tensor(DataType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  // Round up to a whole cache line so vector kernels may read a full line at the tail.
  size_t bytes = static_cast<size_t>(numel_) * dtype_size(dtype_);
  size_t padded = (bytes + 63) / 64 * 64;
  if (padded == 0) padded = 64;
  void* memory = std::aligned_alloc(64, padded);
  if (memory == nullptr) throw std::bad_alloc();
  std::memset(memory, 0, padded);
  storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(memory), [](std::byte* p) { std::free(p); });
}

Tensor Tensor::reshaped(Shape shape) const {
  assert(shape_numel(shape) == numel_);
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor copy(dtype_, shape_);
  std::memcpy(copy.raw_data(), raw_data(), nbytes());
  return copy;
}

double Tensor::value_as_double(int64_t index) const {
  switch (dtype_) {
    case DataType::kFloat: return data<float>()[index];
    case DataType::kDouble: return data<double>()[index];
    case DataType::kUint8: case DataType::kUint4: return data<uint8_t>()[index];
    case DataType::kInt8: case DataType::kInt4: return data<int8_t>()[index];
    case DataType::kUint16: return data<uint16_t>()[index];
    case DataType::kInt16: return data<int16_t>()[index];
    case DataType::kInt32: return data<int32_t>()[index];
    case DataType::kInt64: return static_cast<double>(data<int64_t>()[index]);
    case DataType::kUint32: return data<uint32_t>()[index];
    case DataType::kUint64: return static_cast<double>(data<uint64_t>()[index]);
    case DataType::kBool: return data<bool>()[index] ? 1.0 : 0.0;
    default: return 0.0;
  }
}

int64_t Tensor::value_as_int64(int64_t index) const {
  switch (dtype_) {
    case DataType::kInt64: return data<int64_t>()[index];
    case DataType::kInt32: return data<int32_t>()[index];
    case DataType::kUint64: return static_cast<int64_t>(data<uint64_t>()[index]);
    default: return static_cast<int64_t>(value_as_double(index));
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = value_as_int64(i);
  return out;
}

}  // namespace qdqrt
