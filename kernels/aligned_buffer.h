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
  ~AlignedBuffer() { release(); }

  // A non-owning view of existing 64-byte-aligned memory (packed weights inside a mapped engine
  // file). Kernels only read it; resize() on a view drops it and allocates owned storage, so a
  // view's memory is never written. Copying a view makes an owned deep copy.
  static AlignedBuffer view(const T* data, size_t count) {
    AlignedBuffer buffer;
    buffer.data_ = const_cast<T*>(data);
    buffer.size_ = count;
    buffer.capacity_ = count;
    buffer.owned_ = false;
    return buffer;
  }
  bool is_view() const { return !owned_ && !borrowed_; }
  // A non-owning, WRITABLE buffer over caller memory with room for `capacity` elements (a
  // layer's per-thread scratch): resize() within the capacity reuses it without allocating;
  // beyond it, the buffer allocates owned storage like an empty one.
  static AlignedBuffer borrow(T* data, size_t capacity) {
    AlignedBuffer buffer;
    buffer.data_ = data;
    buffer.capacity_ = capacity;
    buffer.owned_ = false;
    buffer.borrowed_ = true;
    return buffer;
  }

  // Contents are zeroed; capacity is kept when shrinking so runtime re-packing never allocates.
  void resize(size_t count) {
    if (!owned_ && !borrowed_) release();
    if (count > capacity_) {
      release();
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
    std::swap(owned_, other.owned_);
    std::swap(borrowed_, other.borrowed_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  void release() {
    if (owned_) std::free(data_);
    data_ = nullptr;
    size_ = 0;
    capacity_ = 0;
    owned_ = true;
    borrowed_ = false;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool owned_ = true;
  bool borrowed_ = false;  // with !owned_: writable caller memory (borrow), else read-only (view)
};

}  // namespace qdqrt::kernels
