#include "tools/exec_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/npy.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"
#include "tools/exec_report.h"

namespace qdqrt::tools {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start, Clock::time_point now = Clock::now()) {
  return std::chrono::duration<double, std::milli>(now - start).count();
}

std::string bytes_text(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

Status write_text_file(const std::string& flag, const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc | std::ios::binary);
  if (!file) return io_error("{}: cannot open '{}' for writing", flag, path);
  file << text;
  file.close();
  if (!file) return io_error("{}: cannot write '{}'", flag, path);
  return Status::ok();
}

std::string io_text(const engine::IoTensorInfo& info) {
  return fmt::format("{} {} {}", info.name, dtype_name(info.dtype), shape_to_string(info.shape));
}

// Engine inputs as graph value infos, so `qdqrt run`'s input preparation (files, random values,
// dtype and dim checks) applies unchanged. The batch dim is symbolic: any batch is accepted here
// and check_run_shapes() checks it against the engine's maximum.
Graph inputs_as_graph(const std::vector<engine::IoTensorInfo>& inputs) {
  Graph graph;
  for (const engine::IoTensorInfo& info : inputs) {
    std::vector<Dim> dims;
    for (size_t i = 0; i < info.shape.size(); ++i) {
      Dim dim;
      if (i == 0 && info.batched) {
        dim.symbol = "batch";
      } else {
        dim.value = info.shape[i];
      }
      dims.push_back(dim);
    }
    graph.inputs.push_back(info.name);
    graph.values[info.name] = ValueInfo{info.name, info.dtype, dims};
  }
  return graph;
}

// Runs until at least `min_runs` runs and `min_duration_ms` have passed; records each run's
// timing and, when the context profiles, its layer times.
Status run_timed_loop(engine::ExecutionContext& context, std::span<const engine::ConstTensorBinding> inputs,
                      std::span<const engine::TensorBinding> outputs, int64_t min_runs, double min_duration_ms,
                      std::vector<InferenceTiming>& timings, ProfileRecorder* profile) {
  // Reserved up front so the loop rarely allocates (capped: --iterations may be huge).
  size_t expected_runs = static_cast<size_t>(std::min<int64_t>(min_runs, int64_t{1} << 20));
  timings.reserve(timings.size() + expected_runs);
  if (profile) profile->reserve(expected_runs);
  Clock::time_point loop_start = Clock::now();
  for (int64_t run = 0;; ++run) {
    Clock::time_point start = Clock::now();
    Status status = context.run(inputs, outputs);
    Clock::time_point end = Clock::now();
    if (!status.is_ok()) return status.with_context(fmt::format("run {}", run));
    timings.push_back({ms_since(loop_start, start), ms_since(loop_start, end)});
    if (profile && context.profiling()) QDQRT_RETURN_IF_ERROR(profile->add_run(context.last_layer_times_ms()));
    if (run + 1 >= min_runs && ms_since(loop_start, end) >= min_duration_ms) break;
  }
  return Status::ok();
}

}  // namespace

