// The ONNX backend node tests (Debian's libonnx-testdata) of the reference's op families, and
// extra cases in the same layout with PyTorch as the oracle (data/torch_cases, written by
// tools/make_torch_cases.py; QDQRT_EXTRA_NODE_TEST_DIR points elsewhere), run through the real
// loader (parser/onnx_loader.h) and run_reference. One test per case.
//
// tests/conformance runs every ONNX case as well, at the opsets qdqrt registers (10 and up).
// Here a case written at an older opset also runs when none of its ops changed between its
// opset and 10, since it then means the same at 10: its opset_import is raised to 10 before the
// model is loaded. Skips and the comparison are the conformance suite's
// (tests/common/onnx_node_case.h).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/op_registry.h"
#include "parser/onnx_loader.h"
#include "reference/executor.h"
#include "reference/kernel_registry.h"
#include "tests/common/onnx_node_case.h"

namespace qdqrt {
namespace {

namespace fs = std::filesystem;

const char* kNodeTestDir = "/usr/lib/python3/dist-packages/onnx/backend/test/data/node";

// The ops of the reference's op families (reference/ops/<family>.cpp) in the default domain.
const std::set<std::string>& family_ops() {
  static const std::set<std::string> ops = {
      // quantize
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
      "MatMulInteger",
      // conv, matmul, pool, normalization, resize
      "Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
      "BatchNormalization", "LayerNormalization", "Resize",
      // elementwise
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu", "Sqrt", "Exp", "Log", "Erf", "Neg", "Abs", "Reciprocal",
      "Relu", "LeakyRelu", "Elu", "Celu", "Selu", "ThresholdedRelu", "HardSigmoid", "HardSwish", "Gelu", "Mish",
      "Shrink", "Sigmoid", "Tanh", "Floor", "Ceil", "Round", "Sign", "Softplus", "Softsign", "Sin", "Cos", "Tan",
      "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf", "Not", "And", "Or", "Xor",
      "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Where", "Min", "Max", "Sum", "Mean", "Clip",
      "Softmax", "LogSoftmax", "Hardmax",
      // reduce
      "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
      "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "CumSum",
      // tensor
      "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather", "GatherElements",
      "Shape", "Size", "Cast", "CastLike", "Constant", "ConstantOfShape", "Identity", "Dropout", "Pad", "Expand",
      "Range", "Tile", "NonZero", "DepthToSpace", "SpaceToDepth", "ScatterND"};
  return ops;
}

struct NodeCase {
  std::string name;
  fs::path dir;
  // Off for the PyTorch cases: their declared shapes are PyTorch's, and ONNX 1.12's shape
  // inference of pools with ceil_mode lacks the rule that the last window starts inside the
  // input (later ONNX releases, PyTorch and qdqrt apply it), so it contradicts them.
  bool run_shape_inference = true;
};
void PrintTo(const NodeCase& node_case, std::ostream* out) { *out << node_case.name; }

Result<onnx::ModelProto> read_model(const fs::path& path) {
  onnx::ModelProto model;
  std::ifstream file(path, std::ios::binary);
  if (!file || !model.ParseFromIstream(&file)) return io_error("cannot parse '{}' as an ONNX model", path.string());
  return model;
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// The ONNX cases whose model uses an op of the families; all cases of the extra directory.
std::vector<NodeCase> onnx_family_cases() {
  std::vector<NodeCase> cases;
  for (const std::string& name : testing::list_node_cases(kNodeTestDir)) {
    Result<onnx::ModelProto> model = read_model(fs::path(kNodeTestDir) / name / "model.onnx");
    if (!model.ok()) continue;
    for (const auto& node : model->graph().node()) {
      if (is_default_domain(node.domain()) && family_ops().count(node.op_type())) {
        cases.push_back({name, fs::path(kNodeTestDir) / name});
        break;
      }
    }
  }
  return cases;
}

fs::path extra_case_dir() {
  const char* dir = std::getenv("QDQRT_EXTRA_NODE_TEST_DIR");
  return dir ? dir : QDQRT_REFERENCE_TORCH_CASES;
}

std::vector<NodeCase> extra_cases() {
  std::vector<NodeCase> cases;
  for (const std::string& name : testing::list_node_cases(extra_case_dir())) {
    cases.push_back({name, extra_case_dir() / name, false});
  }
  return cases;
}

// A model below qdqrt's minimum opset is raised to it when none of its ops changed in between;
// otherwise the reason it cannot run.
std::string raise_old_opset(onnx::ModelProto& model) {
  for (auto& import : *model.mutable_opset_import()) {
    if (!is_default_domain(import.domain()) || import.version() >= kMinOnnxOpset) continue;
    const int old_opset = static_cast<int>(import.version());
    for (const auto& node : model.graph().node()) {
      const auto* old_schema = onnx::OpSchemaRegistry::Schema(node.op_type(), old_opset);
      const auto* schema_at_minimum = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(kMinOnnxOpset));
      if (old_schema == nullptr || schema_at_minimum == nullptr ||
          old_schema->since_version() != schema_at_minimum->since_version()) {
        return fmt::format("model opset {} is below qdqrt's minimum {} and {} changed since", old_opset, kMinOnnxOpset,
                           node.op_type());
      }
    }
    import.set_version(kMinOnnxOpset);
  }
  return "";
}

void check_node_case(const NodeCase& node_case) {
  if (const char* reason = testing::excluded_case_reason(node_case.name)) GTEST_SKIP() << "excluded: " << reason;
  Result<onnx::ModelProto> model = read_model(node_case.dir / "model.onnx");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const std::string too_old = raise_old_opset(*model);
  if (!too_old.empty()) GTEST_SKIP() << too_old;
  const testing::ModelFacts facts = testing::model_facts(*model);
  if (!facts.unsupported.empty()) GTEST_SKIP() << fmt::format("{}", fmt::join(facts.unsupported, "; "));

  LoadOptions options;
  options.external_data_dir = node_case.dir.string();
  options.run_shape_inference = node_case.run_shape_inference;
  Result<Graph> graph = load_onnx_model(*model, options);
  ASSERT_TRUE(graph.ok()) << "load: " << graph.status().to_string();

  const std::vector<fs::path> data_set_dirs = testing::data_set_dirs(node_case.dir);
  ASSERT_FALSE(data_set_dirs.empty()) << "no test_data_set_* in " << node_case.dir;
  for (const fs::path& data_set_dir : data_set_dirs) {
    SCOPED_TRACE(data_set_dir.filename().string());
    Result<testing::DataSet> data_set = testing::read_data_set(data_set_dir, facts);
    ASSERT_TRUE(data_set.ok()) << data_set.status().to_string();
    Result<TensorMap> outputs = run_reference(*graph, data_set->inputs);
    ASSERT_TRUE(outputs.ok()) << "run: " << outputs.status().to_string();
    for (const auto& [name, expected] : data_set->expected_outputs) {
      ASSERT_TRUE(outputs->count(name)) << "output '" << name << "' was not produced";
      const std::string difference = testing::compare_tensors(outputs->at(name), expected);
      EXPECT_TRUE(difference.empty()) << "output '" << name << "': " << difference;
    }
  }
}

class NodeCaseTest : public ::testing::TestWithParam<NodeCase> {};

TEST_P(NodeCaseTest, MatchesExpectedOutputs) { check_node_case(GetParam()); }

std::string case_name(const ::testing::TestParamInfo<NodeCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Onnx, NodeCaseTest, ::testing::ValuesIn(onnx_family_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Torch, NodeCaseTest, ::testing::ValuesIn(extra_cases()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NodeCaseTest);

// The suite must find the data: an empty discovery would silently pass everything.
TEST(NodeCaseData, CasesAreDiscovered) {
  ASSERT_TRUE(fs::is_directory(kNodeTestDir)) << "libonnx-testdata is not installed: " << kNodeTestDir;
  EXPECT_GT(onnx_family_cases().size(), 700u);
  EXPECT_GT(extra_cases().size(), 0u) << "no extra cases in " << extra_case_dir();
}

// Every op of the families has both a schema (core/ops) and a reference kernel.
TEST(FamilyRegistrationTest, EveryOpHasSchemaAndKernel) {
  for (const std::string& op_type : family_ops()) {
    const OpSchema* schema = OpRegistry::instance().find("", op_type);
    ASSERT_NE(schema, nullptr) << op_type;
    EXPECT_LE(kMinOnnxOpset, schema->min_opset) << op_type;
    EXPECT_EQ(schema->max_opset, kMaxOnnxOpset) << op_type;
    EXPECT_NE(KernelRegistry::instance().find("", op_type), nullptr) << op_type;
  }
}

}  // namespace
}  // namespace qdqrt
