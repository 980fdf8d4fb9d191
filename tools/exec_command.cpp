#include "tools/exec_command.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <functional>
#include <memory>
#include <numeric>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/file_reading.h"
#include "core/version.h"
#include "engine/engine_file.h"
#include "engine/engine_file_format.h"
#include "engine/profiles.h"
#include "parser/onnx_loader.h"
#include "tools/calibration/calibration_cache.h"
#include "tools/calibration/qdq_insertion.h"
#include "tools/engine_from_graph.h"
#include "kernels/bf16/bf16_gemm.h"
#include "tools/layer_precisions.h"
#include "tools/npy.h"
#include "tools/trtexec_log.h"
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
// timing (ms since `loop_start`) and, when the context profiles, its layer times.
Status run_timed_loop(engine::ExecutionContext& context, std::span<const engine::ConstTensorBinding> inputs,
                      std::span<const engine::TensorBinding> outputs, int64_t min_runs, double min_duration_ms,
                      Clock::time_point loop_start, std::vector<InferenceTiming>& timings, ProfileRecorder* profile,
                      double idle_ms) {
  // Reserved up front so the loop rarely allocates (capped: --iterations may be huge).
  size_t expected_runs = static_cast<size_t>(std::min<int64_t>(min_runs, int64_t{1} << 20));
  timings.reserve(timings.size() + expected_runs);
  if (profile) profile->reserve(expected_runs);
  for (int64_t run = 0;; ++run) {
    Clock::time_point start = Clock::now();
    Status status = context.run(inputs, outputs);
    Clock::time_point end = Clock::now();
    if (!status.is_ok()) return status.with_context(fmt::format("run {}", run));
    timings.push_back({ms_since(loop_start, start), ms_since(loop_start, end)});
    if (profile && context.profiling()) QDQRT_RETURN_IF_ERROR(profile->add_run(context.last_layer_times_ms()));
    if (run + 1 >= min_runs && ms_since(loop_start, end) >= min_duration_ms) break;
    // --idleTime: the gap a server sees between requests (caches and branch predictors cool down).
    if (idle_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(idle_ms));
  }
  return Status::ok();
}

// True when the file at `path` holds a range engine (read from its header; the load verifies it).
bool holds_range_engine(const std::string& path) {
  auto file = open_regular_file(path, "engine file");
  if (!file.ok()) return false;
  uint8_t header[engine::file_format::kFormatVersionOffset + sizeof(uint32_t)] = {};
  if (file->size() < sizeof(header) || !file->read_at(header, sizeof(header), 0, "engine file", path).is_ok()) {
    return false;
  }
  return engine::is_range_engine_file(header);
}

// --getPlanVersionOnly: the engine format version from the header alone (so a file this build
// cannot load still says what made it), and the qdqrt version stored in the plan when it loads.
Result<std::string> engine_file_version(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path, "engine file"));
  uint8_t header[engine::file_format::kFormatVersionOffset + sizeof(uint32_t)] = {};
  if (file.size() < sizeof(header)) return invalid_argument("'{}' is too short to be an engine file", path);
  QDQRT_RETURN_IF_ERROR(file.read_at(header, sizeof(header), 0, "engine file", path));
  if (std::memcmp(header, engine::file_format::kMagic, sizeof(engine::file_format::kMagic)) != 0) {
    return invalid_argument("'{}' is not a qdqrt engine file (no QDQRTENG magic)", path);
  }
  uint32_t format_version = 0;
  std::memcpy(&format_version, header + engine::file_format::kFormatVersionOffset, sizeof(format_version));
  auto contents = engine::read_engine_file_path(path);
  if (!contents.ok()) {
    return fmt::format("Plan was created with qdqrt engine format {} (this qdqrt reads formats {} and {}: {})",
                       format_version, engine::kEngineFormatVersion, engine::kRangeEngineFormatVersion,
                       contents.status().message());
  }
  return fmt::format("Plan was created with qdqrt version {} (engine format {}{})", contents->plan.qdqrt_version,
                     format_version, contents->range ? ", a range engine" : "");
}

// --timeDeserialize: trtexec's load-only timing. Five loads (the first reads from disk or the page
// cache, the others from the page cache), then exit.
std::optional<RunError> time_deserialize(const std::string& path, std::ostream& out) {
  constexpr int kLoads = 5;
  std::vector<double> times;
  for (int i = 0; i < kLoads; ++i) {
    Clock::time_point start = Clock::now();
    Status loaded = holds_range_engine(path) ? engine::RangeEngine::read_file(path).status()
                                             : engine::Engine::load(path).status();
    times.push_back(ms_since(start));
    if (!loaded.is_ok()) return RunError{false, loaded.with_context(fmt::format("--loadEngine: '{}'", path))};
  }
  double total = std::accumulate(times.begin(), times.end(), 0.0);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  out << fmt::format("Deserialization times: {:.3f} ms (first), median {:.3f} ms, min {:.3f} ms\n", times.front(),
                     sorted[sorted.size() / 2], sorted.front());
  out << fmt::format("Total deserialization time = {:.3f} milliseconds in {} iterations, average {:.3f} "
                     "milliseconds/iteration\n",
                     total, kLoads, total / kLoads);
  return std::nullopt;
}

