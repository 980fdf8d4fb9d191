// Float conv epilogue fusion, after ONNX Runtime's FusedConv: a float Conv with constant weights
// and the float ops that only post-process its output become one qdqrt FusedConv
// (core/ops/fused_conv.h), which the engine's NHWC fp32 conv kernels run in their epilogue:
//   Conv [-> Add(residual)] [-> Relu | Clip | Sigmoid | HardSwish | SiLU (Sigmoid + Mul) |
//                             HardSwish as HardSigmoid(alpha 1/6, beta 0.5) + Mul]
// The residual is a runtime tensor shaped like the conv's output and written before the conv (so
// the conv can read it where it stands); each value fused away has no reader outside the pattern
// and is not a graph output. Only convs the NHWC kernels take (float_conv.h: group 1 or depthwise,
// at most kernels::kSgemmMaxTaps taps, pads narrower than the window, dims in int range) are fused:
// the NCHW ones run no epilogue.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/ops/conv.h"
#include "core/ops/elementwise.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/epilogue.h"
#include "optimizer/fusions/float_conv.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

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

// HardSigmoid with HardSwish's slope and offset (alpha 1/6, beta 0.5): v * HardSigmoid(v) is
// HardSwish(v), as torch exports hardswish below opset 14 (MobileNetV3).
bool is_hard_swish_sigmoid(const Node& node) {
  if (!is_onnx(node, "HardSigmoid") || node.inputs.size() != 1) return false;
  const auto& attributes = node.attrs<HardSigmoidAttributes>();
  return std::abs(attributes.alpha - 1.0f / 6.0f) <= 1e-6f && attributes.beta == 0.5f;
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
    const bool hard = is_hard_swish_sigmoid(sigmoid);
    if ((is_onnx(sigmoid, "Sigmoid") || hard) && sigmoid.outputs.size() == 1 &&
        index.has_single_use(sigmoid.outputs[0]) && is_onnx(mul, "Mul") && mul.inputs.size() == 2 &&
        mul.outputs.size() == 1 &&
        ((mul.input(0) == selection.output && mul.input(1) == sigmoid.outputs[0]) ||
         (mul.input(1) == selection.output && mul.input(0) == sigmoid.outputs[0]))) {
      selection.targets.push_back(readers[0]);
      selection.targets.push_back(readers[1]);
      selection.lookup_function =
          conv_epilogue_function_name(hard ? ConvEpilogueFunction::kHardSwish : ConvEpilogueFunction::kSiLU);
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
  const Node& conv = graph.nodes[static_cast<size_t>(selection.targets[0])];
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/true);
  layer.inputs = {conv.input(0), conv.input(1), conv.has_input(2) ? conv.input(2) : std::string(),
                  selection.residual ? selection.residual->quantized : std::string()};
  // The layer stands where the conv stood (its residual is written before it); the rest go.
  return replace_first_with_layer(graph, selection, std::move(layer));
}

}  // namespace qdqrt::optimizer
