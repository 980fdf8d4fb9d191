#include "engine/plan_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "core/checked_math.h"
#include "engine/plan_aliases.h"
#include "kernels/cpu_features.h"

namespace qdqrt::engine {

namespace {

Status validate_tensors(const EnginePlan& plan) {
  if (plan.max_batch < 1) return invalid_model("engine: max batch {} is below 1", plan.max_batch);
  if (plan.arena_bytes < 0) return invalid_model("engine: arena size {} is negative", plan.arena_bytes);
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& tensor = plan.tensors[t];
    size_t element = dtype_size(tensor.dtype);
    if (element == 0)
      return invalid_model("engine: tensor '{}' has unsupported dtype {}", tensor.name, dtype_name(tensor.dtype));
    int64_t count = 1;
    for (int64_t dim : tensor.shape) {
      if (dim < 0 || (dim > 0 && count > (int64_t{1} << 40) / dim)) {
        return invalid_model("engine: tensor '{}' has invalid shape {}", tensor.name, shape_to_string(tensor.shape));
      }
      count *= dim;
    }
    if (tensor.bytes != count * static_cast<int64_t>(element)) {
      return invalid_model("engine: tensor '{}' records {} bytes, its shape {} needs {}", tensor.name, tensor.bytes,
                           shape_to_string(tensor.shape), count * static_cast<int64_t>(element));
    }
    if (tensor.layout == Layout::kNhwc && tensor.shape.size() != 4) {
      return invalid_model("engine: tensor '{}' is NHWC but has rank {}", tensor.name, tensor.shape.size());
    }
    if (tensor.batched) {
      const size_t axis = static_cast<size_t>(tensor.batch_axis);
      if (tensor.batch_axis < 0 || axis >= tensor.shape.size() || tensor.batch_factor < 1 ||
          checked_mul(tensor.batch_factor, plan.max_batch) != tensor.shape[axis]) {
        return invalid_model(
            "engine: batched tensor '{}' of shape {} has batch axis {} with {} slices per image, "
            "which does not fit the max batch {}",
            tensor.name, shape_to_string(tensor.shape), tensor.batch_axis, tensor.batch_factor, plan.max_batch);
      }
    }
    if (tensor.kind == TensorKind::kActivation) {
      // An alias starts inside its root (validate_aliases says where).
      if (tensor.arena_offset < 0 || (tensor.alias_of < 0 && tensor.arena_offset % 64 != 0) ||
          tensor.arena_offset > plan.arena_bytes - tensor.bytes) {
        return invalid_model("engine: tensor '{}' at arena offset {} ({} bytes) lies outside the arena of {} bytes",
                             tensor.name, tensor.arena_offset, tensor.bytes, plan.arena_bytes);
      }
    }
  }
  auto check_io = [&](const std::vector<int32_t>& list, TensorKind kind, const char* what) -> Status {
    for (int32_t index : list) {
      if (index < 0 || static_cast<size_t>(index) >= plan.tensors.size()) {
        return invalid_model("engine: {} names tensor {} of {}", what, index, plan.tensors.size());
      }
      if (plan.tensors[static_cast<size_t>(index)].kind != kind) {
        return invalid_model("engine: {} '{}' is not marked as one", what,
                             plan.tensors[static_cast<size_t>(index)].name);
      }
      if (plan.tensors[static_cast<size_t>(index)].layout != Layout::kPlain) {
        return invalid_model("engine: {} '{}' is not in plain layout", what,
                             plan.tensors[static_cast<size_t>(index)].name);
      }
      if (kind == TensorKind::kInput && !batch_leads(plan.tensors[static_cast<size_t>(index)])) {
        return invalid_model("engine: input '{}' has its batch elsewhere than dim 0",
                             plan.tensors[static_cast<size_t>(index)].name);
      }
    }
    return Status::ok();
  };
  QDQRT_RETURN_IF_ERROR(check_io(plan.inputs, TensorKind::kInput, "input"));
  QDQRT_RETURN_IF_ERROR(check_io(plan.outputs, TensorKind::kOutput, "output"));
  // The runtime gives memory to inputs and outputs through these lists only: a tensor marked as
  // one but not listed (or listed twice) would have none, or two bindings.
  std::vector<int> listed(plan.tensors.size(), 0);
  for (const std::vector<int32_t>* list : {&plan.inputs, &plan.outputs}) {
    for (int32_t index : *list) ++listed[static_cast<size_t>(index)];
  }
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& tensor = plan.tensors[t];
    const int expected = tensor.kind == TensorKind::kActivation ? 0 : 1;
    if (listed[t] != expected) {
      return invalid_model("engine: tensor '{}' is {} but listed {} times among the engine's inputs and outputs",
                           tensor.name,
                           tensor.kind == TensorKind::kActivation ? "an activation"
                           : tensor.kind == TensorKind::kInput    ? "an input"
                                                                  : "an output",
                           listed[t]);
    }
  }
  return Status::ok();
}

