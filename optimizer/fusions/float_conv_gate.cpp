// Channel gate fold: squeeze-excite's Mul(x, gate [N, C, 1, 1]) whose only reader is a 1x1
// stride-1 float conv without pads (group 1) becomes that conv's gate input (FusedConv input 4,
// core/ops/fused_conv.h): the engine's igemm conv then scales its packed weights' input channels by
// the gate per image (n_padded x C multiplies, into scratch) instead of the Mul's pass over x
// (H x W x C). It pays when that costs at most half a pass over x: 2 x n_padded <= H x W, where
// n_padded is the output channels rounded up to the target ISA's GEMM tile width
// (kernels::sgemm_padded_n, PassContext::isa()): EfficientNet-B0's gates at 14x14 and up.
// x must be written channels-last by a conv the NHWC kernels run (the Mul then runs channels-last
// in the engine and the conv reads x where it stands); the conv may be a FusedConv (its epilogue
// stays) but not one already gated.
#include <algorithm>

#include <fmt/format.h>

#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "optimizer/fusions/float_conv.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

bool is_fused_conv(const Node& node) { return node.domain == layers::kDomain && node.op_type == layers::kFusedConv; }

}  // namespace

SelectResult select_float_conv_gate(const Graph& graph, const ValueIndex& index, int node_index,
                                    const PassContext& context) {
  const Node& conv = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_float_conv(conv) || conv.outputs.size() != 1 || !conv.has_input(0) ||
      (is_fused_conv(conv) && conv.has_input(layers::kFusedConvGate))) {
    return {};
  }
  const std::string& product = conv.input(0);
  const int mul_index = index.producer(product);
  if (mul_index < 0 || !index.has_single_use(product)) return {};
  for (size_t slot = 1; slot < conv.inputs.size(); ++slot) {
    if (conv.inputs[slot] == product) return {};
  }
  const Node& mul = graph.nodes[static_cast<size_t>(mul_index)];
  if (!is_onnx(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) return {};
  auto y = float_rank4(graph, product);
  if (!y || (*y)[2].value * (*y)[3].value <= 1) return {};
  std::string x, gate;
  for (size_t side = 0; side < 2 && x.empty(); ++side) {
    const std::string& a = mul.input(side);
    const std::string& b = mul.input(1 - side);
    if (a.empty() || b.empty() || a == b || find_constant(graph, a) != nullptr || find_constant(graph, b) != nullptr) {
      continue;
    }
    auto a_dims = float_rank4(graph, a);
    const ValueInfo* b_info = graph.find_value(b);
    if (!a_dims || !same_dims(*a_dims, *y) || b_info == nullptr || b_info->dtype != DataType::kFloat || !b_info->shape ||
        !same_dims(*b_info->shape, {(*y)[0], (*y)[1], Dim{.value = 1, .symbol = {}}, Dim{.value = 1, .symbol = {}}})) {
      continue;
    }
    x = a, gate = b;
  }
  if (x.empty()) return {};

  // Only a 1x1 stride-1 conv of group 1 without pads on the igemm scales its weights.
  auto g = nhwc_conv_geometry(graph, conv);
  if (!g || g->group != 1 || !g->pointwise()) return {};
  // A channel gate before such a conv: from here on the conv gets a reason when it stays apart.
  const std::string not_folded = fmt::format("channel gate '{}' not folded into the conv: ", mul.name);
  if (!written_nhwc(graph, index, x)) {
    return {.selection = std::nullopt, .reason = not_folded + "the gated tensor is not a channels-last conv output"};
  }
  const kernels::Isa isa = context.isa();
  const int64_t padded = kernels::sgemm_padded_n(static_cast<int>(g->out_channels), isa);
  const int64_t pixels = g->height * g->width;
  if (2 * padded > pixels) {
    return {.selection = std::nullopt,
            .reason = not_folded + fmt::format("scaling {} x {} packed weights per image costs more than half a pass "
                                               "over its {} pixels on {}",
                                               padded, g->channels, pixels, kernels::isa_name(isa))};
  }
  QdqSelection selection;
  selection.layer_op = layers::kFusedConv;
  selection.targets = {node_index, mul_index};
  selection.output = conv.outputs[0];
  QuantizedInput gated, scale;  // float: only the values are used
  gated.quantized = x;
  gated.dtype = DataType::kFloat;
  scale.quantized = gate;
  scale.dtype = DataType::kFloat;
  selection.inputs = {gated, scale};
  return {.selection = std::move(selection), .reason = ""};
}

Status apply_float_conv_gate(Graph& graph, const QdqSelection& selection, PassContext&) {
  const size_t conv_slot = static_cast<size_t>(selection.targets[0]);
  const size_t mul_slot = static_cast<size_t>(selection.targets[1]);
  const Node& conv = graph.nodes[conv_slot];
  const Node& mul = graph.nodes[mul_slot];
  Node layer = conv;
  Attribute fused;
  fused.kind = Attribute::Kind::kStrings;
  fused.strings = {mul.name};
  if (is_fused_conv(conv)) {
    const Attribute* before = conv.find_attribute("fused_nodes");
    if (before != nullptr && before->kind == Attribute::Kind::kStrings) {
      fused.strings.insert(fused.strings.end(), before->strings.begin(), before->strings.end());
    }
  } else {
    layer.op_type = layers::kFusedConv;
    layer.domain = layers::kDomain;
    layer.opset = 1;
    fused.strings.push_back(conv.name);
  }
  layer.attributes["fused_nodes"] = fused;
  layer.inputs.resize(layers::kFusedConvInputCount);
  layer.inputs[layers::kFusedConvX] = selection.inputs[0].quantized;
  layer.inputs[layers::kFusedConvGate] = selection.inputs[1].quantized;
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;
  // The layer stands where the conv stood (x and the gate are written before the Mul); the Mul goes.
  graph.nodes[conv_slot] = std::move(layer);
  graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(mul_slot));
  return Status::ok();
}

}  // namespace qdqrt::optimizer
