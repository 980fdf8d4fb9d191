// The ONNX project's backend node tests (Debian package libonnx-testdata) run through qdqrt's
// loader and reference executor: one test per case directory.
//
// A case is SKIPPED when it uses an op (or opset) outside OpRegistry::instance(), a tensor type
// qdqrt does not hold (string, complex, float8), or is in kExcludedCases below (features out of
// scope). Every other case must pass: a supported op that loads, runs or compares wrong FAILS.
//
// The ONNX 1.12 data store bfloat16 tensors as uint16; they are read as the bfloat16 the model
// declares.
//
// Comparison: shapes and dtypes exactly; integers and bools exactly; floats with
// |actual - expected| <= kAbsoluteTolerance + kRelativeTolerance * |expected| (NaN matches NaN).
//
// With QDQRT_CONFORMANCE_REPORT=<file.md> set, the binary also writes a Markdown report
// (passes grouped by op, skips with reasons, failures, the tolerance): docs/conformance.md.
// QDQRT_ONNX_NODE_TEST_DIR overrides where the case directories are looked for.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "core/op_registry.h"
#include "reference/executor.h"
#include "tests/common/node_test_cases.h"

namespace qdqrt {
namespace {

namespace fs = std::filesystem;

constexpr double kRelativeTolerance = 1e-3;
constexpr double kAbsoluteTolerance = 1e-4;

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
    {onnx::TensorProto::STRING, "string"},       {onnx::TensorProto::COMPLEX64, "complex64"},
    {onnx::TensorProto::COMPLEX128, "complex128"}, {17, "float8e4m3fn"}, {18, "float8e4m3fnuz"},
    {19, "float8e5m2"},                           {20, "float8e5m2fnuz"},
};

// Matches `name` against a pattern with '*' wildcards.
bool glob_match(const char* pattern, const char* name) {
  if (*pattern == '\0') return *name == '\0';
  if (*pattern == '*') return glob_match(pattern + 1, name) || (*name != '\0' && glob_match(pattern, name + 1));
  return *pattern == *name && glob_match(pattern + 1, name + 1);
}

fs::path node_test_root() { return testing::node_test_root(QDQRT_ONNX_NODE_TEST_DIR); }

std::vector<std::string> list_cases() { return testing::list_node_test_cases(node_test_root()); }

// What the report needs to know about each case, filled in as tests run.
struct CaseRecord {
  std::vector<std::string> ops;
  std::string outcome;  // "pass", "skip", "fail"
  std::string detail;   // skip reason or first failure line
};
std::map<std::string, CaseRecord>& case_records() {
  static std::map<std::string, CaseRecord> records;
  return records;
}

struct ModelFacts {
  std::set<std::string> ops;                          // "Conv", "ai.onnx.ml:Foo"
  std::vector<std::string> unsupported;               // reasons
  std::vector<std::string> input_names, output_names; // runtime inputs and outputs, in order
  std::set<std::string> bfloat16_values;              // graph inputs/outputs declared bfloat16
};

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

Result<ModelFacts> read_model_facts(const fs::path& model_path) {
  onnx::ModelProto model;
  std::ifstream file(model_path, std::ios::binary);
  if (!file || !model.ParseFromIstream(&file)) return io_error("cannot parse '{}' as an ONNX model", model_path.string());
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
      if (value.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16) facts.bfloat16_values.insert(value.name());
    }
  }
  // Each reason once, in a stable order.
  std::sort(facts.unsupported.begin(), facts.unsupported.end());
  facts.unsupported.erase(std::unique(facts.unsupported.begin(), facts.unsupported.end()), facts.unsupported.end());
  return facts;
}

double element_as_double(const Tensor& tensor, int64_t index) {
  auto bits_to_float = [](uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  };
  if (tensor.dtype() == DataType::kBFloat16) return bits_to_float(static_cast<uint32_t>(tensor.data<uint16_t>()[index]) << 16);
  if (tensor.dtype() == DataType::kFloat16) {
    uint16_t half = tensor.data<uint16_t>()[index];
    int exponent = (half >> 10) & 0x1F;
    int mantissa = half & 0x3FF;
    double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                       : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                        : std::ldexp(mantissa | 0x400, exponent - 25);
    return (half & 0x8000) ? -magnitude : magnitude;
  }
  return tensor.value_as_double(index);
}

// Empty when equal within tolerance, else a description of the first mismatches.
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

// The ONNX 1.12 test data store bfloat16 tensors as uint16 (numpy has no bfloat16): read the
// bits as the bfloat16 the model declares.
Tensor as_declared_dtype(const Tensor& tensor, const ModelFacts& facts, const std::string& name) {
  if (tensor.dtype() != DataType::kUint16 || !facts.bfloat16_values.count(name)) return tensor;
  Tensor relabeled(DataType::kBFloat16, tensor.shape());
  std::memcpy(relabeled.raw_data(), tensor.raw_data(), tensor.nbytes());
  return relabeled;
}

