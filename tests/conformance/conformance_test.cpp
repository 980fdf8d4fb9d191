// The ONNX project's backend node tests (Debian package libonnx-testdata) run through qdqrt's
// loader and reference executor: one test per case directory.
//
// A case is SKIPPED when it uses an op (or opset) outside OpRegistry::instance(), a tensor type
// qdqrt does not hold (string, complex, float8), or is in the exclusion table of
// tests/common/onnx_node_case.cpp (features out of scope). Every other case must pass: a
// supported op that loads, runs or compares wrong FAILS.
//
// The ONNX 1.12 data store bfloat16 tensors as uint16; they are read as the bfloat16 the model
// declares.
//
// Comparison (tests/common/onnx_node_case.h): shapes and dtypes exactly; integers and bools
// exactly; floats with |actual - expected| <= kAbsoluteTolerance + kRelativeTolerance * |expected|
// (NaN matches NaN).
//
// With QDQRT_CONFORMANCE_REPORT=<file.md> set, the binary also writes a Markdown report
// (passes grouped by op, skips with reasons, failures, the tolerance): docs/conformance.md.
// QDQRT_ONNX_NODE_TEST_DIR overrides where the case directories are looked for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <onnx/onnx_pb.h>

#include "engine/engine.h"
#include "engine/profiles.h"
#include "parser/onnx_loader.h"
#include "reference/executor.h"
#include "tests/common/onnx_node_case.h"
#include "tests/engine_batch/batch_helpers.h"

namespace qdqrt {
namespace {

namespace fs = std::filesystem;

fs::path node_test_root() {
  if (const char* override_dir = std::getenv("QDQRT_ONNX_NODE_TEST_DIR")) return override_dir;
  return QDQRT_ONNX_NODE_TEST_DIR;
}

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

  auto facts = testing::read_model_facts(case_dir / "model.onnx");
  ASSERT_TRUE(facts.ok()) << facts.status().to_string();
  record.ops.assign(facts->ops.begin(), facts->ops.end());
  if (const char* reason = testing::excluded_case_reason(case_name)) GTEST_SKIP() << "excluded: " << reason;
  if (!facts->unsupported.empty()) GTEST_SKIP() << fmt::format("{}", fmt::join(facts->unsupported, "; "));

  auto graph = load_onnx_file((case_dir / "model.onnx").string());
  ASSERT_TRUE(graph.ok()) << "load: " << graph.status().to_string();

  std::vector<fs::path> data_sets = testing::data_set_dirs(case_dir);
  ASSERT_FALSE(data_sets.empty()) << "no test_data_set_* in " << case_dir;

  for (const fs::path& data_set_dir : data_sets) {
    SCOPED_TRACE(data_set_dir.filename().string());
    auto data_set = testing::read_data_set(data_set_dir, *facts);
    ASSERT_TRUE(data_set.ok()) << data_set.status().to_string();
    auto outputs = through_engine ? run_engine(case_dir / "model.onnx", data_set->inputs)
                                  : run_reference(*graph, data_set->inputs);
    if (through_engine && !outputs.ok() &&
        outputs.status().message().find("no static shape") != std::string::npos) {
      // Output shapes that depend on input values (NonZero, ...): an engine plans static shapes.
      GTEST_SKIP() << "engine: data-dependent shapes: " << outputs.status().message();
    }
    ASSERT_TRUE(outputs.ok()) << "run: " << outputs.status().to_string();
    for (const auto& [name, expected] : data_set->expected_outputs) {
      auto it = outputs->find(name);
      ASSERT_NE(it, outputs->end()) << "output '" << name << "' was not produced";
      std::string difference = testing::compare_tensors(it->second, expected);
      EXPECT_TRUE(difference.empty()) << "output '" << name << "': " << difference;
    }
  }
}

class Conformance : public ::testing::TestWithParam<std::string> {};
TEST_P(Conformance, Case) { check_case(GetParam(), false); }

class EngineConformance : public ::testing::TestWithParam<std::string> {};
TEST_P(EngineConformance, Case) { check_case(GetParam(), true); }

// ------------------------------------------------------------------------------------------------
// The same cases through one range engine (engine/profiles.h) each: every dim of every float
// input made symbolic (one symbol per input and axis; integer and bool inputs, which often carry
// shapes, indices or counts, keep their shapes), the outputs' declared shapes dropped, and a
// profile from the halved shape (each dim ceil(d/2)) to the data set's. One engine runs at the data
// set's shape (the expected outputs) and at the halved shape, whose inputs are the leading block
// of the data set's, against the reference executor at that shape. Where the model cannot take the
// halved shape (the reference refuses it: a conv's weights given as an input, a kernel_shape
// attribute, a shape constant), the range engine must refuse it too, with a message, never crash.

bool is_float_input(const onnx::ValueInfoProto& input) {
  const int type = input.type().tensor_type().elem_type();
  return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE || type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::BFLOAT16;
}

// The leading block of `tensor` of shape `shape` (each dim at most the tensor's).
Tensor leading_block(const Tensor& tensor, const Shape& shape) {
  Tensor block(tensor.dtype(), shape);
  const size_t element = dtype_size(tensor.dtype());
  const Shape& from = tensor.shape();
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  const auto* source = static_cast<const uint8_t*>(tensor.raw_data());
  auto* target = static_cast<uint8_t*>(block.raw_data());
  for (int64_t i = 0; i < block.numel(); ++i) {
    int64_t offset = 0;
    for (size_t axis = 0; axis < rank; ++axis) offset = offset * from[axis] + index[axis];
    std::memcpy(target + static_cast<size_t>(i) * element, source + static_cast<size_t>(offset) * element, element);
    for (size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
    }
  }
  return block;
}

// Runs `range` at `inputs`' shapes in a context of its own.
Result<TensorMap> run_range(const engine::RangeEngine& range, const TensorMap& inputs) {
  auto context = range.create_context({.threads = 2});
  return batch_testing::run_range(range, *context, inputs);
}

void check_range_case(const std::string& case_name) {
  const fs::path case_dir = node_test_root() / case_name;
  auto facts = testing::read_model_facts(case_dir / "model.onnx");
  ASSERT_TRUE(facts.ok()) << facts.status().to_string();
  if (const char* reason = testing::excluded_case_reason(case_name)) GTEST_SKIP() << "excluded: " << reason;
  if (!facts->unsupported.empty()) GTEST_SKIP() << fmt::format("{}", fmt::join(facts->unsupported, "; "));
  onnx::ModelProto model;
  {
    std::ifstream file(case_dir / "model.onnx", std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&file));
  }
  auto data_set = testing::read_data_set(testing::data_set_dirs(case_dir).at(0), *facts);
  ASSERT_TRUE(data_set.ok()) << data_set.status().to_string();