std::optional<RunError> run_exec(const ExecOptions& options, std::ostream& out) {
  std::shared_ptr<const engine::Engine> engine;
  if (!options.onnx_path.empty()) {
    engine::BuildOptions build;
    build.precision = options.precision();
    build.input_shapes = options.shapes;
    // An input read from a file without --shapes is built for the file's shape.
    for (const InputFileSpec& spec : options.input_files) {
      if (build.input_shapes.count(spec.name)) continue;
      auto tensor = read_npy(spec.path);
      if (!tensor.ok()) return RunError{true, tensor.status().with_context("--loadInputs")};
      build.input_shapes[spec.name] = tensor->shape();
    }
    out << "=== Build ===\n";
    out << fmt::format("Model: {}\n", options.onnx_path);
    out << fmt::format("Precision: {}\n", options.fp32 ? "fp32" : "int8");
    out.flush();  // the build can take a while: show what is being built
    Clock::time_point start = Clock::now();
    auto built = engine::Engine::build_from_file(options.onnx_path, build);
    if (!built.ok()) {
      // Shapes are the user's: an invalid argument from the build is a usage error.
      bool usage = built.status().code() == StatusCode::kInvalidArgument;
      return RunError{usage, built.status().with_context(fmt::format("--onnx: '{}'", options.onnx_path))};
    }
    out << fmt::format("Build time: {:.1f} ms\n", ms_since(start));
    engine = *built;
  } else {
    out << "=== Load ===\n";
    Clock::time_point start = Clock::now();
    auto loaded = engine::Engine::load(options.load_engine_path);
    if (!loaded.ok()) {
      return RunError{false, loaded.status().with_context(fmt::format("--loadEngine: '{}'", options.load_engine_path))};
    }
    double load_ms = ms_since(start);
    engine = *loaded;
    std::error_code error;
    auto size = std::filesystem::file_size(options.load_engine_path, error);
    out << fmt::format("Engine: {} ({})\n", options.load_engine_path, error ? "?" : bytes_text(static_cast<int64_t>(size)));
    out << fmt::format("Model: {}\n", engine->plan().source_model);
    out << fmt::format("Precision: {}\n", engine->plan().precision);
    out << fmt::format("Load time: {:.1f} ms\n", load_ms);
    // Precision is fixed when building: a flag asking for another one is a mistake, not a no-op.
    const std::string& precision = engine->plan().precision;
    if ((options.fp32 && precision != "fp32") || ((options.int8 || options.best) && precision != "int8")) {
      return RunError{true, invalid_argument("--loadEngine: the engine was built as {}, not {}", precision,
                                             options.fp32 ? "fp32 (--fp32)" : "int8 (--int8/--best)")};
    }
  }
  const engine::EnginePlan& plan = engine->plan();

  if (!options.save_engine_path.empty()) {
    Clock::time_point start = Clock::now();
    Status status = engine->save(options.save_engine_path);
    if (!status.is_ok()) return RunError{false, status.with_context("--saveEngine")};
    std::error_code error;
    auto size = std::filesystem::file_size(options.save_engine_path, error);
    out << fmt::format("Saved engine: {} ({}, {} bytes) in {:.1f} ms\n", options.save_engine_path,
                       error ? "?" : bytes_text(static_cast<int64_t>(size)), error ? 0 : size, ms_since(start));
  }

  // The engine summary: what was built or loaded.
  std::vector<engine::IoTensorInfo> inputs_info = engine->inputs();
  std::vector<engine::IoTensorInfo> outputs_info = engine->outputs();
  out << "=== Engine ===\n";
  out << fmt::format("ISA: {}{}\n", plan.isa,
                     plan.cpu_features.empty() ? "" : fmt::format(" (CPU features: {})", fmt::join(plan.cpu_features, ", ")));
  std::map<std::string, int> kinds;
  int64_t weight_bytes = 0;
  for (const engine::PlanLayer& layer : plan.layers) {
    ++kinds[layer.kind];
    for (const engine::Blob& blob : layer.blobs) weight_bytes += static_cast<int64_t>(blob.bytes.size());
  }
  std::vector<std::string> kind_counts;
  for (const auto& [kind, count] : kinds) kind_counts.push_back(fmt::format("{} x{}", kind, count));
  out << fmt::format("Layers: {} ({})\n", plan.layers.size(), fmt::join(kind_counts, ", "));
  for (const engine::IoTensorInfo& info : inputs_info) out << "Input: " << io_text(info) << "\n";
  for (const engine::IoTensorInfo& info : outputs_info) out << "Output: " << io_text(info) << "\n";
  out << fmt::format("Max batch: {}\n", plan.max_batch);
  out << fmt::format("Memory: weights {}, activation arena {}, scratch {} per thread\n", bytes_text(weight_bytes),
                     bytes_text(plan.arena_bytes), bytes_text(plan.scratch_bytes_per_thread));
  if (options.verbose) {
    std::map<std::string, int> kernels;
    for (const engine::PlanLayer& layer : plan.layers) ++kernels[layer.kernel.empty() ? "-" : layer.kernel];
    for (const auto& [kernel, count] : kernels) out << fmt::format("Kernel: {} x{}\n", kernel, count);
  }
  if (options.dump_layer_info) out << format_layer_info(plan);
  if (!options.export_layer_info_path.empty()) {
    Status status = write_text_file("--exportLayerInfo", options.export_layer_info_path,
                                    layer_info_to_json(plan).dump(2) + "\n");
    if (!status.is_ok()) return RunError{false, status};
  }

  if (options.skip_inference) return std::nullopt;

  // Inputs: --loadInputs files or seeded random values at the run shapes.
  out << "=== Inference ===\n";
  std::map<std::string, Shape> run_shapes = options.shapes;
  for (const engine::IoTensorInfo& info : inputs_info) {
    bool from_file = std::any_of(options.input_files.begin(), options.input_files.end(),
                                 [&](const InputFileSpec& spec) { return spec.name == info.name; });
    if (!from_file && !run_shapes.count(info.name)) run_shapes[info.name] = info.shape;
  }
  Status shapes_status = check_run_shapes(inputs_info, plan.max_batch, options.shapes).status();
  if (!shapes_status.is_ok()) return RunError{true, shapes_status.with_context("--shapes")};
  RunOptions input_options;
  input_options.input_files = options.input_files;
  input_options.shapes = run_shapes;
  input_options.seed = options.seed;
  input_options.verbose = options.verbose;
  Graph input_graph = inputs_as_graph(inputs_info);
  auto input_tensors = prepare_inputs(input_graph, input_options, out);
  if (!input_tensors.ok()) return RunError{true, input_tensors.status()};
  std::map<std::string, Shape> actual_shapes;
  for (const auto& [name, tensor] : *input_tensors) actual_shapes[name] = tensor.shape();
  auto batch = check_run_shapes(inputs_info, plan.max_batch, actual_shapes);
  if (!batch.ok()) return RunError{true, batch.status().with_context("--loadInputs")};

  std::vector<engine::ConstTensorBinding> input_bindings;
  for (const engine::IoTensorInfo& info : inputs_info) {
    const Tensor& tensor = input_tensors->at(info.name);
    input_bindings.push_back({info.name, tensor.raw_data(), tensor.shape()});
  }
  std::vector<std::pair<std::string, Tensor>> output_tensors;
  for (const engine::IoTensorInfo& info : outputs_info) {
    Shape shape = info.shape;
    if (info.batched && !shape.empty()) shape[0] = *batch;
    output_tensors.emplace_back(info.name, Tensor(info.dtype, shape));
  }
  std::vector<engine::TensorBinding> output_bindings;
  for (auto& [name, tensor] : output_tensors) output_bindings.push_back({name, tensor.raw_data(), tensor.shape()});

  // Profiling during the timed runs unless --separateProfileRun asks for a second, profiled run.
  bool profile_timed_runs = options.profiling() && !options.separate_profile_run;
  auto context = engine->create_context({.threads = options.threads, .profiling = profile_timed_runs});
  std::vector<std::string> shape_texts;
  for (const engine::ConstTensorBinding& binding : input_bindings) {
    shape_texts.push_back(fmt::format("{}:{}", binding.name, fmt::join(binding.shape, "x")));
  }
  out << fmt::format("Shapes: {} (batch {})\n", fmt::join(shape_texts, ","), *batch);
  out << fmt::format("Threads: {}\n", context->threads());
  out << fmt::format("Iterations: at least {}, duration: at least {:g} s, warm-up: {:g} ms{}\n", options.iterations,
                     options.duration_s, options.warm_up_ms,
                     options.profiling() ? (options.separate_profile_run ? ", profiled in a separate run" : ", profiled")
                                         : "");
  out.flush();

  std::span<const engine::ConstTensorBinding> input_span(input_bindings);
  std::span<const engine::TensorBinding> output_span(output_bindings);
  int64_t warm_up_runs = 0;
  Clock::time_point warm_up_start = Clock::now();
  while (ms_since(warm_up_start) < options.warm_up_ms) {
    Status status = context->run(input_span, output_span);
    if (!status.is_ok()) return RunError{false, status.with_context("warm-up run")};
    ++warm_up_runs;
  }
  if (warm_up_runs > 0) out << fmt::format("Warm-up: {} runs in {:.1f} ms\n", warm_up_runs, ms_since(warm_up_start));

  std::vector<std::string> layer_names;
  for (const engine::LayerProfileEntry& layer : engine->layers()) layer_names.push_back(layer.name);
  ProfileRecorder profile(layer_names);
  std::vector<InferenceTiming> timings;
  Status status = run_timed_loop(*context, input_span, output_span, options.iterations, options.duration_s * 1000.0,
                                 timings, profile_timed_runs ? &profile : nullptr);
  if (!status.is_ok()) return RunError{false, status};
  // Outputs of the last timed run (the profile run below rewrites the same values).
  if (options.profiling() && options.separate_profile_run) {
    context->set_profiling(true);
    std::vector<InferenceTiming> profile_timings;
    status = run_timed_loop(*context, input_span, output_span, options.iterations, options.duration_s * 1000.0,
                            profile_timings, &profile);
    if (!status.is_ok()) return RunError{false, status.with_context("profile run")};
    context->set_profiling(false);
  }

  PerformanceSummary summary = summarize_performance(timings, options.percentiles);
  out << format_performance_summary(summary);
  if (*batch > 1) out << fmt::format("Throughput: {:.6g} samples/s at batch {}\n", summary.throughput_qps * *batch, *batch);
  if (options.verbose) out << format_trace_averages(timings, options.avg_runs);
  if (options.verbose) {
    for (const auto& [name, tensor] : output_tensors) out << summarize_tensor(name, tensor);
  }
  if (options.profiling()) {
    ProfileReport report = summarize_profile(profile);
    if (options.dump_profile) out << format_profile_table(report);
    if (!options.export_profile_path.empty()) {
      status = write_text_file("--exportProfile", options.export_profile_path, json_array_lines(profile_to_json(report)));
      if (!status.is_ok()) return RunError{false, status};
    }
  }
  if (!options.export_times_path.empty()) {
    status = write_text_file("--exportTimes", options.export_times_path, timings_to_json_text(timings));
    if (!status.is_ok()) return RunError{false, status};
  }
  if (!options.export_output_path.empty()) {
    status = write_text_file("--exportOutput", options.export_output_path,
                             json_array_lines(outputs_to_json(output_tensors)));
    if (!status.is_ok()) return RunError{false, status};
  }
  return std::nullopt;
}

