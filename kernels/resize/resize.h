// Resize rows of NCHW planes (and, for bilinear, of NHWC rows), with the per-column taps
// precomputed by the caller.
//
// Nearest: out[i] = in[x0[i]] + 0.0f. The + 0.0f turns -0 into +0 (and quiets a signalling NaN),
//   as the reference executor's double sum starting at 0.0 does, so outputs are bit-identical.
// Linear (bilinear over the plane's two inner dims): the reference executor's sequence of double
//   operations, per output element:
//     s0 = (0.0 + (wy0 * wx0[i]) * in0[x0[i]]) + (wy0 * wx1[i]) * in0[x1[i]]
//     s1 = (0.0 + (wy1 * wx0[i]) * in1[x0[i]]) + (wy1 * wx1[i]) * in1[x1[i]]
//     out[i] = float((0.0 + s0) + s1)
//   A tap of weight 0 is left out (not added as 0 * in: an infinite input stays out of the sum),
//   and s1 only when wy1 != 0 (in1 may then be null). Results are bit-identical to the reference
//   (a NaN result may differ in sign or payload: which NaN an addition keeps follows operand order).
// Kernels write out[begin, end) of one output row; threads split rows (or planes) between calls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"
#include "kernels/qtypes.h"

namespace qdqrt::kernels {

using ResizeNearestRowFn = void (*)(const float* in, const int32_t* x0, size_t begin, size_t end, float* out);
using ResizeNearestRowS8Fn = void (*)(const int8_t* in, const int32_t* x0, size_t begin, size_t end, int8_t* out);
struct ResizeLinearRow {
  const float* in0 = nullptr;  // input row of the first vertical tap
  const float* in1 = nullptr;  // input row of the second (unused when wy1 == 0)
  double wy0 = 1.0, wy1 = 0.0;
  const int32_t* x0 = nullptr;  // per output column: first and second horizontal tap
  const int32_t* x1 = nullptr;
  const double* wx0 = nullptr;  // their weights (wx1 may be 0: that tap is left out)
  const double* wx1 = nullptr;
};
using ResizeLinearRowFn = void (*)(const ResizeLinearRow& row, size_t begin, size_t end, float* out);
// Channels-last: in0/in1 are NHWC input rows, x0/x1 pixel indices; output pixels [begin, end) of
// `channels` floats each (out: the output row), every channel with the formula above.
using ResizeLinearNhwcFn = void (*)(const ResizeLinearRow& row, size_t channels, size_t begin, size_t end, float* out);

struct ResizeKernels {
  NamedKernel<ResizeNearestRowFn> nearest;
  NamedKernel<ResizeNearestRowS8Fn> nearest_s8;  // int8/uint8: a byte gather, portable at every level
  NamedKernel<ResizeLinearRowFn> linear;
  NamedKernel<ResizeLinearNhwcFn> linear_nhwc;
};

// Scalar for Isa::kScalar, avx2 for kAvx2/kAvxVnni, avx512skx for the AVX-512 levels (the same
// mapping as the supporting kernels of kernels/dispatch.h). Names: "f32-resize-nearest-<isa>",
// "x8-resize-nearest-scalar", "f32-resize-bilinear-<isa>", "f32-resize-bilinear-nhwc-<isa>"
// (isa: scalar, avx2, avx512).
ResizeKernels resize_kernels(Isa isa = active_isa());

#define QDQRT_DECLARE_RESIZE_KERNELS(isa)                                                                     \
  namespace isa {                                                                                             \
  void resize_nearest_row(const float* in, const int32_t* x0, size_t begin, size_t end, float* out);          \
  void resize_linear_row(const ResizeLinearRow& row, size_t begin, size_t end, float* out);                   \
  void resize_linear_nhwc(const ResizeLinearRow& row, size_t channels, size_t begin, size_t end, float* out); \
  }
QDQRT_DECLARE_RESIZE_KERNELS(scalar)
namespace scalar {
void resize_nearest_row_s8(const int8_t* in, const int32_t* x0, size_t begin, size_t end, int8_t* out);
// Channels [c_begin, channels) of channels-last output pixel `pixel`: the formula every ISA's
// kernel uses for the channels its vectors do not cover (so all give the same bits).
void resize_linear_nhwc_channels(const ResizeLinearRow& row, size_t channels, size_t pixel, size_t c_begin,
                                 float* out);
}
QDQRT_DECLARE_RESIZE_KERNELS(avx2)
QDQRT_DECLARE_RESIZE_KERNELS(avx512skx)
#undef QDQRT_DECLARE_RESIZE_KERNELS

}  // namespace qdqrt::kernels
