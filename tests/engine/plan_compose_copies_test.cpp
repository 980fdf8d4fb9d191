// Copies read through copies (engine/plan_compose_copies.h): structure (the writer and its output
// are gone, the readers are strided copies of the writer's input), numbers (bit-identical to the
// engine built without sharing, which keeps every copy, at 1 and 2 threads and a smaller batch;
// equal to the reference executor), and the cases that must not fire. Also the 8-bit transposes,
// which run as tiled 2-D transposes where the last dims swap: exact over shapes with tile tails.
#include "engine/plan_compose_copies.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/engine.h"
#include "engine/layers/copy_geometry.h"
#include "reference/executor.h"
#include "tests/engine/shared_buffer_helpers.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

using engine::Engine;
using engine::EnginePlan;


// The layer writing `name` (nullptr when none does).
const engine::PlanLayer* writer_of(const EnginePlan& plan, const std::string& name) {
  const int32_t index = plan.find_tensor(name);
  for (const auto& layer : plan.layers) {
    for (int32_t output : layer.outputs) {
      if (index >= 0 && output == index) return &layer;
    }
  }
  return nullptr;
}

// Shared and separate engines agree bit for bit at 1 and 2 threads (and at `batch` images, fewer
// than built), and both match the reference executor exactly (copies only move bytes).
void expect_exact(const Graph& graph, int64_t batch = 0) {
  auto shared = build_engine(graph, true);
  auto separate = build_engine(graph, false);
  ASSERT_TRUE(shared && separate);
  TensorMap inputs = random_inputs(graph, 5);
  if (batch > 0) {
    for (auto& [name, tensor] : inputs) {
      Shape shape = tensor.shape();
      shape[0] = batch;
      Tensor smaller(tensor.dtype(), shape);
      std::memcpy(smaller.raw_data(), tensor.raw_data(), smaller.nbytes());
      tensor = std::move(smaller);
    }
  }
  auto expected = run_reference(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  for (int threads : {1, 2}) {
    TensorMap a = run_engine(*shared, inputs, threads);
    TensorMap b = run_engine(*separate, inputs, threads);
    for (const auto& [name, tensor] : *expected) {
      ASSERT_EQ(a.at(name).shape(), tensor.shape()) << name;
      EXPECT_EQ(std::memcmp(a.at(name).raw_data(), tensor.raw_data(), tensor.nbytes()), 0)
          << name << " (shared) at " << threads << " threads";
      EXPECT_EQ(std::memcmp(b.at(name).raw_data(), tensor.raw_data(), tensor.nbytes()), 0)
          << name << " (separate) at " << threads << " threads";
    }
  }
}

// Attention's head split as MViT writes it: [B, T, 3, H, D] -> [B, H, 3, T, D], q/k/v split off,
// squeezed, and the class token sliced from the rest.
constexpr const char* kHeadSplit = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[{0},9,3,2,8] x) => (float[{0},2,1,8] cls, float[{0},2,8,8] rest, float[{0},2,9,8] k, float[{0},2,9,8] v)
  <int64[1] two = {{2}}, int64[1] one = {{1}}, int64[1] zero = {{0}}, int64[1] big = {{100}}>
  {{
    t = Transpose <perm = [0, 3, 2, 1, 4]> (x)
    q5, k5, v5 = Split <axis = 2> (t)
    q = Squeeze(q5, two)
    k = Squeeze(k5, two)
    v = Squeeze(v5, two)
    cls = Slice(q, zero, one, two)
    rest = Slice(q, one, big, two)
  }})";

