#include "tools/eval_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "engine/engine.h"
#include "engine/profiles.h"
#include "tools/npy.h"
#include "parser/onnx_loader.h"
#include "core/file_reading.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"
#include "tools/datasets.h"
#include "tools/exec_report.h"
#include "tools/model_metadata.h"

namespace qdqrt::tools {
namespace {

using Clock = std::chrono::steady_clock;

// Inside evaluate_model(): a failed engine run names the model.
#define EVAL_CHECK(expr)                                        \
  do {                                                          \
    Status eval_status_ = (expr);                               \
    if (!eval_status_.is_ok()) return failure(eval_status_.with_context(spec.path)); \
  } while (false)

RunError usage_error(Status status) { return RunError{true, std::move(status)}; }
RunError failure(Status status) { return RunError{false, std::move(status)}; }

double elapsed_ms(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

// Redrawn in place on a terminal; in logs and pipes only the final line is written.
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, bool enabled)
      : label_(std::move(label)), total_(total), enabled_(enabled), interactive_(isatty(fileno(stderr)) != 0) {}
  void update(int64_t done) {
    if (enabled_ && interactive_) draw(done, "\r");
  }
  void finish(int64_t done) {
    if (enabled_) draw(done, interactive_ ? "\r" : "");
    if (enabled_) std::fprintf(stderr, "\n");
  }

 private:
  void draw(int64_t done, const char* prefix) {
    constexpr int kWidth = 30;
    int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    std::fprintf(stderr, "%seval %s [%s%s] %lld/%lld images", prefix, label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_));
    std::fflush(stderr);
  }
  std::string label_;
  int64_t total_;
  bool enabled_;
  bool interactive_;
};

bool has_int8_tensors(const engine::EnginePlan& plan) {
  return std::any_of(plan.tensors.begin(), plan.tensors.end(), [](const engine::PlanTensor& tensor) {
    return tensor.dtype == DataType::kInt8 || tensor.dtype == DataType::kUint8;
  });
}

// Table label: the file's stem, made unique with "#2", "#3" when a stem repeats.
std::vector<std::string> model_labels(const std::vector<EvalModelSpec>& models) {
  std::vector<std::string> labels;
  std::map<std::string, int> seen;
  for (const EvalModelSpec& model : models) {
    std::string stem = std::filesystem::path(model.path).stem().string();
    if (model.force_fp32) stem += ":fp32";
    int count = ++seen[stem];
    labels.push_back(count == 1 ? stem : fmt::format("{}#{}", stem, count));
  }
  return labels;
}

struct ModelResult {
  EvalRow row;
  std::vector<int64_t> predictions;
};

