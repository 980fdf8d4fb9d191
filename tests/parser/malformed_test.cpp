// A corpus of malformed models: every one must give a non-OK Status whose message names the
// problem and where it is, and none may crash.
#include <gtest/gtest.h>

#include <random>

#include "parser/onnx_loader.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

TEST(MalformedModel, EveryTruncationIsAnError) {
  std::string bytes = serialize(parse_model(kAddReluModel));
  ASSERT_TRUE(load_onnx_bytes(bytes.data(), bytes.size(), test_options()).ok());
  for (size_t size = 0; size < bytes.size(); ++size) {
    auto graph = load_onnx_bytes(bytes.data(), size, test_options());
    EXPECT_FALSE(graph.ok()) << "truncated to " << size << " of " << bytes.size() << " bytes loaded";
  }
  EXPECT_LOAD_ERROR(load_onnx_bytes(bytes.data(), bytes.size() / 2, test_options()), "not a valid protobuf");
}

TEST(MalformedModel, EmptyInput) {
  EXPECT_LOAD_ERROR(load_onnx_bytes("", 0, test_options()), "empty");
  TempDir dir;
  dir.write("empty.onnx", "");
  EXPECT_LOAD_ERROR(load_onnx_file((dir.path() / "empty.onnx").string(), test_options()), "empty", "empty.onnx");
}

TEST(MalformedModel, TextIsNotAModel) {
  std::string text = "ir_version: 8\nthis is not a protobuf, it is text pretending to be a model\n";
  EXPECT_FALSE(load_onnx_bytes(text.data(), text.size(), test_options()).ok());
  std::string model_text = kAddReluModel;
  EXPECT_FALSE(load_onnx_bytes(model_text.data(), model_text.size(), test_options()).ok());
}

TEST(MalformedModel, RandomBytes) {
  std::mt19937 generator(1234);
  for (int round = 0; round < 300; ++round) {
    std::string bytes(1 + generator() % 512, '\0');
    for (char& byte : bytes) byte = static_cast<char>(generator());
    EXPECT_FALSE(load_onnx_bytes(bytes.data(), bytes.size(), test_options()).ok()) << "round " << round;
  }
}

TEST(MalformedModel, MissingProducerOrInitializer) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  Y = Add(X, Bias)
}
)");
  EXPECT_LOAD_ERROR(graph, "node 'Add_0' (Add)", "input 'Bias'", "no producer");
}

TEST(MalformedModel, GraphOutputNeverProduced) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y, float[3] Z)
{
  Y = Relu(X)
}
)");
  EXPECT_LOAD_ERROR(graph, "graph output 'Z'", "never produced");
}

TEST(MalformedModel, Cycle) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  A = Add(X, C)
  B = Relu(A)
  C = Relu(B)
  Y = Relu(A)
}
)");
  EXPECT_LOAD_ERROR(graph, "cycle");
  // The node named is on the cycle (A -> B -> C -> A), not Y's node.
  const std::string& message = graph.status().message();
  EXPECT_TRUE(message.find("Add_0") != std::string::npos || message.find("Relu_1") != std::string::npos ||
              message.find("Relu_2") != std::string::npos)
      << message;

  auto self_loop = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  Y = Add(X, Y)
}
)");
  EXPECT_LOAD_ERROR(self_loop, "cycle", "Add_0");
}

TEST(MalformedModel, DuplicateOutputNames) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  Y = Relu(X)
  Y = Relu(X)
}
)");
  EXPECT_LOAD_ERROR(graph, "'Y'", "produced twice", "Relu_0", "Relu_1");

  auto shadows_input = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] X)
{
  X = Relu(X)
}
)");
  EXPECT_LOAD_ERROR(shadows_input, "output 'X'", "graph input");
}

TEST(MalformedModel, DtypeMismatchBetweenDeclarationAndInitializer) {
  onnx::ModelProto model = parse_model(kAddReluModel);
  model.mutable_graph()->mutable_initializer(0)->set_data_type(onnx::TensorProto::INT32);
  model.mutable_graph()->mutable_initializer(0)->clear_float_data();
  model.mutable_graph()->mutable_initializer(0)->clear_raw_data();
  for (int i = 0; i < 3; ++i) model.mutable_graph()->mutable_initializer(0)->add_int32_data(i);
  EXPECT_LOAD_ERROR(load_model(model), "dtype mismatch", "graph input 'B'", "float32", "int32");
}