TEST(ComposeCopies, HeadSplitReadsTheProjectionThroughTheTransposeAndSplit) {
  Graph graph = parse_graph(fmt::format(kHeadSplit, 3));
  auto shared = build_engine(graph, true);
  auto separate = build_engine(graph, false);
  ASSERT_TRUE(shared && separate);
  const EnginePlan& plan = shared->plan();
  // The Transpose, the Split's parts and q's Squeeze are read through: every output copies x.
  EXPECT_EQ(plan.find_tensor("t"), -1);
  EXPECT_EQ(plan.find_tensor("q5"), -1);
  EXPECT_EQ(plan.find_tensor("q"), -1);
  for (const char* output : {"cls", "rest", "k", "v"}) {
    const engine::PlanLayer* layer = writer_of(plan, output);
    ASSERT_NE(layer, nullptr) << output;
    EXPECT_EQ(layer->kind, "strided_copy") << output;
    EXPECT_EQ(plan.tensors[static_cast<size_t>(layer->inputs[0])].name, "x") << output;
  }
  EXPECT_EQ(plan.layers.size(), 4u);
  EXPECT_GT(separate->plan().layers.size(), plan.layers.size());
  expect_exact(graph);
  expect_exact(graph, 2);
}

// An 8-bit Transpose (int8_transpose) read by Slices with steps: starts and steps compose.
TEST(ComposeCopies, Int8TransposeIntoSteppedSlices) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6,10,12] x) => (float[2,12,5,3] a, float[2,12,5,3] b)
    <float s = {0.05}, int8 z = {3}, int64[2] axes = {2, 3}, int64[2] s0 = {0, 0}, int64[2] s1 = {1, 1},
     int64[2] end = {100, 100}, int64[2] steps = {2, 2}>
    {
      xq = QuantizeLinear(x, s, z)
      t = Transpose <perm = [0, 3, 2, 1]> (xq)
      aq = Slice(t, s0, end, axes, steps)
      bq = Slice(t, s1, end, axes, steps)
      a = DequantizeLinear(aq, s, z)
      b = DequantizeLinear(bq, s, z)
    })");
  auto shared = build_engine(graph, true);
  ASSERT_TRUE(shared);
  const EnginePlan& plan = shared->plan();
  EXPECT_EQ(plan.find_tensor("t"), -1);
  EXPECT_EQ(count_kind(plan, "int8_transpose"), 0);
  const engine::PlanLayer* a = writer_of(plan, "aq");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->kind, "strided_copy");
  expect_exact(graph);
}

