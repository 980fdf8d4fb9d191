#include "tools/calibration/qdq_insertion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_set>

#include "core/attribute_values.h"
#include "core/op_registry.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::calibration {
namespace {

using optimizer::ValueIndex;

constexpr int64_t kMinimumOpset = 13;  // per-axis QuantizeLinear/DequantizeLinear

bool is_default_domain(const Node& node) { return node.domain.empty() || node.domain == "ai.onnx"; }

class Planner {
 public:
  Planner(const Graph& graph, Placement placement) : graph_(graph), index_(graph), placement_(placement) {}

  QuantizationPlan run() {
    for (size_t n = 0; n < graph_.nodes.size(); ++n) plan_weighted(n);
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const Node& node = graph_.nodes[n];
      if (!is_default_domain(node)) continue;
      if (node.op_type == "Add" && placement_ == Placement::kTensorRT) plan_residual_add(n);
      if (placement_ == Placement::kAll) plan_all(n);
    }
    for (const auto& [output, input] : ties_) tie(output, input);
    QuantizationPlan plan;
    for (const std::string& tensor : activation_order_) {
      ActivationQuantization& activation = activations_.at(tensor);
      if (!activation.readers.empty()) plan.activations.push_back(activation);
    }
    for (const auto& key : weight_order_) plan.weights.push_back(weights_.at(key));
    return plan;
  }

 private:
  bool is_constant(const std::string& name) const { return graph_.find_initializer(name) != nullptr; }
  bool is_activation(const Node& node, size_t slot) const {
    return node.has_input(slot) && !is_constant(node.input(slot));
  }
  bool is_op(int index, const char* op_type) const {
    return index >= 0 && is_default_domain(graph_.nodes[static_cast<size_t>(index)]) &&
           graph_.nodes[static_cast<size_t>(index)].op_type == op_type;
  }

  void quantize_activation(size_t node, size_t slot) {
    const std::string& tensor = graph_.nodes[node].input(slot);
    auto it = activations_.find(tensor);
    if (it == activations_.end()) {
      it = activations_.emplace(tensor, ActivationQuantization{tensor, {}, ""}).first;
      activation_order_.push_back(tensor);
    }
    for (const QuantizedInput& reader : it->second.readers) {
      if (reader.node == node && reader.input == slot) return;
    }
    it->second.readers.push_back({node, slot});
  }

  void quantize_weight(size_t node, size_t slot, int64_t axis) {
    auto key = std::make_pair(graph_.nodes[node].input(slot), axis);
    auto it = weights_.find(key);
    if (it == weights_.end()) {
      it = weights_.emplace(key, WeightQuantization{key.first, axis, {}}).first;
      weight_order_.push_back(key);
    }
    it->second.readers.push_back({node, slot});
  }

  // Conv / MatMul / Gemm: per-tensor input, per-output-channel constant weight.
  void plan_weighted(size_t n) {
    const Node& node = graph_.nodes[n];
    if (!is_default_domain(node) || !is_activation(node, 0) || !node.has_input(1)) return;
    const Tensor* weight = graph_.find_initializer(node.input(1));
    if (node.op_type == "Conv") {
      if (weight == nullptr || weight->rank() < 3) return;
      quantize_weight(n, 1, 0);
    } else if (node.op_type == "MatMul") {
      if (weight == nullptr) quantize_activation(n, 1);  // activation x activation (attention)
      else if (weight->rank() >= 2) quantize_weight(n, 1, weight->rank() - 1);  // [.., K, N]: per column
      else return;
    } else if (node.op_type == "Gemm") {
      const Attribute* trans_b = node.find_attribute("transB");
      if (weight == nullptr) quantize_activation(n, 1);
      else if (weight->rank() == 2) quantize_weight(n, 1, trans_b != nullptr && trans_b->i != 0 ? 0 : 1);
      else return;
    } else {
      return;
    }
    quantize_activation(n, 0);
    weighted_.insert(n);
  }

