// FP32 3x3 stride-1 convolution by Winograd F(2x2, 3x3) on the fp32 GEMM microkernel (NHWC).
//
// Each 2x2 block of output pixels (a "tile") reads a 4x4 patch d of the input; per channel
//   V = B^T d B (16 values),  M[t] = V[t] x U[t] (16 GEMMs over channels),  Y = A^T M A (2x2),
// with U = G g G^T the 3x3 weights transformed at pack time (in double). 16 multiplies per tile
// and channel pair instead of 36: 2.25x fewer than the direct convolution, for a few adds per
// value in the transforms. Rounding differs from the direct sum by a few ulps of the sum of
// |terms| (the transforms add and subtract values of the input's and the weights' size).
//
// The 16 GEMMs run the igemm's microkernel (fp32_sgemm.h) over V[t] rows = tiles; the bias enters
// through the GEMM of t = 5 (M[1][1], whose A^T coefficient is 1 for all four outputs), the
// residual Add, clamp and activation in the output transform. Tiles past the output's edge (odd
// sizes) compute and drop their extra pixels.
//
// Threading: run_winograd_f32 computes tiles [tile_begin, tile_end) x output channels
// [n_begin, n_end) (n_begin a multiple of nr) with caller scratch; disjoint ranges may run
// concurrently. Nothing allocates at run time.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

inline constexpr int kWinogradTransforms = 16;  // 4 x 4 transformed values per tile

struct PackedWinogradF32 {
  Isa isa = Isa::kScalar;
  int n = 0, channels = 0;
  int mr = 0, nr = 0, n_padded = 0;
  AlignedBuffer<float> data;       // [16][packed_sgemm_floats(n, channels)]: U[t] packed as the GEMM's B
  AlignedBuffer<float> bias;       // n_padded (the view's or owned)
  AlignedBuffer<float> zero_bias;  // n_padded zeros: the other 15 GEMMs' bias
  AlignedBuffer<float> zeros;      // a zero input pixel (channels rounded to 16), read by padded taps
  std::array<PackedSgemm, kWinogradTransforms> gemms;  // views into data
};

// True for the convolutions this kernel takes: 3x3, stride 1, dilation 1, pads <= 1.
bool winograd_f32_applies(int kernel_height, int kernel_width, int stride_height, int stride_width,
                          int dilation_height, int dilation_width, int pad_top, int pad_left, int pad_bottom,
                          int pad_right);
// weights: ONNX [n][channels][3][3]; bias n values or null.
PackedWinogradF32 pack_winograd_f32(int n, int channels, const float* weights, const float* bias, Isa isa);
int64_t packed_winograd_f32_floats(int n, int channels, Isa isa);
// A PackedWinogradF32 over data (packed_winograd_f32_floats()) and bias (sgemm_padded_n()) kept
// elsewhere, 64-byte aligned.
PackedWinogradF32 packed_winograd_f32_view(int n, int channels, Isa isa, const float* data, const float* bias);
// Scratch (floats, 64-byte aligned) run_winograd_f32 needs per call.
int64_t winograd_f32_scratch_floats(int n, int channels, Isa isa);
// Tiles of one image, and the number of the whole batch: row-major 2x2 blocks of the output.
inline int64_t winograd_f32_tiles(const SconvGeometry& g, int64_t images) {
  return images * ((g.output_height + 1) / 2) * ((g.output_width + 1) / 2);
}
void run_winograd_f32(const PackedWinogradF32& packed, const SconvGeometry& geometry, const SconvArgs& args,
                      const Fp32Epilogue& epilogue, int64_t tile_begin, int64_t tile_end, int n_begin, int n_end,
                      float* scratch);
std::string winograd_f32_kernel_name(Isa isa);

}  // namespace qdqrt::kernels
