// The reporting half of `qdqrt eval`, free of the engine so it can be tested on known rows:
// the accuracy/latency table, its JSON form, and the accuracy-vs-latency SVG plot.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdqrt::tools {

struct EvalRow {
  std::string model;      // label shown in the table and plot (the file's stem)
  std::string path;       // the ONNX file
  std::string precision;  // "int8" or "fp32" (what the engine actually runs)
  int64_t images = 0;
  double top1 = 0;        // percent
  double top5 = 0;        // percent
  double agreement = 0;   // percent of images whose top-1 equals the baseline's
  double latency_median_ms = 0;  // batch 1
  double throughput = 0;  // images per second at the evaluation batch
  std::string baseline;   // the label of the model the agreement is measured against
};

struct EvalSummary {
  std::string dataset;  // description of the data set
  int64_t images = 0;
  int64_t batch = 0;
  int threads = 0;
  std::vector<EvalRow> rows;
};

// A fixed-width text table: header, separator, one row per model (percentages with 2 decimals).
std::string format_eval_table(const EvalSummary& summary);
// {"dataset", "images", "batch", "threads", "models": [{"model", "path", "precision", "top1", "top5",
// "agreement", "latencyMedianB1Ms", "throughputImgPerS"}, ...]}.
nlohmann::ordered_json eval_to_json(const EvalSummary& summary);
// Top-1 (%) against batch-1 latency (ms): one labelled point per model, ticked axes, a title.
// The latency axis is logarithmic when the largest latency is more than 10x the smallest.
std::string eval_plot_svg(const EvalSummary& summary);

// "Nice" axis ticks (1, 2, 5 x 10^k steps) covering [low, high], about `target` of them.
std::vector<double> linear_ticks(double low, double high, int target = 5);

}  // namespace qdqrt::tools
