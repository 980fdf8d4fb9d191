// Grouped NHWC convolutions (1 < group < channels: ResNeXt, RegNet) on the fp32 igemm
// (fp32_sgemm.h). `block_groups` consecutive groups (fp32_group_block_groups(), so that a block's
// output channels fill whole panels) run as one dense convolution of block_groups * in_per_group
// input channels whose weights are zero off the groups' diagonal: one packed matrix of the full
// blocks' output channels, k = taps x block input channels, and per block the input pointer moved
// to the block's first input channel. When block_groups does not divide the group (RegNet's 6, 13,
// 26 and 55 groups of 8), the last groups form a narrower tail block packed on its own (it reads
// only its own channels, never past a pixel's). Sums and rounding are the igemm's (k order: tap,
// then the block's channels; the zero weights add exact zeros).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

// How a grouped conv splits into blocks on an ISA's panels.
struct GroupedSgemmLayout {
  int block_in = 0, block_out = 0;           // a full block's input and output channels
  int full_out = 0;                          // output channels of the full blocks (a multiple of block_out)
  int tail_in = 0, tail_out = 0;             // the tail block's (0 when the blocks divide the group)
  int64_t full_floats = 0, tail_floats = 0;  // packed weights of each part
  int full_bias = 0, tail_bias = 0;          // padded bias values of each part
  int64_t floats() const { return full_floats + tail_floats; }
  int64_t bias_floats() const { return static_cast<int64_t>(full_bias) + tail_bias; }
};
GroupedSgemmLayout grouped_sgemm_layout(int out_channels, int in_per_group, int taps, int group, Isa isa);

struct PackedGroupedSgemm {
  GroupedSgemmLayout layout;
  PackedSgemm full, tail;  // tail.n == 0 when there is no tail block
};
// weights: ONNX [out_channels][in_per_group][kh][kw] (taps = kh * kw); bias null or out_channels.
PackedGroupedSgemm pack_grouped_sgemm(const float* weights, const float* bias, int out_channels, int in_per_group,
                                      int taps, int group, Isa isa);
// Views over packed data kept elsewhere (an engine file's blobs): `data` holds the full part's
// packed weights then the tail's (layout.floats()), `bias` their padded biases (layout.bias_floats()).
PackedGroupedSgemm packed_grouped_sgemm_view(const GroupedSgemmLayout& layout, int taps, Isa isa, const float* data,
                                             const float* bias);
// Rows [m_begin, m_end) x output channels [n_begin, n_end) (n_begin a multiple of nr) of the
// grouped conv; args.input points at channel 0 of the input (pixels input_pixel_stride =
// group * in_per_group apart). Disjoint ranges may run concurrently.
void run_grouped_sconv(const PackedGroupedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                       const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);
// "f32-grouped-igemm-14x32-avx512"
std::string grouped_sgemm_kernel_name(Isa isa);

}  // namespace qdqrt::kernels
