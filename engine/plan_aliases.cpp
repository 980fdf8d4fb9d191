#include "engine/plan_aliases.h"

#include <algorithm>
#include <set>

#include "core/checked_math.h"
#include "engine/layer.h"

namespace qdqrt::engine {

namespace {

// A block any producer writes (its kernels may store whole aligned vectors) starts where a tensor
// of its own would.
constexpr int64_t kBlockAlignment = 64;

constexpr const char* kPlainConcatKind = "plain_concat";
constexpr const char* kQuantizedConcatKind = "qconcat";
constexpr const char* kPlainCopyKind = "plain_copy";
constexpr const char* kInt8ReshapeKind = "int8_reshape";
constexpr const char* kStridedCopyKind = "strided_copy";

struct Usage {
  std::vector<size_t> writers;  // layer positions
  int readers = 0;              // reads, counted per input slot
};

std::vector<Usage> usage_of(const EnginePlan& plan) {
  std::vector<Usage> usage(plan.tensors.size());
  for (size_t position = 0; position < plan.layers.size(); ++position) {
    for (int32_t input : plan.layers[position].inputs) {
      if (input >= 0) ++usage[static_cast<size_t>(input)].readers;
    }
    for (int32_t output : plan.layers[position].outputs) {
      if (output >= 0) usage[static_cast<size_t>(output)].writers.push_back(position);
    }
  }
  return usage;
}

bool is_own_activation(const PlanTensor& tensor) {
  return tensor.kind == TensorKind::kActivation && tensor.alias_of < 0;
}

// A qconcat copies bytes only when every input has the output's quantization (the layer compares
// the scales as floats).
bool concat_copies_bytes(const PlanLayer& layer) {
  if (layer.kind == kPlainConcatKind) return true;
  if (layer.kind != kQuantizedConcatKind) return false;
  Result<double> y_scale = layer.params.get_float("y_scale");
  Result<int64_t> y_zero_point = layer.params.get_int("y_zero_point");
  Result<std::vector<double>> x_scales = layer.params.get_floats("x_scales");
  Result<std::vector<int64_t>> x_zero_points = layer.params.get_ints("x_zero_points");
  if (!y_scale.ok() || !y_zero_point.ok() || !x_scales.ok() || !x_zero_points.ok() ||
      x_scales->size() != layer.inputs.size() || x_zero_points->size() != layer.inputs.size()) {
    return false;
  }
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    if (static_cast<float>((*x_scales)[i]) != static_cast<float>(*y_scale) || (*x_zero_points)[i] != *y_zero_point) {
      return false;
    }
  }
  return true;
}

class AliasRewriter {
 public:
  AliasRewriter(EnginePlan& plan, const LayerRegistry& registry)
      : plan_(plan),
        registry_(registry),
        usage_(usage_of(plan)),
        has_aliases_(plan.tensors.size(), false),
        removed_(plan.layers.size(), false) {
    for (const PlanTensor& tensor : plan.tensors) {
      if (tensor.alias_of >= 0 && static_cast<size_t>(tensor.alias_of) < plan.tensors.size()) {
        has_aliases_[static_cast<size_t>(tensor.alias_of)] = true;
      }
    }
  }

  void concat_in_place() {
    for (size_t position = 0; position < plan_.layers.size(); ++position) {
      if (!removed_[position] && concat_copies_bytes(plan_.layers[position]) && place_concat(position)) {
        removed_[position] = true;
      }
    }
  }

