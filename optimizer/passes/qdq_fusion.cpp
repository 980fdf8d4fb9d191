#include "optimizer/passes/qdq_fusion.h"

#include <algorithm>
#include <unordered_set>

#include "core/ops/fused_layers.h"

namespace qdqrt::optimizer {

namespace {

const Node* find_node(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

Tensor zero_point_like(const Tensor& scale, DataType dtype) {
  Tensor zero(dtype, scale.shape());
  std::fill_n(static_cast<uint8_t*>(zero.raw_data()), zero.nbytes(), uint8_t{0});
  return zero;
}

// (value, scale, zero_point) names of a quantized input; adds a zero zero-point when absent.
std::vector<std::string> input_triple(Graph& graph, const QuantizedInput& input) {
  std::string zero_point = input.zero_point;
  if (zero_point.empty()) {
    zero_point = add_initializer(graph, input.quantized + "_zero_point",
                                 zero_point_like(*find_constant(graph, input.scale), input.dtype));
  }
  return {input.quantized, input.scale, zero_point};
}

std::vector<std::string> output_pair(Graph& graph, const std::optional<QuantizedOutput>& output) {
  if (!output) return {"", ""};
  std::string zero_point = output->zero_point;
  if (zero_point.empty()) {
    zero_point = add_initializer(graph, output->scale + "_zero_point",
                                 zero_point_like(*find_constant(graph, output->scale), output->dtype));
  }
  return {output->scale, zero_point};
}

// Int8 weight [N][K] -> [K][N] (Gemm transB folded).
Tensor transposed_2d(const Tensor& weight) {
  const int64_t rows = weight.dim(0), columns = weight.dim(1);
  Tensor out(weight.dtype(), {columns, rows});
  const auto* in = static_cast<const uint8_t*>(weight.raw_data());
  auto* data = static_cast<uint8_t*>(out.raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) data[c * rows + r] = in[r * columns + c];
  }
  return out;
}

void set_string(Node& node, const std::string& key, const std::string& value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kString;
  attribute.s = value;
  node.attributes[key] = attribute;
}

void set_float(Node& node, const std::string& key, float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloat;
  attribute.f = value;
  node.attributes[key] = attribute;
}

float scalar_float(const Graph& graph, const std::string& value) {
  return find_constant(graph, value)->data<float>()[0];
}

int64_t zero_point_value(const Graph& graph, const std::string& value) {
  return value.empty() ? 0 : find_constant(graph, value)->value_as_int64(0);
}

bool same_output_params(const Graph& graph, const QuantizedOutput& a, const QuantizedOutput& b) {
  return a.dtype == b.dtype && scalar_float(graph, a.scale) == scalar_float(graph, b.scale) &&
         zero_point_value(graph, a.zero_point) == zero_point_value(graph, b.zero_point);
}

// A fan-out Q whose readers can read the layer's int8 output as is.
bool shares_layer_output(const Graph& graph, const QdqSelection& selection, const QuantizedOutput& extra) {
  const std::string& q_output = graph.nodes[static_cast<size_t>(extra.q_node)].outputs[0];
  bool graph_output = std::find(graph.outputs.begin(), graph.outputs.end(), q_output) != graph.outputs.end();
  return !graph_output && same_output_params(graph, *selection.output_q, extra);
}

// The other Qs of a fan-out (QdqSelection::extra_output_qs), once the layer writes `layer_output`
// with `layer_params` (y_scale, y_zero_point): a Q with equal parameters goes (its readers read
// the layer's output; returned for removal), any other becomes QRequantize(layer_output) in place.
Result<std::vector<int>> rewire_extra_quantizers(Graph& graph, const QdqSelection& selection,
                                                 const std::vector<std::string>& layer_params, PassContext& context) {
  std::vector<int> removed;
  for (const QuantizedOutput& extra : selection.extra_output_qs) {
    Node& q = graph.nodes[static_cast<size_t>(extra.q_node)];
    context.clear_float_reason(q.name);
    const std::string q_output = q.outputs[0];
    if (shares_layer_output(graph, selection, extra)) {
      replace_uses(graph, q_output, selection.output);
      removed.push_back(extra.q_node);
      continue;
    }
    Node requantize;
    requantize.name = q.name;
    requantize.op_type = layers::kQRequantize;
    requantize.domain = layers::kDomain;
    requantize.opset = 1;
    Attribute fused;
    fused.kind = Attribute::Kind::kStrings;
    fused.strings = {q.name};
    requantize.attributes["fused_nodes"] = fused;
    std::vector<std::string> y = output_pair(graph, extra);
    requantize.inputs = {selection.output, layer_params[0], layer_params[1], y[0], y[1]};
    requantize.outputs = {q_output};
    QDQRT_ASSIGN_OR_RETURN(requantize.typed_attributes, parse_fused_layer_attributes(requantize));
    graph.nodes[static_cast<size_t>(extra.q_node)] = std::move(requantize);
  }
  return removed;
}

Status apply_int8_max_pool(Graph& graph, const QdqSelection& selection) {
  Node& pool = graph.nodes[static_cast<size_t>(selection.targets[0])];
  pool.inputs[0] = selection.inputs[0].quantized;
  pool.outputs.resize(1);
  pool.outputs[0] = selection.output;
  graph.nodes.erase(graph.nodes.begin() + selection.output_q->q_node);
  return Status::ok();
}

}  // namespace

Status apply_qdq_selection(Graph& graph, const QdqSelection& selection, PassContext& context) {
  for (int target : selection.targets) context.clear_float_reason(graph.nodes[static_cast<size_t>(target)].name);
  if (selection.layer_op == "MaxPool") return apply_int8_max_pool(graph, selection);

  const Node& main = graph.nodes[static_cast<size_t>(selection.targets[0])];
  Node layer;
  layer.name = main.name;
  layer.op_type = selection.layer_op;
  layer.domain = layers::kDomain;
  layer.opset = 1;
  // Conv/pool/concat/lookup attributes carry over; Gemm's are folded into the inputs.
  if (selection.layer_op != layers::kQMatMul) layer.attributes = main.attributes;
  Attribute fused;
  fused.kind = Attribute::Kind::kStrings;
  for (int target : selection.targets) fused.strings.push_back(graph.nodes[static_cast<size_t>(target)].name);
  if (selection.output_q) fused.strings.push_back(graph.nodes[static_cast<size_t>(selection.output_q->q_node)].name);
  for (const QuantizedOutput& extra : selection.extra_output_qs) {
    if (shares_layer_output(graph, selection, extra))
      fused.strings.push_back(graph.nodes[static_cast<size_t>(extra.q_node)].name);
  }
  layer.attributes["fused_nodes"] = fused;
  if (selection.activation.kind != ActivationKind::kNone) {
    set_string(layer, "activation", activation_kind_name(selection.activation.kind));
    if (selection.activation.kind == ActivationKind::kClip) {
      set_float(layer, "activation_min", selection.activation.min);
      set_float(layer, "activation_max", selection.activation.max);
    }
    if (selection.activation.kind == ActivationKind::kLeakyRelu) {
      set_float(layer, "activation_alpha", selection.activation.alpha);
    }
  }

  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  const std::string& op = selection.layer_op;
  if (op == layers::kQConv || op == layers::kQMatMul) {
    QuantizedInput weight = selection.inputs[1];
    std::vector<std::string> a = input_triple(graph, selection.inputs[0]);
    std::vector<std::string> b = input_triple(graph, weight);
    if (selection.transpose_weight) {
      b[0] = add_initializer(graph, weight.quantized + "_transposed", transposed_2d(*find_constant(graph, b[0])));
    }
    if (selection.weight_scale_multiplier != 1.0f) {
      Tensor scale = find_constant(graph, b[1])->clone();
      for (int64_t i = 0; i < scale.numel(); ++i) scale.data<float>()[i] *= selection.weight_scale_multiplier;
      b[1] = add_initializer(graph, weight.scale + "_alpha", std::move(scale));
    }
    std::string bias = selection.bias;
    if (!bias.empty() && find_constant(graph, bias)->rank() != 1) {
      const Tensor* constant = find_constant(graph, bias);
      bias = add_initializer(graph, bias + "_vector", constant->reshaped({constant->numel()}));
    }
    if (selection.computed_bias) bias = add_initializer(graph, main.name + "_bias", *selection.computed_bias);
    layer.inputs = {a[0], a[1], a[2], b[0], b[1], b[2], bias, output_params[0], output_params[1]};
    if (selection.residual) {
      std::vector<std::string> residual = input_triple(graph, *selection.residual);
      layer.inputs.insert(layer.inputs.end(), residual.begin(), residual.end());
    }
  } else if (op == layers::kQAdd || op == layers::kQMul) {
    std::vector<std::string> a = input_triple(graph, selection.inputs[0]);
    std::vector<std::string> b = input_triple(graph, selection.inputs[1]);
    layer.inputs = {a[0], a[1], a[2], b[0], b[1], b[2], output_params[0], output_params[1]};
  } else if (op == layers::kQConcat) {
    layer.inputs = {output_params[0], output_params[1]};
    for (const QuantizedInput& input : selection.inputs) {
      std::vector<std::string> triple = input_triple(graph, input);
      layer.inputs.insert(layer.inputs.end(), triple.begin(), triple.end());
    }
  } else {  // pools, lookup
    layer.inputs = input_triple(graph, selection.inputs[0]);
    layer.inputs.push_back(output_params[0]);
    layer.inputs.push_back(output_params[1]);
    if (op == layers::kQLookup) {
      if (selection.lookup_function != main.op_type) layer.attributes.clear();  // SiLU, erf-form Gelu
      set_string(layer, "function", selection.lookup_function);
    }
  }
  while (!layer.inputs.empty() && layer.inputs.back().empty()) layer.inputs.pop_back();
  layer.outputs = {selection.output};
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;

  // The layer takes the place of its last node; the others go.
  std::vector<int> removed = selection.targets;
  if (selection.output_q) removed.push_back(selection.output_q->q_node);
  std::sort(removed.begin(), removed.end());
  const int layer_slot = removed.back();
  removed.pop_back();
  QDQRT_ASSIGN_OR_RETURN(std::vector<int> shared, rewire_extra_quantizers(graph, selection, output_params, context));
  removed.insert(removed.end(), shared.begin(), shared.end());
  std::sort(removed.begin(), removed.end());
  graph.nodes[static_cast<size_t>(layer_slot)] = std::move(layer);
  for (auto it = removed.rbegin(); it != removed.rend(); ++it) graph.nodes.erase(graph.nodes.begin() + *it);
  // A QRequantize sits where its Q was, possibly before the layer it now reads.
  if (!selection.extra_output_qs.empty()) QDQRT_RETURN_IF_ERROR(topological_sort(graph));
  return Status::ok();
}

Status run_qdq_fusion(Graph& graph, PassContext& context, QdqSelector selector) {
  std::unordered_set<std::string> rejected;
  for (bool fused = true; fused;) {
    fused = false;
    ValueIndex index(graph);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (rejected.count(graph.nodes[n].name)) continue;
      SelectResult result = selector(graph, index, static_cast<int>(n));
      if (!result.selection) {
        if (!result.reason.empty()) context.note_float(graph.nodes[n], result.reason);
        rejected.insert(graph.nodes[n].name);
        continue;
      }
      for (const FloatReason& note : result.selection->notes) {
        if (const Node* noted = find_node(graph, note.node)) context.note_float(*noted, note.reason);
      }
      QDQRT_RETURN_IF_ERROR(apply_qdq_selection(graph, *result.selection, context));
      fused = true;
      break;
    }
  }
  remove_unused(graph);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
