#include "optimizer/passes/lower_pool3d.h"

#include <optional>
#include <string>
#include <vector>

#include "core/attribute_values.h"
#include "core/ops/pool.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

// One axis of the window (0 = T, 1 = H, 2 = W), attributes resolved.
struct Axis {
  int64_t kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
  bool trivial() const { return kernel == 1 && stride == 1 && pad_begin == 0 && pad_end == 0; }
};

struct Geometry {
  Axis axes[3];
  int64_t channels, frames, height, width;    // input
  int64_t out_frames, out_height, out_width;  // output
};

std::optional<Geometry> geometry(const Graph& graph, const Node& pool) {
  const auto* attributes = dynamic_cast<const PoolAttributes*>(pool.typed_attributes.get());
  if (attributes == nullptr || attributes->kernel_shape.size() != 3) return std::nullopt;
  if (attributes->auto_pad != AutoPad::kNotSet && attributes->auto_pad != AutoPad::kValid) return std::nullopt;
  const ValueInfo* input = graph.find_value(pool.input(0));
  const ValueInfo* output = graph.find_value(pool.outputs[0]);
  if (input == nullptr || output == nullptr || input->dtype != DataType::kFloat) return std::nullopt;
  const std::optional<int64_t> dims[] = {fixed_dim(input, 5, 1),  fixed_dim(input, 5, 2),  fixed_dim(input, 5, 3),
                                         fixed_dim(input, 5, 4),  fixed_dim(output, 5, 1), fixed_dim(output, 5, 2),
                                         fixed_dim(output, 5, 3), fixed_dim(output, 5, 4)};
  for (const auto& dim : dims) {
    if (!dim) return std::nullopt;
  }
  Geometry g{};
  g.channels = *dims[0], g.frames = *dims[1], g.height = *dims[2], g.width = *dims[3];
  if (*dims[4] != g.channels) return std::nullopt;
  g.out_frames = *dims[5], g.out_height = *dims[6], g.out_width = *dims[7];
  const bool explicit_pads = attributes->auto_pad == AutoPad::kNotSet;
  for (size_t axis = 0; axis < 3; ++axis) {
    auto at = [&](const std::vector<int64_t>& values, size_t i, int64_t fallback) {
      return values.size() > i ? values[i] : fallback;
    };
    Axis& a = g.axes[axis];
    a.kernel = attributes->kernel_shape[axis];
    a.stride = at(attributes->strides, axis, 1);
    a.dilation = at(attributes->dilations, axis, 1);
    a.pad_begin = explicit_pads ? at(attributes->pads, axis, 0) : 0;
    a.pad_end = explicit_pads ? at(attributes->pads, axis + 3, 0) : 0;
  }
  return g;
}

