#include "tools/exec_options.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/file_reading.h"
#include "engine/shape_profile.h"
#include "tools/cli_flags.h"
#include "tools/exec_report.h"
#include "tools/layer_precisions.h"

namespace qdqrt::tools {

namespace {

// "a,b,,c" -> {"a", "b", "", "c"}: a comma-separated flag value.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

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

// The input's shape range: the same rank everywhere, min <= opt <= max on every dim, and the shapes
// run at (--shapes) inside it.
Status check_shape_range(const ExecOptions& options) {
  std::map<std::string, std::vector<std::pair<std::string, Shape>>> by_input;
  for (const auto& [flag, shapes] : {std::pair{"--minShapes", &options.min_shapes},
                                    std::pair{"--optShapes", &options.opt_shapes},
                                    std::pair{"--maxShapes", &options.max_shapes}, std::pair{"--shapes", &options.shapes}}) {
    for (const auto& [name, shape] : *shapes) by_input[name].emplace_back(flag, shape);
  }
  for (const auto& [name, given] : by_input) {
    const auto& [first_flag, first] = given.front();
    for (const auto& [flag, shape] : given) {
      if (shape.size() != first.size()) {
        return invalid_argument("{} and {}: input '{}' is {} and {}: the ranks differ", first_flag, flag, name,
                                shape_to_string(first), shape_to_string(shape));
      }
    }
    auto find = [&name = name](const std::map<std::string, Shape>& shapes) -> const Shape* {
      auto it = shapes.find(name);
      return it == shapes.end() ? nullptr : &it->second;
    };
    const Shape* low = find(options.min_shapes);
    const Shape* opt = find(options.opt_shapes);
    const Shape* high = find(options.max_shapes);
    const Shape* run = find(options.shapes);
    for (size_t axis = 0; axis < first.size(); ++axis) {
      const std::string what = axis == 0 ? std::string("batch") : fmt::format("dim {}", axis);
      if (low && opt && (*low)[axis] > (*opt)[axis]) {
        return invalid_argument("--minShapes: input '{}': {} {} is above --optShapes' {}", name, what, (*low)[axis],
                                (*opt)[axis]);
      }
      if (high) {
        for (const Shape* other : {low, opt, run}) {
          if (other && (*other)[axis] > (*high)[axis]) {
            return invalid_argument("--maxShapes: input '{}': {} {} is below the {} {} asked to run or build", name,
                                    what, (*high)[axis], what, (*other)[axis]);
          }
        }
      }
      if (low && run && (*run)[axis] < (*low)[axis]) {
        return invalid_argument("--shapes: input '{}': {} {} is below --minShapes' {}", name, what, (*run)[axis],
                                (*low)[axis]);
      }
    }
  }
  return Status::ok();
}

Result<std::map<std::string, Shape>> collect_flag_shapes(const char* flag, const std::vector<std::string>& texts) {
  auto shapes = collect_shapes(texts);
  if (!shapes.ok()) return shapes.status().with_context(flag);
  return shapes;
}

}  // namespace

std::map<std::string, Shape> ExecOptions::build_shapes() const {
  std::map<std::string, Shape> result = max_shapes;
  for (const auto& [name, shape] : shapes) result.emplace(name, shape);
  return result;
}

bool ExecOptions::range_beyond_batch() const {
  if (!more_profiles.empty()) return true;
  for (const auto& [name, high] : max_shapes) {
    for (const std::map<std::string, Shape>* shapes : {&min_shapes, &opt_shapes}) {
      auto it = shapes->find(name);
      if (it == shapes->end() || it->second.size() != high.size()) continue;
      if (!std::equal(high.begin() + (high.empty() ? 0 : 1), high.end(), it->second.begin() + (high.empty() ? 0 : 1))) {
        return true;
      }
    }
  }
  return false;
}

std::map<std::string, Shape> ExecOptions::run_shapes() const {
  std::map<std::string, Shape> result = shapes;
  for (const auto& [name, shape] : opt_shapes) result.emplace(name, shape);
  return result;
}

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
  exec.add_flag("--bf16", options.bf16,
                "Float MatMul/Gemm layers with constant weights (those outside Q/DQ) in bf16 with fp32 sums,\n"
                "where the CPU has AVX512_BF16 (else a warning and fp32 kernels)");
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
  // Bare --threads (trtexec's "enable multithreading") means every hardware thread.
  exec.add_option("--threads", options.threads, "Threads of the engine's thread pool (0 or bare: every hardware thread)")
      ->check(quiet(threads_validator()))
      ->expected(0, 1)
      ->default_str("0")
      ->type_name("[N]");
  exec.add_option("--exportOutput", options.export_output_path, "Write the outputs of the last run as JSON")
      ->type_name("FILE");
  exec.add_flag("--keepDenormals", options.keep_denormals,
                "Run with IEEE denormal floats (by default the engine reads and writes floats below 1.2e-38 as zero, "
                "as GPU inference does: a multiply-add with one is ~100x slower)");
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
  exec.add_flag("--skipInference,--buildOnly", options.skip_inference,
                "Stop after building or loading (and saving) the engine");
  exec.add_flag("--noReferenceLayers", options.no_reference_layers,
                "Fail when a node would run on the reference executor (a slow fallback layer) instead of a native layer");

