#include "engine/batch_tracking.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>

#include "core/ops/fused_layers.h"
#include "core/ops/fused_op_table.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "reference/executor.h"

namespace qdqrt::engine {

namespace {

std::optional<Shape> static_shape_in(const Graph& graph, const std::string& value) {
  if (value.empty()) return std::nullopt;
  if (const Tensor* constant = graph.find_initializer(value)) return constant->shape();
  const ValueInfo* info = graph.find_value(value);
  return info ? info->static_shape() : std::nullopt;
}

// The output shape of a qdqrt-domain fused layer in `probe`, from its row's shape function on its
// inputs' static shapes there.
std::optional<Shape> fused_layer_shape(const Node& node, const Graph& probe) {
  const FusedOpRow* row = fused_op_row(node);
  if (row == nullptr) return std::nullopt;
  InputShapes inputs;
  for (const std::string& input : node.inputs) {
    std::optional<Shape> shape = static_shape_in(probe, input);
    if (!shape) {
      inputs.emplace_back();
      continue;
    }
    Dims dims;
    for (int64_t dim : *shape) dims.push_back(Dim{.value = dim, .symbol = {}});
    inputs.emplace_back(std::move(dims));
  }
  OptionalDims dims = row->output_shape(node, inputs);
  if (!dims) return std::nullopt;
  Shape shape;
  for (const Dim& dim : *dims) {
    if (!dim.is_static()) return std::nullopt;
    shape.push_back(dim.value);
  }
  return shape;
}

// Output shapes of a node ONNX's shape inference does not know (an op newer than libonnx), from
// its reference kernel run on zeros at the inputs' shapes in `probe`. Empty when that fails.
std::vector<std::optional<Shape>> kernel_output_shapes(const Node& node, const Graph& probe) try {
  constexpr int64_t kMaxProbeElements = int64_t{1} << 24;
  std::vector<Tensor> runtime;
  runtime.reserve(node.inputs.size());
  std::vector<const Tensor*> inputs;
  for (const std::string& input : node.inputs) {
    if (input.empty()) {
      inputs.push_back(nullptr);
    } else if (const Tensor* constant = probe.find_initializer(input)) {
      inputs.push_back(constant);
    } else {
      const ValueInfo* info = probe.find_value(input);
      std::optional<Shape> shape = info ? info->static_shape() : std::nullopt;
      if (!shape || info->dtype == DataType::kUndefined) return {};
      int64_t count = 1;
      for (int64_t dim : *shape) count *= dim;
      if (count > kMaxProbeElements) return {};
      runtime.emplace_back(info->dtype, *shape);  // zero-filled
      inputs.push_back(&runtime.back());
    }
  }
  Result<std::vector<Tensor>> outputs = run_reference_node(node, inputs);
  if (!outputs.ok()) return {};
  std::vector<std::optional<Shape>> shapes;
  for (const Tensor& output : *outputs) shapes.push_back(output.shape());
  return shapes;
} catch (const std::exception&) {
  return {};
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

}  // namespace

BatchTracker::BatchTracker(const Graph& at_max, int64_t max_batch, const BatchProbe& probe)
    : at_max_(at_max), max_batch_(max_batch), probe_(probe) {
  if (!probe_.graph) return;
  for (const auto& [name, tensor] : at_max_.initializers) {
    const Tensor* other = probe_.graph->find_initializer(name);
    if (other == nullptr || !same_tensor(tensor, *other)) batch_constants_.insert(name);
  }
  // A Reshape to a constant shape with the batch in it ([4, 64, 64]) keeps its output shape at the
  // probe batch: its element counts tell.
  for (const Node& node : probe_.graph->nodes) {
    if (!node.domain.empty() || node.outputs.empty() ||
        (node.op_type != "Reshape" && node.op_type != "Flatten" && node.op_type != "Squeeze" &&
         node.op_type != "Unsqueeze")) {
      continue;
    }
    std::optional<Shape> input = static_shape_in(*probe_.graph, node.input(0));
    std::optional<Shape> output = static_shape_in(*probe_.graph, node.outputs[0]);
    if (input && output && shape_numel(*input) != shape_numel(*output)) {
      broken_at_probe_[node.outputs[0]] =
          fmt::format("the model does not build at batch {}: {} cannot make {} into {} (a target shape that does "
                      "not follow the batch)",
                      probe_.batch, node.describe(), shape_to_string(*input), shape_to_string(*output));
    }
  }
}

Result<BatchLayout> BatchTracker::layout_of(const std::string& value) const {
  if (probe_.batch == 0) return BatchLayout{};
  if (!probe_.graph) return invalid_model("the model does not build at batch {}: {}", probe_.batch, probe_.failure);
  if (auto broken = broken_at_probe_.find(value); broken != broken_at_probe_.end()) {
    return invalid_model("{}", broken->second);
  }
  const ValueInfo* info = at_max_.find_value(value);
  const ValueInfo* probed = probe_.graph->find_value(value);
  std::optional<Shape> shape = info ? info->static_shape() : std::nullopt;
  std::optional<Shape> probed_shape = probed ? probed->static_shape() : std::nullopt;
  if (!shape || !probed_shape) {
    return invalid_model("'{}' has no static shape when the model is built at batch {}", value, probe_.batch);
  }
  auto mismatch = [&](const std::string& why) {
    return invalid_model("the batch dim of '{}' cannot be tracked: shape {} at batch {}, {} at batch {} ({})", value,
                         shape_to_string(*shape), max_batch_, shape_to_string(*probed_shape), probe_.batch, why);
  };
  if (shape->size() != probed_shape->size()) return mismatch("the rank changes");
  BatchLayout layout;
  for (size_t axis = 0; axis < shape->size(); ++axis) {
    const int64_t at_max = (*shape)[axis], at_probe = (*probed_shape)[axis];
    if (at_max == at_probe) continue;
    if (layout.batched) return mismatch("two dims change with the batch");
    const int64_t factor = at_max / max_batch_;
    if (factor < 1 || at_max != factor * max_batch_ || at_probe != factor * probe_.batch) {
      return mismatch(fmt::format("dim {} is not a multiple of the batch", axis));
    }
    layout = {.batched = true, .axis = static_cast<int32_t>(axis), .factor = factor};
  }
  return layout;
}

Result<Graph> reload_at_batch(const Graph& graph, const std::vector<std::string>& batched_inputs, int64_t batch) {
  Graph declared = graph;  // tensors share their storage: a cheap copy
  for (auto& [name, info] : declared.values) {
    if (graph.find_initializer(name) != nullptr || !info.shape) continue;
    if (std::find(graph.inputs.begin(), graph.inputs.end(), name) == graph.inputs.end()) {
      info.shape.reset();  // inferred anew
    } else if (std::find(batched_inputs.begin(), batched_inputs.end(), name) != batched_inputs.end() &&
               !info.shape->empty()) {
      (*info.shape)[0] = Dim{.value = batch, .symbol = {}};
    }
  }
  // Each round gives shapes to the nodes ONNX's inference left without one (whose inputs have
  // them), then infers again downstream.
  for (size_t round = 0; round <= graph.nodes.size(); ++round) {
    QDQRT_ASSIGN_OR_RETURN(onnx::ModelProto model, graph_to_model(declared));
    QDQRT_ASSIGN_OR_RETURN(Graph loaded, load_onnx_model(model));
    bool progress = false;
    for (const Node& node : loaded.nodes) {
      bool missing = false;
      for (const std::string& output : node.outputs)
        missing = missing || (!output.empty() && !static_shape_in(loaded, output));
      if (!missing) continue;
      std::vector<std::optional<Shape>> shapes;
      if (node.domain == layers::kDomain) {
        shapes.push_back(fused_layer_shape(node, loaded));
      } else {
        shapes = kernel_output_shapes(node, loaded);
      }
      for (size_t i = 0; i < node.outputs.size() && i < shapes.size(); ++i) {
        auto declared_output = declared.values.find(node.outputs[i]);
        if (!shapes[i] || declared_output == declared.values.end() || static_shape_in(loaded, node.outputs[i]))
          continue;
        std::vector<Dim> dims;
        for (int64_t dim : *shapes[i]) dims.push_back(Dim{.value = dim, .symbol = {}});
        declared_output->second.shape = std::move(dims);
        progress = true;
      }
    }
    if (!progress) return loaded;
  }
  return internal_error("reloading the graph at batch {} did not settle", batch);
}

}  // namespace qdqrt::engine