std::variant<ModelResult, RunError> evaluate_model(const EvalModelSpec& spec, const std::string& label,
                                                   const Dataset& data, const EvalOptions& options) {
  if (auto file = open_regular_file(spec.path, "model"); !file.ok()) return usage_error(file.status().with_context("--model"));
  // Loaded here for the input checks; build_from_file() loads it again with the batch shape.
  auto graph = load_onnx_file(spec.path);
  if (!graph.ok()) return failure(graph.status().with_context(spec.path));
  if (graph->inputs.size() != 1 || graph->outputs.empty()) {
    return failure(unsupported("'{}' has {} inputs and {} outputs; eval needs one image input and a logits output",
                               spec.path, graph->inputs.size(), graph->outputs.size()));
  }
  const std::string input_name = graph->inputs[0];
  const ValueInfo* input_info = graph->find_value(input_name);
  if (input_info == nullptr || input_info->dtype != DataType::kFloat || !input_info->shape) {
    return failure(unsupported("'{}': input '{}' must be float32 with a known rank", spec.path, input_name));
  }
  std::vector<int64_t> dims;
  for (const Dim& dim : *input_info->shape) dims.push_back(dim.is_static() ? dim.value : -1);
  Status fits = check_dataset_fits_input(data, dims, input_name);
  if (!fits.is_ok()) return usage_error(fits.with_context(spec.path));

  const int64_t count = data.size();
  const int64_t max_batch = std::max<int64_t>(1, std::min(options.batch, count));
  // Runs of images of one size: one for most data sets. Images that differ in size (the model's
  // dims there are symbolic: checked above) run through one range engine, each run at its own size.
  const std::vector<Tensor> groups = data.groups();
  auto batch_shape = [&](const Tensor& group, int64_t batch) {
    Shape shape = group.shape();
    shape[0] = batch;
    return shape;
  };

  engine::BuildOptions build;
  build.precision = (spec.force_fp32 || options.force_fp32) ? engine::Precision::kFp32 : engine::Precision::kInt8;
  std::shared_ptr<const engine::Engine> engine;
  std::shared_ptr<const engine::RangeEngine> range;
  if (!data.mixed_sizes()) {
    build.input_shapes[input_name] = batch_shape(groups.front(), max_batch);
    auto built = engine::Engine::build_from_file(spec.path, build);
    if (!built.ok()) return failure(built.status().with_context("building " + spec.path));
    engine = *built;
  } else {
    // The range spans every size in the data set; the largest run's size is the opt shape.
    std::set<Shape> sizes;
    const Tensor* largest = &groups.front();
    engine::ShapeRange shapes{batch_shape(groups.front(), 1), batch_shape(*largest, max_batch),
                              batch_shape(groups.front(), max_batch)};
    for (const Tensor& group : groups) {
      sizes.insert(batch_shape(group, 1));
      if (group.dim(0) > largest->dim(0)) largest = &group;
      for (size_t axis = 1; axis < shapes.min.size(); ++axis) {
        shapes.min[axis] = std::min(shapes.min[axis], group.dim(static_cast<int64_t>(axis)));
        shapes.max[axis] = std::max(shapes.max[axis], group.dim(static_cast<int64_t>(axis)));
      }
    }
    if (sizes.size() > engine::kMaxCachedShapes) {
      return usage_error(
          invalid_argument("the data set's images have {} sizes; one engine keeps the plans of at most {} "
                           "(resize the images to fewer sizes)",
                           sizes.size(), engine::kMaxCachedShapes));
    }
    shapes.opt = batch_shape(*largest, max_batch);
    auto built = engine::RangeEngine::build_from_file(spec.path, {{input_name, shapes}}, build);
    if (!built.ok()) return failure(built.status().with_context("building " + spec.path + " for the data set's sizes"));
    range = *built;
    auto opt_engine = range->engine_for({{input_name, shapes.opt}});
    if (!opt_engine.ok()) return failure(opt_engine.status().with_context(spec.path));
    engine = *opt_engine;
  }
  const engine::IoTensorInfo output = engine->outputs().front();
  if (output.dtype != DataType::kFloat || output.shape.empty() || output.shape[0] != max_batch) {
    return failure(unsupported("'{}': output '{}' ({}) is not float32 logits [batch, classes]", spec.path, output.name,
                               shape_to_string(output.shape)));
  }
  const int64_t classes = shape_numel(output.shape) / max_batch;
  if (range) {
    // Every size gives the same logits shape (lowering each size here, before anything is timed).
    for (const Tensor& group : groups) {
      auto infos = range->output_infos({{input_name, batch_shape(group, max_batch)}});
      if (!infos.ok()) return failure(infos.status().with_context(spec.path));
      const Shape& shape = infos->front().shape;
      if (shape.size() != output.shape.size() ||
          !std::equal(shape.begin() + 1, shape.end(), output.shape.begin() + 1)) {
        return failure(
            unsupported("'{}': output '{}' is {} for images of {} but {} for {}: eval needs logits "
                        "[batch, classes] whatever the image size",
                        spec.path, output.name, shape_to_string(shape), shape_to_string(batch_shape(group, max_batch)),
                        shape_to_string(output.shape), shape_to_string(range->profile().at(input_name).opt)));
      }
    }
  }
  const int64_t* labels = data.labels->data<int64_t>();
  // A label the logits cannot name (a data set for another model, 1-based labels) would count as
  // a miss and report a meaningless accuracy.
  for (int64_t i = 0; i < count; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return usage_error(invalid_argument("'{}': image {} has label {}, outside the model's {} classes (0..{})",
                                          spec.path, i, labels[i], classes, classes - 1));
    }
  }
  std::unique_ptr<engine::ExecutionContext> context;
  std::unique_ptr<engine::RangeContext> range_context;
  if (range) {
    range_context = range->create_context({.threads = options.threads});
  } else {
    context = engine->create_context({.threads = options.threads});
  }

  std::vector<float> logits(static_cast<size_t>(max_batch * classes));
  // `batch` images of group `g` from its image `begin`.
  auto run_batch = [&](size_t g, int64_t begin, int64_t batch) {
    const Tensor& group = groups[g];
    const int64_t image_size = shape_numel(group.shape()) / std::max<int64_t>(1, group.dim(0));
    Shape in_shape = batch_shape(group, batch), out_shape = output.shape;
    out_shape[0] = batch;
    const float* images = group.data<float>() + begin * image_size;
    if (range_context) {
      return range_context->run({{input_name, images, in_shape}}, {{output.name, logits.data(), out_shape}});
    }
    return context->run({{input_name, images, in_shape}}, {{output.name, logits.data(), out_shape}});
  };

  // Warm-up at the full batch (first run sets up the arena; each size for a range engine), then the
  // evaluation pass, timed per batch.
  for (size_t g = 0; g < groups.size(); ++g) {
    EVAL_CHECK(run_batch(g, 0, std::min(max_batch, groups[g].dim(0))));
    if (!range) break;
  }
  ModelResult result;
  result.predictions.resize(static_cast<size_t>(count));
  int64_t top1 = 0, top5 = 0, timed_images = 0, all_images = 0;
  double timed_ms = 0, all_ms = 0;
  ProgressBar progress(label, count, options.show_progress);
  int64_t group_start = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t group_size = groups[g].dim(0);
    for (int64_t begin = 0; begin < group_size; begin += max_batch) {
      int64_t batch = std::min(max_batch, group_size - begin);
      const int64_t first = group_start + begin;
      Clock::time_point start = Clock::now();
      Status status = run_batch(g, begin, batch);
      double ms = elapsed_ms(start, Clock::now());
      if (!status.is_ok()) {
        return failure(status.with_context(fmt::format("{}: images {}..{}", spec.path, first, first + batch - 1)));
      }
      all_ms += ms;
      all_images += batch;
      if (batch == max_batch) timed_ms += ms, timed_images += batch;
      for (int64_t i = 0; i < batch; ++i) {
        const float* row = logits.data() + i * classes;
        int64_t best = std::max_element(row, row + classes) - row;
        int64_t label_index = labels[first + i];
        result.predictions[static_cast<size_t>(first + i)] = best;
        if (best == label_index) ++top1;
        if (label_index >= 0 && label_index < classes) {
          // Top-5: fewer than 5 classes score strictly higher than the true one.
          int64_t higher = std::count_if(row, row + classes, [&](float v) { return v > row[label_index]; });
          if (higher < 5) ++top5;
        }
      }
      progress.update(first + batch);
    }
    group_start += group_size;
  }
  progress.finish(count);

  // Batch-1 latency: a few warm-up runs, then up to latency_runs runs or latency_seconds.
  std::vector<double> latencies;
  for (int i = 0; i < 5; ++i) EVAL_CHECK(run_batch(0, 0, 1));
  Clock::time_point latency_start = Clock::now();
  while (static_cast<int>(latencies.size()) < std::max(options.latency_runs, 1)) {
    Clock::time_point start = Clock::now();
    EVAL_CHECK(run_batch(0, 0, 1));
    Clock::time_point end = Clock::now();
    latencies.push_back(elapsed_ms(start, end));
    if (latencies.size() >= 5 && elapsed_ms(latency_start, end) >= options.latency_seconds * 1000.0) break;
  }
  std::sort(latencies.begin(), latencies.end());

  EvalRow& row = result.row;
  row.model = label;
  row.path = spec.path;
  row.precision = build.precision == engine::Precision::kFp32 || !has_int8_tensors(engine->plan()) ? "fp32" : "int8";
  row.images = count;
  row.top1 = 100.0 * static_cast<double>(top1) / static_cast<double>(count);
  row.top5 = 100.0 * static_cast<double>(top5) / static_cast<double>(count);
  row.latency_median_ms = median_of_sorted(latencies);
  // Throughput over the full-size batches of the evaluation pass (all batches when none is full).
  if (timed_images == 0) timed_images = all_images, timed_ms = all_ms;
  row.throughput = timed_ms > 0 ? 1000.0 * static_cast<double>(timed_images) / timed_ms : 0.0;
  return result;
}

}  // namespace

