// lower_box_scatter: a ScatterND whose constant indices enumerate a box of its data becomes Slices
// around the box and Concats (same values, bit for bit); torch's meshgrid indices over a dynamic
// batch fire once the shapes are evaluated. Must not fire: a reduction, indices that are not a box
// in order, runtime indices, a box over part of a dynamic dim, and file indices over a dynamic dim.
// A second ScatterND writing the first's updates (a view of them) into the same box of its output
// (torch's `x[box] += u`) is dropped; one writing other values or another box is lowered too.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include "core/dim_expr.h"
#include "core/shape_inference.h"
#include "parser/onnx_loader.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

const std::vector<std::string> kPasses = {"fold_constants", "evaluate_shape_computations", "lower_box_scatter"};

// The indices of data[offset[0]:offset[0]+extent[0], ...] in row-major order, as ONNX text
// "int64[e0,...,k] name = {...}"; `swap` exchanges two positions (not a box in order any more).
std::string box_indices(const std::string& name, const std::vector<int64_t>& offset,
                        const std::vector<int64_t>& extent, bool swap = false) {
  const size_t k = extent.size();
  std::vector<std::vector<int64_t>> rows;
  std::vector<int64_t> position(k, 0);
  int64_t count = 1;
  for (int64_t e : extent) count *= e;
  for (int64_t p = 0; p < count; ++p) {
    std::vector<int64_t> row(k);
    for (size_t a = 0; a < k; ++a) row[a] = offset[a] + position[a];
    rows.push_back(row);
    for (size_t a = k; a-- > 0;) {
      if (++position[a] < extent[a]) break;
      position[a] = 0;
    }
  }
  if (swap) std::swap(rows[0], rows[1]);
  std::string dims, values;
  for (int64_t e : extent) dims += fmt::format("{},", e);
  for (const auto& row : rows) {
    for (int64_t v : row) values += fmt::format("{}{}", values.empty() ? "" : ", ", v);
  }
  return fmt::format("int64[{}{}] {} = {{{}}}", dims, k, name, values);
}

// data x (`x_type`), updates u of `u_type` = u0 + 1, y = ScatterND(x, idx, u) with idx a constant.
std::string constant_box_model(const std::string& x_type, const std::string& u_type, const std::string& indices,
                               const std::string& scatter_attributes = "", int opset = 13) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : {}]>
g ({} x, {} u0) => ({} y)
<{}, float one = {{1}}>
{{
  u = Add(u0, one)
  y = ScatterND{}(x, idx, u)
}})",
                     opset, x_type, u_type, x_type, indices, scatter_attributes);
}

TEST(LowerBoxScatter, ConstantBoxesBecomeSlicesAndConcats) {
  struct Case {
    const char* what;
    std::string x, u;
    std::vector<int64_t> offset, extent;
    int concats;
  };
  const Case cases[] = {
      {"inner corner, every axis indexed", "float[2,3,5,6]", "float[2,3,4,5]", {0, 0, 1, 1}, {2, 3, 4, 5}, 2},
      {"rows of a matrix, trailing dims whole", "float[6,4]", "float[3,4]", {2}, {3}, 1},
      {"middle box with data after it", "float[2,7,5,3]", "float[1,3,2,3]", {1, 2, 1}, {1, 3, 2}, 3},
      {"the whole data", "float[2,3]", "float[2,3]", {0, 0}, {2, 3}, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(constant_box_model(c.x, c.u, box_indices("idx", c.offset, c.extent)));
    Graph rewritten = run_passes(graph, kPasses);
    EXPECT_EQ(count_ops(rewritten, "ScatterND"), 0) << op_sequence(rewritten);
    EXPECT_EQ(count_ops(rewritten, "Concat"), c.concats) << op_sequence(rewritten);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 5), 0.0, 0.0);
  }
}