  std::set<std::string> initializers;
  for (const auto& initializer : model.graph().initializer()) initializers.insert(initializer.name());
  engine::ShapeProfile profile;
  TensorMap halved = data_set->inputs;
  // The float inputs whose dims become symbolic (empty tensors keep their shapes). A symbolic dim 0
  // is the batch, which all batched inputs share: it is symbolic only when they agree on it.
  std::vector<onnx::ValueInfoProto*> varied;
  std::set<int64_t> leading;
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    if (initializers.count(input.name()) || !data_set->inputs.count(input.name()) || !is_float_input(input)) continue;
    const Shape& shape = data_set->inputs.at(input.name()).shape();
    if (shape.empty() || shape_numel(shape) == 0) continue;
    varied.push_back(&input);
    leading.insert(shape[0]);
  }
  for (onnx::ValueInfoProto* input : varied) {
    const Tensor& data = data_set->inputs.at(input->name());
    auto* dims = input->mutable_type()->mutable_tensor_type()->mutable_shape();
    dims->clear_dim();
    Shape half;
    for (size_t axis = 0; axis < data.shape().size(); ++axis) {
      const int64_t dim = data.shape()[axis];
      if (axis == 0 && leading.size() > 1) {
        dims->add_dim()->set_dim_value(dim);
        half.push_back(dim);
        continue;
      }
      dims->add_dim()->set_dim_param(axis == 0 ? std::string("N") : fmt::format("{}_{}", input->name(), axis));
      half.push_back((dim + 1) / 2);
    }
    const std::string& name = input->name();
    profile[name] = {half, data.shape(), data.shape()};
    halved[name] = leading_block(data, half);
  }
  if (profile.empty()) GTEST_SKIP() << "no float input with dims";
  for (auto& output : *model.mutable_graph()->mutable_output()) {
    output.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  model.mutable_graph()->clear_value_info();
  std::string bytes;
  ASSERT_TRUE(model.SerializeToString(&bytes));
  auto range = engine::RangeEngine::build_from_bytes(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), profile, {});
  if (!range.ok() && range.status().message().find("no static shape") != std::string::npos) {
    GTEST_SKIP() << "engine: data-dependent shapes: " << range.status().message();
  }
  ASSERT_TRUE(range.ok()) << "build: " << range.status().to_string();
  auto at_data = run_range(**range, data_set->inputs);
  ASSERT_TRUE(at_data.ok()) << "run at the data set's shape: " << at_data.status().to_string();
  for (const auto& [name, expected] : data_set->expected_outputs) {
    ASSERT_TRUE(at_data->count(name)) << "output '" << name << "' was not produced";
    EXPECT_EQ(testing::compare_tensors(at_data->at(name), expected), "") << "output '" << name << "'";
  }
  // The halved shape: the reference executor at exactly that shape decides what is right.
  LoadOptions load;
  for (const auto& [name, tensor] : halved) load.input_shapes[name] = tensor.shape();
  auto graph = load_onnx_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), load);
  Result<TensorMap> expected = graph.ok() ? run_reference(*graph, halved) : Result<TensorMap>(graph.status());
  auto at_half = run_range(**range, halved);
  if (!expected.ok()) {
    EXPECT_FALSE(at_half.ok()) << "the reference refuses the halved shape (" << expected.status().to_string()
                               << ") but the range engine ran it";
    if (!at_half.ok()) EXPECT_FALSE(at_half.status().message().empty());
    return;
  }
  if (!at_half.ok() && at_half.status().message().find("no static shape") != std::string::npos) {
    GTEST_SKIP() << "engine: data-dependent shapes at the halved shape";
  }
  ASSERT_TRUE(at_half.ok()) << "run at the halved shape: " << at_half.status().to_string();
  for (const auto& [name, tensor] : *expected) {
    ASSERT_TRUE(at_half->count(name)) << "output '" << name << "' was not produced at the halved shape";
    EXPECT_EQ(testing::compare_tensors(at_half->at(name), tensor), "") << "output '" << name << "' at the halved shape";
  }
}

