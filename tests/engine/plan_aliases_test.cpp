// Tensors that share bytes (engine/plan_aliases.h): a Concat's inputs written in place by their
// producers, a Reshape-like copy's output a view of its input. Structure (the copy layers are gone,
// the tensors alias), numbers (bit-identical to the engine built without sharing), the cases that
// must not fire, and plans whose aliases are damaged (refused by validate_plan, naming the tensor).
#include "engine/plan_aliases.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/engine.h"
#include "engine/plan_validation.h"
#include "tests/engine/shared_buffer_helpers.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

using engine::Engine;
using engine::EnginePlan;
using engine::PlanTensor;


const PlanTensor& tensor_named(const EnginePlan& plan, const std::string& name) {
  const int32_t index = plan.find_tensor(name);
  EXPECT_GE(index, 0) << name;
  return plan.tensors[static_cast<size_t>(std::max(index, 0))];
}

// The engine with shared buffers computes exactly what the one without does, at 1 and 2 threads
// (and at `batch` images).
void expect_bit_identical(const Graph& graph, int64_t batch = 1) {
  auto shared = build_engine(graph, true);
  auto separate = build_engine(graph, false);
  ASSERT_TRUE(shared && separate);
  TensorMap inputs = random_inputs(graph, 7);
  if (batch != 1) {
    for (auto& [name, tensor] : inputs) {
      Shape shape = tensor.shape();
      shape[0] = batch;
      Tensor smaller(tensor.dtype(), shape);
      std::memcpy(smaller.raw_data(), tensor.raw_data(), smaller.nbytes());
      tensor = std::move(smaller);
    }
  }
  for (int threads : {1, 2}) {
    TensorMap expected = run_engine(*separate, inputs, threads);
    TensorMap actual = run_engine(*shared, inputs, threads);
    for (const auto& [name, tensor] : expected) {
      ASSERT_EQ(actual.at(name).shape(), tensor.shape()) << name;
      EXPECT_EQ(std::memcmp(actual.at(name).raw_data(), tensor.raw_data(), tensor.nbytes()), 0)
          << name << " at " << threads << " threads";
    }
  }
}

// A SqueezeNet fire module: two convs (1x1 and 3x3, each with a Relu) side by side, their outputs
// concatenated on the channels (NHWC), read by a third conv. `extra` adds nodes and outputs.
std::string fire_module(int batch = 1, const std::string& extra_outputs = "", const std::string& extra_nodes = "") {
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[{0},8,6,6] x) => (float[{0},4,6,6] y{1})
    <float[16,8,1,1] wa = {2}, float[16] ba = {3}, float[16,8,3,3] wb = {4}, float[16] bb = {5},
     float[4,32,1,1] wc = {6}>
    {{
      a0 = Conv(x, wa, ba)
      a = Relu(a0)
      b0 = Conv <pads = [1, 1, 1, 1]> (x, wb, bb)
      b = Relu(b0)
      c = Concat <axis = 1> (a, b)
      y = Conv(c, wc)
      {7}
    }})",
                     batch, extra_outputs, literal(128, 1, -0.5f, 0.5f), literal(16, 2, -0.2f, 0.2f),
                     literal(1152, 3, -0.2f, 0.2f), literal(16, 4, -0.2f, 0.2f), literal(128, 5, -0.3f, 0.3f),
                     extra_nodes);
}

