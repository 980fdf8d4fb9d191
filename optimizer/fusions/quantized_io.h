// Quantized inputs and outputs of the fusions. Selector side: reading a value through its
// DequantizeLinear, and finding the QuantizeLinear that ends a pattern, including a fan-out to
// several Qs. Action side: the (value, scale, zero-point) names a layer reads, and the rewiring of
// the fan-out Qs once the layer writes one of them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "optimizer/fusions/fusion.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

bool is_onnx(const Node& node, const char* op_type);  // an ai.onnx node of that type
// The single consumer of `value` (read once, not a graph output), or -1.
int single_consumer(const ValueIndex& index, const std::string& value);
// Some input of `node` comes from a DequantizeLinear.
bool looks_quantized(const ValueIndex& index, const Graph& graph, const Node& node);

// Reads `value` through a DequantizeLinear; reason on failure ("" when no DQ produces it).
std::optional<QuantizedInput> quantized_input(const Graph& graph, const ValueIndex& index, const std::string& value,
                                              std::string& reason);
// An activation-side input (per-tensor, 8-bit); `role` names it in the reason ("input A").
std::optional<QuantizedInput> activation_input(const Graph& graph, const ValueIndex& index, const std::string& value,
                                               const char* role, std::string& reason);
// A float constant, or a DequantizeLinear of constants evaluated once (a bias).
std::optional<Tensor> constant_float(const Graph& graph, const ValueIndex& index, const std::string& value);

// QuantizeLinear node `q_index` reading `value`, with per-tensor constant 8-bit parameters.
std::optional<QuantizedOutput> quantize_reader(const Graph& graph, int q_index, const std::string& value);
// A QuantizeLinear reading `value` as its only reader, with per-tensor constant parameters.
std::optional<QuantizedOutput> output_quantization(const Graph& graph, const ValueIndex& index,
                                                   const std::string& value);
// The same for patterns that need it (concat, lookup, int8 MaxPool); reason when it is missing.
std::optional<QuantizedOutput> required_output_quantization(const Graph& graph, const ValueIndex& index,
                                                            const std::string& value, std::string& reason);
// `x` and `q` have one dtype, scale and zero point: a layer that moves or picks codes (pooling max,
// nearest resize, slicing) can run on the int8 values between them.
bool same_input_output_params(const Graph& graph, const QuantizedInput& x, const QuantizedOutput& q);
// Ends the selection at `q`: the layer writes q's int8 output.
void end_at_quantize(const Graph& graph, const QuantizedOutput& q, QdqSelection& selection);
// The output Q of `selection.output` when there is one (single reader, or a fan-out to several Qs).
void select_output_quantization(const Graph& graph, const ValueIndex& index, QdqSelection& selection);

// (value, scale, zero_point) names of a quantized input; adds a zero zero-point when absent.
std::vector<std::string> input_triple(Graph& graph, const QuantizedInput& input);
// (y_scale, y_zero_point) names, or two "" without an output Q.
std::vector<std::string> output_pair(Graph& graph, const std::optional<QuantizedOutput>& output);
// A fan-out Q whose readers can read the layer's int8 output as is (equal parameters).
bool shares_layer_output(const Graph& graph, const QdqSelection& selection, const QuantizedOutput& extra);
// The other Qs of a fan-out (QdqSelection::extra_output_qs), once the layer writes
// `selection.output` with `layer_params` (y_scale, y_zero_point): a Q with equal parameters goes
// (its readers read the layer's output; returned for removal), any other becomes
// QRequantize(layer_output) in place.
Result<std::vector<int>> rewire_extra_quantizers(Graph& graph, const QdqSelection& selection,
                                                 const std::vector<std::string>& layer_params, PassContext& context);

}  // namespace qdqrt::optimizer
