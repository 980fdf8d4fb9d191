#include "optimizer/passes/lower_box_scatter.h"

#include <map>

#include <fmt/format.h>

#include "core/attribute_values.h"
#include "core/dim_expr.h"
#include "core/ops/scatter.h"
#include "core/ops/tensor.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

// The box a ScatterND overwrites: offset and extent on each of its first k axes.
struct Box {
  int node = -1;
  Shape data_shape;
  std::vector<int64_t> offset, extent;
};

bool is_box_scatter_node(const Node& node) {
  if (!node.domain.empty() || node.op_type != "ScatterND" || node.inputs.size() != 3 || node.outputs.size() != 1) {
    return false;
  }
  const auto* attributes = dynamic_cast<const ScatterNDAttributes*>(node.typed_attributes.get());
  return attributes != nullptr && attributes->reduction == ScatterReduction::kNone;
}

// Whether the constant indices [u0, ..., u(k-1), k] enumerate data[o0:o0+u0, ...] in order; fills
// box.offset and box.extent.
bool enumerates_box(const Tensor& indices, const Shape& data_shape, Box& box) {
  if (indices.dtype() != DataType::kInt64 || indices.rank() < 2) return false;
  const int64_t k = indices.shape().back();
  if (k < 1 || k > static_cast<int64_t>(data_shape.size()) || indices.rank() != k + 1) return false;
  const std::span<const int64_t> values = indices.values<int64_t>();
  if (values.empty()) return false;
  box.offset.assign(static_cast<size_t>(k), 0);
  box.extent.assign(indices.shape().begin(), indices.shape().end() - 1);
  auto normalized = [&](int64_t value, int64_t axis) {
    return value < 0 ? value + data_shape[static_cast<size_t>(axis)] : value;
  };
  for (int64_t axis = 0; axis < k; ++axis) {
    box.offset[static_cast<size_t>(axis)] = normalized(values[static_cast<size_t>(axis)], axis);
    const int64_t end = box.offset[static_cast<size_t>(axis)] + box.extent[static_cast<size_t>(axis)];
    if (box.offset[static_cast<size_t>(axis)] < 0 || end > data_shape[static_cast<size_t>(axis)]) return false;
  }
  // Walk the positions in row-major order: position p's index vector must be offset + p.
  std::vector<int64_t> position(static_cast<size_t>(k), 0);
  for (size_t at = 0; at < values.size(); at += static_cast<size_t>(k)) {
    for (int64_t axis = 0; axis < k; ++axis) {
      const size_t a = static_cast<size_t>(axis);
      if (normalized(values[at + a], axis) != box.offset[a] + position[a]) return false;
    }
    for (int64_t axis = k - 1; axis >= 0; --axis) {
      const size_t a = static_cast<size_t>(axis);
      if (++position[a] < box.extent[a]) break;
      position[a] = 0;
    }
  }
  return true;
}

// The axes of an Unsqueeze (attribute, or constant input from opset 13); nullopt when not known.
std::optional<std::vector<int64_t>> unsqueeze_axes(const Graph& graph, const Node& node) {
  const auto* attributes = dynamic_cast<const UnsqueezeAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return std::nullopt;
  if (!attributes->axes_from_input) return attributes->axes;
  const Tensor* axes = find_constant(graph, node.input(1));
  if (axes == nullptr || axes->dtype() != DataType::kInt64) return std::nullopt;
  const std::span<const int64_t> values = axes->values<int64_t>();
  return std::vector<int64_t>(values.begin(), values.end());
}

// Whether two dims' expressions have equal values at two probe values of their symbols (shape
// inference leaves forms such as max(max(N, 0), N) that same_as does not equate with N).
bool equal_at_probes(const DimExpr& a, const DimExpr& b) {
  if (!a.known() || !b.known()) return false;
  std::vector<std::string> symbols = a.symbols();
  const std::vector<std::string> more = b.symbols();
  symbols.insert(symbols.end(), more.begin(), more.end());
  for (int64_t probe : {840, 2521}) {
    SymbolValues values;
    for (size_t i = 0; i < symbols.size(); ++i) values[symbols[i]] = probe * static_cast<int64_t>(i + 1) + 1;
    const std::optional<int64_t> x = a.evaluate(values), y = b.evaluate(values);
    if (!x || !y || *x != *y) return false;
  }
  return true;
}