// One of --streams: its own context and output buffers.
struct Stream {
  std::unique_ptr<engine::ExecutionContext> context;
  std::vector<std::pair<std::string, Tensor>> outputs;
  std::vector<engine::TensorBinding> bindings;
  std::vector<InferenceTiming> timings;
};

// Runs `work` for every stream, each on its own host thread (the first on this one); the first
// error wins.
Status run_streams(std::vector<std::unique_ptr<Stream>>& streams, const std::function<Status(Stream&, size_t)>& work) {
  std::vector<Status> results(streams.size(), Status::ok());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < streams.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = work(*streams[i], i); });
  }
  results[0] = work(*streams[0], 0);
  for (std::thread& thread : threads) thread.join();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].is_ok()) return streams.size() > 1 ? results[i].with_context(fmt::format("stream {}", i)) : results[i];
  }
  return Status::ok();
}

// trtexec's --loadInputs files are raw bytes (numpy's tofile); .npy files carry a header.
bool is_raw_input_file(const std::string& path) { return !path.ends_with(".npy"); }

// Fills `tensor` (already at the run shape and dtype) from a raw file holding exactly its bytes.
Status read_raw_input(const InputFileSpec& spec, Tensor& tensor) {
  auto file = open_regular_file(spec.path, fmt::format("input '{}': file", spec.name));
  if (!file.ok()) return file.status();
  const uint64_t size = file->size();
  auto expected = static_cast<uint64_t>(tensor.numel()) * dtype_size(tensor.dtype());
  if (size != expected) {
    return invalid_argument("input '{}': '{}' holds {} bytes; {} {} needs {} (raw data as numpy's tofile writes it)",
                            spec.name, spec.path, size, dtype_name(tensor.dtype()), shape_to_string(tensor.shape()),
                            expected);
  }
  return file->read_at(tensor.raw_data(), static_cast<size_t>(expected), 0, fmt::format("input '{}': file", spec.name),
                       spec.path);
}

// trtexec --calib: a model without Q/DQ quantized at the cache's scales (Q/DQ where
// `qdqrt calibrate` puts them). Returns the graph unchanged for a model that has Q/DQ.
Result<Graph> apply_calibration_cache(Graph graph, const ExecOptions& options, std::ostream& out) {
  auto scales = calibration::read_calibration_cache(options.calib_path);
  if (!scales.ok()) return invalid_argument("--calib: {}", scales.status().message());
  bool has_qdq = std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const Node& node) {
    return node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear";
  });
  if (has_qdq) {
    // As TensorRT: an explicitly quantized model keeps its own scales.
    out << fmt::format("[W] --calib ignored: {} has Q/DQ nodes, whose scales are used\n", options.onnx_path);
    return graph;
  }
  QDQRT_ASSIGN_OR_RETURN(auto plan, calibration::plan_quantization(graph, calibration::Placement::kTensorRT));
  std::map<std::string, float> amax;
  std::vector<std::string> missing;
  for (const std::string& tensor : plan.tensors_to_calibrate()) {
    auto it = scales->find(tensor);
    if (it == scales->end()) {
      missing.push_back(tensor);
    } else {
      amax[tensor] = it->second * 127.0f;
    }
  }
  if (!missing.empty()) {
    return invalid_argument("--calib: '{}' has no scale for {} tensor(s) the model quantizes: {}", options.calib_path,
                            missing.size(), fmt::join(missing, ", "));
  }
  out << fmt::format("Calibration: {} scales from {} ({} activations, weights per channel)\n", scales->size(),
                     options.calib_path, amax.size());
  return calibration::insert_qdq(graph, plan, amax);
}

// --markDebug: the named tensors become graph outputs, so the engine computes and returns them
// (as TensorRT's debug tensors, they keep fusions from swallowing them).
Status mark_debug_tensors(Graph& graph, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (std::find(graph.outputs.begin(), graph.outputs.end(), name) != graph.outputs.end()) continue;
    if (std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end()) {
      return invalid_argument("--markDebug: '{}' is a model input, not a computed tensor", name);
    }
    if (graph.find_initializer(name) != nullptr) {
      return invalid_argument("--markDebug: '{}' is a constant of the model, not a computed tensor", name);
    }
    bool produced = false;
    for (const Node& node : graph.nodes) {
      produced = produced || std::find(node.outputs.begin(), node.outputs.end(), name) != node.outputs.end();
    }
    if (!produced) return invalid_argument("--markDebug: the model has no tensor '{}'", name);
    graph.outputs.push_back(name);
  }
  return Status::ok();
}

