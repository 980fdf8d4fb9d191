#include "tests/common/onnx_node_case.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "core/op_registry.h"
#include "parser/onnx_loader.h"
#include "reference/ops/half_float.h"

namespace qdqrt::testing {

namespace fs = std::filesystem;

namespace {

// Known out-of-scope features: case name (or a prefix ending in '*') -> reason.
struct Exclusion {
  const char* pattern;
  const char* reason;
};
constexpr Exclusion kExcludedCases[] = {
    {"test_batchnorm_epsilon_training_mode", "training-mode BatchNormalization (running statistics outputs)"},
    {"test_batchnorm_example_training_mode", "training-mode BatchNormalization (running statistics outputs)"},
    {"test_training_dropout", "training-mode Dropout with ratio > 0 (random mask) is out of scope"},
    {"test_training_dropout_default", "training-mode Dropout with ratio > 0 (random mask) is out of scope"},
    {"test_training_dropout_mask", "training-mode Dropout with ratio > 0 (random mask) is out of scope"},
    {"test_training_dropout_default_mask", "training-mode Dropout with ratio > 0 (random mask) is out of scope"},
    // Problems of the ONNX 1.12 data, not of the ops:
    {"test_cast_FLOAT_to_BFLOAT16",
     "ONNX 1.12 data truncate float32 to bfloat16; qdqrt rounds to nearest even, as later ONNX references do"},
    {"test_castlike_FLOAT_to_BFLOAT16*",
     "ONNX 1.12 data truncate float32 to bfloat16, and input 'like' is [1] in the data but [3, 4] in the model"},
    {"test_castlike_BFLOAT16_to_FLOAT*", "ONNX 1.12 data: input 'like' is [1] in the data but [3, 4] in the model"},
};

// ONNX TensorProto element types qdqrt cannot hold at all.
const std::map<int, const char*> kUnheldElementTypes = {
    {onnx::TensorProto::STRING, "string"},
    {onnx::TensorProto::COMPLEX64, "complex64"},
    {onnx::TensorProto::COMPLEX128, "complex128"},
    {17, "float8e4m3fn"},
    {18, "float8e4m3fnuz"},
    {19, "float8e5m2"},
    {20, "float8e5m2fnuz"},
};

// Matches `name` against a pattern with '*' wildcards.
bool glob_match(const char* pattern, const char* name) {
  if (*pattern == '\0') return *name == '\0';
  if (*pattern == '*') return glob_match(pattern + 1, name) || (*name != '\0' && glob_match(pattern, name + 1));
  return *pattern == *name && glob_match(pattern + 1, name + 1);
}

std::string normalized_domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

int64_t opset_of(const onnx::ModelProto& model, const std::string& domain) {
  for (const auto& opset : model.opset_import()) {
    if (normalized_domain(opset.domain()) == domain) return opset.version();
  }
  return 0;
}

void check_type(const onnx::TypeProto& type, const std::string& value, ModelFacts& facts) {
  if (!type.has_tensor_type()) {
    facts.unsupported.push_back(fmt::format("value '{}' is not a tensor (sequence/map/optional)", value));
    return;
  }
  auto it = kUnheldElementTypes.find(type.tensor_type().elem_type());
  if (it != kUnheldElementTypes.end()) facts.unsupported.push_back(fmt::format("{} tensors ('{}')", it->second, value));
}

void collect_graph(const onnx::ModelProto& model, const onnx::GraphProto& graph, ModelFacts& facts) {
  for (const auto& node : graph.node()) {
    std::string domain = normalized_domain(node.domain());
    std::string op = domain.empty() ? node.op_type() : domain + ":" + node.op_type();
    facts.ops.insert(op);
    const OpSchema* schema = OpRegistry::instance().find(domain, node.op_type());
    int64_t opset = opset_of(model, domain);
    if (schema == nullptr) {
      facts.unsupported.push_back(fmt::format("op {} not supported", op));
    } else if (opset < schema->min_opset || opset > schema->max_opset) {
      facts.unsupported.push_back(fmt::format("op {} at opset {} not supported (supported: {}..{})", op, opset,
                                              schema->min_opset, schema->max_opset));
    }
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) collect_graph(model, attribute.g(), facts);
      for (const auto& subgraph : attribute.graphs()) collect_graph(model, subgraph, facts);
    }
  }
  for (const auto& value : graph.input()) check_type(value.type(), value.name(), facts);
  for (const auto& value : graph.output()) check_type(value.type(), value.name(), facts);
}

double element_as_double(const Tensor& tensor, int64_t index) {
  if (tensor.dtype() == DataType::kBFloat16) return reference::bfloat16_to_float(tensor.data<uint16_t>()[index]);
  if (tensor.dtype() == DataType::kFloat16) return reference::half_to_float(tensor.data<uint16_t>()[index]);
  return tensor.value_as_double(index);
}

