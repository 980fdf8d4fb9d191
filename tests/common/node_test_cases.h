// The ONNX backend node test cases (Debian's libonnx-testdata), shared by the conformance suite
// and the engine batch property test: where they are and their names.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace qdqrt::testing {

// QDQRT_ONNX_NODE_TEST_DIR from the environment when set, else `default_dir` (found by CMake).
std::filesystem::path node_test_root(const char* default_dir);
// The case directories under `root` that hold a model.onnx, sorted.
std::vector<std::string> list_node_test_cases(const std::filesystem::path& root);

}  // namespace qdqrt::testing