std::vector<size_t> agreement_baselines(const std::vector<EvalModelSpec>& models,
                                        const std::vector<std::string>& fp32_model_names, bool first_only) {
  std::vector<size_t> baselines(models.size(), 0);
  if (first_only) return baselines;
  for (size_t m = 0; m < models.size(); ++m) {
    if (m >= fp32_model_names.size() || fp32_model_names[m].empty()) continue;
    std::string wanted = std::filesystem::path(fp32_model_names[m]).filename().string();
    for (size_t other = 0; other < models.size(); ++other) {
      if (other != m && !models[other].force_fp32 &&
          std::filesystem::path(models[other].path).filename().string() == wanted) {
        baselines[m] = other;
        break;
      }
    }
  }
  return baselines;
}

EvalModelSpec parse_eval_model_spec(const std::string& text) {
  constexpr std::string_view kSuffix = ":fp32";
  if (text.size() > kSuffix.size() && text.ends_with(kSuffix)) {
    return {text.substr(0, text.size() - kSuffix.size()), true};
  }
  return {text, false};
}

std::variant<EvalSummary, RunError> run_eval(const EvalOptions& options, std::ostream& out) {
  if (options.models.empty()) return usage_error(invalid_argument("--model: at least one model is needed"));
  if (options.batch < 1) return usage_error(invalid_argument("--batch must be at least 1, got {}", options.batch));
  for (const EvalModelSpec& model : options.models) {
    // The checked reader names a FIFO or device as such (and never blocks on one).
    if (auto file = open_regular_file(model.path, "model"); !file.ok()) {
      return usage_error(file.status().with_context("--model"));
    }
  }
  // Each model's preprocessing: --mean/--std for all, else its own metadata; one data set load
  // per distinct preprocessing.
  std::vector<std::pair<Preprocessing, Dataset>> datasets;
  std::vector<size_t> dataset_of_model;
  std::vector<std::string> fp32_model_names;  // each model's "quantization.fp32_model" ("" = none)
  for (const EvalModelSpec& model : options.models) {
    auto preprocessing = resolve_preprocessing(options.mean, options.std, model.path);
    if (!preprocessing.ok()) return failure(preprocessing.status().with_context("--model " + model.path));
    if (preprocessing->source == "none") *options.warnings << missing_preprocessing_warning("eval", model.path);
    std::string fp32_model;
    if (auto metadata = read_onnx_metadata(model.path); metadata.ok()) {
      auto it = metadata->find(kFp32ModelKey);
      if (it != metadata->end()) fp32_model = it->second;
    }
    fp32_model_names.push_back(fp32_model);
    auto known = std::find_if(datasets.begin(), datasets.end(),
                              [&](const auto& loaded) { return loaded.first == preprocessing->values; });
    if (known == datasets.end()) {
      DatasetOptions data_options;
      data_options.mean = preprocessing->values.mean;
      data_options.std = preprocessing->values.std;
      data_options.max_images = options.samples;
      // Images of different sizes run at their own sizes when the model allows it (checked per model).
      data_options.allow_mixed_sizes = true;
      auto data = load_dataset(options.data_spec, data_options);
      if (!data.ok()) return usage_error(data.status().with_context("--data"));
      if (!data->labels) return usage_error(invalid_argument("--data {}: the data set has no labels", options.data_spec));
      if (data->size() == 0) return usage_error(invalid_argument("--data {}: no images", options.data_spec));
      if (data->labels->dtype() != DataType::kInt64 || data->labels->numel() != data->size()) {
        return usage_error(invalid_argument("--data {}: {} labels for {} images", options.data_spec,
                                            data->labels->numel(), data->size()));
      }
      datasets.emplace_back(preprocessing->values, std::move(data).value());
      known = datasets.end() - 1;
    }
    dataset_of_model.push_back(static_cast<size_t>(known - datasets.begin()));
  }
  const Dataset& first_data = datasets.front().second;
  int hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.threads > hardware_threads) {
    *options.warnings << fmt::format(
        "qdqrt eval: warning: --threads={} is above the {} hardware threads: threads take turns on the cores, so "
        "latency varies and the first runs are slow\n",
        options.threads, hardware_threads);
  }

  EvalSummary summary;
  summary.dataset = first_data.description;
  summary.images = first_data.size();
  summary.batch = std::max<int64_t>(1, std::min(options.batch, first_data.size()));
  summary.threads = options.threads;
  std::vector<std::string> labels = model_labels(options.models);
  std::vector<size_t> baselines = agreement_baselines(options.models, fp32_model_names, options.baseline_first);
  std::vector<std::vector<int64_t>> predictions;
  for (size_t m = 0; m < options.models.size(); ++m) {
    auto evaluated = evaluate_model(options.models[m], labels[m], datasets[dataset_of_model[m]].second, options);
    if (auto* error = std::get_if<RunError>(&evaluated)) return *error;
    auto& result = std::get<ModelResult>(evaluated);
    summary.rows.push_back(result.row);
    predictions.push_back(std::move(result.predictions));
  }
  for (size_t m = 0; m < summary.rows.size(); ++m) {
    const std::vector<int64_t>& reference = predictions[baselines[m]];
    int64_t agree = 0;
    for (size_t i = 0; i < reference.size(); ++i) agree += reference[i] == predictions[m][i] ? 1 : 0;
    summary.rows[m].agreement = 100.0 * static_cast<double>(agree) / static_cast<double>(reference.size());
    summary.rows[m].baseline = labels[baselines[m]];
  }

  out << fmt::format("qdqrt eval: {} images of {}, batch {}, {} threads\n", summary.images, summary.dataset,
                     summary.batch, options.threads > 0 ? fmt::format("{}", options.threads) : std::string("all"));
  out << format_eval_table(summary);
  if (!options.json_path.empty()) {
    Status written = write_text_file("--json", options.json_path, eval_to_json(summary).dump(2) + "\n");
    if (!written.is_ok()) return failure(written);
    out << "wrote " << options.json_path << "\n";
  }
  if (!options.plot_path.empty()) {
    Status written = write_text_file("--plot", options.plot_path, eval_plot_svg(summary));
    if (!written.is_ok()) return failure(written);
    out << "wrote plot " << options.plot_path << "\n";
  }
  if (!options.predictions_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.predictions_dir, error);
    if (error) {
      return failure(io_error("--savePredictions: cannot create '{}': {}", options.predictions_dir, error.message()));
    }
    for (size_t m = 0; m < predictions.size(); ++m) {
      std::string name = labels[m];
      std::replace_if(name.begin(), name.end(), [](char c) { return c == ':' || c == '#' || c == '/'; }, '_');
      std::string path = (std::filesystem::path(options.predictions_dir) / (name + ".npy")).string();
      Tensor tensor = Tensor::from_vector<int64_t>({static_cast<int64_t>(predictions[m].size())}, predictions[m]);
      Status written = write_npy(path, tensor);
      if (!written.is_ok()) return failure(written.with_context("--savePredictions"));
      out << "wrote " << path << "\n";
    }
  }
  return summary;
}

