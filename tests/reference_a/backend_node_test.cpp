// Conformance: the ONNX backend node tests (Debian's libonnx-testdata) for every op of the
// quantize, conv, matmul, pool, normalization and resize families, run on the reference kernels.
// Each case is model.onnx + test_data_set_*/input_*.pb and expected output_*.pb.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "reference/executor.h"
#include "tests/reference_a/onnx_case_reader.h"

namespace qdqrt {
namespace {

namespace fs = std::filesystem;

const char* kNodeTestDir = "/usr/lib/python3/dist-packages/onnx/backend/test/data/node";

// Cases of these families that test features outside the reference kernels' scope, with why.
const std::map<std::string, std::string>& out_of_scope_cases() {
  static const std::map<std::string, std::string> cases = {
      {"test_batchnorm_epsilon_training_mode", "BatchNormalization training_mode=1 (inference only)"},
      {"test_batchnorm_example_training_mode", "BatchNormalization training_mode=1 (inference only)"},
  };
  return cases;
}

// Extra cases in the same layout with PyTorch as the oracle, written by
// tests/reference_a/tools/make_torch_cases.py into tests/reference_a/data/torch_cases;
// QDQRT_EXTRA_NODE_TEST_DIR points elsewhere.
std::string extra_case_dir() {
  const char* dir = std::getenv("QDQRT_EXTRA_NODE_TEST_DIR");
  return dir ? dir : QDQRT_REFERENCE_A_TORCH_CASES;
}

std::vector<std::string> family_case_names(const std::string& root) {
  std::vector<std::string> names;
  std::error_code error;
  if (root.empty() || !fs::is_directory(root, error)) return names;
  // Our op families; "_expanded" cases are function expansions into other families' ops.
  std::regex family("^test_(torch_)?(.*conv.*|gemm_.*|matmul.*|.*pool.*|(de)?quantizelinear.*|dynamicquantizelinear.*|"
                    "qlinear.*|batchnorm.*|layer_normalization.*|resize_.*)$");
  for (const auto& entry : fs::directory_iterator(root, error)) {
    std::string name = entry.path().filename().string();
    if (!std::regex_match(name, family)) continue;
    if (name.ends_with("_expanded") || name.find("maxunpool") != std::string::npos ||
        name.find("lppool") != std::string::npos) {
      continue;
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

::testing::AssertionResult tensors_match(const std::string& what, const Tensor& expected, const Tensor& actual) {
  if (expected.dtype() != actual.dtype()) {
    return ::testing::AssertionFailure() << what << ": dtype " << dtype_name(actual.dtype()) << ", expected "
                                         << dtype_name(expected.dtype());
  }
  if (expected.shape() != actual.shape()) {
    return ::testing::AssertionFailure() << what << ": shape " << shape_to_string(actual.shape()) << ", expected "
                                         << shape_to_string(expected.shape());
  }
  int mismatches = 0;
  std::string details;
  bool is_float = dtype_is_float(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = expected.value_as_double(i);
    double a = actual.value_as_double(i);
    bool ok = is_float ? (std::isnan(e) ? std::isnan(a) : std::abs(a - e) <= 1e-4 + 1e-3 * std::abs(e)) : a == e;
    if (!ok && ++mismatches <= 5) {
      details += " [" + std::to_string(i) + "] got " + std::to_string(a) + " expected " + std::to_string(e) + ";";
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << mismatches << " of " << expected.numel()
                                       << " elements differ:" << details;
}

void run_node_case(const std::string& root, const std::string& name) {
  fs::path dir = fs::path(root) / name;
  Result<Graph> graph = testing::read_test_model((dir / "model.onnx").string());
  auto skip = out_of_scope_cases().find(name);
  if (skip != out_of_scope_cases().end()) {
    // Out of scope must mean a clean "unsupported" from the op's parser, never a wrong answer.
    ASSERT_FALSE(graph.ok()) << name << " is listed as out of scope but loads";
    EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported) << graph.status().to_string();
    GTEST_SKIP() << skip->second;
  }
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();

  int data_sets = 0;
  for (int set = 0;; ++set) {
    fs::path data_dir = dir / ("test_data_set_" + std::to_string(set));
    if (!fs::is_directory(data_dir)) break;
    ++data_sets;
    TensorMap inputs;
    for (size_t i = 0; i < graph->inputs.size(); ++i) {
      fs::path file = data_dir / ("input_" + std::to_string(i) + ".pb");
      Result<Tensor> tensor = testing::read_test_tensor(file.string());
      ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
      inputs[graph->inputs[i]] = *tensor;
    }
    Result<TensorMap> outputs = run_reference(*graph, inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    for (size_t i = 0; i < graph->outputs.size(); ++i) {
      fs::path file = data_dir / ("output_" + std::to_string(i) + ".pb");
      Result<Tensor> expected = testing::read_test_tensor(file.string());
      ASSERT_TRUE(expected.ok()) << expected.status().to_string();
      const std::string& output_name = graph->outputs[i];
      EXPECT_TRUE(tensors_match(name + " output '" + output_name + "'", *expected, outputs->at(output_name)));
    }
  }
  EXPECT_GT(data_sets, 0) << name << " has no test_data_set_0";
}

const char* kNoCases = "no_cases_found";

std::vector<std::string> case_names_or_placeholder(const std::string& root) {
  std::vector<std::string> names = family_case_names(root);
  if (names.empty()) names.push_back(kNoCases);
  return names;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

class BackendNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendNodeTest, MatchesExpectedOutputs) {
  if (GetParam() == kNoCases) GTEST_SKIP() << "libonnx-testdata is not installed (" << kNodeTestDir << ")";
  run_node_case(kNodeTestDir, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Onnx, BackendNodeTest, ::testing::ValuesIn(case_names_or_placeholder(kNodeTestDir)),
                         case_name);

class ExtraNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExtraNodeTest, MatchesExpectedOutputs) {
  if (GetParam() == kNoCases) GTEST_SKIP() << "no extra cases in " << extra_case_dir();
  run_node_case(extra_case_dir(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Extra, ExtraNodeTest, ::testing::ValuesIn(case_names_or_placeholder(extra_case_dir())),
                         case_name);

}  // namespace
}  // namespace qdqrt
