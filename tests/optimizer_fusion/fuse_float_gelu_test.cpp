// fuse_float_gelu: the erf form of GELU on a float value (five nodes) becomes one ONNX Gelu;
// structure, numbers (the reference's Gelu against the five nodes: within 1e-5) and must-not-fire
// cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/elementwise.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, 5, 8] -> a = Add(x, shift) -> `body` (writing `outputs`).
std::string gelu_model(const std::string& body, const std::string& outputs = "float[2,5,8] y") {
  std::mt19937 rng(5);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[2,5,8] x) => ({})
<{}, {}, {}, {}, {}, {}>
{{
  a = Add(x, shift)
{}
}})",
                     outputs, float_initializer("shift", {8}, -0.5f, 0.5f, rng), float_values("sqrt2", {}, {1.4142135f}),
                     float_values("inv_sqrt2", {}, {0.70710677f}), float_values("one", {}, {1.0f}),
                     float_values("half", {}, {0.5f}), float_values("six", {}, {0.6f}), body);
}

Graph fuse(const std::string& text, optimizer::PassContext& context) {
  Graph original = load_text(text);
  optimizer::FusionPass gelu("fuse_float_gelu");
  Graph fused = run_pass(original, gelu, context);
  std::mt19937 rng(3);
  expect_same_outputs(original, fused, random_inputs(original, rng, -4.0f, 4.0f), 1e-5f);
  return fused;
}

TEST(FuseFloatGelu, TheErfFormBecomesOneGelu) {
  const char* const bodies[] = {
      // torch's export: Div by sqrt 2, x times the sum, then times 0.5.
      "  d = Div(a, sqrt2)\n  e = Erf(d)\n  p = Add(e, one)\n  m = Mul(a, p)\n  y = Mul(m, half)",
      // Mul by 1/sqrt 2, the sum times 0.5 first, then times x; 1 on the left of the Add.
      "  d = Mul(a, inv_sqrt2)\n  e = Erf(d)\n  p = Add(one, e)\n  m = Mul(p, half)\n  y = Mul(a, m)",
  };
  for (const char* body : bodies) {
    SCOPED_TRACE(body);
    optimizer::PassContext context;
    Graph fused = fuse(gelu_model(body), context);
    ASSERT_EQ(fused.nodes.size(), 2u);  // Add, Gelu
    const Node* gelu = find_op(fused, "Gelu");
    ASSERT_NE(gelu, nullptr);
    EXPECT_TRUE(gelu->domain.empty());
    EXPECT_GE(gelu->opset, 20);
    EXPECT_EQ(gelu->name, fused.nodes[1].name);
    EXPECT_EQ(gelu->inputs, std::vector<std::string>{"a"});
    EXPECT_EQ(gelu->outputs, std::vector<std::string>{"y"});
    const auto* attributes = dynamic_cast<const GeluAttributes*>(gelu->typed_attributes.get());
    ASSERT_NE(attributes, nullptr);
    EXPECT_FALSE(attributes->tanh_approximation);
    EXPECT_EQ(count_ops(fused, "Erf") + count_ops(fused, "Div") + count_ops(fused, "Mul"), 0);
  }
}

TEST(FuseFloatGelu, TwoChainsInARowBothFuse) {
  optimizer::PassContext context;
  Graph fused = fuse(gelu_model("  d = Div(a, sqrt2)\n  e = Erf(d)\n  p = Add(e, one)\n  m = Mul(a, p)\n"
                                "  g = Mul(m, half)\n  d2 = Div(g, sqrt2)\n  e2 = Erf(d2)\n  p2 = Add(e2, one)\n"
                                "  m2 = Mul(g, p2)\n  y = Mul(m2, half)"),
                     context);
  EXPECT_EQ(count_ops(fused, "Gelu"), 2);
  EXPECT_EQ(fused.nodes.size(), 3u);
}

// An intermediate read elsewhere or written as a graph output, a constant that is not GELU's, or
// the product taken with another value than x: the nodes stay as they are.
TEST(FuseFloatGelu, MustNotFireOnASharedIntermediateOrAnotherFunction) {
  struct Case {
    std::string body, outputs;
  };
  const Case cases[] = {
      {"  d = Div(a, sqrt2)\n  e = Erf(d)\n  p = Add(e, one)\n  m = Mul(a, p)\n  y = Mul(m, half)\n  z = Add(e, one)",
       "float[2,5,8] y, float[2,5,8] z"},
      {"  d = Div(a, sqrt2)\n  e = Erf(d)\n  p = Add(e, one)\n  m = Mul(a, p)\n  y = Mul(m, half)",
       "float[2,5,8] y, float[2,5,8] p"},
      {"  d = Div(a, sqrt2)\n  e = Erf(d)\n  p = Add(e, one)\n  m = Mul(a, p)\n  y = Mul(m, six)", "float[2,5,8] y"},
      {"  d = Div(a, half)\n  e = Erf(d)\n  p = Add(e, one)\n  m = Mul(a, p)\n  y = Mul(m, half)", "float[2,5,8] y"},
      {"  d = Div(a, sqrt2)\n  e = Erf(d)\n  p = Add(e, one)\n  m = Mul(x, p)\n  y = Mul(m, half)", "float[2,5,8] y"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    optimizer::PassContext context;
    Graph fused = fuse(gelu_model(c.body, c.outputs), context);
    EXPECT_EQ(count_ops(fused, "Gelu"), 0);
    EXPECT_EQ(count_ops(fused, "Erf"), 1);
  }
}

}  // namespace
}  // namespace qdqrt::testing
