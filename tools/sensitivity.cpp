#include "tools/sensitivity.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "engine/engine.h"
#include "tools/engine_from_graph.h"

namespace qdqrt::tools {

namespace {

using BuildEngine = std::function<Result<std::shared_ptr<const engine::Engine>>(const engine::BuildOptions&)>;

// Top-1 of the engine `build_engine` gives; `what` names the model in messages.
Result<double> top1_of(const BuildEngine& build_engine, const std::string& what, bool fp32, const Dataset& data,
                       int threads) {
  if (!data.labels || data.size() == 0) return invalid_argument("the validation images have no labels");
  const int64_t count = data.size();
  const int64_t max_batch = std::min<int64_t>(64, count);
  Shape image_shape(data.images.shape().begin() + 1, data.images.shape().end());
  const int64_t image_size = shape_numel(image_shape);
  engine::BuildOptions build;
  build.precision = fp32 ? engine::Precision::kFp32 : engine::Precision::kInt8;
  auto probe = build_engine(build);  // the input's name
  if (!probe.ok()) return probe.status().with_context(what);
  if ((*probe)->inputs().size() != 1) return unsupported("'{}' needs one image input", what);
  std::string input_name = (*probe)->inputs()[0].name;
  Shape input_shape = image_shape;
  input_shape.insert(input_shape.begin(), max_batch);
  build.input_shapes[input_name] = input_shape;
  QDQRT_ASSIGN_OR_RETURN(auto engine, build_engine(build));
  engine::IoTensorInfo output = engine->outputs().front();
  if (output.dtype != DataType::kFloat || output.shape.empty() || output.shape[0] != max_batch) {
    return unsupported("'{}': output '{}' is not float32 logits [batch, classes]", what, output.name);
  }
  const int64_t classes = shape_numel(output.shape) / max_batch;
  auto context = engine->create_context({.threads = threads});
  std::vector<float> logits(static_cast<size_t>(max_batch * classes));
  int64_t correct = 0;
  for (int64_t begin = 0; begin < count; begin += max_batch) {
    int64_t batch = std::min(max_batch, count - begin);
    Shape in_shape = input_shape, out_shape = output.shape;
    in_shape[0] = batch;
    out_shape[0] = batch;
    QDQRT_RETURN_IF_ERROR(context->run({{input_name, data.images.data<float>() + begin * image_size, in_shape}},
                                       {{output.name, logits.data(), out_shape}}));
    for (int64_t i = 0; i < batch; ++i) {
      const float* row = logits.data() + i * classes;
      correct += (std::max_element(row, row + classes) - row) == data.labels->data<int64_t>()[begin + i] ? 1 : 0;
    }
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(count);
}

}  // namespace

Result<double> engine_top1(const std::string& model_path, bool fp32, const Dataset& data, int threads) {
  auto build = [&](const engine::BuildOptions& options) { return engine::Engine::build_from_file(model_path, options); };
  return top1_of(build, model_path, fp32, data, threads);
}

Result<double> engine_top1(const Graph& graph, bool fp32, const Dataset& data, int threads) {
  auto build = [&](const engine::BuildOptions& options) { return build_engine_from_graph(graph, options); };
  return top1_of(build, "the quantized model", fp32, data, threads);
}

namespace {

// The ranking once the FP32 and fully quantized top-1 are in `report`: each quantized node alone.
Result<SensitivityReport> rank_nodes(SensitivityReport report, const Graph& graph,
                                     const calibration::QuantizationPlan& plan, const std::map<std::string, float>& amax,
                                     const Dataset& validation, int threads, const calibration::InsertOptions& insert) {
  // A tensor whose scale follows another's keeps that amax when its source is not quantized.
  std::map<std::string, float> all_amax = amax;
  for (const calibration::ActivationQuantization& activation : plan.activations) {
    if (!activation.amax_from.empty() && amax.count(activation.amax_from)) {
      all_amax[activation.tensor] = amax.at(activation.amax_from);
    }
  }
  std::set<size_t> quantized_nodes;
  for (const auto& activation : plan.activations) {
    for (const auto& reader : activation.readers) quantized_nodes.insert(reader.node);
  }
  for (const auto& weight : plan.weights) {
    for (const auto& reader : weight.readers) quantized_nodes.insert(reader.node);
  }
  for (size_t node : quantized_nodes) {
    std::vector<std::string> others;
    for (size_t other : quantized_nodes) {
      if (other != node) others.push_back(graph.nodes[other].name);
    }
    calibration::QuantizationPlan single = plan;
    QDQRT_RETURN_IF_ERROR(calibration::exclude_nodes(single, graph, others));
    QDQRT_ASSIGN_OR_RETURN(Graph quantized, calibration::insert_qdq(graph, single, all_amax, insert));
    auto top1 = engine_top1(quantized, false, validation, threads);
    if (!top1.ok()) return top1.status().with_context("with only " + graph.nodes[node].describe() + " quantized");
    report.rows.push_back({graph.nodes[node].name, graph.nodes[node].op_type, *top1, report.fp32_top1 - *top1});
  }
  std::stable_sort(report.rows.begin(), report.rows.end(),
                   [](const SensitivityRow& a, const SensitivityRow& b) { return a.lost > b.lost; });
  return report;
}

}  // namespace

Result<SensitivityReport> rank_layer_sensitivity(const std::string& fp32_path, const Graph& graph,
                                                 const calibration::QuantizationPlan& plan,
                                                 const std::map<std::string, float>& amax,
                                                 const std::string& quantized_path, const Dataset& validation,
                                                 int threads) {
  SensitivityReport report;
  report.images = validation.size();
  QDQRT_ASSIGN_OR_RETURN(report.fp32_top1, engine_top1(fp32_path, true, validation, threads));
  QDQRT_ASSIGN_OR_RETURN(report.int8_top1, engine_top1(quantized_path, false, validation, threads));
  return rank_nodes(std::move(report), graph, plan, amax, validation, threads, {});
}

Result<SensitivityReport> rank_layer_sensitivity(const Graph& graph, const Graph& quantized,
                                                 const calibration::QuantizationPlan& plan,
                                                 const std::map<std::string, float>& amax, const Dataset& validation,
                                                 int threads, const calibration::InsertOptions& insert) {
  SensitivityReport report;
  report.images = validation.size();
  QDQRT_ASSIGN_OR_RETURN(report.fp32_top1, engine_top1(graph, true, validation, threads));
  QDQRT_ASSIGN_OR_RETURN(report.int8_top1, engine_top1(quantized, false, validation, threads));
  return rank_nodes(std::move(report), graph, plan, amax, validation, threads, insert);
}

std::string format_sensitivity_table(const SensitivityReport& report) {
  std::string text = fmt::format(
      "=== Sensitivity: top-1 on {} validation images with one node quantized at a time ===\n"
      "FP32 {:.2f}%, every node quantized {:.2f}% ({:+.2f} points)\n",
      report.images, report.fp32_top1, report.int8_top1, report.int8_top1 - report.fp32_top1);
  text += fmt::format("{:>4}  {:>12}  {:>9}  {}\n", "#", "top-1 lost", "top-1 (%)", "node");
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const SensitivityRow& row = report.rows[i];
    text += fmt::format("{:>4}  {:>12.2f}  {:>9.2f}  {} ({})\n", i + 1, row.lost, row.top1, row.node, row.op_type);
  }
  return text;
}

}  // namespace qdqrt::tools
