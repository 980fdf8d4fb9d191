#include "tools/exec_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "tools/layer_info_schema.h"

namespace qdqrt::tools {

namespace {

std::string dims_text(const Shape& shape) {
  if (shape.empty()) return "";  // a scalar, as trtexec prints it
  return fmt::format("{}", fmt::join(shape, "x"));
}

std::string tensor_text(const engine::EnginePlan& plan, int32_t index) {
  if (index < 0) return "-";
  if (static_cast<size_t>(index) >= plan.tensors.size()) return fmt::format("<tensor {}?>", index);
  const engine::PlanTensor& tensor = plan.tensors[static_cast<size_t>(index)];
  std::string text = fmt::format("{} {} {}", tensor.name, dtype_name(tensor.dtype), shape_to_string(tensor.shape));
  if (tensor.layout != engine::Layout::kPlain) text += fmt::format(" {}", engine::layout_name(tensor.layout));
  // Bytes shared with another tensor (engine/plan_aliases.h): a Concat's slice or a view.
  if (tensor.alias_of >= 0 && static_cast<size_t>(tensor.alias_of) < plan.tensors.size()) {
    text += fmt::format(" in {} at byte {}", plan.tensors[static_cast<size_t>(tensor.alias_of)].name,
                        tensor.alias_offset);
    if (tensor.row_stride != 0) text += fmt::format(" row stride {}", tensor.row_stride);
  }
  return text;
}

// trtexec's tensor object (tools/layer_info_schema.h) plus qdqrt's own keys.
nlohmann::ordered_json tensor_json(const engine::EnginePlan& plan, int32_t index) {
  const engine::PlanTensor& tensor = plan.tensors[static_cast<size_t>(index)];
  const char* buffer = tensor.kind == engine::TensorKind::kInput    ? "input"
                       : tensor.kind == engine::TensorKind::kOutput ? "output"
                                                                    : "arena";
  nlohmann::ordered_json json =
      trtexec_tensor_json(tensor.name, tensor.shape, tensor.dtype, tensor.layout == engine::Layout::kNhwc);
  json["Datatype"] = dtype_name(tensor.dtype);
  json["Layout"] = engine::layout_name(tensor.layout);
  json["Batched"] = tensor.batched;
  json["Buffer"] = buffer;
  if (tensor.alias_of >= 0 && static_cast<size_t>(tensor.alias_of) < plan.tensors.size()) {
    json["AliasOf"] = plan.tensors[static_cast<size_t>(tensor.alias_of)].name;
    json["AliasOffset"] = tensor.alias_offset;
    json["RowStride"] = tensor.row_stride;
  }
  return json;
}

bool is_int8_dtype(DataType dtype) { return dtype == DataType::kInt8 || dtype == DataType::kUint8; }

// Layers that only convert between precisions or layouts: they are neither INT8 nor FP32 compute.
bool is_border_layer(const engine::PlanLayer& layer) {
  return layer.kind == "quantize" || layer.kind == "dequantize" || layer.kind == "requantize" ||
         layer.kind == "reorder" || layer.kind == "copy";
}

bool layer_touches_int8(const engine::EnginePlan& plan, const engine::PlanLayer& layer) {
  for (const auto* list : {&layer.inputs, &layer.outputs}) {
    for (int32_t index : *list) {
      if (index >= 0 && static_cast<size_t>(index) < plan.tensors.size() &&
          is_int8_dtype(plan.tensors[static_cast<size_t>(index)].dtype)) {
        return true;
      }
    }
  }
  return false;
}

const char* layer_precision(const engine::EnginePlan& plan, const engine::PlanLayer& layer) {
  if (is_border_layer(layer)) return "Reformat";
  return layer_touches_int8(plan, layer) ? "INT8" : "FP32";
}

}  // namespace

Result<std::vector<double>> parse_percentiles(const std::string& text) {
  std::vector<double> values;
  size_t begin = 0;
  while (true) {
    size_t end = text.find(',', begin);
    std::string item = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    // Trim spaces so "90, 95" is accepted.
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty()) return invalid_argument("'{}': empty entry (expected numbers like 90,95,99)", text);
    size_t used = 0;
    double value = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || !std::isfinite(value)) {
      return invalid_argument("'{}': '{}' is not a number (expected numbers like 90,95,99)", text, item);
    }
    if (value < 0 || value > 100) return invalid_argument("'{}': percentile {} is not in [0, 100]", text, item);
    values.push_back(value);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return values;
}