// Whether the values of `run` (the index along `axis` at consecutive positions) are the box's:
// offset, offset + 1, ... (negative values count from the end); sets the axis's offset.
bool consecutive(std::span<const int64_t> run, size_t axis, const Shape& data_shape, Box& box) {
  if (run.empty()) return false;
  auto normalized = [&](int64_t value) { return value < 0 ? value + data_shape[axis] : value; };
  box.offset[axis] = normalized(run[0]);
  if (box.offset[axis] < 0 || box.offset[axis] + static_cast<int64_t>(run.size()) > data_shape[axis]) return false;
  for (size_t i = 0; i < run.size(); ++i) {
    if (normalized(run[i]) != box.offset[axis] + static_cast<int64_t>(i)) return false;
  }
  return true;
}

// torch's indices of an in-place slice write: Concat(last axis) of k components of the box's shape
// t plus a last axis of 1, component j the index along axis j. Each is Unsqueeze(last axis) of
// Expand(m_j, shape), m_j a constant whose values run along axis j only (a Range reshaped there);
// the Expands stay runtime nodes when their shape follows the batch (fold_constants keeps them),
// so t is the Expand's inferred shape. A component fold_constants did fold is checked value by
// value. `follows[j]`: the extent on axis j follows the engine's shapes as the data's dim does
// (the Expand's dim has the data dim's expression, or the constant was computed from runtime shapes).
bool meshgrid_box(const Graph& graph, const PassContext& context, const ValueIndex& index, const std::string& indices,
                  const std::vector<Dim>& data_dims, const Shape& data_shape, Box& box, std::vector<bool>& follows) {
  const int concat_at = index.producer(indices);
  if (concat_at < 0) return false;
  const Node& concat = graph.nodes[static_cast<size_t>(concat_at)];
  const auto* concat_attributes = dynamic_cast<const ConcatAttributes*>(concat.typed_attributes.get());
  if (!concat.domain.empty() || concat.op_type != "Concat" || concat_attributes == nullptr) return false;
  const int64_t k = static_cast<int64_t>(concat.inputs.size());
  if (k < 1 || k > static_cast<int64_t>(data_shape.size()) ||
      (concat_attributes->axis != -1 && concat_attributes->axis != k)) {
    return false;
  }
  const ValueInfo* indices_info = graph.find_value(indices);
  const std::optional<Shape> indices_shape = indices_info ? indices_info->static_shape() : std::nullopt;
  if (!indices_shape || static_cast<int64_t>(indices_shape->size()) != k + 1) return false;
  const Shape target(indices_shape->begin(), indices_shape->end() - 1);
  box.offset.assign(static_cast<size_t>(k), 0);
  box.extent = target;
  follows.assign(static_cast<size_t>(k), false);
  for (int64_t j = 0; j < k; ++j) {
    const size_t axis = static_cast<size_t>(j);
    const std::string& component = concat.input(axis);
    if (const Tensor* values = find_constant(graph, component)) {
      // Folded: [t..., 1], the index along axis j at every position.
      Shape expected = target;
      expected.push_back(1);
      if (values->dtype() != DataType::kInt64 || values->shape() != expected) return false;
      const std::span<const int64_t> all = values->values<int64_t>();
      int64_t inner = 1;
      for (size_t e = axis + 1; e < target.size(); ++e) inner *= target[e];
      std::vector<int64_t> run;
      for (int64_t i = 0; i < target[axis]; ++i) run.push_back(all[static_cast<size_t>(i * inner)]);
      if (!consecutive(run, axis, data_shape, box)) return false;
      for (size_t at = 0; at < all.size(); ++at) {
        if (all[at] != run[static_cast<size_t>(static_cast<int64_t>(at) / inner % target[axis])]) return false;
      }
      const ValueInfo* info = graph.find_value(component);
      follows[axis] = context.folded_from_runtime_shapes.count(component) > 0 || (info && info->from_runtime_shapes);
      continue;
    }
    const int unsqueeze_at = index.producer(component);
    if (unsqueeze_at < 0) return false;
    const Node& unsqueeze = graph.nodes[static_cast<size_t>(unsqueeze_at)];
    if (!unsqueeze.domain.empty() || unsqueeze.op_type != "Unsqueeze") return false;
    const std::optional<std::vector<int64_t>> axes = unsqueeze_axes(graph, unsqueeze);
    if (!axes || axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != k)) return false;
    const int expand_at = index.producer(unsqueeze.input(0));
    if (expand_at < 0) return false;
    const Node& expand = graph.nodes[static_cast<size_t>(expand_at)];
    const ValueInfo* expanded = graph.find_value(expand.outputs[0]);
    if (!expand.domain.empty() || expand.op_type != "Expand" || expanded == nullptr || !expanded->shape ||
        expanded->static_shape() != target) {
      return false;
    }
    const Tensor* values = find_constant(graph, expand.input(0));
    if (values == nullptr || values->dtype() != DataType::kInt64 || values->rank() > k) return false;
    // m_j right-aligned to the target: 1 on every axis but j, the target's extent on j.
    const int64_t lead = k - values->rank();
    for (int64_t other = 0; other < k; ++other) {
      const int64_t dim = other < lead ? 1 : values->dim(other - lead);
      if (dim != (other == j ? target[static_cast<size_t>(other)] : 1)) return false;
    }
    if (!consecutive(values->values<int64_t>(), axis, data_shape, box)) return false;
    follows[axis] = equal_at_probes((*expanded->shape)[axis].expr, data_dims[axis].expr);
  }
  return true;
}

