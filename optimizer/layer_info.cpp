#include "optimizer/layer_info.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked_math.h"
#include "optimizer/graph_utils.h"
#include "core/ops/fused_op_table.h"

namespace qdqrt::optimizer {

namespace {

bool is_quantized_dtype(DataType dtype) { return dtype == DataType::kInt8 || dtype == DataType::kUint8; }

std::string dtype_label(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return "fp32";
    case DataType::kUint8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUint16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "fp16";
    case DataType::kDouble: return "fp64";
    case DataType::kBFloat16: return "bf16";
    case DataType::kInt4: return "int4";
    case DataType::kUint4: return "uint4";
    default: return "?";
  }
}

// For a qdqrt layer: input index of each activation -> input index of its zero-point, and the
// output's zero-point input (-1: none).
struct QuantSlots {
  std::vector<std::pair<int, int>> activations;
  int output_zero_point = -1;
};

QuantSlots quant_slots(const Node& node) {
  QuantSlots slots;
  if (const FusedOpRow* row = fused_op_row(node)) {
    for (const QuantizedInputSlot& slot : quantized_input_slots(*row, node)) {
      slots.activations.emplace_back(slot.value, slot.zero_point);
    }
    slots.output_zero_point = row->output_zero_point;
  } else if (node.domain.empty() && node.op_type == "QuantizeLinear") {
    slots.activations = {{0, -1}};
    slots.output_zero_point = 2;
  } else if (node.domain.empty() && node.op_type == "DequantizeLinear") {
    slots.activations = {{0, 2}};
  }
  return slots;
}

const Tensor* zero_point_tensor(const Graph& graph, const Node& node, int index) {
  if (index < 0 || !node.has_input(static_cast<size_t>(index))) return nullptr;
  return find_constant(graph, node.inputs[static_cast<size_t>(index)]);
}

class LayerBuilder {
 public:
  LayerBuilder(const Graph& graph, const std::map<std::string, int64_t>& symbols) : graph_(graph), symbols_(symbols) {}

  LayerTensor describe_value(const std::string& name) {
    LayerTensor tensor;
    tensor.name = name;
    if (const ValueInfo* value = graph_.find_value(name)) {
      tensor.dtype = value->dtype;
      tensor.shape = value->shape;
    } else if (const Tensor* constant = find_constant(graph_, name)) {
      tensor.dtype = constant->dtype();
      std::vector<Dim> dims;
      for (int64_t d : constant->shape()) dims.push_back(Dim{d, ""});
      tensor.shape = dims;
    }
    if (tensor.shape) {
      for (Dim& dim : *tensor.shape) {
        if (dim.is_static()) continue;
        auto bound = symbols_.find(dim.symbol);
        if (bound != symbols_.end()) dim.value = bound->second;
      }
    }
    return tensor;
  }

  // Dims for counting MACs: symbols --shapes bound are values already (describe_value); any other
  // dim that is not static is taken as 1, and remembered.
  OptionalDims counted(OptionalDims dims) {
    if (!dims) return dims;
    for (Dim& dim : *dims) {
      if (dim.is_static()) continue;
      unbound_.insert(dim.symbol.empty() ? "?" : dim.symbol);
      dim.value = 1;
    }
    return dims;
  }

