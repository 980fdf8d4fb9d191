#include "tools/exec_options.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/cli_flags.h"
#include "tools/exec_report.h"

namespace qdqrt::tools {

namespace {

// An output file's directory must exist: checked before building so a typo does not cost a benchmark.
Status check_output_path(const std::string& flag, const std::string& path) {
  if (path.empty()) return Status::ok();
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!parent.empty() && !std::filesystem::is_directory(parent, error)) {
    return invalid_argument("{}: directory '{}' of '{}' does not exist", flag, parent.string(), path);
  }
  if (std::filesystem::is_directory(path, error)) return invalid_argument("{}: '{}' is a directory", flag, path);
  return Status::ok();
}

}  // namespace

void add_exec_flags(CLI::App& exec, ExecCommandLine& line) {
  ExecOptions& options = line.options;
  CLI::Validator percentile_syntax(
      [](std::string& value) -> std::string {
        auto parsed = parse_percentiles(value);
        return parsed.ok() ? "" : parsed.status().message();
      },
      "P[,P...]");

  exec.add_option("--onnx", options.onnx_path, "Build the engine from this ONNX model")
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  exec.add_option("--loadEngine", options.load_engine_path, "Load a saved engine (.qdqrt) instead of building one")
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  exec.add_option("--saveEngine", options.save_engine_path, "Save the engine to FILE")->type_name("FILE");
  exec.add_flag("--int8", options.int8, "INT8 layers from the model's Q/DQ (the default)");
  exec.add_flag("--fp32", options.fp32, "Build the same model all in float, for comparison");
  exec.add_flag("--best", options.best, "The fastest precision available (INT8)");
  exec.add_option("--shapes", line.shapes_texts,
                  "Input shapes, e.g. input:8x1x28x28. With --onnx the shapes built for (maximum batch)\n"
                  "and run; with --loadEngine the run shapes (batch up to the engine's maximum)")
      ->check(quiet(shapes_validator()))
      ->type_name("NAME:DIMS[,...]");
  exec.add_option("--loadInputs", line.load_inputs_texts, "Inputs from .npy files, comma-separated or repeated")
      ->check(quiet(load_inputs_validator()))
      ->type_name("NAME:FILE[,...]");
  exec.add_option("--seed", options.seed, "Seed of the random inputs")->capture_default_str()->type_name("N");
  exec.add_option("--iterations", options.iterations, "Run at least N timed inferences")
      ->check(quiet(CLI::Range(1, 1000000000)))
      ->capture_default_str()
      ->type_name("N");
  exec.add_option("--warmUp", options.warm_up_ms, "Run untimed inferences for at least MS milliseconds first")
      ->check(quiet(CLI::Range(0.0, 3.6e6)))
      ->capture_default_str()
      ->type_name("MS");
  exec.add_option("--duration", options.duration_s, "Run timed inferences for at least S seconds")
      ->check(quiet(CLI::Range(0.0, 86400.0)))
      ->capture_default_str()
      ->type_name("S");
  exec.add_option("--avgRuns", options.avg_runs, "Average N consecutive runs per line of the trace (--verbose)")
      ->check(quiet(CLI::Range(1, 1000000000)))
      ->capture_default_str()
      ->type_name("N");
  exec.add_option("--percentile", line.percentile_text, "Latency percentiles to report, each in [0, 100]")
      ->check(quiet(percentile_syntax))
      ->capture_default_str()
      ->type_name("P[,P...]");
  exec.add_option("--threads", options.threads, "Threads of the engine's thread pool (0: every hardware thread)")
      ->check(quiet(CLI::Range(0, 4096)))
      ->capture_default_str()
      ->type_name("N");
  exec.add_option("--exportOutput", options.export_output_path, "Write the outputs of the last run as JSON")
      ->type_name("FILE");
  exec.add_flag("--dumpProfile", options.dump_profile, "Print the per-layer profile");
  exec.add_flag("--separateProfileRun", options.separate_profile_run,
                "Profile in a second run, so the timed runs are not profiled");
  exec.add_option("--exportProfile", options.export_profile_path, "Write the per-layer profile as JSON")
      ->type_name("FILE");
  exec.add_flag("--dumpLayerInfo", options.dump_layer_info, "Print the engine's layers with their kernels");
  exec.add_option("--exportLayerInfo", options.export_layer_info_path, "Write the engine's layers as JSON")
      ->type_name("FILE");
  exec.add_option("--exportTimes", options.export_times_path, "Write the timing of every timed run as JSON")
      ->type_name("FILE");
  exec.add_flag("--verbose", options.verbose, "Also print inputs, outputs, kernels and the trace averages");
  exec.add_flag("--skipInference", options.skip_inference, "Stop after building or loading (and saving) the engine");
}

