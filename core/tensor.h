// Tensor: a dense, row-major, typed n-d array with shared, 64-byte-aligned storage.
// Copies share storage (like a numpy view of the whole array); use clone() for a deep copy.
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace qdqrt {

using Shape = std::vector<int64_t>;

// Product of dims; 1 for a scalar (empty shape), 0 when any dim is 0 (even if the others alone
// overflow), INT64_MAX when the product overflows.
int64_t shape_numel(const Shape& shape);
// "[1, 3, 224, 224]"
std::string shape_to_string(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor. Dims must be >= 0 and the product must fit (checked by callers that
  // take shapes from untrusted input; see checked_numel()).
  Tensor(DataType dtype, Shape shape);

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    Tensor tensor(dtype_of<T>(), std::move(shape));
    assert(static_cast<int64_t>(values.size()) == tensor.numel());
    T* out = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return tensor;
  }
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, {value});
  }

  bool defined() const { return dtype_ != DataType::kUndefined; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_[static_cast<size_t>(axis)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  template <class T>
  T* data() {
    assert(storage_matches<T>(dtype_));
    return reinterpret_cast<T*>(storage_.get());
  }
  template <class T>
  const T* data() const {
    assert(storage_matches<T>(dtype_));
    return reinterpret_cast<const T*>(storage_.get());
  }
  template <class T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<size_t>(numel_)};
  }
  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }

  // Same storage, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;

  // Element i converted to double / int64 (any numeric dtype); for tests, attributes and
  // small constant inputs such as shapes and axes, not for hot loops.
  double value_as_double(int64_t index) const;
  int64_t value_as_int64(int64_t index) const;
  // All elements as int64 (for shape/axes/indices inputs of int32/int64 dtype).
  std::vector<int64_t> to_int64_vector() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte> storage_;
};

}  // namespace qdqrt
