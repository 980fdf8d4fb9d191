// The epilogue a fused layer absorbs after its main op, in this order: a bias Add (MatMul), the
// residual Add (residual_add.h), an activation (Relu, Clip with constant bounds, LeakyRelu) and
// the output QuantizeLinear. Selector side: extends a selection over those nodes. Action side:
// the activation attributes of the layer and the epilogue inputs of QConv/QMatMul.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "optimizer/fusions/fusion.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

// Relu / Clip (constant bounds) / LeakyRelu as an activation a layer can apply, else nullopt.
std::optional<FusedActivation> fusable_activation(const Graph& graph, const Node& node);
// Activation then output Q after `selection.output`; updates targets/output (QAdd/QMul).
void select_activation_and_output(const Graph& graph, const ValueIndex& index, QdqSelection& selection);
// The epilogue of a Conv/MatMul writing `selection.output`: [bias Add] [residual Add]
// [activation] [Q]. A bias Add is taken only with `bias_channels` > 0 (its [N] vector length).
void select_epilogue(const Graph& graph, const ValueIndex& index, QdqSelection& selection, int64_t bias_channels);

// Sets the layer's "activation" (and "activation_min/max/alpha") attributes; none for kNone.
void set_activation_attributes(Node& layer, const FusedActivation& activation);
// The inputs of a QConv/QMatMul: x and weight triples (input_triple(), the weight possibly
// rewritten by the action), the bias, `output_params` (y_scale, y_zero_point), then the residual.
std::vector<std::string> weighted_layer_inputs(Graph& graph, const QdqSelection& selection,
                                               const std::vector<std::string>& x,
                                               const std::vector<std::string>& weight,
                                               const std::vector<std::string>& output_params);

}  // namespace qdqrt::optimizer