// The same case built into an engine (optimizer, builder, layers) at the data set's shapes.
Result<TensorMap> run_engine(const fs::path& model_path, const TensorMap& inputs) {
  engine::BuildOptions options;
  for (const auto& [name, tensor] : inputs) options.input_shapes[name] = tensor.shape();
  QDQRT_ASSIGN_OR_RETURN(auto built, engine::Engine::build_from_file(model_path.string(), options));
  auto context = built->create_context({.threads = 2});
  std::vector<engine::ConstTensorBinding> input_bindings;
  for (const auto& [name, tensor] : inputs) input_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  TensorMap outputs;
  for (const auto& info : built->outputs()) outputs[info.name] = Tensor(info.dtype, info.shape);
  std::vector<engine::TensorBinding> output_bindings;
  for (auto& [name, tensor] : outputs) output_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  QDQRT_RETURN_IF_ERROR(context->run(input_bindings, output_bindings));
  return outputs;
}

void check_case(const std::string& case_name, bool through_engine) {
  const fs::path case_dir = node_test_root() / case_name;
  CaseRecord& record = case_records()[case_name];

  auto facts = read_model_facts(case_dir / "model.onnx");
  ASSERT_TRUE(facts.ok()) << facts.status().to_string();
  record.ops.assign(facts->ops.begin(), facts->ops.end());
  for (const Exclusion& exclusion : kExcludedCases) {
    if (glob_match(exclusion.pattern, case_name.c_str())) GTEST_SKIP() << "excluded: " << exclusion.reason;
  }
  if (!facts->unsupported.empty()) GTEST_SKIP() << fmt::format("{}", fmt::join(facts->unsupported, "; "));

  auto graph = load_onnx_file((case_dir / "model.onnx").string());
  ASSERT_TRUE(graph.ok()) << "load: " << graph.status().to_string();

  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(case_dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  ASSERT_FALSE(data_sets.empty()) << "no test_data_set_* in " << case_dir;

  for (const fs::path& data_set : data_sets) {
    SCOPED_TRACE(data_set.filename().string());
    TensorMap inputs;
    for (size_t i = 0; fs::exists(data_set / fmt::format("input_{}.pb", i)); ++i) {
      ASSERT_LT(i, facts->input_names.size()) << "more input files than graph inputs";
      auto tensor = read_tensor_pb_file((data_set / fmt::format("input_{}.pb", i)).string());
      ASSERT_TRUE(tensor.ok()) << "input_" << i << ".pb: " << tensor.status().to_string();
      inputs[facts->input_names[i]] = as_declared_dtype(*tensor, *facts, facts->input_names[i]);
    }
    auto outputs = through_engine ? run_engine(case_dir / "model.onnx", inputs) : run_reference(*graph, inputs);
    if (through_engine && !outputs.ok() &&
        outputs.status().message().find("no static shape") != std::string::npos) {
      // Output shapes that depend on input values (NonZero, ...): an engine plans static shapes.
      GTEST_SKIP() << "engine: data-dependent shapes: " << outputs.status().message();
    }
    ASSERT_TRUE(outputs.ok()) << "run: " << outputs.status().to_string();
    for (size_t i = 0; fs::exists(data_set / fmt::format("output_{}.pb", i)); ++i) {
      ASSERT_LT(i, facts->output_names.size()) << "more output files than graph outputs";
      const std::string& name = facts->output_names[i];
      auto expected = read_tensor_pb_file((data_set / fmt::format("output_{}.pb", i)).string());
      ASSERT_TRUE(expected.ok()) << "output_" << i << ".pb: " << expected.status().to_string();
      auto it = outputs->find(name);
      ASSERT_NE(it, outputs->end()) << "output '" << name << "' was not produced";
      std::string difference = compare_tensors(it->second, as_declared_dtype(*expected, *facts, name));
      EXPECT_TRUE(difference.empty()) << "output '" << name << "': " << difference;
    }
  }
}

class Conformance : public ::testing::TestWithParam<std::string> {};
TEST_P(Conformance, Case) { check_case(GetParam(), false); }

class EngineConformance : public ::testing::TestWithParam<std::string> {};
TEST_P(EngineConformance, Case) { check_case(GetParam(), true); }

std::string case_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(OnnxNode, Conformance, ::testing::ValuesIn(list_cases()), case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);
INSTANTIATE_TEST_SUITE_P(Engine, EngineConformance, ::testing::ValuesIn(list_cases()), case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EngineConformance);

// Records each case's outcome for the report.
class ReportListener : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    // The report is about the reference executor's suite.
    if (info.value_param() == nullptr || std::string(info.test_suite_name()) != "OnnxNode/Conformance") return;
    std::string case_name = info.name();
    case_name = case_name.substr(case_name.find('/') + 1);
    CaseRecord& record = case_records()[case_name];
    const ::testing::TestResult& result = *info.result();
    std::string message;
    for (int i = 0; i < result.total_part_count(); ++i) {
      const auto& part = result.GetTestPartResult(i);
      if (part.message() && *part.message()) {
        message = part.message();
        break;
      }
    }
    message = message.substr(0, message.find('\n'));
    if (result.Skipped()) {
      record.outcome = "skip";
    } else if (result.Failed()) {
      record.outcome = "fail";
    } else {
      record.outcome = "pass";
    }
    record.detail = message;
  }
};