double median_of_sorted(std::span<const double> sorted) {
  if (sorted.empty()) return std::numeric_limits<double>::infinity();
  size_t middle = sorted.size() / 2;
  if (sorted.size() % 2) return sorted[middle];
  return (sorted[middle - 1] + sorted[middle]) / 2;
}

double percentile_of_sorted(std::span<const double> sorted, double percentile) {
  if (sorted.empty()) return std::numeric_limits<double>::infinity();
  auto count = static_cast<int64_t>(sorted.size());
  // (100 - p) * n / 100 rather than (1 - p / 100) * n: the latter rounds 0.9999.. down for p = 90, n = 10.
  auto exclude = static_cast<int64_t>(std::floor((100.0 - percentile) * static_cast<double>(count) / 100.0));
  return sorted[static_cast<size_t>(std::max<int64_t>(count - 1 - exclude, 0))];
}

LatencyStats compute_latency_stats(std::vector<double> samples, std::span<const double> percentiles) {
  LatencyStats stats;
  stats.count = samples.size();
  std::sort(samples.begin(), samples.end());
  if (!samples.empty()) {
    stats.min = samples.front();
    stats.max = samples.back();
    stats.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    double squares = 0;
    for (double sample : samples) squares += (sample - stats.mean) * (sample - stats.mean);
    stats.stddev = std::sqrt(squares / static_cast<double>(samples.size()));
  }
  stats.median = median_of_sorted(samples);
  for (double p : percentiles) stats.percentiles.emplace_back(p, percentile_of_sorted(samples, p));
  return stats;
}

PerformanceSummary summarize_performance(std::span<const InferenceTiming> timings, std::span<const double> percentiles) {
  PerformanceSummary summary;
  summary.inferences = timings.size();
  std::vector<double> latencies;
  latencies.reserve(timings.size());
  for (const InferenceTiming& timing : timings) latencies.push_back(timing.latency_ms());
  summary.latency = compute_latency_stats(std::move(latencies), percentiles);
  if (!timings.empty()) {
    double first_start = timings.front().start_ms;
    double last_end = timings.front().end_ms;
    for (const InferenceTiming& timing : timings) {
      first_start = std::min(first_start, timing.start_ms);
      last_end = std::max(last_end, timing.end_ms);
    }
    summary.walltime_s = (last_end - first_start) / 1000.0;
    if (summary.walltime_s > 0) summary.throughput_qps = static_cast<double>(timings.size()) / summary.walltime_s;
  }
  return summary;
}

std::string format_performance_summary(const PerformanceSummary& summary) {
  const LatencyStats& latency = summary.latency;
  std::string text = "=== Performance summary ===\n";
  text += fmt::format("Throughput: {:.6g} qps\n", summary.throughput_qps);
  text += fmt::format("Latency: min = {:.6g} ms, max = {:.6g} ms, mean = {:.6g} ms, median = {:.6g} ms", latency.min,
                      latency.max, latency.mean, latency.median);
  for (const auto& [p, value] : latency.percentiles) text += fmt::format(", percentile({:g}%) = {:.6g} ms", p, value);
  text += "\n";
  text += fmt::format("Total Host Walltime: {:.6g} s\n", summary.walltime_s);
  text += fmt::format("Total Inferences: {}\n", summary.inferences);
  return text;
}

std::string format_stability_warning(const LatencyStats& latency) {
  double variation = latency.coefficient_of_variation();
  if (latency.count < 2 || variation <= kStableCoefficientOfVariation) return "";
  return fmt::format(
      "[W] * Latency is unstable, with coefficient of variation = {:.2f}% (above {:g}%).\n"
      "[W]   Other processes sharing the cores, too many --threads or frequency scaling add noise: "
      "run longer (--duration), with fewer threads, on an idle machine.\n",
      100.0 * variation, 100.0 * kStableCoefficientOfVariation);
}

