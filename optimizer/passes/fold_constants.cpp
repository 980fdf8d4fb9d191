#include "optimizer/passes/fold_constants.h"

#include <algorithm>
#include <optional>
#include <set>

#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"
#include "core/ops/tensor.h"
#include "core/shape_inference.h"
#include "reference/executor.h"

namespace qdqrt::optimizer {

namespace {

bool never_folded(const Node& node) {
  static const std::set<std::string> kept = {"DequantizeLinear", "RandomNormal", "RandomUniform",
                                             "RandomNormalLike", "RandomUniformLike", "Multinomial",
                                             "Bernoulli"};
  return !node.domain.empty() || kept.count(node.op_type) != 0;
}

// Shape of a value whose dims are all static: an int64 tensor (start/end applied).
std::optional<Tensor> static_shape_of(const Graph& graph, const Node& node) {
  const ValueInfo* info = graph.find_value(node.input(0));
  if (info == nullptr) return std::nullopt;
  std::optional<Shape> shape = info->static_shape();
  if (!shape) return std::nullopt;
  const auto& attributes = node.attrs<ShapeAttributes>();
  const int64_t rank = static_cast<int64_t>(shape->size());
  auto clamp_axis = [&](int64_t axis) { return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank); };
  const int64_t start = clamp_axis(attributes.start);
  const int64_t end = clamp_axis(attributes.end.value_or(rank));
  std::vector<int64_t> dims;
  for (int64_t axis = start; axis < end; ++axis) dims.push_back((*shape)[static_cast<size_t>(axis)]);
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}

// Ops that make a tensor of data whose size their shape input gives.
bool sizes_data_by_shape(const Node& node) {
  return node.domain.empty() && (node.op_type == "Expand" || node.op_type == "Tile" ||
                                 node.op_type == "ConstantOfShape");
}

class FoldConstantsPass : public Pass {
 public:
  std::string name() const override { return "fold_constants"; }

  Status run(Graph& graph, PassContext& context) override {
    // Nodes are in topological order, so a folded producer makes its readers foldable in the
    // same sweep.
    std::set<std::string> folded;
    // Data sized by a runtime value's shape (the class token expanded to [batch, 1, dim]) stays a
    // runtime node: folded, it would hold copies for the batch the graph was loaded at only.
    std::set<std::string>& from_runtime_shape = context.folded_from_runtime_shapes;
    for (Node& node : graph.nodes) {
      if (never_folded(node)) continue;
      std::vector<Tensor> outputs;
      // The shape of a constant is a constant, whatever the constant was computed from.
      const bool reads_runtime_shape =
          node.op_type != "Shape" && std::any_of(node.inputs.begin(), node.inputs.end(), [&](const std::string& input) {
            return from_runtime_shape.count(input) != 0;
          });
      if (node.op_type == "Shape") {
        std::optional<Tensor> shape = static_shape_of(graph, node);
        if (!shape) continue;
        outputs.push_back(std::move(*shape));
        if (find_constant(graph, node.input(0)) == nullptr) from_runtime_shape.insert(node.outputs[0]);
      } else if (reads_runtime_shape && sizes_data_by_shape(node)) {
        continue;
      } else {
        std::vector<const Tensor*> inputs;
        size_t input_bytes = 0;
        bool all_constant = true;
        for (const std::string& input : node.inputs) {
          const Tensor* constant = input.empty() ? nullptr : find_constant(graph, input);
          if (!input.empty() && constant == nullptr) all_constant = false;
          if (constant != nullptr) input_bytes += constant->nbytes();
          inputs.push_back(constant);
        }
        if (!all_constant) continue;
        Result<std::vector<Tensor>> evaluated = run_reference_node(node, inputs);
        if (!evaluated.ok()) {
          // Constant inputs the op refuses (an index out of range) make the model invalid: every
          // run and the engine builder would refuse it, so inspect does too. A node the reference
          // cannot evaluate for another reason (unsupported) stays.
          const StatusCode code = evaluated.status().code();
          if (code == StatusCode::kInvalidArgument || code == StatusCode::kInvalidModel) {
            return invalid_model("folding constant {}: {}", node.describe(), evaluated.status().message());
          }
          continue;
        }
        size_t output_bytes = 0;
        for (const Tensor& output : *evaluated) output_bytes += output.nbytes();
        if (output_bytes > kMaxFoldedBlowupBytes && output_bytes > 2 * input_bytes) continue;
        outputs = std::move(*evaluated);
      }
      // A constant computed from runtime shapes is right at other shapes only as far as its
      // elements' expressions say (engine/batch_tracking.h): shape inference derives them.
      const bool from_runtime_shapes = reads_runtime_shape || (!node.outputs.empty() && from_runtime_shape.count(node.outputs[0]) != 0);
      NodeShapes derived;
      if (from_runtime_shapes) derived = infer_node_shapes(graph, node);
      for (size_t i = 0; i < node.outputs.size() && i < outputs.size(); ++i) {
        const std::string& output = node.outputs[i];
        if (output.empty()) continue;
        ValueInfo info;
        info.name = output;
        info.dtype = outputs[i].dtype();
        info.shape = static_dims(outputs[i].shape());
        info.from_runtime_shapes = from_runtime_shapes;
        if (from_runtime_shapes && derived.status.is_ok() && i < derived.elements.size()) {
          info.elements = derived.elements[i];
        }
        graph.values[output] = info;
        graph.initializers[output] = std::move(outputs[i]);
        folded.insert(output);
        if (reads_runtime_shape) from_runtime_shape.insert(output);
      }
      node.outputs.assign(node.outputs.size(), "");  // now unused: remove_unused drops the node
    }
    remove_unused(graph);
    // A folded graph output has no producer left; the executor must still return it, so it is
    // recomputed from its initializer by an Identity.
    for (const std::string& output : graph.outputs) {
      if (!folded.count(output) || !graph.initializers.count(output)) continue;
      Tensor value = graph.initializers[output];
      graph.initializers.erase(output);
      const ValueInfo folded_info = graph.values[output];
      const std::string constant_name = add_initializer(graph, output + "_constant", std::move(value));
      graph.values[constant_name].from_runtime_shapes = folded_info.from_runtime_shapes;
      graph.values[constant_name].elements = folded_info.elements;
      Node identity;
      identity.name = unique_node_name(graph, output + "_identity");
      identity.op_type = "Identity";
      identity.opset = graph.opset();
      identity.inputs = {constant_name};
      identity.outputs = {output};
      graph.nodes.push_back(std::move(identity));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_constants_pass() { return std::make_unique<FoldConstantsPass>(); }

}  // namespace qdqrt::optimizer
