#include "tests/engine_float/harness.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include "engine/layers/layer_families.h"
#include "kernels/aligned_buffer.h"
#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "parser/onnx_loader.h"

namespace qdqrt::testing {

namespace {

std::map<std::string, Shape> batch_shapes(const onnx::ModelProto& model, int64_t max_batch) {
  std::map<std::string, Shape> shapes;
  std::vector<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.push_back(init.name());
  for (const auto& input : model.graph().input()) {
    if (std::find(initializers.begin(), initializers.end(), input.name()) != initializers.end()) continue;
    Shape shape;
    for (const auto& dim : input.type().tensor_type().shape().dim()) shape.push_back(dim.has_dim_value() ? dim.dim_value() : 1);
    if (!shape.empty()) shape[0] = max_batch;
    shapes[input.name()] = shape;
  }
  return shapes;
}

class HarnessContext final : public engine::BuildContext {
 public:
  HarnessContext(const Graph& graph, int64_t max_batch, engine::EnginePlan& plan)
      : graph_(graph), max_batch_(max_batch), plan_(plan) {}

  void begin_node(const Node* node) { node_ = node; }

  const Graph& graph() const override { return graph_; }
  kernels::Isa isa() const override { return kernels::active_isa(); }
  int64_t max_batch() const override { return max_batch_; }

  // A rank-4 tensor stored in the other layout goes through a reorder layer (cached), as in the builder.
  Result<int32_t> input(const std::string& value, engine::Layout layout) override {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, input_as_stored(value));
    const engine::PlanTensor desc = plan_.tensors[static_cast<size_t>(stored)];
    if (desc.shape.size() != 4 || desc.layout == layout) return stored;
    if (auto it = reordered_.find(value); it != reordered_.end()) return it->second;
    engine::PlanTensor tensor = desc;
    tensor.name = value + (layout == engine::Layout::kNhwc ? "#nhwc" : "#nchw");
    tensor.layout = layout;
    tensor.kind = engine::TensorKind::kActivation;
    plan_.tensors.push_back(tensor);
    const auto index = static_cast<int32_t>(plan_.tensors.size() - 1);
    engine::PlanLayer layer;
    layer.kind = "reorder";
    layer.name = tensor.name;
    layer.op_type = "Reorder";
    layer.inputs = {stored};
    layer.outputs = {index};
    layer.kernel = kernels::reorder_kernels(kernels::active_isa()).transpose32.name;
    plan_.layers.push_back(std::move(layer));
    reordered_[value] = index;
    return index;
  }
  // Graph outputs stored NHWC: the NHWC tensor is renamed and a reorder writes the plain output.
  Status finish_output(const std::string& value) {
    auto it = tensors_.find(value);
    if (it == tensors_.end()) return invalid_model("graph output '{}' was not produced", value);
    engine::PlanTensor& stored = plan_.tensors[static_cast<size_t>(it->second)];
    if (stored.layout == engine::Layout::kPlain) return Status::ok();
    stored.name = value + "#nhwc";
    stored.kind = engine::TensorKind::kActivation;
    QDQRT_ASSIGN_OR_RETURN(int32_t plain, input(value, engine::Layout::kPlain));
    plan_.tensors[static_cast<size_t>(plain)].name = value;
    plan_.tensors[static_cast<size_t>(plain)].kind = engine::TensorKind::kOutput;
    return Status::ok();
  }
  Result<int32_t> input_as_stored(const std::string& value) override {
    auto it = tensors_.find(value);
    if (it != tensors_.end()) return it->second;
    if (std::find(graph_.inputs.begin(), graph_.inputs.end(), value) == graph_.inputs.end()) {
      return invalid_model("value '{}' has no tensor yet", value);
    }
    return add_tensor(value, engine::TensorKind::kInput, true);
  }
  engine::PlanTensor tensor(int32_t index) const override { return plan_.tensors[static_cast<size_t>(index)]; }
  const Tensor* constant(const std::string& value) const override { return graph_.find_initializer(value); }
  Result<Shape> shape_of(const std::string& value) const override {
    const ValueInfo* info = graph_.find_value(value);
    if (info == nullptr || !info->static_shape()) return invalid_model("value '{}' has no static shape", value);
    return *info->static_shape();
  }
  Result<DataType> dtype_of(const std::string& value) const override {
    const ValueInfo* info = graph_.find_value(value);
    if (info == nullptr) return invalid_model("value '{}' is unknown", value);
    return info->dtype;
  }
  Result<int32_t> output(const std::string& value, engine::Layout layout) override {
    if (tensors_.count(value)) return invalid_model("value '{}' declared twice", value);
    bool batched = false;
    for (const std::string& input : node_->inputs) {
      auto it = tensors_.find(input);
      if (it != tensors_.end() && plan_.tensors[static_cast<size_t>(it->second)].batched) batched = true;
    }
    const bool is_output = std::find(graph_.outputs.begin(), graph_.outputs.end(), value) != graph_.outputs.end();
    QDQRT_ASSIGN_OR_RETURN(int32_t index, add_tensor(value, is_output ? engine::TensorKind::kOutput
                                                                       : engine::TensorKind::kActivation, batched));
    if (plan_.tensors[static_cast<size_t>(index)].shape.size() == 4) plan_.tensors[static_cast<size_t>(index)].layout = layout;
    return index;
  }
  bool consumers_prefer_nhwc(const std::string&) const override { return false; }
  void add_layer(engine::PlanLayer layer) override { plan_.layers.push_back(std::move(layer)); }