std::string format_single_thread_warning(int64_t single_thread_runs, size_t runs) {
  if (single_thread_runs <= 0) return "";
  return fmt::format(
      "[W] * {} of {} timed runs went on the calling thread alone, whole or from some layer on: the helper "
      "threads stalled (another process held their cores), and such runs back off from them for a while.\n"
      "[W]   Their latency is that of one thread: run on an idle machine or with fewer --threads.\n",
      single_thread_runs, runs);
}

std::string format_trace_averages(std::span<const InferenceTiming> timings, int avg_runs) {
  std::string text = "=== Trace details ===\n";
  text += fmt::format("Trace averages of {} runs:\n", avg_runs);
  if (avg_runs < 1) return text;
  double sum = 0;
  int in_group = 0;
  for (const InferenceTiming& timing : timings) {
    sum += timing.latency_ms();
    if (++in_group == avg_runs) {
      text += fmt::format("Average on {} runs - latency: {:.6g} ms\n", avg_runs, sum / avg_runs);
      sum = 0;
      in_group = 0;
    }
  }
  return text;
}

std::string timings_to_json_text(std::span<const InferenceTiming> timings) {
  // trtexec's fields, all of them: a CPU run has no enqueue apart from the run itself and no
  // copies, so enqueue spans the compute and the copies are empty spans at its ends.
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const InferenceTiming& timing : timings) {
    array.push_back({{"startEnqMs", timing.start_ms},
                     {"endEnqMs", timing.end_ms},
                     {"startH2dMs", timing.start_ms},
                     {"endH2dMs", timing.start_ms},
                     {"startComputeMs", timing.start_ms},
                     {"endComputeMs", timing.end_ms},
                     {"startD2hMs", timing.end_ms},
                     {"endD2hMs", timing.end_ms},
                     {"h2dMs", 0.0},
                     {"computeMs", timing.latency_ms()},
                     {"d2hMs", 0.0},
                     {"latencyMs", timing.latency_ms()}});
  }
  return json_array_lines(array);
}

ProfileRecorder::ProfileRecorder(std::vector<std::string> layer_names)
    : layer_names_(std::move(layer_names)), layer_samples_(layer_names_.size()) {}

void ProfileRecorder::reserve(size_t runs) {
  for (std::vector<double>& samples : layer_samples_) samples.reserve(samples.size() + runs);
  run_totals_ms_.reserve(run_totals_ms_.size() + runs);
}

Status ProfileRecorder::add_run(std::span<const double> layer_times_ms) {
  if (layer_times_ms.size() != layer_names_.size()) {
    return internal_error("profile: {} layer times for {} layers", layer_times_ms.size(), layer_names_.size());
  }
  double total = 0;
  for (size_t layer = 0; layer < layer_times_ms.size(); ++layer) {
    layer_samples_[layer].push_back(layer_times_ms[layer]);
    total += layer_times_ms[layer];
  }
  run_totals_ms_.push_back(total);
  return Status::ok();
}

ProfileReport summarize_profile(const ProfileRecorder& recorder) {
  ProfileReport report;
  report.count = recorder.runs();
  double runs = std::max<double>(1.0, static_cast<double>(report.count));
  double total_ms = std::accumulate(recorder.run_totals_ms().begin(), recorder.run_totals_ms().end(), 0.0);
  for (size_t layer = 0; layer < recorder.layer_names().size(); ++layer) {
    std::vector<double> samples = recorder.layer_samples()[layer];
    std::sort(samples.begin(), samples.end());
    ProfileRow row;
    row.name = recorder.layer_names()[layer];
    row.time_ms = std::accumulate(samples.begin(), samples.end(), 0.0);
    row.average_ms = row.time_ms / runs;
    row.median_ms = samples.empty() ? 0.0 : median_of_sorted(samples);
    row.percentage = total_ms > 0 ? row.time_ms / total_ms * 100.0 : 0.0;
    report.rows.push_back(std::move(row));
  }
  std::vector<double> totals = recorder.run_totals_ms();
  std::sort(totals.begin(), totals.end());
  report.total.name = "Total";
  report.total.time_ms = total_ms;
  report.total.average_ms = total_ms / runs;
  report.total.median_ms = totals.empty() ? 0.0 : median_of_sorted(totals);
  report.total.percentage = 100.0;
  return report;
}

