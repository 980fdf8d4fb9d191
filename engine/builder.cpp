#include "engine/builder.h"

#include <algorithm>
#include <set>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unordered_map>
#include <unordered_set>

#include "core/checked_math.h"
#include "engine/layer.h"
#include "engine/layer_params.h"
#include "engine/plan_aliases.h"
#include "engine/plan_compose_copies.h"
#include "engine/layers/layer_families.h"
#include "kernels/bf16/bf16_gemm.h"
#include "kernels/dispatch.h"
#include "optimizer/graph_utils.h"
#include "reference/executor.h"

namespace qdqrt::engine {
namespace {

constexpr int64_t kAlignment = 64;

// Larger values are refused by plan_memory (and no arena could hold them).
constexpr int64_t kMaxArenaBytes = int64_t{1} << 60;

int64_t align_up(int64_t value) { return checked_align_up(value, kAlignment).value_or(INT64_MAX); }

// The tensor's bytes, or -1 when they overflow int64 (plan_memory refuses the plan then).
int64_t tensor_bytes(const Shape& shape, DataType dtype) {
  std::optional<int64_t> count = checked_product(shape);
  std::optional<int64_t> bytes = count ? checked_mul(*count, static_cast<int64_t>(dtype_size(dtype))) : std::nullopt;
  return bytes && *bytes <= kMaxArenaBytes ? *bytes : -1;
}

class PlanBuilder final : public BuildContext {
 public:
  PlanBuilder(const Graph& graph, const BuildOptions& options, kernels::Isa isa, int64_t max_batch,
              const std::vector<std::string>& batched_inputs, bool batched, const ShapeInferenceReport& shapes)
      : graph_(graph), options_(options), isa_(isa), max_batch_(max_batch), index_(graph),
        registry_(LayerRegistry::instance()), tracker_(graph, max_batch, batched, shapes) {
    batched_inputs_.insert(batched_inputs.begin(), batched_inputs.end());
    plan_.max_batch = max_batch;
    plan_.isa = kernels::isa_name(isa);
    plan_.precision = options.precision == Precision::kFp32 ? "fp32" : "int8";
  }

  Status lower_all() {
    for (const Node& node : graph_.nodes) {
      if (all_inputs_constant(node) && !sized_by_batch_constant(node)) {
        QDQRT_RETURN_IF_ERROR(fold_at_build_time(node));
        continue;
      }
      current_ = &node;
      current_batched_ = false;
      current_reads_untracked_batch_ = false;
      for (const std::string& input : node.inputs) {
        if (auto it = stored_.find(input); it != stored_.end()) {
          const bool batched = plan_.tensors[static_cast<size_t>(it->second.primary())].batched;
          current_batched_ = current_batched_ || batched;
          current_reads_untracked_batch_ = current_reads_untracked_batch_ || (batched && untracked_.count(input));
        } else if (batched_inputs_.count(input)) {
          current_batched_ = true;
        }
      }
      const BatchPlacement placement = batch_placement(node);
      const NodeLowering* lowering = registry_.find_lowering(node, *this, placement);
      Status status = lowering ? lowering->lower(node, *this)
                               : lower_with_reference(node, *this, fallback_reason(node, placement));
      if (!status.is_ok()) {
        return status.with_context(fmt::format("{} '{}'", node.op_type, node.name));
      }
      for (const std::string& output : node.outputs) {
        if (output.empty() || stored_.count(output)) continue;
        if (!index_.consumers(output).empty() || index_.is_graph_output(output)) {
          return internal_error("{} '{}': the lowering did not produce output '{}'", node.op_type, node.name, output);
        }
      }
      current_ = nullptr;
    }
    return Status::ok();
  }