std::optional<Box> select(const Graph& graph, const PassContext& context, const ValueIndex& index, int at) {
  const Node& node = graph.nodes[static_cast<size_t>(at)];
  if (!is_box_scatter_node(node)) return std::nullopt;
  const ValueInfo* data = graph.find_value(node.input(0));
  const ValueInfo* updates = graph.find_value(node.input(2));
  if (data == nullptr || updates == nullptr || !data->shape || !updates->shape) return std::nullopt;
  const std::optional<Shape> data_shape = data->static_shape();
  const std::optional<Shape> updates_shape = updates->static_shape();
  if (!data_shape || !updates_shape) return std::nullopt;
  Box box{.node = at, .data_shape = *data_shape};
  std::vector<bool> follows;
  if (const Tensor* indices = find_constant(graph, node.input(1))) {
    if (!enumerates_box(*indices, *data_shape, box)) return std::nullopt;
    const ValueInfo* indices_info = graph.find_value(node.input(1));
    follows.assign(box.extent.size(), context.folded_from_runtime_shapes.count(node.input(1)) > 0 ||
                                          (indices_info != nullptr && indices_info->from_runtime_shapes));
  } else if (!meshgrid_box(graph, context, index, node.input(1), *data->shape, *data_shape, box, follows)) {
    return std::nullopt;
  }
  // updates: the box's extents, then the data's trailing dims.
  Shape expected = box.extent;
  expected.insert(expected.end(), data_shape->begin() + static_cast<int64_t>(box.extent.size()), data_shape->end());
  if (*updates_shape != expected) return std::nullopt;
  for (size_t axis = 0; axis < box.extent.size(); ++axis) {
    if (fixed_dim(data, data_shape->size(), axis)) continue;
    // A dim that changes with the engine's shapes: the box must span it, and follow it.
    const bool whole = box.offset[axis] == 0 && box.extent[axis] == (*data_shape)[axis];
    if (!whole || !follows[axis]) return std::nullopt;
  }
  return box;
}

// Whether an Expand's output has its input's static shape (torch expands index_put's values to
// the indices' shape, which they have already).
bool same_shape_expand(const Graph& graph, const Node& node) {
  if (node.op_type != "Expand") return false;
  const ValueInfo* in = graph.find_value(node.input(0));
  const ValueInfo* out = graph.find_value(node.outputs[0]);
  if (in == nullptr || out == nullptr) return false;
  const std::optional<Shape> in_shape = in->static_shape(), out_shape = out->static_shape();
  return in_shape && out_shape && *in_shape == *out_shape;
}

