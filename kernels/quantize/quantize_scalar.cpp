// Portable quantize/dequantize/requantize (Isa::kScalar): the formulas of quantize.h written
// plainly; every vector variant must match them bit for bit.
#include "kernels/quantize/quantize.h"
#include "kernels/scalar_math.h"

namespace qdqrt::kernels::scalar {

template <class T>
void quantize(size_t n, const float* input, T* output, float scale, int32_t zero_point) {
  const float lo = static_cast<float>(QTraits<T>::min - zero_point);
  const float hi = static_cast<float>(QTraits<T>::max - zero_point);
  for (size_t i = 0; i < n; ++i) {
    output[i] = static_cast<T>(scalar::requantize_value(input[i] / scale, lo, hi, zero_point));
  }
}

template <class T>
void dequantize(size_t n, const T* input, float* output, float scale, int32_t zero_point) {
  for (size_t i = 0; i < n; ++i) {
    output[i] = static_cast<float>(static_cast<int32_t>(input[i]) - zero_point) * scale;
  }
}

template <class T>
void quantize_channels(size_t rows, size_t channels, const float* input, T* output, const float* scales,
                       const int32_t* zero_points) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < channels; ++c) {
      const float lo = static_cast<float>(QTraits<T>::min - zero_points[c]);
      const float hi = static_cast<float>(QTraits<T>::max - zero_points[c]);
      const size_t i = r * channels + c;
      output[i] = static_cast<T>(scalar::requantize_value(input[i] / scales[c], lo, hi, zero_points[c]));
    }
  }
}

template <class T>
void quantize_gated(size_t rows, size_t channels, const float* input, const float* gate, T* output, float scale,
                    int32_t zero_point) {
  const float lo = static_cast<float>(QTraits<T>::min - zero_point);
  const float hi = static_cast<float>(QTraits<T>::max - zero_point);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < channels; ++c) {
      const size_t i = r * channels + c;
      output[i] = static_cast<T>(scalar::requantize_value(input[i] * gate[c] / scale, lo, hi, zero_point));
    }
  }
}

template <class T>
void add_quantize(size_t n, const float* a, const float* b, float* sum, T* output, float scale, int32_t zero_point,
                  bool relu) {
  const float lo = static_cast<float>(QTraits<T>::min - zero_point);
  const float hi = static_cast<float>(QTraits<T>::max - zero_point);
  for (size_t i = 0; i < n; ++i) {
    float v = a[i] + b[i];
    if (relu) v = v > 0.0f ? v : 0.0f;
    if (sum != nullptr) sum[i] = v;
    output[i] = static_cast<T>(scalar::requantize_value(v / scale, lo, hi, zero_point));
  }
}

template <class T>
void dequantize_channels(size_t rows, size_t channels, const T* input, float* output, const float* scales,
                         const int32_t* zero_points) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < channels; ++c) {
      const size_t i = r * channels + c;
      output[i] = static_cast<float>(static_cast<int32_t>(input[i]) - zero_points[c]) * scales[c];
    }
  }
}

template <class T>
void requantize(size_t n, const T* input, T* output, const RequantizeParams& params) {
  for (size_t i = 0; i < n; ++i) {
    const float value =
        static_cast<float>(static_cast<int32_t>(input[i]) - params.input_zero_point) * params.multiplier;
    output[i] = static_cast<T>(
        scalar::requantize_value(value, params.output_min, params.output_max, params.output_zero_point));
  }
}

template <class T>
void quantize_nchw_to_nhwc(size_t channels, size_t pixels, size_t pixel_begin, size_t pixel_end,
                           const float* input, T* output, const float* scales, const int32_t* zero_points) {
  for (size_t p = pixel_begin; p < pixel_end; ++p) {
    for (size_t c = 0; c < channels; ++c) {
      const float lo = static_cast<float>(QTraits<T>::min - zero_points[c]);
      const float hi = static_cast<float>(QTraits<T>::max - zero_points[c]);
      output[p * channels + c] = static_cast<T>(
          scalar::requantize_value(input[c * pixels + p] / scales[c], lo, hi, zero_points[c]));
    }
  }
}

QDQRT_INSTANTIATE_QUANTIZE_KERNELS(int8_t)
QDQRT_INSTANTIATE_QUANTIZE_KERNELS(uint8_t)

}  // namespace qdqrt::kernels::scalar
