// Post-training calibration of a loaded FP32 graph on images already in memory: plan where Q/DQ
// pairs go, measure the activations, insert the pairs. `qdqrt calibrate` (tools/calibrate_command.cpp)
// reads the model and a data set and calls this; so does Python's qdqrt.calibrate (python/).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"
#include "tools/calibration/histogram.h"
#include "tools/calibration/qdq_insertion.h"

namespace qdqrt::calibration {

struct CalibrateModelOptions {
  MethodSpec method;
  int threads = 0;         // 0 = all cores
  int64_t batch_size = 0;  // images per reference run; 0 = automatic_batch_size
  bool show_progress = false;
  bool calibrate_inputs = false;  // apply the method to graph inputs too (default: their max)
  InsertOptions insert;           // how the Q/DQ pairs are written (dtype, per-channel weights)
};

struct CalibratedModel {
  Graph quantized;                               // the graph with Q/DQ pairs
  std::map<std::string, float> activation_amax;  // per calibrated tensor
  int quantized_activations = 0;
  int quantized_weights = 0;
};

// Images per reference run such that the tensors kept for calibration (their static dims, symbolic
// dims taken as 1) stay within about `budget_bytes` per worker thread; 1..32.
int64_t automatic_batch_size(const Graph& graph, const std::vector<std::string>& tensors,
                             int64_t budget_bytes = int64_t{256} << 20);

// The graph must have one input, float32 with a known rank (kUnsupported otherwise).
Status check_calibration_input(const Graph& graph);
// `plan` is plan_quantization(graph, placement); `images` is float32 [N, ...] for the graph's input.
Result<CalibratedModel> calibrate_model(const Graph& graph, const QuantizationPlan& plan, const Tensor& images,
                                        const CalibrateModelOptions& options);
// Images that differ in size: groups of one size each, [n, ...] (Dataset::groups()).
Result<CalibratedModel> calibrate_model(const Graph& graph, const QuantizationPlan& plan,
                                        const std::vector<Tensor>& image_groups, const CalibrateModelOptions& options);

}  // namespace qdqrt::calibration