TEST(PlanAliases, ConvsWriteTheirChannelsOfAnNhwcConcatInPlace) {
  Graph graph = parse_graph(fire_module());
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  const EnginePlan& plan = engine->plan();
  EXPECT_EQ(count_kind(plan, "plain_concat"), 0);
  const int32_t c = plan.find_tensor("c");
  ASSERT_GE(c, 0);
  const PlanTensor& concat = plan.tensors[static_cast<size_t>(c)];
  EXPECT_EQ(concat.layout, engine::Layout::kNhwc);
  EXPECT_EQ(concat.alias_of, -1);
  // Each conv writes its 16 channels of every 32-channel pixel.
  const PlanTensor& a = tensor_named(plan, "a");
  const PlanTensor& b = tensor_named(plan, "b");
  EXPECT_EQ(a.alias_of, c);
  EXPECT_EQ(b.alias_of, c);
  EXPECT_EQ(a.alias_offset, 0);
  EXPECT_EQ(b.alias_offset, 16 * 4);
  EXPECT_EQ(a.row_stride, 32);
  EXPECT_EQ(b.row_stride, 32);
  EXPECT_EQ(a.arena_offset, concat.arena_offset);
  EXPECT_EQ(b.arena_offset, concat.arena_offset + 64);
  // The producers are the two convs.
  int writers = 0;
  for (const auto& layer : plan.layers) {
    for (int32_t output : layer.outputs) {
      if (output >= 0 && plan.tensors[static_cast<size_t>(output)].alias_of == c) {
        EXPECT_EQ(layer.kind, "fp32_conv");
        ++writers;
      }
    }
  }
  EXPECT_EQ(writers, 2);
  // Without sharing the Concat copies.
  auto separate = build_engine(graph, false);
  ASSERT_TRUE(separate);
  EXPECT_EQ(count_kind(separate->plan(), "plain_concat"), 1);
  EXPECT_EQ(tensor_named(separate->plan(), "a").alias_of, -1);
}

TEST(PlanAliases, ConcatInPlaceIsBitIdentical) {
  expect_bit_identical(parse_graph(fire_module()));
  // A batch of 3 built, run at 3 and at 2 images: the slices are columns of every image's rows.
  expect_bit_identical(parse_graph(fire_module(3)), 3);
  expect_bit_identical(parse_graph(fire_module(3)), 2);
  // Against the reference executor too.
  Graph graph = parse_graph(fire_module());
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  TensorMap inputs = random_inputs(graph, 11);
  auto expected = run_reference(graph, inputs);
  ASSERT_TRUE(expected.ok());
  TensorMap actual = run_engine(*engine, inputs, 2);
  const Tensor& y = actual.at("y");
  const Tensor& reference = expected->at("y");
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_NEAR(y.data<float>()[i], reference.data<float>()[i], 1e-4) << i;
  }
}

TEST(PlanAliases, AConcatInputWithAnotherReaderIsCopied) {
  Graph graph = parse_graph(fire_module(1, ", float[1,16,6,6] z", "z = Sigmoid(a)"));
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  EXPECT_EQ(count_kind(engine->plan(), "plain_concat"), 1);
  for (const PlanTensor& tensor : engine->plan().tensors) EXPECT_EQ(tensor.alias_of, -1) << tensor.name;
  expect_bit_identical(graph);
}

TEST(PlanAliases, AConcatInputThatIsAGraphOutputIsCopied) {
  Graph graph = parse_graph(fire_module(1, ", float[1,16,6,6] a"));
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  EXPECT_EQ(count_kind(engine->plan(), "plain_concat"), 1);
  for (const PlanTensor& tensor : engine->plan().tensors) EXPECT_EQ(tensor.alias_of, -1) << tensor.name;
  expect_bit_identical(graph);
}

// A channels-last Concat whose input comes from a layer that writes only dense rows (a Mul).
TEST(PlanAliases, AProducerWithoutARowStrideKeepsTheConcat) {
  std::string text = fire_module();
  const std::string relu = "b = Relu(b0)";
  text.replace(text.find(relu), relu.size(), "b1 = Relu(b0)\n      b = Mul(b1, b1)");
  Graph graph = parse_graph(text);
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  const EnginePlan& plan = engine->plan();
  ASSERT_EQ(tensor_named(plan, "c").layout, engine::Layout::kNhwc);
  ASSERT_EQ(tensor_named(plan, "b").layout, engine::Layout::kNhwc);
  EXPECT_EQ(count_kind(plan, "plain_concat"), 1);
  EXPECT_EQ(tensor_named(plan, "a").alias_of, -1);
  EXPECT_EQ(tensor_named(plan, "b").alias_of, -1);
  expect_bit_identical(graph);
}

