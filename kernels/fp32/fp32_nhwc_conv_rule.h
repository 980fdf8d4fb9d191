// Which convs the NHWC fp32 conv kernels (igemm, Winograd, direct NCHW-input, depthwise: the ones
// with an epilogue) take at all. One rule for the optimizer, which fuses epilogues only into convs
// these kernels run, and the engine's conv implementations, which try them before the NCHW loops.
#pragma once

#include <fmt/format.h>

#include <cstdint>
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

// Why the NHWC fp32 kernels do not take the conv, or nullopt when they do: group neither 1 nor
// depthwise (group == C == OC), more than kSgemmMaxTaps taps, dims beyond their int range, leading
// pads as wide as the (dilated) window.
inline std::optional<std::string> fp32_nhwc_conv_declines(const Fp32NhwcConvShape& conv) {
  if (conv.group != 1 && !(conv.group == conv.channels && conv.group == conv.out_channels)) {
    return fmt::format("group {} is neither 1 nor the {} channels", conv.group, conv.channels);
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
