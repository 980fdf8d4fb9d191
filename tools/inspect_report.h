// What `qdqrt inspect` computes, without the printing: optimize a loaded graph and list its layers
// (optimizer/layer_info.h), and the report as JSON. Used by tools/inspect_command.cpp and by
// Python's qdqrt.inspect (python/).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"
#include "optimizer/layer_info.h"

namespace qdqrt::tools {

struct InspectRequest {
  std::vector<std::string> passes;  // run only these (empty = all)
  std::vector<std::string> disabled_passes;
  std::map<std::string, Shape> shapes;  // values for symbolic input dims (shapes and MACs)
  bool float_only = false;              // the float pipeline (OptimizeOptions::float_only)
  // How errors name the two pass lists (the CLI's flags, Python's keyword arguments).
  std::string passes_label = "passes";
  std::string disabled_passes_label = "disabled_passes";
  // Called once the request is checked, before the first pass (e.g. to dump the input graph).
  std::function<Status(const Graph& graph)> before_optimize;
  // Called after each pass that ran.
  std::function<Status(const std::string& pass_name, const Graph& graph)> after_pass;
};

struct InspectResult {
  std::vector<std::string> passes_run;
  optimizer::LayerReport layers;
  std::vector<std::string> bindings;  // the graph's inputs and outputs
};

// Optimizes `graph` in place and computes its layer report. `usage` (when given) is set when the
// error is the request's fault: shapes that do not fit the model, an unknown pass name.
Result<InspectResult> inspect_graph(Graph& graph, const InspectRequest& request, bool* usage = nullptr);

// The layer table: Kind, In, Out, Input shapes, Output shape, MACs, then the name last, cut to
// `name_width` characters ("..." at the end) unless name_width is 0.
inline constexpr size_t kInspectNameWidth = 60;
std::string format_inspect_table(const optimizer::LayerReport& report, size_t name_width = kInspectNameWidth);

// The layer report in trtexec's --exportLayerInfo schema (tools/layer_info_schema.h), the one
// `qdqrt exec` writes: {"Layers": [{"Name", "LayerType", "Inputs", "Outputs", "ParameterType",
// "Precision", "OpType", "Node", "MACs"}], "Bindings": [names], "Summary": {...}}.
nlohmann::json layer_report_to_json(const optimizer::LayerReport& report, const std::vector<std::string>& bindings = {});

}  // namespace qdqrt::tools
