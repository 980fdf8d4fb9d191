// Native fp32 layers against the reference executor: one small graph per op (and attribute
// variant), built through the layer registry (tests/engine_float/harness.h), run at batch 1 and
// the maximum batch, with each layer's items in one range and split in three.
#include <gtest/gtest.h>

#include <fmt/format.h>


#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

constexpr int64_t kMaxBatch = 3;
constexpr double kTolerance = 1e-4;

void expect_matches_reference(const std::string& text, const std::string& kind) {
  auto graph = load_text_graph(text, kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string() << "\n" << text;
  auto built = harness_build(*graph, kMaxBatch);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const auto kinds = layer_kinds(built->plan);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end())
      << "no " << kind << " layer; got " << fmt::format("{}", fmt::join(kinds, ", "));
  for (const auto& layer : built->plan.layers) {
    EXPECT_FALSE(layer.kernel.empty()) << layer.name;
    if (kind != "reference") {
      EXPECT_NE(layer.kind, "reference") << layer.name << " fell back to the reference";
    }
  }
  for (int64_t batch : {int64_t{1}, kMaxBatch}) {
    TensorMap inputs = random_inputs(*graph, batch, 11);
    auto expected = run_reference(*graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    for (int64_t chunks : {1, 3}) {
      auto actual = harness_run(*built, inputs, chunks);
      ASSERT_TRUE(actual.ok()) << actual.status().to_string();
      for (const auto& [name, tensor] : *expected) {
        EXPECT_LE(relative_error(actual->at(name), tensor), kTolerance)
            << name << " batch " << batch << " chunks " << chunks;
      }
    }
  }
}

// One test per case list (not one ctest process per case: process start-up dominates).
void run_cases(const std::vector<OpCase>& cases) {
  for (const OpCase& op_case : cases) {
    SCOPED_TRACE(op_case.name);
    expect_matches_reference(op_case.text, op_case.kind);
  }
}

TEST(FloatOps, Conv) { run_cases(conv_cases()); }
TEST(FloatOps, Ops) { run_cases(other_cases()); }
TEST(FloatOps, Fallback) { run_cases(fallback_cases()); }

}  // namespace
}  // namespace qdqrt::testing
