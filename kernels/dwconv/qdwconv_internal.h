// Internal interface between run_depthwise, dispatch and the per-ISA depthwise files.
#pragma once

#include "kernels/dwconv/qdwconv.h"

namespace qdqrt::kernels::internal {

using DepthwiseRunFunction = void (*)(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                                      const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin,
                                      int pixel_end);

struct DepthwiseImplementation {
  Isa isa;
  int channel_block;  // channels per inner block, for the name (weights are padded to a multiple of 16)
  DepthwiseRunFunction run;
};

void depthwise_run_scalar(const PackedDepthwise&, const DepthwiseGeometry&, const DepthwiseArgs&, const Epilogue&,
                          int, int);
void depthwise_run_avx2(const PackedDepthwise&, const DepthwiseGeometry&, const DepthwiseArgs&, const Epilogue&,
                        int, int);
void depthwise_run_avx512vnni(const PackedDepthwise&, const DepthwiseGeometry&, const DepthwiseArgs&,
                              const Epilogue&, int, int);

// The AVX-512 VNNI depthwise kernel a convolution runs, best first: the vpdpbusd form (3x3/5x5
// weights that fit int8, no dilation, stride 1 or 2), row tiles of 16-bit products (3x3/5x5
// kernel width, stride 1 or 2, no horizontal dilation, kernel height <= 7), else 2 output pixels x
// 64 channels. depthwise_run_avx512vnni runs it and depthwise_kernel_name reports it.
enum class DepthwiseAvx512Form { kDot, kRows, kPixels };
inline DepthwiseAvx512Form depthwise_avx512_form(const PackedDepthwise& packed, const DepthwiseGeometry& g) {
  const int kw = packed.kernel_width, sw = g.stride_width;
  const bool common_shape = (kw == 3 || kw == 5) && (sw == 1 || sw == 2);
  if (packed.dot_channels > 0 && g.dilation_width == 1 && g.dilation_height == 1 && common_shape) {
    return DepthwiseAvx512Form::kDot;
  }
  if (g.dilation_width == 1 && packed.kernel_height <= 7 && common_shape) return DepthwiseAvx512Form::kRows;
  return DepthwiseAvx512Form::kPixels;
}

// Internal linkage (anonymous namespace): each per-ISA file gets its own copy, compiled with its
// own flags, instead of one shared inline definition the linker may pick from any of them.
namespace {

// Walks output pixels [begin, end) in order without a division per pixel, and fills the input
// pointer of every kernel tap (or `padding`, a row of zero-point bytes, outside the image).
class DepthwisePixelWalker {
 public:
  DepthwisePixelWalker(const PackedDepthwise& packed, const DepthwiseGeometry& g, const uint8_t* input,
                       const uint8_t* padding, int64_t begin)
      : packed_(packed), g_(g), input_(input), padding_(padding) {
    const int64_t pixels_per_image = static_cast<int64_t>(g.output_height) * g.output_width;
    image_ = begin / pixels_per_image;
    const int64_t pixel = begin - image_ * pixels_per_image;
    out_y_ = static_cast<int>(pixel / g.output_width);
    out_x_ = static_cast<int>(pixel - static_cast<int64_t>(out_y_) * g.output_width);
  }

  // Fills taps for the current pixel, then advances to the next one.
  void next(const uint8_t** taps) {
    const DepthwiseGeometry& g = g_;
    const uint8_t* base =
        input_ + image_ * static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride;
    for (int ky = 0; ky < packed_.kernel_height; ++ky) {
      const int in_y = out_y_ * g.stride_height - g.pad_top + ky * g.dilation_height;
      const bool row_inside = in_y >= 0 && in_y < g.input_height;
      const uint8_t* line = base + static_cast<int64_t>(in_y) * g.input_width * g.input_pixel_stride;
      for (int kx = 0; kx < packed_.kernel_width; ++kx) {
        const int in_x = out_x_ * g.stride_width - g.pad_left + kx * g.dilation_width;
        const bool inside = row_inside && in_x >= 0 && in_x < g.input_width;
        *taps++ = inside ? line + static_cast<int64_t>(in_x) * g.input_pixel_stride : padding_;
      }
    }
    if (++out_x_ == g.output_width) {
      out_x_ = 0;
      if (++out_y_ == g.output_height) {
        out_y_ = 0;
        ++image_;
      }
    }
  }

 private:
  const PackedDepthwise& packed_;
  const DepthwiseGeometry& g_;
  const uint8_t* input_;
  const uint8_t* padding_;
  int64_t image_;
  int out_y_, out_x_;
};

}  // namespace

}  // namespace qdqrt::kernels::internal