// --calib, --layerPrecisions and --markDebug change the model before it is built.
Result<std::shared_ptr<const engine::Engine>> build_modified_model(const ExecOptions& options,
                                                                   const engine::BuildOptions& build, std::ostream& out) {
  QDQRT_ASSIGN_OR_RETURN(Graph graph, load_onnx_file(options.onnx_path));
  if (!options.calib_path.empty()) {
    QDQRT_ASSIGN_OR_RETURN(graph, apply_calibration_cache(std::move(graph), options, out));
  }
  if (!options.float_layers.empty()) {
    auto rewired = keep_nodes_in_float(graph, options.float_layers);
    if (!rewired.ok()) return rewired.status().with_context("--layerPrecisions");
    out << fmt::format("Layer precisions: {} kept in float ({} quantized inputs read in float)\n",
                       fmt::join(options.float_layers, ", "), *rewired);
  }
  if (!options.debug_tensors.empty()) {
    QDQRT_RETURN_IF_ERROR(mark_debug_tensors(graph, options.debug_tensors));
    out << fmt::format("Debug tensors: {} (engine outputs)\n", fmt::join(options.debug_tensors, ", "));
  }
  return build_engine_from_graph(graph, build);
}

// The CPU model name from /proc/cpuinfo ("" when it cannot be read).
std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "";
}

std::string shapes_text(const std::map<std::string, Shape>& shapes) {
  std::vector<std::string> items;
  for (const auto& [name, shape] : shapes) items.push_back(fmt::format("{}={}", name, fmt::join(shape, "x")));
  return items.empty() ? "model" : fmt::format("{}", fmt::join(items, ","));
}

// trtexec's option sections (the ones TREx's parse_trtexec_log reads): what was asked for.
void write_option_sections(const ExecOptions& options, std::ostream& out) {
  out << "=== Model Options ===\n";
  out << fmt::format("Format: {}\n", options.onnx_path.empty() ? "qdqrt engine" : "ONNX");
  out << fmt::format("Model: {}\n", options.onnx_path.empty() ? options.load_engine_path : options.onnx_path);
  out << "=== Build Options ===\n";
  std::string precision = !options.load_engine_path.empty() ? "as the engine was built (below)"
                          : options.fp32                     ? "FP32 (fake quantization removed)"
                          : options.calib_path.empty()       ? "FP32+INT8 (INT8 where the model has Q/DQ)"
                                                             : "FP32+INT8 (Q/DQ from the calibration cache)";
  if (options.bf16 && options.load_engine_path.empty()) precision += ", BF16 for float MatMul/Gemm (--bf16)";
  out << fmt::format("Precision: {}\n", precision);
  out << fmt::format("Calibration: {}\n", !options.calib_path.empty() ? options.calib_path
                                          : options.fp32              ? std::string("Disabled")
                                                                      : std::string("Q/DQ in the model"));
  if (!options.min_shapes.empty() || !options.opt_shapes.empty() || !options.max_shapes.empty()) {
    out << fmt::format("Input build shapes: min {}, opt {}, max {}\n", shapes_text(options.min_shapes),
                       shapes_text(options.opt_shapes), shapes_text(options.build_shapes()));
  } else {
    out << fmt::format("Input build shapes: {}\n", shapes_text(options.build_shapes()));
  }
  out << fmt::format("Save engine: {}\n", options.save_engine_path);
  out << fmt::format("Load engine: {}\n", options.load_engine_path);
  out << "=== Inference Options ===\n";
  out << "Batch: Explicit\n";
  out << fmt::format("Input inference shapes: {}\n", shapes_text(options.run_shapes()));
  out << fmt::format("Iterations: {}\n", options.iterations);
  out << fmt::format("Duration: {:g}s (+ {:g}ms warm up)\n", options.duration_s, options.warm_up_ms);
  out << fmt::format("Streams: {}\n", options.streams);
  out << fmt::format("Threads: {}\n", options.threads > 0 ? fmt::format("{}", options.threads) : std::string("all"));
  out << "Data transfers: Disabled (inputs and outputs stay in host memory)\n";
  out << fmt::format("Separate profiling: {}\n", options.separate_profile_run ? "Enabled" : "Disabled");
  out << "=== Device Information ===\n";
  std::string model = cpu_model_name();
  out << fmt::format("Selected Device: {}\n", model.empty() ? std::string("CPU") : model);
  out << fmt::format("Hardware threads: {}\n", std::thread::hardware_concurrency());
}

