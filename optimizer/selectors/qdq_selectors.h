// Selectors of the Q/DQ fusions (DESIGN.md 5.2): each reads the graph only and returns what a
// fusion would take ({DQ inputs, target nodes, Q output}) or why the node cannot run in INT8.
// The fuse_qdq_* passes apply them; `qdqrt inspect` asks them "can this run in INT8, and if not why".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "optimizer/graph_utils.h"
#include "optimizer/pass.h"
#include "core/graph.h"
#include "core/ops/fused.h"

namespace qdqrt::optimizer {

// A value read through a DequantizeLinear of an 8-bit tensor with constant parameters.
struct QuantizedInput {
  int dq_node = -1;
  std::string quantized;   // the int8/uint8 tensor
  std::string scale;       // constant float32
  std::string zero_point;  // constant, or "" (zero of `dtype`; the action adds one)
  DataType dtype = DataType::kUndefined;
  int64_t axis = 1;        // normalized DQ axis (meaningful when per_channel)
  bool per_channel = false;
};

// A QuantizeLinear ending the pattern (per-tensor constant parameters).
struct QuantizedOutput {
  int q_node = -1;
  std::string scale;
  std::string zero_point;  // "" = uint8 zero
  DataType dtype = DataType::kUint8;
};

struct QdqSelection {
  std::string layer_op;                // layers::kQConv, ...
  std::vector<QuantizedInput> inputs;  // in the layer's input order
  std::vector<int> targets;            // fused nodes (main op first, then the epilogue, graph order)
  // QConv / QMatMul epilogue.
  std::string bias;                    // float constant [C], or ""
  std::optional<Tensor> computed_bias; // bias the action must add (Gemm beta*C, DQ'd bias)
  std::optional<QuantizedInput> residual;
  FusedActivation activation;
  // QMatMul with a Gemm: weight transposed (transB) and/or scale multiplied by alpha.
  // QLookup: the "function" attribute ("Sigmoid", "SiLU", "Gelu", ...).
  std::string lookup_function;
  bool transpose_weight = false;
  float weight_scale_multiplier = 1.0f;
  std::optional<QuantizedOutput> output_q;
  // Q fan-out: the other QuantizeLinear readers of the value output_q reads. The layer writes
  // output_q's int8 tensor; each of these becomes a QRequantize from it, or (equal parameters)
  // its readers read the layer's output.
  std::vector<QuantizedOutput> extra_output_qs;
  std::string output;                  // the value the fused layer writes
  // Parts that look quantized but stay float, and why (e.g. the Add of a float residual).
  std::vector<FloatReason> notes;
};

struct SelectResult {
  std::optional<QdqSelection> selection;
  // Why not, when the node looks quantized ("input scale is not a constant"); empty when the
  // node is simply not part of a Q/DQ pattern.
  std::string reason;
};

// Reads `value` through a DequantizeLinear; reason on failure ("" when no DQ produces it).
std::optional<QuantizedInput> quantized_input(const Graph& graph, const ValueIndex& index, const std::string& value,
                                              std::string& reason);

SelectResult select_qdq_conv(const Graph& graph, const ValueIndex& index, int node);
SelectResult select_qdq_matmul(const Graph& graph, const ValueIndex& index, int node);  // MatMul, Gemm
SelectResult select_qdq_binary(const Graph& graph, const ValueIndex& index, int node);  // Add, Mul
SelectResult select_qdq_pool(const Graph& graph, const ValueIndex& index, int node);    // (Global)AveragePool
// DQ -> MaxPool -> Q with equal parameters: selection with layer_op "MaxPool".
SelectResult select_qdq_max_pool(const Graph& graph, const ValueIndex& index, int node);
SelectResult select_qdq_concat(const Graph& graph, const ValueIndex& index, int node);
// Sigmoid/Tanh/HardSwish/HardSigmoid/Gelu, Sigmoid -> Mul(x) as SiLU, and the erf form of GELU
// that opset < 20 exports write, x * 0.5 * (1 + Erf(x / sqrt(2))), as Gelu.
SelectResult select_qdq_lookup(const Graph& graph, const ValueIndex& index, int node);

// Any of the above for one node (inspect).
SelectResult select_int8_layer(const Graph& graph, const ValueIndex& index, int node);

}  // namespace qdqrt::optimizer