// The value `value` is a row-major view of: followed up through Reshape, Flatten, Squeeze,
// Unsqueeze, Identity and an Expand to the same shape (each keeps the values in order), so two
// views of one value with equal shapes hold the same values.
std::string row_major_source(const Graph& graph, const ValueIndex& index, std::string value) {
  for (int hops = 0; hops < 64; ++hops) {
    const int at = index.producer(value);
    if (at < 0) break;
    const Node& node = graph.nodes[static_cast<size_t>(at)];
    if (!node.domain.empty() || node.inputs.empty() || node.outputs.size() != 1) break;
    const bool view = node.op_type == "Reshape" || node.op_type == "Flatten" || node.op_type == "Squeeze" ||
                      node.op_type == "Unsqueeze" || node.op_type == "Identity" || same_shape_expand(graph, node);
    if (!view) break;
    value = node.input(0);
  }
  return value;
}

// What a lowered ScatterND wrote: its box over every axis of the data (indices of k axes write
// the trailing ones whole) and the value its updates view.
struct Written {
  Shape data_shape;
  std::vector<int64_t> offset, extent;
  std::string updates_source;

  Written(const Box& box, std::string source)
      : data_shape(box.data_shape), offset(box.offset), extent(box.extent), updates_source(std::move(source)) {
    for (size_t axis = box.offset.size(); axis < data_shape.size(); ++axis) {
      offset.push_back(0);
      extent.push_back(data_shape[axis]);
    }
  }
  bool operator==(const Written& other) const {
    return data_shape == other.data_shape && offset == other.offset && extent == other.extent &&
           updates_source == other.updates_source;
  }
};

// The ScatterND writes what the lowered one that made its data wrote there already (torch exports
// `x[box] += u` as two ScatterND, the second writing the first's updates again): its output is its
// data (an Identity when its output is a graph output).
Status drop_repeated_write(Graph& graph, const Box& box, bool graph_output) {
  const Node scatter = graph.nodes[static_cast<size_t>(box.node)];
  if (graph_output) {
    QDQRT_ASSIGN_OR_RETURN(graph.nodes[static_cast<size_t>(box.node)],
                           make_onnx_node(scatter, "Identity", scatter.name, {scatter.input(0)}, scatter.outputs[0]));
    return Status::ok();
  }
  replace_uses(graph, scatter.outputs[0], scatter.input(0));
  graph.nodes.erase(graph.nodes.begin() + box.node);
  return Status::ok();
}

