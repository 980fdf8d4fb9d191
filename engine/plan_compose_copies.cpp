#include "engine/plan_compose_copies.h"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/checked_math.h"
#include "engine/layers/copy_geometry.h"

namespace qdqrt::engine {

namespace {

struct Uses {
  int writer = -1;                // layer position, -1: none
  std::vector<size_t> readers;    // layer positions, one per input slot
};

std::optional<int64_t> elements(const PlanTensor& tensor) { return checked_product(tensor.shape); }

// A Reshape-like copy: the alias rewrite makes it a view (no bytes move) when it can.
bool is_view_kind(const PlanLayer& layer) { return layer.kind == "plain_copy" || layer.kind == "int8_reshape"; }

bool plain_activation(const PlanTensor& tensor) {
  return tensor.kind == TensorKind::kActivation && tensor.alias_of < 0 && tensor.layout == Layout::kPlain;
}

// The geometry of a single-input, single-output copy layer reading `x` into `y`.
std::optional<CopyGeometry> one_to_one_copy(const EnginePlan& plan, const PlanLayer& layer) {
  if (layer.inputs.size() != 1 || layer.outputs.size() != 1 || layer.inputs[0] < 0 || layer.outputs[0] < 0) {
    return std::nullopt;
  }
  const PlanTensor& x = plan.tensors[static_cast<size_t>(layer.inputs[0])];
  const PlanTensor& y = plan.tensors[static_cast<size_t>(layer.outputs[0])];
  if (x.layout != Layout::kPlain || y.layout != Layout::kPlain || x.dtype != y.dtype) return std::nullopt;
  return copy_geometry_of(layer, x, y);
}

// Drops tensors no layer names and no engine input/output is, renumbering the rest.
void drop_unused_tensors(EnginePlan& plan, const std::vector<bool>& unused) {
  std::vector<int32_t> renumbered(plan.tensors.size(), -1);
  std::vector<PlanTensor> kept;
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    if (unused[t]) continue;
    renumbered[t] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(plan.tensors[t]));
  }
  auto renumber = [&](int32_t& index) {
    if (index >= 0) index = renumbered[static_cast<size_t>(index)];
  };
  for (PlanLayer& layer : plan.layers) {
    for (int32_t& index : layer.inputs) renumber(index);
    for (int32_t& index : layer.outputs) renumber(index);
  }
  for (int32_t& index : plan.inputs) renumber(index);
  for (int32_t& index : plan.outputs) renumber(index);
  for (PlanTensor& tensor : kept) renumber(tensor.alias_of);
  plan.tensors = std::move(kept);
}

}  // namespace

Result<int> compose_copies_in_plan(EnginePlan& plan) {
  const size_t tensor_count = plan.tensors.size();
  std::vector<Uses> uses(tensor_count);
  for (size_t position = 0; position < plan.layers.size(); ++position) {
    const PlanLayer& layer = plan.layers[position];
    for (int32_t index : layer.inputs) {
      if (index < -1 || index >= static_cast<int32_t>(tensor_count)) {
        return internal_error("layer '{}' names tensor {} of {}", layer.name, index, tensor_count);
      }
      if (index >= 0) uses[static_cast<size_t>(index)].readers.push_back(position);
    }
    for (int32_t index : layer.outputs) {
      if (index < -1 || index >= static_cast<int32_t>(tensor_count)) {
        return internal_error("layer '{}' names tensor {} of {}", layer.name, index, tensor_count);
      }
      if (index >= 0) uses[static_cast<size_t>(index)].writer = static_cast<int>(position);
    }
  }
  std::vector<bool> removed(plan.layers.size(), false), unused(tensor_count, false);
  int count = 0;
  // In layer order, so a reader rewritten here is seen as a writer later with its new geometry
  // (chains of copies collapse into their last).
  for (size_t position = 0; position < plan.layers.size(); ++position) {
    const PlanLayer& writer = plan.layers[position];
    const std::optional<CopyGeometry> first = one_to_one_copy(plan, writer);
    if (!first) continue;
    const int32_t x = writer.inputs[0], t = writer.outputs[0];
    const PlanTensor& between = plan.tensors[static_cast<size_t>(t)];
    const std::optional<int64_t> between_elements = elements(between);
    if (!plain_activation(between) || !between_elements || uses[static_cast<size_t>(t)].readers.empty()) continue;
    // Every reader a copy of `t` alone; together they read no more than `t` holds, so reading
    // through never copies more than the writer and its readers did.
    std::vector<CopyGeometry> composed;
    int64_t read = 0;
    bool takes = true;
    for (size_t reader_position : uses[static_cast<size_t>(t)].readers) {
      const PlanLayer& reader = plan.layers[reader_position];
      const std::optional<CopyGeometry> second = one_to_one_copy(plan, reader);
      const PlanTensor& y = plan.tensors[static_cast<size_t>(reader.outputs.empty() ? 0 : reader.outputs[0])];
      const std::optional<int64_t> y_elements = elements(y);
      // A view read by a view: both are free as aliases, one strided copy would not be.
      if (!second || reader_position <= position || !y_elements || (is_view_kind(writer) && is_view_kind(reader))) {
        takes = false;
        break;
      }
      read += *y_elements;
      CopyGeometry geometry = compose_copies(*first, *second);
      const PlanTensor& input = plan.tensors[static_cast<size_t>(x)];
      if (!fits(geometry, input.shape, batch_layout_of(input), y.shape, batch_layout_of(y))) {
        takes = false;
        break;
      }
      composed.push_back(std::move(geometry));
    }
    if (!takes || read > *between_elements) continue;
    const size_t element_bits = dtype_size(between.dtype) * 8;
    for (size_t i = 0; i < composed.size(); ++i) {
      PlanLayer& reader = plan.layers[uses[static_cast<size_t>(t)].readers[i]];
      reader.kind = "strided_copy";
      reader.kernel = fmt::format("x{}-strided-copy", element_bits);
      reader.params = Params{};
      params::kSourceAxes.write(reader, composed[i].source_axes);
      params::kStarts.write(reader, composed[i].starts);
      if (!composed[i].steps.empty()) kCopySteps.write(reader, composed[i].steps);
      reader.inputs[0] = x;
    }
    // x's uses need no update: its writer comes earlier in layer order and was visited already.
    removed[position] = true;
    unused[static_cast<size_t>(t)] = true;
    ++count;
  }
  if (count == 0) return 0;
  std::vector<PlanLayer> layers;
  for (size_t position = 0; position < plan.layers.size(); ++position) {
    if (!removed[position]) layers.push_back(std::move(plan.layers[position]));
  }
  plan.layers = std::move(layers);
  drop_unused_tensors(plan, unused);
  return count;
}

}  // namespace qdqrt::engine
