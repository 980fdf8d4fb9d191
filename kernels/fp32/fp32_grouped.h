// Grouped NHWC convolutions (1 < group < channels: ResNeXt, RegNet) on the fp32 igemm
// (fp32_sgemm.h). `block_groups` consecutive groups (fp32_group_block_groups(), so that a block's
// output channels fill whole panels) run as one dense convolution of block_groups * in_per_group
// input channels whose weights are zero off the groups' diagonal: one packed matrix of the full
// blocks' output channels, k = taps x block input channels, and per block the input pointer moved
// to the block's first input channel. When block_groups does not divide the group (RegNet's 6, 13,
// 26 and 55 groups of 8), the last groups form a narrower tail block packed on its own (it reads
// only its own channels, never past a pixel's).
//
// When a block holds several groups, run_grouped_sconv runs each panel half by half (one vector of
// nr / 2 output channels: 16 on AVX-512) with the microkernel's one-vector tile, each half over
// only the input channels of the groups its columns belong to: RegNet's groups of 16 then do their
// own multiply-adds instead of twice as many (groups of 4 and 8 in and out take the shift tile
// below on AVX-512). The
// skipped weights are the block's zeros, so the sums equal run_grouped_sconv_blocks' (the dense
// blocks, kept as the reference) in value: same k order, each output's products minus exact zeros
// (only the sign of a zero sum, and a NaN or infinity in another group's input, can differ);
// except the shift tile for groups of 4 and 8 (below), whose order differs. A half panel reads one
// line of every other line of its panel, which the hardware prefetchers do not follow: while its
// row tiles run, the driver asks for the next half panel's weight lines into L2.
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
  int in_per_group = 0, out_per_group = 0, taps = 0;
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
// grouped conv; args.input points at channel 0 of the input (pixels input_pixel_stride apart, at
// least group * in_per_group). Disjoint ranges may run concurrently. Half panels when
// grouped_sgemm_runs_halves(), else the dense blocks.
void run_grouped_sconv(const PackedGroupedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                       const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);
// The same on the dense blocks (run_sconv per block, every channel of the block): the reference
// the half-panel driver is tested against, and what runs when a block is one group.
void run_grouped_sconv_blocks(const PackedGroupedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                              const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);
// Whether run_grouped_sconv runs half panels: a block holds more than one group, and the input's
// channels fit the driver's zero row (kGroupedHalvesMaxChannels).
inline constexpr int kGroupedHalvesMaxChannels = 4096;
bool grouped_sgemm_runs_halves(const GroupedSgemmLayout& layout);
// Whether its half panels run the AVX-512 shift tile for groups of G = 4 or 8 input and G output
// channels (ResNeXt-50 32x4d's first two stages; fp32_grouped_avx512skx.cpp): each 16-channel
// vector is 16 / G groups, a row's 16 input channels load as one vector and multiply G weight
// vectors, one per rotation of the outputs within the group, so every multiply-add is useful
// instead of one in four or two; the G partial sums are rotated into place and added once per
// tile. Up to 3x3 kernels, on the AVX-512 igemm only. Its sums are in another order than the
// dense blocks' (per input channel over the taps, then across channels): equal up to rounding.
bool grouped_sgemm_shift_applies(const GroupedSgemmLayout& layout, Isa isa);
// Multiply-adds per output of run_grouped_sconv (averaged over the output channels): taps times
// the input channels a half panel reads, or the block's when it runs dense blocks.
double grouped_sgemm_depth(const GroupedSgemmLayout& layout, Isa isa);
// "f32-grouped-igemm-14x32-avx512"
std::string grouped_sgemm_kernel_name(Isa isa);

}  // namespace qdqrt::kernels
