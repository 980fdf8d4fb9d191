// Portable resize row kernels: the definition the vector kernels match bit for bit.
#include "kernels/resize/resize.h"

namespace qdqrt::kernels::scalar {

void resize_nearest_row(const float* in, const int32_t* x0, size_t begin, size_t end, float* out) {
  for (size_t i = begin; i < end; ++i) out[i] = in[x0[i]] + 0.0f;
}

void resize_nearest_row_s8(const int8_t* in, const int32_t* x0, size_t begin, size_t end, int8_t* out) {
  for (size_t i = begin; i < end; ++i) out[i] = in[x0[i]];
}

void resize_linear_row(const ResizeLinearRow& row, size_t begin, size_t end, float* out) {
  for (size_t i = begin; i < end; ++i) {
    const double a0 = row.in0[row.x0[i]];
    const double a1 = row.in0[row.x1[i]];
    double s0 = 0.0 + (row.wy0 * row.wx0[i]) * a0;
    if (row.wx1[i] != 0.0) s0 += (row.wy0 * row.wx1[i]) * a1;
    double sum = 0.0 + s0;
    if (row.wy1 != 0.0) {
      const double b0 = row.in1[row.x0[i]];
      const double b1 = row.in1[row.x1[i]];
      double s1 = 0.0 + (row.wy1 * row.wx0[i]) * b0;
      if (row.wx1[i] != 0.0) s1 += (row.wy1 * row.wx1[i]) * b1;
      sum += s1;
    }
    out[i] = static_cast<float>(sum);
  }
}

void resize_linear_nhwc_channels(const ResizeLinearRow& row, size_t channels, size_t pixel, size_t c_begin,
                                 float* out) {
  const bool two_rows = row.wy1 != 0.0;
  const float* a = row.in0 + static_cast<size_t>(row.x0[pixel]) * channels;
  const float* b = row.in0 + static_cast<size_t>(row.x1[pixel]) * channels;
  const float* d = two_rows ? row.in1 + static_cast<size_t>(row.x0[pixel]) * channels : nullptr;
  const float* e = two_rows ? row.in1 + static_cast<size_t>(row.x1[pixel]) * channels : nullptr;
  const double w00 = row.wy0 * row.wx0[pixel], w01 = row.wy0 * row.wx1[pixel];
  const double w10 = row.wy1 * row.wx0[pixel], w11 = row.wy1 * row.wx1[pixel];
  const bool second_x = row.wx1[pixel] != 0.0;
  float* y = out + pixel * channels;
  for (size_t c = c_begin; c < channels; ++c) {
    double s0 = 0.0 + w00 * static_cast<double>(a[c]);
    if (second_x) s0 += w01 * static_cast<double>(b[c]);
    double sum = 0.0 + s0;
    if (two_rows) {
      double s1 = 0.0 + w10 * static_cast<double>(d[c]);
      if (second_x) s1 += w11 * static_cast<double>(e[c]);
      sum += s1;
    }
    y[c] = static_cast<float>(sum);
  }
}

void resize_linear_nhwc(const ResizeLinearRow& row, size_t channels, size_t begin, size_t end, float* out) {
  for (size_t i = begin; i < end; ++i) resize_linear_nhwc_channels(row, channels, i, 0, out);
}

}  // namespace qdqrt::kernels::scalar