TEST(MalformedModel, ShapeMismatchBetweenDeclarationAndInitializer) {
  onnx::ModelProto model = parse_model(kAddReluModel);
  model.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(4);
  EXPECT_LOAD_ERROR(load_model(model), "shape mismatch", "'B'");
}

TEST(MalformedModel, NegativeDims) {
  onnx::ModelProto model = parse_model(kAddReluModel);
  model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-2);
  EXPECT_LOAD_ERROR(load_model(model), "graph input 'X'", "dimension 1 is negative (-2)");

  model = parse_model(kAddReluModel);
  model.mutable_graph()->mutable_initializer(0)->set_dims(0, -3);
  EXPECT_LOAD_ERROR(load_model(model), "initializer", "tensor 'B'", "negative");
}

TEST(MalformedModel, OverflowingDims) {
  onnx::ModelProto model = parse_model(kAddReluModel);
  auto* initializer = model.mutable_graph()->mutable_initializer(0);
  initializer->set_dims(0, int64_t{1} << 40);
  initializer->add_dims(int64_t{1} << 40);
  EXPECT_LOAD_ERROR(load_model(model), "tensor 'B'", "overflows");

  model = parse_model(kAddReluModel);
  auto* shape = model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->mutable_dim(1)->set_dim_value(int64_t{1} << 62);
  shape->add_dim()->set_dim_value(int64_t{1} << 62);
  EXPECT_LOAD_ERROR(load_model(model), "graph input 'X'", "overflows");
}

TEST(MalformedModel, RawDataSizeMismatch) {
  onnx::ModelProto model = parse_model(kAddReluModel);
  auto* initializer = model.mutable_graph()->mutable_initializer(0);
  initializer->clear_float_data();
  initializer->set_raw_data(std::string(10, '\0'));
  EXPECT_LOAD_ERROR(load_model(model), "tensor 'B'", "raw_data has 10 bytes", "need 12");
}

TEST(MalformedModel, UnsupportedOp) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  Y = Foo(X)
}
)");
  EXPECT_LOAD_ERROR(graph, "node 'Foo_0' (Foo): op 'Foo' is not supported (domain ai.onnx, opset 13)");
  EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported);

  // Known to qdqrt, but only from opset 14 on.
  auto too_old = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  Y = HardSwish(X)
}
)");
  EXPECT_LOAD_ERROR(too_old, "HardSwish", "opsets 14..21", "opset 13");
}

TEST(MalformedModel, UnsupportedDomain) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13, "com.foo" : 1]>
agraph (float[3] X) => (float[3] Y)
{
  Y = com.foo.Bar(X)
}
)");
  EXPECT_LOAD_ERROR(graph, "Bar", "domain 'com.foo' is not supported");

  auto not_imported = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  Y = com.example.Fused(X)
}
)");
  EXPECT_LOAD_ERROR(not_imported, "Fused", "com.example", "opset_import");
}

TEST(MalformedModel, OpsetOutsideSupportedRange) {
  for (int opset : {9, 22}) {
    std::string text = std::string(R"(
<ir_version: 8, opset_import: ["" : )") + std::to_string(opset) + R"(]>
agraph (float[3] X) => (float[3] Y)
{
  Y = Relu(X)
}
)";
    auto graph = load_text(text);
    const std::string opset_text = std::to_string(opset);
    EXPECT_LOAD_ERROR(graph, "ai.onnx opset", opset_text.c_str(), "10..21");
    EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported);
  }
}

TEST(MalformedModel, InconsistentShapes) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2, 3] A, float[4, 5] B) => (float[2, 3] Y)
{
  Y = Add(A, B)
}
)");
  EXPECT_LOAD_ERROR(graph, "node 'Add_0' (Add)", "shape inference failed");

  // Inference result that contradicts the declared output shape.
  auto declared = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2, 3] A) => (float[7, 3] Y)
{
  Y = Relu(A)
}
)");
  EXPECT_LOAD_ERROR(declared, "Relu", "'Y'");
}

TEST(MalformedModel, CheckerErrorsNameTheNode) {
  // Conv needs at least two inputs.
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[1, 1, 4, 4] X) => (float[1, 1, 4, 4] Y)
{
  Y = Conv(X)
}
)");
  EXPECT_LOAD_ERROR(graph, "node 'Conv_0' (Conv)");

  auto bad_attribute = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X) => (float[3] Y)
{
  Y = Relu <not_an_attribute = 3> (X)
}
)");
  EXPECT_LOAD_ERROR(bad_attribute, "Relu_0", "not_an_attribute");
}

