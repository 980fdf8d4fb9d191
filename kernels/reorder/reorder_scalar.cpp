// Portable transposes (Isa::kScalar): cache-blocked scalar copies.
#include <algorithm>

#include "kernels/reorder/reorder.h"

namespace qdqrt::kernels::scalar {

namespace {
template <class Element>
void transpose_blocked(size_t rows, size_t cols, const Element* src, size_t src_stride, Element* dst,
                       size_t dst_stride) {
  constexpr size_t kBlock = 32;
  for (size_t r0 = 0; r0 < rows; r0 += kBlock) {
    const size_t r1 = std::min(rows, r0 + kBlock);
    for (size_t c0 = 0; c0 < cols; c0 += kBlock) {
      const size_t c1 = std::min(cols, c0 + kBlock);
      for (size_t r = r0; r < r1; ++r) {
        for (size_t c = c0; c < c1; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
      }
    }
  }
}
}  // namespace

void transpose8(size_t rows, size_t cols, const uint8_t* src, size_t src_stride, uint8_t* dst, size_t dst_stride) {
  transpose_blocked(rows, cols, src, src_stride, dst, dst_stride);
}
void transpose32(size_t rows, size_t cols, const uint32_t* src, size_t src_stride, uint32_t* dst,
                 size_t dst_stride) {
  transpose_blocked(rows, cols, src, src_stride, dst, dst_stride);
}

}  // namespace qdqrt::kernels::scalar
