// Drops the kernel rows and columns of a Conv that read only padding for every output pixel.
//
// DeepLabV3's ASPP convolutions are 3x3 with dilation 12, 24 and 36; on the 24x24 feature map of
// a MobileNetV3 backbone at 384x384, a tap 24 or 36 pixels off the center lies outside the input
// for every output pixel: those 3x3 convolutions compute a 1x1 one plus eight taps of zeros. The
// pass slices such taps out of the weight (a float initializer, or the integer initializer of a
// DequantizeLinear whose per-channel axis is not spatial) and moves the begin pads so that every
// remaining tap reads what it read before; the output size stays the same. Exact: a dropped tap
// only ever multiplied padding, zero (in a QDQ graph the quantized zero, zero once dequantized),
// and adding a zero product does not change a sum.
//
// It does not fire where that is not so, or where the rewrite would not be a valid Conv: an input
// whose spatial size is not known at build, auto_pad SAME_*, a weight shared with other nodes or
// computed at run time, a dropped float weight that is not finite (0 x inf is NaN), or a new begin
// pad or end pad that would be negative.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "optimizer/graph_utils.h"
#include "optimizer/pass.h"

namespace qdqrt::optimizer {

// The taps a Conv keeps, per spatial axis, or why it keeps them all (empty reason: nothing to drop).
struct ConvTapPruning {
  std::string weight;              // the initializer sliced: the Conv's weight or its DequantizeLinear's data
  int dequantize = -1;             // that DequantizeLinear node, or -1 (a float weight)
  std::vector<int64_t> first_tap;  // per spatial axis: the first live tap
  std::vector<int64_t> taps;       // per spatial axis: live taps from first_tap
  std::vector<int64_t> pads;       // the new pads [begin..., end...]
};
struct ConvTapSelection {
  std::optional<ConvTapPruning> pruning;
  std::string reason;
};

// Reads the graph only. `conv` indexes a Conv node.
ConvTapSelection select_conv_tap_pruning(const Graph& graph, const ValueIndex& index, int conv);

std::unique_ptr<Pass> make_prune_dead_conv_taps_pass();

}  // namespace qdqrt::optimizer
