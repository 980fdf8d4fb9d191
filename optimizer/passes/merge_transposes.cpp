#include "optimizer/passes/merge_transposes.h"

#include <optional>
#include <string>
#include <vector>

#include "core/attribute_values.h"
#include "core/ops/tensor.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

class MergeTransposesPass : public Pass {
 public:
  std::string name() const override { return "merge_transposes"; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    std::optional<ValueIndex> index;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (!index) index.emplace(graph);
      const std::optional<std::vector<int64_t>> second = explicit_transpose_perm(graph.nodes[i]);
      if (!second) continue;
      const int producer = index->producer(graph.nodes[i].input(0));
      if (producer < 0 || !index->has_single_use(graph.nodes[i].input(0))) continue;
      const std::optional<std::vector<int64_t>> first = explicit_transpose_perm(graph.nodes[static_cast<size_t>(producer)]);
      if (!first || first->size() != second->size()) continue;
      // out[j] = mid[second[j]] = in[first[second[j]]].
      std::vector<int64_t> merged(second->size());
      bool valid = true;
      for (size_t j = 0; j < second->size(); ++j) {
        const int64_t axis = (*second)[j];
        valid = valid && axis >= 0 && axis < static_cast<int64_t>(first->size());
        if (valid) merged[j] = (*first)[static_cast<size_t>(axis)];
      }
      if (!valid) continue;
      const std::string input = graph.nodes[static_cast<size_t>(producer)].input(0);
      Node& outer = graph.nodes[i];
      if (is_identity_permutation(merged)) {
        // Both cancel: the readers read the first's input.
        if (!bypass_value(graph, outer.outputs[0], input)) continue;
        outer.outputs[0].clear();
      } else {
        QDQRT_ASSIGN_OR_RETURN(Node merged_node, make_onnx_node(outer, "Transpose", outer.name, {input}, outer.outputs[0],
                                                                {{"perm", ints_attribute(merged)}}));
        outer = std::move(merged_node);
      }
      index.reset();
      changed = true;
    }
    if (!changed) return Status::ok();
    remove_unused(graph);
    return infer_shapes(graph);
  }
};

}  // namespace

std::unique_ptr<Pass> make_merge_transposes_pass() { return std::make_unique<MergeTransposesPass>(); }

}  // namespace qdqrt::optimizer
