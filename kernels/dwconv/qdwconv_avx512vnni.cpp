// The AVX-512 VNNI depthwise convolution: runs the form depthwise_avx512_form picks, each in its own
// file (qdwconv_avx512vnni_inl.h lists them).
#include "kernels/dwconv/qdwconv_avx512vnni_inl.h"

namespace qdqrt::kernels::internal {

void depthwise_run_avx512vnni(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                              const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  DepthwiseFormFunction* run = depthwise_pixels_avx512vnni;
  switch (depthwise_avx512_form(packed, geometry)) {
    case DepthwiseAvx512Form::kDot: {
      // [5x5][stride 2][uint8 input]
      static constexpr DepthwiseFormFunction* kDot[2][2][2] = {
          {{depthwise_dp4_3x3s1_qs8_avx512vnni, depthwise_dp4_3x3s1_qu8_avx512vnni},
           {depthwise_dp4_3x3s2_qs8_avx512vnni, depthwise_dp4_3x3s2_qu8_avx512vnni}},
          {{depthwise_dp4_5x5s1_qs8_avx512vnni, depthwise_dp4_5x5s1_qu8_avx512vnni},
           {depthwise_dp4_5x5s2_qs8_avx512vnni, depthwise_dp4_5x5s2_qu8_avx512vnni}}};
      run = kDot[packed.kernel_width == 5][geometry.stride_width == 2][!packed.input_signed];
      break;
    }
    case DepthwiseAvx512Form::kRows:
      run = depthwise_rows_avx512vnni;
      break;
    case DepthwiseAvx512Form::kPixels:
      break;
  }
  run(packed, geometry, args, epilogue, pixel_begin, pixel_end);
}

}  // namespace qdqrt::kernels::internal
