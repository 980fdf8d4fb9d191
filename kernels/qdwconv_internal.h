// Internal interface between run_depthwise, dispatch and the per-ISA depthwise files.
#pragma once

#include "kernels/qdwconv.h"

namespace qdqrt::kernels::internal {

using DepthwiseRunFunction = void (*)(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                                      const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin,
                                      int pixel_end);

struct DepthwiseImplementation {
  Isa isa;
  int channel_block;  // channels per inner block (weights are padded to a multiple of 16)
  DepthwiseRunFunction run;
};

void depthwise_run_scalar(const PackedDepthwise&, const DepthwiseGeometry&, const DepthwiseArgs&, const Epilogue&,
                          int, int);
void depthwise_run_avx2(const PackedDepthwise&, const DepthwiseGeometry&, const DepthwiseArgs&, const Epilogue&,
                        int, int);
void depthwise_run_avx512vnni(const PackedDepthwise&, const DepthwiseGeometry&, const DepthwiseArgs&,
                              const Epilogue&, int, int);

// Fills taps[kernel_height * kernel_width] with the input pixel of each tap of output pixel p, or
// with `padding` (a row of zero-point bytes) outside the image.
inline void depthwise_tap_pointers(const PackedDepthwise& packed, const DepthwiseGeometry& g, const uint8_t* input,
                                   const uint8_t* padding, int64_t p, const uint8_t** taps) {
  const int64_t pixels_per_image = static_cast<int64_t>(g.output_height) * g.output_width;
  const int64_t image = p / pixels_per_image;
  const int64_t pixel = p - image * pixels_per_image;
  const int out_y = static_cast<int>(pixel / g.output_width);
  const int out_x = static_cast<int>(pixel - static_cast<int64_t>(out_y) * g.output_width);
  const uint8_t* base = input + image * static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride;
  for (int ky = 0; ky < packed.kernel_height; ++ky) {
    const int in_y = out_y * g.stride_height - g.pad_top + ky * g.dilation_height;
    for (int kx = 0; kx < packed.kernel_width; ++kx) {
      const int in_x = out_x * g.stride_width - g.pad_left + kx * g.dilation_width;
      const bool inside = in_y >= 0 && in_y < g.input_height && in_x >= 0 && in_x < g.input_width;
      *taps++ = inside ? base + (static_cast<int64_t>(in_y) * g.input_width + in_x) * g.input_pixel_stride : padding;
    }
  }
}

}  // namespace qdqrt::kernels::internal
