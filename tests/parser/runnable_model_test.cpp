// Models onnx's shape rules accept but no run could execute, and Q/DQ scales no quantization can
// use: refused at load with the node named, so no command builds an engine from them. Each has a
// must-load twin that differs only in the value checked.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "parser/onnx_loader.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

// Q -> DQ with the scale `s` set to `scale`.
Result<Graph> load_qdq_with_scale(float scale) {
  onnx::ModelProto model = parse_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[1, 4] X) => (float[1, 4] Y)
<float s = {1.0}, int8 zp = {0}>
{
  q = QuantizeLinear(X, s, zp)
  Y = DequantizeLinear(q, s, zp)
}
)");
  for (auto& initializer : *model.mutable_graph()->mutable_initializer()) {
    if (initializer.name() == "s") initializer.set_float_data(0, scale);
  }
  return load_model(model, fuzz_options());
}

TEST(RunnableModel, QuantizationScalesMustBeFiniteAndPositive) {
  EXPECT_TRUE(load_qdq_with_scale(0.05f).ok());
  EXPECT_LOAD_ERROR(load_qdq_with_scale(0.0f), "QuantizeLinear 'QuantizeLinear_0'", "scale 's' is 0", "finite and > 0");
  EXPECT_LOAD_ERROR(load_qdq_with_scale(-0.5f), "scale 's' is -0.5");
  EXPECT_LOAD_ERROR(load_qdq_with_scale(std::numeric_limits<float>::infinity()), "scale 's' is inf");
  EXPECT_LOAD_ERROR(load_qdq_with_scale(std::numeric_limits<float>::quiet_NaN()), "scale 's' is nan");

  // Per channel: the element is named.
  auto per_channel = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (int8[2, 3] Q) => (float[2, 3] Y)
<float[3] s = {0.1, 0.0, 0.2}>
{
  Y = DequantizeLinear <axis = 1> (Q, s)
}
)",
                               fuzz_options());
  EXPECT_LOAD_ERROR(per_channel, "DequantizeLinear", "element 1 is 0");

  // A scale from a Constant node is checked like an initializer.
  auto constant = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (int8[2, 3] Q) => (float[2, 3] Y)
{
  s = Constant <value = float {0.0}> ()
  Y = DequantizeLinear(Q, s)
}
)",
                            fuzz_options());
  EXPECT_LOAD_ERROR(constant, "DequantizeLinear", "scale 's'");
}

std::string conv_model(const std::string& input, const std::string& weight, const std::string& attributes) {
  return R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float)" +
         input + R"( X, float)" + weight + R"( W) => (float[N, M, H, W] Y)
{
  Y = Conv )" +
         attributes + R"( (X, W)
}
)";
}

TEST(RunnableModel, ConvGroupMustDivideTheChannels) {
  EXPECT_TRUE(load_text(conv_model("[1, 8, 6, 6]", "[8, 1, 3, 3]", "<group = 8>"), fuzz_options()).ok());
  EXPECT_LOAD_ERROR(load_text(conv_model("[1, 3, 6, 6]", "[8, 1, 3, 3]", "<group = 8>"), fuzz_options()),
                    "Conv 'Conv_0'", "input 'X' has 3 channels", "group 8");
  EXPECT_LOAD_ERROR(load_text(conv_model("[1, 8, 6, 6]", "[6, 2, 3, 3]", "<group = 4>"), fuzz_options()),
                    "Conv 'Conv_0'", "6 output channels, not a multiple of group 4");
}

// A window larger than the padded input gives a negative output dim; the message names the node.
// With symbolic spatial dims it is caught once the build gives the input's shape.
TEST(RunnableModel, ConvKernelMustFitThePaddedInput) {
  EXPECT_TRUE(load_text(conv_model("[1, 1, 3, 3]", "[1, 1, 5, 5]", "<pads = [1, 1, 1, 1]>"), fuzz_options()).ok());
  EXPECT_LOAD_ERROR(load_text(conv_model("[1, 1, 3, 3]", "[1, 1, 5, 5]", ""), fuzz_options()), "Conv 'Conv_0'",
                    "output 'Y'", "dimension 2 is negative");
  LoadOptions with_shapes = fuzz_options();
  with_shapes.input_shapes["X"] = {1, 1, 5, 5};
  EXPECT_TRUE(load_text(conv_model("[N, 1, H, W]", "[1, 1, 3, 3]", "<dilations = [2, 1]>"), with_shapes).ok());
  // Padded 4, window 5: onnx infers an output dim of 0, which no run can produce.
  with_shapes.input_shapes["X"] = {1, 1, 4, 5};
  EXPECT_LOAD_ERROR(load_text(conv_model("[N, 1, H, W]", "[1, 1, 3, 3]", "<dilations = [2, 1]>"), with_shapes),
                    "Conv 'Conv_0'", "kernel 3 (dilation 2) spans 5", "larger than the padded input's 4");
  // SAME padding always covers the kernel.
  EXPECT_TRUE(
      load_text(conv_model("[1, 1, 3, 3]", "[1, 1, 5, 5]", "<auto_pad = \"SAME_UPPER\">"), fuzz_options()).ok());
}

TEST(RunnableModel, KernelShapeMustMatchTheWeight) {
  EXPECT_TRUE(load_text(conv_model("[1, 1, 6, 6]", "[1, 1, 3, 3]", "<kernel_shape = [3, 3]>"), fuzz_options()).ok());
  EXPECT_LOAD_ERROR(load_text(conv_model("[1, 1, 6, 6]", "[1, 1, 3, 3]", "<kernel_shape = [2, 2]>"), fuzz_options()),
                    "Conv 'Conv_0'", "kernel_shape [2, 2] disagrees with weight 'W'");
}

std::string gather_model(const std::string& index) {
  return R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[4, 5] X) => (float[A, B] Y)
<int64[2] i = {0, )" +
         index + R"(}>
{
  Y = Gather <axis = 1> (X, i)
}
)";
}

TEST(RunnableModel, ConstantGatherIndicesMustBeInRange) {
  EXPECT_TRUE(load_text(gather_model("4"), fuzz_options()).ok());
  EXPECT_TRUE(load_text(gather_model("-5"), fuzz_options()).ok());
  EXPECT_LOAD_ERROR(load_text(gather_model("5"), fuzz_options()), "Gather 'Gather_0'", "index 5 of 'i'", "axis 1",
                    "size 5");
  EXPECT_LOAD_ERROR(load_text(gather_model("-6"), fuzz_options()), "index -6");
}

}  // namespace
}  // namespace qdqrt::testing
