#include "tools/inspect_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "optimizer/pipeline.h"
#include "tools/layer_info_schema.h"

namespace qdqrt::tools {

namespace {

// trtexec's tensor object (tools/layer_info_schema.h) plus qdqrt's keys: a symbolic dim is -1
// in "Dimensions" and keeps its name in "SymbolicDimensions".
nlohmann::json tensor_to_json(const optimizer::LayerTensor& tensor) {
  std::vector<int64_t> dims;
  nlohmann::json named = nlohmann::json::array();
  bool symbolic = false;
  if (tensor.shape) {
    for (const Dim& dim : *tensor.shape) {
      dims.push_back(dim.is_static() ? dim.value : -1);
      if (dim.is_static()) {
        named.push_back(dim.value);
      } else {
        named.push_back(dim.symbol.empty() ? "?" : dim.symbol);
        symbolic = true;
      }
    }
  }
  nlohmann::json json = nlohmann::json::parse(trtexec_tensor_json(tensor.name, dims, tensor.dtype, false).dump());
  if (!tensor.shape) json["Dimensions"] = nullptr;  // rank unknown
  if (symbolic) json["SymbolicDimensions"] = named;
  json["Datatype"] = dtype_name(tensor.dtype);
  if (tensor.zero_point) json["ZeroPoint"] = *tensor.zero_point;
  return json;
}

std::string shape_text(const optimizer::LayerTensor& tensor) {
  return tensor.shape ? dims_to_string(*tensor.shape) : std::string("[?]");
}

std::string precision_text(const optimizer::LayerTensor& tensor) {
  std::string text = tensor.dtype == DataType::kFloat ? "fp32" : dtype_name(tensor.dtype);
  if (tensor.zero_point) text += fmt::format("(zp={})", *tensor.zero_point);
  return text;
}

std::string join_tensors(const std::vector<optimizer::LayerTensor>& tensors,
                         std::string (*format)(const optimizer::LayerTensor&)) {
  std::vector<std::string> parts;
  for (const optimizer::LayerTensor& tensor : tensors) parts.push_back(format(tensor));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
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
      if (!dim.is_static() && bound != symbols->end()) dim = Dim{.value = bound->second, .symbol = {}, .expr = {}};
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
  result.bindings = graph.inputs;
  result.bindings.insert(result.bindings.end(), graph.outputs.begin(), graph.outputs.end());
  return result;
}

std::string format_inspect_table(const optimizer::LayerReport& report, size_t name_width) {
  struct Row {
    std::string kind, in, out, in_shapes, out_shape, macs, name;
  };
  std::vector<Row> rows = {{"Kind", "In", "Out", "Input shapes", "Output shape", "MACs", "Name"}};
  for (const optimizer::LayerInfo& layer : report.layers) {
    std::string name = layer.name;
    // Fused names grow long ("conv + bn + add + relu + q"): cut at the end, where the tail nodes are.
    if (name_width > 3 && name.size() > name_width) name = name.substr(0, name_width - 3) + "...";
    rows.push_back({layer.kind, join_tensors(layer.inputs, precision_text), join_tensors(layer.outputs, precision_text),
                    join_tensors(layer.inputs, shape_text), join_tensors(layer.outputs, shape_text),
                    layer.macs ? fmt::format("{}", *layer.macs) : "-", name});
  }
  size_t widths[6] = {0, 0, 0, 0, 0, 0};
  for (const Row& row : rows) {
    const std::string* cells[6] = {&row.kind, &row.in, &row.out, &row.in_shapes, &row.out_shape, &row.macs};
    for (int c = 0; c < 6; ++c) widths[c] = std::max(widths[c], cells[c]->size());
  }
  std::string text;
  for (const Row& row : rows) {
    // The name last, so the other columns line up whatever its length.
    text += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {:>{}}  {}\n", row.kind, widths[0], row.in, widths[1],
                        row.out, widths[2], row.in_shapes, widths[3], row.out_shape, widths[4], row.macs, widths[5],
                        row.name);
  }
  return text;
}

nlohmann::json layer_report_to_json(const optimizer::LayerReport& report, const std::vector<std::string>& bindings) {
  nlohmann::json layers = nlohmann::json::array();
  for (const optimizer::LayerInfo& layer : report.layers) {
    nlohmann::json json;
    json["Name"] = layer.name;
    json["LayerType"] = layer.kind;
    json["Inputs"] = nlohmann::json::array();
    for (const auto& tensor : layer.inputs) json["Inputs"].push_back(tensor_to_json(tensor));
    json["Outputs"] = nlohmann::json::array();
    for (const auto& tensor : layer.outputs) json["Outputs"].push_back(tensor_to_json(tensor));
    json["ParameterType"] = trtexec_parameter_type(layer.op_type);
    json["Precision"] = layer.precision;
    json["OpType"] = layer.op_type;
    json["Node"] = layer.node_name;
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
  return {{"Layers", layers}, {"Bindings", bindings}, {"Summary", json_summary}};
}

}  // namespace qdqrt::tools
