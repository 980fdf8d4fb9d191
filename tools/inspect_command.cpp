#include "tools/inspect_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"
#include "tools/inspect_report.h"
#include "tools/run_command.h"

namespace qdqrt::tools {

namespace {

std::vector<std::string> split_names(const std::vector<std::string>& lists) {
  std::vector<std::string> names;
  for (const std::string& list : lists) {
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string name = list.substr(start, comma - start);
      if (!name.empty()) names.push_back(name);
      start = comma + 1;
    }
  }
  return names;
}

// Which nodes the engine would run on the reference executor: only the engine builder knows, so
// the model is built (at --shapes, the same precision and passes) and its reference layers listed
// (one warning line each, then their count); for --exportLayerInfo, as JSON (null: not known).
nlohmann::json write_reference_layers(const InspectOptions& options, std::ostream& out) {
  engine::BuildOptions build;
  build.precision = options.float_only ? engine::Precision::kFp32 : engine::Precision::kInt8;
  build.input_shapes = options.shapes;
  build.only_passes = options.passes;
  build.disabled_passes = options.disabled_passes;
  auto built = engine::Engine::build_from_file(options.onnx_path, build);
  if (!built.ok()) {
    out << fmt::format("Reference layers: not known (the engine does not build: {})\n", built.status().message());
    return nullptr;
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const engine::PlanLayer& layer : (*built)->plan().layers) {
    if (layer.kind != "reference") continue;
    const std::string reason = engine::reference_layer_reason(layer);
    out << fmt::format("[W] reference layer: {} '{}' runs on the reference executor (slow, one thread): {}\n",
                       layer.op_type, layer.name, reason);
    layers.push_back({{"Node", layer.name}, {"OpType", layer.op_type}, {"Reason", reason}});
  }
  out << fmt::format("Reference layers: {}\n", layers.size());
  return layers;
}

}  // namespace

Status inspect_model(const InspectOptions& options, std::ostream& out, bool& usage) {
  usage = false;
  auto loaded = load_onnx_file(options.onnx_path);
  if (!loaded.ok()) return loaded.status().with_context(fmt::format("--onnx: '{}'", options.onnx_path));
  Graph graph = std::move(loaded).value();

  InspectRequest request;
  request.passes = options.passes;
  request.disabled_passes = options.disabled_passes;
  request.shapes = options.shapes;
  request.float_only = options.float_only;
  request.passes_label = "--passes";
  request.disabled_passes_label = "--disablePasses";
  if (!options.dump_graph_dir.empty()) {
    std::string dir = options.dump_graph_dir;
    request.before_optimize = [dir](const Graph& input) {
      std::error_code error;
      std::filesystem::create_directories(dir, error);
      if (error) return io_error("--dumpGraph: cannot create '{}': {}", dir, error.message());
      return write_onnx_file(input, dir + "/00_input.onnx");
    };
    auto count = std::make_shared<int>(0);
    request.after_pass = [count, dir](const std::string& pass, const Graph& after) {
      ++*count;
      return write_onnx_file(after, fmt::format("{}/{:02}_{}.onnx", dir, *count, pass))
          .with_context("--dumpGraph after pass " + pass);
    };
  }
  auto inspected = inspect_graph(graph, request, &usage);
  if (!inspected.ok()) return inspected.status();
  const InspectResult& result = *inspected;
  out << fmt::format("Passes run: {}\n", result.passes_run.empty() ? std::string("none")
                                                                    : fmt::format("{}", fmt::join(result.passes_run, ", ")));
  out << "=== Layer information ===\n"
      << format_inspect_table(result.layers, options.full_names ? 0 : kInspectNameWidth)
      << optimizer::format_layer_summary(result.layers);
  nlohmann::json reference_layers = write_reference_layers(options, out);

  if (!options.export_layer_info_path.empty()) {
    std::ofstream file(options.export_layer_info_path, std::ios::trunc);
    if (!file) return io_error("--exportLayerInfo: cannot open '{}' for writing", options.export_layer_info_path);
    nlohmann::json json = layer_report_to_json(result.layers, result.bindings);
    json["Summary"]["ReferenceLayers"] = std::move(reference_layers);
    file << json.dump(2) << "\n";
    if (!file) return io_error("--exportLayerInfo: cannot write '{}'", options.export_layer_info_path);
  }
  return Status::ok();
}

Command add_inspect_command(CLI::App& app) {
  CLI::App* inspect = app.add_subcommand("inspect", "Optimize a model and print its layers (like trtexec --dumpLayerInfo)");
  inspect->footer(
      "One row per layer after optimization: kind, input/output precision (zero-point), shapes, MACs\n"
      "and the name last (fused source nodes joined by ' + ', cut unless --fullNames); then a summary: layers per precision, share of\n"
      "Conv/MatMul MACs in INT8, Q/DQ nodes left (and inside INT8 regions), why layers stayed float;\n"
      "then the engine is built and each layer it would run on the reference executor is named with the reason.\n"
      "Example: qdqrt inspect --onnx=model.onnx --exportLayerInfo=layers.json --dumpGraph=passes/\n");
  auto options = std::make_shared<InspectOptions>();
  auto passes = std::make_shared<std::vector<std::string>>();
  auto disabled = std::make_shared<std::vector<std::string>>();
  auto shapes = std::make_shared<std::vector<std::string>>();
  CLI::Validator shapes_syntax = shapes_validator();
  inspect->add_option("--onnx", options->onnx_path, "The ONNX model to inspect")
      ->required()
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  inspect->add_option("--exportLayerInfo", options->export_layer_info_path, "Write the layers and summary as JSON")
      ->type_name("FILE");
  inspect->add_option("--passes", *passes, "Run only these passes (comma-separated; pipeline order is kept)")
      ->type_name("PASS[,...]");
  inspect->add_option("--disablePasses", *disabled, "Skip these passes (comma-separated)")->type_name("PASS[,...]");
  inspect->add_option("--dumpGraph", options->dump_graph_dir,
                      "Write DIR/00_input.onnx and DIR/<NN>_<pass>.onnx after each pass (DIR is created)")
      ->check(quiet(CLI::ExistingDirectory | CLI::NonexistentPath))
      ->type_name("DIR");
  inspect->add_flag("--fp32", options->float_only,
                    "Run the float pipeline instead: fake quantization removed, BatchNorm folded, only the float fusions");
  inspect->add_flag("--fullNames", options->full_names,
                    fmt::format("Print layer names whole (default: cut to {} characters)", kInspectNameWidth));
  inspect->add_option("--shapes", *shapes, "Values for symbolic input dims (for shapes and MACs), e.g. x:8x3x224x224")
      ->check(quiet(shapes_syntax))
      ->type_name("NAME:DIMS[,...]");

  auto execute = [options, passes, disabled, shapes]() -> int {
    options->passes = split_names(*passes);
    options->disabled_passes = split_names(*disabled);
    auto parsed_shapes = collect_shapes(*shapes);
    if (!parsed_shapes.ok()) {
      std::cerr << "qdqrt inspect: error: --shapes: " << parsed_shapes.status().message() << "\n";
      return kExitUsage;
    }
    options->shapes = std::move(parsed_shapes).value();
    bool usage = false;
    Status status = inspect_model(*options, std::cout, usage);
    if (status.is_ok()) return kExitSuccess;
    std::cout.flush();
    std::cerr << "qdqrt inspect: error: " << status.to_string() << "\n";
    return usage ? kExitUsage : kExitFailure;
  };
  return Command{inspect, execute};
}

}  // namespace qdqrt::tools