// The profiles of the flags (--minShapes/--optShapes/--maxShapes, an input named again starting the
// next profile); inputs given only by --shapes are fixed at that shape in each.
Result<std::vector<engine::ShapeProfile>> flag_profiles(const ExecOptions& options) {
  std::vector<engine::ShapeProfile> profiles;
  QDQRT_ASSIGN_OR_RETURN(engine::ShapeProfile first,
                         engine::make_profile(options.min_shapes, options.opt_shapes, options.max_shapes));
  profiles.push_back(std::move(first));
  for (size_t index = 0; index < options.more_profiles.size(); ++index) {
    const ExecOptions::ProfileShapes& more = options.more_profiles[index];
    auto profile = engine::make_profile(more.min_shapes, more.opt_shapes, more.max_shapes);
    if (!profile.ok()) return profile.status().with_context(fmt::format("profile {}", index + 1));
    profiles.push_back(std::move(profile).value());
  }
  for (engine::ShapeProfile& profile : profiles) {
    for (const auto& [name, shape] : options.shapes) profile.emplace(name, engine::ShapeRange{shape, shape, shape});
  }
  return profiles;
}

// A range engine: built from --onnx for the flags' profiles, or read from a --loadEngine file
// holding one.
Result<std::shared_ptr<const engine::RangeEngine>> make_range_engine(const ExecOptions& options, std::ostream& out) {
  if (!options.load_engine_path.empty()) {
    out << "=== Load ===\n";
    Clock::time_point start = Clock::now();
    auto loaded = engine::RangeEngine::read_file(options.load_engine_path);
    if (!loaded.ok()) return loaded.status().with_context(fmt::format("--loadEngine: '{}'", options.load_engine_path));
    const double load_ms = ms_since(start);
    std::error_code error;
    auto size = std::filesystem::file_size(options.load_engine_path, error);
    out << fmt::format("Engine: {} ({}, a range engine)\n", options.load_engine_path,
                       error ? "?" : bytes_text(static_cast<int64_t>(size)));
    out << fmt::format("Load time: {:.1f} ms\n", load_ms);
    return loaded;
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<engine::ShapeProfile> profiles, flag_profiles(options));
  engine::BuildOptions build;
  build.precision = options.precision();
  build.no_reference_layers = options.no_reference_layers;
  build.bf16 = options.bf16;
  out << "=== Build ===\n";
  out << fmt::format("Model: {}\n", options.onnx_path);
  out.flush();
  Clock::time_point start = Clock::now();
  auto range = engine::RangeEngine::build_from_file(options.onnx_path, profiles, build);
  if (!range.ok()) return range.status().with_context(fmt::format("--onnx: '{}'", options.onnx_path));
  const double build_ms = ms_since(start);
  out << fmt::format("Build time: {:.1f} ms ({} opt shape{})\n", build_ms, profiles.size() > 1 ? "each profile's" : "the",
                     profiles.size() > 1 ? "s" : "");
  out << fmt::format("Engine built in {:.6g} sec.\n", build_ms / 1000.0);
  return range;
}

// The range engine's profiles, one line per input (--dumpOptimizationProfile prints them all; the
// summary prints the first unless there are several).
void print_profiles(const engine::RangeEngine& range, std::ostream& out) {
  const std::vector<engine::ShapeProfile>& profiles = range.profiles();
  for (size_t index = 0; index < profiles.size(); ++index) {
    for (const std::string& name : range.input_names()) {
      const engine::ShapeRange& shapes = profiles[index].at(name);
      out << fmt::format("{}{}: min {} opt {} max {}\n",
                         profiles.size() > 1 ? fmt::format("Profile {}: ", index) : std::string("Shape range: "), name,
                         shape_to_string(shapes.min), shape_to_string(shapes.opt), shape_to_string(shapes.max));
    }
  }
}

