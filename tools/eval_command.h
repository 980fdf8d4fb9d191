// `qdqrt eval`: builds each model into an engine, runs it over a labelled image data set, and
// reports top-1, top-5, agreement with the first model, batch-1 latency and throughput as a
// table (and JSON, per-model predictions as .npy, an accuracy-vs-latency SVG plot). docs/cli.md.
#pragma once

#include <cstdint>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "tools/eval_report.h"
#include "tools/run_command.h"

namespace qdqrt::tools {

struct EvalModelSpec {
  std::string path;
  bool force_fp32 = false;  // "path:fp32"
};
// "model.onnx" or "model.onnx:fp32" (FP32 engine for this model even when it has Q/DQ).
EvalModelSpec parse_eval_model_spec(const std::string& text);

struct EvalOptions {
  std::string data_spec;
  std::vector<float> mean;
  std::vector<float> std;
  std::vector<EvalModelSpec> models;
  int threads = 0;                 // 0 = all hardware threads
  int64_t batch = 32;              // maximum (and throughput) batch
  int64_t samples = -1;            // first N images; < 0 = all
  bool force_fp32 = false;         // --fp32: every model in FP32
  std::string json_path;           // "" = none
  std::string plot_path;           // "" = none
  std::string predictions_dir;     // "" = none
  double latency_seconds = 1.0;    // batch-1 timing budget per model (after warm-up)
  int latency_runs = 100;          // ... or this many runs, whichever comes first
  bool show_progress = true;
  bool baseline_first = false;     // --baselineFirst: agreement with the first model for every row
  std::ostream* warnings = &std::cerr;  // missing preprocessing, --threads above the cores
};

// The row each model's agreement is measured against: the model named by its metadata's
// "quantization.fp32_model" (a file name among the other --model files, not a :fp32 one), else the
// first row; always the first with `first_only`.
std::vector<size_t> agreement_baselines(const std::vector<EvalModelSpec>& models,
                                        const std::vector<std::string>& fp32_model_names, bool first_only);

// The whole command: table on `out`, progress on stderr, files as requested.
std::variant<EvalSummary, RunError> run_eval(const EvalOptions& options, std::ostream& out);

}  // namespace qdqrt::tools