Status finish_exec_options(ExecCommandLine& line) {
  ExecOptions& options = line.options;
  if (options.onnx_path.empty() && options.load_engine_path.empty()) {
    return invalid_argument("give a model with --onnx=FILE or a saved engine with --loadEngine=FILE");
  }
  if (!options.onnx_path.empty() && !options.load_engine_path.empty()) {
    return invalid_argument("--onnx and --loadEngine exclude each other: build an engine from a model or load a saved one");
  }
  if (options.int8 && options.fp32) {
    return invalid_argument("--int8 and --fp32 exclude each other: build INT8 layers or everything in float");
  }
  if (options.best && options.fp32) {
    return invalid_argument("--best and --fp32 exclude each other: --best builds INT8 layers");
  }

  auto shapes = collect_shapes(line.shapes_texts);
  if (!shapes.ok()) return shapes.status().with_context("--shapes");
  options.shapes = std::move(shapes).value();
  auto input_files = collect_load_inputs(line.load_inputs_texts);
  if (!input_files.ok()) return input_files.status().with_context("--loadInputs");
  options.input_files = std::move(input_files).value();
  for (const InputFileSpec& spec : options.input_files) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(spec.path, error)) {
      return invalid_argument("--loadInputs: input '{}': file '{}' does not exist", spec.name, spec.path);
    }
  }
  auto percentiles = parse_percentiles(line.percentile_text);
  if (!percentiles.ok()) return percentiles.status().with_context("--percentile");
  options.percentiles = std::move(percentiles).value();

  QDQRT_RETURN_IF_ERROR(check_output_path("--saveEngine", options.save_engine_path));
  QDQRT_RETURN_IF_ERROR(check_output_path("--exportOutput", options.export_output_path));
  QDQRT_RETURN_IF_ERROR(check_output_path("--exportProfile", options.export_profile_path));
  QDQRT_RETURN_IF_ERROR(check_output_path("--exportLayerInfo", options.export_layer_info_path));
  QDQRT_RETURN_IF_ERROR(check_output_path("--exportTimes", options.export_times_path));
  if (!options.save_engine_path.empty() && !options.load_engine_path.empty()) {
    std::error_code error;
    // The loaded engine's weights are mapped from its file: writing over it would pull them away.
    if (std::filesystem::equivalent(options.save_engine_path, options.load_engine_path, error)) {
      return invalid_argument("--saveEngine: '{}' is the file given to --loadEngine", options.save_engine_path);
    }
  }
  return Status::ok();
}

Result<int64_t> check_run_shapes(const std::vector<engine::IoTensorInfo>& inputs, int64_t max_batch,
                                 const std::map<std::string, Shape>& run_shapes) {
  std::vector<std::string> names;
  for (const engine::IoTensorInfo& info : inputs) names.push_back(info.name);
  for (const auto& [name, shape] : run_shapes) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return invalid_argument("'{}' is not an input of the engine (inputs: {})", name, fmt::join(names, ", "));
    }
  }
  int64_t batch = -1;
  std::string batch_source;
  for (const engine::IoTensorInfo& info : inputs) {
    auto it = run_shapes.find(info.name);
    if (it == run_shapes.end()) continue;
    const Shape& shape = it->second;
    if (shape.size() != info.shape.size()) {
      return invalid_argument("input '{}' has rank {} {} in the engine, got {}", info.name, info.shape.size(),
                              shape_to_string(info.shape), shape_to_string(shape));
    }
    for (size_t i = info.batched ? 1 : 0; i < shape.size(); ++i) {
      if (shape[i] != info.shape[i]) {
        return invalid_argument("input '{}' has shape {} in the engine, got {} (dim {} differs{})", info.name,
                                shape_to_string(info.shape), shape_to_string(shape), i,
                                info.batched ? "; only the batch dim 0 may change" : "");
      }
    }
    if (!info.batched) continue;
    if (shape[0] < 1 || shape[0] > max_batch) {
      return invalid_argument("input '{}': batch {} is outside the engine's range 1..{} (build with --shapes={}:{})",
                              info.name, shape[0], max_batch, info.name,
                              fmt::join(std::vector<int64_t>{shape.begin(), shape.end()}, "x"));
    }
    if (batch >= 0 && shape[0] != batch) {
      return invalid_argument("inputs '{}' and '{}' have different batches {} and {}", batch_source, info.name, batch,
                              shape[0]);
    }
    batch = shape[0];
    batch_source = info.name;
  }
  return batch < 0 ? max_batch : batch;
}

}  // namespace qdqrt::tools
