// qdqrt's shape inference against ONNX's over the ONNX backend node tests (Debian package
// libonnx-testdata): each case's model is loaded with the real loader at its data set's input
// shapes (ONNX's inference gives every other value's shape), copied with every shape but the graph
// inputs' forgotten, and run through infer_shapes. The cases feed shape data (Reshape's shape,
// Slice's starts, ...) as graph inputs: the copy holds the data set's small inputs (at most
// kMaxFollowedElements elements) as constants, as a real model would. Every value ONNX gives a static shape must get
// the same dims from qdqrt, and every graph output the shape of the data set's expected output
// (which also covers the ops ONNX 1.12 cannot infer at opsets 18..21).
//
// Cases are skipped as the conformance suite skips them (excluded, or an op, opset or type qdqrt
// does not hold), and while an op of the case has no shape function (OpSchema::infer_shape unset):
// such a case is counted and listed, never compared.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/op_registry.h"
#include "core/ops/fused_op_table.h"
#include "parser/onnx_loader.h"
#include "tests/common/onnx_node_case.h"
#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

namespace fs = std::filesystem;

fs::path node_test_root() {
  if (const char* override_dir = std::getenv("QDQRT_ONNX_NODE_TEST_DIR")) return override_dir;
  return QDQRT_ONNX_NODE_TEST_DIR;
}

// Cases whose shapes qdqrt's inference does not follow, by design: case -> why. Their
// differences are printed, not failed.
const std::map<std::string, std::string>& known_gaps() {
  static const std::string float_range =
      "the window's length is a Range over a float limit computed at run time (Cast of the size input); inference "
      "follows the values of integer tensors only";
  static const std::map<std::string, std::string> gaps = {
      {"test_blackmanwindow_expanded", float_range}, {"test_blackmanwindow_symmetric_expanded", float_range},
      {"test_hammingwindow_expanded", float_range},  {"test_hammingwindow_symmetric_expanded", float_range},
      {"test_hannwindow_expanded", float_range},     {"test_hannwindow_symmetric_expanded", float_range},
  };
  return gaps;
}

std::string static_dims_text(const std::optional<std::vector<Dim>>& dims) {
  if (!dims) return "unknown rank";
  std::vector<std::string> parts;
  for (const Dim& dim : *dims) parts.push_back(dim.is_static() ? std::to_string(dim.value) : "?");
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

bool same_static_dims(const std::optional<std::vector<Dim>>& derived, const Shape& expected) {
  if (!derived || derived->size() != expected.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!(*derived)[i].is_static() || (*derived)[i].value != expected[i]) return false;
  }
  return true;
}

bool has_shape_function(const Node& node) {
  if (fused_op_row(node) != nullptr) return true;
  const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
  return schema != nullptr && schema->infer_shape != nullptr;
}

