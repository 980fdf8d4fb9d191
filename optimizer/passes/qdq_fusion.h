// The action half of the Q/DQ fusions (the selectors are optimizer/selectors/qdq_selectors.h):
// turns a selection into one qdqrt fused layer node (core/ops/fused_layers.h), and the loop
// every fuse_qdq_* pass runs.
#pragma once

#include "optimizer/pass.h"
#include "optimizer/selectors/qdq_selectors.h"

namespace qdqrt::optimizer {

using QdqSelector = SelectResult (*)(const Graph& graph, const ValueIndex& index, int node);

// Replaces the selection's target nodes (and its output Q) by the fused layer.
Status apply_qdq_selection(Graph& graph, const QdqSelection& selection, PassContext& context);

// Runs `selector` on every node until nothing more fuses; records reasons for what stays float;
// removes the DequantizeLinear nodes left without readers.
Status run_qdq_fusion(Graph& graph, PassContext& context, QdqSelector selector);

}  // namespace qdqrt::optimizer