  // The Add input comes straight from a quantized Conv/MatMul/Gemm (optionally through a
  // BatchNormalization) that reads nothing else: the optimizer fuses the Add into that layer.
  bool fed_by_weighted_layer(const std::string& value) const {
    if (!index_.has_single_use(value)) return false;
    int producer = index_.producer(value);
    if (is_op(producer, "BatchNormalization")) {
      const std::string& conv_output = graph_.nodes[static_cast<size_t>(producer)].input(0);
      if (!index_.has_single_use(conv_output)) return false;
      producer = index_.producer(conv_output);
    }
    return producer >= 0 && weighted_.count(static_cast<size_t>(producer)) != 0;
  }

  bool same_shape_inputs(const Node& node) const {
    const ValueInfo* a = graph_.find_value(node.input(0));
    const ValueInfo* b = graph_.find_value(node.input(1));
    if (a == nullptr || b == nullptr) return true;
    auto shape_a = a->static_shape();
    auto shape_b = b->static_shape();
    if (shape_a && shape_b) return *shape_a == *shape_b;
    if (a->shape && b->shape) return a->shape->size() == b->shape->size();
    return true;
  }

  // pytorch-quantization's residual quantizer: the identity branch of a ResNet Add.
  void plan_residual_add(size_t n) {
    const Node& node = graph_.nodes[n];
    if (node.inputs.size() != 2 || !is_activation(node, 0) || !is_activation(node, 1) || !same_shape_inputs(node)) return;
    if (fed_by_weighted_layer(node.input(0))) quantize_activation(n, 1);
    else if (fed_by_weighted_layer(node.input(1))) quantize_activation(n, 0);
  }

  void plan_all(size_t n) {
    const Node& node = graph_.nodes[n];
    const std::string& op = node.op_type;
    if (op == "Add" || op == "Mul") {
      if (node.inputs.size() != 2 || !is_activation(node, 0) || !is_activation(node, 1)) return;
      if (op == "Mul") {
        // x * Sigmoid(x) (SiLU): x is quantized for both readers and the Sigmoid output stays float,
        // the optimizer's "DQ(x) -> Sigmoid -> Mul(x)" lookup pattern.
        std::optional<size_t> x_side = silu_input_side(node);
        if (x_side) {
          quantize_activation(n, *x_side);
          return;
        }
      }
      quantize_activation(n, 0);
      quantize_activation(n, 1);
    } else if (op == "Concat") {
      for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
        if (is_activation(node, slot)) quantize_activation(n, slot);
      }
    } else if (op == "GlobalAveragePool" || op == "AveragePool" || op == "Sigmoid" || op == "Tanh" ||
               op == "HardSwish" || op == "HardSigmoid" || op == "Gelu") {
      if (is_activation(node, 0)) quantize_activation(n, 0);
    } else if (op == "MaxPool") {
      if (!is_activation(node, 0) || node.outputs.size() != 1) return;  // the Indices output stays float
      quantize_activation(n, 0);
      ties_.emplace_back(node.outputs[0], node.input(0));
    }
  }

  // The slot of x when `mul` is x * Sigmoid(x).
  std::optional<size_t> silu_input_side(const Node& mul) const {
    for (size_t side = 0; side < 2; ++side) {
      int producer = index_.producer(mul.input(side));
      if (is_op(producer, "Sigmoid") && graph_.nodes[static_cast<size_t>(producer)].input(0) == mul.input(1 - side)) {
        return 1 - side;
      }
    }
    return std::nullopt;
  }

  // Every reader of a MaxPool output sees it quantized with the input's scale.
  void tie(const std::string& output, const std::string& input) {
    auto it = activations_.find(output);
    if (it == activations_.end()) {
      it = activations_.emplace(output, ActivationQuantization{output, {}, input}).first;
      activation_order_.push_back(output);
    }
    it->second.amax_from = input;
    it->second.readers.clear();
    std::set<std::pair<size_t, size_t>> seen;
    for (int consumer : index_.consumers(output)) {
      const Node& node = graph_.nodes[static_cast<size_t>(consumer)];
      for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
        if (node.inputs[slot] == output && seen.emplace(consumer, slot).second) {
          it->second.readers.push_back({static_cast<size_t>(consumer), slot});
        }
      }
    }
  }

  const Graph& graph_;
  ValueIndex index_;
  Placement placement_;
  std::set<size_t> weighted_;
  std::map<std::string, ActivationQuantization> activations_;
  std::vector<std::string> activation_order_;
  std::map<std::pair<std::string, int64_t>, WeightQuantization> weights_;
  std::vector<std::pair<std::string, int64_t>> weight_order_;
  std::vector<std::pair<std::string, std::string>> ties_;
};

