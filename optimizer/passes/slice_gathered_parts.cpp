#include "optimizer/passes/slice_gathered_parts.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/attribute_values.h"
#include "core/ops/tensor.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

bool is_onnx(const Node& node, const char* op_type) { return node.domain.empty() && node.op_type == op_type; }

// One Gather of the Transpose: its node and the part it takes.
struct GatheredPart {
  int gather = -1;
  int64_t index = 0;
};

// What the selector found (indices into graph.nodes); the action rewrites it.
struct GatheredParts {
  int reshape = -1, transpose = -1;
  std::string packed;              // the Reshape's input: [lead..., N]
  int64_t split_axis = 0;          // the Reshape's output axis of the G parts (= rank of lead)
  int64_t parts = 0, part_columns = 0;  // G, N / G
  int64_t gather_axis = 0;         // the Transpose's output axis the Gathers take
  std::vector<int64_t> perm;
  std::vector<int64_t> target;     // the Reshape's shape constant
  std::vector<GatheredPart> gathers;
};

// The integer of a constant scalar (rank 0) index.
std::optional<int64_t> scalar_index(const Graph& graph, const std::string& value) {
  const Tensor* tensor = find_constant(graph, value);
  if (tensor == nullptr || tensor->rank() != 0) return std::nullopt;
  if (tensor->dtype() == DataType::kInt64) return tensor->data<int64_t>()[0];
  if (tensor->dtype() == DataType::kInt32) return tensor->data<int32_t>()[0];
  return std::nullopt;
}

std::optional<GatheredParts> select(const Graph& graph, const ValueIndex& index, int transpose_index) {
  const Node& transpose = graph.nodes[static_cast<size_t>(transpose_index)];
  if (!is_onnx(transpose, "Transpose") || transpose.outputs.size() != 1) return std::nullopt;
  const auto* transpose_attributes = dynamic_cast<const TransposeAttributes*>(transpose.typed_attributes.get());
  if (transpose_attributes == nullptr || transpose_attributes->perm.empty()) return std::nullopt;
  GatheredParts found;
  found.transpose = transpose_index;
  found.perm = transpose_attributes->perm;
  const int64_t rank = static_cast<int64_t>(found.perm.size());
  const std::string& transposed = transpose.outputs[0];
  if (index.is_graph_output(transposed) || index.consumers(transposed).empty()) return std::nullopt;
  // The Reshape, read only by the Transpose, of a packed value read only by it.
  if (!index.has_single_use(transpose.input(0))) return std::nullopt;
  found.reshape = index.producer(transpose.input(0));
  if (found.reshape < 0) return std::nullopt;
  const Node& reshape = graph.nodes[static_cast<size_t>(found.reshape)];
  if (!is_onnx(reshape, "Reshape") || reshape.inputs.size() != 2 || reshape.opset < 5) return std::nullopt;
  found.packed = reshape.input(0);
  if (!index.has_single_use(found.packed)) return std::nullopt;
  const Tensor* target = find_constant(graph, reshape.input(1));
  const ValueInfo* packed = graph.find_value(found.packed);
  const ValueInfo* reshaped = graph.find_value(reshape.outputs[0]);
  if (target == nullptr || target->dtype() != DataType::kInt64 || target->rank() != 1 || target->numel() != rank ||
      packed == nullptr || !packed->shape || packed->shape->empty() || reshaped == nullptr || !reshaped->shape ||
      static_cast<int64_t>(reshaped->shape->size()) != rank) {
    return std::nullopt;
  }
  found.target.assign(target->data<int64_t>(), target->data<int64_t>() + rank);
  // The Reshape keeps the packed value's leading dims and splits its last, N, into static dims.
  const std::vector<Dim>& in = *packed->shape;
  const std::vector<Dim>& out = *reshaped->shape;
  const int64_t lead = static_cast<int64_t>(in.size()) - 1;
  found.split_axis = lead;
  if (lead >= rank - 1 || !in.back().is_static() || in.back().value < 1) return std::nullopt;
  if (!same_dims(std::vector<Dim>(in.begin(), in.begin() + lead), std::vector<Dim>(out.begin(), out.begin() + lead))) {
    return std::nullopt;
  }
  int64_t split = 1;
  for (int64_t axis = lead; axis < rank; ++axis) {
    if (!out[static_cast<size_t>(axis)].is_static()) return std::nullopt;
    split *= out[static_cast<size_t>(axis)].value;
  }
  const int64_t n = in.back().value;
  found.parts = out[static_cast<size_t>(lead)].value;
  if (split != n || found.parts < 2 || found.target[static_cast<size_t>(lead)] != found.parts) return std::nullopt;
  found.part_columns = n / found.parts;
  // The rewritten Reshape drops the split's entry: a 0 ("copy the input's dim") after it would
  // then copy another dim (a valid model has none there: the packed value has no such dim).
  for (int64_t axis = lead; axis < rank; ++axis) {
    if (found.target[static_cast<size_t>(axis)] == 0) return std::nullopt;
  }
  // Every reader: a Gather of one constant scalar index on the axis that walks the parts.
  std::set<int> seen;
  for (int reader : index.consumers(transposed)) {
    if (!seen.insert(reader).second) return std::nullopt;
    const Node& gather = graph.nodes[static_cast<size_t>(reader)];
    if (!is_onnx(gather, "Gather") || gather.inputs.size() != 2 || gather.input(0) != transposed ||
        gather.outputs.size() != 1 || gather.opset < 10) {
      return std::nullopt;
    }
    const auto* attributes = dynamic_cast<const GatherAttributes*>(gather.typed_attributes.get());
    if (attributes == nullptr) return std::nullopt;
    const int64_t axis = attributes->axis < 0 ? attributes->axis + rank : attributes->axis;
    if (axis < 0 || axis >= rank || (!found.gathers.empty() && axis != found.gather_axis)) return std::nullopt;
    found.gather_axis = axis;
    std::optional<int64_t> part = scalar_index(graph, gather.input(1));
    if (!part || *part < -found.parts || *part >= found.parts) return std::nullopt;
    found.gathers.push_back({.gather = reader, .index = *part < 0 ? *part + found.parts : *part});
  }
  if (found.perm[static_cast<size_t>(found.gather_axis)] != lead) return std::nullopt;
  return found;
}