  LayerInfo build(const Node& node) {
    LayerInfo layer;
    layer.node_name = node.name;
    layer.op_type = node.op_type;
    layer.domain = node.domain;
    layer.name = node.name;
    if (const Attribute* fused = node.find_attribute("fused_nodes");
        fused != nullptr && fused->kind == Attribute::Kind::kStrings && !fused->strings.empty()) {
      layer.name = fmt::format("{}", fmt::join(fused->strings, " + "));
    }

    QuantSlots slots = quant_slots(node);
    std::map<int, int> zero_point_of;
    for (auto [value, zero_point] : slots.activations) zero_point_of[value] = zero_point;
    // Q/DQ and qdqrt layers: only the data inputs (their scales and zero-points are parameters,
    // even before constant folding turns them into initializers).
    bool data_inputs_only = !slots.activations.empty();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty() || find_constant(graph_, node.inputs[i]) != nullptr) continue;
      if (data_inputs_only && !zero_point_of.count(static_cast<int>(i))) continue;
      LayerTensor tensor = describe_value(node.inputs[i]);
      if (auto it = zero_point_of.find(static_cast<int>(i)); it != zero_point_of.end()) {
        const Tensor* zero_point = zero_point_tensor(graph_, node, it->second);
        if (zero_point != nullptr) {
          if (tensor.dtype == DataType::kUndefined) tensor.dtype = zero_point->dtype();
          if (zero_point->numel() == 1) tensor.zero_point = zero_point->value_as_int64(0);
        } else if (node.domain == kQdqrtDomain && tensor.dtype == DataType::kUndefined) {
          tensor.dtype = DataType::kInt8;  // absent zero-point means 0 of int8, as in ONNX
        }
        if (tensor.dtype == DataType::kInt8 && !tensor.zero_point && zero_point == nullptr) tensor.zero_point = 0;
      }
      layer.inputs.push_back(std::move(tensor));
    }
    for (const std::string& output : node.outputs) {
      if (output.empty()) continue;
      LayerTensor tensor = describe_value(output);
      const Tensor* zero_point = zero_point_tensor(graph_, node, slots.output_zero_point);
      if (zero_point != nullptr) {
        if (tensor.dtype == DataType::kUndefined) tensor.dtype = zero_point->dtype();
        if (zero_point->numel() == 1) tensor.zero_point = zero_point->value_as_int64(0);
      } else if (node.domain == kQdqrtDomain && tensor.dtype == DataType::kUndefined) {
        tensor.dtype = DataType::kFloat;  // no y_zero_point: float output
      } else if (node.op_type == "QuantizeLinear" && slots.output_zero_point >= 0 && tensor.dtype == DataType::kUint8) {
        tensor.zero_point = 0;
      }
      layer.outputs.push_back(std::move(tensor));
    }