// Names not used by any value, initializer or node of the graph.
class NameAllocator {
 public:
  explicit NameAllocator(const Graph& graph) {
    for (const auto& [name, info] : graph.values) used_.insert(name);
    for (const auto& [name, tensor] : graph.initializers) used_.insert(name);
    for (const Node& node : graph.nodes) {
      used_.insert(node.name);
      used_.insert(node.inputs.begin(), node.inputs.end());
      used_.insert(node.outputs.begin(), node.outputs.end());
    }
  }
  std::string make(const std::string& base) {
    std::string name = base;
    for (int suffix = 1; used_.count(name) != 0; ++suffix) name = base + "_" + std::to_string(suffix);
    used_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> used_;
};

std::vector<Dim> dims_of(const Shape& shape) {
  std::vector<Dim> dims;
  for (int64_t value : shape) dims.push_back(Dim{value, ""});
  return dims;
}

}  // namespace

Result<Placement> parse_placement(const std::string& text) {
  if (text == "tensorrt") return Placement::kTensorRT;
  if (text == "all") return Placement::kAll;
  return invalid_argument("--placement: unknown placement '{}' (tensorrt, all)", text);
}

const char* placement_name(Placement placement) { return placement == Placement::kAll ? "all" : "tensorrt"; }

Status exclude_nodes(QuantizationPlan& plan, const Graph& graph, const std::vector<std::string>& names) {
  std::set<size_t> excluded;
  for (const std::string& name : names) {
    auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const Node& node) { return node.name == name; });
    if (it == graph.nodes.end()) {
      std::string closest;
      size_t best = std::string::npos;
      for (const Node& node : graph.nodes) {
        // Closest by shared prefix, then by length: node names are paths ("/blocks/blocks.1/conv1/Conv").
        size_t common = 0;
        while (common < name.size() && common < node.name.size() && name[common] == node.name[common]) ++common;
        size_t distance = name.size() + node.name.size() - 2 * common;
        if (distance < best) best = distance, closest = node.name;
      }
      return invalid_argument("no node named '{}' in the model{}", name,
                              closest.empty() ? std::string() : fmt::format(" (closest: '{}')", closest));
    }
    excluded.insert(static_cast<size_t>(it - graph.nodes.begin()));
  }
  auto drop_excluded = [&](std::vector<QuantizedInput>& readers) {
    std::erase_if(readers, [&](const QuantizedInput& reader) { return excluded.count(reader.node) > 0; });
  };
  std::set<std::string> dropped;
  for (ActivationQuantization& activation : plan.activations) {
    drop_excluded(activation.readers);
    if (activation.readers.empty()) dropped.insert(activation.tensor);
  }
  std::erase_if(plan.activations, [](const ActivationQuantization& activation) { return activation.readers.empty(); });
  for (ActivationQuantization& activation : plan.activations) {
    if (dropped.count(activation.amax_from)) activation.amax_from.clear();
  }
  for (WeightQuantization& weight : plan.weights) drop_excluded(weight.readers);
  std::erase_if(plan.weights, [](const WeightQuantization& weight) { return weight.readers.empty(); });
  return Status::ok();
}

std::vector<std::string> QuantizationPlan::tensors_to_calibrate() const {
  std::vector<std::string> tensors;
  for (const ActivationQuantization& activation : activations) {
    if (activation.amax_from.empty()) tensors.push_back(activation.tensor);
  }
  return tensors;
}