// The plan of the run shape of a range engine (--shapes, else a --loadInputs .npy file's, else the
// opt shape of --profile's profile or the first). `requested` gets the run shapes of the inputs
// not read from .npy files.
Result<std::shared_ptr<const engine::Engine>> range_run_engine(const engine::RangeEngine& range,
                                                               const ExecOptions& options, std::ostream& out,
                                                               std::map<std::string, Shape>& requested) {
  const size_t profile = options.profile >= 0 ? static_cast<size_t>(options.profile) : 0;
  if (profile >= range.profiles().size()) {
    return invalid_argument("--profile: profile {} does not exist: the engine has {}", options.profile,
                            range.profiles().size());
  }
  std::map<std::string, Shape> run_shapes;
  for (const std::string& name : range.input_names()) {
    if (auto it = options.shapes.find(name); it != options.shapes.end()) {
      run_shapes[name] = it->second;
      continue;
    }
    auto file = std::find_if(options.input_files.begin(), options.input_files.end(),
                             [&](const InputFileSpec& spec) { return spec.name == name && !is_raw_input_file(spec.path); });
    if (file != options.input_files.end()) {
      auto tensor = read_npy(file->path);
      if (!tensor.ok()) return tensor.status().with_context("--loadInputs");
      run_shapes[name] = tensor->shape();
      continue;
    }
    run_shapes[name] = range.profiles()[profile].at(name).opt;
  }
  requested = run_shapes;
  for (const InputFileSpec& spec : options.input_files) {
    if (!is_raw_input_file(spec.path)) requested.erase(spec.name);
  }
  auto checked = range.check_shapes(run_shapes, options.profile);
  if (!checked.ok()) return checked.status().with_context("--shapes");
  std::vector<std::string> shown;
  for (const auto& [name, shape] : run_shapes) shown.push_back(fmt::format("{}:{}", name, fmt::join(shape, "x")));
  out << fmt::format("Run shape: {} (profile {})\n", fmt::join(shown, ","), *checked);
  Clock::time_point start = Clock::now();
  const int64_t lowered_before = range.plans_lowered();
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const engine::Engine> engine, range.engine_for(run_shapes));
  if (range.plans_lowered() > lowered_before) {
    out << fmt::format("Run shape lowered in {:.1f} ms\n", ms_since(start));
  }
  out << fmt::format("Plans lowered: {} (packed weights {} in all)\n", range.plans_lowered(),
                     bytes_text(range.plan_weight_bytes()));
  return engine;
}

// One warning line per layer that runs on the reference executor; with --noReferenceLayers a
// loaded engine holding one is refused (a built one was refused by the builder).
std::optional<RunError> warn_reference_layers(const engine::EnginePlan& plan, const ExecOptions& options,
                                              std::ostream& out) {
  std::vector<std::string> refused;
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind != "reference") continue;
    std::string reason = engine::reference_layer_reason(layer);
    out << fmt::format("[W] reference layer: {} '{}' runs on the reference executor (slow, one thread): {}\n",
                       layer.op_type, layer.name, reason);
    refused.push_back(fmt::format("{} '{}': {}", layer.op_type, layer.name, reason));
  }
  if (refused.empty() || !options.no_reference_layers) return std::nullopt;
  return RunError{false, unsupported("--noReferenceLayers: {} layer(s) run on the reference executor: {}", refused.size(),
                                     fmt::join(refused, "; "))};
}

}  // namespace