Status rewrite(Graph& graph, const Box& box) {
  const Node scatter = graph.nodes[static_cast<size_t>(box.node)];
  const std::string& data = scatter.input(0);
  const DataType dtype = graph.find_value(data)->dtype;
  std::vector<size_t> partial;  // the axes the box does not span whole
  for (size_t axis = 0; axis < box.extent.size(); ++axis) {
    if (box.offset[axis] != 0 || box.extent[axis] != box.data_shape[axis]) partial.push_back(axis);
  }
  std::vector<Node> added;
  // data sliced to the box on `outer` axes and to [begin, end) on `axis`.
  auto slice_data = [&](size_t level, int64_t begin, int64_t end) -> Result<std::string> {
    std::vector<int64_t> starts, ends, axes;
    for (size_t i = 0; i <= level; ++i) {
      const size_t axis = partial[i];
      axes.push_back(static_cast<int64_t>(axis));
      starts.push_back(i == level ? begin : box.offset[axis]);
      ends.push_back(i == level ? end : box.offset[axis] + box.extent[axis]);
    }
    const std::string base = fmt::format("{}_around{}", scatter.outputs[0], added.size());
    const int64_t count = static_cast<int64_t>(axes.size());
    const std::string starts_name = add_initializer(graph, base + "_starts", Tensor::from_vector<int64_t>({count}, starts));
    const std::string ends_name = add_initializer(graph, base + "_ends", Tensor::from_vector<int64_t>({count}, ends));
    const std::string axes_name = add_initializer(graph, base + "_axes", Tensor::from_vector<int64_t>({count}, axes));
    const std::string sliced = add_value(graph, base, dtype);
    QDQRT_ASSIGN_OR_RETURN(Node slice, make_onnx_node(scatter, "Slice", unique_node_name(graph, scatter.name + "/slice"),
                                                      {data, starts_name, ends_name, axes_name}, sliced));
    added.push_back(std::move(slice));
    return sliced;
  };
  std::string built = scatter.input(2);
  for (size_t level = partial.size(); level-- > 0;) {
    const size_t axis = partial[level];
    std::vector<std::string> pieces;
    if (box.offset[axis] > 0) {
      QDQRT_ASSIGN_OR_RETURN(std::string before, slice_data(level, 0, box.offset[axis]));
      pieces.push_back(before);
    }
    pieces.push_back(built);
    const int64_t box_end = box.offset[axis] + box.extent[axis];
    if (box_end < box.data_shape[axis]) {
      QDQRT_ASSIGN_OR_RETURN(std::string after, slice_data(level, box_end, box.data_shape[axis]));
      pieces.push_back(after);
    }
    const std::string joined = level == 0 ? scatter.outputs[0] : add_value(graph, fmt::format("{}_axis{}", scatter.outputs[0], axis), dtype);
    QDQRT_ASSIGN_OR_RETURN(Node concat, make_onnx_node(scatter, "Concat", unique_node_name(graph, scatter.name + "/concat"),
                                                       pieces, joined, {{"axis", int_attribute(static_cast<int64_t>(axis))}}));
    added.push_back(std::move(concat));
    built = joined;
  }
  if (partial.empty()) {  // the box is the whole data: the output is the updates
    QDQRT_ASSIGN_OR_RETURN(Node identity, make_onnx_node(scatter, "Identity", scatter.name, {scatter.input(2)},
                                                         scatter.outputs[0]));
    added.push_back(std::move(identity));
  }
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size() + added.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (static_cast<int>(i) == box.node) {
      nodes.insert(nodes.end(), std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
    } else {
      nodes.push_back(std::move(graph.nodes[i]));
    }
  }
  graph.nodes = std::move(nodes);
  return Status::ok();
}

class LowerBoxScatterPass : public Pass {
 public:
  std::string name() const override { return "lower_box_scatter"; }
  // torch's indices are meshgrids of Ranges over the data's shape: constants only once evaluated.
  std::vector<std::string> must_run_after() const override { return {"evaluate_shape_computations"}; }

  Status run(Graph& graph, PassContext& context) override {
    bool changed = false;
    std::optional<ValueIndex> index;
    std::map<std::string, Written> written;  // by the output of each lowered ScatterND
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (!index) index.emplace(graph);
      std::optional<Box> box = select(graph, context, *index, static_cast<int>(i));
      if (!box) continue;
      const Node& scatter = graph.nodes[i];
      Written write(*box, row_major_source(graph, *index, scatter.input(2)));
      const bool graph_output = index->is_graph_output(scatter.outputs[0]);
      index.reset();  // the rewrite moves the nodes
      changed = true;
      const auto earlier = written.find(scatter.input(0));
      if (earlier != written.end() && earlier->second == write) {
        const size_t before = graph.nodes.size();
        QDQRT_RETURN_IF_ERROR(drop_repeated_write(graph, *box, graph_output));
        if (graph.nodes.size() < before) --i;  // the next node moved to i
        continue;
      }
      const std::string output = scatter.outputs[0];
      const size_t before = graph.nodes.size();
      QDQRT_RETURN_IF_ERROR(rewrite(graph, *box));
      written.insert_or_assign(output, std::move(write));
      i += graph.nodes.size() - before;  // past the nodes that replaced it
    }
    if (changed) remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_lower_box_scatter_pass() { return std::make_unique<LowerBoxScatterPass>(); }

}  // namespace qdqrt::optimizer
