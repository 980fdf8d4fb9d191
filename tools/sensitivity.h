// `qdqrt calibrate --sensitivity`: which layers a model can least afford to quantize. Each node the
// calibration quantizes is quantized alone (every other node left in float, the same scales) and
// the model's top-1 on a labelled validation subset is measured with the INT8 engine; layers are
// ranked by the top-1 they lose against the FP32 model. The ones at the top are the candidates for
// --exclude (or QAT).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "tools/calibration/qdq_insertion.h"
#include "tools/datasets.h"

namespace qdqrt::tools {

struct SensitivityRow {
  std::string node;
  std::string op_type;
  double top1 = 0;  // %, with only this node quantized
  double lost = 0;  // FP32 top-1 minus top1, in points
};

struct SensitivityReport {
  int64_t images = 0;
  double fp32_top1 = 0;
  double int8_top1 = 0;              // every node quantized (the written model)
  std::vector<SensitivityRow> rows;  // most top-1 lost first
};

// Top-1 (%) of an ONNX model's INT8 (or FP32) engine on labelled images (one image input, logits out).
Result<double> engine_top1(const std::string& model_path, bool fp32, const Dataset& data, int threads);
// The same for a graph in memory (built as from the file it would be written to).
Result<double> engine_top1(const Graph& graph, bool fp32, const Dataset& data, int threads);

// `graph` is the FP32 model, `plan`/`amax` what calibration found, `quantized_path` the written model.
Result<SensitivityReport> rank_layer_sensitivity(const std::string& fp32_path, const Graph& graph,
                                                 const calibration::QuantizationPlan& plan,
                                                 const std::map<std::string, float>& amax,
                                                 const std::string& quantized_path, const Dataset& validation,
                                                 int threads);
// The same with both models in memory (Python's qdqrt.calibrate): `quantized` is the calibrated
// graph, `insert` how its pairs were written (each one-node model is written the same way).
Result<SensitivityReport> rank_layer_sensitivity(const Graph& graph, const Graph& quantized,
                                                 const calibration::QuantizationPlan& plan,
                                                 const std::map<std::string, float>& amax, const Dataset& validation,
                                                 int threads, const calibration::InsertOptions& insert);

// "#  top-1 lost  top-1 (%)  node" rows, most lost first.
std::string format_sensitivity_table(const SensitivityReport& report);

}  // namespace qdqrt::tools