// Composition itself: a transpose read by a stepped slice walks the right input axes from the
// right starts.
TEST(ComposeCopies, GeometryOfAReadThroughCopy) {
  const engine::CopyGeometry transpose{.source_axes = {0, 2, 1}, .starts = {0, 0, 0}, .steps = {}};
  const engine::CopyGeometry slice{.source_axes = {0, 1, 2}, .starts = {0, 3, 1}, .steps = {1, 2, 1}};
  const engine::CopyGeometry composed = engine::compose_copies(transpose, slice);
  EXPECT_EQ(composed.source_axes, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(composed.starts, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(composed.steps, (std::vector<int64_t>{1, 2, 1}));
  // A Gather of index 2 of axis 1 read after a slice starting at 1 with step 3: index 1 + 2 * 3.
  const engine::CopyGeometry stepped{.source_axes = {0, 1}, .starts = {0, 1}, .steps = {1, 3}};
  const engine::CopyGeometry gather{.source_axes = {0}, .starts = {0, 2}, .steps = {}};
  const engine::CopyGeometry picked = engine::compose_copies(stepped, gather);
  EXPECT_EQ(picked.source_axes, (std::vector<int64_t>{0}));
  EXPECT_EQ(picked.starts, (std::vector<int64_t>{0, 7}));
  EXPECT_TRUE(picked.steps.empty());
}

// Must not fire: a reader that is not a copy, readers that together read more than the copy wrote,
// a copy that is an engine output, and a view read by a view (both free as aliases).
TEST(ComposeCopies, LeavesCopiesWithOtherReadersOutputsAndViews) {
  {
    Graph graph = parse_graph(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4,5,6] x) => (float[2,5,4,3,6] r, float[2,1,4,3,6] s)
      <int64[1] one = {1}, int64[1] axis = {1}, int64[1] zero = {0}>
      {
        t = Transpose <perm = [0, 3, 2, 1, 4]> (x)
        r = Relu(t)
        s = Slice(t, zero, one, axis)
      })");
    auto shared = build_engine(graph, true);
    ASSERT_TRUE(shared);
    EXPECT_NE(writer_of(shared->plan(), "t"), nullptr) << "t has a Relu reader";
    expect_exact(graph);
  }
  {
    Graph graph = parse_graph(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4,5,6] x) => (float[2,3,4,5,6] a, float[2,3,4,5,6] b)
      {
        t = Transpose <perm = [0, 3, 2, 1, 4]> (x)
        a = Transpose <perm = [0, 3, 2, 1, 4]> (t)
        b = Transpose <perm = [0, 3, 2, 1, 4]> (t)
      })");
    auto shared = build_engine(graph, true);
    ASSERT_TRUE(shared);
    EXPECT_NE(writer_of(shared->plan(), "t"), nullptr) << "its readers read t twice over";
    expect_exact(graph);
  }
  {
    Graph graph = parse_graph(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4,5,6] x) => (float[2,5,4,3,6] t, float[2,1,4,3,6] s)
      <int64[1] one = {1}, int64[1] axis = {1}, int64[1] zero = {0}>
      {
        t = Transpose <perm = [0, 3, 2, 1, 4]> (x)
        s = Slice(t, zero, one, axis)
      })");
    auto shared = build_engine(graph, true);
    ASSERT_TRUE(shared);
    EXPECT_NE(writer_of(shared->plan(), "t"), nullptr) << "t is an engine output";
    expect_exact(graph);
  }
  {
    Graph graph = parse_graph(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,4,1,1] x) => (float[2,4] z, float[2,1,4] y)
      <int64[2] axes = {2, 3}, int64[1] ax = {1}>
      {
        s = Squeeze(x, axes)
        y = Unsqueeze(s, ax)
        z = Relu(s)
      })");
    auto shared = build_engine(graph, true);
    ASSERT_TRUE(shared);
    EXPECT_EQ(count_kind(shared->plan(), "strided_copy"), 0);
    expect_exact(graph);
  }
}

// 8-bit transposes where the last two dims swap run as tiled 2-D transposes (16x16 tiles): the
// tails of both dims, a batched rank-3 form and a transpose inside a rank-5 tensor, all exact.
TEST(ComposeCopies, Int8TransposesOfEveryTileTail) {
  for (const auto& [shape, perm] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
           {{2, 17, 33}, {0, 2, 1}},
           {{1, 2, 16, 48}, {0, 1, 3, 2}},
           {{1, 3, 45, 7}, {0, 1, 3, 2}},
           {{2, 5, 31, 3, 18}, {0, 3, 4, 1, 2}},
           {{3, 64, 5}, {0, 2, 1}}}) {
    Shape permuted;
    for (int64_t axis : perm) permuted.push_back(shape[static_cast<size_t>(axis)]);
    SCOPED_TRACE(fmt::format("{} perm {}", fmt::join(shape, "x"), fmt::join(perm, ",")));
    Graph graph = parse_graph(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[{0}] x) => (float[{1}] y)
      <float s = {{0.03}}, uint8 z = {{128}}>
      {{
        xq = QuantizeLinear(x, s, z)
        t = Transpose <perm = [{2}]> (xq)
        y = DequantizeLinear(t, s, z)
      }})",
                                          fmt::join(shape, ","), fmt::join(permuted, ","), fmt::join(perm, ",")));
    auto shared = build_engine(graph, true);
    ASSERT_TRUE(shared);
    // The transpose runs on the 8-bit codes (an int8_transpose, or a strided_copy of 8-bit values).
    const engine::PlanLayer* transpose = writer_of(shared->plan(), "t");
    ASSERT_NE(transpose, nullptr);
    EXPECT_TRUE(transpose->kind == "int8_transpose" || transpose->kernel == "x8-strided-copy") << transpose->kind;
    expect_exact(graph);
  }
}

}  // namespace
}  // namespace qdqrt::testing
