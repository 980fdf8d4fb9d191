// Depthwise INT8 convolution on NHWC (one filter per channel, channel multiplier 1), its own
// kernel family, with the same fused epilogue as the GEMM (qepilogue.h). Two forms:
//   - 16-bit products (vpdpwssd / vpmaddwd) of the sign-extended input with `weights`: any shape,
//     any weight zero-point;
//   - AVX-512 VNNI, 3x3/5x5 kernels without dilation whose (w - w_zp) fit in int8: vpdpbusd with 4
//     kernel rows per 32-bit lane (`dot_weights`, built by prepare_depthwise_dot), 4x the MACs
//     per instruction.
//
//   out[p][c] = epilogue( sum_taps (x[tap(p)][c] - x_zp) * (w[c][tap] - w_zp) + bias[c] )
//
// Padding reads as the input zero-point. Threading: run_depthwise computes output pixels
// [pixel_begin, pixel_end); disjoint ranges may run concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/aligned_buffer.h"
#include "kernels/cpu_features.h"
#include "kernels/qepilogue.h"

namespace qdqrt::kernels {

struct DepthwiseWeightsDesc {
  int channels = 0;
  int kernel_height = 3, kernel_width = 3;
  const void* weights = nullptr;  // [channels][kernel_height][kernel_width] (ONNX [C][1][kh][kw])
  bool weights_signed = true;
  int32_t weight_zero_point = 0;
  const float* weight_scales = nullptr;  // 1 value, or channels values if per_channel
  bool per_channel = false;
  const int32_t* bias_int32 = nullptr;
  const float* bias_float = nullptr;
  float input_scale = 1.0f;
  int32_t input_zero_point = 0;
  bool input_signed = true;
  float output_scale = 1.0f;  // 1 when the output is fp32
};

inline float depthwise_multiplier(const DepthwiseWeightsDesc& d, int c) {
  return d.input_scale * (d.per_channel ? d.weight_scales[c] : d.weight_scales[0]) / d.output_scale;
}
inline float depthwise_float_bias(const DepthwiseWeightsDesc& d, int c) {
  return d.bias_float ? d.bias_float[c] / d.output_scale : 0.0f;
}
inline int32_t depthwise_weight_value(const DepthwiseWeightsDesc& d, int c, int tap) {
  int64_t index = static_cast<int64_t>(c) * d.kernel_height * d.kernel_width + tap;
  return d.weights_signed ? static_cast<const int8_t*>(d.weights)[index]
                          : static_cast<const uint8_t*>(d.weights)[index];
}

struct PackedDepthwise {
  Isa isa = Isa::kScalar;
  int channels = 0, channels_padded = 0;
  int kernel_height = 0, kernel_width = 0;
  bool input_signed = true;
  int32_t input_zero_point = 0;
  // [taps][channels_padded]; each int32 holds (w - w_zp) as int16 in its low half, 0 in its high
  // half, so one vpdpwssd/vpmaddwd with the sign-extended input computes exactly x * w.
  AlignedBuffer<int32_t> weights;
  AlignedBuffer<int32_t> bias;  // bias_int32 - x_zp * sum_taps(w - w_zp)
  AlignedBuffer<float> multiplier;
  AlignedBuffer<float> float_bias;
  // The vpdpbusd form (empty when the kernel cannot use it), derived from the fields above. Channels
  // go in blocks of 64 (the last one of at most 32 channels in a block of 32, zero-padded) and,
  // inside a block, in "unpack order": with 4 * L int32 lanes per vector (L = 4 for 64, 2 for 32),
  // position 4 * L * v + 4 * lane + j holds channel 16 * lane + 4 * v + j, the order in-lane
  // byte/word unpacks of 4 input rows produce (the in-lane packs of the epilogue restore it).
  //   dot_weights[row_group][kx][block position][4 rows]: int8 (w - w_zp), 0 past the kernel height
  //   dot_bias: bias, minus 128 * sum(w - w_zp) for signed input (read as unsigned x + 128)
  AlignedBuffer<int8_t> dot_weights;
  AlignedBuffer<int32_t> dot_bias;
  AlignedBuffer<float> dot_multiplier;
  AlignedBuffer<float> dot_float_bias;
  int dot_channels = 0;  // the blocks' total width
  // Layers of 17..32 channels run 2 tiles per zmm, a 256-bit half each, in the 32-channel layout:
  // its weights and constants repeated per half (vector i lane L' holds what the 32-channel
  // layout has in vector i lane L' % 2):
  //   dot_tail_weights[row_group][kx][4 vectors][64 bytes], dot_tail_*[4 vectors][16 lanes]
  int dot_tail_groups = 0;  // 2, or 0 for other channel counts
  AlignedBuffer<int8_t> dot_tail_weights;
  AlignedBuffer<int32_t> dot_tail_bias;
  AlignedBuffer<float> dot_tail_multiplier;
  AlignedBuffer<float> dot_tail_float_bias;
  // Every |accumulator * multiplier + float_bias| stays below 2^30, so converting it to int32 never
  // overflows: the activation clamp may then run on the rounded integers (monotonic rounding).
  bool dot_bounded = false;
};

PackedDepthwise pack_depthwise(const DepthwiseWeightsDesc& desc, Isa isa);

// Builds (or clears) the vpdpbusd form from weights, bias, multiplier and float_bias. pack_depthwise
// calls it; callers that change multiplier/float_bias afterwards (engine load) call it again.
void prepare_depthwise_dot(PackedDepthwise& packed);

// The channel at position `position` of a block of `width` (64 or 32) channels in unpack order.
constexpr int depthwise_dot_channel(int position, int width) {
  const int lanes = width / 16;  // 128-bit lanes per vector
  return 16 * ((position % (4 * lanes)) / 4) + 4 * (position / (4 * lanes)) + position % 4;
}
inline PackedDepthwise pack_depthwise(const DepthwiseWeightsDesc& desc) { return pack_depthwise(desc, active_isa()); }

struct DepthwiseGeometry {
  int batch = 1;
  int input_height = 0, input_width = 0;
  int64_t input_pixel_stride = 0;  // elements between input pixels
  int stride_height = 1, stride_width = 1;
  int pad_top = 0, pad_left = 0;
  int dilation_height = 1, dilation_width = 1;
  int output_height = 0, output_width = 0;
  int output_pixels() const { return batch * output_height * output_width; }
};

struct DepthwiseArgs {
  const void* input = nullptr;
  void* output = nullptr;
  int64_t output_pixel_stride = 0;  // elements between output pixels
};

void run_depthwise(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
                   const Epilogue& epilogue, int pixel_begin, int pixel_end);

// The name of the kernel run_depthwise runs for this geometry (which of the ISA's forms runs
// depends on the stride and dilation): "qs8-qc8w-dwconv-3x3p64c-dp4-fp32-avx512vnni" style.
std::string depthwise_kernel_name(const PackedDepthwise& packed, const DepthwiseGeometry& geometry);

}  // namespace qdqrt::kernels