// torch's export of `attn[:, :, 1:, 1:] += r` (batch_start 1: `attn[1:, :, 1:, 1:] += r`): indices a meshgrid of Ranges over x's shape (the
// batch N included), Expanded to the updates' shape and stacked on a last axis.
std::string torch_slice_add_model(const char* batch_start, const char* r_batch) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,3,5,6] x, float[{},3,4,5] r) => (float[N,3,5,6] y)
<int64[1] a0 = {{0}}, int64[1] a1 = {{1}}, int64[1] a2 = {{2}}, int64[1] a3 = {{3}}, int64[1] last = {{-1}},
 int64[4] v0 = {{-1, 1, 1, 1}}, int64[4] v1 = {{1, -1, 1, 1}}, int64[4] v2 = {{1, 1, -1, 1}}, int64[4] v3 = {{1, 1, 1, -1}},
 int64[1] b0 = {{{}}}, int64[1] bend = {{9223372036854775807}}, int64[2] st = {{1, 1}}, int64[2] en = {{5, 6}}, int64[2] ax = {{2, 3}}>
{{
  zero = Constant<value_int = 0>()
  one = Constant<value_int = 1>()
  start0 = Constant<value_int = {}>()
  s = Shape(x)
  g0 = Gather<axis = 0>(s, a0)
  g1 = Gather<axis = 0>(s, a1)
  g2 = Gather<axis = 0>(s, a2)
  g3 = Gather<axis = 0>(s, a3)
  n0 = Squeeze(g0)
  n1 = Squeeze(g1)
  n2 = Squeeze(g2)
  n3 = Squeeze(g3)
  i0 = Range(start0, n0, one)
  i1 = Range(zero, n1, one)
  i2 = Range(one, n2, one)
  i3 = Range(one, n3, one)
  m0 = Reshape(i0, v0)
  m1 = Reshape(i1, v1)
  m2 = Reshape(i2, v2)
  m3 = Reshape(i3, v3)
  p0 = Slice(x, st, en, ax)
  p = Slice(p0, b0, bend, a0)
  u = Add(p, r)
  t = Shape(u)
  e0 = Expand(m0, t)
  e1 = Expand(m1, t)
  e2 = Expand(m2, t)
  e3 = Expand(m3, t)
  k0 = Unsqueeze(e0, last)
  k1 = Unsqueeze(e1, last)
  k2 = Unsqueeze(e2, last)
  k3 = Unsqueeze(e3, last)
  idx = Concat<axis = -1>(k0, k1, k2, k3)
  y = ScatterND(x, idx, u)
}})",
                     r_batch, batch_start, batch_start);
}

// Loads ONNX text with the graph inputs at `shapes`, dim 0 of each named the batch in the dims'
// expressions and shape inference run, as the engine builder does before optimizing
// (engine/batch_tracking.h).
Graph load_at(const std::string& text, std::map<std::string, Shape> shapes) {
  std::vector<std::string> batched;
  for (const auto& [name, shape] : shapes) batched.push_back(name);
  onnx::ModelProto model;
  onnx::Status parsed = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(parsed.IsOK()) << parsed.ErrorMessage();
  LoadOptions options;
  options.input_shapes = std::move(shapes);
  Result<Graph> graph = load_onnx_model(model, options);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  if (!graph.ok()) return Graph{};
  for (const std::string& name : batched) graph->values[name].shape->front().expr = DimExpr::symbol("N");
  const Status inferred = infer_shapes(*graph);
  EXPECT_TRUE(inferred.is_ok()) << inferred.to_string();
  return std::move(*graph);
}

TEST(LowerBoxScatter, TorchMeshgridOverADynamicBatch) {
  Graph graph = load_at(torch_slice_add_model("0", "N"), {{"x", {2, 3, 5, 6}}, {"r", {2, 3, 4, 5}}});
  Graph rewritten = run_passes(graph, kPasses);
  EXPECT_EQ(count_ops(rewritten, "ScatterND"), 0) << op_sequence(rewritten);
  EXPECT_EQ(count_ops(rewritten, "Concat"), 2) << op_sequence(rewritten);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 7), 0.0, 0.0);
}

// torch's `x[1:3, 1:] += u0 + 1` in a file: the add's result written by one ScatterND, then by a
// second over its output (`second_indices`, `second_updates`: what that one writes) into `second`,
// read by `tail` (none when `second` is the graph output y).
std::string repeated_write_model(const std::string& second_indices, const std::string& second_updates,
                                 const std::string& tail, const std::string& second = "second") {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4,5] x, float[2,4] u0) => (float[4,5] y)
<{}, {}, float one = {{1}}, float two = {{2}}, int64[1] flat = {{8}}, int64[2] back = {{2, 4}}>
{{
  u = Add(u0, one)
  w = Add(u0, two)
  first = ScatterND(x, idx, u)
  same = Expand(u, back)
  view = Reshape(same, flat)
  again = Reshape(view, back)
  {} = ScatterND(first, idx2, {})
  {}
}})",
                     box_indices("idx", {1, 1}, {2, 4}), second_indices, second, second_updates, tail);
}

