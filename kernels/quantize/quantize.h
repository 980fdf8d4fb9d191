// Quantize (fp32 -> int8/uint8), dequantize (int8/uint8 -> fp32) and requantize (8-bit -> 8-bit
// with another scale/zero-point) at INT8-region borders.
//
// Formulas (ONNX QuantizeLinear/DequantizeLinear, bit-exact in every ISA variant):
//   quantize:   v = x / scale                      (true fp32 division, as ONNX specifies)
//               v = v > lo ? v : lo;  v = v < hi ? v : hi      lo = qmin - zp, hi = qmax - zp
//               q = round_half_to_even(v) + zp     (NaN -> qmin, +-inf saturate)
//   dequantize: x = float(int32(q) - zp) * scale
//   requantize: v = float(int32(q) - input_zp) * multiplier        multiplier = in_scale / out_scale
//               clamp to [output_min, output_max] like quantize, then round_half_to_even + output_zp.
// Clamping before rounding equals saturating after rounding because the bounds are integers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/qtypes.h"

namespace qdqrt::kernels {

// Per-tensor (or one channel's contiguous run): n elements, one scale and zero-point.
template <class T>
using QuantizeFn = void (*)(size_t n, const float* input, T* output, float scale, int32_t zero_point);
template <class T>
using DequantizeFn = void (*)(size_t n, const T* input, float* output, float scale, int32_t zero_point);

// Per-channel with channels innermost (NHWC, axis = last): rows x channels contiguous elements,
// scales[c] and zero_points[c] per channel. Other axes are runs of the per-tensor kernel.
template <class T>
using QuantizeChannelsFn = void (*)(size_t rows, size_t channels, const float* input, T* output,
                                    const float* scales, const int32_t* zero_points);
// Squeeze-excite's channel gate then quantize, channels innermost (NHWC rows of one image):
//   output[r * channels + c] = quantize(input[r * channels + c] * gate[c], scale, zero_point)
template <class T>
using QuantizeGatedFn = void (*)(size_t rows, size_t channels, const float* input, const float* gate, T* output,
                                 float scale, int32_t zero_point);
// A residual block's end, Add -> [Relu] -> QuantizeLinear, in one pass over n elements:
//   v = a[i] + b[i];  relu: v = v > 0 ? v : 0 (the engine's Relu: vmaxps(v, 0));
//   sum[i] = v (when sum is not null);  output[i] = quantize(v, scale, zero_point)
template <class T>
using AddQuantizeFn = void (*)(size_t n, const float* a, const float* b, float* sum, T* output, float scale,
                               int32_t zero_point, bool relu);
template <class T>
using DequantizeChannelsFn = void (*)(size_t rows, size_t channels, const T* input, float* output,
                                      const float* scales, const int32_t* zero_points);

// Fused border kernel: fp32 NCHW -> T NHWC for one image and a pixel range (the model-input case):
//   output[p * channels + c] = quantize(input[c * pixels + p], scales[c], zero_points[c])
// for p in [pixel_begin, pixel_end); input/output point at the image's first element. Per-tensor
// quantization passes the same scale/zero-point for every channel. Same formula as quantize.
template <class T>
using QuantizeNchwToNhwcFn = void (*)(size_t channels, size_t pixels, size_t pixel_begin, size_t pixel_end,
                                      const float* input, T* output, const float* scales,
                                      const int32_t* zero_points);

struct RequantizeParams {
  int32_t input_zero_point = 0;
  float multiplier = 1.0f;  // input_scale / output_scale, computed once in fp32
  int32_t output_zero_point = 0;
  float output_min = 0.0f;  // qmin - output_zero_point (or the ReLU bound), as float
  float output_max = 0.0f;  // qmax - output_zero_point
};
template <class T>
RequantizeParams make_requantize_params(float input_scale, int32_t input_zero_point, float output_scale,
                                        int32_t output_zero_point, bool relu = false);

template <class T>
using RequantizeFn = void (*)(size_t n, const T* input, T* output, const RequantizeParams& params);

// Implementations (quantize_<isa>.cpp); pick one through dispatch.h.
#define QDQRT_DECLARE_QUANTIZE_KERNELS(isa)                                                               \
  namespace isa {                                                                                         \
  template <class T>                                                                                      \
  void quantize(size_t n, const float* input, T* output, float scale, int32_t zero_point);                \
  template <class T>                                                                                      \
  void dequantize(size_t n, const T* input, float* output, float scale, int32_t zero_point);              \
  template <class T>                                                                                      \
  void quantize_channels(size_t rows, size_t channels, const float* input, T* output,                     \
                         const float* scales, const int32_t* zero_points);                                \
  template <class T>                                                                                      \
  void quantize_gated(size_t rows, size_t channels, const float* input, const float* gate, T* output,     \
                      float scale, int32_t zero_point);                                                   \
  template <class T>                                                                                      \
  void add_quantize(size_t n, const float* a, const float* b, float* sum, T* output, float scale,         \
                    int32_t zero_point, bool relu);                                                       \
  template <class T>                                                                                      \
  void dequantize_channels(size_t rows, size_t channels, const T* input, float* output,                   \
                           const float* scales, const int32_t* zero_points);                              \
  template <class T>                                                                                      \
  void requantize(size_t n, const T* input, T* output, const RequantizeParams& params);                   \
  template <class T>                                                                                      \
  void quantize_nchw_to_nhwc(size_t channels, size_t pixels, size_t pixel_begin, size_t pixel_end,        \
                             const float* input, T* output, const float* scales, const int32_t* zero_points); \
  }
QDQRT_DECLARE_QUANTIZE_KERNELS(scalar)
QDQRT_DECLARE_QUANTIZE_KERNELS(avx2)
QDQRT_DECLARE_QUANTIZE_KERNELS(avx512skx)
#undef QDQRT_DECLARE_QUANTIZE_KERNELS

// For the files that define them, inside the kernels' namespace.
#define QDQRT_INSTANTIATE_QUANTIZE_KERNELS(T)                                                            \
  template void quantize<T>(size_t, const float*, T*, float, int32_t);                                   \
  template void dequantize<T>(size_t, const T*, float*, float, int32_t);                                 \
  template void quantize_channels<T>(size_t, size_t, const float*, T*, const float*, const int32_t*);     \
  template void quantize_gated<T>(size_t, size_t, const float*, const float*, T*, float, int32_t);         \
  template void add_quantize<T>(size_t, const float*, const float*, float*, T*, float, int32_t, bool);     \
  template void dequantize_channels<T>(size_t, size_t, const T*, float*, const float*, const int32_t*);   \
  template void requantize<T>(size_t, const T*, T*, const RequantizeParams&);                             \
  template void quantize_nchw_to_nhwc<T>(size_t, size_t, size_t, size_t, const float*, T*, const float*,  \
                                         const int32_t*);

}  // namespace qdqrt::kernels