// Inception's reduction blocks: a channels-last max pool writes its channels of the Concat too.
TEST(PlanAliases, AChannelsLastPoolWritesItsChannelsInPlace) {
  std::string text = fire_module();
  const std::string relu = "b = Relu(b0)";
  text.replace(text.find(relu), relu.size(),
               "b1 = Relu(b0)\n      b = MaxPool <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (b1)");
  Graph graph = parse_graph(text);
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  const EnginePlan& plan = engine->plan();
  EXPECT_EQ(count_kind(plan, "plain_concat"), 0);
  EXPECT_EQ(tensor_named(plan, "b").alias_of, plan.find_tensor("c"));
  EXPECT_EQ(tensor_named(plan, "b").row_stride, 32);
  expect_bit_identical(graph);
  expect_bit_identical(parse_graph(text.replace(text.find("float[1,8,6,6] x"), 16, "float[3,8,6,6] x")
                                       .replace(text.find("float[1,4,6,6] y"), 16, "float[3,4,6,6] y")),
                       2);
}

// The fire module in QDQ form: INT8 convs whose outputs a QConcat joins. `b_scale` is the second
// conv's output scale (the Concat's is 0.1).
std::string quantized_fire_module(const char* b_scale) {
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,6,6] x) => (float[1,4,6,6] y)
    <float s = {{0.05}}, int8 zp = {{0}}, float ws = {{0.01}}, float sa = {{0.1}}, float sb = {{{0}}},
     float sc = {{0.1}}, float sy = {{0.2}}, int8[16,8,1,1] wa = {1}, int8[16,8,3,3] wb = {2}, int8[4,32,1,1] wc = {3}>
    {{
      q = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(q, s, zp)
      wad = DequantizeLinear(wa, ws, zp)
      wbd = DequantizeLinear(wb, ws, zp)
      wcd = DequantizeLinear(wc, ws, zp)
      a0 = Conv(xd, wad)
      a = Relu(a0)
      aq = QuantizeLinear(a, sa, zp)
      ad = DequantizeLinear(aq, sa, zp)
      b0 = Conv <pads = [1, 1, 1, 1]> (xd, wbd)
      b = Relu(b0)
      bq = QuantizeLinear(b, sb, zp)
      bd = DequantizeLinear(bq, sb, zp)
      c = Concat <axis = 1> (ad, bd)
      cq = QuantizeLinear(c, sc, zp)
      cd = DequantizeLinear(cq, sc, zp)
      y0 = Conv(cd, wcd)
      yq = QuantizeLinear(y0, sy, zp)
      y = DequantizeLinear(yq, sy, zp)
    }})",
                     b_scale, literal(128, 1, -40, 40, true), literal(1152, 2, -40, 40, true),
                     literal(128, 3, -40, 40, true));
}

int strided_aliases(const EnginePlan& plan) {
  int count = 0;
  for (const PlanTensor& tensor : plan.tensors) count += tensor.alias_of >= 0 && tensor.row_stride == 32 ? 1 : 0;
  return count;
}

TEST(PlanAliases, Int8ConvsWriteAQuantizedConcatOfOneScaleInPlace) {
  Graph graph = parse_graph(quantized_fire_module("0.1"));
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  EXPECT_EQ(count_kind(engine->plan(), "qconcat") + count_kind(engine->plan(), "plain_concat"), 0);
  EXPECT_EQ(strided_aliases(engine->plan()), 2);
  for (const auto& layer : engine->plan().layers) {
    for (int32_t output : layer.outputs) {
      if (engine->plan().tensors[static_cast<size_t>(output)].alias_of >= 0) EXPECT_EQ(layer.kind, "qconv");
    }
  }
  auto separate = build_engine(graph, false);
  ASSERT_TRUE(separate);
  // The Concat of one scale joins int8 tensors (plain_concat): the optimizer drops its Q/DQ.
  EXPECT_EQ(count_kind(separate->plan(), "qconcat") + count_kind(separate->plan(), "plain_concat"), 1);
  expect_bit_identical(graph);
}

TEST(PlanAliases, AQuantizedConcatThatRequantizesIsKept) {
  Graph graph = parse_graph(quantized_fire_module("0.07"));
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  EXPECT_EQ(count_kind(engine->plan(), "qconcat"), 1);
  EXPECT_EQ(strided_aliases(engine->plan()), 0);
  expect_bit_identical(graph);
}

