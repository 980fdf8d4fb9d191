// NCHW <-> NHWC reorders as batched 2-D transposes of 1-byte (int8/uint8) or 4-byte (fp32)
// elements. Pure copies: every variant is bit-exact.
//   transpose: dst[c * dst_stride + r] = src[r * src_stride + c], r < rows, c < cols.
//   NCHW -> NHWC, one image: rows = C, cols = H*W, src_stride = H*W, dst_stride = C.
//   NHWC -> NCHW, one image: rows = H*W, cols = C, src_stride = C, dst_stride = H*W.
// Split across threads by column ranges (offset src by c0, dst by c0 * dst_stride).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt::kernels {

using Transpose8Fn = void (*)(size_t rows, size_t cols, const uint8_t* src, size_t src_stride, uint8_t* dst,
                              size_t dst_stride);
using Transpose32Fn = void (*)(size_t rows, size_t cols, const uint32_t* src, size_t src_stride, uint32_t* dst,
                               size_t dst_stride);

namespace scalar {
void transpose8(size_t rows, size_t cols, const uint8_t* src, size_t src_stride, uint8_t* dst, size_t dst_stride);
void transpose32(size_t rows, size_t cols, const uint32_t* src, size_t src_stride, uint32_t* dst,
                 size_t dst_stride);
}  // namespace scalar
namespace avx2 {
// 16x16 byte tiles (SSE unpack network) / 8x8 dword tiles (AVX unpack + permute); edges scalar.
void transpose8(size_t rows, size_t cols, const uint8_t* src, size_t src_stride, uint8_t* dst, size_t dst_stride);
void transpose32(size_t rows, size_t cols, const uint32_t* src, size_t src_stride, uint32_t* dst,
                 size_t dst_stride);
}  // namespace avx2

// Whole-tensor helpers over images [0, batch) for a column (pixel or channel) range.
template <class Element, class Fn>
void nchw_to_nhwc(size_t batch, size_t channels, size_t pixels, const Element* src, Element* dst, Fn transpose,
                  size_t pixel_begin, size_t pixel_end) {
  for (size_t n = 0; n < batch; ++n) {
    const Element* image_in = src + n * channels * pixels;
    Element* image_out = dst + n * channels * pixels;
    transpose(channels, pixel_end - pixel_begin, image_in + pixel_begin, pixels, image_out + pixel_begin * channels,
              channels);
  }
}
template <class Element, class Fn>
void nhwc_to_nchw(size_t batch, size_t channels, size_t pixels, const Element* src, Element* dst, Fn transpose,
                  size_t pixel_begin, size_t pixel_end) {
  for (size_t n = 0; n < batch; ++n) {
    const Element* image_in = src + n * channels * pixels;
    Element* image_out = dst + n * channels * pixels;
    transpose(pixel_end - pixel_begin, channels, image_in + pixel_begin * channels, channels,
              image_out + pixel_begin, pixels);
  }
}

}  // namespace qdqrt::kernels
