// Which convs the NHWC fp32 conv kernels (igemm, grouped igemm, Winograd, direct NCHW-input,
// depthwise: the ones with an epilogue) take at all. One rule for the optimizer, which fuses
// epilogues only into convs these kernels run, and the engine's conv implementations, which try
// them before the NCHW loops.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <string>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

// A 2-D conv as the rule sees it: channels and spatial dims per image, the window with its
// resolved leading pads.
struct Fp32NhwcConvShape {
  int64_t channels = 0, out_channels = 0, height = 0, width = 0;
  int64_t group = 1;
  int64_t kernel_h = 1, kernel_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

// The widest igemm panel (NR) of any ISA (AVX-512: 32 columns).
inline constexpr int kSgemmWidestNr = 32;
// A grouped conv runs on the igemm as blocks of consecutive groups, each block one dense conv
// whose weights are zero off its groups' diagonal (kernels/fp32/fp32_grouped.h): the groups of a
// block fill whole panels of `nr` output channels. The groups per block (1 when a group's output
// channels are a multiple of nr); the block does that many times the group's multiply-adds. On a
// narrower panel the block is a divisor of the widest one's.
inline int64_t fp32_group_block_groups(int64_t out_per_group, int nr) {
  return nr / std::gcd(static_cast<int64_t>(nr), out_per_group);
}
// Blocks of more groups than this leave grouped convs to the NCHW loops (ResNeXt's 4 channels per
// group: 8 groups per block, 8x the multiply-adds, still ahead of per-group GEMMs and the
// reorders to NCHW and back).
inline constexpr int64_t kFp32MaxBlockGroups = 8;

// Why the NHWC fp32 kernels do not take the conv, or nullopt when they do: groups that take more
// than kFp32MaxBlockGroups per block to fill panels (on the widest panel, so on every ISA), more
// than kSgemmMaxTaps taps, dims beyond their int range, leading pads as wide as the (dilated)
// window.
inline std::optional<std::string> fp32_nhwc_conv_declines(const Fp32NhwcConvShape& conv) {
  const bool depthwise = conv.group == conv.channels && conv.group == conv.out_channels;
  if (conv.group != 1 && !depthwise) {
    if (conv.group < 1 || conv.channels % conv.group != 0 || conv.out_channels % conv.group != 0) {
      return fmt::format("group {} does not divide {} input and {} output channels", conv.group, conv.channels,
                         conv.out_channels);
    }
    const int64_t block = fp32_group_block_groups(conv.out_channels / conv.group, kSgemmWidestNr);
    if (block > kFp32MaxBlockGroups) {
      return fmt::format("groups of {} output channels fill {}-channel panels in blocks of {} groups, more than {}",
                         conv.out_channels / conv.group, kSgemmWidestNr, block, kFp32MaxBlockGroups);
    }
  }
  const int64_t taps = conv.kernel_h * conv.kernel_w;
  if (taps > kSgemmMaxTaps) return fmt::format("{} kernel taps, the NHWC kernels take {}", taps, kSgemmMaxTaps);
  for (int64_t dim : {conv.channels, conv.out_channels, conv.height, conv.width}) {
    if (dim > INT32_MAX / 2) return std::string("dims beyond the NHWC kernels' int range");
  }
  if (conv.pad_top >= conv.kernel_h * conv.dilation_h || conv.pad_left >= conv.kernel_w * conv.dilation_w) {
    return std::string("pads wider than the window");
  }
  return std::nullopt;
}

}  // namespace qdqrt::kernels
