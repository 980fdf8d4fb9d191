// Runs a Graph with the reference kernels: the oracle for every optimized path.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt {

using TensorMap = std::map<std::string, Tensor>;

struct ReferenceRunOptions {
  // Extra values to return besides the graph outputs (e.g. intermediates for debugging).
  std::vector<std::string> extra_outputs;
};

// Runs every node in order. `inputs` must hold every graph input with a matching dtype and rank;
// dims may differ from the model's (any batch size). Returns graph outputs by name.
Result<TensorMap> run_reference(const Graph& graph, const TensorMap& inputs,
                                const ReferenceRunOptions& options = {});

// Runs one node on the given inputs (nullptr for absent optional inputs).
Result<std::vector<Tensor>> run_reference_node(const Node& node, const std::vector<const Tensor*>& inputs);

}  // namespace qdqrt