float scale_for_amax(float amax) { return (amax > 0.0f && std::isfinite(amax) ? amax : 1.0f) / 127.0f; }

Result<std::vector<float>> per_channel_amax(const Tensor& weight, int64_t axis) {
  if (weight.dtype() != DataType::kFloat) {
    return unsupported("weight quantization needs float32 weights, got {}", dtype_name(weight.dtype()));
  }
  if (axis < 0 || axis >= weight.rank()) {
    return invalid_argument("axis {} is out of range for a weight of shape {}", axis, shape_to_string(weight.shape()));
  }
  const int64_t channels = weight.dim(axis);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < weight.rank(); ++d) inner *= weight.dim(d);
  std::vector<float> amax(static_cast<size_t>(channels), 0.0f);
  const float* data = weight.data<float>();
  for (int64_t i = 0; i < weight.numel(); ++i) {
    size_t channel = static_cast<size_t>((i / inner) % channels);
    amax[channel] = std::max(amax[channel], std::fabs(data[i]));
  }
  return amax;
}

Result<QuantizationPlan> plan_quantization(const Graph& graph, Placement placement) {
  const int64_t opset = graph.opset(kOnnxDomain);
  if (opset < kMinimumOpset) {
    return unsupported("the model imports ONNX opset {}; per-channel QuantizeLinear needs opset >= {} "
                       "(re-export the FP32 model with opset 13 or newer)",
                       opset, kMinimumOpset);
  }
  for (const Node& node : graph.nodes) {
    if (node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear" || node.domain == kQdqrtDomain) {
      return invalid_argument("{}: the model is already quantized; calibrate needs the FP32 model", node.describe());
    }
  }
  QuantizationPlan plan = Planner(graph, placement).run();
  if (plan.activations.empty() && plan.weights.empty()) {
    return invalid_argument("placement '{}' finds nothing to quantize in the model (no Conv/MatMul/Gemm with "
                            "constant weights)",
                            placement_name(placement));
  }
  return plan;
}

