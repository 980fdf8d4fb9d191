// Models written by the ONNX project itself (Debian's libonnx-testdata): a conformance check of
// the loader that nobody here wrote.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <map>

#include "parser/onnx_loader.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

std::filesystem::path node_test_dir_or_skip() { return onnx_node_test_dir(); }

TEST(OnnxTestData, LoadsRealModelsThroughFiles) {
  std::filesystem::path dir = node_test_dir_or_skip();
  if (dir.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  for (const char* name : {"test_relu", "test_add", "test_quantizelinear", "test_dequantizelinear",
                           "test_conv_with_strides_padding", "test_matmul_2d"}) {
    auto graph = load_onnx_file((dir / name / "model.onnx").string(), test_options());
    ASSERT_TRUE(graph.ok()) << name << ": " << graph.status().to_string();
    EXPECT_FALSE(graph->nodes.empty()) << name;
    for (const std::string& output : graph->outputs) {
      const ValueInfo* info = graph->find_value(output);
      ASSERT_NE(info, nullptr) << name << " " << output;
      EXPECT_NE(info->dtype, DataType::kUndefined) << name << " " << output;
    }
  }
  auto relu = load_onnx_file((dir / "test_relu/model.onnx").string(), test_options());
  ASSERT_TRUE(relu.ok());
  EXPECT_EQ(relu->nodes[0].op_type, "Relu");
  EXPECT_EQ(relu->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(relu->find_value("y")->static_shape(), (Shape{3, 4, 5}));
}

// Every ai.onnx op libonnx knows, at every opset qdqrt accepts: isolates the loader from which
// op families are registered.
const OpRegistry& all_onnx_ops_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    std::set<std::string> seen;
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas()) {
      if (schema.domain().empty() && seen.insert(schema.Name()).second) {
        r.add(OpSchema{"", schema.Name(), kMinOnnxOpset, kMaxOnnxOpset, nullptr});
      }
    }
    return r;
  }();
  return registry;
}

TEST(OnnxTestData, EveryNodeTestModelLoadsOrFailsCleanly) {
  std::filesystem::path dir = node_test_dir_or_skip();
  if (dir.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  LoadOptions options;
  options.registry = &all_onnx_ops_registry();
  int loaded = 0, total = 0;
  std::map<StatusCode, int> failures;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::path model = entry.path() / "model.onnx";
    if (!std::filesystem::exists(model)) continue;
    ++total;
    auto graph = load_onnx_file(model.string(), options);
    if (graph.ok()) {
      ++loaded;
      continue;
    }
    ++failures[graph.status().code()];
    if (std::getenv("QDQRT_PRINT_FAILURES")) std::cout << graph.status().to_string() << "\n";
    // What may fail: ops/types/opsets qdqrt does not take, never a bug or a rejected valid model.
    EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported)
        << entry.path().filename() << ": " << graph.status().to_string();
  }
  std::cout << "loaded " << loaded << " of " << total << " ONNX node test models\n";
  EXPECT_GT(loaded, total / 2);
}

}  // namespace
}  // namespace qdqrt::testing