// Each alias (engine/plan_aliases.h) is an activation inside an activation of its own, where its
// offset puts it; a strided one is columns of that tensor's rows.
Status validate_aliases(const EnginePlan& plan) {
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& tensor = plan.tensors[t];
    if (tensor.alias_of < 0) {
      if (tensor.alias_offset != 0 || tensor.row_stride != 0) {
        return invalid_model("engine: tensor '{}' has an alias offset {} and row stride {} but aliases no tensor",
                             tensor.name, tensor.alias_offset, tensor.row_stride);
      }
      continue;
    }
    if (static_cast<size_t>(tensor.alias_of) >= plan.tensors.size() || static_cast<size_t>(tensor.alias_of) == t) {
      return invalid_model("engine: tensor '{}' aliases tensor {} of {}", tensor.name, tensor.alias_of,
                           plan.tensors.size());
    }
    const PlanTensor& root = plan.tensors[static_cast<size_t>(tensor.alias_of)];
    if (tensor.kind != TensorKind::kActivation || root.kind != TensorKind::kActivation) {
      return invalid_model("engine: tensor '{}' aliases '{}': only activations share bytes", tensor.name, root.name);
    }
    if (root.alias_of >= 0) {
      return invalid_model("engine: tensor '{}' aliases '{}', itself an alias", tensor.name, root.name);
    }
    const int64_t element = static_cast<int64_t>(dtype_size(tensor.dtype));
    if (tensor.dtype != root.dtype || tensor.alias_offset < 0 || tensor.alias_offset % element != 0 ||
        checked_add(root.arena_offset, tensor.alias_offset) != std::optional<int64_t>(tensor.arena_offset)) {
      return invalid_model(
          "engine: tensor '{}' ({} at arena offset {}) is not at offset {} of '{}' ({} at arena "
          "offset {})",
          tensor.name, dtype_name(tensor.dtype), tensor.arena_offset, tensor.alias_offset, root.name,
          dtype_name(root.dtype), root.arena_offset);
    }
    if (tensor.row_stride == 0) {
      // Contiguous: inside the root, and where a smaller batch would move it, at offset 0 with as many bytes.
      const std::optional<int64_t> end = checked_add(tensor.alias_offset, tensor.bytes);
      const bool whole = tensor.alias_offset == 0 && tensor.bytes == root.bytes;
      if (!end || *end > root.bytes || tensor.batched != root.batched ||
          (tensor.batched && plan.max_batch > 1 && !whole)) {
        return invalid_model(
            "engine: tensor '{}' ({} bytes at offset {}) does not lie within '{}' ({} bytes) at "
            "every batch",
            tensor.name, tensor.bytes, tensor.alias_offset, root.name, root.bytes);
      }
      continue;
    }
    // Strided: rows of the root row_stride apart, this tensor's part of each inside it; with a
    // batch, whole slices of rows per image on dim 0 (a smaller batch is fewer of them).
    const int64_t length = strided_row_length(plan, tensor);
    const int64_t root_rows = length == 0 ? 0 : root.bytes / element / tensor.row_stride;
    const std::optional<int64_t> slices = checked_mul(plan.max_batch, root.batch_factor);
    const bool images_whole = !root.batched || (plan.max_batch > 0 && slices && *slices > 0 &&
                                                root_rows % *slices == 0 && batch_on_dim0(root));
    if (length == 0 || tensor.layout != root.layout || batch_layout_of(tensor) != batch_layout_of(root) ||
        !images_whole || tensor.alias_offset / element + length > tensor.row_stride) {
      return invalid_model("engine: tensor '{}' {} with row stride {} at offset {} is not columns of '{}' {}",
                           tensor.name, shape_to_string(tensor.shape), tensor.row_stride, tensor.alias_offset,
                           root.name, shape_to_string(root.shape));
    }
  }
  return Status::ok();
}

