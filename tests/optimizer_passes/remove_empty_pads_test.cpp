// remove_empty_pads: a Pad whose pads are all zero is removed (its readers read its input; a graph
// output keeps its name), also when the pads are computed from Shape as torchvision's Swin pads a
// map to a multiple of its window; non-zero or runtime pads stay (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// x [1, 4, 14, 14] padded by `pads_lines` (ONNX text writing `pads`), then Relu.
std::string pad_model(const std::string& pads_lines, const std::string& mode = "constant",
                      const std::string& output = "float[1,4,14,14] y") {
  return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,4,14,14] x) => (" + output +
         ")\n<int64[8] zeros = {0, 0, 0, 0, 0, 0, 0, 0}, int64[8] ones = {0, 0, 0, 0, 0, 0, 1, 1}, int64[1] two = {2}, "
         "int64[1] seven = {7}>\n{\n" +
         pads_lines + "  p = Pad<mode = \"" + mode + "\">(x, pads)\n  y = Relu(p)\n}\n";
}

TEST(RemoveEmptyPads, ZeroPadsGo) {
  for (const char* mode : {"constant", "reflect", "edge"}) {
    SCOPED_TRACE(mode);
    Graph graph = parse_graph(pad_model("  pads = Identity(zeros)\n", mode));
    Graph rewritten = run_passes(graph, {"remove_identities", "remove_empty_pads"});
    EXPECT_EQ(op_sequence(rewritten), "Relu");
    expect_same_outputs(graph, rewritten, random_inputs(graph, 5), 0.0, 0.0);
  }
  // Swin's padding to a multiple of the window, (7 - W % 7) % 7 from the input's Shape: zero at 14.
  const std::string computed =
      "  s = Shape(x)\n  w = Slice(s, two, ones)\n  m = Mod(w, seven)\n  r = Sub(seven, m)\n  q = Mod(r, seven)\n"
      "  pads = Concat<axis = 0>(zeros, q)\n";
  std::string text = pad_model(computed);
  // The pads' last element from the width: 8 zeros + 1 -> use 7 zeros there.
  text.replace(text.find("int64[8] zeros = {0, 0, 0, 0, 0, 0, 0, 0}"), 41, "int64[7] zeros = {0, 0, 0, 0, 0, 0, 0}");
  text.replace(text.find("int64[8] ones = {0, 0, 0, 0, 0, 0, 1, 1}"), 40, "int64[1] ones = {4}");
  text.replace(text.find("int64[1] two = {2}"), 18, "int64[1] two = {3}");
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"remove_identities", "fold_constants", "evaluate_shape_computations",
                                       "remove_empty_pads"});
  EXPECT_EQ(op_sequence(rewritten), "Relu");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 6), 0.0, 0.0);
  // A Pad that is a graph output keeps its name (its input's producer writes it).
  Graph output = parse_graph(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,4,14,14] x) => (float[1,4,14,14] p)\n"
      "<int64[8] zeros = {0, 0, 0, 0, 0, 0, 0, 0}>\n{\n  r = Relu(x)\n  p = Pad(r, zeros)\n}\n");
  Graph kept_name = run_passes(output, {"remove_empty_pads"});
  EXPECT_EQ(op_sequence(kept_name), "Relu");
  EXPECT_EQ(kept_name.nodes[0].outputs[0], "p");
}

TEST(RemoveEmptyPads, NonZeroOrRuntimePadsMustNotFire) {
  Graph nonzero = parse_graph(pad_model("  pads = Identity(ones)\n", "constant", "float[1,4,15,15] y"));
  EXPECT_EQ(op_sequence(run_passes(nonzero, {"remove_identities", "remove_empty_pads"})), "Pad,Relu");
  Graph runtime = parse_graph(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,4,14,14] x, int64[8] pads) => (float[1,4,?,?] y)\n{\n"
      "  p = Pad(x, pads)\n  y = Relu(p)\n}\n");
  EXPECT_EQ(op_sequence(run_passes(runtime, {"remove_empty_pads"})), "Pad,Relu");
  // A Pad linking a graph input straight to a graph output stays (the output's name must be written).
  Graph linking = parse_graph(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,4,14,14] x) => (float[1,4,14,14] p)\n"
      "<int64[8] zeros = {0, 0, 0, 0, 0, 0, 0, 0}>\n{\n  p = Pad(x, zeros)\n}\n");
  EXPECT_EQ(op_sequence(run_passes(linking, {"remove_empty_pads"})), "Pad");
}

}  // namespace
}  // namespace qdqrt::testing
