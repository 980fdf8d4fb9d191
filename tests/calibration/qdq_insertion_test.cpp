// Q/DQ insertion: which inputs each placement quantizes, zero-points 0, per-channel axes and
// scales, and that the written file loads back.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "optimizer/graph_utils.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "tools/calibration/qdq_insertion.h"

namespace qdqrt::calibration {
namespace {

namespace fs = std::filesystem;
using optimizer::ValueIndex;

Graph load_resnet() {
  auto graph = load_onnx_file(std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx");
  EXPECT_TRUE(graph.ok()) << graph.status().to_string();
  return graph.ok() ? *graph : Graph{};
}

const Node* producer_of(const Graph& graph, const std::string& value) {
  for (const Node& node : graph.nodes) {
    for (const std::string& output : node.outputs) {
      if (output == value) return &node;
    }
  }
  return nullptr;
}

const Node* find_node(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

// The QuantizeLinear behind a DequantizeLinear-produced input; checks the pair's parameters.
struct PairInfo {
  std::string source;  // the float tensor quantized
  Tensor scale;
  std::optional<int64_t> axis;
};
std::optional<PairInfo> quantized_input(const Graph& graph, const Node& node, size_t slot) {
  const Node* dequantize = producer_of(graph, node.input(slot));
  if (dequantize == nullptr || dequantize->op_type != "DequantizeLinear") return std::nullopt;
  const Node* quantize = producer_of(graph, dequantize->input(0));
  EXPECT_TRUE(quantize != nullptr && quantize->op_type == "QuantizeLinear");
  if (quantize == nullptr) return std::nullopt;
  EXPECT_EQ(quantize->input(1), dequantize->input(1));
  EXPECT_EQ(quantize->input(2), dequantize->input(2));
  const Tensor* zero_point = graph.find_initializer(quantize->input(2));
  EXPECT_TRUE(zero_point != nullptr);
  if (zero_point != nullptr) {
    EXPECT_EQ(zero_point->dtype(), DataType::kInt8);
    for (int64_t i = 0; i < zero_point->numel(); ++i) EXPECT_EQ(zero_point->value_as_int64(i), 0);
  }
  PairInfo info;
  info.source = quantize->input(0);
  info.scale = *graph.find_initializer(quantize->input(1));
  if (const Attribute* axis = quantize->find_attribute("axis")) info.axis = axis->i;
  const Attribute* dq_axis = dequantize->find_attribute("axis");
  EXPECT_EQ(info.axis.has_value(), dq_axis != nullptr);
  return info;
}

std::map<std::string, float> fake_amax(const QuantizationPlan& plan) {
  std::map<std::string, float> amax;
  float value = 1.0f;
  for (const std::string& tensor : plan.tensors_to_calibrate()) amax[tensor] = (value += 0.5f);
  return amax;
}

TEST(QdqInsertion, TensorRTPlacementOnTheResNet) {
  Graph graph = load_resnet();
  auto plan = plan_quantization(graph, Placement::kTensorRT);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->weights.size(), 10u);  // 9 convs + the fc
  std::map<std::string, float> amax = fake_amax(*plan);
  auto quantized = insert_qdq(graph, *plan, amax);
  ASSERT_TRUE(quantized.ok()) << quantized.status().to_string();

  int convs = 0;
  for (const Node& node : quantized->nodes) {
    if (node.op_type != "Conv" && node.op_type != "Gemm") continue;
    ++convs;
    auto input = quantized_input(*quantized, node, 0);
    ASSERT_TRUE(input) << node.name << " input is not quantized";
    EXPECT_FALSE(input->axis) << node.name;
    EXPECT_EQ(input->scale.rank(), 0);
    EXPECT_FLOAT_EQ(input->scale.value_as_double(0), amax.at(input->source) / 127.0f);
    auto weight = quantized_input(*quantized, node, 1);
    ASSERT_TRUE(weight) << node.name << " weight is not quantized";
    ASSERT_TRUE(weight->axis);
    EXPECT_EQ(*weight->axis, 0) << node.name;  // Conv: output channels; Gemm transB=1: [N, K]
    const Tensor& w = *graph.find_initializer(weight->source);
    ASSERT_EQ(weight->scale.numel(), w.dim(0));
    const int64_t per_channel = w.numel() / w.dim(0);
    for (int64_t c = 0; c < w.dim(0); ++c) {
      float largest = 0.0f;
      for (int64_t i = 0; i < per_channel; ++i) largest = std::max(largest, std::fabs(w.data<float>()[c * per_channel + i]));
      EXPECT_FLOAT_EQ(weight->scale.value_as_double(c), largest / 127.0f);
    }
    if (node.has_input(2)) {
      EXPECT_EQ(producer_of(*quantized, node.input(2)), nullptr) << "bias stays float";
    }
  }
  EXPECT_EQ(convs, 10);

  // Residual adds: the identity branch is quantized, the conv branch (fused by the optimizer) not.
  const Node* add0 = find_node(*quantized, "/blocks/blocks.0/Add");
  ASSERT_NE(add0, nullptr);
  EXPECT_FALSE(quantized_input(*quantized, *add0, 0));
  auto identity = quantized_input(*quantized, *add0, 1);
  ASSERT_TRUE(identity);
  EXPECT_EQ(identity->source, "/stem/stem.2/Relu_output_0");
  // blocks.1: both inputs come from convs; the downsample (input 1) is quantized, as
  // pytorch-quantization's residual quantizer does.
  const Node* add1 = find_node(*quantized, "/blocks/blocks.1/Add");
  ASSERT_NE(add1, nullptr);
  EXPECT_FALSE(quantized_input(*quantized, *add1, 0));
  EXPECT_TRUE(quantized_input(*quantized, *add1, 1));
  // Not quantized in this placement.
  const Node* pool = find_node(*quantized, "/pool/GlobalAveragePool");
  ASSERT_NE(pool, nullptr);
  EXPECT_FALSE(quantized_input(*quantized, *pool, 0));

  // One pair per tensor, shared by its quantized readers: stem output feeds conv1 and the add.
  ValueIndex index(*quantized);
  EXPECT_EQ(index.consumers(identity->source).size(), 1u);

  // Written and loaded back (checker and shape inference), opset kept at 13.
  fs::path path = fs::temp_directory_path() / "qdqrt_calibration_insertion.onnx";
  ASSERT_TRUE(write_onnx_file(*quantized, path.string()).is_ok());
  auto reloaded = load_onnx_file(path.string());
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().to_string();
  EXPECT_EQ(reloaded->opset(), 13);
  fs::remove(path);
}

// The inserted Q/DQ nodes carry the typed attributes the loader would attach, so the optimizer
// runs on the returned graph as it is (it used to crash reading them).
TEST(QdqInsertion, OptimizerRunsOnTheGraphWithoutAFileRoundTrip) {
  Graph graph = load_resnet();
  auto plan = plan_quantization(graph, Placement::kTensorRT);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto quantized = insert_qdq(graph, *plan, fake_amax(*plan));
  ASSERT_TRUE(quantized.ok()) << quantized.status().to_string();
  for (const Node& node : quantized->nodes) {
    if (node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear") {
      EXPECT_NE(node.typed_attributes, nullptr) << node.name;
    }
  }
  Graph optimized = *quantized;
  auto report = optimizer::optimize(optimized);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  int int8_convs = 0;
  for (const Node& node : optimized.nodes) int8_convs += node.op_type == "QConv" ? 1 : 0;
  EXPECT_EQ(int8_convs, 9);
}

TEST(QdqInsertion, AllPlacementAlsoQuantizesPoolsAndAdds) {
  Graph graph = load_resnet();
  auto plan = plan_quantization(graph, Placement::kAll);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto quantized = insert_qdq(graph, *plan, fake_amax(*plan));
  ASSERT_TRUE(quantized.ok()) << quantized.status().to_string();
  for (const char* name : {"/blocks/blocks.0/Add", "/blocks/blocks.1/Add", "/blocks/blocks.2/Add"}) {
    const Node* add = find_node(*quantized, name);
    ASSERT_NE(add, nullptr);
    EXPECT_TRUE(quantized_input(*quantized, *add, 0)) << name;
    EXPECT_TRUE(quantized_input(*quantized, *add, 1)) << name;
  }
  const Node* pool = find_node(*quantized, "/pool/GlobalAveragePool");
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(quantized_input(*quantized, *pool, 0));
  auto tensorrt = plan_quantization(graph, Placement::kTensorRT);
  EXPECT_GT(plan->activations.size(), tensorrt->activations.size());
}

// x [2, 4] -> MatMul(W [4, 3]) -> y: the weight is quantized per column (axis 1).
Graph matmul_graph(int64_t opset) {
  Graph graph;
  graph.opsets[""] = opset;
  graph.inputs = {"x"};
  graph.outputs = {"y"};
  graph.values["x"] = ValueInfo{"x", DataType::kFloat, std::vector<Dim>{{2, ""}, {4, ""}}};
  graph.values["y"] = ValueInfo{"y", DataType::kFloat, std::vector<Dim>{{2, ""}, {3, ""}}};
  graph.values["W"] = ValueInfo{"W", DataType::kFloat, std::vector<Dim>{{4, ""}, {3, ""}}};
  graph.initializers["W"] = Tensor::from_vector<float>({4, 3}, {1, -2, 0.5f, 3, 0, -0.25f, -4, 1, 0, 0.5f, 6, 0.125f});
  Node node;
  node.name = "mm";
  node.op_type = "MatMul";
  node.opset = opset;
  node.inputs = {"x", "W"};
  node.outputs = {"y"};
  graph.nodes.push_back(node);
  return graph;
}

TEST(QdqInsertion, MatMulWeightsArePerColumn) {
  Graph graph = matmul_graph(13);
  auto plan = plan_quantization(graph, Placement::kTensorRT);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->weights.size(), 1u);
  EXPECT_EQ(plan->weights[0].axis, 1);
  EXPECT_EQ(plan->tensors_to_calibrate(), std::vector<std::string>{"x"});
  auto quantized = insert_qdq(graph, *plan, {{"x", 2.54f}});
  ASSERT_TRUE(quantized.ok()) << quantized.status().to_string();
  const Node* matmul = find_node(*quantized, "mm");
  auto weight = quantized_input(*quantized, *matmul, 1);
  ASSERT_TRUE(weight);
  EXPECT_EQ(weight->axis, 1);
  ASSERT_EQ(weight->scale.numel(), 3);
  EXPECT_FLOAT_EQ(weight->scale.value_as_double(0), 4.0f / 127.0f);
  EXPECT_FLOAT_EQ(weight->scale.value_as_double(1), 6.0f / 127.0f);
  EXPECT_FLOAT_EQ(weight->scale.value_as_double(2), 0.5f / 127.0f);
  auto input = quantized_input(*quantized, *matmul, 0);
  ASSERT_TRUE(input);
  EXPECT_FLOAT_EQ(input->scale.value_as_double(0), 0.02f);

  fs::path path = fs::temp_directory_path() / "qdqrt_calibration_matmul.onnx";
  ASSERT_TRUE(write_onnx_file(*quantized, path.string()).is_ok());
  auto reloaded = load_onnx_file(path.string());
  EXPECT_TRUE(reloaded.ok()) << reloaded.status().to_string();
  fs::remove(path);
}

Node make_node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
               std::vector<std::string> outputs) {
  Node node;
  node.name = name;
  node.op_type = op;
  node.opset = 13;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  return node;
}

// x -> Conv(w1) -> c -> Sigmoid -> s; Mul(c, s) -> m (SiLU) -> MaxPool -> p -> Conv(w2) -> y,
// and p also feeds Relu -> r (a float reader of the MaxPool output).
Graph silu_pool_graph() {
  Graph graph;
  graph.opsets[""] = 13;
  graph.inputs = {"x"};
  graph.outputs = {"y", "r"};
  graph.initializers["w1"] = Tensor::from_vector<float>({2, 1, 1, 1}, {0.5f, -1.0f});
  graph.initializers["w2"] = Tensor::from_vector<float>({1, 2, 1, 1}, {2.0f, 1.0f});
  graph.nodes = {make_node("conv1", "Conv", {"x", "w1"}, {"c"}), make_node("sigmoid", "Sigmoid", {"c"}, {"s"}),
                 make_node("silu", "Mul", {"c", "s"}, {"m"}), make_node("pool", "MaxPool", {"m"}, {"p"}),
                 make_node("conv2", "Conv", {"p", "w2"}, {"y"}), make_node("relu", "Relu", {"p"}, {"r"})};
  return graph;
}

TEST(QdqInsertion, AllPlacementSiluAndMaxPool) {
  Graph graph = silu_pool_graph();
  auto plan = plan_quantization(graph, Placement::kAll);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  std::map<std::string, const ActivationQuantization*> by_tensor;
  for (const ActivationQuantization& activation : plan->activations) by_tensor[activation.tensor] = &activation;
  // SiLU: c is quantized for the Sigmoid and the Mul (one shared pair), s stays float.
  ASSERT_TRUE(by_tensor.count("c"));
  EXPECT_EQ(by_tensor["c"]->readers.size(), 2u);
  EXPECT_FALSE(by_tensor.count("s"));
  // MaxPool: input m quantized; output p quantized for every reader (the Relu too) with m's amax.
  ASSERT_TRUE(by_tensor.count("m"));
  ASSERT_TRUE(by_tensor.count("p"));
  EXPECT_EQ(by_tensor["p"]->amax_from, "m");
  EXPECT_EQ(by_tensor["p"]->readers.size(), 2u);
  EXPECT_EQ(plan->tensors_to_calibrate(), (std::vector<std::string>{"x", "c", "m"}));

  auto quantized = insert_qdq(graph, *plan, {{"x", 1.27f}, {"c", 2.54f}, {"m", 3.81f}});
  ASSERT_TRUE(quantized.ok()) << quantized.status().to_string();
  auto pooled = quantized_input(*quantized, *find_node(*quantized, "conv2"), 0);
  ASSERT_TRUE(pooled);
  EXPECT_EQ(pooled->source, "p");
  EXPECT_FLOAT_EQ(pooled->scale.value_as_double(0), 0.03f);  // m's scale
  EXPECT_TRUE(quantized_input(*quantized, *find_node(*quantized, "relu"), 0));
  EXPECT_TRUE(quantized_input(*quantized, *find_node(*quantized, "silu"), 0));
  EXPECT_FALSE(quantized_input(*quantized, *find_node(*quantized, "silu"), 1));

  // tensorrt placement: only the convs' inputs and weights.
  auto tensorrt = plan_quantization(graph, Placement::kTensorRT);
  ASSERT_TRUE(tensorrt.ok());
  EXPECT_EQ(tensorrt->tensors_to_calibrate(), (std::vector<std::string>{"x", "p"}));
  EXPECT_EQ(tensorrt->weights.size(), 2u);
}

TEST(QdqInsertion, AllZeroTensorGetsAUsableScale) {
  EXPECT_FLOAT_EQ(scale_for_amax(0.0f), 1.0f / 127.0f);
  EXPECT_FLOAT_EQ(scale_for_amax(12.7f), 0.1f);
  auto amax = per_channel_amax(Tensor::from_vector<float>({2, 2}, {0, 0, -3, 1}), 0);
  ASSERT_TRUE(amax.ok());
  EXPECT_EQ(*amax, (std::vector<float>{0.0f, 3.0f}));
}

TEST(QdqInsertion, RefusesOldOpsetsAndQuantizedModels) {
  auto old = plan_quantization(matmul_graph(11), Placement::kTensorRT);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("opset 11"), std::string::npos) << old.status().message();
  auto qdq = load_onnx_file(std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_qdq.onnx");
  ASSERT_TRUE(qdq.ok());
  auto again = plan_quantization(*qdq, Placement::kTensorRT);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already quantized"), std::string::npos) << again.status().message();
  Graph graph = matmul_graph(13);
  auto plan = plan_quantization(graph, Placement::kTensorRT);
  auto missing = insert_qdq(graph, *plan, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'x'"), std::string::npos);
  EXPECT_FALSE(parse_placement("everything").ok());
}

}  // namespace
}  // namespace qdqrt::calibration