std::string format_profile_table(const ProfileReport& report) {
  std::string text = fmt::format("=== Profile ({} iterations) ===\n", report.count);
  text += fmt::format("{:>11}{:>13}{:>13}{:>10}   {}\n", "Time(ms)", "Avg.(ms)", "Median(ms)", "Time(%)", "Layer");
  auto row_text = [](const ProfileRow& row) {
    return fmt::format("{:>11.2f}{:>13.4f}{:>13.4f}{:>10.1f}   {}\n", row.time_ms, row.average_ms, row.median_ms,
                       row.percentage, row.name);
  };
  for (const ProfileRow& row : report.rows) text += row_text(row);
  text += row_text(report.total);
  return text;
}

nlohmann::ordered_json profile_to_json(const ProfileReport& report) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  array.push_back({{"count", report.count}});
  for (const ProfileRow& row : report.rows) {
    array.push_back({{"name", row.name},
                     {"timeMs", row.time_ms},
                     {"averageMs", row.average_ms},
                     {"medianMs", row.median_ms},
                     {"percentage", row.percentage}});
  }
  return array;
}

std::string json_array_lines(const nlohmann::ordered_json& array) {
  std::string text = "[\n";
  for (size_t i = 0; i < array.size(); ++i) {
    text += (i == 0 ? "  " : ", ") + array[i].dump() + "\n";
  }
  text += "]\n";
  return text;
}

nlohmann::ordered_json outputs_to_json(const std::vector<std::pair<std::string, Tensor>>& outputs) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const auto& [name, tensor] : outputs) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    bool is_float = dtype_is_float(tensor.dtype());
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (tensor.dtype() == DataType::kFloat) {
        // Through float's shortest round-trip text, so 0.1f is written 0.1 and reads back as the same float.
        float value = tensor.data<float>()[i];
        if (std::isfinite(value)) {
          values.push_back(std::strtod(fmt::format("{}", value).c_str(), nullptr));
        } else {
          values.push_back(nullptr);
        }
      } else if (is_float) {
        double value = tensor.value_as_double(i);
        values.push_back(std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr));
      } else if (tensor.dtype() == DataType::kBool) {
        values.push_back(tensor.data<bool>()[i]);
      } else if (tensor.dtype() == DataType::kUint64) {
        values.push_back(tensor.data<uint64_t>()[i]);
      } else {
        values.push_back(tensor.value_as_int64(i));
      }
    }
    array.push_back({{"name", name},
                     {"dimensions", dims_text(tensor.shape())},
                     {"datatype", dtype_name(tensor.dtype())},
                     {"values", std::move(values)}});
  }
  return array;
}

PrecisionCount count_layer_precisions(const engine::EnginePlan& plan) {
  PrecisionCount count;
  count.layers = static_cast<int64_t>(plan.layers.size());
  for (const engine::PlanLayer& layer : plan.layers) {
    std::string precision = layer_precision(plan, layer);
    if (precision == "INT8") ++count.int8_layers;
    // A reorder between float tensors is not a precision border.
    if (precision == "Reformat" && layer_touches_int8(plan, layer)) ++count.border_layers;
  }
  return count;
}

std::string PrecisionCount::label() const { return int8_layers > 0 || border_layers > 0 ? "int8" : "fp32"; }

std::string PrecisionCount::text(bool fp32_requested) const {
  std::string text = fmt::format("{} (int8: {} of {} layers", label(), int8_layers, layers);
  if (border_layers > 0) text += fmt::format(", {} quantize/dequantize/reorder", border_layers);
  if (label() == "fp32" && !fp32_requested) text += "; this model has no Q/DQ";
  return text + ")";
}

