// Float conv epilogue fusion, after ONNX Runtime's FusedConv: a float Conv with constant weights
// and the float ops that only post-process its output become one qdqrt FusedConv
// (core/ops/fused_conv.h), which the engine's NHWC fp32 conv kernels run in their epilogue:
//   Conv [-> Add(residual)] [-> Relu | Clip | Sigmoid | HardSwish | SiLU (Sigmoid + Mul)]
// The residual is a runtime tensor shaped like the conv's output and written before the conv (so
// the conv can read it where it stands); each value fused away has no reader outside the pattern
// and is not a graph output. Only convs the NHWC kernels take (group 1 or depthwise, at most
// kernels::kSgemmMaxTaps taps, pads narrower than the window, dims in int range) are fused: the
// NCHW ones run no epilogue.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/ops/conv.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "optimizer/fusions/epilogue.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// Static [N, C, H, W] of a float value (N may be symbolic), or nullopt.
std::optional<std::vector<Dim>> float_rank4(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.find_value(value);
  if (info == nullptr || info->dtype != DataType::kFloat || !info->shape || info->shape->size() != 4) return std::nullopt;
  for (size_t axis = 1; axis < 4; ++axis) {
    if (!(*info->shape)[axis].is_static()) return std::nullopt;
  }
  return *info->shape;
}

bool same_dims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = a[i].is_static() ? b[i].is_static() && a[i].value == b[i].value
                                       : !a[i].symbol.empty() && a[i].symbol == b[i].symbol;
    if (!same) return false;
  }
  return true;
}

// Why the NHWC fp32 conv kernels (the ones with an epilogue) would not take this conv, or "".
std::string nhwc_conv_declines(const Graph& graph, const Node& conv) {
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
  const int64_t channels = (*x)[1].value, out_channels = (*y)[1].value, group = attributes->group;
  if (group != 1 && !(group == channels && group == out_channels)) {
    return fmt::format("group {} is neither 1 nor the {} channels: the NCHW kernels run no epilogue", group, channels);
  }
  const int64_t taps = weight->dim(2) * weight->dim(3);
  if (taps > kernels::kSgemmMaxTaps) {
    return fmt::format("{} kernel taps, the NHWC kernels take {}", taps, kernels::kSgemmMaxTaps);
  }
  for (int64_t dim : {channels, out_channels, (*x)[2].value, (*x)[3].value}) {
    if (dim > INT32_MAX / 2) return "dims beyond the NHWC kernels' int range";
  }
  if (attributes->auto_pad == AutoPad::kNotSet && attributes->pads.size() == 4) {
    const int64_t dilation_h = attributes->dilations.size() == 2 ? attributes->dilations[0] : 1;
    const int64_t dilation_w = attributes->dilations.size() == 2 ? attributes->dilations[1] : 1;
    if (attributes->pads[0] >= weight->dim(2) * dilation_h || attributes->pads[1] >= weight->dim(3) * dilation_w) {
      return "pads wider than the window";
    }
  }
  return "";
}

// The only reader of `value` (not a graph output), or -1.
int sole_reader(const ValueIndex& index, const std::string& value) {
  return index.has_single_use(value) ? index.consumers(value)[0] : -1;
}

bool is_epilogue_op(const Node& node) {
  for (const char* op : {"Add", "Relu", "Clip", "Sigmoid", "HardSwish", "Mul"}) {
    if (is_onnx(node, op)) return true;
  }
  return false;
}

}  // namespace

