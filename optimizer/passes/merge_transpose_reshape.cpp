#include "optimizer/passes/merge_transpose_reshape.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/attribute_values.h"
#include "core/ops/tensor.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

// A dim the same at every shape: a constant expression, or (before shape inference has given it
// one) a static dim the file does not name (fixed_dim's rule).
std::optional<int64_t> fixed_value(const Dim& dim) {
  const bool fixed = dim.expr.known() ? dim.expr.is_constant() : dim.symbol.empty();
  if (!fixed || !dim.is_static()) return std::nullopt;
  return dim.value;
}

// A value's dims at `values` of the dynamic dims; nullopt when a dynamic dim has no expression.
std::optional<Shape> probe_shape(const ValueInfo* info, const SymbolValues& values) {
  if (info == nullptr || !info->shape) return std::nullopt;
  Shape shape;
  for (const Dim& dim : *info->shape) {
    std::optional<int64_t> value = fixed_value(dim);
    // A dim the file names but shape inference has not followed is that symbol.
    if (!value) value = dim.expr.known() ? dim.expr.evaluate(values) : DimExpr::symbol(dim.symbol).evaluate(values);
    if (!value || *value < 0) return std::nullopt;
    shape.push_back(*value);
  }
  return shape;
}

// Whether x (dims `x`) -> Transpose(first) -> Reshape(to `reshaped`) -> Transpose(second) puts
// every value where a Reshape of x does. The dims are split into "atoms", runs of x's memory that
// move together: each dim of x is one; a Reshape that cuts an atom splits it (its major part
// first, in x's order too); the Reshape must then make each of its dims out of whole, adjacent
// atoms. It only reshapes when the last Transpose leaves the atoms in x's order.
bool only_reshapes(const Shape& x, const std::vector<int64_t>& first, const Shape& reshaped,
                   const std::vector<int64_t>& second) {
  if (first.size() != x.size() || second.size() != reshaped.size()) return false;
  std::vector<int64_t> sizes;                // per atom
  std::vector<int> order;                    // atoms in x's memory order
  std::vector<std::vector<int>> dims(x.size());
  for (size_t a = 0; a < x.size(); ++a) {
    if (x[a] == 1) continue;  // a dim of 1 moves nothing
    dims[a] = {static_cast<int>(sizes.size())};
    order.push_back(static_cast<int>(sizes.size()));
    sizes.push_back(x[a]);
  }
  std::vector<int> flat;  // atoms in the first Transpose's output order
  for (int64_t axis : first) {
    if (axis < 0 || axis >= static_cast<int64_t>(x.size())) return false;
    const std::vector<int>& atoms = dims[static_cast<size_t>(axis)];
    flat.insert(flat.end(), atoms.begin(), atoms.end());
  }
  std::vector<std::vector<int>> out_dims(reshaped.size());
  size_t position = 0;
  for (size_t k = 0; k < reshaped.size(); ++k) {
    int64_t need = reshaped[k];
    if (need < 1) return false;
    while (need > 1) {
      if (position == flat.size()) return false;
      const int atom = flat[position];
      const int64_t size = sizes[static_cast<size_t>(atom)];
      if (size <= need) {
        if (need % size != 0) return false;
        need /= size;
        out_dims[k].push_back(atom);
        ++position;
        continue;
      }
      if (size % need != 0) return false;
      // Split the atom: its major part (`need` values) ends this dim, the minor part starts the next.
      const int major = static_cast<int>(sizes.size()), minor = major + 1;
      sizes.push_back(need);
      sizes.push_back(size / need);
      auto at = std::find(order.begin(), order.end(), atom);
      *at = minor;
      order.insert(at, major);
      flat[position] = minor;
      out_dims[k].push_back(major);
      need = 1;
    }
  }
  if (position != flat.size()) return false;
  std::vector<int> result;
  for (int64_t axis : second) {
    if (axis < 0 || axis >= static_cast<int64_t>(out_dims.size())) return false;
    const std::vector<int>& atoms = out_dims[static_cast<size_t>(axis)];
    result.insert(result.end(), atoms.begin(), atoms.end());
  }
  return result == order;
}

