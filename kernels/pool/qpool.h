// Quantized pooling on NHWC int8/uint8 tensors.
//
// Max pool: max over the window taps that fall inside the input (padding never wins, as ONNX pads
//   MaxPool with -inf); a window without any valid tap writes qmin. Output shares the input's
//   scale and zero-point (MaxPool commutes with quantization).
// Average pool (windowed and global): int32 sums of the valid taps, requantized once:
//   v = float(sum - input_zp * valid_taps) * (multiplier / float(divisor))
//   q = round_half_to_even(clamp(v, qmin - output_zp, qmax - output_zp)) + output_zp
//   multiplier = input_scale / output_scale; divisor = valid_taps, or with count_include_pad the
//   taps inside the padded input (padding counts as real 0, i.e. as input_zp).
// Kernels work on output pixel ranges [pixel_begin, pixel_end) of the flattened (n, oh, ow)
// index, so a runtime can split them across threads. Pixel strides (elements between neighbouring
// pixels, >= channels) let pools read a channel slice or write into a concat buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/qtypes.h"

namespace qdqrt::kernels {

struct Pool2dShape {
  size_t batch = 1;
  size_t input_height = 0, input_width = 0;
  size_t channels = 0;
  size_t output_height = 0, output_width = 0;
  size_t kernel_height = 1, kernel_width = 1;
  size_t stride_height = 1, stride_width = 1;
  size_t dilation_height = 1, dilation_width = 1;
  size_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  size_t input_pixel_stride = 0;   // 0: channels
  size_t output_pixel_stride = 0;  // 0: channels

  size_t output_pixels() const { return batch * output_height * output_width; }
  size_t in_stride() const { return input_pixel_stride ? input_pixel_stride : channels; }
  size_t out_stride() const { return output_pixel_stride ? output_pixel_stride : channels; }
};

// ONNX output size: floor or ceil((in + pads - dilation*(k-1) - 1) / stride) + 1 (ceil_mode drops a
// last window that would start inside the end padding).
size_t pool_output_size(size_t input, size_t kernel, size_t stride, size_t dilation, size_t pad_begin,
                        size_t pad_end, bool ceil_mode);

struct AvgPoolParams {
  int32_t input_zero_point = 0;
  int32_t output_zero_point = 0;
  float multiplier = 1.0f;  // input_scale / output_scale
  float output_min = 0.0f;  // qmin - output_zp (ReLU: max(qmin, zp) - zp)
  float output_max = 0.0f;
  bool count_include_pad = false;
};
template <class T>
AvgPoolParams make_avgpool_params(float input_scale, int32_t input_zero_point, float output_scale,
                                  int32_t output_zero_point, bool count_include_pad, bool relu = false);

template <class T>
using MaxPoolFn = void (*)(const Pool2dShape& shape, size_t pixel_begin, size_t pixel_end, const T* input,
                           T* output);
template <class T>
using AvgPoolFn = void (*)(const Pool2dShape& shape, const AvgPoolParams& params, size_t pixel_begin,
                           size_t pixel_end, const T* input, T* output);
// One image's global average pool: input is pixels x channels (pixel stride input_pixel_stride or
// channels), output is channels values. Split channels across threads by offsetting both pointers.
template <class T>
using GlobalAvgPoolFn = void (*)(size_t pixels, size_t channels, size_t input_pixel_stride, const T* input,
                                 T* output, const AvgPoolParams& params);

#define QDQRT_DECLARE_QPOOL_KERNELS(isa)                                                                      \
  namespace isa {                                                                                             \
  template <class T>                                                                                          \
  void maxpool(const Pool2dShape& shape, size_t pixel_begin, size_t pixel_end, const T* input, T* output);     \
  template <class T>                                                                                          \
  void avgpool(const Pool2dShape& shape, const AvgPoolParams& params, size_t pixel_begin, size_t pixel_end,   \
               const T* input, T* output);                                                                    \
  template <class T>                                                                                          \
  void global_avgpool(size_t pixels, size_t channels, size_t input_pixel_stride, const T* input, T* output,   \
                      const AvgPoolParams& params);                                                           \
  }
// Implementations (qpool_<isa>.cpp); pick one through dispatch.h.
QDQRT_DECLARE_QPOOL_KERNELS(scalar)
QDQRT_DECLARE_QPOOL_KERNELS(avx2)
QDQRT_DECLARE_QPOOL_KERNELS(avx512skx)
#undef QDQRT_DECLARE_QPOOL_KERNELS

// For the files that define them, inside the kernels' namespace.
#define QDQRT_INSTANTIATE_QPOOL_KERNELS(T)                                                                    \
  template void maxpool<T>(const Pool2dShape&, size_t, size_t, const T*, T*);                                 \
  template void avgpool<T>(const Pool2dShape&, const AvgPoolParams&, size_t, size_t, const T*, T*);           \
  template void global_avgpool<T>(size_t, size_t, size_t, const T*, T*, const AvgPoolParams&);

// Window geometry shared by the variants (portable, non-inline).
struct PoolWindow {
  size_t image;             // batch index
  size_t oh, ow;            // output position
  size_t kh_begin, kh_end;  // valid kernel rows: ih = oh*stride - pad_top + kh*dilation inside input
  size_t kw_begin, kw_end;
  size_t valid_taps;        // (kh_end - kh_begin) * (kw_end - kw_begin)
  size_t padded_rows, padded_cols;  // taps inside [-pad_begin, in + pad_end) per axis
  size_t padded_taps;       // padded_rows * padded_cols
};
PoolWindow pool_window(const Pool2dShape& shape, size_t pixel);
// Moves w to the next output pixel (no divisions when dilation is 1): what the vector kernels use
// to walk their range; the scalar kernels recompute pool_window() per pixel, so tests cross-check both.
void next_pool_window(const Pool2dShape& shape, PoolWindow& w);
// Element offsets (from the input's start) of the first channel of each valid tap of w, row-major
// over the window; returns w.valid_taps. Callers pass room for kMaxListedTaps and list only when
// w.valid_taps <= kMaxListedTaps (larger windows walk the taps directly).
constexpr size_t kMaxListedTaps = 64;
size_t pool_window_offsets(const Pool2dShape& shape, const PoolWindow& w, size_t* offsets);
// Offsets of all kernel taps relative to the window's top-left tap (valid for windows entirely
// inside the input); returns kernel_height * kernel_width, which must be <= kMaxListedTaps.
size_t pool_full_window_offsets(const Pool2dShape& shape, size_t* offsets);

}  // namespace qdqrt::kernels