// Plain tensors concatenated on dim 1 at batch 1 are contiguous blocks any producer writes.
constexpr const char* kBlocksText = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[{0},16,6,6] x) => (float[{0},32,6,6] y)
  {{
    a = Sigmoid(x)
    b = Tanh(x)
    c = Concat <axis = {1}> (a, b)
    y = Sigmoid(c)
  }})";

TEST(PlanAliases, PlainBlocksAreWrittenInPlaceAtBatchOne) {
  Graph graph = parse_graph(fmt::format(fmt::runtime(kBlocksText), 1, 1));
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  const EnginePlan& plan = engine->plan();
  EXPECT_EQ(count_kind(plan, "plain_concat"), 0);
  const PlanTensor& b = tensor_named(plan, "b");
  EXPECT_EQ(b.alias_of, plan.find_tensor("c"));
  EXPECT_EQ(b.alias_offset, 16 * 36 * 4);
  EXPECT_EQ(b.row_stride, 0);
  expect_bit_identical(graph);
}

TEST(PlanAliases, BlocksThatABatchWouldMoveAreCopied) {
  // Batch 2: each image's blocks lie apart.
  Graph batched = parse_graph(fmt::format(fmt::runtime(kBlocksText), 2, 1));
  auto engine = build_engine(batched, true);
  ASSERT_TRUE(engine);
  EXPECT_EQ(count_kind(engine->plan(), "plain_concat"), 1);
  expect_bit_identical(batched, 2);
}

// Swin's shifted windows: torch.roll along W exported as two Slices joined by a Concat on W of a
// plain [N, H, W, C] tensor. Each Slice (a strided_copy) writes its W x C part of every row.
constexpr const char* kRollText = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[{0},5,7,6] x) => (float[{0},5,7,6] y)
  <int64[1] s0 = {{0}}, int64[1] e0 = {{3}}, int64[1] s1 = {{3}}, int64[1] e1 = {{7}}, int64[1] axes = {{2}}>
  {{
    r = Sigmoid(x)
    a = Slice(r, s1, e1, axes)
    b = Slice(r, s0, e0, axes)
    c = Concat <axis = 2> (a, b)
    y = Relu(c)
  }})";

TEST(PlanAliases, SlicesWriteTheirPartOfEveryRowOfAConcat) {
  Graph graph = parse_graph(fmt::format(fmt::runtime(kRollText), 1));
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  const EnginePlan& plan = engine->plan();
  EXPECT_EQ(count_kind(plan, "plain_concat"), 0);
  const PlanTensor& a = tensor_named(plan, "a");
  const PlanTensor& b = tensor_named(plan, "b");
  EXPECT_EQ(a.alias_of, plan.find_tensor("c"));
  EXPECT_EQ(b.alias_of, plan.find_tensor("c"));
  EXPECT_EQ(a.row_stride, 7 * 6);  // rows of W x C
  EXPECT_EQ(b.alias_offset, 4 * 6 * 4);
  EXPECT_EQ(engine::strided_row_length(plan, a), 4 * 6);
  EXPECT_EQ(engine::strided_row_length(plan, b), 3 * 6);
  expect_bit_identical(graph);
  Graph batched = parse_graph(fmt::format(fmt::runtime(kRollText), 3));
  EXPECT_EQ(count_kind(build_engine(batched, true)->plan(), "plain_concat"), 0);
  expect_bit_identical(batched, 3);
  expect_bit_identical(batched, 2);
}

TEST(PlanAliases, ReshapesBecomeViews) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[1,8,6,6] x) => (float[1,288,1] y, float[1,288,1] z)
    {
      r = Sigmoid(x)
      f = Flatten(r)
      u = Unsqueeze <axes = [2]> (f)
      y = Sigmoid(u)
      z = Relu(u)
    })");
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  const EnginePlan& plan = engine->plan();
  EXPECT_EQ(count_kind(plan, "plain_copy"), 0);
  const int32_t r = plan.find_tensor("r");
  int views = 0;
  for (const PlanTensor& view : plan.tensors) {
    if (view.name == "r" || view.kind != engine::TensorKind::kActivation) continue;
    const std::string& name = view.name;
    ++views;
    EXPECT_EQ(view.alias_of, r) << name;  // a view of a view shares its root
    EXPECT_EQ(view.alias_offset, 0) << name;
    EXPECT_EQ(view.arena_offset, plan.tensors[static_cast<size_t>(r)].arena_offset) << name;
  }
  auto separate = build_engine(graph, false);
  ASSERT_TRUE(separate);
  EXPECT_GE(views, 2);
  EXPECT_EQ(count_kind(separate->plan(), "plain_copy"), views);
  expect_bit_identical(graph);
}