    layer.kind = kind_of(node);
    layer.precision = precision_of(node, layer);
    layer.macs = macs_of(node, layer);
    return layer;
  }

  std::vector<std::string> unbound_symbols() const { return {unbound_.begin(), unbound_.end()}; }

 private:
  // The shapes of the node's inputs, symbols bound.
  InputShapes input_shapes(const Node& node) {
    InputShapes shapes;
    for (const std::string& input : node.inputs) {
      shapes.push_back(input.empty() ? OptionalDims{} : describe_value(input).shape);
    }
    return shapes;
  }

  std::string kind_of(const Node& node) {
    if (const FusedOpRow* row = fused_op_row(node)) return fused_layer_kind(*row, node, input_shapes(node));
    if (node.domain.empty() && node.op_type == "Conv") {
      const Attribute* group = node.find_attribute("group");
      return conv_kind(group != nullptr && group->kind == Attribute::Kind::kInt ? group->i : 1,
                       describe_value(node.input(1)).shape);
    }
    return node.op_type;
  }

  std::string precision_of(const Node& node, const LayerInfo& layer) {
    if (node.domain == kQdqrtDomain) {
      // A fused layer with no quantized input and no output quantization computes in float (FusedConv).
      const FusedOpRow* row = fused_op_row(node);
      const bool float_layer = row != nullptr && row->quantized_inputs.empty() && row->repeated_triples_from < 0 &&
                               row->output_zero_point < 0;
      return float_layer ? "FP32" : "INT8";
    }
    if (node.domain.empty() && (node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear")) return "Q/DQ";
    DataType dtype = layer.inputs.empty() ? (layer.outputs.empty() ? DataType::kUndefined : layer.outputs[0].dtype)
                                          : layer.inputs[0].dtype;
    if (is_quantized_dtype(dtype)) return "INT8";  // e.g. MaxPool/Reshape on an int8 tensor
    if (dtype == DataType::kFloat) return "FP32";
    return dtype_label(dtype);
  }

  // A count that overflows int64 is left out (nullopt) rather than wrapped.
  std::optional<int64_t> macs_of(const Node& node, const LayerInfo& layer) {
    if (layer.outputs.empty()) return std::nullopt;
    const FusedOpRow* row = fused_op_row(node);
    const bool onnx_op = node.domain.empty();
    const bool conv = onnx_op && node.op_type == "Conv";
    const bool conv_transpose = onnx_op && node.op_type == "ConvTranspose";
    const bool matmul = onnx_op && (node.op_type == "MatMul" || node.op_type == "Gemm");
    if (row != nullptr ? row->macs == nullptr : !conv && !conv_transpose && !matmul) return std::nullopt;
    const OptionalDims y = counted(layer.outputs[0].shape);
    if (!y) return std::nullopt;
    InputShapes inputs = input_shapes(node);
    for (OptionalDims& dims : inputs) dims = counted(std::move(dims));
    if (row != nullptr) return row->macs(node, inputs, *y);
    if (conv) return conv_macs(input_dims(inputs, 1), *y);
    if (conv_transpose) {
      // Weight [C_in, C_out / group, k...]: every input element feeds C_out / group * k... outputs.
      const std::optional<int64_t> x_elements = static_numel(input_dims(inputs, 0));
      const std::optional<int64_t> per_input = conv_macs_per_output(input_dims(inputs, 1));
      return x_elements && per_input ? checked_mul(*x_elements, *per_input) : std::nullopt;
    }
    // Gemm with transA reads K from A's first dim.
    const Attribute* trans_a = node.find_attribute("transA");
    if (node.op_type == "Gemm" && trans_a != nullptr && trans_a->kind == Attribute::Kind::kInt && trans_a->i != 0) {
      const OptionalDims a = input_dims(inputs, 0);
      const std::optional<int64_t> y_elements = static_numel(y);
      if (!a || a->size() != 2 || !y_elements) return std::nullopt;
      return checked_mul(*y_elements, (*a)[0].value);
    }
    return matmul_macs(input_dims(inputs, 0), *y);
  }

  const Graph& graph_;
  const std::map<std::string, int64_t>& symbols_;
  std::set<std::string> unbound_;
};

// A reason for a float layer or a Q/DQ node that no pass recorded, read off its neighbours; ""
// when none applies. `precisions` holds each node's precision ("FP32", "INT8", "Q/DQ", ...).
std::string derived_reason(const Graph& graph, const ValueIndex& index, const std::vector<std::string>& precisions,
                           size_t node_index) {
  const Node& node = graph.nodes[node_index];
  auto describe = [&](int other) { return graph.nodes[static_cast<size_t>(other)].describe(); };
  auto is_graph_input = [&](const std::string& value) {
    return std::find(graph.inputs.begin(), graph.inputs.end(), value) != graph.inputs.end();
  };
  auto is_qdq = [&](int other, const char* op_type) {
    return other >= 0 && graph.nodes[static_cast<size_t>(other)].domain.empty() &&
           graph.nodes[static_cast<size_t>(other)].op_type == op_type;
  };
  auto is_float_layer = [&](int other) { return other >= 0 && precisions[static_cast<size_t>(other)] == "FP32"; };
  if (node.domain.empty() && node.op_type == "QuantizeLinear") {
    const std::string& x = node.input(0);
    if (is_graph_input(x)) return fmt::format("quantizes graph input '{}'", x);
    const int producer = index.producer(x);
    if (is_float_layer(producer)) return fmt::format("quantizes the output of float {}", describe(producer));
    // An INT8 layer writes float when another layer reads its output as float too: a float layer,
    // or a fused layer with a float input (AddQuantize's residual operands).
    const ValueInfo* value = graph.find_value(x);
    if (producer >= 0 && value != nullptr && value->dtype == DataType::kFloat) {
      for (int reader : index.consumers(x)) {
        if (is_float_layer(reader)) {
          return fmt::format("quantizes the float output of {}, which float {} also reads", describe(producer),
                             describe(reader));
        }
      }
      for (int reader : index.consumers(x)) {
        if (!is_qdq(reader, "QuantizeLinear")) {
          return fmt::format("quantizes the float output of {}, which {} also reads as float", describe(producer),
                             describe(reader));
        }
      }
    }
    return "";
  }
  if (node.domain.empty() && node.op_type == "DequantizeLinear") {
    if (node.outputs.empty()) return "";
    const std::string& y = node.outputs[0];
    const std::vector<int>& readers = index.consumers(y);
    for (int reader : readers) {
      if (!is_float_layer(reader)) return "";
    }
    if (index.is_graph_output(y)) return fmt::format("dequantizes graph output '{}'", y);
    if (readers.empty()) return "";
    return fmt::format("dequantizes for float {}", describe(readers[0]));
  }
  bool dequantized_input = false;
  for (const std::string& input : node.inputs) {
    if (!input.empty() && is_qdq(index.producer(input), "DequantizeLinear")) dequantized_input = true;
  }
  bool quantized_output = false;
  for (const std::string& output : node.outputs) {
    if (output.empty()) continue;
    for (int reader : index.consumers(output)) quantized_output = quantized_output || is_qdq(reader, "QuantizeLinear");
  }
  if (!dequantized_input && !quantized_output) {
    return "not quantized in the model (no DequantizeLinear before it, no QuantizeLinear after it)";
  }
  if (!dequantized_input) return "its input is float (the model quantizes only its output)";
  if (!quantized_output) return "its output is not quantized (no QuantizeLinear follows): float on the dequantized input";
  // The ops some fusion turns into an INT8 layer: anything else between a DQ and a Q has no INT8
  // layer; one of these that stayed float without a recorded reason is unexplained.
  static const std::set<std::string> fused_op_types = {
      "Conv",    "MatMul",    "Gemm",        "Add",  "Mul", "GlobalAveragePool", "AveragePool", "MaxPool", "Concat",
      "Sigmoid", "Tanh",      "HardSwish",   "Gelu", "Div", "HardSigmoid",       "Relu",        "Clip",    "Max",
      "Min",     "LeakyRelu"};
  if (node.domain.empty() && !fused_op_types.count(node.op_type)) {
    return fmt::format("no INT8 layer for {} (runs in float between DequantizeLinear and QuantizeLinear)", node.op_type);
  }
  return "";  // DQ -> op -> Q that no fusion took or explained
}

}  // namespace

