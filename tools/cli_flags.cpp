#include "tools/cli_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>

#include "engine/context_threads.h"

namespace qdqrt::tools {

CLI::Validator quiet(CLI::Validator validator) { return validator.description(""); }

CLI::Validator shapes_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto parsed = parse_shapes(value);
        return parsed.ok() ? "" : parsed.status().message();
      },
      "NAME:DxDx..[,...]");
}

CLI::Validator load_inputs_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto specs = parse_load_inputs(value);
        if (!specs.ok()) return specs.status().message();
        for (const InputFileSpec& spec : *specs) {
          std::string problem = CLI::ExistingFile(spec.path);
          if (!problem.empty()) return fmt::format("input '{}': {}", spec.name, problem);
        }
        return "";
      },
      "NAME:FILE.npy[,...]");
}

CLI::Validator threads_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        int64_t threads = 0;
        auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), threads);
        if (error != std::errc() || end != value.data() + value.size()) return fmt::format("'{}' is not an integer", value);
        Status status = engine::check_context_threads(threads);
        return status.is_ok() ? "" : status.message();
      },
      "N");
}

Result<std::map<std::string, Shape>> collect_shapes(const std::vector<std::string>& texts) {
  std::map<std::string, Shape> shapes;
  for (const std::string& text : texts) {
    QDQRT_ASSIGN_OR_RETURN(auto parsed, parse_shapes(text));
    for (const auto& [name, shape] : parsed) {
      if (!shapes.emplace(name, shape).second) return invalid_argument("input '{}' is given twice", name);
    }
  }
  return shapes;
}

Result<std::vector<InputFileSpec>> collect_load_inputs(const std::vector<std::string>& texts) {
  std::vector<InputFileSpec> specs;
  for (const std::string& text : texts) {
    QDQRT_ASSIGN_OR_RETURN(auto parsed, parse_load_inputs(text));
    specs.insert(specs.end(), parsed.begin(), parsed.end());
  }
  return specs;
}

