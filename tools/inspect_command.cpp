#include "tools/inspect_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"
#include "tools/run_command.h"

namespace qdqrt::tools {

namespace {

std::string datatype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return "FP32";
    case DataType::kInt8: return "Int8";
    case DataType::kUint8: return "UInt8";
    case DataType::kInt32: return "Int32";
    case DataType::kInt64: return "Int64";
    case DataType::kBool: return "Bool";
    case DataType::kFloat16: return "FP16";
    default: return "Unknown";
  }
}

nlohmann::json tensor_to_json(const optimizer::LayerTensor& tensor) {
  nlohmann::json json;
  json["Name"] = tensor.name;
  nlohmann::json dims = nlohmann::json::array();
  if (tensor.shape) {
    for (const Dim& dim : *tensor.shape) {
      if (dim.is_static()) {
        dims.push_back(dim.value);
      } else {
        dims.push_back(dim.symbol.empty() ? "?" : dim.symbol);
      }
    }
    json["Dimensions"] = dims;
  } else {
    json["Dimensions"] = nullptr;
  }
  json["Datatype"] = datatype_name(tensor.dtype);
  if (tensor.zero_point) json["ZeroPoint"] = *tensor.zero_point;
  return json;
}

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

}  // namespace

nlohmann::json layer_report_to_json(const optimizer::LayerReport& report) {
  nlohmann::json layers = nlohmann::json::array();
  for (const optimizer::LayerInfo& layer : report.layers) {
    nlohmann::json json;
    json["Name"] = layer.name;
    json["Node"] = layer.node_name;
    json["LayerType"] = layer.kind;
    json["Precision"] = layer.precision;
    json["Inputs"] = nlohmann::json::array();
    for (const auto& tensor : layer.inputs) json["Inputs"].push_back(tensor_to_json(tensor));
    json["Outputs"] = nlohmann::json::array();
    for (const auto& tensor : layer.outputs) json["Outputs"].push_back(tensor_to_json(tensor));
    json["MACs"] = layer.macs ? nlohmann::json(*layer.macs) : nlohmann::json(nullptr);
    layers.push_back(std::move(json));
  }
  const optimizer::LayerSummary& summary = report.summary;
  nlohmann::json json_summary;
  json_summary["LayerCount"] = report.layers.size();
  json_summary["LayersPerPrecision"] = summary.layers_per_precision;
  json_summary["Int8MACs"] = summary.int8_macs;
  json_summary["FloatMACs"] = summary.float_macs;
  json_summary["Int8MACShare"] = summary.int8_mac_share();
  json_summary["QuantizeLinearLeft"] = summary.quantize_nodes;
  json_summary["DequantizeLinearLeft"] = summary.dequantize_nodes;
  json_summary["QDQInsideInt8Regions"] = summary.qdq_inside_int8;
  json_summary["UnboundSymbols"] = summary.unbound_symbols;
  auto reasons_to_json = [](const std::vector<optimizer::FloatReason>& reasons) {
    nlohmann::json json = nlohmann::json::array();
    for (const optimizer::FloatReason& reason : reasons) {
      json.push_back({{"Node", reason.node}, {"OpType", reason.op_type}, {"Reason", reason.reason},
                      {"Text", optimizer::format_float_reason(reason)}});
    }
    return json;
  };
  json_summary["FloatReasons"] = reasons_to_json(summary.float_reasons);
  json_summary["FloatLayers"] = summary.float_layers;
  json_summary["ExplainedFloatLayers"] = summary.explained_float_layers;
  json_summary["ExplainedQDQNodes"] = summary.explained_qdq_nodes;
  json_summary["QDQReasons"] = reasons_to_json(summary.qdq_reasons);
  json_summary["Unexplained"] = summary.unexplained;
  return {{"Layers", layers}, {"Summary", json_summary}};
}

Status inspect_model(const InspectOptions& options, std::ostream& out, bool& usage) {
  usage = false;
  auto loaded = load_onnx_file(options.onnx_path);
  if (!loaded.ok()) return loaded.status().with_context(fmt::format("--onnx: '{}'", options.onnx_path));
  Graph graph = std::move(loaded).value();

  auto symbols = optimizer::bind_input_symbols(graph, options.shapes);
  if (!symbols.ok()) {
    usage = true;
    return symbols.status();
  }
  // Unknown pass names are the command line's fault: check before any file is written.
  std::vector<std::string> known = optimizer::pipeline_pass_names(options.float_only);
  for (const auto* list : {&options.passes, &options.disabled_passes}) {
    for (const std::string& name : *list) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        usage = true;
        return invalid_argument("{}: unknown pass '{}' (passes: {})",
                                list == &options.passes ? "--passes" : "--disablePasses", name,
                                known.empty() ? std::string("none yet") : fmt::format("{}", fmt::join(known, ", ")));
      }
    }
  }

  optimizer::OptimizeOptions optimize_options;
  optimize_options.only_passes = options.passes;
  optimize_options.disabled_passes = options.disabled_passes;
  optimize_options.float_only = options.float_only;
  if (!options.dump_graph_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.dump_graph_dir, error);
    if (error) return io_error("--dumpGraph: cannot create '{}': {}", options.dump_graph_dir, error.message());
    QDQRT_RETURN_IF_ERROR(write_onnx_file(graph, options.dump_graph_dir + "/00_input.onnx"));
    auto count = std::make_shared<int>(0);
    std::string dir = options.dump_graph_dir;
    optimize_options.after_pass = [count, dir](const std::string& pass, const Graph& after) {
      ++*count;
      return write_onnx_file(after, fmt::format("{}/{:02}_{}.onnx", dir, *count, pass))
          .with_context("--dumpGraph after pass " + pass);
    };
  }
  auto report = optimizer::optimize(graph, optimize_options);
  if (!report.ok()) return report.status();

  optimizer::LayerReport layers = optimizer::compute_layer_info(graph, report->float_reasons, *symbols);
  out << fmt::format("Passes run: {}\n", report->passes_run.empty() ? std::string("none")
                                                                     : fmt::format("{}", fmt::join(report->passes_run, ", ")));
  out << "=== Layer information ===\n" << optimizer::format_layer_table(layers) << optimizer::format_layer_summary(layers);

  if (!options.export_layer_info_path.empty()) {
    std::ofstream file(options.export_layer_info_path, std::ios::trunc);
    if (!file) return io_error("--exportLayerInfo: cannot open '{}' for writing", options.export_layer_info_path);
    file << layer_report_to_json(layers).dump(2) << "\n";
    if (!file) return io_error("--exportLayerInfo: cannot write '{}'", options.export_layer_info_path);
  }
  return Status::ok();
}

Command add_inspect_command(CLI::App& app) {
  CLI::App* inspect = app.add_subcommand("inspect", "Optimize a model and print its layers (like trtexec --dumpLayerInfo)");
  inspect->footer(
      "One row per layer after optimization: fused source nodes joined by ' + ', kind, input/output\n"
      "precision (zero-point), shapes and MACs; then a summary: layers per precision, share of\n"
      "Conv/MatMul MACs in INT8, Q/DQ nodes left (and inside INT8 regions), why layers stayed float.\n"
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
                    "Run the float pipeline instead: fake quantization removed, BatchNorm folded, nothing fused");
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
