// Helpers shared by the graph-level passes and the fusions: reading a Q/DQ node's constant
// quantization parameters, comparing them, evaluating a DQ of constants, and bypassing a value
// (rewiring readers to another value while keeping graph output names).
#pragma once

#include <optional>
#include <string>

#include "optimizer/graph_utils.h"
#include "core/graph.h"

namespace qdqrt::optimizer {

bool is_quantize(const Node& node);    // ai.onnx QuantizeLinear
bool is_dequantize(const Node& node);  // ai.onnx DequantizeLinear

// A Q or DQ node's parameters when the scale (and zero-point, if any) are constants and the
// quantization is not blocked. `zero_point` is undefined when the input is absent.
struct QuantParams {
  Tensor scale;
  Tensor zero_point;
  DataType quantized_dtype = DataType::kUndefined;  // int8 / uint8 / ...
  int64_t axis = 1;                                 // as written (may be negative)
  bool per_tensor() const { return scale.numel() == 1; }
  // Zero-point element i (0 when absent).
  int64_t zero_point_at(int64_t i) const;
};
std::optional<QuantParams> constant_quant_params(const Graph& graph, const Node& node);

// Same dtype, same scales and zero-points element by element, same axis when per-axis.
bool same_quant_params(const QuantParams& a, const QuantParams& b, int64_t rank);

// A DequantizeLinear whose inputs are all constants, evaluated once; nullopt otherwise.
std::optional<Tensor> folded_dequantize(const Graph& graph, const Node& dq);
// Rank of a constant or of a value with a known shape, else -1.
int64_t value_rank(const Graph& graph, const std::string& value);

// Smallest / largest value of an integer quantized dtype.
int64_t quantized_min(DataType dtype);
int64_t quantized_max(DataType dtype);
// ONNX QuantizeLinear of one value (float division, round half to even, saturate).
int64_t quantize_scalar(float value, float scale, int64_t zero_point, DataType dtype);

// Makes every reader of `from` read `to` instead, where `from` was the output of a node that is
// going away. If `from` is a graph output, the node producing `to` is renamed to produce `from`
// (so graph output names never change); that is impossible when `to` is a graph input, an
// initializer or itself a graph output: returns false and changes nothing.
// Takes the names by value: callers often pass a node's own output, which this rewrites.
bool bypass_value(Graph& graph, std::string from, std::string to);

// Records type info for a new value (dtype and shape copied from `like`, dtype replaced).
void set_value_info(Graph& graph, const std::string& name, DataType dtype, const std::string& like);

}  // namespace qdqrt::optimizer