SelectResult select_float_conv_epilogue(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& conv = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(conv, "Conv") || conv.outputs.size() != 1 || conv.inputs.size() < 2 || !conv.has_input(0) ||
      !conv.has_input(1) || index.is_graph_output(conv.outputs[0])) {
    return {};
  }
  // Only convs with an op that could join them get a reason.
  bool candidate = false;
  for (int reader : index.consumers(conv.outputs[0])) candidate |= is_epilogue_op(graph.nodes[static_cast<size_t>(reader)]);
  if (!candidate) return {};
  if (std::string why = nhwc_conv_declines(graph, conv); !why.empty()) return {.selection = std::nullopt, .reason = why};

  QdqSelection selection;
  selection.layer_op = layers::kFusedConv;
  selection.targets = {node_index};
  selection.output = conv.outputs[0];
  const std::vector<Dim> y = *float_rank4(graph, conv.outputs[0]);

  // The residual Add: the other operand a runtime tensor shaped like y, written before the conv.
  if (int reader = sole_reader(index, selection.output); reader >= 0) {
    const Node& add = graph.nodes[static_cast<size_t>(reader)];
    if (is_onnx(add, "Add") && add.inputs.size() == 2 && add.outputs.size() == 1 && add.input(0) != add.input(1)) {
      const std::string& other = add.input(0) == selection.output ? add.input(1) : add.input(0);
      auto other_dims = float_rank4(graph, other);
      auto sum_dims = float_rank4(graph, add.outputs[0]);
      if (find_constant(graph, other) == nullptr && index.producer(other) < node_index && other_dims && sum_dims &&
          same_dims(*other_dims, y) && same_dims(*sum_dims, y)) {
        selection.targets.push_back(reader);
        selection.output = add.outputs[0];
        QuantizedInput residual;  // float: only the value is used
        residual.quantized = other;
        residual.dtype = DataType::kFloat;
        selection.residual = residual;
      }
    }
  }

  // The activation: SiLU as v * Sigmoid(v) (the Sigmoid first), or one Relu/Clip/Sigmoid/HardSwish.
  const std::vector<int>& readers = index.consumers(selection.output);
  if (!index.is_graph_output(selection.output) && readers.size() == 2 && readers[0] < readers[1]) {
    const Node& sigmoid = graph.nodes[static_cast<size_t>(readers[0])];
    const Node& mul = graph.nodes[static_cast<size_t>(readers[1])];
    if (is_onnx(sigmoid, "Sigmoid") && sigmoid.outputs.size() == 1 && index.has_single_use(sigmoid.outputs[0]) &&
        is_onnx(mul, "Mul") && mul.inputs.size() == 2 && mul.outputs.size() == 1 &&
        ((mul.input(0) == selection.output && mul.input(1) == sigmoid.outputs[0]) ||
         (mul.input(1) == selection.output && mul.input(0) == sigmoid.outputs[0]))) {
      selection.targets.push_back(readers[0]);
      selection.targets.push_back(readers[1]);
      selection.lookup_function = conv_epilogue_function_name(ConvEpilogueFunction::kSiLU);
      selection.output = mul.outputs[0];
      return {.selection = std::move(selection), .reason = ""};
    }
  }
  if (int reader = sole_reader(index, selection.output); reader >= 0) {
    const Node& next = graph.nodes[static_cast<size_t>(reader)];
    if (next.outputs.size() == 1 && next.inputs.size() >= 1 && next.input(0) == selection.output) {
      if (is_onnx(next, "Sigmoid") || is_onnx(next, "HardSwish")) {
        selection.lookup_function = conv_epilogue_function_name(is_onnx(next, "Sigmoid")
                                                                    ? ConvEpilogueFunction::kSigmoid
                                                                    : ConvEpilogueFunction::kHardSwish);
        selection.targets.push_back(reader);
        selection.output = next.outputs[0];
      } else if (auto activation = fusable_activation(graph, next);
                 activation && activation->kind != ActivationKind::kLeakyRelu && !std::isnan(activation->min) &&
                 !std::isnan(activation->max) && activation->min <= activation->max) {
        selection.activation = *activation;
        selection.targets.push_back(reader);
        selection.output = next.outputs[0];
      }
    }
  }
  if (selection.targets.size() == 1) return {};
  return {.selection = std::move(selection), .reason = ""};
}

Status apply_float_conv_epilogue(Graph& graph, const QdqSelection& selection, PassContext&) {
  const size_t conv_slot = static_cast<size_t>(selection.targets[0]);
  const Node& conv = graph.nodes[conv_slot];
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/true);
  if (!selection.lookup_function.empty()) set_string_attribute(layer, "function", selection.lookup_function);
  layer.inputs = {conv.input(0), conv.input(1), conv.has_input(2) ? conv.input(2) : std::string(),
                  selection.residual ? selection.residual->quantized : std::string()};
  while (!layer.inputs.empty() && layer.inputs.back().empty()) layer.inputs.pop_back();
  layer.outputs = {selection.output};
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;
  // The layer stands where the conv stood (its residual is written before it); the rest go.
  graph.nodes[conv_slot] = std::move(layer);
  std::vector<int> removed(selection.targets.begin() + 1, selection.targets.end());
  std::sort(removed.rbegin(), removed.rend());
  for (int node : removed) graph.nodes.erase(graph.nodes.begin() + node);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