  // trtexec's flags with a CPU meaning.
  for (auto [flag, texts, text] :
       {std::tuple{"--minShapes", &line.min_shapes_texts, "Smallest shapes the engine must run (every dim >= 1)"},
        std::tuple{"--optShapes", &line.opt_shapes_texts,
                   "Shapes to run at when --shapes gives none (a range beyond the batch: lowered at build)"},
        std::tuple{"--maxShapes", &line.max_shapes_texts,
                   "Largest shapes: the batch runs 1..max; other dims differing from --minShapes build a range\n"
                   "engine that lowers each run shape on first use. Naming an input again starts the next\n"
                   "optimization profile"}}) {
    exec.add_option(flag, *texts, text)->check(quiet(shapes_validator()))->type_name("NAME:DIMS[,...]");
  }
  exec.add_option("--profile,--useProfile", options.profile,
                  "Run only shapes of optimization profile N of a range engine (default: the first profile\n"
                  "holding the run shapes)")
      ->check(quiet(CLI::Range(0, 63)))
      ->type_name("N");
  exec.add_flag("--dumpOptimizationProfile", options.dump_optimization_profile,
                "Print the optimization profiles (min/opt/max per input) of the engine");
  exec.add_option("--streams,--infStreams", options.streams,
                  "Contexts running at once, each on its own thread (throughput over all of them)")
      ->check(quiet(CLI::Range(1, 256)))
      ->capture_default_str()
      ->type_name("N");
  exec.add_option("--calib", options.calib_path,
                  "TensorRT calibration cache (as qdqrt calibrate --calibrationCache writes it): quantize a\n"
                  "model without Q/DQ at these scales, then build INT8")
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  exec.add_option("--profilingVerbosity,--nvtxMode", line.profiling_verbosity,
                  "layer_names_only|detailed|none: what --exportLayerInfo holds (default detailed)")
      ->check(quiet(CLI::IsMember({"layer_names_only", "detailed", "none", "default", "verbose"})))
      ->type_name("LEVEL");
  exec.add_flag("--dumpOutput", options.dump_output, "Print the outputs of the last run");
  exec.add_option("--markDebug", line.mark_debug_texts,
                  "Keep these tensors of the model as engine outputs (fusions do not cross them), for\n"
                  "--saveDebugTensors and --exportOutput: the intermediate values QAT debugging compares")
      ->type_name("NAME[,...]");
  exec.add_option("--saveDebugTensors", line.save_debug_texts,
                  "After the last run, write each marked tensor's raw data (row-major, as numpy's tofile) to FILE")
      ->type_name("NAME:FILE[,...]");
  exec.add_flag("--getPlanVersionOnly", options.plan_version_only,
                "With --loadEngine: print the qdqrt version and engine format that made the file, and exit");
  exec.add_flag("--timeDeserialize", options.time_deserialize,
                "With --loadEngine: time loading the engine file (5 loads), and exit");
  exec.add_option("--sleepTime", options.sleep_time_ms, "Pause MS milliseconds between the warm-up and the timed runs")
      ->check(quiet(CLI::Range(0.0, 3.6e6)))
      ->type_name("MS");
  exec.add_option("--idleTime", options.idle_time_ms,
                  "Pause MS milliseconds between two timed runs (caches go cold as between requests)")
      ->check(quiet(CLI::Range(0.0, 3.6e6)))
      ->type_name("MS");
  exec.add_option("--layerPrecisions", line.layer_precisions_texts,
                  "NAME:fp32[,...]: keep these ONNX nodes in float (their Q/DQ'd inputs read the float\n"
                  "tensors); *:fp32 is --fp32. NAME:int8 is the default; fp16/bf16 are noted, not applied")
      ->type_name("NAME:PREC[,...]");
  add_not_applicable_flags(exec, options.notes);
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
  // Each flag's shapes, profile by profile: an input named again opens the next profile.
  std::vector<ExecOptions::ProfileShapes> profiles(1);
  for (auto [flag, texts, member] :
       {std::tuple{"--minShapes", &line.min_shapes_texts, &ExecOptions::ProfileShapes::min_shapes},
        std::tuple{"--optShapes", &line.opt_shapes_texts, &ExecOptions::ProfileShapes::opt_shapes},
        std::tuple{"--maxShapes", &line.max_shapes_texts, &ExecOptions::ProfileShapes::max_shapes}}) {
    size_t profile = 0;
    for (const std::string& text : *texts) {
      auto parsed = collect_flag_shapes(flag, {text});
      if (!parsed.ok()) return parsed.status();
      for (auto& [name, shape] : *parsed) {
        while (profile < profiles.size() && (profiles[profile].*member).count(name)) ++profile;
        if (profile == profiles.size()) profiles.emplace_back();
        (profiles[profile].*member)[name] = std::move(shape);
      }
    }
  }
  if (profiles.size() > engine::kMaxProfiles) {
    return invalid_argument("--minShapes/--optShapes/--maxShapes: {} profiles, at most {}", profiles.size(),
                            engine::kMaxProfiles);
  }
  options.min_shapes = std::move(profiles[0].min_shapes);
  options.opt_shapes = std::move(profiles[0].opt_shapes);
  options.max_shapes = std::move(profiles[0].max_shapes);
  options.more_profiles.assign(std::make_move_iterator(profiles.begin() + 1), std::make_move_iterator(profiles.end()));
  QDQRT_RETURN_IF_ERROR(check_shape_range(options));
  for (size_t index = 0; index < options.more_profiles.size(); ++index) {
    ExecOptions one;  // each further profile checked as the first is (without --shapes)
    one.min_shapes = options.more_profiles[index].min_shapes;
    one.opt_shapes = options.more_profiles[index].opt_shapes;
    one.max_shapes = options.more_profiles[index].max_shapes;
    QDQRT_RETURN_IF_ERROR(check_shape_range(one).with_context(fmt::format("profile {}", index + 1)));
  }
  bool shape_range = !options.min_shapes.empty() || !options.opt_shapes.empty() || !options.max_shapes.empty();
  if (options.range_beyond_batch() && !options.onnx_path.empty()) {
    if (!options.calib_path.empty() || !line.layer_precisions_texts.empty() || !line.mark_debug_texts.empty()) {
      return invalid_argument("--calib, --layerPrecisions and --markDebug are not supported with a shape range beyond "
                              "the batch yet; give one shape (--shapes)");
    }
  }
  if (shape_range && !options.load_engine_path.empty()) {
    options.notes.push_back("--minShapes/--optShapes/--maxShapes ignored with --loadEngine: the engine's batch range "
                            "was set when it was built");
    options.min_shapes.clear();
    options.max_shapes.clear();
    options.more_profiles.clear();
  }
  for (const std::string& text : line.mark_debug_texts) {
    for (const std::string& name : split_list(text)) {
      if (name.empty()) return invalid_argument("--markDebug: an empty tensor name in '{}'", text);
      if (std::find(options.debug_tensors.begin(), options.debug_tensors.end(), name) == options.debug_tensors.end()) {
        options.debug_tensors.push_back(name);
      }
    }
  }
  if (!options.debug_tensors.empty() && !options.load_engine_path.empty()) {
    return invalid_argument("--markDebug marks tensors at build: give it with --onnx (a saved engine keeps the "
                            "tensors marked when it was built)");
  }
  for (const std::string& text : line.save_debug_texts) {
    for (const std::string& spec : split_list(text)) {
      const size_t colon = spec.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
        return invalid_argument("--saveDebugTensors: '{}' is not NAME:FILE", spec);
      }
      std::string name = spec.substr(0, colon), file = spec.substr(colon + 1);
      if (!options.onnx_path.empty() &&
          std::find(options.debug_tensors.begin(), options.debug_tensors.end(), name) == options.debug_tensors.end()) {
        return invalid_argument("--saveDebugTensors: '{}' is not marked (give it to --markDebug too)", name);
      }
      QDQRT_RETURN_IF_ERROR(check_output_path("--saveDebugTensors", file));
      options.save_debug_tensors.emplace_back(std::move(name), std::move(file));
    }
  }
  if ((options.plan_version_only || options.time_deserialize) && options.load_engine_path.empty()) {
    return invalid_argument("{} reads an engine file: give it with --loadEngine",
                            options.plan_version_only ? "--getPlanVersionOnly" : "--timeDeserialize");
  }
  if (!options.calib_path.empty() && !options.load_engine_path.empty()) {
    return invalid_argument("--calib quantizes a model at build: give it with --onnx, not --loadEngine");
  }
  if (!options.calib_path.empty() && options.fp32) {
    return invalid_argument("--calib and --fp32 exclude each other: --calib builds INT8 layers");
  }
  for (const std::string& text : line.layer_precisions_texts) {
    auto specs = parse_layer_precisions(text);
    if (!specs.ok()) return specs.status().with_context("--layerPrecisions");
    for (const LayerPrecision& spec : *specs) {
      if (spec.precision == "fp32" && spec.node == "*") {
        options.fp32 = true;
      } else if (spec.precision == "fp32") {
        options.float_layers.push_back(spec.node);
      } else if (spec.precision != "int8") {
        options.notes.push_back(fmt::format("not applicable on CPU: --layerPrecisions={}:{} (no {} kernels: the layer "
                                            "runs as the model's Q/DQ say)",
                                            spec.node, spec.precision, spec.precision));
      }
    }
  }
  if (options.fp32 && (options.int8 || options.best)) {
    return invalid_argument("--layerPrecisions=*:fp32 and --int8/--best exclude each other");
  }
  if (!options.float_layers.empty() && !options.load_engine_path.empty()) {
    return invalid_argument("--layerPrecisions sets layer precisions at build: give it with --onnx, not --loadEngine");
  }
  options.detailed_layer_info = line.profiling_verbosity != "layer_names_only" && line.profiling_verbosity != "none";
  auto input_files = collect_load_inputs(line.load_inputs_texts);
  if (!input_files.ok()) return input_files.status().with_context("--loadInputs");
  options.input_files = std::move(input_files).value();
  for (const InputFileSpec& spec : options.input_files) {
    // "does not exist", "is a FIFO", ...: the checked reader's words, before anything is built.
    auto file = open_regular_file(spec.path, fmt::format("--loadInputs: input '{}': file", spec.name));
    if (!file.ok()) return invalid_argument("{}", file.status().message());
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
  if (!options.save_engine_path.empty() && !options.onnx_path.empty()) {
    std::error_code error;
    // The engine would replace the model it was built from.
    if (std::filesystem::equivalent(options.save_engine_path, options.onnx_path, error)) {
      return invalid_argument("--saveEngine: '{}' is the model given to --onnx", options.save_engine_path);
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
