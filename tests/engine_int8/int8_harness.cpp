#include "tests/engine_int8/int8_harness.h"

#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "kernels/aligned_buffer.h"

namespace qdqrt::testing {

namespace {

using engine::Layout;
using engine::PlanLayer;
using engine::PlanTensor;

constexpr const char* kReorderKind = "harness_reorder";
constexpr const char* kReferenceKind = "harness_reference";

class HarnessContext final : public engine::BuildContext {
 public:
  HarnessContext(const Graph& graph, int64_t max_batch, kernels::Isa isa, HarnessPlan& out)
      : graph_(graph), max_batch_(max_batch), isa_(isa), out_(out) {}

  const Graph& graph() const override { return graph_; }
  kernels::Isa isa() const override { return isa_; }
  int64_t max_batch() const override { return max_batch_; }

  Result<int32_t> input(const std::string& value, Layout layout) override {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, input_as_stored(value));
    const PlanTensor& tensor = out_.plan.tensors[static_cast<size_t>(stored)];
    if (tensor.shape.size() != 4) layout = Layout::kPlain;
    if (tensor.layout == layout) return stored;
    auto key = std::make_pair(value, static_cast<int>(layout));
    if (auto it = copies_.find(key); it != copies_.end()) return it->second;
    PlanTensor copy = tensor;
    copy.name = value + (layout == Layout::kNhwc ? "#nhwc" : "#plain");
    copy.layout = layout;
    copy.kind = engine::TensorKind::kActivation;
    const int32_t index = add_tensor(std::move(copy));
    PlanLayer reorder;
    reorder.kind = kReorderKind;
    reorder.name = "reorder " + value;
    reorder.inputs = {stored};
    reorder.outputs = {index};
    out_.plan.layers.push_back(std::move(reorder));
    out_.harness_node.push_back(-2);
    copies_[key] = index;
    return index;
  }

  Result<int32_t> input_as_stored(const std::string& value) override {
    auto it = values_.find(value);
    if (it == values_.end()) return invalid_argument("harness: value '{}' has no tensor yet", value);
    return it->second;
  }

  PlanTensor tensor(int32_t index) const override { return out_.plan.tensors[static_cast<size_t>(index)]; }
  const Tensor* constant(const std::string& value) const override { return graph_.find_initializer(value); }

  Result<Shape> shape_of(const std::string& value) const override {
    const ValueInfo* info = graph_.find_value(value);
    if (info == nullptr || !info->static_shape()) return invalid_argument("harness: no static shape for '{}'", value);
    return *info->static_shape();
  }
  Result<DataType> dtype_of(const std::string& value) const override {
    const ValueInfo* info = graph_.find_value(value);
    if (info == nullptr) return invalid_argument("harness: no type for '{}'", value);
    return info->dtype;
  }

  // Batched values carry the batch on dim 0, one slice per image (what make_tensor marks).
  std::optional<engine::BatchLayout> batch_layout(const std::string& value) const override {
    if (graph_.find_initializer(value) != nullptr) return engine::BatchLayout{};
    Result<PlanTensor> tensor = make_tensor(value);
    if (!tensor.ok()) return std::nullopt;
    return engine::batch_layout_of(*tensor);
  }

  Result<int32_t> output(const std::string& value, Layout layout) override {
    QDQRT_ASSIGN_OR_RETURN(PlanTensor tensor, make_tensor(value));
    if (tensor.shape.size() != 4) layout = Layout::kPlain;
    tensor.layout = layout;
    const int32_t index = add_tensor(std::move(tensor));
    values_[value] = index;
    return index;
  }

  bool consumers_prefer_nhwc(const std::string& value) const override {
    bool any = false;
    for (const Node& node : graph_.nodes) {
      if (std::find(node.inputs.begin(), node.inputs.end(), value) == node.inputs.end()) continue;
      const engine::NodeLowering* lowering = engine::LayerRegistry::instance().find_lowering(node, *this);
      if (lowering == nullptr || !lowering->prefers_nhwc) return false;
      any = true;
    }
    return any;
  }

  void add_layer(PlanLayer layer) override {
    out_.plan.layers.push_back(std::move(layer));
    out_.harness_node.push_back(-1);
    ++out_.native_layers;
  }

  Result<PlanTensor> make_tensor(const std::string& value) const {
    PlanTensor tensor;
    tensor.name = value;
    QDQRT_ASSIGN_OR_RETURN(tensor.dtype, dtype_of(value));
    QDQRT_ASSIGN_OR_RETURN(tensor.shape, shape_of(value));
    tensor.batched = !tensor.shape.empty() && tensor.shape[0] == max_batch_;
    int64_t count = 1;
    for (int64_t dim : tensor.shape) count *= dim;
    tensor.bytes = count * static_cast<int64_t>(dtype_size(tensor.dtype));
    return tensor;
  }

  int32_t add_tensor(PlanTensor tensor) {
    out_.plan.tensors.push_back(std::move(tensor));
    return static_cast<int32_t>(out_.plan.tensors.size() - 1);
  }