double LayerSummary::int8_mac_share() const {
  int64_t total = saturating_add(int8_macs, float_macs);
  return total == 0 ? 1.0 : static_cast<double>(int8_macs) / static_cast<double>(total);
}

std::string format_float_reason(const FloatReason& reason) {
  return fmt::format("{} '{}': {}", reason.op_type, reason.node, reason.reason);
}

LayerReport compute_layer_info(const Graph& graph, const std::vector<FloatReason>& float_reasons,
                               const std::map<std::string, int64_t>& symbol_values) {
  LayerReport report;
  LayerBuilder builder(graph, symbol_values);
  ValueIndex index(graph);
  auto is_qdqrt_layer = [&](int node_index) {
    return node_index >= 0 && graph.nodes[static_cast<size_t>(node_index)].domain == kQdqrtDomain;
  };
  auto is_op = [&](int node_index, const char* op_type) {
    return node_index >= 0 && graph.nodes[static_cast<size_t>(node_index)].domain.empty() &&
           graph.nodes[static_cast<size_t>(node_index)].op_type == op_type;
  };

  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    LayerInfo layer = builder.build(node);
    LayerSummary& summary = report.summary;
    summary.layers_per_precision[layer.precision]++;
    if (layer.macs) {
      int64_t& total = layer.precision == "INT8" ? summary.int8_macs : summary.float_macs;
      total = saturating_add(total, *layer.macs);
    }
    if (node.domain.empty() && node.op_type == "DequantizeLinear") {
      summary.dequantize_nodes++;
      bool inside = false;
      for (const std::string& output : node.outputs) {
        for (int consumer : index.consumers(output)) {
          if (is_op(consumer, "QuantizeLinear") || is_qdqrt_layer(consumer)) inside = true;
        }
      }
      if (inside) summary.qdq_inside_int8.push_back(layer.name);
    } else if (node.domain.empty() && node.op_type == "QuantizeLinear") {
      summary.quantize_nodes++;
      int producer = index.producer(node.input(0));
      // An INT8 layer whose output a float layer reads too writes float: its Q is a border.
      bool float_reader = false;
      for (int reader : index.consumers(node.input(0))) {
        const Node& other = graph.nodes[static_cast<size_t>(reader)];
        float_reader = float_reader || (other.domain.empty() && other.op_type != "QuantizeLinear" &&
                                        other.op_type != "DequantizeLinear");
      }
      if (is_op(producer, "DequantizeLinear") || (is_qdqrt_layer(producer) && !float_reader)) {
        summary.qdq_inside_int8.push_back(layer.name);
      }
    }
    report.layers.push_back(std::move(layer));
  }
  report.summary.unbound_symbols = builder.unbound_symbols();

  // Every float layer and every Q/DQ left gets a reason: the one a pass recorded, else one read off
  // the graph, else it is listed as unexplained.
  LayerSummary& summary = report.summary;
  std::vector<std::string> precisions;
  std::map<std::string, size_t> node_of;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    precisions.push_back(report.layers[i].precision);
    node_of.emplace(graph.nodes[i].name, i);
  }
  std::set<std::string> recorded;
  for (const FloatReason& reason : float_reasons) {
    auto it = node_of.find(reason.node);
    const bool qdq = it != node_of.end() && precisions[it->second] == "Q/DQ";
    recorded.insert(reason.node);
    (qdq ? summary.qdq_reasons : summary.float_reasons).push_back(reason);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const bool qdq = precisions[i] == "Q/DQ";
    if (!qdq && precisions[i] != "FP32") continue;
    if (!qdq) ++summary.float_layers;
    std::string reason = recorded.count(node.name) ? "" : derived_reason(graph, index, precisions, i);
    if (!recorded.count(node.name) && reason.empty()) {
      summary.unexplained.push_back(fmt::format("{} '{}'", node.op_type, node.name));
      continue;
    }
    (qdq ? summary.explained_qdq_nodes : summary.explained_float_layers)++;
    if (!reason.empty()) {
      (qdq ? summary.qdq_reasons : summary.float_reasons).push_back({node.name, node.op_type, std::move(reason)});
    }
  }
  return report;
}

