// AVX2 transposes: 16x16 byte tiles through a 4-stage SSE unpack network, 8x8 dword tiles through
// AVX unpack/shuffle/permute; ragged edges use scalar copies (pure moves, so still exact).
#include <immintrin.h>

#include "kernels/reorder/reorder.h"

namespace qdqrt::kernels::avx2 {

namespace {

void transpose8_tile16(const uint8_t* src, size_t src_stride, uint8_t* dst, size_t dst_stride) {
  __m128i r[16], a[16], b[16], c[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
  // a[2i] / a[2i+1]: 16-bit pairs (row 2i, row 2i+1) for columns 0-7 / 8-15.
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  // b[4j+m]: 32-bit groups of rows 4j..4j+3 for columns 4m..4m+3.
  for (int j = 0; j < 4; ++j) {
    b[4 * j + 0] = _mm_unpacklo_epi16(a[4 * j], a[4 * j + 2]);
    b[4 * j + 1] = _mm_unpackhi_epi16(a[4 * j], a[4 * j + 2]);
    b[4 * j + 2] = _mm_unpacklo_epi16(a[4 * j + 1], a[4 * j + 3]);
    b[4 * j + 3] = _mm_unpackhi_epi16(a[4 * j + 1], a[4 * j + 3]);
  }
  // c[8h+t]: 64-bit groups of rows 8h..8h+7 for columns 2t, 2t+1.
  for (int h = 0; h < 2; ++h) {
    for (int m = 0; m < 4; ++m) {
      c[8 * h + 2 * m] = _mm_unpacklo_epi32(b[8 * h + m], b[8 * h + 4 + m]);
      c[8 * h + 2 * m + 1] = _mm_unpackhi_epi32(b[8 * h + m], b[8 * h + 4 + m]);
    }
  }
  for (int t = 0; t < 8; ++t) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * t) * dst_stride), _mm_unpacklo_epi64(c[t], c[8 + t]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * t + 1) * dst_stride),
                     _mm_unpackhi_epi64(c[t], c[8 + t]));
  }
}

void transpose32_tile8(const uint32_t* src, size_t src_stride, uint32_t* dst, size_t dst_stride) {
  __m256 r[8], t[8], s[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + i * src_stride));
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    s[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_stride), _mm256_permute2f128_ps(s[i], s[4 + i], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + (4 + i) * dst_stride),
                     _mm256_permute2f128_ps(s[i], s[4 + i], 0x31));
  }
}

template <class Element, size_t kTile, class Tile>
void transpose_tiled(size_t rows, size_t cols, const Element* src, size_t src_stride, Element* dst,
                     size_t dst_stride, Tile tile) {
  const size_t full_rows = rows - rows % kTile;
  const size_t full_cols = cols - cols % kTile;
  for (size_t r = 0; r < full_rows; r += kTile) {
    for (size_t c = 0; c < full_cols; c += kTile) {
      tile(src + r * src_stride + c, src_stride, dst + c * dst_stride + r, dst_stride);
    }
    for (size_t rr = r; rr < r + kTile; ++rr) {
      for (size_t c = full_cols; c < cols; ++c) dst[c * dst_stride + rr] = src[rr * src_stride + c];
    }
  }
  for (size_t r = full_rows; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
  }
}

}  // namespace

void transpose8(size_t rows, size_t cols, const uint8_t* src, size_t src_stride, uint8_t* dst, size_t dst_stride) {
  transpose_tiled<uint8_t, 16>(rows, cols, src, src_stride, dst, dst_stride, transpose8_tile16);
}

void transpose32(size_t rows, size_t cols, const uint32_t* src, size_t src_stride, uint32_t* dst,
                 size_t dst_stride) {
  transpose_tiled<uint32_t, 8>(rows, cols, src, src_stride, dst, dst_stride, transpose32_tile8);
}

}  // namespace qdqrt::kernels::avx2
