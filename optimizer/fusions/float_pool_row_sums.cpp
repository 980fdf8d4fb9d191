// Pool row sums: a GlobalAveragePool of a depthwise float conv's output (EfficientNet's
// squeeze-excite) becomes a RowSumsGlobalAveragePool (core/ops/fused_conv.h) that reads the
// per-row channel sums [N, OH, C] the conv writes as its second output while each row is still in
// cache, instead of a pass over the output from L3 (EfficientNet-B0's 112x112x32 to 56x56x144
// ones are 1.2-1.8 MB). The conv (a Conv or FusedConv) is one the engine's NHWC depthwise kernel
// runs: depthwise with more than one channel (a one-channel conv is group 1: the igemm's) and
// taken by the NHWC kernels; the pool then reads its channels-last output as stored. One pool per
// conv takes the sums (the first in graph order).
#include <fmt/format.h>

#include "core/attribute_values.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/float_conv.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

std::string row_sums_name(const std::string& value) { return value + "/row_sums"; }

}  // namespace

SelectResult select_float_pool_row_sums(const Graph& graph, const ValueIndex& index, int node_index,
                                        const PassContext&) {
  const Node& pool = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(pool, "GlobalAveragePool") || pool.inputs.size() != 1 || pool.outputs.size() != 1 ||
      !pool.has_input(0)) {
    return {};
  }
  const std::string& x = pool.input(0);
  const int conv_index = index.producer(x);
  if (conv_index < 0 || !float_rank4(graph, x)) return {};
  const Node& conv = graph.nodes[static_cast<size_t>(conv_index)];
  if (!is_float_conv(conv) || conv.outputs.size() != 1 || conv.outputs[0] != x) return {};
  auto g = nhwc_conv_geometry(graph, conv);
  if (!g || !g->depthwise() || g->group == 1) return {};
  if (graph.find_value(row_sums_name(x)) != nullptr) {
    return {.selection = std::nullopt,
            .reason = fmt::format("the row sums' name '{}' is taken: the pool reads the conv's output", row_sums_name(x))};
  }
  QdqSelection selection;
  selection.layer_op = layers::kRowSumsGlobalAveragePool;
  selection.targets = {node_index, conv_index};
  selection.output = pool.outputs[0];
  return {.selection = std::move(selection), .reason = ""};
}

Status apply_float_pool_row_sums(Graph& graph, const QdqSelection& selection, PassContext&) {
  const size_t pool_slot = static_cast<size_t>(selection.targets[0]);
  const size_t conv_slot = static_cast<size_t>(selection.targets[1]);
  Node& conv = graph.nodes[conv_slot];
  const std::string x = conv.outputs[0];
  const std::string sums = row_sums_name(x);
  if (conv.domain != layers::kDomain) {
    // A plain Conv becomes a FusedConv without epilogue: only it has a row sums output.
    conv.attributes["fused_nodes"] = strings_attribute({conv.name});
    conv.op_type = layers::kFusedConv;
    conv.domain = layers::kDomain;
    conv.opset = 1;
  }
  conv.outputs.push_back(sums);
  QDQRT_ASSIGN_OR_RETURN(conv.typed_attributes, parse_fused_layer_attributes(conv));
  const std::vector<Dim>& dims = *graph.find_value(x)->shape;
  graph.values[sums] = ValueInfo{.name = sums, .dtype = DataType::kFloat, .shape = std::vector<Dim>{dims[0], dims[2], dims[1]}};

  const Node& pool = graph.nodes[pool_slot];
  Node layer;
  layer.name = pool.name;
  layer.op_type = layers::kRowSumsGlobalAveragePool;
  layer.domain = layers::kDomain;
  layer.opset = 1;
  layer.attributes["fused_nodes"] = strings_attribute({pool.name});
  layer.inputs = {x, sums};
  layer.outputs = pool.outputs;
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;
  graph.nodes[pool_slot] = std::move(layer);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