Tensor as_declared_dtype(const Tensor& tensor, const ModelFacts& facts, const std::string& name) {
  if (tensor.dtype() != DataType::kUint16 || !facts.bfloat16_values.count(name)) return tensor;
  Tensor relabeled(DataType::kBFloat16, tensor.shape());
  std::memcpy(relabeled.raw_data(), tensor.raw_data(), tensor.nbytes());
  return relabeled;
}

}  // namespace

std::vector<std::string> list_node_cases(const fs::path& root) {
  std::vector<std::string> cases;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root, error)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path().filename());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

const char* excluded_case_reason(const std::string& case_name) {
  for (const Exclusion& exclusion : kExcludedCases) {
    if (glob_match(exclusion.pattern, case_name.c_str())) return exclusion.reason;
  }
  return nullptr;
}

ModelFacts model_facts(const onnx::ModelProto& model) {
  ModelFacts facts;
  collect_graph(model, model.graph(), facts);
  std::set<std::string> initializers;
  for (const auto& initializer : model.graph().initializer()) initializers.insert(initializer.name());
  for (const auto& input : model.graph().input()) {
    if (!initializers.count(input.name())) facts.input_names.push_back(input.name());
  }
  for (const auto& output : model.graph().output()) facts.output_names.push_back(output.name());
  for (const auto* values : {&model.graph().input(), &model.graph().output()}) {
    for (const auto& value : *values) {
      if (value.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16)
        facts.bfloat16_values.insert(value.name());
    }
  }
  // Each reason once, in a stable order.
  std::sort(facts.unsupported.begin(), facts.unsupported.end());
  facts.unsupported.erase(std::unique(facts.unsupported.begin(), facts.unsupported.end()), facts.unsupported.end());
  return facts;
}

Result<ModelFacts> read_model_facts(const fs::path& model_path) {
  onnx::ModelProto model;
  std::ifstream file(model_path, std::ios::binary);
  if (!file || !model.ParseFromIstream(&file))
    return io_error("cannot parse '{}' as an ONNX model", model_path.string());
  return model_facts(model);
}

std::vector<fs::path> data_set_dirs(const fs::path& case_dir) {
  std::vector<fs::path> data_sets;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(case_dir, error)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  return data_sets;
}

Result<DataSet> read_data_set(const fs::path& data_set_dir, const ModelFacts& facts) {
  DataSet data_set;
  for (size_t i = 0; fs::exists(data_set_dir / fmt::format("input_{}.pb", i)); ++i) {
    if (i >= facts.input_names.size()) return invalid_argument("more input files than graph inputs");
    QDQRT_ASSIGN_OR_RETURN(Tensor tensor, read_tensor_pb_file((data_set_dir / fmt::format("input_{}.pb", i)).string()));
    data_set.inputs[facts.input_names[i]] = as_declared_dtype(tensor, facts, facts.input_names[i]);
  }
  for (size_t i = 0; fs::exists(data_set_dir / fmt::format("output_{}.pb", i)); ++i) {
    if (i >= facts.output_names.size()) return invalid_argument("more output files than graph outputs");
    const std::string& name = facts.output_names[i];
    QDQRT_ASSIGN_OR_RETURN(Tensor tensor,
                           read_tensor_pb_file((data_set_dir / fmt::format("output_{}.pb", i)).string()));
    data_set.expected_outputs.emplace_back(name, as_declared_dtype(tensor, facts, name));
  }
  return data_set;
}

std::string compare_tensors(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) {
    return fmt::format("dtype {} != expected {}", dtype_name(actual.dtype()), dtype_name(expected.dtype()));
  }
  if (actual.shape() != expected.shape()) {
    return fmt::format("shape {} != expected {}", shape_to_string(actual.shape()), shape_to_string(expected.shape()));
  }
  int64_t mismatches = 0;
  std::string first;
  bool is_float = dtype_is_float(expected.dtype());
  size_t element_size = dtype_size(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    bool equal;
    if (is_float) {
      double a = element_as_double(actual, i);
      double b = element_as_double(expected, i);
      equal = (std::isnan(a) && std::isnan(b)) || a == b ||
              std::fabs(a - b) <= kAbsoluteTolerance + kRelativeTolerance * std::fabs(b);
    } else {
      equal = std::memcmp(static_cast<const char*>(actual.raw_data()) + i * element_size,
                          static_cast<const char*>(expected.raw_data()) + i * element_size, element_size) == 0;
    }
    if (!equal && ++mismatches <= 5) {
      first += fmt::format("\n    [{}] got {:.9g}, expected {:.9g}", i, element_as_double(actual, i),
                           element_as_double(expected, i));
    }
  }
  if (mismatches == 0) return "";
  return fmt::format("{} of {} elements differ (rtol {}, atol {}):{}", mismatches, expected.numel(), kRelativeTolerance,
                     kAbsoluteTolerance, first);
}

}  // namespace qdqrt::testing