  // A strided_copy that moves no byte (a Transpose that moves only dims of 1: attention's
  // [1, T, E] <-> [T, 1, E] at maximum batch 1): both sides plain, nothing sliced, stepped or
  // broadcast, and the output's dims other than 1 walk the input's in their order. Its output holds
  // the input's bytes under another shape, as a Reshape's does (the shapes are the maximum batch's:
  // a smaller batch shrinks a dim in place and keeps the order).
  bool copies_in_order(const PlanLayer& layer) const {
    if (layer.kind != kStridedCopyKind || layer.inputs.size() != 1 || layer.outputs.size() != 1 ||
        layer.inputs[0] < 0 || layer.outputs[0] < 0) {
      return false;
    }
    const PlanTensor& x = plan_.tensors[static_cast<size_t>(layer.inputs[0])];
    const PlanTensor& y = plan_.tensors[static_cast<size_t>(layer.outputs[0])];
    if (x.layout != Layout::kPlain || y.layout != Layout::kPlain) return false;
    auto source_axes = layer.params.get_ints("source_axes");
    auto starts = layer.params.get_ints("starts");
    if (!source_axes.ok() || !starts.ok() || source_axes->size() != y.shape.size() || starts->size() != x.shape.size()) {
      return false;
    }
    if (layer.params.has("copy.steps")) {
      auto steps = layer.params.get_ints("copy.steps");
      if (!steps.ok() || std::any_of(steps->begin(), steps->end(), [](int64_t step) { return step != 1; })) return false;
    }
    if (std::any_of(starts->begin(), starts->end(), [](int64_t start) { return start != 0; })) return false;
    std::vector<bool> walked(x.shape.size(), false);
    int64_t previous = -1;
    for (size_t k = 0; k < y.shape.size(); ++k) {
      const int64_t axis = (*source_axes)[k];
      if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size()) || walked[static_cast<size_t>(axis)] ||
          y.shape[k] != x.shape[static_cast<size_t>(axis)]) {
        return false;
      }
      walked[static_cast<size_t>(axis)] = true;
      if (y.shape[k] == 1) continue;
      if (axis < previous) return false;
      previous = axis;
    }
    for (size_t a = 0; a < x.shape.size(); ++a) {
      if (!walked[a] && x.shape[a] != 1) return false;
    }
    return true;
  }

  void views() {
    for (size_t position = 0; position < plan_.layers.size(); ++position) {
      const PlanLayer& layer = plan_.layers[position];
      if (removed_[position] ||
          (layer.kind != kPlainCopyKind && layer.kind != kInt8ReshapeKind && !copies_in_order(layer))) {
        continue;
      }
      if (make_view(position)) removed_[position] = true;
    }
  }

  int finish() {
    int removed = 0;
    std::vector<PlanLayer> kept;
    kept.reserve(plan_.layers.size());
    for (size_t position = 0; position < plan_.layers.size(); ++position) {
      if (removed_[position]) {
        ++removed;
      } else {
        kept.push_back(std::move(plan_.layers[position]));
      }
    }
    plan_.layers = std::move(kept);
    return removed;
  }

 private:
  PlanTensor& tensor(int32_t index) { return plan_.tensors[static_cast<size_t>(index)]; }

  // Whether the layer at `writer` writes `output` in rows of `row_length` elements at a row stride.
  bool writes_strided(size_t writer, int32_t output, int64_t row_length) const {
    const PlanLayer& layer = plan_.layers[writer];
    const LayerKind* kind = registry_.find_kind(layer.kind);
    if (kind == nullptr || kind->writes_strided_rows == nullptr) return false;
    for (size_t i = 0; i < layer.outputs.size(); ++i) {
      if (layer.outputs[i] == output) return kind->writes_strided_rows(layer, i, plan_.tensors[output], row_length);
    }
    return false;
  }

  bool place_concat(size_t position) {
    const PlanLayer& concat = plan_.layers[position];
    if (concat.outputs.size() != 1 || concat.inputs.empty() || concat.outputs[0] < 0) return false;
    const int32_t y = concat.outputs[0];
    const PlanTensor& output = tensor(y);
    if (!is_own_activation(output) || has_aliases_[static_cast<size_t>(y)] ||
        usage_[static_cast<size_t>(y)].writers.size() != 1) {
      return false;
    }
    Result<int64_t> logical_axis = concat.params.get_int("axis");
    const int64_t rank = static_cast<int64_t>(output.shape.size());
    if (!logical_axis.ok() || *logical_axis < 0 || *logical_axis >= rank) return false;
    const int64_t axis = *logical_axis;
    static constexpr int64_t kNhwcPosition[4] = {0, 3, 1, 2};
    if (output.layout == Layout::kNhwc && rank != 4) return false;
    const int64_t stored_axis = output.layout == Layout::kNhwc ? kNhwcPosition[axis] : axis;
    const Shape y_stored = stored_shape(output);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < stored_axis; ++d) outer *= y_stored[static_cast<size_t>(d)];
    for (int64_t d = stored_axis + 1; d < rank; ++d) inner *= y_stored[static_cast<size_t>(d)];
    // Contiguous blocks: nothing before the axis, and no smaller batch that would move them.
    const bool blocks = outer == 1 && (!output.batched || plan_.max_batch == 1);
    // Rows: each input's part of every row of the stored dims from the axis on, the batch (if any)
    // leading so a smaller batch is fewer rows.
    // The batch on dim 0 at any slices per image ([N * heads, ...]): a smaller batch is fewer
    // leading rows, whole ones as long as the axis is past dim 0.
    const bool columns = !blocks && batch_on_dim0(output) && (!output.batched || stored_axis > 0);
    if (!blocks && !columns) return false;
    const int64_t element = static_cast<int64_t>(dtype_size(output.dtype));

    std::set<int32_t> seen;
    std::vector<int64_t> offsets;
    int64_t extent = 0;
    for (int32_t x : concat.inputs) {
      if (x < 0 || !seen.insert(x).second) return false;
      const PlanTensor& input = tensor(x);
      const Usage& usage = usage_[static_cast<size_t>(x)];
      if (!is_own_activation(input) || has_aliases_[static_cast<size_t>(x)] || input.dtype != output.dtype ||
          input.layout != output.layout || batch_layout_of(input) != batch_layout_of(output) ||
          input.shape.size() != output.shape.size() || usage.writers.size() != 1 || usage.readers != 1 ||
          usage.writers[0] >= position) {
        return false;
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (d != axis && input.shape[static_cast<size_t>(d)] != output.shape[static_cast<size_t>(d)]) return false;
      }
      const int64_t offset = extent * inner * element;
      if (blocks && offset % kBlockAlignment != 0) return false;
      if (columns && !writes_strided(usage.writers[0], x, input.shape[static_cast<size_t>(axis)] * inner)) return false;
      offsets.push_back(offset);
      extent += input.shape[static_cast<size_t>(axis)];
    }
    if (extent != output.shape[static_cast<size_t>(axis)]) return false;
    for (size_t i = 0; i < concat.inputs.size(); ++i) {
      PlanTensor& input = tensor(concat.inputs[i]);
      input.alias_of = y;
      input.alias_offset = offsets[i];
      input.row_stride = columns ? y_stored[static_cast<size_t>(stored_axis)] * inner : 0;
    }
    usage_[static_cast<size_t>(y)].writers.clear();
    has_aliases_[static_cast<size_t>(y)] = true;
    return true;
  }

  bool make_view(size_t position) {
    const PlanLayer& copy = plan_.layers[position];
    if (copy.inputs.size() != 1 || copy.outputs.size() != 1 || copy.inputs[0] < 0 || copy.outputs[0] < 0) return false;
    const int32_t x = copy.inputs[0], y = copy.outputs[0];
    const PlanTensor& input = tensor(x);
    const PlanTensor& output = tensor(y);
    if (input.kind != TensorKind::kActivation || !is_own_activation(output) || has_aliases_[static_cast<size_t>(y)] ||
        usage_[static_cast<size_t>(y)].writers.size() != 1 || input.dtype != output.dtype ||
        input.bytes != output.bytes || input.batched != output.batched) {
      return false;
    }
    // A slice is only part of its tensor's bytes; a view of a view shares the same ones.
    if (input.alias_of >= 0 && !usage_[static_cast<size_t>(x)].writers.empty()) return false;
    const int32_t root = alias_root(plan_, x);
    PlanTensor& view = tensor(y);
    view.alias_of = root;
    view.alias_offset = 0;
    view.row_stride = 0;
    usage_[static_cast<size_t>(y)].writers.clear();
    has_aliases_[static_cast<size_t>(root)] = true;
    return true;
  }

  EnginePlan& plan_;
  const LayerRegistry& registry_;
  std::vector<Usage> usage_;
  std::vector<bool> has_aliases_;  // some tensor lives in this one's bytes
  std::vector<bool> removed_;      // layer positions
};

}  // namespace

