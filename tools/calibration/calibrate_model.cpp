#include "tools/calibration/calibrate_model.h"

#include <algorithm>

#include "tools/calibration/collector.h"

namespace qdqrt::calibration {

int64_t automatic_batch_size(const Graph& graph, const std::vector<std::string>& tensors, int64_t budget_bytes) {
  constexpr int64_t kMaxBatch = 32;
  int64_t bytes_per_image = 0;
  for (const std::string& name : tensors) {
    const ValueInfo* info = graph.find_value(name);
    int64_t elements = 1;
    if (info != nullptr && info->shape) {
      for (const Dim& dim : *info->shape) elements *= dim.is_static() ? std::max<int64_t>(dim.value, 1) : 1;
    }
    bytes_per_image += elements * static_cast<int64_t>(sizeof(float));
  }
  if (bytes_per_image == 0) return kMaxBatch;
  return std::clamp<int64_t>(budget_bytes / bytes_per_image, 1, kMaxBatch);
}

Status check_calibration_input(const Graph& graph) {
  if (graph.inputs.size() != 1) {
    return unsupported("the model has {} inputs; calibration feeds one image input", graph.inputs.size());
  }
  const ValueInfo* input_info = graph.find_value(graph.inputs[0]);
  if (input_info == nullptr || input_info->dtype != DataType::kFloat || !input_info->shape) {
    return unsupported("model input '{}' must be float32 with a known rank", graph.inputs[0]);
  }
  return Status::ok();
}

Result<CalibratedModel> calibrate_model(const Graph& graph, const QuantizationPlan& plan, const Tensor& images,
                                        const CalibrateModelOptions& options) {
  return calibrate_model(graph, plan, std::vector<Tensor>{images}, options);
}

Result<CalibratedModel> calibrate_model(const Graph& graph, const QuantizationPlan& plan,
                                        const std::vector<Tensor>& image_groups, const CalibrateModelOptions& options) {
  QDQRT_RETURN_IF_ERROR(check_calibration_input(graph));
  const ValueInfo* input_info = graph.find_value(graph.inputs[0]);
  for (const Tensor& images : image_groups) {
    if (images.dtype() != DataType::kFloat || images.rank() != static_cast<int64_t>(input_info->shape->size())) {
      return invalid_argument("calibration images for '{}' must be float32 of rank {}, got {} of rank {}",
                              graph.inputs[0], input_info->shape->size(), dtype_name(images.dtype()), images.rank());
    }
  }
  const std::vector<Tensor>& images = image_groups;
  CollectOptions collect;
  std::vector<std::string> tensors = plan.tensors_to_calibrate();
  collect.batch_size = options.batch_size > 0 ? options.batch_size : automatic_batch_size(graph, tensors);
  collect.threads = options.threads;
  collect.show_progress = options.show_progress;
  collect.inputs_by_max = !options.calibrate_inputs;
  auto amax = calibrate_tensors(graph, images, tensors, options.method, collect);
  if (!amax.ok()) return amax.status().with_context("calibration run");
  QDQRT_ASSIGN_OR_RETURN(Graph quantized, insert_qdq(graph, plan, *amax, options.insert));
  CalibratedModel result;
  result.quantized = std::move(quantized);
  result.activation_amax = std::move(amax).value();
  result.quantized_activations = static_cast<int>(plan.activations.size());
  result.quantized_weights = static_cast<int>(plan.weights.size());
  return result;
}

}  // namespace qdqrt::calibration
