// The small float graphs of the op tests: one per native op and attribute variant, and the
// forms that must fall back to the reference layer. Shared by the layer tests (test harness) and
// the engine tests (Engine::build).
#pragma once

#include <string>
#include <vector>

namespace qdqrt::testing {

struct OpCase {
  std::string name;
  std::string text;  // ONNX text; graph inputs have batch dim N
  std::string kind;  // the layer kind the case's op must lower to
};

// "<ir_version: 8, opset_import: [...]> signature <initializers> { body }"
std::string model(int opset, const std::string& signature, const std::vector<std::string>& initializers,
                  const std::string& body);

std::vector<OpCase> conv_cases();
std::vector<OpCase> other_cases();
std::vector<OpCase> constant_b_matmul_cases();  // Engine::build only (runs the optimizer)
std::vector<OpCase> fallback_cases();

// One graph (batch dim N) with every native float layer kind.
std::string all_kinds_model();

}  // namespace qdqrt::testing
