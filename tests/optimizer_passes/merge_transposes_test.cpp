// merge_transposes: a Transpose of a Transpose becomes one Transpose with the composed perm, or
// nothing when they cancel (a graph output keeps its name); an inner Transpose with another reader
// or that is a graph output stays (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

std::string two_transposes(const std::string& first, const std::string& second, const std::string& outputs,
                           const std::string& extra = "") {
  return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2,3,4,5] x) => (" + outputs + ")\n{\n" +
         "  r = Relu(x)\n  t = Transpose<perm = " + first + ">(r)\n  y = Transpose<perm = " + second + ">(t)\n" +
         extra + "}\n";
}

TEST(MergeTransposes, TwoBecomeOneOrNone) {
  // Attention's K: [B, T, H, D] -> [B, H, T, D] -> [B, H, D, T] in one copy.
  Graph graph = parse_graph(two_transposes("[0, 2, 1, 3]", "[0, 1, 3, 2]", "float[2,4,5,3] y"));
  Graph rewritten = run_passes(graph, {"merge_transposes"});
  EXPECT_EQ(op_sequence(rewritten), "Relu,Transpose");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 7), 0.0, 0.0);
  // Three in a row merge into one.
  Graph three = parse_graph(two_transposes("[1, 0, 2, 3]", "[0, 2, 1, 3]", "float[5,4,2,3] z",
                                           "  z = Transpose<perm = [3, 1, 2, 0]>(y)\n"));
  Graph merged = run_passes(three, {"merge_transposes"});
  EXPECT_EQ(op_sequence(merged), "Relu,Transpose");
  expect_same_outputs(three, merged, random_inputs(three, 8), 0.0, 0.0);
  // Cancelling: the graph output y is then written by the Relu.
  Graph cancel = parse_graph(two_transposes("[0, 2, 3, 1]", "[0, 3, 1, 2]", "float[2,3,4,5] y"));
  Graph none = run_passes(cancel, {"merge_transposes"});
  EXPECT_EQ(op_sequence(none), "Relu");
  EXPECT_EQ(none.nodes[0].outputs[0], "y");
  expect_same_outputs(cancel, none, random_inputs(cancel, 9), 0.0, 0.0);
}

TEST(MergeTransposes, InnerWithAnotherReaderOrAnOutputMustNotFire) {
  Graph shared = parse_graph(two_transposes("[0, 2, 1, 3]", "[0, 1, 3, 2]", "float[2,4,5,3] y, float[2,4,3,5] s",
                                            "  s = Relu(t)\n"));
  EXPECT_EQ(op_sequence(run_passes(shared, {"merge_transposes"})), "Relu,Transpose,Transpose,Relu");
  Graph output = parse_graph(two_transposes("[0, 2, 1, 3]", "[0, 1, 3, 2]", "float[2,4,5,3] y, float[2,4,3,5] t"));
  EXPECT_EQ(op_sequence(run_passes(output, {"merge_transposes"})), "Relu,Transpose,Transpose");
}

}  // namespace
}  // namespace qdqrt::testing
