// Portable NHWC pools (Isa::kScalar): the formulas of qpool.h written plainly, recomputing
// pool_window() per pixel; every vector variant must match them bit for bit.
#include <algorithm>

#include "kernels/pool/qpool.h"
#include "kernels/scalar_math.h"

namespace qdqrt::kernels::scalar {

template <class T>
void maxpool(const Pool2dShape& s, size_t pixel_begin, size_t pixel_end, const T* input, T* output) {
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel) {
    const PoolWindow w = pool_window(s, pixel);
    T* out = output + pixel * s.out_stride();
    for (size_t c = 0; c < s.channels; ++c) {
      int32_t best = QTraits<T>::min;
      for (size_t kh = w.kh_begin; kh < w.kh_end; ++kh) {
        const size_t ih = w.oh * s.stride_height + kh * s.dilation_height - s.pad_top;
        for (size_t kw = w.kw_begin; kw < w.kw_end; ++kw) {
          const size_t iw = w.ow * s.stride_width + kw * s.dilation_width - s.pad_left;
          const size_t in_pixel = (w.image * s.input_height + ih) * s.input_width + iw;
          best = std::max<int32_t>(best, input[in_pixel * s.in_stride() + c]);
        }
      }
      out[c] = static_cast<T>(best);
    }
  }
}

template <class T>
void avgpool(const Pool2dShape& s, const AvgPoolParams& p, size_t pixel_begin, size_t pixel_end, const T* input,
             T* output) {
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel) {
    const PoolWindow w = pool_window(s, pixel);
    const size_t divisor = std::max<size_t>(1, p.count_include_pad ? w.padded_taps : w.valid_taps);
    const float multiplier = p.multiplier / static_cast<float>(divisor);
    const int32_t bias = p.input_zero_point * static_cast<int32_t>(w.valid_taps);
    T* out = output + pixel * s.out_stride();
    for (size_t c = 0; c < s.channels; ++c) {
      int32_t sum = 0;
      for (size_t kh = w.kh_begin; kh < w.kh_end; ++kh) {
        const size_t ih = w.oh * s.stride_height + kh * s.dilation_height - s.pad_top;
        for (size_t kw = w.kw_begin; kw < w.kw_end; ++kw) {
          const size_t iw = w.ow * s.stride_width + kw * s.dilation_width - s.pad_left;
          const size_t in_pixel = (w.image * s.input_height + ih) * s.input_width + iw;
          sum += input[in_pixel * s.in_stride() + c];
        }
      }
      const float value = static_cast<float>(sum - bias) * multiplier;
      out[c] = static_cast<T>(scalar::requantize_value(value, p.output_min, p.output_max, p.output_zero_point));
    }
  }
}

template <class T>
void global_avgpool(size_t pixels, size_t channels, size_t input_pixel_stride, const T* input, T* output,
                    const AvgPoolParams& p) {
  const size_t stride = input_pixel_stride ? input_pixel_stride : channels;
  const float multiplier = p.multiplier / static_cast<float>(std::max<size_t>(1, pixels));
  const int32_t bias = p.input_zero_point * static_cast<int32_t>(pixels);
  for (size_t c = 0; c < channels; ++c) {
    int32_t sum = 0;
    for (size_t i = 0; i < pixels; ++i) sum += input[i * stride + c];
    const float value = static_cast<float>(sum - bias) * multiplier;
    output[c] = static_cast<T>(scalar::requantize_value(value, p.output_min, p.output_max, p.output_zero_point));
  }
}

QDQRT_INSTANTIATE_QPOOL_KERNELS(int8_t)
QDQRT_INSTANTIATE_QPOOL_KERNELS(uint8_t)

}  // namespace qdqrt::kernels::scalar