namespace {

// A layer parameter by name, or by "<prefix>.name" (fused layers keep each part's under a prefix).
const engine::ParamValue* find_param(const engine::PlanLayer& layer, const std::string& name) {
  for (const auto& [key, value] : layer.params.values()) {
    if (key == name || (key.size() > name.size() && key.ends_with("." + name))) return &value;
  }
  return nullptr;
}

std::vector<int64_t> param_ints(const engine::PlanLayer& layer, const std::string& name, std::vector<int64_t> fallback) {
  const engine::ParamValue* value = find_param(layer, name);
  if (value != nullptr) {
    if (const auto* ints = std::get_if<std::vector<int64_t>>(value)) return *ints;
  }
  return fallback;
}

int64_t param_int(const engine::PlanLayer& layer, const std::string& name, int64_t fallback) {
  const engine::ParamValue* value = find_param(layer, name);
  if (value != nullptr) {
    if (const auto* integer = std::get_if<int64_t>(value)) return *integer;
  }
  return fallback;
}

// TensorRT's convolution keys as TREx reads them (df_preprocessing's Convolution attributes and
// layer.py's Weights/Bias): Kernel [kh, kw], Groups, OutMaps, Stride, Dilation, PrePadding,
// PostPadding, PaddingMode, HasBias, Weights and Bias {Type, Count}.
void add_convolution_keys(nlohmann::ordered_json& json, const engine::EnginePlan& plan, const engine::PlanLayer& layer) {
  if (layer.inputs.empty() || layer.inputs[0] < 0 || layer.outputs.empty()) return;
  const engine::PlanTensor& x = plan.tensors[static_cast<size_t>(layer.inputs[0])];
  const engine::PlanTensor& y = plan.tensors[static_cast<size_t>(layer.outputs[0])];
  if (x.shape.size() != 4 || y.shape.size() != 4) return;
  const std::vector<int64_t> kernel = param_ints(layer, "kernel", {1, 1});
  const std::vector<int64_t> strides = param_ints(layer, "strides", {1, 1});
  const std::vector<int64_t> dilations = param_ints(layer, "dilations", {1, 1});
  std::vector<int64_t> pads = param_ints(layer, "pads", {0, 0, 0, 0});
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 || (pads.size() != 2 && pads.size() != 4)) return;
  const int64_t groups = std::max<int64_t>(1, param_int(layer, "groups", param_int(layer, "group", 1)));
  const int64_t out_maps = y.shape[1];
  std::vector<int64_t> pre = {pads[0], pads[1]}, post(2, 0);
  for (size_t axis = 0; axis < 2; ++axis) {
    if (pads.size() == 4) {
      post[axis] = pads[axis + 2];
    } else {  // only the leading pads are stored: the trailing ones follow from the shapes
      const int64_t span = dilations[axis] * (kernel[axis] - 1) + 1;
      post[axis] = std::max<int64_t>(0, (y.shape[axis + 2] - 1) * strides[axis] + span - x.shape[axis + 2] - pre[axis]);
    }
  }
  const bool int8 = x.dtype == DataType::kInt8 || x.dtype == DataType::kUint8;
  bool has_bias = false;
  for (const engine::Blob& blob : layer.blobs) {
    for (const char* name : {"bias", "real_bias"}) {  // float layers' bias; INT8 layers' float bias per column
      has_bias |= blob.name == name || blob.name.ends_with(std::string(".") + name);
    }
  }
  json["Kernel"] = kernel;
  json["Groups"] = groups;
  json["OutMaps"] = out_maps;
  json["Stride"] = strides;
  json["Dilation"] = dilations;
  json["PrePadding"] = pre;
  json["PostPadding"] = post;
  json["PaddingMode"] = "kEXPLICIT_ROUND_DOWN";
  json["HasBias"] = has_bias ? 1 : 0;
  json["Weights"] = {{"Type", int8 ? "Int8" : "Float"}, {"Count", out_maps * (x.shape[1] / groups) * kernel[0] * kernel[1]}};
  json["Bias"] = {{"Type", "Float"}, {"Count", has_bias ? out_maps : 0}};
}

}  // namespace