// The plan as a program, layers in order: what each reads exists by then, what it writes is
// written once, and the engine's outputs are all written. An alias no layer writes is a view: the
// whole of its root, readable once the root is. Aliases layers write are slices: together they
// cover their root exactly, and the root is readable once all are written (no layer writes it).
Status validate_dataflow(const EnginePlan& plan) {
  const size_t tensor_count = plan.tensors.size();
  std::vector<int> writes(tensor_count, 0);
  for (const PlanLayer& layer : plan.layers) {
    for (int32_t index : layer.outputs) {
      if (index >= 0 && static_cast<size_t>(index) < tensor_count) ++writes[static_cast<size_t>(index)];
    }
  }
  std::vector<int> slices_left(tensor_count, 0);
  std::vector<std::vector<size_t>> slices(tensor_count);
  for (size_t t = 0; t < tensor_count; ++t) {
    const PlanTensor& tensor = plan.tensors[t];
    if (tensor.alias_of < 0) continue;
    const size_t root = static_cast<size_t>(tensor.alias_of);
    if (writes[t] == 0 &&
        (tensor.alias_offset != 0 || tensor.row_stride != 0 || tensor.bytes != plan.tensors[root].bytes)) {
      return invalid_model("engine: no layer writes '{}', and it is not the whole of '{}' it aliases", tensor.name,
                           plan.tensors[root].name);
    }
    if (writes[t] > 0) slices[root].push_back(t);
  }
  for (size_t root = 0; root < tensor_count; ++root) {
    if (slices[root].empty()) continue;
    const PlanTensor& whole = plan.tensors[root];
    if (writes[root] != 0) {
      return invalid_model("engine: a layer writes '{}', which its slices ('{}' and others) make up", whole.name,
                           plan.tensors[slices[root][0]].name);
    }
    // Disjoint intervals (of bytes, or of each row's columns) adding up to the whole.
    const bool strided = plan.tensors[slices[root][0]].row_stride != 0;
    const int64_t element = static_cast<int64_t>(dtype_size(whole.dtype));
    std::vector<std::pair<int64_t, int64_t>> intervals;
    int64_t covered = 0;
    for (size_t slice : slices[root]) {
      const PlanTensor& part = plan.tensors[slice];
      const int64_t first_stride = plan.tensors[slices[root][0]].row_stride;
      if (part.row_stride != first_stride) {
        return invalid_model("engine: slice '{}' of '{}' has row stride {}, slice '{}' {}", part.name, whole.name,
                             part.row_stride, plan.tensors[slices[root][0]].name, first_stride);
      }
      const int64_t length = strided ? strided_row_length(plan, part) * element : part.bytes;
      intervals.emplace_back(part.alias_offset, part.alias_offset + length);
      covered += part.bytes;
    }
    std::sort(intervals.begin(), intervals.end());
    for (size_t i = 1; i < intervals.size(); ++i) {
      if (intervals[i].first < intervals[i - 1].second) {
        for (size_t slice : slices[root]) {
          if (plan.tensors[slice].alias_offset == intervals[i].first) {
            return invalid_model("engine: slice '{}' of '{}' overlaps another slice at offset {}",
                                 plan.tensors[slice].name, whole.name, intervals[i].first);
          }
        }
      }
    }
    if (covered != whole.bytes) {
      return invalid_model("engine: the slices of '{}' cover {} of its {} bytes", whole.name, covered, whole.bytes);
    }
    slices_left[root] = static_cast<int>(slices[root].size());
  }

  std::vector<bool> written(tensor_count, false);
  for (int32_t index : plan.inputs) written[static_cast<size_t>(index)] = true;
  auto readable = [&](size_t t) {
    const int32_t root = plan.tensors[t].alias_of;
    return written[t] || (root >= 0 && writes[t] == 0 && written[static_cast<size_t>(root)]);
  };
  for (size_t position = 0; position < plan.layers.size(); ++position) {
    const PlanLayer& layer = plan.layers[position];
    for (int32_t index : layer.inputs) {
      if (index < -1 || index >= static_cast<int32_t>(plan.tensors.size())) {
        return invalid_model("engine: layer '{}' reads tensor {} of {}", layer.name, index, plan.tensors.size());
      }
      if (index >= 0 && !readable(static_cast<size_t>(index))) {
        return invalid_model("engine: layer {} '{}' reads '{}' before any layer writes it", position, layer.name,
                             plan.tensors[static_cast<size_t>(index)].name);
      }
    }
    for (int32_t index : layer.outputs) {
      if (index < 0 || index >= static_cast<int32_t>(plan.tensors.size())) {
        return invalid_model("engine: layer '{}' writes tensor {} of {}", layer.name, index, plan.tensors.size());
      }
      if (plan.tensors[static_cast<size_t>(index)].kind == TensorKind::kInput) {
        return invalid_model("engine: layer '{}' writes the input '{}'", layer.name,
                             plan.tensors[static_cast<size_t>(index)].name);
      }
      if (written[static_cast<size_t>(index)]) {
        return invalid_model("engine: layer {} '{}' writes '{}', which an earlier layer wrote", position, layer.name,
                             plan.tensors[static_cast<size_t>(index)].name);
      }
      written[static_cast<size_t>(index)] = true;
      const int32_t root = plan.tensors[static_cast<size_t>(index)].alias_of;
      if (root >= 0 && --slices_left[static_cast<size_t>(root)] == 0) written[static_cast<size_t>(root)] = true;
    }
    if (layer.scratch_bytes < 0 || layer.scratch_bytes > plan.scratch_bytes_per_thread) {
      return invalid_model("engine: layer '{}' needs {} scratch bytes, the plan reserves {}", layer.name,
                           layer.scratch_bytes, plan.scratch_bytes_per_thread);
    }
  }
  for (int32_t index : plan.outputs) {
    if (!written[static_cast<size_t>(index)]) {
      return invalid_model("engine: no layer writes the output '{}'", plan.tensors[static_cast<size_t>(index)].name);
    }
  }
  return Status::ok();
}

