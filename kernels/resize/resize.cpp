// Dispatch of the resize row kernels (kernels/resize/resize.h).
#include "kernels/resize/resize.h"

namespace qdqrt::kernels {

ResizeKernels resize_kernels(Isa isa) {
  ResizeKernels k;
  k.nearest_s8 = {scalar::resize_nearest_row_s8, "x8-resize-nearest-scalar"};
  switch (isa) {
    case Isa::kScalar:
      k.nearest = {scalar::resize_nearest_row, "f32-resize-nearest-scalar"};
      k.linear = {scalar::resize_linear_row, "f32-resize-bilinear-scalar"};
      k.linear_nhwc = {scalar::resize_linear_nhwc, "f32-resize-bilinear-nhwc-scalar"};
      break;
    case Isa::kAvx2:
    case Isa::kAvxVnni:
      k.nearest = {avx2::resize_nearest_row, "f32-resize-nearest-avx2"};
      k.linear = {avx2::resize_linear_row, "f32-resize-bilinear-avx2"};
      k.linear_nhwc = {avx2::resize_linear_nhwc, "f32-resize-bilinear-nhwc-avx2"};
      break;
    case Isa::kAvx512Vnni:
    case Isa::kAmxInt8:
      k.nearest = {avx512skx::resize_nearest_row, "f32-resize-nearest-avx512"};
      k.linear = {avx512skx::resize_linear_row, "f32-resize-bilinear-avx512"};
      k.linear_nhwc = {avx512skx::resize_linear_nhwc, "f32-resize-bilinear-nhwc-avx512"};
      break;
  }
  return k;
}

}  // namespace qdqrt::kernels