// The Reshape's target: the last Transpose's output dims, -1 for the one that depends on the
// dynamic dims; nullopt when two do or one is unknown.
std::optional<std::vector<int64_t>> reshape_target(const ValueInfo* output) {
  if (output == nullptr || !output->shape) return std::nullopt;
  std::vector<int64_t> target;
  bool dynamic = false;
  for (const Dim& dim : *output->shape) {
    const std::optional<int64_t> value = fixed_value(dim);
    if (value) {
      target.push_back(*value);
      continue;
    }
    if (dynamic) return std::nullopt;
    dynamic = true;
    target.push_back(-1);
  }
  return target;
}

class MergeTransposeReshapePass : public Pass {
 public:
  std::string name() const override { return "merge_transpose_reshape"; }
  // The lowered depthwise 3-D convs' transposes are what it meets in MViT.
  std::vector<std::string> must_run_after() const override { return {"lower_conv3d"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    std::optional<ValueIndex> index;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (!index) index.emplace(graph);
      const Node& last = graph.nodes[i];
      const std::optional<std::vector<int64_t>> second = explicit_transpose_perm(last);
      if (!second) continue;
      const int reshape_index = index->producer(last.input(0));
      if (reshape_index < 0 || !index->has_single_use(last.input(0))) continue;
      const Node& reshape = graph.nodes[static_cast<size_t>(reshape_index)];
      if (!reshape.domain.empty() || reshape.op_type != "Reshape" || reshape.outputs.size() != 1) continue;
      const int first_index = index->producer(reshape.input(0));
      if (first_index < 0 || !index->has_single_use(reshape.input(0))) continue;
      const Node& first_node = graph.nodes[static_cast<size_t>(first_index)];
      const std::optional<std::vector<int64_t>> first = explicit_transpose_perm(first_node);
      if (!first) continue;
      const ValueInfo* x_info = graph.find_value(first_node.input(0));
      const ValueInfo* reshaped_info = graph.find_value(reshape.outputs[0]);
      std::optional<std::vector<int64_t>> target = reshape_target(graph.find_value(last.outputs[0]));
      if (!target) continue;
      // Every dynamic dim at two probe values (multiples of the small factors a head or frame
      // count divides out): both must only reshape.
      bool reshapes = x_info != nullptr && x_info->shape.has_value();
      for (int64_t probe : {840, 2520}) {
        if (!reshapes) break;
        SymbolValues values;
        for (const Dim& dim : *x_info->shape) {
          for (const std::string& symbol : dim.expr.symbols()) values[symbol] = probe;
          if (!dim.expr.known() && !dim.symbol.empty()) values[dim.symbol] = probe;
        }
        const std::optional<Shape> x = probe_shape(x_info, values), reshaped = probe_shape(reshaped_info, values);
        reshapes = x && reshaped && only_reshapes(*x, *first, *reshaped, *second);
      }
      if (!reshapes) continue;
      const std::string x = first_node.input(0);
      const std::string shape = add_initializer(graph, last.name + "/merged_shape",
                                                Tensor::from_vector<int64_t>({static_cast<int64_t>(target->size())},
                                                                             *target));
      Node& replaced = graph.nodes[i];
      QDQRT_ASSIGN_OR_RETURN(Node merged, make_onnx_node(replaced, "Reshape", replaced.name, {x, shape},
                                                         replaced.outputs[0], {}));
      replaced = std::move(merged);
      index.reset();
      changed = true;
    }
    if (!changed) return Status::ok();
    remove_unused(graph);
    return infer_shapes(graph);
  }
};

}  // namespace

std::unique_ptr<Pass> make_merge_transpose_reshape_pass() { return std::make_unique<MergeTransposeReshapePass>(); }

}  // namespace qdqrt::optimizer
