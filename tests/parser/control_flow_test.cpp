// Control flow fixed at load time (parser/onnx_control_flow.h): torch's tensor_split Loop over
// a tensor sequence, its squeeze-If on a static dim, the sequence ops, Loops carrying tensors.
// Each loads without Loop/If/sequence ops and computes what the same graph written without
// control flow computes (reference executor, bit for bit); what cannot be fixed at load time is
// reported as an unsupported op.
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "reference/executor.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

// Text syntax has no sequence types (libonnx 1.12): the listed body inputs/outputs are declared
// float tensors in the text and turned into sequences of float tensors here.
void make_sequences(onnx::GraphProto& body, const std::vector<std::string>& names) {
  auto retype = [&](onnx::ValueInfoProto& value) {
    if (std::find(names.begin(), names.end(), value.name()) == names.end()) return;
    value.mutable_type()->Clear();
    value.mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
  };
  for (auto& input : *body.mutable_input()) retype(input);
  for (auto& output : *body.mutable_output()) retype(output);
}

onnx::GraphProto& loop_body(onnx::ModelProto& model) {
  for (auto& node : *model.mutable_graph()->mutable_node()) {
    if (node.op_type() == "Loop") return *node.mutable_attribute(0)->mutable_g();
  }
  ADD_FAILURE() << "no Loop";
  return *model.mutable_graph();
}

Graph load_ok(const onnx::ModelProto& model) {
  Result<Graph> graph = load_model(model, fuzz_options());
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return graph.ok() ? std::move(*graph) : Graph{};
}

bool has_control_flow_op(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == "Loop" || node.op_type == "If" || node.op_type.rfind("Sequence", 0) == 0 ||
        node.op_type == "ConcatFromSequence") {
      return true;
    }
  }
  return false;
}

TensorMap random_input(const std::string& name, const Shape& shape, unsigned seed) {
  Tensor tensor(DataType::kFloat, shape);
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = uniform(generator);
  return {{name, tensor}};
}

// Both graphs' outputs, bit for bit.
void expect_same_results(const Graph& inlined, const Graph& plain, const TensorMap& inputs) {
  Result<TensorMap> got = run_reference(inlined, inputs);
  Result<TensorMap> want = run_reference(plain, inputs);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_EQ(got->size(), want->size());
  for (const auto& [name, tensor] : *want) {
    SCOPED_TRACE(name);
    const auto it = got->find(name);
    ASSERT_NE(it, got->end());
    ASSERT_EQ(it->second.shape(), tensor.shape());
    ASSERT_EQ(it->second.nbytes(), tensor.nbytes());
    EXPECT_EQ(std::memcmp(it->second.raw_data(), tensor.raw_data(), tensor.nbytes()), 0);
  }
}

// torch 1.13's export of torch.tensor_split(x, (1,), dim=2) (MViT's class token split): a Loop
// over the split points appending slices to a sequence, the last slice appended after it, and
// the pieces read back by SequenceAt.
const char* kTensorSplit = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,5,4] x) => (float[2,3,1,4] head, float[2,3,4,4] rest)
<int64[1] split_points = {1}, int64[1] axis = {2}, int64[1] zero = {0}, int64 trips = {1}, bool keep = {1},
 int64 one = {1}, int64 last = {-1}, int64 first_at = {0}, int64 second_at = {1}>
{
  points = Concat<axis = 0>(zero, split_points)
  empty = SequenceEmpty()
  parts = Loop(trips, keep, empty) <body = body (int64 i, bool c, float[] s_in) => (bool c_out, float[] s_out) {
      start = Gather<axis = 0>(points, i)
      next = Add(i, one)
      end = Gather<axis = 0>(points, next)
      start1 = Unsqueeze(start, zero)
      end1 = Unsqueeze(end, zero)
      piece = Slice(x, start1, end1, axis)
      s_out = SequenceInsert(s_in, piece)
      c_out = Identity(keep)
  }>
  last_start = Gather<axis = 0>(points, last)
  last_start1 = Unsqueeze(last_start, zero)
  shape = Shape(x)
  size = Gather<axis = 0>(shape, axis)
  tail = Slice(x, last_start1, size, axis)
  all = SequenceInsert(parts, tail)
  head = SequenceAt(all, first_at)
  rest = SequenceAt(all, second_at)
}
)";

const char* kTensorSplitPlain = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,5,4] x) => (float[2,3,1,4] head, float[2,3,4,4] rest)
<int64[1] axis = {2}, int64[1] zero = {0}, int64[1] one = {1}, int64[1] five = {5}>
{
  head = Slice(x, zero, one, axis)
  rest = Slice(x, one, five, axis)
}
)";

