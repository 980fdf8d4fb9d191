// NHWC fp32 convolution on the igemm's packed weights (fp32_sgemm.h) that leaves out, per row tile
// of output pixels, the kernel taps that read only padding for every pixel of the tile. A dilated
// conv on a small map (DeepLabV3's ASPP: 3x3, dilation 36 on a 48x48 map) has taps that read the
// input for a band of the output only: at dilation 36 a quarter of the (output pixel, tap) pairs
// read real input, the rest multiply the zero row. run_sconv multiplies them all; this driver calls
// the microkernel per row tile on runs of its live taps only, its tiles ending where the live taps
// change.
//
// Same sums as run_sconv: k in (tap, channel) order, one accumulator per output, the dropped
// products are zeros times weights (exact zeros, so the results are bit-identical for finite
// weights). The loops and depth blocks follow run_sconv's driver: blocks of about 256 (tap,
// channel) pairs whose panel block stays in L1 while the row tiles pass; row tiles outer when the
// range's weights fit L2; rows 4 KiB apart copied per tile.
#pragma once

#include <cstdint>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

// Row tiles: up to `mr` consecutive output pixels, a tile ending early (from mr / 2 rows) where the
// pixels' live taps change, so that the bands of the output whose pixels share their live taps
// mostly fill tiles of their own.
//
// The fraction of the multiply-adds run_sconv_live_taps runs, one image: each tile's rows times
// the taps some row of the tile reads the input with, over every row's every tap. 1 when no tap
// reaches past the input; a 3x3 on a 48x48 map with MR 14: pads 1 0.99, dilation 4 0.94, dilation
// 12 0.69, dilation 36 0.25.
double sconv_live_tap_fraction(const SconvGeometry& geometry, int mr);

// Live fraction from which run_sconv_live_taps runs: DeepLabV3's 3x3 of dilation 4 on 48x48
// (0.94) ran 2-8% faster (1 thread, CPU time, noisy); above it the savings are within the noise
// (3x3 with pads 1 on 14x14 maps and larger: 0.97 and up).
inline constexpr double kLiveTapsMaxFraction = 0.95;

// On output rows narrower than MR the tiles end at nearly every output row (a 7x7 map with MR 14:
// tiles of 7 and 14 rows), and short tiles cost more than a few dead taps save: ResNet-18's 3x3
// convs of 512 channels on 7x7 maps (pads 1, 90% live) ran 1.5-3x faster on run_sconv's full tiles
// (1 thread, a loaded machine). There the live fraction must be at most this (an ASPP branch whose
// dilation is as large as the map: about half; a strided, dilated 3x3 on an 11x7 map: 78%).
inline constexpr double kLiveTapsNarrowMaxFraction = 0.8;

// Whether run_sconv_live_taps pays over run_sconv: more than one tap and a live fraction of at
// most kLiveTapsMaxFraction (kLiveTapsNarrowMaxFraction on output rows narrower than `mr`).
bool sconv_live_taps_apply(const PackedSgemm& packed, const SconvGeometry& geometry);

// Rows [m_begin, m_end) x columns [n_begin, n_end) (n_begin a multiple of nr), as run_sconv.
void run_sconv_live_taps(const PackedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                         const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);

}  // namespace qdqrt::kernels