// Tensors whose bytes overlap in the arena are never live at once unless one aliases the other:
// a tensor lives from the first to the last layer that reads or writes it or an alias of it.
Status validate_arena_overlaps(const EnginePlan& plan) {
  const size_t tensor_count = plan.tensors.size();
  std::vector<int64_t> first(tensor_count, -1), last(tensor_count, -1);
  for (size_t position = 0; position < plan.layers.size(); ++position) {
    const PlanLayer& layer = plan.layers[position];
    for (const std::vector<int32_t>* list : {&layer.inputs, &layer.outputs}) {
      for (int32_t index : *list) {
        if (index < 0) continue;
        const size_t t = static_cast<size_t>(alias_root(plan, index));
        if (first[t] < 0) first[t] = static_cast<int64_t>(position);
        last[t] = static_cast<int64_t>(position);
      }
    }
  }
  std::vector<size_t> roots;
  for (size_t t = 0; t < tensor_count; ++t) {
    const PlanTensor& tensor = plan.tensors[t];
    if (tensor.kind == TensorKind::kActivation && tensor.alias_of < 0 && first[t] >= 0 && tensor.bytes > 0) {
      roots.push_back(t);
    }
  }
  std::sort(roots.begin(), roots.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  for (size_t i = 0; i < roots.size(); ++i) {
    const PlanTensor& a = plan.tensors[roots[i]];
    for (size_t j = i + 1; j < roots.size() && first[roots[j]] <= last[roots[i]]; ++j) {
      const PlanTensor& b = plan.tensors[roots[j]];
      const int64_t begin = std::max(a.arena_offset, b.arena_offset);
      const int64_t end = std::min(a.arena_offset + a.bytes, b.arena_offset + b.bytes);
      if (begin < end) {
        return invalid_model(
            "engine: tensors '{}' and '{}' share arena bytes [{}, {}) while both are live (layer {})"
            " and neither aliases the other",
            a.name, b.name, begin, end, first[roots[j]]);
      }
    }
  }
  return Status::ok();
}

// Kernel names end with what they need: "-scalar", "-avx2", "-avxvnni", "-avx512vnni", "-amxint8", and the
// avx512 supporting kernels "-avx512", "-avx512bw", "-avx512vbmi", "-avx512bf16" (all within avx512vnni's
// level), and "-amxbf16" (amxint8's level).
Status validate_kernels(const EnginePlan& plan) {
  std::optional<kernels::Isa> plan_isa = kernels::parse_isa(plan.isa);
  if (!plan_isa) return invalid_model("engine: the plan's ISA '{}' is unknown", plan.isa);
  for (const PlanLayer& layer : plan.layers) {
    const int level = kernel_isa_level(layer.kernel);
    if (level > static_cast<int>(*plan_isa)) {
      return invalid_model("engine: layer '{}' ({}) records kernel '{}', which needs more than the plan's ISA {}",
                           layer.name, layer.kind, layer.kernel, plan.isa);
    }
  }
  return Status::ok();
}

// The arena ends where its last activation ends (64-byte aligned), the per-thread scratch is the
// largest any layer needs (64-byte aligned): larger sizes are nothing a layer uses, only memory a file could demand.
Status validate_sizes(const EnginePlan& plan) {
  // As the builder places them (engine/builder.cpp plan_memory): each activation takes at least 64 bytes.
  int64_t arena_needed = 0;
  for (const PlanTensor& tensor : plan.tensors) {
    if (tensor.kind != TensorKind::kActivation) continue;
    std::optional<int64_t> end = checked_add(tensor.arena_offset, (std::max<int64_t>(tensor.bytes, 1) + 63) / 64 * 64);
    if (!end) return invalid_model("engine: tensor '{}' ends past the largest arena", tensor.name);
    arena_needed = std::max(arena_needed, *end);
  }
  if (plan.arena_bytes > arena_needed) {
    return invalid_model("engine: the arena is {} bytes, its tensors need {}", plan.arena_bytes, arena_needed);
  }
  int64_t scratch_needed = 0;
  for (const PlanLayer& layer : plan.layers) scratch_needed = std::max(scratch_needed, layer.scratch_bytes);
  std::optional<int64_t> scratch_aligned = checked_align_up(scratch_needed, 64);
  if (!scratch_aligned) return invalid_model("engine: a layer needs {} scratch bytes", scratch_needed);
  scratch_needed = *scratch_aligned;
  if (plan.scratch_bytes_per_thread > scratch_needed) {
    return invalid_model("engine: the per-thread scratch is {} bytes, the largest any layer needs is {}",
                         plan.scratch_bytes_per_thread, scratch_needed);
  }
  return Status::ok();
}

}  // namespace

