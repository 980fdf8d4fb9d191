#include "engine/layer.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/checked_math.h"
#include "engine/layers/layer_families.h"

namespace qdqrt::engine {

int64_t RunState::numel(int32_t index) const {
  const PlanTensor& t = tensor(index);
  int64_t count = 1;
  for (size_t axis = 0; axis < t.shape.size(); ++axis) count *= dim(index, axis);
  return count;
}

Result<const PlanTensor*> BindContext::input(size_t i) const {
  if (i >= layer_.inputs.size() || layer_.inputs[i] < 0) return error(fmt::format("input {} is missing", i));
  size_t index = static_cast<size_t>(layer_.inputs[i]);
  if (index >= plan_.tensors.size()) return error(fmt::format("input {} names tensor {} of {}", i, index, plan_.tensors.size()));
  return &plan_.tensors[index];
}

Result<const PlanTensor*> BindContext::output(size_t i) const {
  if (i >= layer_.outputs.size() || layer_.outputs[i] < 0) return error(fmt::format("output {} is missing", i));
  size_t index = static_cast<size_t>(layer_.outputs[i]);
  if (index >= plan_.tensors.size()) {
    return error(fmt::format("output {} names tensor {} of {}", i, index, plan_.tensors.size()));
  }
  return &plan_.tensors[index];
}

bool BindContext::has_input(size_t i) const { return i < layer_.inputs.size() && layer_.inputs[i] >= 0; }

Status BindContext::error(const std::string& message) const {
  return invalid_model("layer '{}' ({}): {}", layer_.name, layer_.kind, message);
}

void LayerRegistry::add_kind(LayerKind kind) { kinds_.push_back(std::move(kind)); }
void LayerRegistry::add_lowering(NodeLowering lowering) { lowerings_.push_back(std::move(lowering)); }

const LayerKind* LayerRegistry::find_kind(const std::string& kind) const {
  for (const LayerKind& entry : kinds_) {
    if (entry.kind == kind) return &entry;
  }
  return nullptr;
}

const NodeLowering* LayerRegistry::find_lowering(const Node& node, const BuildContext& context,
                                                 BatchPlacement placement) const {
  for (const NodeLowering& entry : lowerings_) {
    if (entry.domain != node.domain || entry.op_type != node.op_type) continue;
    const bool takes = placement == BatchPlacement::kLeads || entry.any_batch_layout ||
                       (placement == BatchPlacement::kSlicesOnDim0 && entry.batch_slices_on_dim0);
    if (!takes) continue;
    if (!entry.accepts || entry.accepts(node, context)) return &entry;
  }
  return nullptr;
}

bool LayerRegistry::has_lowering(const std::string& domain, const std::string& op_type) const {
  return std::any_of(lowerings_.begin(), lowerings_.end(), [&](const NodeLowering& entry) {
    return entry.domain == domain && entry.op_type == op_type;
  });
}

const LayerRegistry& LayerRegistry::instance() {
  static const LayerRegistry registry = [] {
    LayerRegistry built;
    register_border_layers(built);
    register_int8_layers(built);
    register_strided_copy(built);
    register_norm_layers(built);
    register_float_layers(built);
    register_reference_layer(built);
    return built;
  }();
  return registry;
}

Result<LayoutCosts> layout_costs(BuildContext& context, std::span<const std::string> inputs, const std::string& output) {
  LayoutCosts costs;
  int64_t nhwc_elements = 0, plain_elements = 0;
  for (const std::string& input : inputs) {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(input));
    const PlanTensor& tensor = context.tensor(stored);
    costs.batch_leads = costs.batch_leads && batch_leads(tensor);
    (tensor.layout == Layout::kNhwc ? nhwc_elements : plain_elements) += checked_product(tensor.shape).value_or(-1);
  }
  const int64_t output_elements = nhwc_elements + plain_elements;
  const bool readers_nhwc = context.consumers_prefer_nhwc(output);
  costs.nhwc = plain_elements + (readers_nhwc ? 0 : output_elements);
  costs.plain = nhwc_elements + (readers_nhwc ? output_elements : 0);
  return costs;
}

}  // namespace qdqrt::engine
