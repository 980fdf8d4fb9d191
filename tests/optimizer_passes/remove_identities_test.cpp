#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(RemoveIdentities, RemovesIdentityDropoutAndSameTypeCastKeepingOutputName) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      a = Relu(x)
      b = Identity(a)
      c = Dropout(b)
      d = Cast<to = 1>(c)
      y = Identity(d)
    })");
  Graph rewritten = run_passes(graph, {"remove_identities"});
  EXPECT_EQ(op_sequence(rewritten), "Relu");
  ASSERT_EQ(rewritten.outputs.size(), 1u);
  EXPECT_EQ(rewritten.outputs[0], "y");
  EXPECT_EQ(rewritten.nodes[0].outputs[0], "y");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 1));
}

TEST(RemoveIdentities, ReadersOfAnIdentityReadItsInput) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y, float[4] z) {
      a = Identity(x)
      y = Relu(a)
      z = Neg(a)
    })");
  Graph rewritten = run_passes(graph, {"remove_identities"});
  EXPECT_EQ(op_sequence(rewritten), "Relu,Neg");
  EXPECT_EQ(rewritten.nodes[0].inputs[0], "x");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 2));
}

// torchvision's Swin: F.dropout(p=0.0, training=True), its mask output named but unread.
TEST(RemoveIdentities, DropoutOfRatioZeroInTrainingModeAndUnreadMask) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y, float[2,3] z)
    <float half = {0.5}, bool no = {0}> {
      zero = Constant<value = float {0.0}>()
      yes = Constant<value = bool {1}>()
      a, mask = Dropout(x, zero, yes)
      y = Relu(a)
      b, unread = Dropout(x, half, no)
      z = Neg(b)
    })");
  Graph rewritten = run_passes(graph, {"remove_identities"});
  EXPECT_EQ(op_sequence(rewritten), "Relu,Neg");
  EXPECT_EQ(rewritten.nodes[0].inputs[0], "x");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 4));
}

TEST(RemoveIdentities, MustNotFire) {
  // Identity linking a graph input straight to a graph output; a Cast that changes the type;
  // a Dropout whose mask is used.
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y, int32[4] z, bool[4] m) {
      y = Identity(x)
      z = Cast<to = 6>(x)
      d, m = Dropout(x)
    })");
  Graph rewritten = run_passes(graph, {"remove_identities"});
  EXPECT_EQ(op_sequence(rewritten), "Identity,Cast,Dropout");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 3));
  // A Dropout in training mode that drops (ratio 0.5), or whose ratio is not a constant.
  Graph training = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x, float r) => (float[4] y, float[4] z)
    <float half = {0.5}, bool yes = {1}> {
      y = Dropout(x, half, yes)
      z = Dropout(x, r, yes)
    })");
  EXPECT_EQ(op_sequence(run_passes(training, {"remove_identities"})), "Dropout,Dropout");
}

}  // namespace
}  // namespace qdqrt::testing
