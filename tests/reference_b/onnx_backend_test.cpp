// Conformance against the ONNX backend node tests shipped by Debian's libonnx-testdata:
// every case whose nodes are all ops of the elementwise/reduce/tensor families runs through
// the reference executor and must match the stored outputs. Models are converted with a
// minimal NodeProto/TensorProto converter local to this test (the real loader is separate).
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "parser/onnx_loader.h"
#include "core/op_registry.h"
#include "reference/executor.h"
#include "reference/kernel_registry.h"
#include "reference/ops/half_float.h"

namespace qdqrt {
namespace {

namespace fs = std::filesystem;

const char* kNodeTestDir = "/usr/lib/python3/dist-packages/onnx/backend/test/data/node";

// Ops implemented by the elementwise, reduce and tensor families (this test's scope).
const std::set<std::string>& family_ops() {
  static const std::set<std::string> ops = {
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
      "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
      "GatherElements", "Shape", "Size", "Cast", "CastLike", "Constant", "ConstantOfShape", "Identity", "Dropout",
      "Pad", "Expand", "Range", "Tile", "NonZero", "DepthToSpace", "SpaceToDepth"};
  return ops;
}

const char* kBfloat16Truncation =
    "ONNX 1.12's expected outputs truncate float->bfloat16; qdqrt rounds to nearest even like later ONNX "
    "releases and ONNX Runtime";

// Cases of in-scope ops that are out of qdqrt's scope, with the reason.
const std::map<std::string, std::string>& out_of_scope_cases() {
  static const std::map<std::string, std::string> cases = {
      {"test_cast_FLOAT_to_STRING", "string tensors are not supported"},
      {"test_cast_STRING_to_FLOAT", "string tensors are not supported"},
      {"test_castlike_FLOAT_to_STRING", "string tensors are not supported"},
      {"test_castlike_STRING_to_FLOAT", "string tensors are not supported"},
      {"test_castlike_FLOAT_to_STRING_expanded", "string tensors are not supported"},
      {"test_castlike_STRING_to_FLOAT_expanded", "string tensors are not supported"},
      {"test_cast_FLOAT_to_BFLOAT16", kBfloat16Truncation},
      {"test_castlike_FLOAT_to_BFLOAT16", kBfloat16Truncation},
      {"test_castlike_FLOAT_to_BFLOAT16_expanded", kBfloat16Truncation},
      {"test_identity_opt", "optional types are not supported"},
      {"test_identity_sequence", "sequence types are not supported"},
      {"test_training_dropout", "training-mode Dropout is random"},
      {"test_training_dropout_default", "training-mode Dropout is random"},
      {"test_training_dropout_default_mask", "training-mode Dropout is random"},
      {"test_training_dropout_mask", "training-mode Dropout is random"},
  };
  return cases;
}

bool read_proto(const std::string& path, google::protobuf::Message& message) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  return message.ParseFromIstream(&file);
}

// TensorProto -> Tensor, from raw_data or the typed repeated fields.
Result<Attribute> attribute_from_proto(const onnx::AttributeProto& proto) {
  Attribute attribute;
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT: attribute.kind = Attribute::Kind::kFloat; attribute.f = proto.f(); break;
    case onnx::AttributeProto::INT: attribute.kind = Attribute::Kind::kInt; attribute.i = proto.i(); break;
    case onnx::AttributeProto::STRING: attribute.kind = Attribute::Kind::kString; attribute.s = proto.s(); break;
    case onnx::AttributeProto::TENSOR: {
      attribute.kind = Attribute::Kind::kTensor;
      QDQRT_ASSIGN_OR_RETURN(attribute.t, tensor_from_proto(proto.t()));
      break;
    }
    case onnx::AttributeProto::FLOATS:
      attribute.kind = Attribute::Kind::kFloats;
      attribute.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      attribute.kind = Attribute::Kind::kInts;
      attribute.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      attribute.kind = Attribute::Kind::kStrings;
      attribute.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    default: return unsupported("attribute '{}': type {} not supported", proto.name(), static_cast<int>(proto.type()));
  }
  return attribute;
}

struct BackendCase {
  std::string name;
  std::string dir;
};