 private:
  Result<int32_t> add_tensor(const std::string& value, engine::TensorKind kind, bool batched) {
    QDQRT_ASSIGN_OR_RETURN(Shape shape, shape_of(value));
    QDQRT_ASSIGN_OR_RETURN(DataType dtype, dtype_of(value));
    engine::PlanTensor tensor;
    tensor.name = value;
    tensor.dtype = dtype;
    tensor.shape = shape;
    tensor.batched = batched && !shape.empty() && shape[0] == max_batch_;
    tensor.kind = kind;
    tensor.bytes = shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype));
    plan_.tensors.push_back(tensor);
    const auto index = static_cast<int32_t>(plan_.tensors.size() - 1);
    tensors_[value] = index;
    return index;
  }

  const Graph& graph_;
  int64_t max_batch_;
  engine::EnginePlan& plan_;
  const Node* node_ = nullptr;
  std::map<std::string, int32_t> tensors_;
  std::map<std::string, int32_t> reordered_;  // the value in the layout other than its stored one
};

Result<Graph> load_model(const onnx::ModelProto& model, int64_t max_batch) {
  LoadOptions options;
  options.input_shapes = batch_shapes(model, max_batch);
  return load_onnx_model(model, options);
}

}  // namespace

Result<Graph> load_text_graph(const std::string& text, int64_t max_batch) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) return invalid_model("ONNX text: {}", status.ErrorMessage());
  // "float y" declares a scalar in ONNX text; tests leave output shapes to inference.
  for (auto& output : *model.mutable_graph()->mutable_output()) {
    auto* type = output.mutable_type()->mutable_tensor_type();
    if (type->has_shape() && type->shape().dim_size() == 0) type->clear_shape();
  }
  return load_model(model, max_batch);
}

Result<Graph> load_file_graph(const std::string& path, int64_t max_batch) {
  QDQRT_ASSIGN_OR_RETURN(Graph graph, load_onnx_file(path));
  // Reload with the batch shapes: the input's declared shape gives the rest.
  LoadOptions options;
  for (const std::string& input : graph.inputs) {
    Shape shape;
    for (const Dim& dim : *graph.find_value(input)->shape) shape.push_back(dim.is_static() ? dim.value : 1);
    shape[0] = max_batch;
    options.input_shapes[input] = shape;
  }
  return load_onnx_file(path, options);
}

Result<HarnessPlan> harness_build(const Graph& graph, int64_t max_batch, bool all_reference) {
  HarnessPlan built;
  built.plan.max_batch = max_batch;
  built.plan.isa = kernels::isa_name(kernels::active_isa());
  built.plan.precision = "fp32";
  HarnessContext context(graph, max_batch, built.plan);
  for (const std::string& input : graph.inputs) {
    QDQRT_ASSIGN_OR_RETURN(int32_t index, context.input_as_stored(input));
    built.plan.inputs.push_back(index);
  }
  for (const Node& node : graph.nodes) {
    context.begin_node(&node);
    const engine::NodeLowering* lowering =
        all_reference ? nullptr : engine::LayerRegistry::instance().find_lowering(node, context);
    Status status = lowering ? lowering->lower(node, context) : engine::lower_with_reference(node, context);
    if (!status.is_ok()) return status;
  }
  for (const std::string& output : graph.outputs) QDQRT_RETURN_IF_ERROR(context.finish_output(output));
  for (const std::string& output : graph.outputs) {
    int32_t index = built.plan.find_tensor(output);
    if (index < 0) return invalid_model("graph output '{}' was not produced", output);
    built.plan.outputs.push_back(index);
  }
  for (size_t i = 0; i < built.plan.layers.size(); ++i) {
    QDQRT_ASSIGN_OR_RETURN(auto layer, harness_bind(built.plan, i));
    built.layers.push_back(std::move(layer));
  }
  return built;
}

Result<std::unique_ptr<engine::Layer>> harness_bind(const engine::EnginePlan& plan, size_t layer) {
  const engine::PlanLayer& plan_layer = plan.layers[layer];
  const engine::LayerKind* kind = engine::LayerRegistry::instance().find_kind(plan_layer.kind);
  if (kind == nullptr) return invalid_model("unknown layer kind '{}'", plan_layer.kind);
  engine::BindContext context(plan, plan_layer);
  return kind->bind(context);
}