  Status lower_all() {
    for (const std::string& name : graph_.inputs) {
      QDQRT_ASSIGN_OR_RETURN(PlanTensor tensor, make_tensor(name));
      tensor.kind = engine::TensorKind::kInput;
      const int32_t index = add_tensor(std::move(tensor));
      values_[name] = index;
      out_.plan.inputs.push_back(index);
    }
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const Node& node = graph_.nodes[n];
      const engine::NodeLowering* lowering = engine::LayerRegistry::instance().find_lowering(node, *this);
      if (lowering != nullptr) {
        QDQRT_RETURN_IF_ERROR(lowering->lower(node, *this).with_context("lowering " + node.name));
        continue;
      }
      PlanLayer layer;
      layer.kind = kReferenceKind;
      layer.name = node.name;
      for (const std::string& value : node.inputs) {
        if (value.empty() || graph_.find_initializer(value)) {
          layer.inputs.push_back(-1);
          continue;
        }
        QDQRT_ASSIGN_OR_RETURN(int32_t index, input(value, Layout::kPlain));
        layer.inputs.push_back(index);
      }
      for (const std::string& value : node.outputs) {
        QDQRT_ASSIGN_OR_RETURN(int32_t index, output(value, Layout::kPlain));
        layer.outputs.push_back(index);
      }
      out_.plan.layers.push_back(std::move(layer));
      out_.harness_node.push_back(static_cast<int>(n));
    }
    for (const std::string& name : graph_.outputs) {
      QDQRT_ASSIGN_OR_RETURN(int32_t index, input(name, Layout::kPlain));
      out_.plan.outputs.push_back(index);
    }
    return Status::ok();
  }

 private:
  const Graph& graph_;
  int64_t max_batch_;
  kernels::Isa isa_;
  HarnessPlan& out_;
  std::map<std::string, int32_t> values_;
  std::map<std::pair<std::string, int>, int32_t> copies_;
};

// NCHW <-> NHWC copy of any element size.
class ReorderLayer final : public engine::Layer {
 public:
  int32_t input = -1, output = -1;
  engine::WorkShape work(const engine::RunState& state) const override { return {state.dim(input, 0), 1.0}; }
  void run(const engine::RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const PlanTensor& t = state.tensor(input);
    const size_t size = dtype_size(t.dtype);
    const int64_t c = t.shape[1], hw = t.shape[2] * t.shape[3];
    const bool to_nhwc = state.tensor(output).layout == Layout::kNhwc;
    const uint8_t* x = state.data<const uint8_t>(input);
    uint8_t* y = state.data<uint8_t>(output);
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t p = 0; p < hw; ++p) {
          const int64_t plain = (n * c + ch) * hw + p, nhwc = (n * hw + p) * c + ch;
          std::memcpy(y + (to_nhwc ? nhwc : plain) * size, x + (to_nhwc ? plain : nhwc) * size, size);
        }
      }
    }
  }
};

class ReferenceNodeLayer final : public engine::Layer {
 public:
  const Node* node = nullptr;
  const Graph* graph = nullptr;
  std::vector<int32_t> inputs, outputs;
  engine::WorkShape work(const engine::RunState&) const override { return {1, 1.0}; }
  void run(const engine::RunState& state, int64_t, int64_t, std::span<uint8_t>) const override {
    std::vector<Tensor> owned(inputs.size());
    std::vector<const Tensor*> pointers(inputs.size(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] < 0) {
        if (node->has_input(i)) pointers[i] = graph->find_initializer(node->input(i));
        // A Reshape target folded at the maximum batch follows the run's batch.
        if (node->op_type == "Reshape" && i == 1 && pointers[i] && pointers[i]->dtype() == DataType::kInt64 &&
            pointers[i]->numel() > 0 && pointers[i]->data<int64_t>()[0] == state.plan->max_batch) {
          owned[i] = pointers[i]->clone();
          owned[i].data<int64_t>()[0] = state.batch;
          pointers[i] = &owned[i];
        }
        continue;
      }
      const PlanTensor& t = state.tensor(inputs[i]);
      Shape shape = t.shape;
      if (t.batched) shape[0] = state.batch;
      owned[i] = Tensor(t.dtype, shape);
      std::memcpy(owned[i].raw_data(), state.data(inputs[i]), owned[i].nbytes());
      pointers[i] = &owned[i];
    }
    auto result = run_reference_node(*node, pointers);
    if (!result.ok()) {
      fmt::print(stderr, "harness: {}: {}\n", node->name, result.status().to_string());
      std::abort();
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::memcpy(state.data(outputs[i]), (*result)[i].raw_data(), (*result)[i].nbytes());
    }
  }
};

}  // namespace