  Status finish_outputs() {
    std::unordered_set<int32_t> used;
    for (const std::string& name : graph_.outputs) {
      QDQRT_ASSIGN_OR_RETURN(int32_t tensor, input(name, Layout::kPlain));
      const PlanTensor desc = plan_.tensors[static_cast<size_t>(tensor)];
      if (desc.kind != TensorKind::kActivation || used.count(tensor)) {
        // A graph input (or an output listed twice) passed through: the output gets its own copy.
        int32_t copy = add_tensor(name + "#output", desc.dtype, desc.shape, batch_layout_of(desc), Layout::kPlain);
        PlanLayer layer;
        layer.kind = "copy";
        layer.name = name + " copy";
        layer.op_type = "Copy";
        layer.inputs = {tensor};
        layer.outputs = {copy};
        layer.kernel = "x8-copy";
        plan_.layers.push_back(std::move(layer));
        tensor = copy;
      }
      plan_.tensors[static_cast<size_t>(tensor)].kind = TensorKind::kOutput;
      plan_.tensors[static_cast<size_t>(tensor)].name = name;
      used.insert(tensor);
      plan_.outputs.push_back(tensor);
    }
    for (const std::string& name : graph_.inputs) {
      auto it = stored_.find(name);
      if (it != stored_.end() && it->second.plain >= 0) {
        plan_.inputs.push_back(it->second.plain);
      } else {
        // An input no layer reads still appears in the engine's interface.
        QDQRT_ASSIGN_OR_RETURN(int32_t tensor, declare_graph_input(name));
        plan_.inputs.push_back(tensor);
      }
    }
    return Status::ok();
  }

  EnginePlan take() {
    std::set<std::string> features;
    switch (isa_) {
      case kernels::Isa::kAmxInt8: features.insert("amxint8"); break;
      case kernels::Isa::kAvx512Vnni: features.insert("avx512vnni"); break;
      case kernels::Isa::kAvxVnni: features.insert("avxvnni"); break;
      case kernels::Isa::kAvx2: features.insert("avx2"); break;
      case kernels::Isa::kScalar: break;
    }
    for (const PlanLayer& layer : plan_.layers) {
      if (layer.kernel.find("vbmi") != std::string::npos) features.insert("avx512vbmi");
      // The AMX-BF16 kernel converts A with AVX512_BF16 too.
      if (layer.kernel.find("bf16") != std::string::npos) features.insert("avx512bf16");
      if (layer.kernel.find("amxbf16") != std::string::npos) features.insert("amxbf16");
    }
    plan_.cpu_features.assign(features.begin(), features.end());
    plan_.fixed_batch_reason = fixed_batch_reason_;
    return std::move(plan_);
  }

  // --- BuildContext ---
  const Graph& graph() const override { return graph_; }
  kernels::Isa isa() const override { return isa_; }
  int64_t max_batch() const override { return max_batch_; }
  bool bf16_float_gemm() const override {
    return options_.bf16 && kernels::bf16_gemm_usable() &&
           static_cast<int>(isa_) >= static_cast<int>(kernels::Isa::kAvx512Vnni);
  }

  Result<int32_t> input(const std::string& value, Layout layout) override {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, input_as_stored(value));
    const PlanTensor desc = plan_.tensors[static_cast<size_t>(stored)];  // a copy: add_tensor grows the vector
    if (desc.shape.size() != 4) layout = Layout::kPlain;
    if (desc.layout == layout) return stored;
    Stored& entry = stored_[value];
    int32_t& cached = layout == Layout::kPlain ? entry.plain : entry.nhwc;
    if (cached >= 0) return cached;
    int32_t reordered = add_tensor(value + (layout == Layout::kNhwc ? "#nhwc" : "#nchw"), desc.dtype, desc.shape,
                                   batch_layout_of(desc), layout);
    PlanLayer layer;
    layer.kind = "reorder";
    layer.name = fmt::format("{} to {}", value, layout == Layout::kNhwc ? "NHWC" : "NCHW");
    layer.op_type = "Reorder";
    layer.inputs = {stored};
    layer.outputs = {reordered};
    auto kernels_for_isa = kernels::reorder_kernels(isa_);
    layer.kernel = dtype_size(desc.dtype) == 1 ? kernels_for_isa.transpose8.name : kernels_for_isa.transpose32.name;
    plan_.layers.push_back(std::move(layer));
    cached = reordered;
    return reordered;
  }

