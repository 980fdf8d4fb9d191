// The graph-level passes on a real torch QAT export (data/tiny_qat_convnet.onnx, made by
// data/make_qat_convnet.py): Constant/Cast/Abs/ReduceMax/Div scale subgraphs, Q(w_fp32) -> DQ
// weights, BatchNormalization after each Conv, MaxPool and a residual add between quantizers.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "parser/onnx_loader.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

const std::vector<std::string> kGraphLevelPasses = {"remove_identities", "fold_constants", "fold_batchnorm",
                                                    "propagate_qdq", "remove_redundant_qdq"};

// BN folded into the weight scale changes float rounding inside the conv, which can move a
// following quantizer by one step; the logits may then differ by about one input step times the
// weights. Stated tolerance: 2% of the logits' range, and the same top-1 class, on 8 random inputs.
void expect_close_logits(const Graph& graph, const Graph& rewritten, const std::string& output_name) {
  for (unsigned seed = 0; seed < 8; ++seed) {
    TensorMap inputs = random_inputs(graph, 100 + seed, 1.0f);
    Result<TensorMap> expected = run_reference(graph, inputs);
    Result<TensorMap> actual = run_reference(rewritten, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().message();
    ASSERT_TRUE(actual.ok()) << actual.status().message();
    const Tensor& want = expected->at(output_name);
    const Tensor& got = actual->at(output_name);
    ASSERT_EQ(want.shape(), got.shape());
    float low = want.data<float>()[0], high = low;
    int64_t want_top = 0, got_top = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      low = std::min(low, want.data<float>()[i]);
      high = std::max(high, want.data<float>()[i]);
      if (want.data<float>()[i] > want.data<float>()[want_top]) want_top = i;
      if (got.data<float>()[i] > got.data<float>()[got_top]) got_top = i;
    }
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 0.02 * (high - low)) << "seed " << seed << " logit " << i;
    }
    EXPECT_EQ(got_top, want_top) << "seed " << seed;
  }
}

TEST(QatExport, GraphLevelPassesFireAndKeepTheNumbers) {
  Result<Graph> loaded = load_onnx_file(std::string(QDQRT_OPTIMIZER_PASSES_DATA) + "/tiny_qat_convnet.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Graph& graph = *loaded;
  ASSERT_EQ(count_ops(graph, "BatchNormalization"), 2);
  ASSERT_EQ(count_ops(graph, "QuantizeLinear"), 7);

  Graph rewritten = run_passes(graph, kGraphLevelPasses);
  for (const char* gone : {"BatchNormalization", "Constant", "Cast", "Abs", "ReduceMax", "Div"}) {
    EXPECT_EQ(count_ops(rewritten, gone), 0) << gone;
  }
  // Weight Qs are folded into int8 initializers. The first MaxPool, between two equal
  // quantizers, runs on int8 and the quantizers after it (block2's input, the residual) collapse
  // into the one before it; the Linear's input Q moves back through Flatten and the second
  // MaxPool. Left: the input Q and the Qs after the two Relus.
  EXPECT_EQ(count_ops(rewritten, "QuantizeLinear"), 3) << op_sequence(rewritten);
  int int8_maxpools = 0;
  for (const Node& node : rewritten.nodes) {
    if (node.op_type == "MaxPool" && rewritten.find_value(node.inputs[0])->dtype == DataType::kInt8) ++int8_maxpools;
    if (node.op_type == "DequantizeLinear" && node.inputs[1].find("bn_folded") != std::string::npos) {
      const Tensor* weight = rewritten.find_initializer(node.inputs[0]);
      ASSERT_NE(weight, nullptr) << "weight DQ must read a constant int8 weight";
      EXPECT_EQ(weight->dtype(), DataType::kInt8);
    }
  }
  EXPECT_EQ(int8_maxpools, 2) << op_sequence(rewritten);
  for (const Node& node : rewritten.nodes) {
    if (node.op_type == "Conv") {
      ASSERT_EQ(node.inputs.size(), 3u) << node.describe() << " must carry the folded BN shift as bias";
    }
  }

  expect_close_logits(graph, rewritten, "logits");
}

// The project's trained Fashion-MNIST ResNet (pytorch-quantization style, models/ from h/models);
// skipped where that model is not present.
TEST(QatExport, FashionMnistResnet) {
  const std::string path = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_qdq.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  Result<Graph> loaded = load_onnx_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Graph graph = *loaded;
  for (const std::string& input : graph.inputs) {  // batch 1 for the random inputs
    for (Dim& dim : *graph.values[input].shape) {
      if (!dim.is_static()) dim.value = 1;
    }
  }
  const int quantizers = count_ops(graph, "QuantizeLinear");
  Graph rewritten = run_passes(graph, kGraphLevelPasses);
  EXPECT_EQ(count_ops(rewritten, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(rewritten, "Identity"), 0);
  EXPECT_EQ(count_ops(rewritten, "Conv"), count_ops(graph, "Conv"));
  EXPECT_LT(count_ops(rewritten, "QuantizeLinear"), quantizers);  // weight Qs folded
  for (const Node& node : rewritten.nodes) {
    if (node.op_type != "Conv" && node.op_type != "Gemm") continue;
    const Node* weight_dq = nullptr;
    for (const Node& producer : rewritten.nodes) {
      if (!producer.outputs.empty() && producer.outputs[0] == node.inputs[1]) weight_dq = &producer;
    }
    ASSERT_NE(weight_dq, nullptr) << node.describe();
    EXPECT_EQ(weight_dq->op_type, "DequantizeLinear") << node.describe();
    const Tensor* weight = rewritten.find_initializer(weight_dq->inputs[0]);
    ASSERT_NE(weight, nullptr) << node.describe() << ": weight DQ must read a constant";
    EXPECT_EQ(weight->dtype(), DataType::kInt8) << node.describe();
  }
  expect_close_logits(graph, rewritten, graph.outputs[0]);
}

}  // namespace
}  // namespace qdqrt::testing
