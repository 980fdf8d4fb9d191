#include "engine/plan_validation.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "core/checked_math.h"
#include "kernels/cpu_features.h"

namespace qdqrt::engine {

namespace {

Status validate_tensors(const EnginePlan& plan) {
  if (plan.max_batch < 1) return invalid_model("engine: max batch {} is below 1", plan.max_batch);
  if (plan.arena_bytes < 0) return invalid_model("engine: arena size {} is negative", plan.arena_bytes);
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& tensor = plan.tensors[t];
    size_t element = dtype_size(tensor.dtype);
    if (element == 0) return invalid_model("engine: tensor '{}' has unsupported dtype {}", tensor.name, dtype_name(tensor.dtype));
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
        return invalid_model("engine: batched tensor '{}' of shape {} has batch axis {} with {} slices per image, "
                             "which does not fit the max batch {}",
                             tensor.name, shape_to_string(tensor.shape), tensor.batch_axis, tensor.batch_factor,
                             plan.max_batch);
      }
    }
    if (tensor.kind == TensorKind::kActivation) {
      if (tensor.arena_offset < 0 || tensor.arena_offset % 64 != 0 ||
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
        return invalid_model("engine: {} '{}' is not marked as one", what, plan.tensors[static_cast<size_t>(index)].name);
      }
      if (plan.tensors[static_cast<size_t>(index)].layout != Layout::kPlain) {
        return invalid_model("engine: {} '{}' is not in plain layout", what, plan.tensors[static_cast<size_t>(index)].name);
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
                           tensor.name, tensor.kind == TensorKind::kActivation ? "an activation"
                                        : tensor.kind == TensorKind::kInput  ? "an input"
                                                                             : "an output",
                           listed[t]);
    }
  }
  return Status::ok();
}

// The plan as a program, layers in order: what each reads exists by then, what it writes is
// written once, and the engine's outputs are all written.
Status validate_dataflow(const EnginePlan& plan) {
  std::vector<bool> written(plan.tensors.size(), false);
  for (int32_t index : plan.inputs) written[static_cast<size_t>(index)] = true;
  for (size_t position = 0; position < plan.layers.size(); ++position) {
    const PlanLayer& layer = plan.layers[position];
    for (int32_t index : layer.inputs) {
      if (index < -1 || index >= static_cast<int32_t>(plan.tensors.size())) {
        return invalid_model("engine: layer '{}' reads tensor {} of {}", layer.name, index, plan.tensors.size());
      }
      if (index >= 0 && !written[static_cast<size_t>(index)]) {
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
  const std::string_view suffix = dash == std::string::npos ? std::string_view(kernel)
                                                            : std::string_view(kernel).substr(dash + 1);
  if (suffix == "scalar") return static_cast<int>(kernels::Isa::kScalar);
  if (suffix == "avx2") return static_cast<int>(kernels::Isa::kAvx2);
  if (suffix == "avxvnni") return static_cast<int>(kernels::Isa::kAvxVnni);
  if (suffix.starts_with("avx512")) return static_cast<int>(kernels::Isa::kAvx512Vnni);
  if (suffix == "amxint8" || suffix == "amxbf16") return static_cast<int>(kernels::Isa::kAmxInt8);
  return -1;
}

Status validate_plan(const EnginePlan& plan) {
  QDQRT_RETURN_IF_ERROR(validate_tensors(plan));
  QDQRT_RETURN_IF_ERROR(validate_dataflow(plan));
  QDQRT_RETURN_IF_ERROR(validate_kernels(plan));
  return validate_sizes(plan);
}

}  // namespace qdqrt::engine
