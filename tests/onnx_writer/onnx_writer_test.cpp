// Round trips through parser/onnx_writer: the graph read back equals the graph written, and the
// reference executor gives bit-identical outputs on both.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "core/attribute_values.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "reference/executor.h"

namespace qdqrt {
namespace {

namespace fs = std::filesystem;

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

bool same_attribute(const Attribute& a, const Attribute& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Attribute::Kind::kFloat: return a.f == b.f;
    case Attribute::Kind::kInt: return a.i == b.i;
    case Attribute::Kind::kString: return a.s == b.s;
    case Attribute::Kind::kTensor: return same_tensor(a.t, b.t);
    case Attribute::Kind::kFloats: return a.floats == b.floats;
    case Attribute::Kind::kInts: return a.ints == b.ints;
    case Attribute::Kind::kStrings: return a.strings == b.strings;
  }
  return false;
}

std::string dims_text(const std::optional<std::vector<Dim>>& dims) { return dims ? dims_to_string(*dims) : "unknown"; }

void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  EXPECT_EQ(a.opsets, b.opsets);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[i];
    SCOPED_TRACE(x.describe());
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op_type, y.op_type);
    EXPECT_EQ(x.domain, y.domain);
    EXPECT_EQ(x.opset, y.opset);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    ASSERT_EQ(x.attributes.size(), y.attributes.size());
    for (const auto& [key, attribute] : x.attributes) {
      ASSERT_TRUE(y.attributes.count(key)) << key;
      EXPECT_TRUE(same_attribute(attribute, y.attributes.at(key))) << key;
    }
  }
  ASSERT_EQ(a.initializers.size(), b.initializers.size());
  for (const auto& [name, tensor] : a.initializers) {
    ASSERT_TRUE(b.initializers.count(name)) << name;
    EXPECT_TRUE(same_tensor(tensor, b.initializers.at(name))) << name;
  }
  for (const auto& [name, value] : a.values) {
    const ValueInfo* other = b.find_value(name);
    ASSERT_NE(other, nullptr) << name;
    EXPECT_EQ(value.dtype, other->dtype) << name;
    EXPECT_EQ(dims_text(value.shape), dims_text(other->shape)) << name;
  }
}

Graph round_trip(const Graph& graph) {
  auto model = graph_to_model(graph);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  std::string bytes;
  EXPECT_TRUE(model->SerializeToString(&bytes));
  auto reloaded = load_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_TRUE(reloaded.ok()) << reloaded.status().to_string();
  return reloaded.ok() ? std::move(reloaded).value() : Graph{};
}

void expect_same_outputs(const Graph& a, const Graph& b, const TensorMap& inputs) {
  auto out_a = run_reference(a, inputs);
  auto out_b = run_reference(b, inputs);
  ASSERT_TRUE(out_a.ok()) << out_a.status().to_string();
  ASSERT_TRUE(out_b.ok()) << out_b.status().to_string();
  ASSERT_EQ(out_a->size(), out_b->size());
  for (const auto& [name, tensor] : *out_a) {
    ASSERT_TRUE(out_b->count(name)) << name;
    EXPECT_TRUE(same_tensor(tensor, out_b->at(name))) << name;
  }
}

class BackendRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendRoundTrip, SameGraphAndOutputs) {
  fs::path dir = fs::path(QDQRT_ONNX_NODE_TEST_DIR) / GetParam();
  if (!fs::exists(dir / "model.onnx")) GTEST_SKIP() << "no ONNX backend test data at " << dir;
  auto graph = load_onnx_file((dir / "model.onnx").string());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  Graph reloaded = round_trip(*graph);
  expect_same_graph(*graph, reloaded);
  TensorMap inputs;
  for (size_t i = 0; i < graph->inputs.size(); ++i) {
    auto tensor = read_tensor_pb_file((dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb")).string());
    ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
    inputs[graph->inputs[i]] = *tensor;
  }
  expect_same_outputs(*graph, reloaded, inputs);
}

INSTANTIATE_TEST_SUITE_P(Models, BackendRoundTrip,
                         ::testing::Values("test_basic_conv_with_padding", "test_conv_with_strides_padding",
                                           "test_gemm_default_matrix_bias", "test_matmul_3d",
                                           "test_quantizelinear", "test_dequantizelinear",
                                           "test_maxpool_2d_pads", "test_batchnorm_example", "test_add_bcast",
                                           "test_clip_default_inbounds", "test_reshape_negative_dim",
                                           "test_constant", "test_cast_FLOAT_to_FLOAT16"));

// The project's QDQ exports: symbolic batch dims, per-channel DQ, BN after conv, many initializers.
class QdqModelRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(QdqModelRoundTrip, SameGraphAndOutputs) {
  fs::path path = fs::path(QDQRT_OPTIMIZER_MODELS_DIR) / GetParam();
  if (!fs::exists(path)) GTEST_SKIP() << "missing " << path << " (models/export_qdq_styles.py makes it)";
  auto graph = load_onnx_file(path.string());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  ASSERT_TRUE(graph->values.at(graph->inputs[0]).shape.has_value());
  EXPECT_FALSE((*graph->values.at(graph->inputs[0]).shape)[0].is_static()) << "batch should be symbolic";
  Graph reloaded = round_trip(*graph);
  expect_same_graph(*graph, reloaded);
  Tensor input(DataType::kFloat, {3, 1, 28, 28});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] = normal(rng);
  expect_same_outputs(*graph, reloaded, {{graph->inputs[0], input}});
}

INSTANTIATE_TEST_SUITE_P(Models, QdqModelRoundTrip,
                         ::testing::Values("resnet_trt.onnx", "mobilenet_ort_u8.onnx", "mobilenet_ort_s8.onnx"));

TEST(OnnxWriter, PacksInt4TwoPerByteLowNibbleFirst) {
  Tensor tensor(DataType::kInt4, {5});
  const int8_t values[5] = {-8, 7, -1, 0, 3};
  for (int i = 0; i < 5; ++i) tensor.data<int8_t>()[i] = values[i];
  auto proto = tensor_to_proto(tensor, "w");
  ASSERT_TRUE(proto.ok()) << proto.status().to_string();
  ASSERT_EQ(proto->raw_data().size(), 3u);
  EXPECT_EQ(static_cast<uint8_t>(proto->raw_data()[0]), 0x78);  // -8 = 0x8 low, 7 high
  EXPECT_EQ(static_cast<uint8_t>(proto->raw_data()[1]), 0x0F);  // -1 = 0xF low, 0 high
  EXPECT_EQ(static_cast<uint8_t>(proto->raw_data()[2]), 0x03);
  auto back = tensor_from_proto(*proto);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(same_tensor(tensor, *back));

  Tensor unsigned_tensor(DataType::kUint4, {3});
  for (int i = 0; i < 3; ++i) unsigned_tensor.data<uint8_t>()[i] = static_cast<uint8_t>(13 + i);
  auto unsigned_proto = tensor_to_proto(unsigned_tensor, "u");
  ASSERT_TRUE(unsigned_proto.ok());
  auto unsigned_back = tensor_from_proto(*unsigned_proto);
  ASSERT_TRUE(unsigned_back.ok()) << unsigned_back.status().to_string();
  EXPECT_TRUE(same_tensor(unsigned_tensor, *unsigned_back));
}

TEST(OnnxWriter, WritesQdqrtDomainNodesWithOpsetImportAndSymbolicDims) {
  Graph graph;
  graph.name = "fused";
  graph.opsets[""] = 13;
  graph.inputs = {"x"};
  graph.outputs = {"y"};
  graph.values["x"] = ValueInfo{"x", DataType::kInt8, std::vector<Dim>{{-1, "batch"}, {4, ""}}};
  graph.values["y"] = ValueInfo{"y", DataType::kFloat, std::vector<Dim>{{-1, "batch"}, {-1, ""}}};
  graph.initializers["scale"] = Tensor::scalar<float>(0.5f);
  Node node;
  node.name = "conv1";
  node.op_type = "QConv";
  node.domain = kQdqrtDomain;
  node.opset = 1;
  node.inputs = {"x", "scale", ""};
  node.outputs = {"y"};
  node.attributes["fused_nodes"] = strings_attribute({"conv1", "bn1", "relu1"});
  node.attributes["activation"] = string_attribute("Relu");
  graph.nodes.push_back(node);

  auto model = graph_to_model(graph);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  bool has_qdqrt = false;
  for (const auto& opset : model->opset_import()) has_qdqrt |= opset.domain() == "qdqrt" && opset.version() == 1;
  EXPECT_TRUE(has_qdqrt);
  const onnx::NodeProto& written = model->graph().node(0);
  EXPECT_EQ(written.domain(), "qdqrt");
  EXPECT_EQ(written.op_type(), "QConv");
  ASSERT_EQ(written.input_size(), 3);
  EXPECT_EQ(written.input(2), "");
  ASSERT_EQ(written.attribute_size(), 2);
  EXPECT_EQ(written.attribute(1).name(), "fused_nodes");
  EXPECT_EQ(written.attribute(1).strings_size(), 3);
  const auto& x_shape = model->graph().input(0).type().tensor_type().shape();
  EXPECT_EQ(model->graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::INT8);
  EXPECT_EQ(x_shape.dim(0).dim_param(), "batch");
  EXPECT_EQ(x_shape.dim(1).dim_value(), 4);
  const auto& y_shape = model->graph().output(0).type().tensor_type().shape();
  EXPECT_FALSE(y_shape.dim(1).has_dim_value());
  EXPECT_FALSE(y_shape.dim(1).has_dim_param());
  ASSERT_EQ(model->graph().initializer_size(), 1);
  EXPECT_EQ(model->graph().initializer(0).raw_data().size(), 4u);
}

TEST(OnnxWriter, ReportsUnwritableFile) {
  Graph graph;
  Status status = write_onnx_file(graph, "/nonexistent-dir/x.onnx");
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("/nonexistent-dir/x.onnx"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace qdqrt