void write_report(const std::string& path) {
  std::map<std::string, std::vector<std::string>> passed_by_op;     // single-op cases
  std::vector<std::pair<std::string, std::string>> passed_multi_op;  // case -> its ops
  std::map<std::string, std::vector<std::string>> skipped_by_reason;
  std::vector<std::pair<std::string, std::string>> failed;
  int total = 0, passed = 0, skipped = 0;
  for (const auto& [name, record] : case_records()) {
    if (record.outcome.empty()) continue;
    ++total;
    if (record.outcome == "pass") {
      ++passed;
      if (record.ops.size() == 1) {
        passed_by_op[record.ops.front()].push_back(name);
      } else {
        passed_multi_op.emplace_back(name, fmt::format("{}", fmt::join(record.ops, ", ")));
      }
    } else if (record.outcome == "skip") {
      ++skipped;
      skipped_by_reason[record.detail].push_back(name);
    } else {
      failed.emplace_back(name, record.detail);
    }
  }
  std::ofstream out(path);
  out << "# ONNX backend node tests: conformance of the reference executor\n\n";
  out << "Generated by `tests/conformance/report.sh` (the `qdqrt_conformance_tests` binary with\n"
         "`QDQRT_CONFORMANCE_REPORT` set) from the ONNX backend node test data of Debian's\n"
         "`libonnx-testdata` (ONNX 1.12). Each case loads `model.onnx`, runs every `test_data_set_*`\n"
         "through `run_reference` and compares with the expected outputs.\n\n";
  out << fmt::format("**{} passed, {} skipped, {} failed of {} cases.**\n\n", passed, skipped, failed.size(), total);
  out << fmt::format(
      "Tolerance: shapes and dtypes exact; integer and bool outputs exact; float outputs\n"
      "`|actual - expected| <= {} + {} * |expected|` (atol {}, rtol {}); NaN matches NaN.\n\n",
      kAbsoluteTolerance, kRelativeTolerance, kAbsoluteTolerance, kRelativeTolerance);
  out << "A case is skipped when it uses an op or opset qdqrt does not register, a tensor type qdqrt\n"
         "does not hold, or is in the exclusion table of tests/conformance/conformance_test.cpp.\n\n";
  if (!failed.empty()) {
    out << "## Failing cases\n\n";
    for (const auto& [name, detail] : failed) out << fmt::format("- `{}`: {}\n", name, detail);
    out << "\n";
  }
  out << "## Passing single-op cases, by op\n\n";
  for (const auto& [op, names] : passed_by_op) {
    out << fmt::format("- **{}** ({}): `{}`\n", op, names.size(), fmt::join(names, "`, `"));
  }
  out << "\n## Passing multi-op cases (function expansions and the like)\n\n";
  for (const auto& [name, ops] : passed_multi_op) out << fmt::format("- `{}`: {}\n", name, ops);
  out << "\n## Skipped cases, by reason (most frequent first)\n\n";
  std::vector<std::pair<std::string, std::vector<std::string>>> reasons(skipped_by_reason.begin(),
                                                                          skipped_by_reason.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  for (const auto& [reason, names] : reasons) {
    out << fmt::format("- {} ({}): `{}`\n", reason, names.size(), fmt::join(names, "`, `"));
  }
}

}  // namespace
}  // namespace qdqrt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* report_path = std::getenv("QDQRT_CONFORMANCE_REPORT");
  if (report_path != nullptr) {
    ::testing::UnitTest::GetInstance()->listeners().Append(new qdqrt::ReportListener);
  }
  int result = RUN_ALL_TESTS();
  if (report_path != nullptr) {
    qdqrt::write_report(report_path);
    std::printf("conformance report written to %s\n", report_path);
  }
  return result;
}