nlohmann::ordered_json layer_info_to_json(const engine::EnginePlan& plan, bool detailed) {
  nlohmann::ordered_json bindings = nlohmann::ordered_json::array();
  for (int32_t index : plan.inputs) bindings.push_back(plan.tensors[static_cast<size_t>(index)].name);
  for (int32_t index : plan.outputs) bindings.push_back(plan.tensors[static_cast<size_t>(index)].name);
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  if (!detailed) {
    // trtexec's --profilingVerbosity=layer_names_only: the layer names alone.
    for (const engine::PlanLayer& layer : plan.layers) layers.push_back(layer.name);
    return {{"Layers", std::move(layers)}, {"Bindings", std::move(bindings)}};
  }
  for (const engine::PlanLayer& layer : plan.layers) {
    // An absent optional input is left out: TREx reads every entry as a tensor.
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    for (int32_t index : layer.inputs) {
      if (index >= 0) inputs.push_back(tensor_json(plan, index));
    }
    nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
    for (int32_t index : layer.outputs) outputs.push_back(tensor_json(plan, index));
    size_t weight_bytes = 0;
    for (const engine::Blob& blob : layer.blobs) weight_bytes += blob.bytes.size();
    // TensorRT's keys first, then qdqrt's own under names TensorRT does not use ("Kernel" is
    // TensorRT's convolution window: the kernel qdqrt picked is TacticName and QdqrtKernel).
    nlohmann::ordered_json json = {{"Name", layer.name},
                                   {"LayerType", layer.kind},
                                   {"Inputs", std::move(inputs)},
                                   {"Outputs", std::move(outputs)},
                                   {"ParameterType", trtexec_parameter_type(layer.op_type)},
                                   {"TacticName", layer.kernel}};
    if (json["ParameterType"] == "Convolution") add_convolution_keys(json, plan, layer);
    json["Precision"] = layer_precision(plan, layer);
    json["OpType"] = layer.op_type;
    json["QdqrtKernel"] = layer.kernel;
    json["SourceNodes"] = layer.source_nodes;
    json["ScratchBytes"] = layer.scratch_bytes;
    json["WeightBytes"] = weight_bytes;
    if (layer.kind == "reference") json["ReferenceReason"] = engine::reference_layer_reason(layer);
    layers.push_back(std::move(json));
  }
  PrecisionCount precision = count_layer_precisions(plan);
  return {{"Layers", std::move(layers)},
          {"Bindings", std::move(bindings)},
          {"Precision", precision.label()},
          {"Int8Layers", precision.int8_layers},
          {"LayerCount", precision.layers},
          {"ReferenceLayers", std::count_if(plan.layers.begin(), plan.layers.end(),
                                            [](const engine::PlanLayer& layer) { return layer.kind == "reference"; })},
          {"BuildPrecision", plan.precision},
          {"ISA", plan.isa},
          {"CpuFeatures", plan.cpu_features},
          {"MaxBatch", plan.max_batch},
          {"ArenaBytes", plan.arena_bytes},
          {"ScratchBytesPerThread", plan.scratch_bytes_per_thread},
          {"SourceModel", plan.source_model},
          {"QdqrtVersion", plan.qdqrt_version}};
}

std::string format_layer_info(const engine::EnginePlan& plan) {
  size_t kind_width = 4;
  size_t kernel_width = 6;
  for (const engine::PlanLayer& layer : plan.layers) {
    kind_width = std::max(kind_width, layer.kind.size());
    kernel_width = std::max(kernel_width, layer.kernel.size());
  }
  std::string text = "=== Layer information ===\n";
  text += fmt::format("{:>4}  {:<{}}  {:<{}}  {}\n", "#", "Kind", kind_width, "Kernel", kernel_width, "Layer");
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const engine::PlanLayer& layer = plan.layers[i];
    std::vector<std::string> inputs;
    for (int32_t index : layer.inputs) inputs.push_back(tensor_text(plan, index));
    std::vector<std::string> outputs;
    for (int32_t index : layer.outputs) outputs.push_back(tensor_text(plan, index));
    text += fmt::format("{:>4}  {:<{}}  {:<{}}  {}\n", i, layer.kind, kind_width,
                        layer.kernel.empty() ? "-" : layer.kernel, kernel_width, layer.name);
    text += fmt::format("{:>4}  {:<{}}  {:<{}}    [{}] -> [{}]\n", "", "", kind_width, "", kernel_width,
                        fmt::join(inputs, ", "), fmt::join(outputs, ", "));
  }
  return text;
}

}  // namespace qdqrt::tools