Status write_text_file(const std::string& flag, const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc | std::ios::binary);
  if (!file) return io_error("{}: cannot open '{}' for writing", flag, path);
  file << text;
  file.close();
  if (!file) return io_error("{}: cannot write '{}'", flag, path);
  return Status::ok();
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string suggest_flag(const std::string& unknown, const std::vector<std::string>& known) {
  std::string name = unknown.substr(0, unknown.find('='));
  size_t allowed = std::max<size_t>(2, name.size() / 3);
  std::string best;
  size_t best_distance = allowed + 1;
  for (const std::string& candidate : known) {
    size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::vector<std::string> long_flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

std::string describe_unknown_arguments(const std::vector<std::string>& extras, const CLI::App& app) {
  std::vector<std::string> problems;
  std::vector<std::string> known = long_flag_names(app);
  for (const std::string& extra : extras) {
    if (extra.rfind("-", 0) == 0) {
      std::string name = extra.substr(0, extra.find('='));
      std::string suggestion = suggest_flag(name, known);
      problems.push_back(suggestion.empty() ? fmt::format("unknown flag {}", name)
                                            : fmt::format("unknown flag {} (did you mean {}?)", name, suggestion));
    } else {
      problems.push_back(fmt::format("unexpected argument '{}'", extra));
    }
  }
  return fmt::format("{}", fmt::join(problems, "; "));
}

const std::vector<ForeignFlag>& trtexec_flags_without_cpu_meaning() {
  static const std::vector<ForeignFlag> kFlags = {
      {"--fp16", false, "no FP16 kernels: layers run INT8 where the model has Q/DQ, FP32 elsewhere"},
      {"--fp8", false, "no FP8 kernels: layers run INT8 where the model has Q/DQ, FP32 elsewhere"},
      {"--int4", false, "no INT4 kernels: layers run INT8 where the model has Q/DQ, FP32 elsewhere"},
      {"--noTF32", false, "FP32 layers compute in full FP32 already"},
      {"--stronglyTyped", false, "tensor types always follow the model (INT8 where its Q/DQ say)"},
      {"--noDataTransfers", false, "inputs and outputs stay in host memory: there are no copies to leave out"},
      {"--useSpinWait", false, "a run is a host call that returns when done: nothing to wait on"},
      {"--useCudaGraph", false, "no CUDA graphs: a run is already one call"},
      {"--exposeDMA", false, "no device copies"},
      {"--useManagedMemory", false, "no device memory"},
      {"--allowGPUFallback", false, "no DLA"},
      {"--explicitBatch", false, "shapes are always explicit"},
      {"--noBuilderCache", false, "kernels are chosen by ISA, not timed: there is no timing cache"},
      {"--refit", false, "engines are not refittable"},
      {"--versionCompatible", false, "engine files are checked by their format version"},
      {"--excludeLeanRuntime", false, "no lean runtime"},
      {"--safe", false, "no safety runtime"},
      {"--timeRefit", false, "engines are not refittable"},
      {"--stripWeights", false, "engine files always hold their weights"},
      {"--allowWeightStreaming", false, "weights stay in host memory"},
      {"--dumpRawBindingsToFile", false, "use --exportOutput (JSON) or qdqrt run --saveOutputs (.npy)"},
      {"--workspace", true, "no workspace pool: per-layer scratch is sized at build"},
      {"--memPoolSize", true, "no memory pools: per-layer scratch is sized at build"},
      {"--timingCacheFile", true, "kernels are chosen by ISA, not timed: there is no timing cache"},
      {"--device", true, "runs on this CPU"},
      {"--useDLACore", true, "no DLA"},
      {"--sparsity", true, "no structured-sparsity kernels"},
      {"--builderOptimizationLevel", true, "one build strategy: kernels are chosen by ISA"},
      {"--tacticSources", true, "no cuBLAS/cuDNN tactics"},
      {"--maxAuxStreams", true, "a context runs its layers in order on its own threads"},
      {"--minTiming", true, "kernels are not timed at build"},
      {"--avgTiming", true, "kernels are not timed at build"},
      {"--persistentCacheRatio", true, "no L2 persistence control"},
      {"--inputIOFormats", true, "inputs are the model's types, row-major"},
      {"--outputIOFormats", true, "outputs are the model's types, row-major"},
      {"--plugins", true, "no TensorRT plugins"},
      {"--staticPlugins", true, "no TensorRT plugins"},
      {"--dynamicPlugins", true, "no TensorRT plugins"},
      {"--setPluginsToSerialize", true, "no TensorRT plugins"},
      {"--hardwareCompatibilityLevel", true, "an engine runs on CPUs with the features it was built for"},
      {"--tempdir", true, "no temporary files"},
      {"--tempfileControls", true, "no temporary files"},
      {"--weightStreamingBudget", true, "weights stay in host memory"},
      {"--layerOutputTypes", true, "output types follow the model's Q/DQ"},
      {"--precisionConstraints", true, "--layerPrecisions is always obeyed"},
      {"--minShapesCalib", true, "exec does not calibrate: --calib reads the scales of a cache qdqrt calibrate wrote"},
      {"--optShapesCalib", true, "exec does not calibrate: --calib reads the scales of a cache qdqrt calibrate wrote"},
      {"--maxShapesCalib", true, "exec does not calibrate: --calib reads the scales of a cache qdqrt calibrate wrote"},
  };
  return kFlags;
}

void add_not_applicable_flags(CLI::App& app, std::vector<std::string>& notes) {
  const std::string group = "trtexec flags without a CPU meaning (accepted, reported, ignored)";
  for (const ForeignFlag& flag : trtexec_flags_without_cpu_meaning()) {
    std::string line = fmt::format("not applicable on CPU: {} ({})", flag.name, flag.reason);
    CLI::Option* option = nullptr;
    if (flag.takes_value) {
      option = app.add_option_function<std::string>(
          flag.name, [&notes, line](const std::string&) { notes.push_back(line); }, flag.reason);
      option->type_name("VALUE");
    } else {
      option = app.add_flag_function(
          flag.name, [&notes, line](int64_t) { notes.push_back(line); }, flag.reason);
    }
    option->group(group)->trigger_on_parse();  // notes in command-line order
  }
}

}  // namespace qdqrt::tools
