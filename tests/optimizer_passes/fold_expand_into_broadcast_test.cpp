// fold_expand_into_broadcast: F.normalize's norm expanded over the last axis before the Div goes
// (the Div broadcasts it, same values); an Expand that is a graph output, has another reader, feeds
// both operands, meets a smaller other operand or is not float stays (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

const std::vector<std::string> kPasses = {"fold_constants", "evaluate_shape_computations",
                                          "fold_expand_into_broadcast"};

// x [2, 3, 5, 32] over its L2 norm along the last axis, clamped, expanded to x's shape by Shape(x)
// (torch's export of F.normalize), then `tail` (ONNX text reading e and x, writing y).
std::string normalize_model(const std::string& tail, const std::string& outputs = "float[2,3,5,32] y",
                            const std::string& extra_inputs = "") {
  return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2,3,5,32] x" + extra_inputs + ") => (" + outputs +
         ")\n<float eps = {1e-12}>\n{\n  n = ReduceL2<axes = [-1], keepdims = 1>(x)\n  c = Clip(n, eps)\n"
         "  s = Shape(x)\n  e = Expand(c, s)\n" +
         tail + "}\n";
}

TEST(FoldExpandIntoBroadcast, NormalizeDivReadsTheNorm) {
  for (const char* tail : {"  y = Div(x, e)\n", "  y = Mul(e, x)\n", "  d = Div(x, e)\n  y = Sub(d, e)\n"}) {
    SCOPED_TRACE(tail);
    Graph graph = parse_graph(normalize_model(tail));
    Graph rewritten = run_passes(graph, kPasses);
    EXPECT_EQ(count_ops(rewritten, "Expand"), 0) << op_sequence(rewritten);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 3), 0.0, 0.0);
  }
}

TEST(FoldExpandIntoBroadcast, MustNotFire) {
  struct Case {
    const char* what;
    std::string text;
  };
  const Case cases[] = {
      {"graph output", normalize_model("  y = Div(x, e)\n", "float[2,3,5,32] y, float[2,3,5,32] e")},
      {"another reader", normalize_model("  d = Div(x, e)\n  r = Relu(e)\n  y = Add(d, r)\n")},
      {"both operands", normalize_model("  y = Mul(e, e)\n")},
      {"smaller other operand", normalize_model("  y = Div(e, z)\n", "float[2,3,5,32] y", ", float[32] z")},
      {"not arithmetic", normalize_model("  y = Pow(x, e)\n")},
      {"not float",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (int64[2,3,5,1] x, int64[2,3,5,32] w) => (int64[2,3,5,32] y)\n{\n"
       "  s = Shape(w)\n  e = Expand(x, s)\n  y = Add(w, e)\n}\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(c.text);
    Graph rewritten = run_passes(graph, kPasses);
    EXPECT_EQ(count_ops(rewritten, "Expand"), 1) << op_sequence(rewritten);
  }
}

}  // namespace
}  // namespace qdqrt::testing
