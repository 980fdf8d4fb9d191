// What the fp32 convolution drivers (fp32_sgemm.cpp, fp32_dwconv.cpp) share. Internal linkage
// (anonymous namespace), like qdwconv_internal.h: each driver file gets its own inlinable copy.
#pragma once

#include <cstdint>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels::internal {
namespace {

// The input pixel of every tap of output pixel (oy, ox): pointers[tap * step]; taps in the padding
// point at `zeros`.
void tap_pointers(const SconvGeometry& g, const float* image_input, int oy, int ox, const float* zeros,
                  const float** pointers, int step, int row_offset = 0) {
  const int y0 = oy * g.stride_height - g.pad_top, x0 = ox * g.stride_width - g.pad_left;
  int tap = 0;
  for (int ky = 0; ky < g.kernel_height; ++ky) {
    const int y = y0 + ky * g.dilation_height;
    const bool row_inside = y >= 0 && y < g.input_height;
    for (int kx = 0; kx < g.kernel_width; ++kx, ++tap) {
      const int x = x0 + kx * g.dilation_width;
      pointers[tap * step] = row_inside && x >= 0 && x < g.input_width
                                 ? image_input + (static_cast<int64_t>(y - row_offset) * g.input_width + x) *
                                                     g.input_pixel_stride
                                 : zeros;
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::internal