  Result<int32_t> input_as_stored(const std::string& value) override {
    auto it = stored_.find(value);
    if (it != stored_.end()) return it->second.primary();
    if (const Tensor* constant_value = constant(value)) return materialize_constant(value, *constant_value);
    if (std::find(graph_.inputs.begin(), graph_.inputs.end(), value) != graph_.inputs.end()) {
      return declare_graph_input(value);
    }
    return internal_error("value '{}' is read before any layer produces it", value);
  }

  PlanTensor tensor(int32_t index) const override { return plan_.tensors[static_cast<size_t>(index)]; }

  const Tensor* constant(const std::string& value) const override {
    const Tensor* found = find_constant(value);
    // A lowering that reads a constant computed for the maximum batch is right only there.
    if (found != nullptr && current_ != nullptr && constant_follows_batch(value)) {
      require_max_batch(fmt::format("{} reads '{}', a constant computed for batch {}", current_->describe(), value,
                                    max_batch_));
    }
    return found;
  }

  Result<Shape> shape_of(const std::string& value) const override {
    if (const Tensor* constant_value = find_constant(value)) return constant_value->shape();
    if (auto it = stored_.find(value); it != stored_.end()) {
      return plan_.tensors[static_cast<size_t>(it->second.primary())].shape;
    }
    const ValueInfo* info = graph_.find_value(value);
    if (info) {
      if (auto shape = info->static_shape()) return *shape;
    }
    return invalid_model("value '{}' has no static shape{}; give the input shapes (--shapes) so every shape is known",
                         value, info && info->shape ? fmt::format(" ({})", dims_to_string(*info->shape)) : "");
  }

  Result<DataType> dtype_of(const std::string& value) const override {
    if (const Tensor* constant_value = find_constant(value)) return constant_value->dtype();
    if (auto it = stored_.find(value); it != stored_.end()) {
      return plan_.tensors[static_cast<size_t>(it->second.primary())].dtype;
    }
    const ValueInfo* info = graph_.find_value(value);
    if (info && info->dtype != DataType::kUndefined) return info->dtype;
    return invalid_model("value '{}' has no known element type", value);
  }

  Result<int32_t> output(const std::string& value, Layout layout) override {
    if (!current_ || std::find(current_->outputs.begin(), current_->outputs.end(), value) == current_->outputs.end()) {
      return internal_error("'{}' is not an output of the node being lowered", value);
    }
    if (stored_.count(value)) return internal_error("output '{}' is declared twice", value);
    QDQRT_ASSIGN_OR_RETURN(Shape shape, shape_of(value));
    QDQRT_ASSIGN_OR_RETURN(DataType dtype, dtype_of(value));
    if (shape.size() != 4) layout = Layout::kPlain;
    Result<BatchLayout> batch = tracker_.layout_of(value);
    // Computed from a value labelled batched without the tracker (after a Reshape to a target that
    // holds the maximum batch), dims that do not change with the batch say nothing: label it alike.
    if (batch.ok() && !batch->batched && current_reads_untracked_batch_) {
      batch = invalid_model("'{}' is computed from a value whose batch dim is not tracked", value);
    }
    if (!batch.ok()) {
      require_max_batch(fmt::format("{}: {}", current_->describe(), batch.status().message()));
      // Only batch max_batch runs, where any labelling the layers accept gives the same result:
      // batched on dim 0 when an input is batched and dim 0 is the max batch.
      batch = BatchLayout{.batched = current_batched_ && !shape.empty() && shape[0] == max_batch_};
      untracked_.insert(value);
    }
    int32_t index = add_tensor(value, dtype, shape, *batch, layout);
    Stored& entry = stored_[value];
    (layout == Layout::kPlain ? entry.plain : entry.nhwc) = index;
    entry.primary_layout = layout;
    return index;
  }

  bool consumers_prefer_nhwc(const std::string& value) const override {
    const std::vector<int>& consumers = index_.consumers(value);
    if (consumers.empty() || index_.is_graph_output(value)) return false;
    bool through_followers = false;
    for (int consumer : consumers) {
      const NodeLowering* lowering = lowering_of(consumer);
      if (!prefers_nhwc(lowering, consumer)) return false;
      through_followers = through_followers || lowering->follows_layout;
    }
    return !through_followers || readers_beyond_prefer_nhwc(value);
  }

