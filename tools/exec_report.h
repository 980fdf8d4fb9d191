// The measuring and reporting half of `qdqrt exec`, kept free of the engine's runtime so it can be
// tested on known samples: trtexec's latency statistics, the "=== Performance summary ===" block,
// the per-layer profile table, and the JSON files of --exportTimes, --exportProfile,
// --exportOutput and --exportLayerInfo.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/plan.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt::tools {

// "90,95,99" -> {90, 95, 99}. Each value a number in [0, 100]; at least one.
Result<std::vector<double>> parse_percentiles(const std::string& text);

// trtexec's definitions, on samples sorted ascending (an empty list gives +infinity):
// median = the middle sample, or the mean of the two middle ones;
// percentile(p) = sorted[max(n - 1 - exclude, 0)] with exclude = floor((100 - p) / 100 * n),
// so p = 100 is the maximum, p = 0 the minimum, and percentile(90) of 1..10 is 9.
double median_of_sorted(std::span<const double> sorted);
double percentile_of_sorted(std::span<const double> sorted, double percentile);

struct LatencyStats {
  size_t count = 0;
  double min = 0, max = 0, mean = 0, median = 0;
  double stddev = 0;  // population standard deviation
  // stddev / mean, trtexec's stability measure (0 when the mean is 0).
  double coefficient_of_variation() const { return mean > 0 ? stddev / mean : 0.0; }
  std::vector<std::pair<double, double>> percentiles;  // (p, value)
};
LatencyStats compute_latency_stats(std::vector<double> samples, std::span<const double> percentiles);

// One timed inference, in ms since the start of the timed loop.
struct InferenceTiming {
  double start_ms = 0;
  double end_ms = 0;
  double latency_ms() const { return end_ms - start_ms; }
};

struct PerformanceSummary {
  size_t inferences = 0;
  double throughput_qps = 0;  // inferences per second of host walltime
  LatencyStats latency;
  double walltime_s = 0;      // first start to last end
};
PerformanceSummary summarize_performance(std::span<const InferenceTiming> timings, std::span<const double> percentiles);

// "=== Performance summary ===", "Throughput: .. qps", "Latency: min = .. ms, ..., percentile(90%) = .. ms",
// "Total Host Walltime: .. s". Numbers with 6 significant digits, as trtexec's streams print them.
std::string format_performance_summary(const PerformanceSummary& summary);
// trtexec's threshold: latencies whose coefficient of variation exceeds it are unstable.
inline constexpr double kStableCoefficientOfVariation = 0.025;
// "" when stable; else "[W] * Latency is unstable, with coefficient of variation = 4.01%." and a hint.
std::string format_stability_warning(const LatencyStats& latency);
// "" when none; else "[W] * N of M timed runs went on one thread ..." (ExecutionContext::single_thread_runs:
// the helper threads stalled, another process held their cores) and a hint.
std::string format_single_thread_warning(int64_t single_thread_runs, size_t runs);
// trtexec's "=== Trace details ===": the latency averaged over each avg_runs consecutive runs
// (a trailing partial group is dropped, as trtexec does).
std::string format_trace_averages(std::span<const InferenceTiming> timings, int avg_runs);

// --exportTimes: one object per timed inference with trtexec's fields ("startEnqMs", "endEnqMs",
// "startH2dMs", ..., "computeMs", "d2hMs", "latencyMs"); on a CPU there are no copies (zero-length
// spans) and enqueue, compute and latency are the run.
std::string timings_to_json_text(std::span<const InferenceTiming> timings);

// Per-layer times of profiled runs.
class ProfileRecorder {
 public:
  explicit ProfileRecorder(std::vector<std::string> layer_names);
  // The times of one run, one per layer in plan order.
  Status add_run(std::span<const double> layer_times_ms);
  // Room for `runs` more runs, so recording inside a timed loop does not allocate.
  void reserve(size_t runs);
  size_t runs() const { return run_totals_ms_.size(); }
  const std::vector<std::string>& layer_names() const { return layer_names_; }
  const std::vector<std::vector<double>>& layer_samples() const { return layer_samples_; }
  const std::vector<double>& run_totals_ms() const { return run_totals_ms_; }

 private:
  std::vector<std::string> layer_names_;
  std::vector<std::vector<double>> layer_samples_;  // [layer][run]
  std::vector<double> run_totals_ms_;
};

struct ProfileRow {
  std::string name;
  double time_ms = 0;     // sum over the runs
  double average_ms = 0;  // time_ms / runs
  double median_ms = 0;
  double percentage = 0;  // of the total time of all layers
};
struct ProfileReport {
  size_t count = 0;  // profiled runs
  std::vector<ProfileRow> rows;
  ProfileRow total;  // median = median of the per-run totals, percentage 100
};
ProfileReport summarize_profile(const ProfileRecorder& recorder);
// "=== Profile (N iterations) ===" then "Time(ms) Avg.(ms) Median(ms) Time(%) Layer" rows and "Total".
std::string format_profile_table(const ProfileReport& report);
// --exportProfile: [{"count": N}, {"name", "timeMs", "averageMs", "medianMs", "percentage"}, ...].
nlohmann::ordered_json profile_to_json(const ProfileReport& report);
// The JSON above with one array element per line, as trtexec writes it.
std::string json_array_lines(const nlohmann::ordered_json& array);

// --exportOutput: [{"name", "dimensions": "1x10", "values": [...]}, ...] (trtexec's shape).
// Non-finite floats become null (JSON has no NaN).
nlohmann::ordered_json outputs_to_json(const std::vector<std::pair<std::string, Tensor>>& outputs);

// What the engine runs in INT8: layers reading or writing int8/uint8 tensors, apart from the border
// layers (quantize, dequantize, requantize, reorder, copy) that only convert.
struct PrecisionCount {
  int64_t layers = 0;
  int64_t int8_layers = 0;
  int64_t border_layers = 0;
  std::string label() const;  // "int8" when any layer reads or writes int8 (borders too), else "fp32"
  // "int8 (int8: 12 of 15 layers, 3 quantize/dequantize/reorder)";
  // "fp32 (int8: 0 of 9 layers; this model has no Q/DQ)" unless FP32 was asked for.
  std::string text(bool fp32_requested) const;
};
PrecisionCount count_layer_precisions(const engine::EnginePlan& plan);

// --exportLayerInfo in trtexec's schema (tools/layer_info_schema.h): {"Layers": [{"Name",
// "LayerType", "Inputs", "Outputs", "ParameterType", "TacticName", qdqrt's "Precision", "OpType",
// "Kernel", "SourceNodes", "ScratchBytes", "WeightBytes"}], "Bindings": [names], "Precision",
// "Int8Layers", "LayerCount", "ISA", ...}. Not detailed (--profilingVerbosity=layer_names_only):
// {"Layers": [names], "Bindings": [names]}.
nlohmann::ordered_json layer_info_to_json(const engine::EnginePlan& plan, bool detailed = true);
// --dumpLayerInfo: "=== Layer information ===" then one row per layer: kind, kernel, name, in -> out.
std::string format_layer_info(const engine::EnginePlan& plan);

}  // namespace qdqrt::tools
