#include "optimizer/passes/split_sliced_projection.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ops/quantize.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

// One Slice of the packed value: the columns [begin, end) of the weight it reads.
struct SlicePart {
  int slice = -1;  // node index
  int64_t begin = 0, end = 0;
};

// What the selector found (indices into graph.nodes); the action rewrites it.
struct SlicedProjection {
  int matmul = -1;
  int weight_dq = -1;         // the DequantizeLinear of an 8-bit constant weight; -1: a float constant
  int add = -1;               // -1: no bias Add
  size_t bias_side = 1;       // the Add's operand holding the bias
  std::vector<SlicePart> parts;
};

// The single integer of a constant 1-element input; nullopt otherwise.
std::optional<int64_t> single_int(const Graph& graph, const Node& node, size_t i) {
  if (!node.has_input(i)) return std::nullopt;
  const Tensor* tensor = find_constant(graph, node.input(i));
  if (tensor == nullptr || tensor->numel() != 1) return std::nullopt;
  if (tensor->dtype() == DataType::kInt64) return tensor->data<int64_t>()[0];
  if (tensor->dtype() == DataType::kInt32) return tensor->data<int32_t>()[0];
  return std::nullopt;
}

// ONNX's Slice bound on an axis of `size` (negative from the end, clamped), step 1.
int64_t slice_bound(int64_t bound, int64_t size) {
  if (bound < 0) bound = std::max<int64_t>(bound, -size) + size;
  return std::min(bound, size);
}

// A bias the Slices can cut with the weight: [N], [1, ..., 1, N], or a scalar (kept whole).
bool sliceable_bias(const Tensor& bias, int64_t n) {
  if (bias.dtype() != DataType::kFloat) return false;
  if (bias.numel() == 1) return true;
  const Shape& shape = bias.shape();
  if (shape.empty() || shape.back() != n) return false;
  return std::all_of(shape.begin(), shape.end() - 1, [](int64_t dim) { return dim == 1; });
}

bool is_onnx(const Node& node, const char* op_type) { return node.domain.empty() && node.op_type == op_type; }

// A quantized weight DQ(W [K, N] 8-bit constant, scale, zero-point) read only by the MatMul, per
// tensor or per column (axis 1): its columns split with their scales and zero-points. Returns N.
std::optional<int64_t> dequantized_weight_columns(const Graph& graph, const ValueIndex& index, const Node& dq) {
  if (!is_onnx(dq, "DequantizeLinear") || dq.outputs.size() != 1 || !index.has_single_use(dq.outputs[0])) {
    return std::nullopt;
  }
  const Tensor* weight = find_constant(graph, dq.input(0));
  const Tensor* scale = find_constant(graph, dq.input(1));
  const Tensor* zero_point = dq.has_input(2) ? find_constant(graph, dq.input(2)) : nullptr;
  if (weight == nullptr || weight->rank() != 2 || dtype_size(weight->dtype()) != 1 || scale == nullptr ||
      (dq.has_input(2) && zero_point == nullptr)) {
    return std::nullopt;
  }
  const auto* attributes = dynamic_cast<const DequantizeLinearAttributes*>(dq.typed_attributes.get());
  if (attributes == nullptr || attributes->block_size != 0) return std::nullopt;
  const int64_t n = weight->dim(1);
  if (scale->numel() == 1 && (zero_point == nullptr || zero_point->numel() == 1)) return n;  // per tensor
  const bool per_column = attributes->axis == 1 || attributes->axis == -1;
  if (!per_column || scale->rank() != 1 || scale->numel() != n ||
      (zero_point != nullptr && (zero_point->rank() != 1 || zero_point->numel() != n))) {
    return std::nullopt;
  }
  return n;
}