TEST(LowerBoxScatter, ARepeatedWriteOfTheSameValuesIsDropped) {
  for (const char* second : {"second", "y"}) {  // read by a node; the graph output
    SCOPED_TRACE(second);
    const std::string tail = std::string(second) == "y" ? "" : "y = Relu(second)";
    Graph graph = parse_graph(repeated_write_model(box_indices("idx2", {1, 1}, {2, 4}), "again", tail, second));
    Graph rewritten = run_passes(graph, kPasses);
    EXPECT_EQ(count_ops(rewritten, "ScatterND"), 0) << op_sequence(rewritten);
    EXPECT_EQ(count_ops(rewritten, "Concat"), 2) << op_sequence(rewritten);  // one box write: two axes
    expect_same_outputs(graph, rewritten, random_inputs(graph, 9), 0.0, 0.0);
  }
}

// torch writes `x[:, 1:3] += u` once with indices over both axes and once over the first two only.
TEST(LowerBoxScatter, ARepeatedWriteWithIndicesOverFewerAxesIsDropped) {
  Graph graph = parse_graph(fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,4,3] x, float[2,2,3] u0) => (float[2,4,3] y)
<{}, {}, float one = {{1}}>
{{
  u = Add(u0, one)
  first = ScatterND(x, idx, u)
  second = ScatterND(first, idx2, u)
  y = Relu(second)
}})",
                                        box_indices("idx", {0, 1, 0}, {2, 2, 3}), box_indices("idx2", {0, 1}, {2, 2})));
  Graph rewritten = run_passes(graph, kPasses);
  EXPECT_EQ(count_ops(rewritten, "ScatterND"), 0) << op_sequence(rewritten);
  EXPECT_EQ(count_ops(rewritten, "Concat"), 1) << op_sequence(rewritten);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 9), 0.0, 0.0);
}

TEST(LowerBoxScatter, AWriteOfOtherValuesOrAnotherBoxIsKept) {
  struct Case {
    const char* what;
    std::string indices, updates;
  };
  const Case cases[] = {
      {"other values", box_indices("idx2", {1, 1}, {2, 4}), "w"},
      {"another box", box_indices("idx2", {2, 1}, {2, 4}), "again"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(repeated_write_model(c.indices, c.updates, "y = Relu(second)"));
    Graph rewritten = run_passes(graph, kPasses);
    EXPECT_EQ(count_ops(rewritten, "ScatterND"), 0) << op_sequence(rewritten);
    EXPECT_EQ(count_ops(rewritten, "Concat"), 4) << op_sequence(rewritten);  // both box writes
    expect_same_outputs(graph, rewritten, random_inputs(graph, 9), 0.0, 0.0);
  }
}

TEST(LowerBoxScatter, MustNotFire) {
  struct Case {
    const char* what;
    Graph graph;
  };
  const std::vector<int64_t> offset = {0, 0, 1, 1}, extent = {2, 3, 4, 5};
  Case cases[] = {
      {"reduction add",
       parse_graph(constant_box_model("float[2,3,5,6]", "float[2,3,4,5]", box_indices("idx", offset, extent),
                                      "<reduction = \"add\">", 16))},
      {"positions out of order",
       parse_graph(constant_box_model("float[2,3,5,6]", "float[2,3,4,5]", box_indices("idx", offset, extent, true)))},
      {"a repeated position",
       parse_graph(constant_box_model("float[4,2]", "float[2,2]", "int64[2,1] idx = {1, 1}"))},
      {"runtime indices", parse_graph(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4,2] x, int64[2,1] idx, float[2,2] u) => (float[4,2] y)
{
  y = ScatterND(x, idx, u)
})")},
      {"part of the dynamic batch",
       load_at(torch_slice_add_model("1", "M"), {{"x", {2, 3, 5, 6}}, {"r", {1, 3, 4, 5}}})},
      {"file indices over the dynamic batch",
       load_at(constant_box_model("float[N,3,5,6]", "float[N,3,4,5]", box_indices("idx", offset, extent)),
               {{"x", {2, 3, 5, 6}}, {"u0", {2, 3, 4, 5}}})},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph rewritten = run_passes(c.graph, kPasses);
    EXPECT_EQ(count_ops(rewritten, "ScatterND"), 1) << op_sequence(rewritten);
  }
}

}  // namespace
}  // namespace qdqrt::testing
