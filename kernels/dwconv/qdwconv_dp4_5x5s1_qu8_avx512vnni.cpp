// The vpdpbusd depthwise form for 5x5 kernels at stride 1 on uint8 input
// (qdwconv_dp4_avx512vnni_inl.h).
#include "kernels/dwconv/qdwconv_dp4_avx512vnni_inl.h"

namespace qdqrt::kernels::internal {

void depthwise_dp4_5x5s1_qu8_avx512vnni(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                                        const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin,
                                        int pixel_end) {
  run_dot<false, 5, 1>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
}

}  // namespace qdqrt::kernels::internal