  const NodeLowering* lowering_of(int node_index) const {
    const Node& node = graph_.nodes[static_cast<size_t>(node_index)];
    return registry_.find_lowering(node, *this, batch_placement(node));
  }

  bool prefers_nhwc(const NodeLowering* lowering, int node_index) const {
    if (lowering == nullptr) return false;
    return lowering->prefers_nhwc ||
           (lowering->prefers_nhwc_for && lowering->prefers_nhwc_for(graph_.nodes[static_cast<size_t>(node_index)]));
  }

  // A reader that takes its operands' stored layout (NodeLowering::follows_layout) passes a
  // channels-last value on: count the layers reached through such readers (at most
  // kLayoutSearchNodes of them) that read channels-last against those that read plain (and graph
  // outputs); channels-last only when they are more. ONNX Runtime's quantized Swin-T has its
  // LayerNorm as int8 Mul/Add rows read by MatMuls: following the Muls' "preference" made every
  // norm a reorder to NHWC and back.
  bool readers_beyond_prefer_nhwc(const std::string& value) const {
    constexpr int kLayoutSearchNodes = 256;
    int nhwc = 0, plain = 0, visited_count = 0;
    std::unordered_set<int> visited;
    std::vector<const std::string*> pending = {&value};
    while (!pending.empty() && visited_count < kLayoutSearchNodes) {
      const std::string& current = *pending.back();
      pending.pop_back();
      if (index_.is_graph_output(current)) ++plain;
      for (int consumer : index_.consumers(current)) {
        if (!visited.insert(consumer).second) continue;
        ++visited_count;
        const NodeLowering* lowering = lowering_of(consumer);
        if (!prefers_nhwc(lowering, consumer)) {
          ++plain;
        } else if (!lowering->follows_layout) {
          ++nhwc;
        } else {
          for (const std::string& output : graph_.nodes[static_cast<size_t>(consumer)].outputs) {
            if (!output.empty()) pending.push_back(&output);
          }
        }
      }
    }
    return nhwc > plain;
  }

  void add_layer(PlanLayer layer) override { plan_.layers.push_back(std::move(layer)); }

  std::optional<BatchLayout> batch_layout(const std::string& value) const override {
    if (untracked_.count(value)) return std::nullopt;
    if (auto it = stored_.find(value); it != stored_.end()) {
      return batch_layout_of(plan_.tensors[static_cast<size_t>(it->second.primary())]);
    }
    if (find_constant(value) != nullptr) return BatchLayout{};
    Result<BatchLayout> layout = tracker_.layout_of(value);
    if (!layout.ok()) return std::nullopt;
    return *layout;
  }

 private:
  struct Stored {
    int32_t plain = -1;
    int32_t nhwc = -1;
    Layout primary_layout = Layout::kPlain;
    int32_t primary() const { return primary_layout == Layout::kPlain ? plain : nhwc; }
  };

  int32_t add_tensor(const std::string& name, DataType dtype, const Shape& shape, const BatchLayout& batch,
                     Layout layout) {
    PlanTensor tensor;
    tensor.name = name;
    tensor.dtype = dtype;
    tensor.shape = shape;
    tensor.batched = batch.batched;
    tensor.batch_axis = batch.batched ? batch.axis : 0;
    tensor.batch_factor = batch.batched ? batch.factor : 1;
    tensor.layout = layout;
    tensor.bytes = tensor_bytes(shape, dtype);
    plan_.tensors.push_back(std::move(tensor));
    return static_cast<int32_t>(plan_.tensors.size() - 1);
  }

  Result<int32_t> declare_graph_input(const std::string& name) {
    QDQRT_ASSIGN_OR_RETURN(Shape shape, shape_of(name));
    QDQRT_ASSIGN_OR_RETURN(DataType dtype, dtype_of(name));
    const BatchLayout batch{.batched = batched_inputs_.count(name) != 0};
    int32_t index = add_tensor(name, dtype, shape, batch, Layout::kPlain);
    plan_.tensors[static_cast<size_t>(index)].kind = TensorKind::kInput;
    Stored& entry = stored_[name];
    entry.plain = index;
    entry.primary_layout = Layout::kPlain;
    return index;
  }

