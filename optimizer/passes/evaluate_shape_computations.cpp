#include "optimizer/passes/evaluate_shape_computations.h"

#include <algorithm>

#include <onnx/onnx_pb.h>

#include "optimizer/passes/fold_constants.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"

namespace qdqrt::optimizer {

namespace {

// Initializers at most this large go to shape inference as constants (shape operands are tiny);
// larger ones (weights) go as graph inputs of the same type and shape, which is all inference needs.
constexpr int64_t kMaxInferenceConstantElements = 64;

bool has_static_shape(const Graph& graph, const std::string& value) {
  if (graph.find_initializer(value) != nullptr) return true;
  const ValueInfo* info = graph.find_value(value);
  return info != nullptr && info->static_shape().has_value();
}

bool every_output_static(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    for (const std::string& output : node.outputs) {
      if (!output.empty() && !has_static_shape(graph, output)) return false;
    }
  }
  return true;
}

// `graph` with its large initializers turned into inputs and every shape not static forgotten.
Graph inference_copy(const Graph& graph) {
  Graph copy = graph;  // tensors share their storage: a cheap copy
  for (auto it = copy.initializers.begin(); it != copy.initializers.end();) {
    if (it->second.numel() <= kMaxInferenceConstantElements) {
      ++it;
      continue;
    }
    ValueInfo info;
    info.name = it->first;
    info.dtype = it->second.dtype();
    info.shape.emplace();
    for (int64_t dim : it->second.shape()) info.shape->push_back(Dim{.value = dim, .symbol = {}});
    copy.values[it->first] = std::move(info);
    copy.inputs.push_back(it->first);
    it = copy.initializers.erase(it);
  }
  for (auto& [name, info] : copy.values) {
    if (info.shape && !info.static_shape() &&
        std::find(copy.inputs.begin(), copy.inputs.end(), name) == copy.inputs.end()) {
      info.shape.reset();
    }
  }
  return copy;
}

// Copies into `graph` the static shapes ONNX's inference finds now; returns how many it found.
Result<int> infer_missing_shapes(Graph& graph) {
  QDQRT_ASSIGN_OR_RETURN(onnx::ModelProto model, graph_to_model(inference_copy(graph)));
  LoadOptions options;
  options.run_checker = false;  // checked when the model was loaded
  QDQRT_ASSIGN_OR_RETURN(Graph inferred, load_onnx_model(model, options));
  int found = 0;
  for (const Node& node : graph.nodes) {
    for (const std::string& output : node.outputs) {
      if (output.empty() || has_static_shape(graph, output)) continue;
      const ValueInfo* info = inferred.find_value(output);
      if (info == nullptr || !info->static_shape()) continue;
      ValueInfo& target = graph.values[output];
      target.name = output;
      if (target.dtype == DataType::kUndefined) target.dtype = info->dtype;
      target.shape = info->shape;
      ++found;
    }
  }
  return found;
}

class EvaluateShapeComputationsPass : public Pass {
 public:
  std::string name() const override { return "evaluate_shape_computations"; }
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext& context) override {
    for (const std::string& input : graph.inputs) {
      if (!has_static_shape(graph, input)) return Status::ok();
    }
    std::unique_ptr<Pass> fold = make_fold_constants_pass();
    // Each round makes at least one more value's shape static, so it ends.
    while (!every_output_static(graph)) {
      QDQRT_ASSIGN_OR_RETURN(int found, infer_missing_shapes(graph));
      if (found == 0) break;
      QDQRT_RETURN_IF_ERROR(fold->run(graph, context));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_evaluate_shape_computations_pass() {
  return std::make_unique<EvaluateShapeComputationsPass>();
}

}  // namespace qdqrt::optimizer