int kernel_isa_level(const std::string& kernel) {
  const size_t dash = kernel.rfind('-');
  const std::string_view suffix =
      dash == std::string::npos ? std::string_view(kernel) : std::string_view(kernel).substr(dash + 1);
  if (suffix == "scalar") return static_cast<int>(kernels::Isa::kScalar);
  if (suffix == "avx2") return static_cast<int>(kernels::Isa::kAvx2);
  if (suffix == "avxvnni") return static_cast<int>(kernels::Isa::kAvxVnni);
  if (suffix.starts_with("avx512")) return static_cast<int>(kernels::Isa::kAvx512Vnni);
  if (suffix == "amxint8" || suffix == "amxbf16") return static_cast<int>(kernels::Isa::kAmxInt8);
  return -1;
}

Status validate_plan(const EnginePlan& plan) {
  QDQRT_RETURN_IF_ERROR(validate_tensors(plan));
  QDQRT_RETURN_IF_ERROR(validate_aliases(plan));
  QDQRT_RETURN_IF_ERROR(validate_dataflow(plan));
  QDQRT_RETURN_IF_ERROR(validate_arena_overlaps(plan));
  QDQRT_RETURN_IF_ERROR(validate_kernels(plan));
  return validate_sizes(plan);
}

}  // namespace qdqrt::engine