Shape stored_shape(const PlanTensor& tensor) {
  if (tensor.layout == Layout::kNhwc && tensor.shape.size() == 4) {
    return {tensor.shape[0], tensor.shape[2], tensor.shape[3], tensor.shape[1]};
  }
  return tensor.shape;
}

int64_t strided_row_length(const EnginePlan& plan, const PlanTensor& tensor) {
  if (tensor.row_stride <= 0 || tensor.alias_of < 0) return 0;
  const PlanTensor& root = plan.tensors[static_cast<size_t>(tensor.alias_of)];
  const int64_t element = static_cast<int64_t>(dtype_size(tensor.dtype));
  const std::optional<int64_t> row_bytes = checked_mul(element, tensor.row_stride);
  if (element == 0 || !row_bytes || root.bytes % *row_bytes != 0) return 0;
  const int64_t rows = root.bytes / *row_bytes;
  if (rows == 0 || (tensor.bytes / element) % rows != 0) return 0;
  return tensor.bytes / element / rows;
}

Result<int> alias_in_place(EnginePlan& plan, const LayerRegistry& registry, const AliasOptions& options) {
  for (const PlanLayer& layer : plan.layers) {
    for (const std::vector<int32_t>* list : {&layer.inputs, &layer.outputs}) {
      for (int32_t index : *list) {
        if (index < -1 || index >= static_cast<int32_t>(plan.tensors.size())) {
          return internal_error("layer '{}' names tensor {} of {}", layer.name, index, plan.tensors.size());
        }
      }
    }
  }
  AliasRewriter rewriter(plan, registry);
  if (options.concat_in_place) rewriter.concat_in_place();
  if (options.views) rewriter.views();
  return rewriter.finish();
}

}  // namespace qdqrt::engine
