#include "kernels/pool/favgpool.h"

#include <algorithm>
#include <cstdint>

namespace qdqrt::kernels {

namespace {

// Taps of one axis inside input + pads for the window starting at `start` (may be negative).
size_t padded_taps(int64_t start, size_t kernel, size_t dilation, size_t input, size_t pad_end) {
  size_t taps = 0;
  for (size_t k = 0; k < kernel; ++k) {
    if (start + static_cast<int64_t>(k * dilation) < static_cast<int64_t>(input + pad_end)) ++taps;
  }
  return taps;
}

// sums[c] += tap[c]: the loop the compiler vectorizes (per channel the adds stay in tap order).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void accumulate(double* __restrict sums, const float* __restrict tap, size_t channels) {
  for (size_t c = 0; c < channels; ++c) sums[c] += static_cast<double>(tap[c]);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void divide(float* __restrict out, const double* __restrict sums, size_t channels, double count) {
  for (size_t c = 0; c < channels; ++c) out[c] = static_cast<float>(sums[c] / count);
}

}  // namespace

void f32_avgpool_row_nhwc(const Pool2dShape& shape, bool count_include_pad, size_t output_row, const float* image,
                          float* averages, double* sums) {
  const size_t channels = shape.channels, pixel_stride = shape.in_stride();
  const int64_t top = static_cast<int64_t>(output_row * shape.stride_height) - static_cast<int64_t>(shape.pad_top);
  const size_t rows_padded =
      padded_taps(top, shape.kernel_height, shape.dilation_height, shape.input_height, shape.pad_bottom);
  for (size_t ow = 0; ow < shape.output_width; ++ow) {
    const int64_t left = static_cast<int64_t>(ow * shape.stride_width) - static_cast<int64_t>(shape.pad_left);
    std::fill_n(sums, channels, 0.0);
    size_t inside = 0;
    for (size_t kh = 0; kh < shape.kernel_height; ++kh) {
      const int64_t ih = top + static_cast<int64_t>(kh * shape.dilation_height);
      if (ih < 0 || ih >= static_cast<int64_t>(shape.input_height)) continue;
      for (size_t kw = 0; kw < shape.kernel_width; ++kw) {
        const int64_t iw = left + static_cast<int64_t>(kw * shape.dilation_width);
        if (iw < 0 || iw >= static_cast<int64_t>(shape.input_width)) continue;
        accumulate(sums, image + (static_cast<size_t>(ih) * shape.input_width + static_cast<size_t>(iw)) * pixel_stride,
                   channels);
        ++inside;
      }
    }
    const size_t count =
        count_include_pad
            ? rows_padded * padded_taps(left, shape.kernel_width, shape.dilation_width, shape.input_width, shape.pad_right)
            : inside;
    float* out = averages + ow * channels;
    if (count == 0) {
      std::fill_n(out, channels, 0.0f);
    } else {
      divide(out, sums, channels, static_cast<double>(count));
    }
  }
}

}  // namespace qdqrt::kernels
