#include "tests/optimizer_passes/pass_test_util.h"

#include <cmath>
#include <random>

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "parser/onnx_loader.h"

namespace qdqrt::testing {

Graph parse_graph(const std::string& text) {
  onnx::ModelProto model;
  onnx::Status parsed = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(parsed.IsOK()) << parsed.ErrorMessage() << "\n" << text;
  Result<Graph> graph = load_onnx_model(model);
  EXPECT_TRUE(graph.ok()) << graph.status().message() << "\n" << text;
  return graph.ok() ? std::move(*graph) : Graph{};
}

int count_ops(const Graph& graph, const std::string& op_type) {
  int count = 0;
  for (const Node& node : graph.nodes) count += node.op_type == op_type ? 1 : 0;
  return count;
}

std::string op_sequence(const Graph& graph) {
  std::string sequence;
  for (const Node& node : graph.nodes) sequence += (sequence.empty() ? "" : ",") + node.op_type;
  return sequence;
}

Graph run_passes(const Graph& graph, const std::vector<std::string>& passes, bool float_only) {
  Graph copy = graph;
  optimizer::OptimizeOptions options;
  options.only_passes = passes;
  options.float_only = float_only;
  Result<optimizer::OptimizeReport> report = optimizer::optimize(copy, options);
  EXPECT_TRUE(report.ok()) << report.status().message();
  return copy;
}

TensorMap random_inputs(const Graph& graph, unsigned seed, float range) {
  std::mt19937 generator(seed);
  TensorMap inputs;
  for (const std::string& name : graph.inputs) {
    const ValueInfo* info = graph.find_value(name);
    EXPECT_NE(info, nullptr) << name;
    if (info == nullptr) continue;
    std::optional<Shape> shape = info->static_shape();
    EXPECT_TRUE(shape.has_value()) << name;
    if (!shape) continue;
    Tensor tensor(info->dtype, *shape);
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      switch (info->dtype) {
        case DataType::kFloat:
          tensor.data<float>()[i] = std::uniform_real_distribution<float>(-range, range)(generator);
          break;
        case DataType::kInt8:
          tensor.data<int8_t>()[i] = static_cast<int8_t>(std::uniform_int_distribution<int>(-128, 127)(generator));
          break;
        case DataType::kUint8:
          tensor.data<uint8_t>()[i] = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 255)(generator));
          break;
        default: ADD_FAILURE() << "unsupported input dtype for " << name;
      }
    }
    inputs[name] = tensor;
  }
  return inputs;
}

void expect_same_outputs(const Graph& original, const Graph& rewritten, const TensorMap& inputs,
                         double absolute_tolerance, double relative_tolerance, int64_t lsb) {
  Result<TensorMap> expected = run_reference(original, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  Result<TensorMap> actual = run_reference(rewritten, inputs);
  ASSERT_TRUE(actual.ok()) << actual.status().message();
  for (const auto& [name, want] : *expected) {
    auto it = actual->find(name);
    ASSERT_NE(it, actual->end()) << "output " << name << " missing after the passes";
    const Tensor& got = it->second;
    ASSERT_EQ(got.dtype(), want.dtype()) << name;
    ASSERT_EQ(got.shape(), want.shape()) << name;
    int mismatches = 0;
    for (int64_t i = 0; i < want.numel() && mismatches < 5; ++i) {
      const double w = want.value_as_double(i);
      const double g = got.value_as_double(i);
      const bool ok = want.dtype() == DataType::kFloat
                          ? std::abs(w - g) <= absolute_tolerance + relative_tolerance * std::abs(w)
                          : std::abs(w - g) <= static_cast<double>(lsb);
      if (!ok) {
        ++mismatches;
        ADD_FAILURE() << "output " << name << "[" << i << "]: expected " << w << ", got " << g;
      }
    }
  }
}

}  // namespace qdqrt::testing

namespace qdqrt::testing {

std::string literal(int count, unsigned seed, float low, float high, bool integers) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::string text = "{";
  for (int i = 0; i < count; ++i) {
    const float value = distribution(generator);
    char buffer[32];
    if (integers) {
      std::snprintf(buffer, sizeof(buffer), "%d", static_cast<int>(std::lround(value)));
    } else {
      std::snprintf(buffer, sizeof(buffer), "%.6g", value);
    }
    text += (i ? ", " : "") + std::string(buffer);
  }
  return text + "}";
}

}  // namespace qdqrt::testing
