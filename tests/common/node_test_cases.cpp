#include "tests/common/node_test_cases.h"

#include <algorithm>
#include <cstdlib>

namespace qdqrt::testing {

std::filesystem::path node_test_root(const char* default_dir) {
  if (const char* override_dir = std::getenv("QDQRT_ONNX_NODE_TEST_DIR")) return override_dir;
  return default_dir;
}

std::vector<std::string> list_node_test_cases(const std::filesystem::path& root) {
  std::vector<std::string> cases;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "model.onnx")) {
      cases.push_back(entry.path().filename());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

}  // namespace qdqrt::testing