TEST(ShapeConformance, QdqrtInferenceMatchesOnnxOnTheNodeTests) {
  const fs::path root = node_test_root();
  const std::vector<std::string> cases = list_node_cases(root);
  if (cases.empty()) GTEST_SKIP() << "no ONNX backend node test cases under " << root;
  int compared_cases = 0, compared_values = 0, compared_outputs = 0, unsupported = 0, constant_inputs = 0;
  std::set<std::string> ops_without_function;
  std::vector<std::string> cases_without_function;
  std::vector<std::string> failures, known;
  for (const std::string& case_name : cases) {
    const fs::path case_dir = root / case_name;
    if (excluded_case_reason(case_name) != nullptr) continue;
    auto facts = read_model_facts(case_dir / "model.onnx");
    if (!facts.ok() || !facts->unsupported.empty()) {
      ++unsupported;
      continue;
    }
    const std::vector<fs::path> data_sets = data_set_dirs(case_dir);
    if (data_sets.empty()) continue;
    auto data_set = read_data_set(data_sets.front(), *facts);
    ASSERT_TRUE(data_set.ok()) << case_name << ": " << data_set.status().to_string();
    LoadOptions options;
    for (const auto& [name, tensor] : data_set->inputs) options.input_shapes[name] = tensor.shape();
    auto graph = load_onnx_file((case_dir / "model.onnx").string(), options);
    if (!graph.ok()) {
      ++unsupported;  // the conformance suite reports load failures
      continue;
    }
    std::vector<std::string> missing;
    for (const Node& node : graph->nodes) {
      if (!has_shape_function(node)) missing.push_back(node.op_type);
    }
    if (!missing.empty()) {
      ops_without_function.insert(missing.begin(), missing.end());
      cases_without_function.push_back(case_name);
      continue;
    }
    Graph copy = *graph;
    forget_shapes(copy);
    // The node tests feed shape data (Reshape's shape, Slice's starts, Resize's scales, Range's
    // limits, ...) as graph inputs; the data set's values make the small inputs the constants a
    // real model would hold.
    for (const auto& [name, tensor] : data_set->inputs) {
      if (tensor.numel() > kMaxFollowedElements) continue;
      copy.initializers[name] = tensor.clone();
      copy.inputs.erase(std::remove(copy.inputs.begin(), copy.inputs.end(), name), copy.inputs.end());
      ++constant_inputs;
    }
    ShapeInferenceReport report;
    Status status = infer_shapes(copy, &report);
    ASSERT_TRUE(status.is_ok()) << case_name << ": " << status.to_string();
    ++compared_cases;
    std::map<std::string, const Node*> writers;
    for (const Node& node : copy.nodes) {
      for (const std::string& output : node.outputs) writers[output] = &node;
    }
    std::vector<std::string>& sink = known_gaps().count(case_name) ? known : failures;
    auto fail = [&](const std::string& value, const std::string& expected, const std::string& source) {
      auto writer = writers.find(value);
      const std::string node = writer == writers.end() ? "?" : writer->second->describe();
      auto why = report.unfollowed.find(value);
      const ValueInfo* derived = copy.find_value(value);
      sink.push_back(fmt::format("{}: {}: '{}' is {} by ONNX's {}, {} by qdqrt{}", case_name, node, value, expected,
                                 source, static_dims_text(derived ? derived->shape : std::nullopt),
                                 why == report.unfollowed.end() ? "" : " (" + why->second + ")"));
    };
    for (const auto& [name, info] : graph->values) {
      if (std::find(graph->inputs.begin(), graph->inputs.end(), name) != graph->inputs.end()) continue;
      if (graph->find_initializer(name) != nullptr) continue;
      std::optional<Shape> expected = info.static_shape();
      if (!expected) continue;
      ++compared_values;
      const ValueInfo* derived = copy.find_value(name);
      if (derived == nullptr || !same_static_dims(derived->shape, *expected) || report.unfollowed.count(name)) {
        fail(name, shape_to_string(*expected), "inference");
      }
    }
    for (const auto& [name, tensor] : data_set->expected_outputs) {
      ++compared_outputs;
      const ValueInfo* derived = copy.find_value(name);
      if (derived == nullptr || !same_static_dims(derived->shape, tensor.shape())) {
        fail(name, shape_to_string(tensor.shape()), "expected output");
      }
    }
  }
  std::cout << fmt::format(
      "[shape conformance] {} cases compared ({} values against ONNX's inference, {} outputs against the expected "
      "outputs; {} small inputs given as constants); {} cases out of scope; {} cases skipped while ops have no shape "
      "function: {}\n",
      compared_cases, compared_values, compared_outputs, constant_inputs, unsupported, cases_without_function.size(),
      fmt::join(ops_without_function, ", "));
  for (const std::string& line : known) std::cout << "[known gap] " << line << "\n";
  EXPECT_GT(compared_cases, 0);
  EXPECT_TRUE(failures.empty()) << failures.size() << " values differ:\n"
                                << fmt::format("{}", fmt::join(failures, "\n"));
}

}  // namespace
}  // namespace qdqrt::testing