Result<Graph> insert_qdq(const Graph& graph, const QuantizationPlan& plan, const std::map<std::string, float>& amax,
                         const InsertOptions& options) {
  if (options.activation_dtype != DataType::kInt8 && options.activation_dtype != DataType::kUint8) {
    return invalid_argument("activations quantize to int8 or uint8, not {}", dtype_name(options.activation_dtype));
  }
  Graph result = graph;
  NameAllocator names(graph);
  const int64_t opset = graph.opset(kOnnxDomain);

  Status attribute_failure = Status::ok();  // from make_pair; checked before returning
  // One QuantizeLinear -> DequantizeLinear pair; returns the DequantizeLinear's output.
  auto make_pair = [&](const std::string& source, const Tensor& scale, const std::optional<int64_t>& axis,
                       const std::optional<std::vector<Dim>>& shape, std::vector<Node>& out,
                       DataType dtype = DataType::kInt8) {
    std::string scale_name = names.make(source + "_scale");
    std::string zero_name = names.make(source + "_zero_point");
    std::string quantized = names.make(source + "_quantized");
    std::string dequantized = names.make(source + "_dequantized");
    result.initializers[scale_name] = scale;
    Tensor zero_point(dtype, scale.shape());
    if (dtype == DataType::kUint8) {  // symmetric uint8: the int8 grid shifted by 128
      for (int64_t i = 0; i < zero_point.numel(); ++i) zero_point.data<uint8_t>()[i] = 128;
    }
    result.initializers[zero_name] = zero_point;
    result.values[scale_name] = ValueInfo{scale_name, DataType::kFloat, dims_of(scale.shape())};
    result.values[zero_name] = ValueInfo{zero_name, dtype, dims_of(scale.shape())};
    result.values[quantized] = ValueInfo{quantized, dtype, shape};
    result.values[dequantized] = ValueInfo{dequantized, DataType::kFloat, shape};
    for (const char* op : {"QuantizeLinear", "DequantizeLinear"}) {
      Node node;
      node.op_type = op;
      node.opset = opset;
      bool quantize = node.op_type == "QuantizeLinear";
      node.name = names.make(source + (quantize ? "_QuantizeLinear" : "_DequantizeLinear"));
      node.inputs = {quantize ? source : quantized, scale_name, zero_name};
      node.outputs = {quantize ? quantized : dequantized};
      if (axis) node.attributes["axis"] = int_attribute(*axis);
      // The typed attributes the loader would attach, so the optimizer can run on this graph
      // without a round trip through a file (its passes read node.attrs<...>()).
      const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
      if (schema != nullptr && schema->parse_attributes != nullptr) {
        auto typed = schema->parse_attributes(node);
        if (typed.ok()) {
          node.typed_attributes = std::move(typed).value();
        } else if (attribute_failure.is_ok()) {
          attribute_failure = typed.status();
        }
      }
      out.push_back(std::move(node));
    }
    return dequantized;
  };

  std::vector<Node> prologue;                     // weight and graph-input pairs
  std::map<std::string, std::vector<Node>> after;  // value -> pairs placed after its producer
  std::vector<Node> nodes = graph.nodes;

  for (const WeightQuantization& weight : plan.weights) {
    const Tensor* tensor = graph.find_initializer(weight.weight);
    if (tensor == nullptr) return internal_error("weight '{}' is not an initializer", weight.weight);
    auto channel_amax = per_channel_amax(*tensor, weight.axis);
    if (!channel_amax.ok()) return channel_amax.status().with_context("weight '" + weight.weight + "'");
    std::string dequantized;
    if (options.per_channel_weights) {
      std::vector<float> scales;
      for (float value : *channel_amax) scales.push_back(scale_for_amax(value));
      Tensor scale = Tensor::from_vector<float>({static_cast<int64_t>(scales.size())}, scales);
      dequantized = make_pair(weight.weight, scale, weight.axis, dims_of(tensor->shape()), prologue);
    } else {
      float tensor_amax = 0.0f;
      for (float value : *channel_amax) tensor_amax = std::max(tensor_amax, value);
      dequantized = make_pair(weight.weight, Tensor::scalar<float>(scale_for_amax(tensor_amax)), std::nullopt,
                              dims_of(tensor->shape()), prologue);
    }
    for (const QuantizedInput& reader : weight.readers) nodes[reader.node].inputs[reader.input] = dequantized;
  }

  std::unordered_set<std::string> graph_inputs(graph.inputs.begin(), graph.inputs.end());
  for (const ActivationQuantization& activation : plan.activations) {
    const std::string& source = activation.amax_from.empty() ? activation.tensor : activation.amax_from;
    auto it = amax.find(source);
    if (it == amax.end()) return invalid_argument("no calibrated range for tensor '{}'", source);
    const ValueInfo* info = graph.find_value(activation.tensor);
    std::optional<std::vector<Dim>> shape = info != nullptr ? info->shape : std::nullopt;
    std::vector<Node>& out = graph_inputs.count(activation.tensor) ? prologue : after[activation.tensor];
    std::string dequantized = make_pair(activation.tensor, Tensor::scalar<float>(scale_for_amax(it->second)),
                                        std::nullopt, shape, out, options.activation_dtype);
    for (const QuantizedInput& reader : activation.readers) nodes[reader.node].inputs[reader.input] = dequantized;
  }

  result.nodes = std::move(prologue);
  for (Node& node : nodes) {
    std::vector<std::string> outputs = node.outputs;
    result.nodes.push_back(std::move(node));
    for (const std::string& output : outputs) {
      auto it = after.find(output);
      if (it == after.end()) continue;
      for (Node& pair_node : it->second) result.nodes.push_back(std::move(pair_node));
      after.erase(it);
    }
  }
  if (!after.empty()) {
    return invalid_argument("tensor '{}' to quantize has no producer in the graph", after.begin()->first);
  }
  QDQRT_RETURN_IF_ERROR(attribute_failure);
  return result;
}

}  // namespace qdqrt::calibration
