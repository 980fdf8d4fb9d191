// The residual fusion: `Conv/MatMul -> Add(quantized residual)` goes into the layer's epilogue
// (QConv/QMatMul inputs 9..11: residual value, scale, zero-point). Selector and action.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "optimizer/fusions/fusion.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

// Takes the Add that single-reads `selection.output` when its other input is a per-tensor DQ of
// the Add's own shape (selection.residual, the Add a target). Returns false when such an Add stays
// float (a note says why): the epilogue ends there. True otherwise (taken, or no Add follows).
bool select_residual_add(const Graph& graph, const ValueIndex& index, QdqSelection& selection);
// The layer output has several readers: each Add among them stays float, with a note.
void note_residual_adds_of_shared_output(const Graph& graph, const ValueIndex& index, QdqSelection& selection);

// Appends the residual's (value, scale, zero-point) to the layer's inputs when there is one.
void append_residual_inputs(Graph& graph, const QdqSelection& selection, std::vector<std::string>& layer_inputs);

}  // namespace qdqrt::optimizer
