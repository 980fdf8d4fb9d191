// Random nodes of every ai.onnx op with a shape function through infer_shapes: odd input counts,
// ranks, dims (unknown, symbolic, 0, 2^62), elements and attribute values (negative, INT64_MIN/MAX)
// give errors naming the node or derived dims, never a crash, an exception or (under the
// sanitizers, scripts/test_sanitizers.sh) undefined behaviour.
#include <gtest/gtest.h>

#include <random>

#include "core/op_registry.h"
#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

class RandomNodes {
 public:
  explicit RandomNodes(uint64_t seed) : rng_(seed) {}

  Graph graph_for(const OpSchema& schema) {
    Graph graph;
    const int64_t opset = schema.min_opset + pick(static_cast<int>(schema.max_opset - schema.min_opset + 1));
    graph.opsets[kOnnxDomain] = opset;
    Node node;
    node.name = "n";
    node.op_type = schema.op_type;
    node.opset = opset;
    const int inputs = pick(6);
    for (int i = 0; i < inputs; ++i) {
      const std::string name = "i" + std::to_string(i);
      if (pick(8) == 0) {
        node.inputs.push_back("");
        continue;
      }
      node.inputs.push_back(name);
      if (pick(4) == 0) {
        add_constant(graph, name);
        continue;
      }
      graph.inputs.push_back(name);
      ValueInfo& info = graph.values[name];
      info.name = name;
      info.dtype = pick(2) ? DataType::kFloat : DataType::kInt64;
      if (pick(6) != 0) {
        Dims dims;
        for (int rank = pick(6), d = 0; d < rank; ++d) dims.push_back(any_dim());
        info.shape = dims;
      }
      if (pick(3) == 0) {
        Dims elements;
        for (int count = pick(5), k = 0; k < count; ++k)
          elements.push_back(pick(2) ? any_dim() : static_dim(any_int()));
        info.elements = elements;
      }
    }
    for (int outputs = 1 + pick(3), o = 0; o < outputs; ++o) node.outputs.push_back("o" + std::to_string(o));
    static const char* const int_keys[] = {"axis",       "keepdims",    "group",
                                           "transA",     "transB",      "ceil_mode",
                                           "block_size", "fmod",        "noop_with_empty_axes",
                                           "exclusive",  "num_outputs", "stash_type"};
    static const char* const ints_keys[] = {"axes",         "kernel_shape",   "strides", "pads", "dilations",
                                            "output_shape", "output_padding", "perm",    "split"};
    for (int attributes = pick(4), a = 0; a < attributes; ++a) {
      Attribute attribute;
      if (pick(2) != 0) {
        attribute.kind = Attribute::Kind::kInt;
        attribute.i = any_int();
        node.attributes[int_keys[pick(std::size(int_keys))]] = attribute;
      } else {
        attribute.kind = Attribute::Kind::kInts;
        for (int count = pick(7), k = 0; k < count; ++k) attribute.ints.push_back(any_int());
        node.attributes[ints_keys[pick(std::size(ints_keys))]] = attribute;
      }
    }
    if (pick(6) == 0) {
      static const char* const auto_pads[] = {"SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"};
      Attribute attribute;
      attribute.kind = Attribute::Kind::kString;
      attribute.s = auto_pads[pick(4)];
      node.attributes["auto_pad"] = attribute;
    }
    graph.nodes.push_back(node);
    return graph;
  }

 private:
  int pick(size_t n) { return static_cast<int>(rng_() % n); }

  int64_t any_int() {
    static const int64_t extremes[] = {INT64_MIN, -5, -1, 0, 1, 7, int64_t{1} << 31, int64_t{1} << 62, INT64_MAX};
    return pick(3) != 0 ? pick(5) - 1 : extremes[pick(std::size(extremes))];
  }

  Dim any_dim() {
    switch (pick(6)) {
      case 0: return symbolic_dim("N", pick(2) != 0 ? -1 : 2);
      case 1: return Dim{};
      case 2: return static_dim(pick(2) != 0 ? int64_t{1} << 62 : 0);
      default: return static_dim(pick(9));
    }
  }

  void add_constant(Graph& graph, const std::string& name) {
    const int count = pick(6);
    if (pick(2) != 0) {
      std::vector<int64_t> values;
      for (int k = 0; k < count; ++k) values.push_back(any_int());
      graph.initializers[name] = Tensor::from_vector<int64_t>(count == 1 && pick(2) ? Shape{} : Shape{count}, values);
    } else {
      static const float floats[] = {0.0f, 0.5f, 1.0f, 2.0f, -1.0f, 1e30f, 1.5f};
      std::vector<float> values;
      for (int k = 0; k < count; ++k) values.push_back(floats[pick(std::size(floats))]);
      graph.initializers[name] = Tensor::from_vector<float>(Shape{count}, values);
    }
  }

  std::mt19937_64 rng_;
};

TEST(RandomNodes, EveryOpGivesDimsOrAnErrorNamingTheNode) {
  RandomNodes random(20261129);
  int derived = 0, refused = 0;
  for (int round = 0; round < 150; ++round) {
    for (const OpSchema* schema : OpRegistry::instance().all()) {
      if (schema->domain != kOnnxDomain || schema->infer_shape == nullptr) continue;
      Graph graph = random.graph_for(*schema);
      ShapeInferenceReport report = infer(graph);
      for (const auto& [value, why] : report.unfollowed) {
        ASSERT_NE(why.find(schema->op_type + " 'n'"), std::string::npos) << why;
      }
      if (!report.unfollowed.empty()) {
        ++refused;
        continue;
      }
      ++derived;
      for (const std::string& output : graph.nodes[0].outputs) {
        const ValueInfo* info = graph.find_value(output);
        if (info == nullptr || !info->shape) continue;
        for (const Dim& dim : *info->shape) ASSERT_GE(dim.value, -1) << schema->op_type << " " << output;
      }
    }
  }
  EXPECT_GT(derived, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace qdqrt::testing