Command add_eval_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "eval", "Evaluate models on a labelled data set: accuracy, agreement, latency and throughput");
  command->footer(
      "Each --model is built into an engine: INT8 when it has Q/DQ, float otherwise; 'FILE:fp32' (or --fp32\n"
      "for all) builds it in FP32 with fake quantization removed. Agreement: top-1 equal to the baseline's,\n"
      "the model's own FP32 model when its metadata names one among the --model files, else the first model.\n"
      "Without --mean/--std each model's preprocessing comes from its metadata (preprocessing.mean/std).\n"
      "Data SPEC: fashion-mnist:DIR:train|test, fashion-mnist:train|test, npy:DIR, pb:DIR (docs/cli.md).\n"
      "Example: qdqrt eval --data=fashion-mnist:test --mean=0.2860 --std=0.3530 \\\n"
      "           --model=models/fmnist_resnet_fp32.onnx --model=models/fmnist_resnet_qdq.onnx --plot=eval.svg\n");
  auto options = std::make_shared<EvalOptions>();
  auto models = std::make_shared<std::vector<std::string>>();
  auto mean = std::make_shared<std::string>();
  auto stddev = std::make_shared<std::string>();
  auto no_progress = std::make_shared<bool>(false);
  auto float_list = [](const std::string& flag) {
    return CLI::Validator(
        [flag](std::string& value) -> std::string {
          auto parsed = parse_float_list(value, flag);
          return parsed.ok() ? "" : parsed.status().message();
        },
        "");
  };
  command->add_option("--data", options->data_spec, "Labelled images (SPEC below)")->required()->type_name("SPEC");
  command->add_option("--mean", *mean, "Per-channel mean subtracted after scaling 8-bit pixels to [0, 1]")
      ->check(float_list("--mean"))
      ->type_name("M[,M..]");
  command->add_option("--std", *stddev, "Per-channel standard deviation to divide by")
      ->check(float_list("--std"))
      ->type_name("S[,S..]");
  command->add_option("--model", *models, "An ONNX model (repeat for more; FILE:fp32 forces FP32)")
      ->required()
      ->type_name("FILE[:fp32]");
  command->add_option("--threads", options->threads, "Threads per engine context (0 = all)")
      ->check(quiet(threads_validator()))
      ->capture_default_str()
      ->type_name("N");
  command->add_option("--batch", options->batch, "Maximum batch of the evaluation pass and of the throughput")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}).description(""))
      ->capture_default_str()
      ->type_name("N");
  command->add_option("--samples", options->samples, "Evaluate the first N images only (default: all)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40).description(""))
      ->type_name("N");
  command->add_flag("--fp32", options->force_fp32, "Build every model in FP32 (fake quantization removed)");
  command->add_option("--json", options->json_path, "Write the table as JSON")->type_name("FILE");
  command->add_option("--plot", options->plot_path, "Write an SVG plot of top-1 against batch-1 latency")
      ->type_name("FILE.svg");
  command->add_option("--savePredictions", options->predictions_dir,
                      "Write each model's top-1 classes (int64 .npy) into DIR")
      ->type_name("DIR");
  command->add_flag("--noProgress", *no_progress, "No progress bar on stderr");
  command->add_flag("--baselineFirst", options->baseline_first,
                    "Agreement with the first model for every row (default: each model's own FP32 model when known)");

  Command result;
  result.app = command;
  result.run = [options, models, mean, stddev, no_progress]() {
    EvalOptions resolved = *options;
    for (const std::string& text : *models) resolved.models.push_back(parse_eval_model_spec(text));
    if (!mean->empty()) resolved.mean = *parse_float_list(*mean, "--mean");
    if (!stddev->empty()) resolved.std = *parse_float_list(*stddev, "--std");
    resolved.show_progress = !*no_progress;
    auto outcome = run_eval(resolved, std::cout);
    if (auto* error = std::get_if<RunError>(&outcome)) {
      std::cout.flush();
      std::fprintf(stderr, "qdqrt eval: error: %s\n", error->status.to_string().c_str());
      return error->usage ? static_cast<int>(kExitUsage) : static_cast<int>(kExitFailure);
    }
    return static_cast<int>(kExitSuccess);
  };
  return result;
}

}  // namespace qdqrt::tools