TEST(MalformedModel, ConvWeightRankMismatchIsCaughtBeforeLibonnxReadsOutOfBounds) {
  // libonnx 1.12's conv shape rule reads past its vectors for this model (a fuzzer finding).
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[1, 7, 7] X, float[1, 1, 1, 1] W) => (float[1, 1, 7] Y)
{
  Y = Conv(X, W)
}
)");
  EXPECT_LOAD_ERROR(graph, "node 'Conv_0' (Conv)", "weight 'W' has rank 4", "input 'X' has rank 3");
}

TEST(MalformedModel, ValuesLibonnxWouldDivideByOrLoopOnAreRejected) {
  auto zero_stride = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[1, 1, 5, 5] X) => (float[1, 1, 2, 2] Y)
{
  Y = AveragePool <kernel_shape = [2, 2], strides = [2, 0]> (X)
}
)", fuzz_options());
  EXPECT_LOAD_ERROR(zero_stride, "AveragePool", "'strides' has value 0");

  auto huge_same_pad = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[N, 1, 1099511627776] X) => (float[N, 1, 2] Y)
{
  Y = MaxPool <kernel_shape = [2], strides = [2], auto_pad = "SAME_UPPER"> (X)
}
)", fuzz_options());
  EXPECT_LOAD_ERROR(huge_same_pad, "MaxPool", "spatial dim 2");

  auto long_shape = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X, int64[2147483648] S) => (float[3] Y)
{
  Y = Expand(X, S)
}
)", fuzz_options());
  EXPECT_LOAD_ERROR(long_shape, "Expand", "shape input 'S'", "2147483648 elements");

  auto axis = load_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
agraph (float[3, 4] X, float[4] W) => (float[3, 4] Y)
{
  Y = LayerNormalization <axis = 5> (X, W)
}
)", fuzz_options());
  EXPECT_LOAD_ERROR(axis, "LayerNormalization", "'axis' = 5 is out of range for rank 2");
}

TEST(MalformedModel, TypeConstraintViolation) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (int8[3] X) => (int8[3] Y)
{
  Y = Relu(X)
}
)");
  EXPECT_LOAD_ERROR(graph, "Relu_0");
}

TEST(MalformedModel, GraphAttributeIsUnsupported) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (bool C, float[3] X) => (float[3] Y)
{
  Y = If (C) <
    then_branch = g1 () => (float[3] A) { A = Relu(X) },
    else_branch = g2 () => (float[3] B) { B = Identity(X) }
  >
}
)");
  EXPECT_LOAD_ERROR(graph, "If", "then_branch", "graph attributes");
  EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported);
}

TEST(MalformedModel, StringInitializerIsUnsupported) {
  onnx::ModelProto model = parse_model(kAddReluModel);
  auto* initializer = model.mutable_graph()->add_initializer();
  initializer->set_name("S");
  initializer->set_data_type(onnx::TensorProto::STRING);
  initializer->add_string_data("hello");
  auto graph = load_model(model);
  EXPECT_LOAD_ERROR(graph, "tensor 'S'", "string tensors are not supported");
}

TEST(MalformedModel, ModelLevelProblems) {
  onnx::ModelProto model = parse_model(kAddReluModel);
  model.clear_opset_import();
  EXPECT_LOAD_ERROR(load_model(model), "no opset_import");

  model = parse_model(kAddReluModel);
  model.clear_graph();
  EXPECT_LOAD_ERROR(load_model(model), "no graph");

  model = parse_model(kAddReluModel);
  model.set_ir_version(0);
  EXPECT_LOAD_ERROR(load_model(model), "ir_version");

  model = parse_model(kAddReluModel);
  model.mutable_graph()->clear_output();
  EXPECT_LOAD_ERROR(load_model(model), "no outputs");

  model = parse_model(kAddReluModel);
  *model.mutable_graph()->add_input() = model.graph().input(0);
  EXPECT_LOAD_ERROR(load_model(model), "graph input 'X'", "twice");

  model = parse_model(kAddReluModel);
  *model.mutable_graph()->add_initializer() = model.graph().initializer(0);
  EXPECT_LOAD_ERROR(load_model(model), "initializer 'B'", "twice");

  model = parse_model(kAddReluModel);
  model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_sequence_type();
  EXPECT_LOAD_ERROR(load_model(model), "graph input 'X'", "tensor types");
}

}  // namespace
}  // namespace qdqrt::testing
