#include "optimizer/passes/lower_reduce_l2.h"

#include <optional>
#include <string>
#include <vector>

#include "core/ops/reduce.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

// The size of the reduced last axis when the node is a float ReduceL2 over it alone with keepdims.
std::optional<int64_t> reduced_columns(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || node.op_type != "ReduceL2" || node.outputs.size() != 1 || !node.has_input(0)) {
    return std::nullopt;
  }
  const auto* attributes = dynamic_cast<const ReduceAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr || !attributes->keepdims) return std::nullopt;
  const ValueInfo* x = graph.find_value(node.input(0));
  if (x == nullptr || x->dtype != DataType::kFloat || !x->shape || x->shape->empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x->shape->size());
  std::vector<int64_t> axes = attributes->axes;
  if (attributes->axes_from_input) {
    const Tensor* given = node.has_input(1) ? find_constant(graph, node.input(1)) : nullptr;
    if (given == nullptr || given->dtype() != DataType::kInt64) return std::nullopt;
    const auto values = given->values<int64_t>();
    axes.assign(values.begin(), values.end());
  }
  if (axes.size() != 1 || (axes[0] != -1 && axes[0] != rank - 1)) return std::nullopt;
  const Dim& columns = x->shape->back();
  if (!columns.is_static() || columns.value < 1) return std::nullopt;
  return columns.value;
}

// The lowered node `suffix` of the ReduceL2 `like`.
Result<Node> make_node(const Node& like, const std::string& op_type, const std::string& suffix,
                       std::vector<std::string> inputs, std::string output, Graph& graph) {
  return make_onnx_node(like, op_type, unique_node_name(graph, like.name + "/" + suffix), std::move(inputs),
                        std::move(output));
}

class LowerReduceL2Pass : public Pass {
 public:
  std::string name() const override { return "lower_reduce_l2"; }
  // The reduced axis's size is known once the shape computations are evaluated.
  std::vector<std::string> must_run_after() const override { return {"evaluate_shape_computations"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node reduce = graph.nodes[i];
      std::optional<int64_t> columns = reduced_columns(graph, reduce);
      if (!columns) continue;
      const std::string ones = add_initializer(graph, reduce.name + "/ones",
                                               Tensor::from_vector<float>({*columns, 1}, std::vector<float>(
                                                                                            static_cast<size_t>(*columns), 1.0f)));
      const std::string squares = add_value(graph, reduce.outputs[0] + "_squares", DataType::kFloat);
      const std::string sums = add_value(graph, reduce.outputs[0] + "_sum_of_squares", DataType::kFloat);
      std::vector<Node> added;
      QDQRT_ASSIGN_OR_RETURN(Node square, make_node(reduce, "Mul", "square", {reduce.input(0), reduce.input(0)}, squares, graph));
      added.push_back(std::move(square));
      QDQRT_ASSIGN_OR_RETURN(Node sum, make_node(reduce, "MatMul", "sum", {squares, ones}, sums, graph));
      added.push_back(std::move(sum));
      QDQRT_ASSIGN_OR_RETURN(Node root, make_node(reduce, "Sqrt", "sqrt", {sums}, reduce.outputs[0], graph));
      added.push_back(std::move(root));
      graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i), added.begin(), added.end());
      i += added.size() - 1;
      changed = true;
    }
    if (!changed) return Status::ok();
    remove_unused(graph);
    // The new values' dims (with their expressions) for the passes after this one.
    return infer_shapes(graph);
  }
};

}  // namespace

std::unique_ptr<Pass> make_lower_reduce_l2_pass() { return std::make_unique<LowerReduceL2Pass>(); }

}  // namespace qdqrt::optimizer