  // A constant read by a layer that only takes tensors: a "constant" layer writes it each run.
  Result<int32_t> materialize_constant(const std::string& value, const Tensor& constant_value) {
    if (constant_follows_batch(value)) {
      require_max_batch(current_ ? fmt::format("{} reads '{}', a constant computed for batch {}", current_->describe(),
                                               value, max_batch_)
                                 : fmt::format("the output '{}' is a constant computed for batch {}", value, max_batch_));
    }
    int32_t index = add_tensor(value, constant_value.dtype(), constant_value.shape(), BatchLayout{}, Layout::kPlain);
    PlanLayer layer;
    layer.kind = "constant";
    layer.name = value + " constant";
    layer.op_type = "Constant";
    layer.outputs = {index};
    layer.kernel = "x8-copy";
    params::kConstantValue.write_bytes(layer, constant_value.raw_data(), constant_value.nbytes());
    plan_.layers.push_back(std::move(layer));
    Stored& entry = stored_[value];
    entry.plain = index;
    entry.primary_layout = Layout::kPlain;
    return index;
  }

  bool all_inputs_constant(const Node& node) const {
    if (node.inputs.empty()) return false;
    for (const std::string& input : node.inputs) {
      if (!input.empty() && !find_constant(input)) return false;
    }
    return true;
  }

  // Expand & co whose target shape follows the batch: lowered as layers that take their output
  // dims from the run's batch (folded, their output would fit the maximum batch only).
  bool sized_by_batch_constant(const Node& node) const {
    if (!node.domain.empty() || (node.op_type != "Expand" && node.op_type != "Tile")) return false;
    return std::any_of(node.inputs.begin(), node.inputs.end(),
                       [&](const std::string& input) { return constant_follows_batch(input); });
  }

  Status fold_at_build_time(const Node& node) {
    std::vector<const Tensor*> inputs;
    for (const std::string& input : node.inputs) inputs.push_back(input.empty() ? nullptr : find_constant(input));
    auto outputs = run_reference_node(node, inputs);
    if (!outputs.ok()) {
      // Every input is a constant of the model: a kernel's "invalid argument" is the model's fault.
      const StatusCode code = outputs.status().code() == StatusCode::kInvalidArgument ? StatusCode::kInvalidModel
                                                                                      : outputs.status().code();
      return Status(code, fmt::format("folding constant {} '{}': {}", node.op_type, node.name,
                                      outputs.status().message()));
    }
    bool follows_batch = false;
    for (const std::string& input : node.inputs) follows_batch = follows_batch || constant_follows_batch(input);
    for (size_t i = 0; i < node.outputs.size() && i < outputs->size(); ++i) {
      if (node.outputs[i].empty()) continue;
      folded_[node.outputs[i]] = std::move((*outputs)[i]);
      if (follows_batch) folded_from_batch_.insert(node.outputs[i]);
    }
    return Status::ok();
  }

  // constant() without noting the read.
  const Tensor* find_constant(const std::string& value) const {
    if (value.empty()) return nullptr;
    if (auto it = folded_.find(value); it != folded_.end()) return &it->second;
    return graph_.find_initializer(value);
  }

  bool constant_follows_batch(const std::string& value) const {
    return !value.empty() && (folded_from_batch_.count(value) || tracker_.constant_follows_batch(value));
  }

  // The first reason wins: it names the first layer that cannot run at another batch.
  void require_max_batch(std::string reason) const {
    if (fixed_batch_reason_.empty()) fixed_batch_reason_ = std::move(reason);
  }

  // Why no registered lowering took `node` (the builder then lowers it to the reference layer);
  // empty when lowerings exist and declined it.
  std::string fallback_reason(const Node& node, BatchPlacement placement) const {
    const std::string op = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
    if (!registry_.has_lowering(node.domain, node.op_type)) {
      const Attribute* equation = node.op_type == "Einsum" ? node.find_attribute("equation") : nullptr;
      if (equation != nullptr && equation->kind == Attribute::Kind::kString) {
        return fmt::format("no native layer implements Einsum, and '{}' is not a two-operand matrix product the "
                           "optimizer's lower_einsum rewrites to MatMul",
                           equation->s);
      }
      return fmt::format("no native layer implements {}", op);
    }
    if (placement != BatchPlacement::kLeads && registry_.find_lowering(node, *this) != nullptr) {
      return fmt::format("its tensors hold the batch off dim 0, which the native {} layers do not take", op);
    }
    return {};  // the registered lowerings declined it: lower_with_reference names the op and its inputs
  }