// A Transpose that moves only dims of 1 (attention's [N, T, E] -> [T, N, E] at maximum batch 1)
// copies no byte: its output is a view of its input and the strided_copy goes. One that reorders
// dims other than 1, or moves a batch of 2, keeps its copy.
TEST(PlanAliases, TransposesOfDimsOfOneBecomeViews) {
  const std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[{0},5,6] x, float[{0},2,3,4] w) => (float[5,{0},6] y, float[3,{0},2,4] z)
    {{
      r = Sigmoid(x)
      t = Transpose <perm = [1, 0, 2]> (r)
      y = Sigmoid(t)
      s = Sigmoid(w)
      u = Transpose <perm = [2, 0, 1, 3]> (s)
      z = Sigmoid(u)
    }})";
  Graph graph = parse_graph(fmt::format(fmt::runtime(text), 1));
  auto engine = build_engine(graph, true);
  auto separate = build_engine(graph, false);
  ASSERT_TRUE(engine && separate);
  EXPECT_EQ(count_kind(separate->plan(), "strided_copy"), 2);
  EXPECT_EQ(count_kind(engine->plan(), "strided_copy"), 1);  // [1,2,3,4] -> [3,1,2,4] reorders 2 and 3
  const EnginePlan& plan = engine->plan();
  EXPECT_EQ(tensor_named(plan, "t").alias_of, plan.find_tensor("r"));
  EXPECT_EQ(tensor_named(plan, "u").alias_of, -1);
  expect_bit_identical(graph);
  Graph batch_two = parse_graph(fmt::format(fmt::runtime(text), 2));
  auto copies = build_engine(batch_two, true);
  ASSERT_TRUE(copies);
  EXPECT_EQ(count_kind(copies->plan(), "strided_copy"), 2);
  expect_bit_identical(batch_two, 2);
  expect_bit_identical(batch_two, 1);
}

TEST(PlanAliases, GraphInputsAndOutputsKeepTheirCopies) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,6,6] x) => (float[1,288] y, float[1,288] z)
    {
      f = Flatten(x)
      y = Sigmoid(f)
      r = Sigmoid(x)
      z = Flatten(r)
    })");
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  EXPECT_EQ(count_kind(engine->plan(), "plain_copy"), 2);
  for (const PlanTensor& tensor : engine->plan().tensors) EXPECT_EQ(tensor.alias_of, -1) << tensor.name;
  expect_bit_identical(graph);
}

// ---- Damaged plans: what a file claims about aliases is checked before anything binds ----

EnginePlan fire_plan() {
  auto engine = build_engine(parse_graph(fire_module()), true);
  EXPECT_TRUE(engine);
  return engine ? engine->plan() : EnginePlan{};
}

void expect_refused(const EnginePlan& plan, const std::vector<std::string>& parts) {
  auto engine = Engine::from_plan(plan);
  ASSERT_FALSE(engine.ok()) << "accepted; wanted a refusal naming " << parts.front();
  for (const std::string& part : parts) {
    EXPECT_NE(engine.status().message().find(part), std::string::npos) << engine.status().message();
  }
}

PlanTensor& mutable_tensor(EnginePlan& plan, const std::string& name) {
  return plan.tensors[static_cast<size_t>(plan.find_tensor(name))];
}

TEST(PlanAliases, TheBuiltPlansBind) { EXPECT_TRUE(Engine::from_plan(fire_plan()).ok()); }

TEST(PlanAliases, OverlappingSlicesAreRefused) {
  EnginePlan plan = fire_plan();
  PlanTensor& b = mutable_tensor(plan, "b");
  b.alias_offset = 8 * 4;  // channels 8..23: over a's 0..15
  b.arena_offset = mutable_tensor(plan, "c").arena_offset + b.alias_offset;
  expect_refused(plan, {"slice 'b' of 'c' overlaps another slice"});
}

