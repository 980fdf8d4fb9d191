// A minimal 64-byte-aligned, value-semantics buffer for packed kernel data.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace qdqrt::kernels {

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t count) { resize(count); }
  AlignedBuffer(const AlignedBuffer& other) { *this = other; }
  AlignedBuffer(AlignedBuffer&& other) noexcept { swap(other); }
  AlignedBuffer& operator=(const AlignedBuffer& other) {
    if (this != &other) {
      resize(other.size_);
      if (size_) std::memcpy(data_, other.data_, size_ * sizeof(T));
    }
    return *this;
  }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  ~AlignedBuffer() { std::free(data_); }

  // Contents are zeroed; capacity is kept when shrinking so runtime re-packing never allocates.
  void resize(size_t count) {
    if (count > capacity_) {
      std::free(data_);
      size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
      data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
      if (!data_) throw std::bad_alloc();
      capacity_ = count;
    }
    size_ = count;
    if (size_) std::memset(static_cast<void*>(data_), 0, size_ * sizeof(T));
  }
  void swap(AlignedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace qdqrt::kernels
