#include "optimizer/fusions/float_conv.h"

#include "core/ops/conv.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "kernels/fp32/fp32_nhwc_conv_rule.h"
#include "optimizer/fusions/quantized_io.h"

namespace qdqrt::optimizer {

std::optional<std::vector<Dim>> float_rank4(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.find_value(value);
  if (info == nullptr || info->dtype != DataType::kFloat || !info->shape || info->shape->size() != 4) return std::nullopt;
  for (size_t axis = 1; axis < 4; ++axis) {
    if (!(*info->shape)[axis].is_static()) return std::nullopt;
  }
  return *info->shape;
}

bool is_float_conv(const Node& node) {
  return (is_onnx(node, "Conv") || (node.domain == layers::kDomain && node.op_type == layers::kFusedConv)) &&
         dynamic_cast<const ConvAttributes*>(node.typed_attributes.get()) != nullptr;
}

bool FloatConvGeometry::pointwise() const {
  return window.kernel[1] == 1 && window.kernel[2] == 1 && window.strides[1] == 1 && window.strides[2] == 1 &&
         window.pads_begin[1] == 0 && window.pads_begin[2] == 0 && window.pads_end[1] == 0 && window.pads_end[2] == 0;
}

namespace {

// The geometry, or why there is none.
std::string conv_geometry(const Graph& graph, const Node& conv, FloatConvGeometry& g) {
  if (conv.inputs.size() < 2 || !conv.has_input(0) || !conv.has_input(1) || conv.outputs.empty()) {
    return "it has no input or weight";
  }
  const Tensor* weight = find_constant(graph, conv.input(1));
  if (weight == nullptr || weight->dtype() != DataType::kFloat || weight->rank() != 4) {
    return "its weight is not a constant 4-D float tensor";
  }
  if (conv.has_input(2)) {
    const Tensor* bias = find_constant(graph, conv.input(2));
    if (bias == nullptr || bias->dtype() != DataType::kFloat) return "its bias is not a constant float tensor";
  }
  auto x = float_rank4(graph, conv.input(0));
  auto y = float_rank4(graph, conv.outputs[0]);
  if (!x || !y) return "its input or output is not a float [N, C, H, W] of known C, H and W";
  const auto* attributes = dynamic_cast<const ConvAttributes*>(conv.typed_attributes.get());
  if (attributes == nullptr) return "its attributes are not parsed";
  const WindowAttributes window{.auto_pad = attributes->auto_pad,
                                .strides = &attributes->strides,
                                .dilations = &attributes->dilations,
                                .pads = &attributes->pads,
                                .ceil_mode = false};
  Result<WindowGeometry> resolved =
      resolve_window(conv, {(*x)[2].value, (*x)[3].value}, {weight->dim(2), weight->dim(3)}, window);
  if (!resolved.ok()) return "its window does not fit its input";
  g.channels = (*x)[1].value, g.height = (*x)[2].value, g.width = (*x)[3].value;
  g.out_channels = (*y)[1].value, g.out_height = (*y)[2].value, g.out_width = (*y)[3].value;
  g.group = attributes->group;
  g.window = *resolved;
  return "";
}

}  // namespace

std::string nhwc_conv_declines(const Graph& graph, const Node& conv) {
  FloatConvGeometry g;
  if (std::string why = conv_geometry(graph, conv, g); !why.empty()) return why;
  std::optional<std::string> why = kernels::fp32_nhwc_conv_declines({.channels = g.channels,
                                                                    .out_channels = g.out_channels,
                                                                    .height = g.height,
                                                                    .width = g.width,
                                                                    .group = g.group,
                                                                    .kernel_h = g.window.kernel[1],
                                                                    .kernel_w = g.window.kernel[2],
                                                                    .dilation_h = g.window.dilations[1],
                                                                    .dilation_w = g.window.dilations[2],
                                                                    .pad_top = g.window.pads_begin[1],
                                                                    .pad_left = g.window.pads_begin[2]});
  if (!why) return "";
  // The NCHW implementations run no epilogue.
  return *why + ": the NCHW kernels run no epilogue";
}

std::optional<FloatConvGeometry> nhwc_conv_geometry(const Graph& graph, const Node& conv) {
  FloatConvGeometry g;
  if (!conv_geometry(graph, conv, g).empty() || !nhwc_conv_declines(graph, conv).empty()) return std::nullopt;
  return g;
}

bool written_nhwc(const Graph& graph, const ValueIndex& index, const std::string& value) {
  const int producer = index.producer(value);
  if (producer < 0) return false;
  const Node& node = graph.nodes[static_cast<size_t>(producer)];
  return is_float_conv(node) && node.outputs[0] == value && nhwc_conv_declines(graph, node).empty();
}

}  // namespace qdqrt::optimizer