Result<TensorMap> harness_run(const HarnessPlan& built, const TensorMap& inputs, int64_t chunks) {
  const engine::EnginePlan& plan = built.plan;
  int64_t batch = 1;
  for (int32_t index : plan.inputs) {
    const engine::PlanTensor& tensor = plan.tensors[static_cast<size_t>(index)];
    if (tensor.batched) batch = inputs.at(tensor.name).dim(0);
  }
  std::vector<kernels::AlignedBuffer<uint8_t>> buffers;
  std::vector<void*> pointers;
  for (const engine::PlanTensor& tensor : plan.tensors) {
    // Canary-filled so layers that skip elements are caught.
    buffers.emplace_back(static_cast<size_t>(tensor.bytes) + 64);
    std::memset(buffers.back().data(), 0x7f, buffers.back().size());
    pointers.push_back(buffers.back().data());
  }
  engine::RunState state{.plan = &plan, .batch = batch, .tensor_data = &pointers};
  for (int32_t index : plan.inputs) {
    const Tensor& tensor = inputs.at(plan.tensors[static_cast<size_t>(index)].name);
    if (static_cast<int64_t>(tensor.nbytes()) != state.numel(index) * static_cast<int64_t>(dtype_size(tensor.dtype()))) {
      return invalid_argument("input '{}' has the wrong size", plan.tensors[static_cast<size_t>(index)].name);
    }
    std::memcpy(pointers[static_cast<size_t>(index)], tensor.raw_data(), tensor.nbytes());
  }
  // QDQRT_HARNESS_PROFILE=1 prints each layer's time (for tuning the float layers).
  const bool profile = std::getenv("QDQRT_HARNESS_PROFILE") != nullptr;
  for (size_t i = 0; i < built.layers.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    const engine::WorkShape work = built.layers[i]->work(state);
    kernels::AlignedBuffer<uint8_t> scratch(static_cast<size_t>(plan.layers[i].scratch_bytes) + 64);
    const int64_t parts = std::max<int64_t>(1, std::min(chunks, work.items));
    for (int64_t part = 0; part < parts; ++part) {
      const int64_t begin = work.items * part / parts, end = work.items * (part + 1) / parts;
      if (end > begin) {
        built.layers[i]->run(state, begin, end,
                             std::span<uint8_t>(scratch.data(), static_cast<size_t>(plan.layers[i].scratch_bytes)));
      }
    }
    if (profile) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::printf("%8.3f ms  %-20s %-22s %s  (%lld items, %.3g GFLOP)\n", ms, plan.layers[i].kind.c_str(),
                  plan.layers[i].kernel.c_str(), plan.layers[i].name.c_str(), static_cast<long long>(work.items),
                  static_cast<double>(work.items) * work.ops_per_item * 1e-9);
    }
  }
  TensorMap outputs;
  for (int32_t index : plan.outputs) {
    const engine::PlanTensor& tensor = plan.tensors[static_cast<size_t>(index)];
    Shape shape = tensor.shape;
    if (tensor.batched) shape[0] = batch;
    Tensor result(tensor.dtype, shape);
    std::memcpy(result.raw_data(), pointers[static_cast<size_t>(index)], result.nbytes());
    outputs[tensor.name] = result;
  }
  return outputs;
}

TensorMap random_inputs(const Graph& graph, int64_t batch, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  TensorMap inputs;
  for (const std::string& name : graph.inputs) {
    Shape shape = *graph.find_value(name)->static_shape();
    if (!shape.empty()) shape[0] = batch;
    Tensor tensor(DataType::kFloat, shape);
    for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = dist(rng);
    inputs[name] = tensor;
  }
  return inputs;
}

double relative_error(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) return 1e9;
  if (expected.dtype() != DataType::kFloat) {
    return std::memcmp(actual.raw_data(), expected.raw_data(), expected.nbytes()) == 0 ? 0.0 : 1e9;
  }
  double max_ref = 1e-6, max_diff = 0.0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = actual.data<float>()[i], e = expected.data<float>()[i];
    if (std::isnan(a) != std::isnan(e)) return 1e9;
    if (std::isnan(e)) continue;
    max_ref = std::max(max_ref, std::fabs(e));
    max_diff = std::max(max_diff, std::fabs(a - e));
  }
  return max_diff / max_ref;
}

// "float[2,3] w = {...}" with values uniform in [low, high].
std::string weights(const std::string& name, const std::vector<int64_t>& shape, float low, float high,
                    uint32_t seed) {
  std::mt19937 rng(seed + static_cast<uint32_t>(name.size()) * 31u);
  std::uniform_real_distribution<float> dist(low, high);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::ostringstream out;
  out.precision(9);
  out << "float[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << "] " << name << " = {";
  for (int64_t i = 0; i < count; ++i) out << (i ? ", " : "") << dist(rng);
  out << "}";
  return out.str();
}

std::vector<std::string> layer_kinds(const engine::EnginePlan& plan) {
  std::vector<std::string> kinds;
  for (const auto& layer : plan.layers) kinds.push_back(layer.kind);
  return kinds;
}

}  // namespace qdqrt::testing
