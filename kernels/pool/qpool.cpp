// Pool window geometry and average-pool parameters (portable, shared by every ISA variant).
#include <algorithm>

#include "kernels/pool/qpool.h"

namespace qdqrt::kernels {

size_t pool_output_size(size_t input, size_t kernel, size_t stride, size_t dilation, size_t pad_begin,
                        size_t pad_end, bool ceil_mode) {
  const size_t span = dilation * (kernel - 1) + 1;
  const size_t padded = input + pad_begin + pad_end;
  if (padded < span) return 0;
  size_t output = (padded - span) / stride + 1;
  if (ceil_mode && (padded - span) % stride != 0) {
    ++output;
    // The last window must start inside the input or the begin padding.
    if ((output - 1) * stride >= input + pad_begin) --output;
  }
  return output;
}

namespace {
// Number of k in [0, kernel) with start + k*dilation < limit (start, limit as signed positions).
size_t taps_below(int64_t start, int64_t limit, size_t kernel, size_t dilation) {
  if (start >= limit) return 0;
  const int64_t distance = limit - start;
  const int64_t count = dilation == 1 ? distance
                                      : (distance + static_cast<int64_t>(dilation) - 1) / static_cast<int64_t>(dilation);
  return std::min(kernel, static_cast<size_t>(count));
}
// First k with start + k*dilation >= 0.
size_t first_tap_inside(int64_t start, size_t kernel, size_t dilation) {
  if (start >= 0) return 0;
  const int64_t count =
      dilation == 1 ? -start : (-start + static_cast<int64_t>(dilation) - 1) / static_cast<int64_t>(dilation);
  return std::min(kernel, static_cast<size_t>(count));
}

void set_rows(const Pool2dShape& s, PoolWindow& w) {
  const int64_t start = static_cast<int64_t>(w.oh * s.stride_height) - static_cast<int64_t>(s.pad_top);
  w.kh_begin = first_tap_inside(start, s.kernel_height, s.dilation_height);
  w.kh_end = std::max(w.kh_begin,
                      taps_below(start, static_cast<int64_t>(s.input_height), s.kernel_height, s.dilation_height));
  w.padded_rows =
      taps_below(start, static_cast<int64_t>(s.input_height + s.pad_bottom), s.kernel_height, s.dilation_height);
}

void set_cols(const Pool2dShape& s, PoolWindow& w) {
  const int64_t start = static_cast<int64_t>(w.ow * s.stride_width) - static_cast<int64_t>(s.pad_left);
  w.kw_begin = first_tap_inside(start, s.kernel_width, s.dilation_width);
  w.kw_end = std::max(w.kw_begin,
                      taps_below(start, static_cast<int64_t>(s.input_width), s.kernel_width, s.dilation_width));
  w.padded_cols =
      taps_below(start, static_cast<int64_t>(s.input_width + s.pad_right), s.kernel_width, s.dilation_width);
}

void set_counts(PoolWindow& w) {
  w.valid_taps = (w.kh_end - w.kh_begin) * (w.kw_end - w.kw_begin);
  w.padded_taps = w.padded_rows * w.padded_cols;
}
}  // namespace

PoolWindow pool_window(const Pool2dShape& s, size_t pixel) {
  PoolWindow w;
  w.ow = pixel % s.output_width;
  w.oh = (pixel / s.output_width) % s.output_height;
  w.image = pixel / (s.output_width * s.output_height);
  set_rows(s, w);
  set_cols(s, w);
  set_counts(w);
  return w;
}

void next_pool_window(const Pool2dShape& s, PoolWindow& w) {
  if (++w.ow == s.output_width) {
    w.ow = 0;
    if (++w.oh == s.output_height) {
      w.oh = 0;
      ++w.image;
    }
    set_rows(s, w);
  }
  set_cols(s, w);
  set_counts(w);
}

size_t pool_window_offsets(const Pool2dShape& s, const PoolWindow& w, size_t* offsets) {
  size_t count = 0;
  const size_t in_stride = s.in_stride();
  for (size_t kh = w.kh_begin; kh < w.kh_end; ++kh) {
    const size_t ih = w.oh * s.stride_height + kh * s.dilation_height - s.pad_top;
    const size_t row = (w.image * s.input_height + ih) * s.input_width;
    for (size_t kw = w.kw_begin; kw < w.kw_end; ++kw) {
      const size_t iw = w.ow * s.stride_width + kw * s.dilation_width - s.pad_left;
      offsets[count++] = (row + iw) * in_stride;
    }
  }
  return count;
}

size_t pool_full_window_offsets(const Pool2dShape& s, size_t* offsets) {
  size_t count = 0;
  for (size_t kh = 0; kh < s.kernel_height; ++kh) {
    for (size_t kw = 0; kw < s.kernel_width; ++kw) {
      offsets[count++] = (kh * s.dilation_height * s.input_width + kw * s.dilation_width) * s.in_stride();
    }
  }
  return count;
}

template <class T>
AvgPoolParams make_avgpool_params(float input_scale, int32_t input_zero_point, float output_scale,
                                  int32_t output_zero_point, bool count_include_pad, bool relu) {
  AvgPoolParams params;
  params.input_zero_point = input_zero_point;
  params.output_zero_point = output_zero_point;
  params.multiplier = input_scale / output_scale;
  const int32_t low = relu && output_zero_point > QTraits<T>::min ? output_zero_point : QTraits<T>::min;
  params.output_min = static_cast<float>(low - output_zero_point);
  params.output_max = static_cast<float>(QTraits<T>::max - output_zero_point);
  params.count_include_pad = count_include_pad;
  return params;
}
template AvgPoolParams make_avgpool_params<int8_t>(float, int32_t, float, int32_t, bool, bool);
template AvgPoolParams make_avgpool_params<uint8_t>(float, int32_t, float, int32_t, bool, bool);

}  // namespace qdqrt::kernels
