// The tensor family's shape functions against the reference kernels on random nodes: where the
// reference runs a node, inference must give its output shapes exactly, and with the data input's
// first dim made dynamic ("N" with its value), the expressions evaluated at that value must too.
// Nodes the reference refuses must not break inference (a clear error or a shape, never a crash).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/attribute_values.h"
#include "core/op_registry.h"
#include "reference/executor.h"
#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

// One random node: its data input "x" (when it has one), further constant inputs in order ("" for
// an absent optional input), attributes and output count.
struct RandomNode {
  std::string op_type;
  int64_t opset = 13;
  std::optional<Shape> x = std::nullopt;
  std::vector<std::pair<std::string, Tensor>> constants = {};
  AttributeMap attributes = {};
  size_t outputs = 1;
};

Tensor int64s(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

class Random {
 public:
  explicit Random(uint32_t seed) : engine_(seed) {}
  int64_t uniform(int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(engine_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(engine_); }
  Shape dims(int64_t min_rank, int64_t max_rank, int64_t max_dim) {
    Shape shape(static_cast<size_t>(uniform(min_rank, max_rank)));
    for (int64_t& dim : shape) dim = uniform(chance(0.1) ? 0 : 1, max_dim);
    return shape;
  }
  // A slice bound: small, or one of the "to the end" values.
  int64_t bound() {
    static const int64_t extremes[] = {INT64_MAX, INT64_MIN, -INT64_MAX, 1000, -1000};
    return chance(0.2) ? extremes[uniform(0, 4)] : uniform(-8, 8);
  }
  template <class T>
  void shuffle(std::vector<T>& values) {
    std::shuffle(values.begin(), values.end(), engine_);
  }

 private:
  std::mt19937 engine_;
};

int64_t numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

RandomNode random_reshape(Random& random) {
  RandomNode node{.op_type = "Reshape", .opset = 14};
  node.x = random.dims(0, 4, 5);
  std::vector<int64_t> target(node.x->begin(), node.x->end());
  if (random.chance(0.5) && target.size() > 1) {  // merge two neighbours
    const size_t at = static_cast<size_t>(random.uniform(0, static_cast<int64_t>(target.size()) - 2));
    target[at] *= target[at + 1];
    target.erase(target.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  if (random.chance(0.3)) target.insert(target.begin() + random.uniform(0, static_cast<int64_t>(target.size())), 1);
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < node.x->size() && target[i] == (*node.x)[i] && random.chance(0.3)) target[i] = 0;
  }
  if (!target.empty() && random.chance(0.4))
    target[static_cast<size_t>(random.uniform(0, static_cast<int64_t>(target.size()) - 1))] = -1;
  if (random.chance(0.15)) target.push_back(random.uniform(-2, 6));  // usually wrong
  node.constants.emplace_back("shape", int64s(target));
  if (random.chance(0.2)) node.attributes["allowzero"] = int_attribute(1);
  return node;
}

RandomNode random_slice(Random& random) {
  RandomNode node{.op_type = "Slice"};
  node.x = random.dims(1, 3, 6);
  const int64_t rank = static_cast<int64_t>(node.x->size());
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  random.shuffle(axes);
  axes.resize(static_cast<size_t>(random.uniform(1, rank)));
  for (int64_t& axis : axes) {
    if (random.chance(0.3)) axis -= rank;
  }
  if (random.chance(0.05)) axes.push_back(axes.front());  // repeated: refused
  std::vector<int64_t> starts, ends, steps;
  for (size_t i = 0; i < axes.size(); ++i) {
    starts.push_back(random.bound());
    ends.push_back(random.bound());
    steps.push_back(random.chance(0.03) ? 0 : (random.chance(0.5) ? 1 : random.uniform(-3, 3) | 1));
  }
  node.constants.emplace_back("starts", int64s(starts));
  node.constants.emplace_back("ends", int64s(ends));
  const bool with_steps = random.chance(0.6);
  if (random.chance(0.7) || with_steps) node.constants.emplace_back("axes", int64s(axes));
  if (with_steps) node.constants.emplace_back("steps", int64s(steps));
  return node;
}

RandomNode random_split(Random& random) {
  RandomNode node{.op_type = "Split", .opset = random.chance(0.5) ? 13 : 18};
  node.x = random.dims(1, 3, 7);
  const int64_t rank = static_cast<int64_t>(node.x->size());
  int64_t axis = random.uniform(-rank, rank - 1);
  node.attributes["axis"] = int_attribute(axis);
  node.outputs = static_cast<size_t>(random.uniform(1, 4));
  const int64_t dim = (*node.x)[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  const int64_t mode = random.uniform(0, 2);
  if (mode == 0) {  // sizes: a random partition, sometimes wrong
    std::vector<int64_t> sizes(node.outputs, 0);
    for (int64_t i = 0; i < dim; ++i)
      ++sizes[static_cast<size_t>(random.uniform(0, static_cast<int64_t>(node.outputs) - 1))];
    if (random.chance(0.1)) sizes[0] += 1;
    node.constants.emplace_back("split", int64s(sizes));
  } else if (mode == 1 && node.opset >= 18) {
    node.attributes["num_outputs"] = int_attribute(random.chance(0.9) ? static_cast<int64_t>(node.outputs) : 5);
  }
  return node;
}

RandomNode random_gather(Random& random) {
  RandomNode node{.op_type = random.chance(0.7) ? "Gather" : "GatherElements"};
  node.x = random.dims(1, 3, 5);
  const int64_t rank = static_cast<int64_t>(node.x->size());
  const int64_t axis = random.uniform(-rank, rank - 1);
  node.attributes["axis"] = int_attribute(axis);
  const int64_t extent = (*node.x)[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  Shape indices_shape = node.op_type == "Gather" ? random.dims(0, 2, 3) : *node.x;
  if (node.op_type == "GatherElements") {
    for (int64_t& dim : indices_shape) dim = random.uniform(std::min<int64_t>(dim, 1), dim);
  }
  std::vector<int64_t> indices(static_cast<size_t>(numel(indices_shape)));
  for (int64_t& index : indices)
    index = random.chance(0.03) ? extent : random.uniform(-extent, std::max<int64_t>(extent - 1, -extent));
  node.constants.emplace_back("indices", Tensor::from_vector<int64_t>(indices_shape, indices));
  return node;
}

RandomNode random_pad_tile_expand(Random& random) {
  RandomNode node;
  node.x = random.dims(1, 3, 4);
  const int64_t rank = static_cast<int64_t>(node.x->size());
  const int64_t which = random.uniform(0, 2);
  if (which == 0) {
    node.op_type = "Pad";
    node.opset = random.chance(0.5) ? 13 : 18;
    std::vector<int64_t> axes(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
    if (node.opset >= 18 && random.chance(0.5)) axes.resize(static_cast<size_t>(random.uniform(1, rank)));
    std::vector<int64_t> pads(2 * axes.size());
    for (int64_t& pad : pads) pad = random.uniform(-2, 3);
    node.constants.emplace_back("pads", int64s(pads));
    if (axes.size() != static_cast<size_t>(rank)) {
      node.constants.emplace_back("", Tensor());
      node.constants.emplace_back("axes", int64s(axes));
    }
  } else if (which == 1) {
    node.op_type = "Tile";
    std::vector<int64_t> repeats(static_cast<size_t>(rank));
    for (int64_t& repeat : repeats) repeat = random.uniform(0, 3);
    node.constants.emplace_back("repeats", int64s(repeats));
  } else {
    node.op_type = "Expand";
    std::vector<int64_t> shape;
    for (int64_t i = random.uniform(0, 2); i > 0; --i) shape.push_back(random.uniform(1, 3));
    for (int64_t dim : *node.x) shape.push_back(random.chance(0.5) ? 1 : (dim == 1 ? random.uniform(1, 3) : dim));
    if (random.chance(0.1)) shape.back() += 1;
    if (random.chance(0.3) && shape.size() > 1) shape.erase(shape.begin());
    node.constants.emplace_back("shape", int64s(shape));
  }
  return node;
}

RandomNode random_axes_op(Random& random) {
  RandomNode node;
  node.x = random.dims(0, 4, 3);
  const int64_t rank = static_cast<int64_t>(node.x->size());
  const int64_t which = random.uniform(0, 3);
  if (which == 0) {
    node.op_type = "Squeeze";
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < rank; ++d) {
      if (((*node.x)[static_cast<size_t>(d)] == 1 || random.chance(0.05)) && random.chance(0.6)) {
        axes.push_back(random.chance(0.5) ? d : d - rank);
      }
    }
    if (!axes.empty() || random.chance(0.3)) node.constants.emplace_back("axes", int64s(axes));
  } else if (which == 1) {
    node.op_type = "Unsqueeze";
    const int64_t count = random.uniform(1, 3);
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < count; ++i) axes.push_back(random.uniform(-(rank + count), rank + count - 1));
    node.constants.emplace_back("axes", int64s(axes));
  } else if (which == 2) {
    node.op_type = "Transpose";
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    random.shuffle(perm);
    if (random.chance(0.7)) node.attributes["perm"] = ints_attribute(perm);
  } else {
    node.op_type = "Flatten";
    node.attributes["axis"] = int_attribute(random.uniform(-rank, rank));
  }
  return node;
}

RandomNode random_other(Random& random) {
  RandomNode node;
  const int64_t which = random.uniform(0, 6);
  if (which == 0) {
    node.op_type = "Concat";
    node.x = random.dims(1, 3, 4);
    const int64_t rank = static_cast<int64_t>(node.x->size());
    const int64_t axis = random.uniform(-rank, rank - 1);
    node.attributes["axis"] = int_attribute(axis);
    Shape other = *node.x;
    other[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = random.uniform(0, 3);
    node.constants.emplace_back("other", Tensor(DataType::kFloat, other));
  } else if (which == 1) {
    node.op_type = random.chance(0.5) ? "DepthToSpace" : "SpaceToDepth";
    const int64_t block = random.uniform(1, 3);
    node.attributes["blocksize"] = int_attribute(block);
    node.x = Shape{random.uniform(1, 2), block * block * random.uniform(1, 2), block * random.uniform(1, 2),
                   block * random.uniform(1, 2)};
    if (random.chance(0.1)) (*node.x)[1] += 1;
  } else if (which == 2) {
    node.op_type = "Shape";
    node.opset = 15;
    node.x = random.dims(0, 4, 3);
    if (random.chance(0.6)) node.attributes["start"] = int_attribute(random.uniform(-5, 5));
    if (random.chance(0.6)) node.attributes["end"] = int_attribute(random.uniform(-5, 5));
  } else if (which == 3) {
    node.op_type = "ConstantOfShape";
    node.constants.emplace_back("shape", int64s(random.dims(0, 3, 4)));
  } else if (which == 4) {
    node.op_type = "Range";
    node.constants.emplace_back("start", Tensor::scalar<int64_t>(random.uniform(-5, 5)));
    node.constants.emplace_back("limit", Tensor::scalar<int64_t>(random.uniform(-5, 5)));
    node.constants.emplace_back("delta", Tensor::scalar<int64_t>(random.chance(0.05) ? 0 : random.uniform(-3, 3) | 1));
  } else if (which == 5) {
    node.op_type = "NonZero";
    Shape shape = random.dims(1, 3, 3);
    std::vector<int64_t> values(static_cast<size_t>(numel(shape)));
    for (int64_t& value : values) value = random.chance(0.5) ? 0 : random.uniform(1, 9);
    node.constants.emplace_back("x", Tensor::from_vector<int64_t>(shape, values));
  } else {
    node.op_type = "Size";
    node.x = random.dims(0, 4, 4);
  }
  return node;
}

// The graph of the node; with `dynamic`, the data input's first dim is the symbol N at its value.
Graph graph_of(const RandomNode& random_node, const Node& node, bool dynamic) {
  Graph graph;
  graph.opsets[kOnnxDomain] = random_node.opset;
  if (random_node.x) {
    ValueInfo x;
    x.name = "x";
    x.dtype = DataType::kFloat;
    x.shape = static_dims(*random_node.x);
    for (Dim& dim : *x.shape) dim.expr = DimExpr();
    if (dynamic && !x.shape->empty()) (*x.shape)[0] = symbolic_dim("N", (*random_node.x)[0]);
    graph.inputs.push_back("x");
    graph.values["x"] = x;
  }
  for (const auto& [name, tensor] : random_node.constants) {
    if (!name.empty()) graph.initializers[name] = tensor.clone();
  }
  graph.nodes.push_back(node);
  graph.outputs = node.outputs;
  return graph;
}

std::string describe(const RandomNode& random_node, const Node& node) {
  std::string text = node.op_type + " opset " + std::to_string(random_node.opset);
  if (random_node.x) text += " x " + shape_to_string(*random_node.x);
  for (const auto& [name, tensor] : random_node.constants) {
    text += " " + (name.empty() ? std::string("(absent)") : name) + "=";
    if (!name.empty()) {
      std::vector<int64_t> values;
      for (int64_t i = 0; i < tensor.numel() && i < 16; ++i) values.push_back(tensor.value_as_int64(i));
      text += shape_to_string(tensor.shape()) + shape_to_string(values);
    }
  }
  for (const auto& [key, attribute] : node.attributes) {
    text += " " + key + "=" +
            (attribute.kind == Attribute::Kind::kInts ? shape_to_string(attribute.ints) : std::to_string(attribute.i));
  }
  return text;
}

TEST(TensorShapesRandom, InferenceGivesTheReferenceShapes) {
  Random random(20261129);
  RandomNode (*generators[])(Random&) = {random_reshape,         random_slice,   random_split, random_gather,
                                         random_pad_tile_expand, random_axes_op, random_other};
  int ran = 0, refused = 0, dynamic_followed = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const RandomNode random_node = generators[trial % std::size(generators)](random);
    Node node;
    node.name = "n" + std::to_string(trial);
    node.op_type = random_node.op_type;
    node.opset = random_node.opset;
    if (random_node.x) node.inputs.push_back("x");
    for (const auto& [name, tensor] : random_node.constants) node.inputs.push_back(name);
    for (size_t i = 0; i < random_node.outputs; ++i) node.outputs.push_back("y" + std::to_string(i));
    node.attributes = random_node.attributes;
    const OpSchema* schema = OpRegistry::instance().find(kOnnxDomain, node.op_type);
    ASSERT_NE(schema, nullptr);
    if (schema->parse_attributes != nullptr) {
      auto parsed = schema->parse_attributes(node);
      if (!parsed.ok()) continue;  // the loader refuses it before inference
      node.typed_attributes = parsed.value();
    }
    SCOPED_TRACE(describe(random_node, node));

    Tensor x(DataType::kFloat, random_node.x.value_or(Shape{}));
    std::vector<const Tensor*> inputs;
    if (random_node.x) inputs.push_back(&x);
    for (const auto& [name, tensor] : random_node.constants) inputs.push_back(name.empty() ? nullptr : &tensor);
    auto outputs = run_reference_node(node, inputs);

    for (bool dynamic : {false, true}) {
      Graph graph = graph_of(random_node, node, dynamic);
      ShapeInferenceReport report;
      ASSERT_TRUE(infer_shapes(graph, &report).is_ok());
      if (!outputs.ok()) continue;  // any answer but a crash
      bool followed = true;
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        const std::string& name = node.outputs[i];
        const Shape& expected = (*outputs)[i].shape();
        const ValueInfo* info = graph.find_value(name);
        if (dynamic && report.unfollowed.count(name)) {
          followed = false;  // allowed: a dynamic dim may hide what a static one shows
          continue;
        }
        ASSERT_EQ(report.unfollowed.count(name), 0u) << name << ": " << report.unfollowed[name];
        ASSERT_TRUE(info && info->shape) << name;
        ASSERT_EQ(info->shape->size(), expected.size()) << name << " " << dims_text(*info->shape);
        for (size_t axis = 0; axis < expected.size(); ++axis) {
          const Dim& dim = (*info->shape)[axis];
          EXPECT_EQ(dim.value, expected[axis]) << name << " axis " << axis << " of " << dims_text(*info->shape);
          if (dynamic && !dim.expr.known()) {
            followed = false;  // allowed: e.g. N broadcast against a static 2 is 2 only at N = 1 or 2
            continue;
          }
          const int64_t n = random_node.x && !random_node.x->empty() ? (*random_node.x)[0] : 0;
          EXPECT_EQ(dim.expr.evaluate({{"N", n}}), expected[axis])
              << name << " axis " << axis << " of " << dims_text(*info->shape) << " at N = " << n;
        }
      }
      if (dynamic && followed) ++dynamic_followed;
    }
    if (outputs.ok())
      ++ran;
    else
      ++refused;
    if (::testing::Test::HasFailure()) break;
  }
  std::cout << "[random nodes] " << ran << " run by the reference and inferred exactly (" << dynamic_followed
            << " also with a dynamic first dim); " << refused << " refused by the reference\n";
  EXPECT_GT(ran, 2000);
}

}  // namespace
}  // namespace qdqrt::testing
