// The fp32 igemm drivers' blocking (run_sconv/run_sgemm in fp32_sgemm.cpp and the live-taps
// driver in fp32_live_taps.cpp walk k, rows and panels the same way, so their sums are identical).
#pragma once

#include <algorithm>
#include <cstdint>

namespace qdqrt::kernels::internal {

// Blocks of k of about kSgemmDepthBlock (tap, channel) pairs: the panel's block (kSgemmDepthBlock
// x NR floats, 32 KiB on AVX-512) stays in L1 while the row tiles pass over it, and a row tile's
// block of A (MR x kSgemmDepthBlock) streams from L2. k up to kSgemmOneBlockDepth is one block: its
// partial sums would go through C, and its panel streams from L2 fast enough (ResNet's 3x3 of 64
// and 128 channels, 1x1 of 1024: +1.5-2.5%).
inline constexpr int kSgemmDepthBlock = 256;
inline constexpr int kSgemmOneBlockDepth = 5 * kSgemmDepthBlock;
inline constexpr int kSgemmMaxMr = 16;
// Output panels from which copying A's rows pays.
inline constexpr int kSgemmCopyAPanels = 2;
// B (all panels of the range, every depth block) up to this size: row tiles outer.
inline constexpr int64_t kSgemmRowsOuterBytes = 256 * 1024;
// Rows per block whose A block (rows x kSgemmDepthBlock floats) stays in L2 while the panels pass.
inline constexpr int64_t kSgemmRowBlockBytes = 256 * 1024;

struct SgemmDepthBlocking {
  int channel_chunk = 0;  // channels per block (all when taps are grouped)
  int taps_per_block = 1;
};

// One block when k is small, else one tap of channel chunks (many channels) or runs of taps of
// all channels (few).
inline SgemmDepthBlocking sgemm_depth_blocking(int taps, int channels) {
  if (static_cast<int64_t>(taps) * channels <= kSgemmOneBlockDepth) return {channels, taps};
  if (channels >= kSgemmDepthBlock) {
    const int chunks = (channels + kSgemmDepthBlock - 1) / kSgemmDepthBlock;
    return {(channels + chunks - 1) / chunks, 1};
  }
  return {channels, std::max(1, kSgemmDepthBlock / std::max(channels, 1))};
}

}  // namespace qdqrt::kernels::internal