// Per Gather: Slice of the packed value's last axis, the Reshape without the split's entry, the
// Transpose without the gathered axis (none when that is the identity), into the Gather's output.
Status rewrite(Graph& graph, PassContext& context, const GatheredParts& found) {
  const Node reshape = graph.nodes[static_cast<size_t>(found.reshape)];
  const Node transpose = graph.nodes[static_cast<size_t>(found.transpose)];
  const ValueInfo* packed = graph.find_value(found.packed);
  const DataType dtype = packed->dtype;
  // The Reshape's shape without the split's entry; it follows the runtime shapes as the original did.
  std::vector<int64_t> target = found.target;
  target.erase(target.begin() + found.split_axis);
  const std::string shape_name = add_initializer(
      graph, reshape.input(1) + "_part", Tensor::from_vector<int64_t>({static_cast<int64_t>(target.size())}, target));
  if (const ValueInfo* original = graph.find_value(reshape.input(1))) {
    ValueInfo& info = graph.values[shape_name];
    info.from_runtime_shapes = original->from_runtime_shapes;
    if (original->elements && original->elements->size() == found.target.size()) {
      std::vector<Dim> elements = *original->elements;
      elements.erase(elements.begin() + found.split_axis);
      info.elements = std::move(elements);
    }
  }
  if (context.folded_from_runtime_shapes.count(reshape.input(1))) context.folded_from_runtime_shapes.insert(shape_name);
  std::vector<int64_t> perm;
  for (size_t axis = 0; axis < found.perm.size(); ++axis) {
    if (static_cast<int64_t>(axis) == found.gather_axis) continue;
    const int64_t from = found.perm[axis];
    perm.push_back(from > found.split_axis ? from - 1 : from);
  }
  const bool identity = is_identity_permutation(perm);
  const std::string axes_name = add_initializer(graph, found.packed + "_part_axes", Tensor::from_vector<int64_t>({1}, {-1}));
  std::vector<Node> added;
  for (const GatheredPart& part : found.gathers) {
    const Node& gather = graph.nodes[static_cast<size_t>(part.gather)];
    const std::string suffix = fmt::format("_part{}", part.index);
    const std::string starts = add_initializer(graph, found.packed + suffix + "_starts",
                                               Tensor::from_vector<int64_t>({1}, {part.index * found.part_columns}));
    const std::string ends = add_initializer(graph, found.packed + suffix + "_ends",
                                             Tensor::from_vector<int64_t>({1}, {(part.index + 1) * found.part_columns}));
    const std::string sliced = add_value(graph, found.packed + suffix, dtype);
    QDQRT_ASSIGN_OR_RETURN(Node slice, make_onnx_node(gather, "Slice", unique_node_name(graph, gather.name + "/slice"),
                                                      {found.packed, starts, ends, axes_name}, sliced));
    added.push_back(std::move(slice));
    const std::string reshaped = identity ? gather.outputs[0] : add_value(graph, reshape.outputs[0] + suffix, dtype);
    QDQRT_ASSIGN_OR_RETURN(Node part_reshape,
                           make_onnx_node(reshape, "Reshape", unique_node_name(graph, reshape.name + suffix),
                                          {sliced, shape_name}, reshaped, reshape.attributes));
    added.push_back(std::move(part_reshape));
    if (identity) continue;
    QDQRT_ASSIGN_OR_RETURN(Node part_transpose,
                           make_onnx_node(transpose, "Transpose", unique_node_name(graph, transpose.name + suffix),
                                          {reshaped}, gather.outputs[0], {{"perm", ints_attribute(perm)}}));
    added.push_back(std::move(part_transpose));
  }
  std::set<int> dropped = {found.reshape, found.transpose};
  for (const GatheredPart& part : found.gathers) dropped.insert(part.gather);
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size() + added.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (static_cast<int>(i) == found.reshape) nodes.insert(nodes.end(), added.begin(), added.end());
    if (!dropped.count(static_cast<int>(i))) nodes.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(nodes);
  return Status::ok();
}

class SliceGatheredPartsPass : public Pass {
 public:
  std::string name() const override { return "slice_gathered_parts"; }
  // The Reshape's shape is a constant only once the shape computations are evaluated.
  std::vector<std::string> must_run_after() const override { return {"evaluate_shape_computations"}; }

  Status run(Graph& graph, PassContext& context) override {
    bool changed = false;
    std::optional<ValueIndex> index;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (!index) index.emplace(graph);
      std::optional<GatheredParts> found = select(graph, *index, static_cast<int>(i));
      if (!found) continue;
      QDQRT_RETURN_IF_ERROR(rewrite(graph, context, *found));
      index.reset();  // node indices moved
      changed = true;
    }
    if (!changed) return Status::ok();
    QDQRT_RETURN_IF_ERROR(topological_sort(graph));
    remove_unused(graph);
    return infer_shapes(graph);
  }
};

}  // namespace

std::unique_ptr<Pass> make_slice_gathered_parts_pass() { return std::make_unique<SliceGatheredPartsPass>(); }

}  // namespace qdqrt::optimizer