std::optional<SlicedProjection> select(const Graph& graph, const ValueIndex& index, int matmul_index) {
  const Node& matmul = graph.nodes[static_cast<size_t>(matmul_index)];
  if (!is_onnx(matmul, "MatMul") || matmul.inputs.size() != 2 || matmul.outputs.size() != 1) return std::nullopt;
  if (find_constant(graph, matmul.input(0)) != nullptr) return std::nullopt;
  SlicedProjection found;
  int64_t n = 0;
  if (const Tensor* weight = find_constant(graph, matmul.input(1))) {
    if (weight->dtype() != DataType::kFloat || weight->rank() != 2) return std::nullopt;
    n = weight->dim(1);
  } else {
    const int producer = index.producer(matmul.input(1));
    if (producer < 0) return std::nullopt;
    std::optional<int64_t> columns = dequantized_weight_columns(graph, index, graph.nodes[static_cast<size_t>(producer)]);
    if (!columns) return std::nullopt;
    n = *columns;
    found.weight_dq = producer;
  }
  const ValueInfo* x = graph.find_value(matmul.input(0));
  if (x == nullptr || !x->shape || x->shape->size() < 2) return std::nullopt;  // a vector x drops the axis
  const int64_t rank = static_cast<int64_t>(x->shape->size());
  found.matmul = matmul_index;
  std::string packed = matmul.outputs[0];
  if (index.has_single_use(packed)) {
    const int reader = index.consumers(packed)[0];
    const Node& add = graph.nodes[static_cast<size_t>(reader)];
    if (is_onnx(add, "Add") && add.inputs.size() == 2 && add.outputs.size() == 1) {
      const size_t bias_side = add.input(0) == packed ? 1 : 0;
      const Tensor* bias = find_constant(graph, add.input(bias_side));
      if (bias != nullptr && add.input(1 - bias_side) == packed && sliceable_bias(*bias, n) &&
          static_cast<int64_t>(bias->rank()) <= rank) {
        found.add = reader;
        found.bias_side = bias_side;
        packed = add.outputs[0];
      }
    }
  }
  if (index.is_graph_output(packed) || index.consumers(packed).empty()) return std::nullopt;
  std::set<int> seen;
  for (int reader : index.consumers(packed)) {
    if (!seen.insert(reader).second) return std::nullopt;  // a node reading it twice
    const Node& slice = graph.nodes[static_cast<size_t>(reader)];
    if (!is_onnx(slice, "Slice") || slice.input(0) != packed || slice.outputs.size() != 1) return std::nullopt;
    const std::optional<int64_t> begin = single_int(graph, slice, 1), end = single_int(graph, slice, 2);
    const std::optional<int64_t> axis = single_int(graph, slice, 3);
    if (!begin || !end || !axis || (*axis != -1 && *axis != rank - 1)) return std::nullopt;
    if (slice.has_input(4) && single_int(graph, slice, 4) != 1) return std::nullopt;
    SlicePart part{.slice = reader, .begin = slice_bound(*begin, n), .end = slice_bound(*end, n)};
    if (part.end <= part.begin) return std::nullopt;  // an empty slice: nothing to project
    found.parts.push_back(part);
  }
  return found;
}

// Columns [begin, end) of a constant whose last axis has `n` elements ([K, N] weight, [..., N]
// bias or per-column scales), any element type.
Tensor columns(const Tensor& tensor, int64_t begin, int64_t end) {
  Shape shape = tensor.shape();
  const int64_t n = shape.back();
  const int64_t rows = tensor.numel() / n;
  shape.back() = end - begin;
  Tensor part(tensor.dtype(), shape);
  const size_t element = dtype_size(tensor.dtype());
  const auto* from = static_cast<const uint8_t*>(tensor.raw_data());
  auto* to = static_cast<uint8_t*>(part.raw_data());
  for (int64_t row = 0; row < rows; ++row) {
    std::memcpy(to + static_cast<size_t>(row * (end - begin)) * element,
                from + static_cast<size_t>(row * n + begin) * element, static_cast<size_t>(end - begin) * element);
  }
  return part;
}

// A per-column scale or zero-point cut to [begin, end); a per-tensor one kept.
std::string columns_of_parameter(Graph& graph, const std::string& name, const std::string& suffix, int64_t begin,
                                 int64_t end) {
  const Tensor* tensor = find_constant(graph, name);
  if (tensor == nullptr || tensor->numel() == 1) return name;
  return add_initializer(graph, name + suffix, columns(*tensor, begin, end));
}

