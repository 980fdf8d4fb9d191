// The ONNX backend node tests (Debian package libonnx-testdata) as test data: a case directory
// holds model.onnx and test_data_set_*/input_*.pb, output_*.pb. What a case's model declares,
// whether qdqrt can hold it, its data sets, and the comparison with the stored outputs. Shared
// by tests/conformance (every case, reference and engine) and tests/reference (the reference's
// op families, older opsets included). Models are loaded with the real loader
// (parser/onnx_loader.h) by the tests themselves.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "reference/executor.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace qdqrt::testing {

// Float outputs match when |actual - expected| <= kAbsoluteTolerance + kRelativeTolerance * |expected|.
constexpr double kRelativeTolerance = 1e-3;
constexpr double kAbsoluteTolerance = 1e-4;

// The case directories (those with a model.onnx) below root, sorted by name.
std::vector<std::string> list_node_cases(const std::filesystem::path& root);

// Why a case is out of scope (a known feature qdqrt leaves out, or a problem of the ONNX 1.12
// data), or nullptr.
const char* excluded_case_reason(const std::string& case_name);

// What the runner needs to know about a case's model.
struct ModelFacts {
  std::set<std::string> ops;                           // "Conv", "ai.onnx.ml:Foo"
  std::vector<std::string> unsupported;                // why qdqrt cannot run it (unknown op or opset, type)
  std::vector<std::string> input_names, output_names;  // runtime inputs and outputs, in order
  std::set<std::string> bfloat16_values;               // graph inputs/outputs declared bfloat16
};
Result<ModelFacts> read_model_facts(const std::filesystem::path& model_path);
ModelFacts model_facts(const onnx::ModelProto& model);

// The test_data_set_* directories of a case, sorted.
std::vector<std::filesystem::path> data_set_dirs(const std::filesystem::path& case_dir);

// One data set: inputs by graph input name, expected outputs in graph output order. The ONNX
// 1.12 data store bfloat16 tensors as uint16 (numpy has no bfloat16): they are read as the
// bfloat16 the model declares.
struct DataSet {
  TensorMap inputs;
  std::vector<std::pair<std::string, Tensor>> expected_outputs;
};
Result<DataSet> read_data_set(const std::filesystem::path& data_set_dir, const ModelFacts& facts);

// Empty when equal (shapes and dtypes exactly, integers and bools exactly, floats within the
// tolerance, NaN matching NaN), else a description of the first mismatches.
std::string compare_tensors(const Tensor& actual, const Tensor& expected);

}  // namespace qdqrt::testing