// Every backend test case that uses at least one op of the three families.
std::vector<BackendCase> discover_cases() {
  std::vector<BackendCase> cases;
  std::error_code error;
  if (!fs::is_directory(kNodeTestDir, error)) return cases;
  for (const auto& entry : fs::directory_iterator(kNodeTestDir, error)) {
    onnx::ModelProto model;
    if (!read_proto((entry.path() / "model.onnx").string(), model)) continue;
    bool uses_family_op = false;
    for (const auto& node : model.graph().node()) {
      if ((node.domain().empty() || node.domain() == "ai.onnx") && family_ops().count(node.op_type())) uses_family_op = true;
    }
    if (uses_family_op) cases.push_back({entry.path().filename().string(), entry.path().string()});
  }
  std::sort(cases.begin(), cases.end(), [](const BackendCase& a, const BackendCase& b) { return a.name < b.name; });
  return cases;
}

// The reason the case cannot run here, or "" when it can. Fills graph on success.
std::string build_graph(const onnx::ModelProto& model, Graph& graph, std::string& failure) {
  int64_t opset = 0;
  for (const auto& import : model.opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx") opset = import.version();
  }
  if (opset < kMinOnnxOpset) {
    // An older model still tests qdqrt when none of its ops changed between its opset and 10:
    // then it means the same at opset 10.
    for (const auto& node : model.graph().node()) {
      const auto* old_schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset));
      const auto* schema_at_10 = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(kMinOnnxOpset));
      if (old_schema == nullptr || schema_at_10 == nullptr || old_schema->since_version() != schema_at_10->since_version()) {
        return "model opset " + std::to_string(opset) + " is below qdqrt's minimum 10 and " + node.op_type() +
               " changed since";
      }
    }
    opset = kMinOnnxOpset;
  }
  graph.opsets[""] = opset;
  for (const auto& initializer : model.graph().initializer()) {
    Result<Tensor> tensor = tensor_from_proto(initializer);
    if (!tensor.ok()) return tensor.status().to_string();
    graph.initializers[initializer.name()] = *tensor;
  }
  for (const auto& input : model.graph().input()) {
    if (!graph.initializers.count(input.name())) graph.inputs.push_back(input.name());
    if (!input.type().has_tensor_type()) return "non-tensor input type";
  }
  for (const auto& output : model.graph().output()) {
    graph.outputs.push_back(output.name());
    if (!output.type().has_tensor_type()) return "non-tensor output type";
  }
  int index = 0;
  for (const auto& proto : model.graph().node()) {
    Node node;
    node.name = proto.name().empty() ? proto.op_type() + "_" + std::to_string(index) : proto.name();
    ++index;
    node.op_type = proto.op_type();
    node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
    node.opset = opset;
    if (!node.domain.empty() || !family_ops().count(node.op_type)) return "uses op " + node.op_type + " of another family";
    node.inputs.assign(proto.input().begin(), proto.input().end());
    node.outputs.assign(proto.output().begin(), proto.output().end());
    for (const auto& attribute : proto.attribute()) {
      Result<Attribute> converted = attribute_from_proto(attribute);
      if (!converted.ok()) return converted.status().to_string();
      node.attributes[attribute.name()] = *converted;
    }
    const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
    if (schema == nullptr) {
      failure = "no schema for " + node.op_type;
      return "";
    }
    if (schema->parse_attributes != nullptr) {
      auto typed = schema->parse_attributes(node);
      if (!typed.ok()) {
        failure = typed.status().to_string();
        return "";
      }
      node.typed_attributes = *typed;
    }
    graph.nodes.push_back(std::move(node));
  }
  return "";
}

double element_as_double(const Tensor& tensor, int64_t i) {
  if (tensor.dtype() == DataType::kFloat16) return reference::half_to_float(tensor.data<uint16_t>()[i]);
  if (tensor.dtype() == DataType::kBFloat16) return reference::bfloat16_to_float(tensor.data<uint16_t>()[i]);
  return tensor.value_as_double(i);
}

