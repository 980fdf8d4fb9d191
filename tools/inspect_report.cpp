#include "tools/inspect_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "optimizer/pipeline.h"

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

}  // namespace

Result<InspectResult> inspect_graph(Graph& graph, const InspectRequest& request, bool* usage) {
  if (usage) *usage = false;
  auto symbols = optimizer::bind_input_symbols(graph, request.shapes);
  if (!symbols.ok()) {
    if (usage) *usage = true;
    return symbols.status();
  }
  // Unknown pass names are the request's fault: check before any callback writes a file.
  std::vector<std::string> known = optimizer::pipeline_pass_names(request.float_only);
  for (const auto* list : {&request.passes, &request.disabled_passes}) {
    for (const std::string& name : *list) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        if (usage) *usage = true;
        return invalid_argument("{}: unknown pass '{}' (passes: {})",
                                list == &request.passes ? request.passes_label : request.disabled_passes_label, name,
                                known.empty() ? std::string("none yet") : fmt::format("{}", fmt::join(known, ", ")));
      }
    }
  }
  // With the symbols bound, the inputs' shapes are static as in an engine build, so shape
  // computations evaluate (evaluate_shape_computations) and every layer gets its shapes and MACs.
  for (const std::string& input : graph.inputs) {
    auto it = graph.values.find(input);
    if (it == graph.values.end() || !it->second.shape) continue;
    for (Dim& dim : *it->second.shape) {
      auto bound = symbols->find(dim.symbol);
      if (!dim.is_static() && bound != symbols->end()) dim = Dim{.value = bound->second, .symbol = {}};
    }
  }
  if (request.before_optimize) QDQRT_RETURN_IF_ERROR(request.before_optimize(graph));

  optimizer::OptimizeOptions optimize_options;
  optimize_options.only_passes = request.passes;
  optimize_options.disabled_passes = request.disabled_passes;
  optimize_options.float_only = request.float_only;
  optimize_options.after_pass = request.after_pass;
  auto report = optimizer::optimize(graph, optimize_options);
  if (!report.ok()) return report.status();
  InspectResult result;
  result.passes_run = report->passes_run;
  result.layers = optimizer::compute_layer_info(graph, report->float_reasons, *symbols);
  return result;
}

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
      json.push_back({{"Node", reason.node},
                      {"OpType", reason.op_type},
                      {"Reason", reason.reason},
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

}  // namespace qdqrt::tools
