// NHWC fp32 convolution on the igemm's packed weights (fp32_sgemm.h) that leaves out, per row tile
// of output pixels, the kernel taps that read only padding for every pixel of the tile. A dilated
// conv on a small map (DeepLabV3's ASPP: 3x3, dilation 36 on a 48x48 map) has taps that read the
// input for a band of the output only: at dilation 36 a quarter of the (output pixel, tap) pairs
// read real input, the rest multiply the zero row. run_sconv multiplies them all; this driver calls
// the microkernel per tile on runs of its live taps only.
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

// The fraction of (row tile, tap) pairs of one image, tiles of `mr` output pixels from its first,
// in which some pixel's tap reads the input (not padding): what run_sconv_live_taps multiplies.
// 1 when no tap reaches past the input; for a 3x3 on a 48x48 map with MR 14: pads 1 0.99,
// dilation 4 0.945, dilation 36 0.34.
double sconv_live_tap_fraction(const SconvGeometry& geometry, int mr);

// Live fraction from which run_sconv_live_taps runs: measured (1 thread, CPU time) on DeepLabV3's
// 3x3 of dilation 4 on 48x48 (0.945 live) 84 -> 77 ms; below that the driver's savings are
// within the noise (3x3 with pads 1 on 14x14 maps and larger).
inline constexpr double kLiveTapsMaxFraction = 0.95;

// Whether run_sconv_live_taps pays over run_sconv: more than one tap and at most
// kLiveTapsMaxFraction of the (tile, tap) pairs live.
bool sconv_live_taps_apply(const PackedSgemm& packed, const SconvGeometry& geometry);

// Rows [m_begin, m_end) x columns [n_begin, n_end) (n_begin a multiple of nr), as run_sconv.
void run_sconv_live_taps(const PackedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                         const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);

}  // namespace qdqrt::kernels