class RangeConformance : public ::testing::TestWithParam<std::string> {};
TEST_P(RangeConformance, Case) { check_range_case(GetParam()); }

// The Resize cases give scales/sizes (and roi) as graph inputs, which keeps them on the reference
// layer; as constants (what exporters write) the engine runs its Resize layers on them, except
// cubic, tf_crop_and_resize and `sizes` (these list the batch as a constant: the output does not
// follow the batch, which the reference layer handles by fixing it). Outputs are checked against
// the data set's expected outputs.
TEST(EngineResizeConstants, CasesRunOnTheResizeLayers) {
  int native = 0;
  for (const std::string& case_name : testing::list_node_cases(node_test_root())) {
    if (case_name.rfind("test_resize_", 0) != 0) continue;
    SCOPED_TRACE(case_name);
    const fs::path case_dir = node_test_root() / case_name;
    auto facts = testing::read_model_facts(case_dir / "model.onnx");
    ASSERT_TRUE(facts.ok()) << facts.status().to_string();
    auto data_set = testing::read_data_set(testing::data_set_dirs(case_dir).at(0), *facts);
    ASSERT_TRUE(data_set.ok()) << data_set.status().to_string();
    auto graph = load_onnx_file((case_dir / "model.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    const std::string x = graph->inputs.at(0);
    for (size_t i = 1; i < graph->inputs.size(); ++i)
      graph->initializers[graph->inputs[i]] = data_set->inputs.at(graph->inputs[i]);
    graph->inputs.resize(1);
    auto built = engine::Engine::build(*graph, {});
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    const bool claimed = case_name.find("cubic") == std::string::npos && case_name.find("crop") == std::string::npos &&
                         case_name.find("sizes") == std::string::npos;
    bool on_layer = false;
    for (const auto& layer : (*built)->plan().layers) on_layer = on_layer || layer.kind.rfind("resize_", 0) == 0;
    EXPECT_EQ(on_layer, claimed);
    native += on_layer ? 1 : 0;
    auto context = (*built)->create_context({.threads = 2});
    const Tensor& input = data_set->inputs.at(x);
    std::vector<engine::ConstTensorBinding> inputs = {{x, input.raw_data(), input.shape()}};
    for (const auto& [name, expected] : data_set->expected_outputs) {
      Tensor actual(expected.dtype(), expected.shape());
      std::vector<engine::TensorBinding> outputs = {{name, actual.raw_data(), actual.shape()}};
      Status run = context->run(inputs, outputs);
      ASSERT_TRUE(run.is_ok()) << run.to_string();
      EXPECT_EQ(testing::compare_tensors(actual, expected), "") << name;
    }
  }
  if (native == 0) GTEST_SKIP() << "no Resize cases in " << node_test_root();
}

std::string case_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(OnnxNode, Conformance, ::testing::ValuesIn(testing::list_node_cases(node_test_root())), case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);
INSTANTIATE_TEST_SUITE_P(Engine, EngineConformance, ::testing::ValuesIn(testing::list_node_cases(node_test_root())), case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EngineConformance);
INSTANTIATE_TEST_SUITE_P(Range, RangeConformance, ::testing::ValuesIn(testing::list_node_cases(node_test_root())), case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RangeConformance);

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
      testing::kAbsoluteTolerance, testing::kRelativeTolerance, testing::kAbsoluteTolerance,
      testing::kRelativeTolerance);
  out << "A case is skipped when it uses an op or opset qdqrt does not register, a tensor type qdqrt\n"
         "does not hold, or is in the exclusion table of tests/common/onnx_node_case.cpp.\n\n";
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