Result<HarnessPlan> harness_lower(const Graph& graph, int64_t max_batch, kernels::Isa isa) {
  HarnessPlan result;
  result.graph = &graph;
  result.plan.isa = kernels::isa_name(isa);
  result.plan.max_batch = max_batch;
  HarnessContext context(graph, max_batch, isa, result);
  QDQRT_RETURN_IF_ERROR(context.lower_all());
  for (const PlanLayer& layer : result.plan.layers) {
    result.plan.scratch_bytes_per_thread = std::max(result.plan.scratch_bytes_per_thread, layer.scratch_bytes);
  }
  return result;
}

Result<std::vector<std::unique_ptr<engine::Layer>>> harness_bind(const HarnessPlan& plan) {
  std::vector<std::unique_ptr<engine::Layer>> layers;
  for (size_t i = 0; i < plan.plan.layers.size(); ++i) {
    const PlanLayer& layer = plan.plan.layers[i];
    const int origin = plan.harness_node[i];
    if (origin == -2) {
      auto reorder = std::make_unique<ReorderLayer>();
      reorder->input = layer.inputs[0];
      reorder->output = layer.outputs[0];
      layers.push_back(std::move(reorder));
      continue;
    }
    if (origin >= 0) {
      auto reference = std::make_unique<ReferenceNodeLayer>();
      reference->node = &plan.graph->nodes[static_cast<size_t>(origin)];
      reference->graph = plan.graph;
      reference->inputs = layer.inputs;
      reference->outputs = layer.outputs;
      layers.push_back(std::move(reference));
      continue;
    }
    const engine::LayerKind* kind = engine::LayerRegistry::instance().find_kind(layer.kind);
    if (kind == nullptr) return invalid_argument("no layer kind '{}'", layer.kind);
    engine::BindContext context(plan.plan, layer);
    QDQRT_ASSIGN_OR_RETURN(std::unique_ptr<engine::Layer> bound, kind->bind(context));
    layers.push_back(std::move(bound));
  }
  return layers;
}

Result<TensorMap> harness_run(const HarnessPlan& plan, const std::vector<std::unique_ptr<engine::Layer>>& layers,
                              const TensorMap& inputs, int threads) {
  const engine::EnginePlan& p = plan.plan;
  int64_t batch = -1;
  std::vector<kernels::AlignedBuffer<uint8_t>> buffers(p.tensors.size());
  std::vector<void*> data(p.tensors.size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    buffers[i].resize(static_cast<size_t>(std::max<int64_t>(p.tensors[i].bytes, 1)));
    data[i] = buffers[i].data();
  }
  for (int32_t index : p.inputs) {
    const PlanTensor& t = p.tensors[static_cast<size_t>(index)];
    auto it = inputs.find(t.name);
    if (it == inputs.end()) return invalid_argument("input '{}' missing", t.name);
    if (t.batched) batch = it->second.dim(0);
    if (static_cast<int64_t>(it->second.nbytes()) > t.bytes) return invalid_argument("input '{}' too large", t.name);
    std::memcpy(data[static_cast<size_t>(index)], it->second.raw_data(), it->second.nbytes());
  }
  engine::RunState state;
  state.plan = &p;
  state.batch = batch < 0 ? p.max_batch : batch;
  state.tensor_data = &data;
  state.threads = threads;
  for (size_t l = 0; l < layers.size(); ++l) {
    const engine::WorkShape work = layers[l]->work(state);
    const int64_t scratch_bytes = std::max<int64_t>(p.layers[l].scratch_bytes, 64);
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(threads, work.items));
    std::vector<kernels::AlignedBuffer<uint8_t>> scratch(static_cast<size_t>(chunks));
    for (auto& buffer : scratch) buffer.resize(static_cast<size_t>(scratch_bytes));
    std::vector<std::thread> workers;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t begin = work.items * c / chunks, end = work.items * (c + 1) / chunks;
      std::span<uint8_t> span(scratch[static_cast<size_t>(c)].data(), static_cast<size_t>(scratch_bytes));
      if (chunks == 1) {
        layers[l]->run(state, begin, end, span);
      } else {
        workers.emplace_back([&, begin, end, span] { layers[l]->run(state, begin, end, span); });
      }
    }
    for (std::thread& worker : workers) worker.join();
  }
  TensorMap outputs;
  for (int32_t index : p.outputs) {
    const PlanTensor& t = p.tensors[static_cast<size_t>(index)];
    Shape shape = t.shape;
    if (t.batched) shape[0] = state.batch;
    Tensor out(t.dtype, shape);
    std::memcpy(out.raw_data(), data[static_cast<size_t>(index)], out.nbytes());
    // Graph output names: the harness may have renamed a reordered copy.
    std::string name = t.name;
    if (auto hash = name.find('#'); hash != std::string::npos) name.resize(hash);
    outputs[name] = std::move(out);
  }
  return outputs;
}

std::vector<std::string> native_kinds(const HarnessPlan& plan) {
  std::vector<std::string> kinds;
  for (size_t i = 0; i < plan.plan.layers.size(); ++i) {
    if (plan.harness_node[i] == -1) kinds.push_back(plan.plan.layers[i].kind);
  }
  return kinds;
}

}  // namespace qdqrt::testing
