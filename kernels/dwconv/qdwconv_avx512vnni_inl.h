// What the AVX-512 VNNI depthwise kernels share (qdwconv_avx512vnni.cpp picks one of them per
// call; each lives in its own file, compiled with the AVX-512 VNNI flags): the vector traits of
// kernels/simd_avx512.h, a clamped channel mask and compile-time loops. Include ONLY from
// kernels/dwconv/*_avx512vnni.cpp files.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/dwconv/qdwconv_internal.h"
#include "kernels/scratch.h"
#include "kernels/simd_avx512.h"

namespace qdqrt::kernels::internal {

// The forms, best first (depthwise_avx512_form chooses): vpdpbusd with 4 kernel rows per
// byte-interleaved lane, 3x3/5x5 with int8 weights, one entry per kernel size, stride and input
// signedness (qdwconv_dp4_<K>x<K>s<S>_<qs8|qu8>_avx512vnni.cpp); row tiles of 16-bit products for
// 3x3/5x5 kernels at stride 1 or 2 (qdwconv_rows_avx512vnni.cpp); 2 output pixels x 64 channels for
// any other shape (qdwconv_pixels_avx512vnni.cpp). The last two run both signednesses.
using DepthwiseFormFunction = std::remove_pointer_t<DepthwiseRunFunction>;
DepthwiseFormFunction depthwise_dp4_3x3s1_qs8_avx512vnni, depthwise_dp4_3x3s1_qu8_avx512vnni;
DepthwiseFormFunction depthwise_dp4_3x3s2_qs8_avx512vnni, depthwise_dp4_3x3s2_qu8_avx512vnni;
DepthwiseFormFunction depthwise_dp4_5x5s1_qs8_avx512vnni, depthwise_dp4_5x5s1_qu8_avx512vnni;
DepthwiseFormFunction depthwise_dp4_5x5s2_qs8_avx512vnni, depthwise_dp4_5x5s2_qu8_avx512vnni;
DepthwiseFormFunction depthwise_rows_avx512vnni, depthwise_pixels_avx512vnni;

namespace {

// The first `count` of 16 lanes (every lane from 16 on, none at 0 or below).
inline __mmask16 lane_mask(int count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

// The input byte type of a signedness, for the traits' widening.
template <bool kSigned>
using InputByte = std::conditional_t<kSigned, int8_t, uint8_t>;

// Compile-time loop: calls body(std::integral_constant<int, I>) for I in [0, N), so accumulator
// indices are constants and the accumulators stay in registers.
template <int N, typename Body>
[[gnu::always_inline]] inline void static_for(Body&& body) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    (body(std::integral_constant<int, I>{}), ...);
  }(
      std::make_integer_sequence<int, N>{});
}

// The output row of pixel p, for the kernels that walk [p, pixel_end) a row at a time.
struct DepthwiseRowSpan {
  int out_y = 0, out_x = 0;       // p's row and column in its image
  int64_t row_end = 0;            // one past the row's last pixel in [p, pixel_end)
  const uint8_t* image = nullptr;  // the image's input
};
inline DepthwiseRowSpan depthwise_row_span(const DepthwiseGeometry& g, const DepthwiseArgs& args, int64_t p,
                                           int64_t pixel_end) {
  const int64_t pixels_per_image = static_cast<int64_t>(g.output_height) * g.output_width;
  const int64_t image_bytes = static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride;
  const int64_t image_index = p / pixels_per_image;
  const int64_t in_image = p - image_index * pixels_per_image;
  DepthwiseRowSpan span;
  span.out_y = static_cast<int>(in_image / g.output_width);
  span.out_x = static_cast<int>(in_image - static_cast<int64_t>(span.out_y) * g.output_width);
  span.row_end = std::min<int64_t>(pixel_end, p + (g.output_width - span.out_x));
  span.image = static_cast<const uint8_t*>(args.input) + image_index * image_bytes;
  return span;
}

// `width` + 64 bytes of the input zero-point in this thread's scratch: the row taps outside the
// image read.
inline const uint8_t* padding_row(const PackedDepthwise& packed, int width) {
  uint8_t* padding = thread_scratch(ScratchSlot::kPadding, width + 64);
  std::memset(padding, static_cast<uint8_t>(packed.input_zero_point), width + 64);
  return padding;
}

// Output pixel p's residual row (null without a residual).
inline const char* residual_pixel(const Epilogue& epilogue, int64_t p) {
  return epilogue.residual ? static_cast<const char*>(epilogue.residual) + p * epilogue.residual_row_stride : nullptr;
}

// Lambdas of the hot loops are inlined before GCC decides where the accumulators live: otherwise
// it keeps them in memory.
#define QDQRT_INLINE_LAMBDA __attribute__((always_inline))

}  // namespace
}  // namespace qdqrt::kernels::internal