std::string format_layer_summary(const LayerReport& report) {
  const LayerSummary& summary = report.summary;
  std::string text = "=== Layer summary ===\n";
  text += fmt::format("Layers: {}\n", report.layers.size());
  for (const auto& [precision, count] : summary.layers_per_precision) {
    text += fmt::format("  {}: {}\n", precision, count);
  }
  text += fmt::format("Conv/MatMul MACs in INT8: {:.1f}% ({} of {})\n", 100.0 * summary.int8_mac_share(),
                      summary.int8_macs, saturating_add(summary.int8_macs, summary.float_macs));
  if (!summary.unbound_symbols.empty()) {
    text += fmt::format("  (symbolic dims {} taken as 1; set them with --shapes)\n", fmt::join(summary.unbound_symbols, ", "));
  }
  text += fmt::format("Q/DQ nodes left: {} QuantizeLinear, {} DequantizeLinear; inside INT8 regions: {}\n",
                      summary.quantize_nodes, summary.dequantize_nodes, summary.qdq_inside_int8.size());
  for (const std::string& name : summary.qdq_inside_int8) text += fmt::format("  inside: {}\n", name);
  text += fmt::format("Float layers with a reason: {} of {}\n", summary.explained_float_layers, summary.float_layers);
  for (const FloatReason& reason : summary.float_reasons) text += fmt::format("  {}\n", format_float_reason(reason));
  text += fmt::format("Q/DQ nodes with a reason: {} of {}\n", summary.explained_qdq_nodes,
                      summary.quantize_nodes + summary.dequantize_nodes);
  for (const FloatReason& reason : summary.qdq_reasons) text += fmt::format("  {}\n", format_float_reason(reason));
  text += fmt::format("Unexplained: {}\n", summary.unexplained.size());
  for (const std::string& name : summary.unexplained) text += fmt::format("  {}\n", name);
  return text;
}

Result<std::map<std::string, int64_t>> bind_input_symbols(const Graph& graph,
                                                          const std::map<std::string, Shape>& input_shapes) {
  std::map<std::string, int64_t> symbols;
  for (const auto& [name, shape] : input_shapes) {
    if (std::find(graph.inputs.begin(), graph.inputs.end(), name) == graph.inputs.end()) {
      return invalid_argument("--shapes: the model has no input '{}' (inputs: {})", name, fmt::join(graph.inputs, ", "));
    }
    const ValueInfo* value = graph.find_value(name);
    if (value == nullptr || !value->shape) continue;  // rank unknown: nothing to bind
    if (value->shape->size() != shape.size()) {
      return invalid_argument("--shapes: input '{}' has rank {} {} in the model, got {}", name, value->shape->size(),
                              dims_to_string(*value->shape), shape_to_string(shape));
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      const Dim& dim = (*value->shape)[i];
      if (dim.is_static() && dim.value != shape[i]) {
        return invalid_argument("--shapes: input '{}' has static dim {} = {} in the model, got {}", name, i, dim.value,
                                shape[i]);
      }
      if (!dim.is_static() && !dim.symbol.empty()) {
        auto [it, inserted] = symbols.emplace(dim.symbol, shape[i]);
        if (!inserted && it->second != shape[i]) {
          return invalid_argument("--shapes: symbol '{}' is {} in one input and {} in '{}'", dim.symbol, it->second,
                                  shape[i], name);
        }
      }
    }
  }
  return symbols;
}

}  // namespace qdqrt::optimizer