std::string compare(const std::string& name, const Tensor& expected, const Tensor& actual) {
  if (expected.dtype() != actual.dtype()) {
    return fmt::format("{}: dtype {} expected {}", name, dtype_name(actual.dtype()), dtype_name(expected.dtype()));
  }
  if (expected.shape() != actual.shape()) {
    return fmt::format("{}: shape {} expected {}", name, shape_to_string(actual.shape()), shape_to_string(expected.shape()));
  }
  const bool is_float = dtype_is_float(expected.dtype());
  const size_t size = dtype_size(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (is_float) {
      double e = element_as_double(expected, i);
      double a = element_as_double(actual, i);
      if (std::isnan(e) && std::isnan(a)) continue;
      if (std::isinf(e) && e == a) continue;
      if (!(std::fabs(a - e) <= 1e-4 + 1e-3 * std::fabs(e))) return fmt::format("{}[{}]: {} expected {}", name, i, a, e);
    } else if (std::memcmp(static_cast<const std::byte*>(expected.raw_data()) + i * static_cast<int64_t>(size),
                           static_cast<const std::byte*>(actual.raw_data()) + i * static_cast<int64_t>(size), size) != 0) {
      return fmt::format("{}[{}]: {} expected {}", name, i, actual.value_as_int64(i), expected.value_as_int64(i));
    }
  }
  return "";
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 with the same bits: re-tag them with
// the dtype the graph declares.
Tensor retag_bfloat16(const Tensor& tensor, int32_t declared_elem_type) {
  if (declared_elem_type != onnx::TensorProto::BFLOAT16 || tensor.dtype() != DataType::kUint16) return tensor;
  Tensor retagged(DataType::kBFloat16, tensor.shape());
  std::memcpy(retagged.raw_data(), tensor.raw_data(), tensor.nbytes());
  return retagged;
}

int32_t declared_elem_type(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values, const std::string& name) {
  for (const auto& value : values) {
    if (value.name() == name) return value.type().tensor_type().elem_type();
  }
  return 0;
}

class OnnxBackendNodeTest : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OnnxBackendNodeTest, MatchesStoredOutputs) {
  const BackendCase& test_case = GetParam();
  auto skipped = out_of_scope_cases().find(test_case.name);
  if (skipped != out_of_scope_cases().end()) GTEST_SKIP() << skipped->second;

  onnx::ModelProto model;
  ASSERT_TRUE(read_proto(test_case.dir + "/model.onnx", model));
  Graph graph;
  std::string failure;
  std::string skip_reason = build_graph(model, graph, failure);
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(failure.empty()) << failure;

  int data_sets = 0;
  for (int set = 0;; ++set) {
    std::string set_dir = test_case.dir + "/test_data_set_" + std::to_string(set);
    if (!fs::is_directory(set_dir)) break;
    ++data_sets;
    TensorMap inputs;
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      onnx::TensorProto proto;
      ASSERT_TRUE(read_proto(set_dir + "/input_" + std::to_string(i) + ".pb", proto)) << "input " << i;
      Result<Tensor> tensor = tensor_from_proto(proto);
      ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
      inputs[graph.inputs[i]] = retag_bfloat16(*tensor, declared_elem_type(model.graph().input(), graph.inputs[i]));
    }
    Result<TensorMap> outputs = run_reference(graph, inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
      onnx::TensorProto proto;
      ASSERT_TRUE(read_proto(set_dir + "/output_" + std::to_string(i) + ".pb", proto)) << "output " << i;
      Result<Tensor> expected = tensor_from_proto(proto);
      ASSERT_TRUE(expected.ok()) << expected.status().to_string();
      Tensor expected_tensor = retag_bfloat16(*expected, declared_elem_type(model.graph().output(), graph.outputs[i]));
      std::string mismatch = compare(graph.outputs[i], expected_tensor, outputs->at(graph.outputs[i]));
      EXPECT_TRUE(mismatch.empty()) << mismatch;
    }
  }
  EXPECT_GT(data_sets, 0);
}

// Reading ~900 models takes a moment: skip it in processes whose filter cannot select a
// backend case (ctest runs each unit test in its own process).
std::vector<BackendCase> cases_for_filter() {
  const std::string filter = GTEST_FLAG_GET(filter);
  if (filter.find('*') == std::string::npos && filter.find('?') == std::string::npos &&
      filter.find("OnnxBackendNodeTest") == std::string::npos) {
    return {};
  }
  return discover_cases();
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxBackendNodeTest, ::testing::ValuesIn(cases_for_filter()),
                         [](const ::testing::TestParamInfo<BackendCase>& info) { return info.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxBackendNodeTest);

// The suite must find the data: an empty discovery would silently pass everything.
TEST(OnnxBackendNodeTestData, CasesAreDiscovered) {
  ASSERT_TRUE(fs::is_directory(kNodeTestDir)) << "libonnx-testdata is not installed: " << kNodeTestDir;
  EXPECT_GT(discover_cases().size(), 300u);
}

}  // namespace
}  // namespace qdqrt

namespace qdqrt {
namespace {

// Every op of the three families has both a schema (parser) and a reference kernel.
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
