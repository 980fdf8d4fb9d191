// merge_transpose_reshape: Transpose -> Reshape -> Transpose that only reshapes becomes one
// Reshape (MViT's pool input and output around a channels-last lowered 3-D conv, atoms split and
// merged, a symbolic batch); must not fire where the values move (the channel shuffle's
// Reshape-Transpose-Reshape is not this pattern; a Transpose pair that does move values; a
// middle value with another reader or that is a graph output).
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/shape_inference.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// x [N, 2 heads, 3*4*5 tokens, 6 channels] -> [N, 2, 6, 60] -> [N*2, 6, 3, 4, 5] -> [N*2, 3, 4, 5, 6].
constexpr const char* kPoolInput = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[{0},2,60,6] x) => (float[{1},3,4,5,6] y)
<int64[5] shape = {{-1, 6, 3, 4, 5}}>
{{
  r = Relu(x)
  t = Transpose<perm = [0, 1, 3, 2]>(r)
  v = Reshape(t, shape)
  y = Transpose<perm = [0, 2, 3, 4, 1]>(v)
}}
)";

// And back: [N*2, 3, 4, 5, 6] -> [N*2, 6, 3, 4, 5] -> [N, 2, 6, 60] -> [N, 2, 60, 6].
constexpr const char* kPoolOutput = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[{0},3,4,5,6] x) => (float[{1},2,60,6] y)
<int64[4] shape = {{-1, 2, 6, 60}}>
{{
  r = Relu(x)
  t = Transpose<perm = [0, 4, 1, 2, 3]>(r)
  v = Reshape(t, shape)
  y = Transpose<perm = [0, 1, 3, 2]>(v)
}}
)";

TEST(MergeTransposeReshape, PoolInputAndOutputBecomeReshapes) {
  // The pool input: 3 images (6 head slices); the pool output: 6 head slices back to 3 images.
  for (const auto& [text, dims] : std::vector<std::pair<const char*, std::pair<std::string, std::string>>>{
           {kPoolInput, {"3", "6"}}, {kPoolOutput, {"6", "3"}}}) {
    Graph graph = parse_graph(fmt::format(fmt::runtime(text), dims.first, dims.second));
    Graph rewritten = run_passes(graph, {"merge_transpose_reshape"});
    EXPECT_EQ(op_sequence(rewritten), "Relu,Reshape");
    EXPECT_EQ(rewritten.nodes.back().outputs[0], "y");
    expect_same_outputs(graph, rewritten, random_inputs(graph, 3), 0.0, 0.0);
    // With a symbolic batch: the Reshape keeps -1 for the dim that follows it.
    Graph symbolic = parse_graph(fmt::format(fmt::runtime(text), "N", "M"));
    ASSERT_TRUE(infer_shapes(symbolic).is_ok());  // dims as expressions of N, as the engine builds them
    Graph merged = run_passes(symbolic, {"merge_transpose_reshape"});
    EXPECT_EQ(op_sequence(merged), "Relu,Reshape");
  }
}

// The shapes at which the values move: a transposed pair of token and channel dims read back
// without the swap, a split that reverses the atoms, heads and channels exchanged.
TEST(MergeTransposeReshape, MovesValuesMustNotFire) {
  for (const auto& [output, body] : std::vector<std::pair<std::string, std::string>>{
           // [N,2,6,60] -> [N*2,6,3,4,5] -> its last two dims swapped: values move.
           {"float[M,6,3,5,4] y", "  t = Transpose<perm = [0, 1, 3, 2]>(r)\n  v = Reshape(t, shape)\n"
                                  "  y = Transpose<perm = [0, 1, 2, 4, 3]>(v)\n"},
           // heads and tokens exchanged by the first transpose, not undone by the second.
           {"float[M,3,4,5,6] y", "  t = Transpose<perm = [0, 2, 1, 3]>(r)\n  v = Reshape(t, shape)\n"
                                  "  y = Transpose<perm = [0, 2, 3, 4, 1]>(v)\n"}}) {
    SCOPED_TRACE(body);
    const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,60,6] x) => ()") + output + R"()
<int64[5] shape = {-1, 6, 3, 4, 5}>
{
  r = Relu(x)
)" + body + "}\n";
    Graph graph = parse_graph(text);
    ASSERT_TRUE(infer_shapes(graph).is_ok());
    Graph rewritten = run_passes(graph, {"merge_transpose_reshape"});
    EXPECT_EQ(op_sequence(rewritten), "Relu,Transpose,Reshape,Transpose");
  }
}

TEST(MergeTransposeReshape, MiddleValueReadElsewhereOrAnOutputMustNotFire) {
  Graph shared = parse_graph(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,60,6] x) => (float[M,3,4,5,6] y, float[N,2,6,60] s)
<int64[5] shape = {-1, 6, 3, 4, 5}>
{
  r = Relu(x)
  t = Transpose<perm = [0, 1, 3, 2]>(r)
  s = Relu(t)
  v = Reshape(t, shape)
  y = Transpose<perm = [0, 2, 3, 4, 1]>(v)
}
)");
  ASSERT_TRUE(infer_shapes(shared).is_ok());
  EXPECT_EQ(op_sequence(run_passes(shared, {"merge_transpose_reshape"})), "Relu,Transpose,Relu,Reshape,Transpose");
  Graph output = parse_graph(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,60,6] x) => (float[M,3,4,5,6] y, float[M,6,3,4,5] v)
<int64[5] shape = {-1, 6, 3, 4, 5}>
{
  r = Relu(x)
  t = Transpose<perm = [0, 1, 3, 2]>(r)
  v = Reshape(t, shape)
  y = Transpose<perm = [0, 2, 3, 4, 1]>(v)
}
)");
  ASSERT_TRUE(infer_shapes(output).is_ok());
  EXPECT_EQ(op_sequence(run_passes(output, {"merge_transpose_reshape"})), "Relu,Transpose,Reshape,Transpose");
}

}  // namespace
}  // namespace qdqrt::testing