Tensor int64_tensor(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

// A 2-D pool of the 3-D pool's kind over two of its axes (`a` along dim 2, `b` along dim 3).
AttributeMap pool2d_attributes(const Node& pool, const Axis& a, const Axis& b) {
  AttributeMap attributes = pool.attributes;
  attributes.erase("auto_pad");  // VALID is no pads: written explicitly below
  attributes["kernel_shape"] = ints_attribute({a.kernel, b.kernel});
  attributes["strides"] = ints_attribute({a.stride, b.stride});
  attributes["pads"] = ints_attribute({a.pad_begin, b.pad_begin, a.pad_end, b.pad_end});
  if (pool.attributes.count("dilations") != 0) attributes["dilations"] = ints_attribute({a.dilation, b.dilation});
  return attributes;
}

// Builds the nodes that replace one pool, in order.
class Lowering {
 public:
  Lowering(Graph& graph, const Node& pool) : graph_(graph), pool_(pool) {}

  // `output` empty: a fresh value. The last 2-D pool added keeps the 3-D pool's name (profiles and
  // layer info name the node of the file): `keep_name`.
  Result<std::string> add(const std::string& op_type, const std::string& suffix, std::vector<std::string> inputs,
                          AttributeMap attributes = {}, const std::string& output = {}, bool keep_name = false) {
    const std::string value =
        output.empty() ? add_value(graph_, pool_.name + "/" + suffix + "_output", DataType::kFloat) : output;
    const std::string name = keep_name ? pool_.name : unique_node_name(graph_, pool_.name + "/" + suffix);
    QDQRT_ASSIGN_OR_RETURN(Node node,
                           make_onnx_node(pool_, op_type, name, std::move(inputs), value, std::move(attributes)));
    added_.push_back(std::move(node));
    return added_.back().outputs[0];
  }
  Result<std::string> reshape(const std::string& suffix, const std::string& input, const std::vector<int64_t>& shape,
                              const std::string& output = {}) {
    const std::string name = add_initializer(graph_, pool_.name + "/" + suffix + "_shape", int64_tensor(shape));
    return add("Reshape", suffix, {input, name}, {}, output);
  }
  std::vector<Node>& added() { return added_; }

 private:
  Graph& graph_;
  const Node& pool_;
  std::vector<Node> added_;
};

Status lower(const Node& pool, const Geometry& g, Lowering& lowering) {
  const Axis& t = g.axes[0];
  const Axis& h = g.axes[1];
  const Axis& w = g.axes[2];
  const bool spatial = !h.trivial() || !w.trivial();
  const bool temporal = !t.trivial();
  std::string x = pool.input(0);
  if (spatial) {
    // Every frame of every channel is one [H, W] plane.
    QDQRT_ASSIGN_OR_RETURN(x, lowering.reshape("planes", x, {-1, g.channels * g.frames, g.height, g.width}));
    QDQRT_ASSIGN_OR_RETURN(x, lowering.add(pool.op_type, "spatial", {x}, pool2d_attributes(pool, h, w), {},
                                           /*keep_name=*/!temporal));
  }
  // The temporal window over [N, C, T, H'*W'] (H', W': the spatial pool's output, or the input's).
  const int64_t pixels = g.out_height * g.out_width;
  if (temporal) {
    QDQRT_ASSIGN_OR_RETURN(x, lowering.reshape("frames_by_pixels", x, {-1, g.channels, g.frames, pixels}));
    Axis pixel_axis;  // one tap, stride 1, no pads
    QDQRT_ASSIGN_OR_RETURN(x, lowering.add(pool.op_type, "temporal", {x}, pool2d_attributes(pool, t, pixel_axis), {},
                                           /*keep_name=*/true));
  }
  return lowering.reshape("to_5d", x, {-1, g.channels, g.out_frames, g.out_height, g.out_width}, pool.outputs[0])
      .status();
}

class LowerPool3dPass : public Pass {
 public:
  std::string name() const override { return "lower_pool3d"; }
  // A constant-zero Pad before an AveragePool is folded into its pads first.
  std::vector<std::string> must_run_after() const override { return {"fold_pad_into_pool"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node pool = graph.nodes[i];
      if (!pool.domain.empty() || (pool.op_type != "MaxPool" && pool.op_type != "AveragePool")) continue;
      // MaxPool's Indices output (flat offsets into the 3-D input) has no 2-D form.
      if (pool.outputs.empty() || (pool.outputs.size() == 2 && !pool.outputs[1].empty()) || pool.outputs.size() > 2 ||
          pool.inputs.size() != 1) {
        continue;
      }
      const std::optional<Geometry> g = geometry(graph, pool);
      if (!g) continue;
      Lowering lowering(graph, pool);
      graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i));  // frees the name
      QDQRT_RETURN_IF_ERROR(lower(pool, *g, lowering));
      std::vector<Node>& added = lowering.added();
      graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i), added.begin(), added.end());
      i += added.size() - 1;
      changed = true;
    }
    if (!changed) return Status::ok();
    // The new values' dims (with their expressions) for the passes after this one.
    return infer_shapes(graph);
  }
};

}  // namespace

std::unique_ptr<Pass> make_lower_pool3d_pass() { return std::make_unique<LowerPool3dPass>(); }

}  // namespace qdqrt::optimizer