Command add_exec_command(CLI::App& app) {
  CLI::App* exec = app.add_subcommand("exec", "Build or load an engine and benchmark it (like trtexec)");
  exec->footer(
      "Build: --onnx=model.onnx [--saveEngine=model.qdqrt]; or load: --loadEngine=model.qdqrt.\n"
      "Then untimed runs for --warmUp ms, timed runs until both --iterations and --duration are\n"
      "reached, and trtexec's '=== Performance summary ==='. Inputs not given with --loadInputs are\n"
      "seeded random values (floats uniform in [-1, 1)).\n"
      "Example: qdqrt exec --onnx=model.onnx --saveEngine=model.qdqrt --dumpProfile\n");
  auto line = std::make_shared<ExecCommandLine>();
  add_exec_flags(*exec, *line);
  auto execute = [line]() -> int {
    Status status = finish_exec_options(*line);
    if (!status.is_ok()) {
      std::cerr << "qdqrt exec: error: " << status.message() << "\n";
      return kExitUsage;
    }
    std::optional<RunError> error = run_exec(line->options, std::cout);
    if (!error) return kExitSuccess;
    std::cout.flush();
    std::cerr << "qdqrt exec: error: " << error->status.to_string() << "\n";
    return error->usage ? kExitUsage : kExitFailure;
  };
  return Command{exec, execute};
}

}  // namespace qdqrt::tools