// The projection per Slice, each writing the Slice's output; the packed nodes are dropped.
Status split(Graph& graph, const SlicedProjection& found) {
  const Node matmul = graph.nodes[static_cast<size_t>(found.matmul)];
  std::optional<Node> dq;
  if (found.weight_dq >= 0) dq = graph.nodes[static_cast<size_t>(found.weight_dq)];
  const Tensor weight = *find_constant(graph, dq ? dq->input(0) : matmul.input(1));
  std::optional<Node> add;
  std::optional<Tensor> bias;
  if (found.add >= 0) {
    add = graph.nodes[static_cast<size_t>(found.add)];
    bias = *find_constant(graph, add->input(found.bias_side));
  }
  std::vector<Node> added;
  std::set<int> dropped = {found.matmul, found.add, found.weight_dq};
  for (const SlicePart& part : found.parts) {
    const Node& slice = graph.nodes[static_cast<size_t>(part.slice)];
    dropped.insert(part.slice);
    const std::string suffix = fmt::format("_{}_{}", part.begin, part.end);
    std::string part_weight =
        add_initializer(graph, (dq ? dq->input(0) : matmul.input(1)) + suffix, columns(weight, part.begin, part.end));
    if (dq) {
      // The part's DequantizeLinear: its columns of the weight, scales and zero-points.
      Node part_dq = *dq;
      part_dq.name = unique_node_name(graph, dq->name + suffix);
      part_dq.inputs[0] = part_weight;
      part_dq.inputs[1] = columns_of_parameter(graph, dq->input(1), suffix, part.begin, part.end);
      if (dq->has_input(2)) part_dq.inputs[2] = columns_of_parameter(graph, dq->input(2), suffix, part.begin, part.end);
      part_weight = add_value(graph, dq->outputs[0] + suffix, DataType::kFloat);
      part_dq.outputs = {part_weight};
      added.push_back(std::move(part_dq));
    }
    const std::string product = add ? add_value(graph, matmul.outputs[0] + suffix, DataType::kFloat) : slice.outputs[0];
    QDQRT_ASSIGN_OR_RETURN(Node part_matmul,
                           make_onnx_node(matmul, "MatMul", unique_node_name(graph, matmul.name + suffix),
                                          {matmul.input(0), part_weight}, product));
    added.push_back(std::move(part_matmul));
    if (!add) continue;
    std::string part_bias = add->input(found.bias_side);
    if (bias->numel() != 1) part_bias = add_initializer(graph, part_bias + suffix, columns(*bias, part.begin, part.end));
    std::vector<std::string> inputs(2);
    inputs[found.bias_side] = part_bias;
    inputs[1 - found.bias_side] = product;
    QDQRT_ASSIGN_OR_RETURN(Node part_add, make_onnx_node(*add, "Add", unique_node_name(graph, add->name + suffix),
                                                         std::move(inputs), slice.outputs[0]));
    added.push_back(std::move(part_add));
  }
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size() + added.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (static_cast<int>(i) == found.matmul) nodes.insert(nodes.end(), added.begin(), added.end());
    if (!dropped.count(static_cast<int>(i))) nodes.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(nodes);
  return Status::ok();
}

class SplitSlicedProjectionPass : public Pass {
 public:
  std::string name() const override { return "split_sliced_projection"; }
  // The Slices' starts and ends are constants only once the shape computations are evaluated.
  std::vector<std::string> must_run_after() const override { return {"evaluate_shape_computations"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    std::optional<ValueIndex> index;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (!index) index.emplace(graph);
      std::optional<SlicedProjection> found = select(graph, *index, static_cast<int>(i));
      if (!found) continue;
      QDQRT_RETURN_IF_ERROR(split(graph, *found));
      index.reset();  // node indices moved
      changed = true;
    }
    if (!changed) return Status::ok();
    remove_unused(graph);
    // The new values' dims (with their expressions) for the passes after this one.
    return infer_shapes(graph);
  }
};

}  // namespace

std::unique_ptr<Pass> make_split_sliced_projection_pass() { return std::make_unique<SplitSlicedProjectionPass>(); }

}  // namespace qdqrt::optimizer
