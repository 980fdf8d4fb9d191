// The Q/DQ fusions: each turns a `DQ inputs -> op(s) -> Q` pattern into one INT8 layer of the
// qdqrt domain (core/ops/fused_layers.h). A fusion is one row of the registry
// (optimizer/fusions/registry.cpp): its name (the pass name), a selector that only reads the graph
// and returns {DQ inputs, target nodes, Q outputs} or the reason the node stays float, an action
// that rewrites the graph, and the passes that must have run before it. The order the fusions run
// in is optimizer/pipeline.cpp's. See docs/optimizer.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/ops/fused.h"
#include "optimizer/graph_utils.h"
#include "optimizer/pass.h"

namespace qdqrt::optimizer {

// A value read through a DequantizeLinear of an 8-bit tensor with constant parameters.
struct QuantizedInput {
  int dq_node = -1;
  std::string quantized;   // the int8/uint8 tensor
  std::string scale;       // constant float32
  std::string zero_point;  // constant, or "" (zero of `dtype`; the action adds one)
  DataType dtype = DataType::kUndefined;
  int64_t axis = 1;  // normalized DQ axis (meaningful when per_channel)
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
  std::string bias;                     // float constant [C], or ""
  std::optional<Tensor> computed_bias;  // bias the action must add (Gemm beta*C, DQ'd bias)
  std::optional<QuantizedInput> residual;
  FusedActivation activation;
  // QMatMul with a Gemm: weight transposed (transB) and/or scale multiplied by alpha.
  // QLookup: the "function" attribute ("Sigmoid", "SiLU", "Gelu", ...).
  std::string lookup_function;
  float lookup_operand = 1.0f;  // QLookup Erf: the constant divided or multiplied by before the Erf
  bool lookup_operand_divides = true;
  bool transpose_weight = false;
  float weight_scale_multiplier = 1.0f;
  std::optional<QuantizedOutput> output_q;
  // Q fan-out: the other QuantizeLinear readers of the value output_q reads. The layer writes
  // output_q's int8 tensor; each of these becomes a QRequantize from it, or (equal parameters)
  // its readers read the layer's output.
  std::vector<QuantizedOutput> extra_output_qs;
  std::string output;  // the value the fused layer writes
  // Clamp: the fused layer that takes the clamp as its activation (-1: a standalone QRequantize).
  int absorbing_layer = -1;
  // Parts that look quantized but stay float, and why (e.g. the Add of a float residual).
  std::vector<FloatReason> notes;
};

struct SelectResult {
  std::optional<QdqSelection> selection;
  // Why not, when the node looks quantized ("input scale is not a constant"); empty when the
  // node is simply not part of a Q/DQ pattern.
  std::string reason;
};

// Reads the graph (and the context's target ISA) only.
using FusionSelector = SelectResult (*)(const Graph& graph, const ValueIndex& index, int node,
                                        const PassContext& context);
// A selector whose rule is the graph's alone, as a FusionSelector.
template <SelectResult (*kSelect)(const Graph&, const ValueIndex&, int)>
SelectResult graph_only(const Graph& graph, const ValueIndex& index, int node, const PassContext&) {
  return kSelect(graph, index, node);
}
// Rewrites the graph for one selection (the target nodes' float reasons are already cleared).
using FusionAction = Status (*)(Graph& graph, const QdqSelection& selection, PassContext& context);

struct Fusion {
  std::string name;  // the pass name: "fuse_qdq_conv"
  FusionSelector selector;
  FusionAction action;
  // Passes that, when enabled, must have run before this fusion (checked by the pipeline).
  std::vector<std::string> must_run_after;
  // The fused layer computes in float (FusedConv): the reasons its nodes stay float still hold.
  bool float_layer = false;
};

// Every fusion, one row each (optimizer/fusions/registry.cpp).
const std::vector<Fusion>& fusion_registry();
// The registry row named `name`, or nullptr.
const Fusion* find_fusion(std::string_view name);

// A fusion as a pipeline pass: runs the selector on every node until nothing more fuses, applies
// the action to each selection, records the reasons of what stays float, and removes the
// DequantizeLinear nodes left without readers.
class FusionPass : public Pass {
 public:
  // A registry name; an unknown one makes run() fail.
  explicit FusionPass(std::string name);
  std::string name() const override { return name_; }
  std::vector<std::string> must_run_after() const override;
  Status run(Graph& graph, PassContext& context) override;

 private:
  std::string name_;
  const Fusion* fusion_;
};

// The two halves every layer-writing action shares (fusion.cpp).
// The layer node of a selection: named after its main node (targets[0]), its fused_nodes and
// activation attributes set; with `keep_attributes` the main node's attributes carry over.
Node make_layer_node(const Graph& graph, const QdqSelection& selection, bool keep_attributes);
// Completes `layer` (its inputs set, `output_params` = the pair output_pair() returned) and puts
// it in place of the selection's nodes and output Q; fan-out Qs are rewired.
Status replace_with_layer(Graph& graph, const QdqSelection& selection, Node layer,
                          const std::vector<std::string>& output_params, PassContext& context);
// Completes `layer` (its inputs set; the selection's lookup_function becomes its "function"
// attribute) and puts it in the slot of the selection's first node; the other targets go. For
// float fusions without an output Q, whose later nodes read only what the first node reads or
// writes, so the first slot already follows every producer the layer reads.
Status replace_first_with_layer(Graph& graph, const QdqSelection& selection, Node layer);
void set_string_attribute(Node& node, const std::string& key, const std::string& value);

}  // namespace qdqrt::optimizer
