// INT8 NHWC convolution from ONNX-layout weights ([O][I/groups][kh][kw]), choosing the kernel
// family at pack time:
//   - depthwise (groups == input channels == output channels): the depthwise family;
//   - 1x1, stride 1, no padding: a plain GEMM over the pixels (rows) of each group;
//   - an image of at most 4 channels (a network's stem; one group, no width dilation, no weight
//     zero-point): the stem form (below), the GEMM's tiles reading a per-row buffer in place;
//   - several groups of at most 16 output channels, a multiple of 4 input channels each, unsigned
//     activations, packed for avx512vnni (kernels/conv/qconv_grouped.h): the grouped form, every group's 16-column
//     tile reading the input through one set of tap pointers per block of output pixels;
//   - everything else: the implicit GEMM (per-row-block gather of the kernel taps), per group.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kernels/dwconv/qdwconv.h"
#include "kernels/gemm/qgemm.h"

namespace qdqrt::kernels {

struct ConvWeightsDesc {
  int output_channels = 0;
  int input_channels = 0;  // total, across groups
  int groups = 1;
  int kernel_height = 1, kernel_width = 1;
  const void* weights = nullptr;  // [output_channels][input_channels / groups][kh][kw]
  bool weights_signed = true;
  int32_t weight_zero_point = 0;
  const float* weight_scales = nullptr;  // 1 or output_channels values
  bool per_channel = false;
  const int32_t* bias_int32 = nullptr;
  const float* bias_float = nullptr;
  float input_scale = 1.0f;
  int32_t input_zero_point = 0;
  bool input_signed = true;
  float output_scale = 1.0f;
};

struct ConvShape {
  int batch = 1;
  int input_height = 0, input_width = 0;
  int stride_height = 1, stride_width = 1;
  int pad_top = 0, pad_left = 0;  // bottom/right padding follow from the output size
  int dilation_height = 1, dilation_width = 1;
  int output_height = 0, output_width = 0;
  int output_pixels() const { return batch * output_height * output_width; }
};

struct PackedConv {
  int output_channels = 0, input_channels = 0, groups = 1;
  int kernel_height = 1, kernel_width = 1;
  bool depthwise = false;
  std::vector<PackedGemm> group_weights;  // one per group (GEMM family)
  PackedDepthwise depthwise_weights;      // depthwise family
  // The stem form (derive_conv_stem; n == 0: none). Per output row, the input rows its windows
  // read are interleaved column by column into a small buffer: column p holds kernel rows
  // 0..KH-1 of input column p, C bytes each, so one output pixel's window is KW * KH * C
  // consecutive bytes and pixel x starts x * stride_width * KH * C bytes after pixel 0. The GEMM's
  // register tiles read that buffer as a plain matrix (no per-pixel gather, no store-forwarding
  // stalls on overlapping tap copies). Weights: group_weights[0]'s, k reordered to (kx, ky, c),
  // k = k_padded (the padding lanes keep zero weights, so the bytes they read do not count),
  // unsigned activations (the buffer is shifted on the way); bias and multipliers unchanged.
  PackedGemm stem_weights;
};

// Sets packed.stem_weights when the convolution qualifies for the stem form: one group, at most
// kConvStemMaxChannels input channels, a kernel larger than 1x1, no weight zero-point (no row
// term). `isa`: the ISA the convolution runs on (the AMX stem tiles where it is AMX-INT8 and
// conv_stem_fills_amx_tiles, else the avx512vnni ones). Derived from group_weights (pack_conv
// calls it; an engine calls it after loading the weights, with its plan's ISA), never stored.
inline constexpr int kConvStemMaxChannels = 4;
void derive_conv_stem(PackedConv& packed, Isa isa);
// A stem window of k bytes fills enough of its 64-byte AMX tile rows for the AMX tiles to beat
// the avx512vnni stem tiles.
bool conv_stem_fills_amx_tiles(int k);
// The stem form runs this shape (stem_weights derived and no dilation along the width).
bool conv_stem_applies(const PackedConv& packed, const ConvShape& shape);

// nr: the GEMM family's register tile width (0: chosen per group's output channels).
PackedConv pack_conv(const ConvWeightsDesc& desc, Isa isa, int nr = 0);
inline PackedConv pack_conv(const ConvWeightsDesc& desc) { return pack_conv(desc, active_isa()); }

struct ConvRunArgs {
  const void* input = nullptr;
  int64_t input_pixel_stride = 0;  // elements between input pixels (>= input_channels)
  void* output = nullptr;
  int64_t output_pixel_stride = 0;  // elements between output pixels (>= output_channels)
  // run_conv_channels: tiles [tile_end, next_tile_end) are what the caller runs next over the same
  // pixels; their weights are prefetched during this call (PrefetchHint). 0: none.
  int next_tile_end = 0;
  // Otherwise, the weights the caller runs next (the next layer's conv_leading_weights).
  std::span<const int8_t> next_weights = {};
  WarmRange warm = {};  // PrefetchHint::warm
};

// The weights a run of this convolution streams first (its one GEMM's packed tiles, in the order
// the first chunk reads them), for the layer run before it to prefetch; empty for the depthwise,
// stem and grouped forms and several groups.
std::span<const int8_t> conv_leading_weights(const PackedConv& packed, const ConvShape& shape);
// Every packed weight byte a run reads (the depthwise form's are few: none listed).
std::vector<std::span<const int8_t>> conv_streamed_weights(const PackedConv& packed, const ConvShape& shape);

// Computes output pixels [pixel_begin, pixel_end) for all output channels. The epilogue's residual
// (if any) is indexed like the output: pixel * residual_row_stride + output channel.
void run_conv(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args, const Epilogue& epilogue,
              int pixel_begin, int pixel_end);

// Output channel blocks a convolution can be split into across threads: the GEMM family's
// column tiles with one group, the groups with several, 1 for depthwise convolutions (split by
// pixels only).
int conv_channel_tiles(const PackedConv& packed);
// Output pixels [pixel_begin, pixel_end) x channel tiles [tile_begin, tile_end) (of
// conv_channel_tiles): threads computing disjoint ranges write disjoint outputs.
void run_conv_channels(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                       const Epilogue& epilogue, int pixel_begin, int pixel_end, int tile_begin, int tile_end);

// "qs8-qc8w-igemm-6x64c4-fp32-avx512vnni" style; the stem form's op is "stemconv".
std::string conv_kernel_name(const PackedConv& packed, const ConvShape& shape);

// Output pixels one kernel call handles best at a time (its register tile's rows; a block of
// the depthwise kernel): thread splits in multiples of it leave no partial tiles.
int conv_pixel_tile(const PackedConv& packed);

}  // namespace qdqrt::kernels