std::optional<RunError> run_exec(const ExecOptions& options, std::ostream& out) {
  for (const std::string& note : options.notes) out << "[W] " << note << "\n";
  if (options.bf16 && !options.load_engine_path.empty()) {
    out << "[W] --bf16 ignored with --loadEngine: the engine's kernels were chosen when it was built\n";
  } else if (options.bf16 && !kernels::bf16_gemm_usable()) {
    out << fmt::format("[W] --bf16: {}, so float MatMul/Gemm layers keep their fp32 kernels\n",
                       kernels::bf16_gemm_unavailable_reason());
  }
  write_option_sections(options, out);

  if (options.plan_version_only) {
    auto version = engine_file_version(options.load_engine_path);
    if (!version.ok()) return RunError{false, version.status().with_context("--getPlanVersionOnly")};
    out << *version << "\n";
    return std::nullopt;
  }
  if (options.time_deserialize) return time_deserialize(options.load_engine_path, out);

  std::shared_ptr<const engine::Engine> engine;
  std::shared_ptr<const engine::RangeEngine> range;  // a range engine (built or loaded)
  std::map<std::string, Shape> range_run_shapes;     // its run shapes
  const bool use_range = options.onnx_path.empty() ? holds_range_engine(options.load_engine_path)
                                                   : options.range_beyond_batch();
  if (use_range) {
    auto made = make_range_engine(options, out);
    if (!made.ok()) return RunError{made.status().code() == StatusCode::kInvalidArgument, made.status()};
    range = *made;
    if (!options.load_engine_path.empty()) {
      const std::string& precision = range->build_options().precision == engine::Precision::kFp32 ? "fp32" : "int8";
      if ((options.fp32 && precision != "fp32") || ((options.int8 || options.best) && precision != "int8")) {
        return RunError{true, invalid_argument("--loadEngine: the engine was built as {}, not {}", precision,
                                               options.fp32 ? "fp32 (--fp32)" : "int8 (--int8/--best)")};
      }
    }
    if (options.dump_optimization_profile || range->profiles().size() == 1) print_profiles(*range, out);
    auto chosen = range_run_engine(*range, options, out, range_run_shapes);
    if (!chosen.ok()) return RunError{chosen.status().code() == StatusCode::kInvalidArgument, chosen.status()};
    engine = *chosen;
  } else if (!options.onnx_path.empty()) {
    engine::BuildOptions build;
    build.precision = options.precision();
    build.input_shapes = options.build_shapes();
    build.no_reference_layers = options.no_reference_layers;
    build.bf16 = options.bf16;
    // An input read from a .npy file without --shapes is built for the file's shape.
    for (const InputFileSpec& spec : options.input_files) {
      if (build.input_shapes.count(spec.name) || is_raw_input_file(spec.path)) continue;
      auto tensor = read_npy(spec.path);
      if (!tensor.ok()) return RunError{true, tensor.status().with_context("--loadInputs")};
      build.input_shapes[spec.name] = tensor->shape();
    }
    out << "=== Build ===\n";
    out << fmt::format("Model: {}\n", options.onnx_path);
    out.flush();  // the build can take a while: show what is being built
    Clock::time_point start = Clock::now();
    auto built = options.calib_path.empty() && options.float_layers.empty() && options.debug_tensors.empty()
                     ? engine::Engine::build_from_file(options.onnx_path, build)
                     : build_modified_model(options, build, out);
    if (!built.ok()) {
      // Shapes are the user's: an invalid argument from the build is a usage error.
      bool usage = built.status().code() == StatusCode::kInvalidArgument;
      return RunError{usage, built.status().with_context(fmt::format("--onnx: '{}'", options.onnx_path))};
    }
    double build_ms = ms_since(start);
    out << fmt::format("Build time: {:.1f} ms\n", build_ms);
    out << fmt::format("Engine built in {:.6g} sec.\n", build_ms / 1000.0);
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
    out << fmt::format("Load time: {:.1f} ms\n", load_ms);
    // Precision is fixed when building: a flag asking for another one is a mistake, not a no-op.
    const std::string& precision = engine->plan().precision;
    if ((options.fp32 && precision != "fp32") || ((options.int8 || options.best) && precision != "int8")) {
      return RunError{true, invalid_argument("--loadEngine: the engine was built as {}, not {}", precision,
                                             options.fp32 ? "fp32 (--fp32)" : "int8 (--int8/--best)")};
    }
  }
  const engine::EnginePlan& plan = engine->plan();
  if (std::optional<RunError> refused = warn_reference_layers(plan, options, out)) return refused;
  // What really runs in INT8, not what was asked for: a model without Q/DQ builds all in FP32.
  PrecisionCount precision = count_layer_precisions(plan);
  bool fp32_requested = plan.precision == "fp32";
  out << fmt::format("Precision: {}\n", precision.text(fp32_requested));
  if (precision.label() == "fp32" && !fp32_requested) {
    out << fmt::format(
        "[W] int8: 0 of {} layers: this model has no Q/DQ, so every layer runs in FP32. Quantize it first "
        "(qdqrt calibrate --onnx=MODEL --data=... --output=ptq.onnx), or give --calib=CACHE\n",
        precision.layers);
  }

  if (!options.save_engine_path.empty()) {
    Clock::time_point start = Clock::now();
    Status status = range ? range->write_file(options.save_engine_path) : engine->save(options.save_engine_path);
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
  out << fmt::format("Reference layers: {}\n", kinds.count("reference") ? kinds.at("reference") : 0);
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
                                    layer_info_to_json(plan, options.detailed_layer_info).dump(2) + "\n");
    if (!status.is_ok()) return RunError{false, status};
  }

  if (options.skip_inference) return std::nullopt;

  // Inputs: --loadInputs files or seeded random values at the run shapes.
  out << "=== Inference ===\n";
  std::map<std::string, Shape> requested_shapes = range ? range_run_shapes : options.run_shapes();
  std::map<std::string, Shape> run_shapes = requested_shapes;
  std::vector<InputFileSpec> npy_files;
  std::vector<InputFileSpec> raw_files;
  for (const InputFileSpec& spec : options.input_files) (is_raw_input_file(spec.path) ? raw_files : npy_files).push_back(spec);
  for (const engine::IoTensorInfo& info : inputs_info) {
    bool from_npy = std::any_of(npy_files.begin(), npy_files.end(),
                                [&](const InputFileSpec& spec) { return spec.name == info.name; });
    if (!from_npy && !run_shapes.count(info.name)) run_shapes[info.name] = info.shape;
  }
  Status shapes_status = check_run_shapes(inputs_info, plan.max_batch, requested_shapes).status();
  if (!shapes_status.is_ok()) return RunError{true, shapes_status.with_context("--shapes")};
  RunOptions input_options;
  input_options.input_files = npy_files;
  input_options.shapes = run_shapes;
  input_options.seed = options.seed;
  input_options.verbose = options.verbose;
  Graph input_graph = inputs_as_graph(inputs_info);
  auto input_tensors = prepare_inputs(input_graph, input_options, out);
  if (!input_tensors.ok()) return RunError{true, input_tensors.status()};
  for (const InputFileSpec& spec : raw_files) {
    auto it = input_tensors->find(spec.name);
    if (it == input_tensors->end()) {
      return RunError{true, invalid_argument("--loadInputs: '{}' is not an input of the engine", spec.name)};
    }
    Status read = read_raw_input(spec, it->second);
    if (!read.is_ok()) return RunError{true, read.with_context("--loadInputs")};
    if (options.verbose) out << fmt::format("input '{}': raw data from {}\n", spec.name, spec.path);
  }
  std::map<std::string, Shape> actual_shapes;
  for (const auto& [name, tensor] : *input_tensors) actual_shapes[name] = tensor.shape();
  auto batch = check_run_shapes(inputs_info, plan.max_batch, actual_shapes);
  if (!batch.ok()) return RunError{true, batch.status().with_context("--loadInputs")};

  std::vector<engine::ConstTensorBinding> input_bindings;
  for (const engine::IoTensorInfo& info : inputs_info) {
    const Tensor& tensor = input_tensors->at(info.name);
    input_bindings.push_back({info.name, tensor.raw_data(), tensor.shape()});
  }

  // Profiling during the timed runs unless --separateProfileRun asks for a second, profiled run.
  // With several streams only the first one profiles.
  bool profile_timed_runs = options.profiling() && !options.separate_profile_run;
  int hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads_per_stream = options.threads > 0 ? options.threads : std::max(1, hardware_threads / options.streams);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < options.streams; ++i) {
    auto stream = std::make_unique<Stream>();
    stream->context = engine->create_context(
        {.threads = options.streams == 1 ? options.threads : threads_per_stream,
         .profiling = i == 0 && profile_timed_runs,
         .flush_denormals = !options.keep_denormals});
    for (const engine::IoTensorInfo& info : outputs_info) {
      // An output (a marked tensor too) may hold the batch off dim 0 or a multiple of the run's batch
      // (a sequence-first attention tensor, a window attention's [16 * N, ...]).
      stream->outputs.emplace_back(info.name, Tensor(info.dtype, info.shape_at_batch(*batch)));
    }
    for (auto& [name, tensor] : stream->outputs) stream->bindings.push_back({name, tensor.raw_data(), tensor.shape()});
    streams.push_back(std::move(stream));
  }
  engine::ExecutionContext& context = *streams.front()->context;
  std::vector<std::string> shape_texts;
  for (const engine::ConstTensorBinding& binding : input_bindings) {
    shape_texts.push_back(fmt::format("{}:{}", binding.name, fmt::join(binding.shape, "x")));
  }
  out << fmt::format("Shapes: {} (batch {})\n", fmt::join(shape_texts, ","), *batch);
  out << fmt::format("Threads: {}\n", context.threads());
  if (options.streams > 1) out << fmt::format("Streams: {} (each its own context and host thread)\n", options.streams);
  int total_threads = context.threads() * options.streams;
  if (total_threads > hardware_threads) {
    out << fmt::format("[W] {} threads on {} hardware threads: threads take turns on the cores, so latency varies "
                       "and the first runs are slow (use --threads={} or fewer)\n",
                       total_threads, hardware_threads, std::max(1, hardware_threads / options.streams));
  }
  out << fmt::format("Iterations: at least {}, duration: at least {:g} s, warm-up: {:g} ms{}\n", options.iterations,
                     options.duration_s, options.warm_up_ms,
                     options.profiling() ? (options.separate_profile_run ? ", profiled in a separate run" : ", profiled")
                                         : "");
  out.flush();

  std::span<const engine::ConstTensorBinding> input_span(input_bindings);
  std::vector<std::string> layer_names;
  for (const engine::LayerProfileEntry& layer : engine->layers()) layer_names.push_back(layer.name);
  ProfileRecorder profile(layer_names);
  // Warm-up, then the timed runs, on every stream at once.
  std::vector<int64_t> warm_up_runs(streams.size(), 0);
  Clock::time_point warm_up_start = Clock::now();
  Clock::time_point loop_start;
  Status status = run_streams(streams, [&](Stream& stream, size_t index) -> Status {
    std::span<const engine::TensorBinding> output_span(stream.bindings);
    while (ms_since(warm_up_start) < options.warm_up_ms) {
      Status run = stream.context->run(input_span, output_span);
      if (!run.is_ok()) return run.with_context("warm-up run");
      ++warm_up_runs[index];
    }
    return Status::ok();
  });
  if (!status.is_ok()) return RunError{false, status};
  int64_t all_warm_up_runs = std::accumulate(warm_up_runs.begin(), warm_up_runs.end(), int64_t{0});
  if (all_warm_up_runs > 0) out << fmt::format("Warm-up: {} runs in {:.1f} ms\n", all_warm_up_runs, ms_since(warm_up_start));
  if (options.sleep_time_ms > 0) {
    out << fmt::format("Sleep: {:g} ms before the timed runs\n", options.sleep_time_ms);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(options.sleep_time_ms));
  }
  if (options.idle_time_ms > 0) out << fmt::format("Idle: {:g} ms between timed runs (not timed)\n", options.idle_time_ms);
  int64_t single_thread_runs_before = 0;
  for (const auto& stream : streams) single_thread_runs_before += stream->context->single_thread_runs();
  loop_start = Clock::now();
  status = run_streams(streams, [&](Stream& stream, size_t index) -> Status {
    return run_timed_loop(*stream.context, input_span, stream.bindings, options.iterations, options.duration_s * 1000.0,
                          loop_start, stream.timings, index == 0 && profile_timed_runs ? &profile : nullptr,
                          options.idle_time_ms);
  });
  if (!status.is_ok()) return RunError{false, status};
  std::vector<InferenceTiming> timings;
  for (const auto& stream : streams) timings.insert(timings.end(), stream->timings.begin(), stream->timings.end());
  int64_t single_thread_runs = -single_thread_runs_before;
  for (const auto& stream : streams) single_thread_runs += stream->context->single_thread_runs();
  std::sort(timings.begin(), timings.end(),
            [](const InferenceTiming& a, const InferenceTiming& b) { return a.start_ms < b.start_ms; });
  // Outputs of the last timed run (the profile run below rewrites the same values).
  if (options.profiling() && options.separate_profile_run) {
    context.set_profiling(true);
    std::vector<InferenceTiming> profile_timings;
    status = run_timed_loop(context, input_span, streams.front()->bindings, options.iterations,
                            options.duration_s * 1000.0, Clock::now(), profile_timings, &profile, options.idle_time_ms);
    if (!status.is_ok()) return RunError{false, status.with_context("profile run")};
    context.set_profiling(false);
  }

  PerformanceSummary summary = summarize_performance(timings, options.percentiles);
  out << format_performance_summary(summary);
  if (*batch > 1) {
    out << fmt::format("Sample throughput: {:.6g} samples/s at batch {}\n", summary.throughput_qps * *batch, *batch);
  }
  out << format_stability_warning(summary.latency);
  out << format_single_thread_warning(single_thread_runs, timings.size());
  if (options.verbose) out << format_trace_averages(timings, options.avg_runs);
  const std::vector<std::pair<std::string, Tensor>>& output_tensors = streams.front()->outputs;
  if (options.verbose || options.dump_output) {
    out << "=== Outputs ===\n";
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
  for (const auto& [name, file] : options.save_debug_tensors) {
    auto it = std::find_if(output_tensors.begin(), output_tensors.end(), [&name = name](const auto& output) { return output.first == name; });
    if (it == output_tensors.end()) {
      return RunError{true, invalid_argument("--saveDebugTensors: '{}' is not an output of the engine (mark it with "
                                             "--markDebug when building)", name)};
    }
    const Tensor& tensor = it->second;
    status = write_text_file("--saveDebugTensors", file,
                             std::string(static_cast<const char*>(tensor.raw_data()), tensor.nbytes()));
    if (!status.is_ok()) return RunError{false, status};
    out << fmt::format("Debug tensor {}: {} {} ({} bytes) written to {}\n", name, dtype_name(tensor.dtype()),
                       shape_to_string(tensor.shape()), tensor.nbytes(), file);
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
    // trtexec's first and last lines, which CI scripts grep for ("&&&& PASSED").
    const std::string test_line = fmt::format("qdqrt.exec [qdqrt v{}] # {}", kVersion, process_command_line());
    std::cout << "&&&& RUNNING " << test_line << std::endl;
    auto finish = [&](int code) {
      std::cout << "&&&& " << (code == kExitSuccess ? "PASSED " : "FAILED ") << test_line << std::endl;
      return code;
    };
    Status status = finish_exec_options(*line);
    if (!status.is_ok()) {
      std::cerr << "qdqrt exec: error: " << status.message() << "\n";
      return finish(kExitUsage);
    }
    std::optional<RunError> error;
    {
      // trtexec's "[date] [I] " on every line, for the tools that read trtexec logs.
      TrtexecLogBuffer log_buffer(std::cout);
      std::ostream log(&log_buffer);
      error = run_exec(line->options, log);
    }
    if (!error) return finish(kExitSuccess);
    std::cout.flush();
    std::cerr << "qdqrt exec: error: " << error->status.to_string() << "\n";
    return finish(error->usage ? kExitUsage : kExitFailure);
  };
  return Command{exec, execute};
}

}  // namespace qdqrt::tools