  // Where the runtime inputs and outputs of `node` hold the batch: anywhere but one slice per image
  // on dim 0, only lowerings flagged for it may take the node.
  BatchPlacement batch_placement(const Node& node) const {
    auto all = [&](bool (*holds)(const BatchLayout&)) {
      auto test = [&](const std::string& value) {
        std::optional<BatchLayout> layout = value.empty() ? std::nullopt : batch_layout(value);
        return !layout || holds(*layout);
      };
      return std::all_of(node.inputs.begin(), node.inputs.end(), test) &&
             std::all_of(node.outputs.begin(), node.outputs.end(), test);
    };
    if (all(batch_leads)) return BatchPlacement::kLeads;
    return all(batch_on_dim0) ? BatchPlacement::kSlicesOnDim0 : BatchPlacement::kElsewhere;
  }

  const Graph& graph_;
  const BuildOptions& options_;
  kernels::Isa isa_;
  int64_t max_batch_;
  optimizer::ValueIndex index_;
  const LayerRegistry& registry_;
  EnginePlan plan_;
  std::unordered_map<std::string, Stored> stored_;
  std::unordered_map<std::string, Tensor> folded_;
  BatchTracker tracker_;
  std::unordered_set<std::string> batched_inputs_;
  std::unordered_set<std::string> folded_from_batch_;  // folded here from constants that follow the batch
  std::unordered_set<std::string> untracked_;          // outputs labelled without the tracker
  mutable std::string fixed_batch_reason_;             // EnginePlan::fixed_batch_reason
  const Node* current_ = nullptr;
  bool current_batched_ = false;  // an input of the node being lowered is batched
  bool current_reads_untracked_batch_ = false;  // ... and labelled so without the tracker (untracked_)
};

}  // namespace

Status plan_memory(EnginePlan& plan) {
  const size_t tensor_count = plan.tensors.size();
  for (const PlanTensor& tensor : plan.tensors) {
    if (tensor.bytes < 0) {
      return invalid_model("value '{}' of shape {} ({}) needs more than {} bytes", tensor.name,
                           shape_to_string(tensor.shape), dtype_name(tensor.dtype), kMaxArenaBytes);
    }
  }
  std::vector<int64_t> first(tensor_count, -1), last(tensor_count, -1);
  for (size_t layer_index = 0; layer_index < plan.layers.size(); ++layer_index) {
    const PlanLayer& layer = plan.layers[layer_index];
    auto touch = [&](int32_t tensor) -> Status {
      if (tensor < 0) return Status::ok();
      if (static_cast<size_t>(tensor) >= tensor_count) {
        return internal_error("layer '{}' names tensor {} of {}", layer.name, tensor, tensor_count);
      }
      // An alias lives in its root's bytes: the root's lifetime covers both.
      size_t t = static_cast<size_t>(tensor);
      const int32_t root = plan.tensors[t].alias_of;
      if (root >= 0) {
        if (static_cast<size_t>(root) >= tensor_count || plan.tensors[static_cast<size_t>(root)].alias_of >= 0) {
          return internal_error("tensor '{}' aliases tensor {}, which is no tensor of its own", plan.tensors[t].name,
                                root);
        }
        t = static_cast<size_t>(root);
      }
      if (first[t] < 0) first[t] = static_cast<int64_t>(layer_index);
      last[t] = static_cast<int64_t>(layer_index);
      return Status::ok();
    };
    for (int32_t tensor : layer.inputs) QDQRT_RETURN_IF_ERROR(touch(tensor));
    for (int32_t tensor : layer.outputs) QDQRT_RETURN_IF_ERROR(touch(tensor));
    plan.scratch_bytes_per_thread = std::max(plan.scratch_bytes_per_thread, align_up(layer.scratch_bytes));
  }

  // Greedy by size: each activation goes to the lowest offset free during its whole lifetime.
  std::vector<size_t> order;
  for (size_t t = 0; t < tensor_count; ++t) {
    PlanTensor& tensor = plan.tensors[t];
    tensor.arena_offset = -1;
    if (tensor.kind == TensorKind::kActivation && tensor.alias_of < 0 && first[t] >= 0) order.push_back(t);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return plan.tensors[a].bytes > plan.tensors[b].bytes; });
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t t : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of tensors alive at the same time
    for (size_t other : placed) {
      if (first[other] <= last[t] && first[t] <= last[other]) {
        busy.emplace_back(plan.tensors[other].arena_offset,
                          plan.tensors[other].arena_offset + align_up(plan.tensors[other].bytes));
      }
    }
    std::sort(busy.begin(), busy.end());
    // Every size is at most kMaxArenaBytes (2^60), so offset + size cannot overflow below 2^62.
    int64_t size = align_up(std::max<int64_t>(plan.tensors[t].bytes, 1));
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    if (offset + size > kMaxArenaBytes) {
      return invalid_model("the activations need an arena of more than {} bytes (value '{}' at offset {})",
                           kMaxArenaBytes, plan.tensors[t].name, offset);
    }
    plan.tensors[t].arena_offset = offset;
    arena = std::max(arena, offset + size);
    placed.push_back(t);
  }
  plan.arena_bytes = arena;
  for (PlanTensor& tensor : plan.tensors) {
    if (tensor.alias_of < 0) continue;
    tensor.arena_offset = plan.tensors[static_cast<size_t>(tensor.alias_of)].arena_offset + tensor.alias_offset;
  }
  return Status::ok();
}

