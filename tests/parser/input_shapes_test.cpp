// LoadOptions::input_shapes: concrete input shapes replace symbolic dims before shape inference.
#include <gtest/gtest.h>

#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

const char* kModel = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N, 3] x) => (float[N, 3] y)
  {
    r = Relu(x)
    y = Relu(r)
  })";

TEST(InputShapes, SymbolicBatchBecomesStaticEverywhere) {
  LoadOptions options = test_options();
  options.input_shapes["x"] = {8, 3};
  auto graph = load_text(kModel, options);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  for (const char* value : {"x", "r", "y"}) {
    const ValueInfo* info = graph->find_value(value);
    ASSERT_NE(info, nullptr) << value;
    ASSERT_TRUE(info->static_shape().has_value()) << value;
    EXPECT_EQ(*info->static_shape(), (Shape{8, 3})) << value;
  }
}

TEST(InputShapes, WithoutThemTheBatchStaysSymbolic) {
  auto graph = load_text(kModel);
  ASSERT_TRUE(graph.ok());
  EXPECT_FALSE(graph->find_value("r")->static_shape().has_value());
}

TEST(InputShapes, MismatchesAreClearErrors) {
  LoadOptions options = test_options();
  options.input_shapes["x"] = {8, 4};
  auto graph = load_text(kModel, options);
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("dim 1 is 3 in the model"), std::string::npos) << graph.status().message();

  options.input_shapes["x"] = {8, 3, 1};
  graph = load_text(kModel, options);
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("rank 2"), std::string::npos) << graph.status().message();

  options.input_shapes.clear();
  options.input_shapes["z"] = {1};
  graph = load_text(kModel, options);
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("'z', which is not an input"), std::string::npos) << graph.status().message();
}

}  // namespace
}  // namespace qdqrt::testing