TEST(ControlFlow, TorchTensorSplitLoopBecomesSlices) {
  onnx::ModelProto model = parse_model(kTensorSplit);
  make_sequences(loop_body(model), {"s_in", "s_out"});
  Graph inlined = load_ok(model);
  EXPECT_FALSE(has_control_flow_op(inlined));
  int slices = 0;
  for (const Node& node : inlined.nodes) slices += node.op_type == "Slice";
  EXPECT_EQ(slices, 2);
  ASSERT_NE(inlined.find_value("rest"), nullptr);
  EXPECT_EQ(inlined.find_value("rest")->static_shape(), (Shape{2, 3, 4, 4}));
  expect_same_results(inlined, load_ok(parse_model(kTensorSplitPlain)), random_input("x", {2, 3, 5, 4}, 1));
}

// torch's squeeze of a dim it cannot see: If (size == 1) Squeeze else Identity. With the dim
// static the taken branch is inlined; both ways round.
std::string squeeze_if(int dim) {
  return R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,)" +
         std::to_string(dim) +
         R"(,3] x) => (float[] y)
<int64 one = {1}, int64 at = {1}>
{
  shape = Shape(x)
  size = Gather<axis = 0>(shape, at)
  is_one = Equal(size, one)
  y = If(is_one) <
    then_branch = then_graph () => (float[] squeezed) {
      axes = Constant<value = int64[1] {1}>()
      squeezed = Squeeze(x, axes)
    },
    else_branch = else_graph () => (float[] same) { same = Identity(x) }
  >
}
)";
}

TEST(ControlFlow, IfOnAStaticDimTakesItsBranch) {
  Graph squeezed = load_ok(parse_model(squeeze_if(1)));
  EXPECT_FALSE(has_control_flow_op(squeezed));
  ASSERT_NE(squeezed.find_value("y"), nullptr);
  EXPECT_EQ(squeezed.find_value("y")->static_shape(), (Shape{2, 3}));
  Graph kept = load_ok(parse_model(squeeze_if(4)));
  EXPECT_FALSE(has_control_flow_op(kept));
  EXPECT_EQ(kept.find_value("y")->static_shape(), (Shape{2, 4, 3}));
  const char* plain = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,1,3] x) => (float[2,3] y)
<int64[1] axes = {1}>
{
  y = Squeeze(x, axes)
}
)";
  expect_same_results(squeezed, load_ok(parse_model(plain)), random_input("x", {2, 1, 3}, 2));
  // A dynamic batch does not matter: the condition reads dim 1 only.
  std::string dynamic_batch = squeeze_if(1);
  dynamic_batch.replace(dynamic_batch.find("float[2,1,3] x"), 14, "float[N,1,3] x");
  Graph batched = load_ok(parse_model(dynamic_batch));
  EXPECT_FALSE(has_control_flow_op(batched));
  ASSERT_NE(batched.find_value("y"), nullptr);
  ASSERT_TRUE(batched.find_value("y")->shape.has_value());
  EXPECT_EQ(batched.find_value("y")->shape->size(), 2u);
}

// Loaded at shapes given for a file's dynamic dims (as the engine builder loads at its maximum
// batch): a condition on a dim the file fixes is taken; one on a dynamic dim is not fixed by the
// given value (the engine may run at other sizes) and the If is reported.
TEST(ControlFlow, GivenShapesDoNotFixAConditionOnADynamicDim) {
  std::string text = squeeze_if(1);
  text.replace(text.find("float[2,1,3] x"), 14, "float[N,1,3] x");
  LoadOptions chosen = fuzz_options();
  chosen.choose_input_shapes = [](const std::vector<ValueInfo>&) -> Result<std::map<std::string, Shape>> {
    return std::map<std::string, Shape>{{"x", {1, 1, 3}}};
  };
  LoadOptions given = fuzz_options();
  given.input_shapes["x"] = {1, 1, 3};
  for (const LoadOptions& options : {chosen, given}) {
    Result<Graph> static_dim = load_model(parse_model(text), options);
    ASSERT_TRUE(static_dim.ok()) << static_dim.status().message();
    EXPECT_FALSE(has_control_flow_op(*static_dim));
    EXPECT_EQ(static_dim->find_value("y")->static_shape(), (Shape{1, 3}));
  }
  // The same If on dim 0 (N, given as 1), and on a dim D the file leaves dynamic.
  std::string on_batch = text;
  on_batch.replace(on_batch.find("int64 at = {1}"), 14, "int64 at = {0}");
  std::string on_d = squeeze_if(1);
  on_d.replace(on_d.find("float[2,1,3] x"), 14, "float[2,D,3] x");
  LoadOptions d_given = fuzz_options();
  d_given.input_shapes["x"] = {2, 1, 3};
  EXPECT_LOAD_ERROR(load_model(parse_model(on_batch), chosen), "If");
  EXPECT_LOAD_ERROR(load_model(parse_model(on_batch), given), "If");
  EXPECT_LOAD_ERROR(load_model(parse_model(on_d), d_given), "If");
}