TEST(PlanAliases, SlicesThatDoNotCoverTheirTensorAreRefused) {
  EnginePlan plan = fire_plan();
  PlanTensor& b = mutable_tensor(plan, "b");
  b.alias_of = -1;
  b.alias_offset = 0;
  b.row_stride = 0;
  b.arena_offset = plan.arena_bytes - (b.bytes + 63) / 64 * 64;
  expect_refused(plan, {"the slices of 'c' cover"});
}

TEST(PlanAliases, AnAliasOutsideItsTensorIsRefused) {
  EnginePlan plan = fire_plan();
  PlanTensor& b = mutable_tensor(plan, "b");
  b.alias_offset = 24 * 4;  // channels 24..39 of a 32-channel row
  b.arena_offset = mutable_tensor(plan, "c").arena_offset + b.alias_offset;
  expect_refused(plan, {"tensor 'b'", "is not columns of 'c'"});
  plan = fire_plan();
  mutable_tensor(plan, "b").row_stride = 48;
  expect_refused(plan, {"slice 'b' of 'c' has row stride 48"});
  plan = fire_plan();
  mutable_tensor(plan, "b").arena_offset += 64;
  expect_refused(plan, {"tensor 'b'", "is not at offset 64 of 'c'"});
  plan = fire_plan();
  mutable_tensor(plan, "b").alias_of = plan.find_tensor("a");
  expect_refused(plan, {"tensor 'b' aliases 'a', itself an alias"});
}

TEST(PlanAliases, ATensorSharingLiveBytesIsRefused) {
  EnginePlan plan = fire_plan();
  // The input's channels-last copy, read by the second conv, moved into the Concat's bytes, which
  // the first conv has written by then.
  PlanTensor& reordered = mutable_tensor(plan, "x#nhwc");
  ASSERT_EQ(reordered.kind, engine::TensorKind::kActivation);
  reordered.arena_offset = mutable_tensor(plan, "c").arena_offset;
  expect_refused(plan, {"share arena bytes", "'c'", "'x#nhwc'"});
}

TEST(PlanAliases, AViewMustBeTheWholeOfItsTensorAndUnwritten) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,6,6] x) => (float[1,1,144] y)
    <int64[3] shape = {1, 2, 144}, int64[1] starts = {0}, int64[1] ends = {1}, int64[1] axes = {1}>
    {
      r = Sigmoid(x)
      f = Reshape(r, shape)
      y = Slice(f, starts, ends, axes)
    })");
  auto engine = build_engine(graph, true);
  ASSERT_TRUE(engine);
  EnginePlan plan = engine->plan();
  ASSERT_EQ(tensor_named(plan, "f").alias_of, plan.find_tensor("r"));
  EnginePlan damaged = plan;
  mutable_tensor(damaged, "f").alias_offset = 64;
  mutable_tensor(damaged, "f").arena_offset += 64;
  expect_refused(damaged, {"'f'"});
  // A layer writing the view: its bytes are its tensor's, which another layer writes.
  damaged = plan;
  engine::PlanLayer copy;
  copy.kind = "plain_copy";
  copy.name = "copy";
  copy.kernel = "x8-copy";
  copy.inputs = {plan.find_tensor("r")};
  copy.outputs = {plan.find_tensor("f")};
  for (size_t i = 0; i < damaged.layers.size(); ++i) {
    if (damaged.layers[i].outputs == std::vector<int32_t>{plan.find_tensor("r")}) {
      damaged.layers.insert(damaged.layers.begin() + static_cast<std::ptrdiff_t>(i) + 1, copy);
      break;
    }
  }
  expect_refused(damaged, {"'f'"});
}

TEST(PlanAliases, ALayerThatCannotWriteARowStrideIsRefused) {
  EnginePlan plan = fire_plan();
  const int32_t b = plan.find_tensor("b");
  for (auto& layer : plan.layers) {
    if (layer.outputs == std::vector<int32_t>{b}) layer.params.set("dw.mode", int64_t{4});  // now a fused depthwise
  }
  expect_refused(plan, {"cannot write 'b' in rows of 16 at a row stride of 32"});
}

}  // namespace
}  // namespace qdqrt::testing
