// What `qdqrt inspect` shows: the optimized graph as a list of layers (one per node after
// optimization) with kinds, precisions, zero-points, shapes and MACs, and a summary of how much
// of the model runs in INT8 and why the rest stayed float.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/pass.h"
#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::optimizer {

struct LayerTensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::optional<std::vector<Dim>> shape;  // nullopt: unknown
  // Quantized tensors: the zero-point when it is a known scalar constant.
  std::optional<int64_t> zero_point;
};

struct LayerInfo {
  std::string name;                       // fused source nodes joined by " + ", else the node name
  std::string node_name;                  // the node in the optimized graph
  std::string op_type;
  std::string domain;
  std::string kind;                       // "Conv", "DepthwiseConv", "GroupConv", "MatMul", "Add", ...
  std::string precision;                  // "INT8", "FP32", "Q/DQ", or a dtype name ("int64")
  std::vector<LayerTensor> inputs;        // activations (constant inputs left out)
  std::vector<LayerTensor> outputs;
  std::optional<int64_t> macs;            // Conv/QConv/MatMul/QMatMul/Gemm only
};

struct LayerSummary {
  std::map<std::string, int> layers_per_precision;
  int64_t int8_macs = 0;                  // QConv/QMatMul
  int64_t float_macs = 0;                 // Conv/MatMul/Gemm left in float
  int quantize_nodes = 0;
  int dequantize_nodes = 0;
  // Q/DQ nodes inside an INT8 region (a DQ feeding a Q or a qdqrt layer, a Q reading a DQ or a
  // qdqrt layer); region borders do not count.
  std::vector<std::string> qdq_inside_int8;
  // Why each float layer stays float: the reasons the fusions recorded, then for the others a
  // reason read off the graph (not quantized in the model, only its output quantized, ...).
  std::vector<FloatReason> float_reasons;
  int float_layers = 0;            // FP32 layers (Q/DQ nodes excluded)
  int explained_float_layers = 0;  // of those, the ones with a reason
  // Why each QuantizeLinear/DequantizeLinear is left: quantizes a graph input or a float layer's
  // output, dequantizes for a float layer or a graph output, or a fan-out the fusions noted.
  std::vector<FloatReason> qdq_reasons;
  int explained_qdq_nodes = 0;
  // Float layers and Q/DQ nodes with no reason ("Op 'name'"): a float island between a DQ and a Q
  // that no fusion took and none explained, or a Q/DQ inside an INT8 region.
  std::vector<std::string> unexplained;
  // Symbols taken as 1 for MACs because no --shapes value bound them.
  std::vector<std::string> unbound_symbols;

  // Share of Conv/MatMul MACs that run in INT8, in [0, 1]; 1 when the model has none.
  double int8_mac_share() const;
};

struct LayerReport {
  std::vector<LayerInfo> layers;
  LayerSummary summary;
};

// "Add 'add_3': residual input is float"
std::string format_float_reason(const FloatReason& reason);

// `symbol_values` binds symbolic dims by name ("batch" -> 8) for shapes and MACs.
LayerReport compute_layer_info(const Graph& graph, const std::vector<FloatReason>& float_reasons,
                               const std::map<std::string, int64_t>& symbol_values = {});

// The summary after `qdqrt inspect`'s table (tools/inspect_report.h), as it prints it.
std::string format_layer_summary(const LayerReport& report);

// Binds symbolic dims to values from input shapes: for each input whose ValueInfo has a symbol at
// dim i, symbol -> shape[i]. Error when a shape's rank or a static dim disagrees with the model.
Result<std::map<std::string, int64_t>> bind_input_symbols(const Graph& graph,
                                                          const std::map<std::string, Shape>& input_shapes);

}  // namespace qdqrt::optimizer