// A Loop carrying a tensor (three doublings) and a sequence built by SequenceConstruct,
// SequenceInsert at a position, SequenceErase, SequenceLength and ConcatFromSequence.
TEST(ControlFlow, CarriedTensorsAndSequenceOps) {
  onnx::ModelProto model = parse_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[2,3] doubled, float[4,3] stacked, float[2,2,3] new_axis, int64 count)
<int64 trips = {3}, bool keep = {1}, int64 at0 = {0}, int64 at_last = {-1}>
{
  doubled = Loop(trips, keep, x) <body = body (int64 i, bool c, float[2,3] v) => (bool c_out, float[2,3] w) {
      w = Add(v, v)
      c_out = Identity(c)
  }>
  neg = Neg(x)
  pair = SequenceConstruct(x, neg)
  three = SequenceInsert(pair, doubled, at0)
  two = SequenceErase(three, at_last)
  stacked = ConcatFromSequence<axis = 0>(two)
  new_axis = ConcatFromSequence<axis = 0, new_axis = 1>(two)
  count = SequenceLength(three)
}
)");
  // The Loop's condition left out (text syntax cannot write an empty input in the middle).
  for (auto& node : *model.mutable_graph()->mutable_node()) {
    if (node.op_type() == "Loop") node.set_input(1, "");
  }
  Graph inlined = load_ok(model);
  EXPECT_FALSE(has_control_flow_op(inlined));
  const char* plain = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[2,3] doubled, float[4,3] stacked, float[2,2,3] new_axis, int64 count)
<int64[1] axes = {0}, int64 count = {3}>
{
  a = Add(x, x)
  b = Add(a, a)
  doubled = Add(b, b)
  stacked = Concat<axis = 0>(doubled, x)
  u = Unsqueeze(doubled, axes)
  v = Unsqueeze(x, axes)
  new_axis = Concat<axis = 0>(u, v)
}
)";
  Graph want = load_ok(parse_model(plain));
  // `count` is an initializer there: compare the rest, and the count by value.
  Result<TensorMap> got = run_reference(inlined, random_input("x", {2, 3}, 3));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->at("count").value_as_int64(0), 3);
  Graph without_count = inlined;
  without_count.outputs.pop_back();
  Graph want_without_count = want;
  want_without_count.outputs.pop_back();
  expect_same_results(without_count, want_without_count, random_input("x", {2, 3}, 3));
}

// What cannot be fixed at load time stays and is reported as unsupported.
TEST(ControlFlow, MustNotInline) {
  const std::string body =
      "<body = body (int64 i, bool c, float[2] v) => (bool c_out, float[2] w) { w = Add(v, v) c_out = Identity(c) }>";
  struct Case {
    const char* what;
    std::string text;
    const char* op;
  };
  const Case cases[] = {
      {"a trip count from a graph input",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2] x, int64 n) => (float[2] y)\n<bool keep = {1}>\n{\n  y "
       "= Loop(n, keep, x) " +
           body + "\n}\n",
       "Loop"},
      {"more trips than unrolled",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2] x) => (float[2] y)\n<int64 n = {100000}, bool keep = "
       "{1}>\n{\n"
       "  y = Loop(n, keep, x) " +
           body + "\n}\n",
       "Loop"},
      {"a condition the body computes",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2] x) => (float[2] y)\n<int64 n = {3}, bool keep = "
       "{1}>\n{\n"
       "  y = Loop(n, keep, x) <body = body (int64 i, bool c, float[2] v) => (bool c_out, float[2] w) {"
       " w = Add(v, v) two = Constant<value = int64 {2}>() c_out = Less(i, two) }>\n}\n",
       "Loop"},
      {"a scan output",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2] x) => (float[2] y, float[3,2] scanned)\n<int64 n = "
       "{3}, bool keep = {1}>\n"
       "{\n  y, scanned = Loop(n, keep, x) <body = body (int64 i, bool c, float[2] v) => (bool c_out, float[2] w, "
       "float[2] s) {"
       " w = Add(v, v) s = Identity(v) c_out = Identity(c) }>\n}\n",
       "Loop"},
      {"a condition from a graph input",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (bool c, float[3] x) => (float[3] y)\n{\n  y = If(c) <"
       "then_branch = t () => (float[3] a) { a = Relu(x) }, else_branch = e () => (float[3] b) { b = Identity(x) "
       "}>\n}\n",
       "If"},
  };
  for (const Case& form : cases) {
    SCOPED_TRACE(form.what);
    onnx::ModelProto model = parse_model(form.text);
    Result<Graph> graph = load_model(model, fuzz_options());
    EXPECT_LOAD_ERROR(graph, form.op);
    if (!graph.ok()) EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported) << graph.status().message();
  }
  // A SequenceAt past the end of the sequence.
  onnx::ModelProto model = parse_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y)
<int64 at = {2}>
{
  pair = SequenceConstruct(x, x)
  y = SequenceAt(pair, at)
}
)");
  EXPECT_LOAD_ERROR(load_model(model, fuzz_options()), "Sequence");
}

}  // namespace
}  // namespace qdqrt::testing
