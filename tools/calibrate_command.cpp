#include "tools/calibrate_command.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <variant>

#include <fmt/format.h>

#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "tools/calibration/calibrate_model.h"
#include "tools/calibration/calibration_cache.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"
#include "tools/datasets.h"
#include "tools/model_metadata.h"

namespace qdqrt::tools {
namespace {

CalibrateError usage_error(Status status) { return CalibrateError{true, std::move(status)}; }
CalibrateError failure(Status status) { return CalibrateError{false, std::move(status)}; }

}  // namespace

std::variant<CalibrateResult, CalibrateError> run_calibrate(const CalibrateOptions& options, std::ostream& out) {
  if (options.samples <= 0) return usage_error(invalid_argument("--samples must be positive, got {}", options.samples));
  auto graph = load_onnx_file(options.onnx_path);
  if (!graph.ok()) return failure(graph.status().with_context(options.onnx_path));
  Status input_ok = calibration::check_calibration_input(*graph);
  if (!input_ok.is_ok()) return failure(input_ok.with_context(options.onnx_path));
  const std::string& input_name = graph->inputs[0];
  const ValueInfo* input_info = graph->find_value(input_name);
  auto plan = calibration::plan_quantization(*graph, options.placement);
  if (!plan.ok()) return failure(plan.status().with_context(options.onnx_path));
  Status excluded = calibration::exclude_nodes(*plan, *graph, options.exclude);
  if (!excluded.is_ok()) return usage_error(excluded.with_context("--exclude"));

  // --mean/--std, else the preprocessing the model's metadata holds, else none (with a warning).
  auto preprocessing = resolve_preprocessing(options.mean, options.std, options.onnx_path);
  if (!preprocessing.ok()) return failure(preprocessing.status());
  if (preprocessing->source == "none") std::cerr << missing_preprocessing_warning("calibrate", options.onnx_path);
  DatasetOptions data_options;
  data_options.mean = preprocessing->values.mean;
  data_options.std = preprocessing->values.std;
  data_options.max_images = options.samples;
  // Images of different sizes are taken when the model's dims there are symbolic (checked below):
  // each batch then runs at its images' own size.
  data_options.allow_mixed_sizes = true;
  auto data = load_dataset(options.data_spec, data_options);
  if (!data.ok()) return usage_error(data.status().with_context("--data"));
  std::vector<int64_t> dims;
  for (const Dim& dim : *input_info->shape) dims.push_back(dim.value);
  Status fits = check_dataset_fits_input(*data, dims, input_name);
  if (!fits.is_ok()) return usage_error(fits.with_context("--data " + options.data_spec));
  if (data->size() < options.samples) {
    std::cerr << fmt::format("qdqrt calibrate: note: {} has {} images; calibrating on all of them\n", data->description,
                             data->size());
  }

  calibration::CalibrateModelOptions calibrate_options;
  calibrate_options.method = options.method;
  calibrate_options.threads = options.threads;
  calibrate_options.batch_size = options.batch_size;
  calibrate_options.show_progress = options.show_progress;
  calibrate_options.calibrate_inputs = options.calibrate_inputs;
  if (dims[0] >= 0) {
    // A static batch dim is what the model runs at, as eval and exec hold it to: every batch the
    // reference runs must have exactly that many images.
    const int64_t static_batch = dims[0];
    if (options.batch_size > 0 && options.batch_size != static_batch) {
      return usage_error(invalid_argument("--batch {}: model input '{}' has a static batch dim of {}",
                                          options.batch_size, input_name, static_batch));
    }
    const int64_t images = std::min<int64_t>(data->size(), options.samples);
    if (static_batch < 1 || images % static_batch != 0) {
      return usage_error(invalid_argument(
          "model input '{}' has a static batch dim of {}: the {} calibration images must be a multiple of it "
          "(--samples)",
          input_name, static_batch, images));
    }
    int64_t first = 0;
    for (const Tensor& group : data->groups()) {
      if (group.dim(0) % static_batch != 0) {
        return usage_error(invalid_argument(
            "model input '{}' has a static batch dim of {}: the {} images of size {} from image {} are not a "
            "multiple of it (a batch holds images of one size)",
            input_name, static_batch, group.dim(0),
            shape_to_string(Shape(group.shape().begin() + 1, group.shape().end())), first));
      }
      first += group.dim(0);
    }
    calibrate_options.batch_size = static_batch;
  }
  auto calibrated = calibration::calibrate_model(*graph, *plan, data->groups(), calibrate_options);
  if (!calibrated.ok()) return failure(calibrated.status());
  const std::map<std::string, float>& amax = calibrated->activation_amax;

  WriteOptions write_options;
  write_options.producer_name = "qdqrt calibrate";
  // The input model's metadata, then how it was quantized and the preprocessing calibration used,
  // so eval and exec read them back.
  std::map<std::string, std::string> metadata;
  if (auto input_metadata = read_onnx_metadata(options.onnx_path); input_metadata.ok()) metadata = *input_metadata;
  for (const auto& [key, value] : preprocessing_to_metadata(preprocessing->values)) metadata[key] = value;
  metadata[kFp32ModelKey] = std::filesystem::path(options.onnx_path).filename().string();
  metadata[kQuantizationKey] =
      fmt::format("qdqrt calibrate: method {}, placement {}, {} images of {}{}", calibration::method_name(options.method),
                  calibration::placement_name(options.placement), std::min<int64_t>(data->size(), options.samples),
                  data->description,
                  options.exclude.empty() ? std::string() : fmt::format(", excluded {}", fmt::join(options.exclude, ", ")));
  Status written = write_onnx_file_with_metadata(calibrated->quantized, options.output_path, write_options, metadata);
  if (!written.is_ok()) return failure(written);

  if (!options.calibration_cache_path.empty()) {
    std::map<std::string, float> scales;
    for (const auto& [name, value] : amax) scales[name] = calibration::scale_for_amax(value);
    Status cache = calibration::write_calibration_cache(options.calibration_cache_path, scales, options.method);
    if (!cache.is_ok()) return failure(cache);
  }

  CalibrateResult result;
  result.activation_amax = amax;
  result.quantized_activations = calibrated->quantized_activations;
  result.quantized_weights = calibrated->quantized_weights;
  result.images = data->size();
  out << fmt::format("calibrated {} on {} images of {}: method {}, placement {}\n", options.onnx_path, result.images,
                     data->description, calibration::method_name(options.method),
                     calibration::placement_name(options.placement));
  out << fmt::format("quantized {} activation tensors (per-tensor) and {} weights (per-channel)\n",
                     result.quantized_activations, result.quantized_weights);
  if (options.verbose) {
    for (const auto& [name, value] : amax) {
      out << fmt::format("  {}: amax {:.6g} scale {:.6g}\n", name, value, calibration::scale_for_amax(value));
    }
  }
  out << "wrote " << options.output_path << "\n";
  if (!options.calibration_cache_path.empty()) out << "wrote " << options.calibration_cache_path << "\n";

  if (!options.sensitivity_spec.empty()) {
    DatasetOptions validation_options = data_options;
    validation_options.max_images = options.sensitivity_samples;
    validation_options.allow_mixed_sizes = false;  // the sensitivity ranking runs engines at one size
    auto validation = load_dataset(options.sensitivity_spec, validation_options);
    if (!validation.ok()) return usage_error(validation.status().with_context("--sensitivity"));
    if (!validation->labels) {
      return usage_error(invalid_argument("--sensitivity {}: the data set has no labels", options.sensitivity_spec));
    }
    auto ranked = rank_layer_sensitivity(options.onnx_path, *graph, *plan, amax, options.output_path, *validation,
                                         options.threads);
    if (!ranked.ok()) return failure(ranked.status().with_context("--sensitivity"));
    out << format_sensitivity_table(*ranked);
    result.sensitivity = std::move(ranked).value();
  }
  return result;
}

Command add_calibrate_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "calibrate", "Post-training quantization: calibrate an FP32 model and write an explicit-QDQ ONNX model");
  command->footer(
      "Data SPEC: fashion-mnist:DIR:train|test, fashion-mnist:train|test, npy:DIR, pb:DIR, a directory\n"
      "or a .npy/.pb file (docs/calibration.md). 8-bit pixels are scaled to [0, 1] before --mean/--std.\n"
      "Example: qdqrt calibrate --onnx=models/fmnist_resnet_fp32.onnx --data=fashion-mnist:train \\\n"
      "           --mean=0.2860 --std=0.3530 --method=entropy --output=ptq.onnx\n");
  auto options = std::make_shared<CalibrateOptions>();
  auto method = std::make_shared<std::string>("max");
  auto placement = std::make_shared<std::string>("tensorrt");
  auto mean = std::make_shared<std::string>();
  auto stddev = std::make_shared<std::string>();
  auto quiet = [](CLI::Validator validator) { return validator.description(""); };
  auto checked = [](auto parse) {
    return CLI::Validator(
        [parse](std::string& value) -> std::string {
          auto parsed = parse(value);
          return parsed.ok() ? "" : parsed.status().message();
        },
        "");
  };

  command->add_option("--onnx", options->onnx_path, "The FP32 ONNX model (opset >= 13)")
      ->required()
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  command->add_option("--data", options->data_spec, "Calibration images (SPEC below)")->required()->type_name("SPEC");
  command->add_option("--samples", options->samples, "Number of calibration images (the first ones)")
      ->check(quiet(CLI::Range(int64_t{1}, int64_t{1} << 40)))
      ->capture_default_str()
      ->type_name("N");
  command->add_option("--method", *method, "max, entropy, percentile[=99.99] or mse")
      ->check(checked([](const std::string& value) { return calibration::parse_method(value); }))
      ->capture_default_str()
      ->type_name("METHOD");
  command->add_option("--placement", *placement, "tensorrt or all (where Q/DQ pairs go)")
      ->check(checked([](const std::string& value) { return calibration::parse_placement(value); }))
      ->capture_default_str()
      ->type_name("WHERE");
  command->add_option("--output", options->output_path, "The QDQ ONNX model to write")->required()->type_name("FILE");
  command->add_option("--calibrationCache", options->calibration_cache_path,
                      "Also write the activation scales as a TensorRT calibration cache")
      ->type_name("FILE");
  command->add_option("--mean", *mean, "Per-channel mean subtracted from the images (one value or C values)")
      ->check(checked([](const std::string& value) { return parse_float_list(value, "mean"); }))
      ->type_name("M[,..]");
  command->add_option("--std", *stddev, "Per-channel standard deviation the images are divided by")
      ->check(checked([](const std::string& value) { return parse_float_list(value, "std"); }))
      ->type_name("S[,..]");
  command->add_option("--threads", options->threads, "Worker threads (0 = all cores)")
      ->check(quiet(threads_validator()))
      ->capture_default_str()
      ->type_name("N");
  command->add_option("--batch", options->batch_size,
                      "Images per reference run (0 = as many as keep the calibrated tensors\n"
                      "within ~256 MB per thread, at most 32)")
      ->check(quiet(CLI::Range(int64_t{0}, int64_t{1} << 20)))
      ->capture_default_str()
      ->type_name("N");
  command->add_flag("--calibrateInputs", options->calibrate_inputs,
                    "Apply --method to the model input too (default: the input keeps its max range)");
  command->add_flag("--verbose", options->verbose, "Print each tensor's amax and scale");
  command->add_option("--exclude", options->exclude,
                      "Keep these nodes in float: no Q/DQ on their inputs or weights (as ONNX Runtime's\n"
                      "nodes_to_exclude; qdqrt compare shows which ones cost accuracy)")
      ->delimiter(',')
      ->type_name("NODE[,...]");
  command->add_option("--sensitivity", options->sensitivity_spec,
                      "Labelled images (e.g. fashion-mnist:test): quantize one node at a time and rank the\n"
                      "nodes by the top-1 they lose against FP32 (candidates for --exclude)")
      ->type_name("SPEC");
  command->add_option("--sensitivitySamples", options->sensitivity_samples, "Validation images for --sensitivity")
      ->check(quiet(CLI::Range(int64_t{1}, int64_t{1} << 20)))
      ->capture_default_str()
      ->type_name("N");
  command->add_flag("!--noProgress", options->show_progress, "No progress bar on stderr");

  auto execute = [options, method, placement, mean, stddev]() -> int {
    auto report_usage = [](const Status& status) {
      std::cerr << "qdqrt calibrate: error: " << status.message() << "\n";
      return kExitUsage;
    };
    auto parsed_method = calibration::parse_method(*method);
    if (!parsed_method.ok()) return report_usage(parsed_method.status());
    options->method = *parsed_method;
    auto parsed_placement = calibration::parse_placement(*placement);
    if (!parsed_placement.ok()) return report_usage(parsed_placement.status());
    options->placement = *parsed_placement;
    if (!mean->empty()) {
      auto values = parse_float_list(*mean, "mean");
      if (!values.ok()) return report_usage(values.status());
      options->mean = *values;
    }
    if (!stddev->empty()) {
      auto values = parse_float_list(*stddev, "std");
      if (!values.ok()) return report_usage(values.status());
      options->std = *values;
    }
    auto outcome = run_calibrate(*options, std::cout);
    if (std::holds_alternative<CalibrateResult>(outcome)) return kExitSuccess;
    const CalibrateError& error = std::get<CalibrateError>(outcome);
    std::cout.flush();
    std::cerr << "qdqrt calibrate: error: " << error.status.to_string() << "\n";
    return error.usage ? kExitUsage : kExitFailure;
  };
  return Command{command, execute};
}

}  // namespace qdqrt::tools