Result<EnginePlan> build_plan(const Graph& optimized, const BuildOptions& options,
                              const std::vector<std::string>& batched_inputs, const ShapeInferenceReport& shapes) {
  int64_t max_batch = 1;
  bool batch_known = false;
  for (const std::string& name : batched_inputs) {
    const ValueInfo* info = optimized.find_value(name);
    auto shape = info ? info->static_shape() : std::nullopt;
    if (!shape) return invalid_model("input '{}' has no static shape; give it (--shapes)", name);
    if (shape->empty()) continue;
    if (batch_known && (*shape)[0] != max_batch) {
      return invalid_argument("batched inputs disagree on the batch: '{}' has {}, another has {}", name, (*shape)[0],
                              max_batch);
    }
    max_batch = (*shape)[0];
    batch_known = true;
  }
  if (max_batch < 1) return invalid_argument("the batch size must be at least 1, got {}", max_batch);

  // QDQRT_MAX_ISA / set_max_isa() limit the build too: an engine built above them would pack its
  // weights for kernels the limit disables (and its own file would not load here).
  kernels::Isa isa = kernels::usable_isa(std::min(options.max_isa, kernels::active_isa()));
  PlanBuilder builder(optimized, options, isa, max_batch, batched_inputs, batch_known, shapes);
  QDQRT_RETURN_IF_ERROR(builder.lower_all());
  QDQRT_RETURN_IF_ERROR(builder.finish_outputs());
  EnginePlan plan = builder.take();
  if (options.no_reference_layers) {
    std::vector<std::string> refused;
    for (const PlanLayer& layer : plan.layers) {
      if (layer.kind != "reference") continue;
      refused.push_back(fmt::format("{} '{}': {}", layer.op_type, layer.name,
                                    reference_layer_reason(layer)));
    }
    if (!refused.empty()) {
      return unsupported("{} node(s) would run on the reference executor (no reference layers allowed): {}",
                         refused.size(), fmt::join(refused, "; "));
    }
  }
  plan.source_model = optimized.name;
  if (options.share_buffers) {
    QDQRT_RETURN_IF_ERROR(compose_copies_in_plan(plan).status());
    QDQRT_RETURN_IF_ERROR(alias_in_place(plan, LayerRegistry::instance()).status());
  }
  QDQRT_RETURN_IF_ERROR(plan_memory(plan));
  return plan;
}

}  // namespace qdqrt::engine
