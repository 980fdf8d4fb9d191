// What the float conv fusions (float_conv_epilogue.cpp, float_conv_gate.cpp,
// float_pool_row_sums.cpp, float_depthwise_chain.cpp) share: the shapes they read and the rule of
// which convs the NHWC fp32 kernels run (kernels/fp32/fp32_nhwc_conv_rule.h, the engine's rule
// too). Those kernels write NHWC and run the epilogue the fused float nodes carry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/ops/window.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

// Static [N, C, H, W] of a float value (N may be symbolic), or nullopt.
std::optional<std::vector<Dim>> float_rank4(const Graph& graph, const std::string& value);

// A float Conv (ONNX) or FusedConv (qdqrt) with its conv attributes.
bool is_float_conv(const Node& node);

// A 2-D float conv as the NHWC kernels see it: shapes per image and the resolved window.
struct FloatConvGeometry {
  int64_t channels = 0, height = 0, width = 0, out_channels = 0, out_height = 0, out_width = 0;
  int64_t group = 1;
  WindowGeometry window;  // spatial axes at [1] (H) and [2] (W)
  bool pointwise() const;  // 1x1, stride 1, no pads
  bool depthwise() const { return group == channels && group == out_channels; }
};

// Why the NHWC fp32 conv kernels would not run `conv` (a Conv or FusedConv), or "": constant 4-D
// float weight (and bias), known C, H and W, then kernels::fp32_nhwc_conv_declines.
std::string nhwc_conv_declines(const Graph& graph, const Node& conv);
// The geometry of a conv nhwc_conv_declines() takes (nullopt for any other).
std::optional<FloatConvGeometry> nhwc_conv_geometry(const Graph& graph, const Node& conv);

// Whether the engine stores `value` channels-last with the batch in front: the output of a conv
// the NHWC kernels run.
bool written_nhwc(const Graph& graph, const ValueIndex& index, const std::string& value);

}  // namespace qdqrt::optimizer
