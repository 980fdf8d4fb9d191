#include "optimizer/passes/lower_spatial_mean.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/attribute_values.h"
#include "core/ops/reduce.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

class LowerSpatialMeanPass : public Pass {
 public:
  std::string name() const override { return "lower_spatial_mean"; }
  // Opset-18 axes come from Constant nodes fold_constants turns into initializers.
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext&) override {
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!spatial_mean_mismatch(graph, graph.nodes[n]).empty()) continue;
      const bool keepdims = graph.nodes[n].attrs<ReduceAttributes>().keepdims;
      Node& mean = graph.nodes[n];
      const std::string output = mean.outputs[0];
      mean.op_type = "GlobalAveragePool";
      mean.inputs.resize(1);
      mean.attributes.clear();
      QDQRT_RETURN_IF_ERROR(parse_typed_attributes(mean));
      if (keepdims) continue;
      // [N, C, 1, ...] -> [N, C]: the reduced axes dropped. The pool's output is the input's N
      // and C with the spatial dims 1 (the ReduceMean's output keeps its dims).
      const std::string pooled = unique_value_name(graph, output + "/pooled");
      const std::vector<Dim>& input_dims = *graph.find_value(mean.input(0))->shape;
      ValueInfo pooled_info;
      pooled_info.name = pooled;
      pooled_info.dtype = DataType::kFloat;
      pooled_info.shape = std::vector<Dim>{input_dims[0], input_dims[1]};
      pooled_info.shape->resize(input_dims.size(), static_dim(1));
      graph.values[pooled] = std::move(pooled_info);
      mean.outputs[0] = pooled;
      Node flatten;
      flatten.name = unique_node_name(graph, mean.name + "/flatten");
      flatten.op_type = "Flatten";
      flatten.opset = mean.opset;
      flatten.inputs = {pooled};
      flatten.outputs = {output};
      flatten.attributes["axis"] = int_attribute(1);
      QDQRT_RETURN_IF_ERROR(parse_typed_attributes(flatten));
      graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(n) + 1, std::move(flatten));
      ++n;
    }
    return Status::ok();
  }
};

}  // namespace

std::string spatial_mean_mismatch(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || node.op_type != "ReduceMean") return "not a ReduceMean";
  if (!node.has_input(0) || node.outputs.size() != 1 || node.outputs[0].empty()) return "not one input and one output";
  const ValueInfo* info = graph.find_value(node.input(0));
  if (info == nullptr || !info->shape) return "its input's rank is not known";
  if (info->dtype != DataType::kFloat) return fmt::format("its input is {}, not float", dtype_name(info->dtype));
  const int64_t rank = static_cast<int64_t>(info->shape->size());
  // Rank 3 is left alone: a mean over the last axis of [B, T, D] is LayerNorm's (fuse_layer_norm).
  if (rank < 4) return fmt::format("its input has rank {}, not [N, C, H, W, ...]", rank);
  const auto& attributes = node.attrs<ReduceAttributes>();
  std::vector<int64_t> axes = attributes.axes;
  if (attributes.axes_from_input && node.has_input(1)) {
    const Tensor* constant = find_constant(graph, node.input(1));
    if (constant == nullptr) return "its axes are computed at run time";
    axes = constant->to_int64_vector();
  }
  if (axes.empty()) {
    return attributes.noop_with_empty_axes ? "empty axes with noop_with_empty_axes: an identity"
                                           : "no axes: it reduces every axis, N and C too";
  }
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) return fmt::format("axis {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  std::vector<int64_t> spatial;
  for (int64_t axis = 2; axis < rank; ++axis) spatial.push_back(axis);
  if (axes != spatial) {
    return fmt::format("axes [{}] are not the spatial axes [{}]", fmt::join(axes, ", "), fmt::join(spatial, ", "));
  }
  return "";
}

std::unique_ptr<Pass> make_lower_spatial_mean_pass() { return std::make_unique<LowerSpatialMeanPass>(); }

}  // namespace qdqrt::optimizer
