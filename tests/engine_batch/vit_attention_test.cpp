// The ViT attention block whose Transpose moves the batch off dim 0 ([B,49,4,3,32] perm
// [3,0,2,1,4] -> [3,B,4,49,32]: the q/k/v parts interleaved per head, which slice_gathered_parts
// leaves as it is): built for batch 8 and run 1, 3 and 8 images at a time, every image's output is
// bit-identical to the batch-8 run and matches the reference executor. The block as timm and Swin
// write it ([B,49,3,4,32] perm [2,0,3,1,4]) runs without that Transpose: one projection and one
// 4-D Transpose per part (HeadSplitRunsAsOneProjectionPerPart).
// FP32 and QDQ (INT8 transpose, Gather, batched QMatMul) variants; the model is written with onnx's
// text parser, the batch dim symbolic and the Reshape targets computed from Shape(x) as torch
// exports them. Also: engines that cannot follow the batch refuse other batches with a clear error.
// Built with shared buffers (the default) the Transpose is read through by the Gathers; without,
// it runs as its own layer: both follow the batch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "tests/common/vit_class_token_graph.h"
#include "tests/engine_batch/batch_helpers.h"

namespace qdqrt::batch_testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxBatch = 8;
constexpr int64_t kTokens = 49;
constexpr int64_t kWidth = 384;

// The attention block; `qdq` adds Q/DQ pairs as a QAT export places them (weights fake-quantized).
// `parts_first`: the packed projection's columns are [3][heads][32] (timm, Swin), else
// [heads][3][32].
std::string attention_text(bool qdq, bool parts_first = false) {
  auto quantized = [&](const std::string& value, const std::string& scale, const std::string& zero_point) {
    if (!qdq) return fmt::format("  {0}_d = Identity({0})\n", value);
    return fmt::format("  {0}_q = QuantizeLinear({0}, {1}, {2})\n  {0}_d = DequantizeLinear({0}_q, {1}, {2})\n", value,
                       scale, zero_point);
  };
  std::string body;
  body += "  shape_x = Shape(x)\n  batch = Gather<axis = 0>(shape_x, zero)\n";
  body += "  shape5 = Concat<axis = 0>(batch, tail5)\n  shape3 = Concat<axis = 0>(batch, tail3)\n";
  body += quantized("x", "sx", "z8") + quantized("w_qkv", "sw", "z8") + quantized("w_proj", "sw", "z8");
  body += "  qkv = MatMul(x_d, w_qkv_d)\n" + quantized("qkv", "sa", "z8");
  body += parts_first ? "  r = Reshape(qkv_d, shape5)\n  t = Transpose<perm = [2, 0, 3, 1, 4]>(r)\n"
                      : "  r = Reshape(qkv_d, shape5)\n  t = Transpose<perm = [3, 0, 2, 1, 4]>(r)\n";
  body += "  q = Gather<axis = 0>(t, i0)\n  k = Gather<axis = 0>(t, i1)\n  v = Gather<axis = 0>(t, i2)\n";
  body += "  kt = Transpose<perm = [0, 1, 3, 2]>(k)\n";
  body += quantized("q", "sa", "z8") + quantized("kt", "sa", "z8") + quantized("v", "sa", "z8");
  body += "  s = MatMul(q_d, kt_d)\n  ss = Mul(s, scale)\n  p = Softmax<axis = -1>(ss)\n";
  body += quantized("p", "sp", "z8");
  body += "  o = MatMul(p_d, v_d)\n  ot = Transpose<perm = [0, 2, 1, 3]>(o)\n  a = Reshape(ot, shape3)\n";
  body += quantized("a", "sa", "z8");
  body += "  proj = MatMul(a_d, w_proj_d)\n  y = Add(proj, x)\n";
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
vit_attention (float[N,{0},{1}] x) => (float[N,{0},{1}] y)
<int64[1] zero = {{0}}, int64[4] tail5 = {{{0}, {3}}}, int64[2] tail3 = {{{0}, 128}},
 int64 i0 = {{0}}, int64 i1 = {{1}}, int64 i2 = {{2}}, float scale = {{0.1767767}},
 float sx = {{0.007874}}, float sw = {{0.0004}}, float sa = {{0.016}}, float sp = {{0.007874}}, int8 z8 = {{0}}>
{{
{2}}}
)",
                     kTokens, kWidth, body, parts_first ? "3, 4, 32" : "4, 3, 32");
}

// ctest runs the tests of this file in parallel processes: one model file per test.
std::string per_test_model_path() {
  return fs::path(::testing::TempDir()) /
         (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".onnx");
}

// `share_buffers` false keeps every copy layer (engine/plan_compose_copies.h reads the 5-D
// Transpose through, into the Gathers, when it is true).
TextModelEngine build_attention(bool qdq, bool parts_first = false, bool share_buffers = true) {
  engine::BuildOptions options;
  options.input_shapes["x"] = {kMaxBatch, kTokens, kWidth};
  options.share_buffers = share_buffers;
  return build_text_model(attention_text(qdq, parts_first),
                          {{"w_qkv", {kWidth, kWidth}, 0.05f}, {"w_proj", {128, kWidth}, 0.05f}}, 7,
                          fs::path(::testing::TempDir()) / fmt::format("vit_attention{}{}{}.onnx", qdq ? "_qdq" : "",
                                                                       parts_first ? "_parts_first" : "",
                                                                       share_buffers ? "" : "_unshared"),
                          options);
}

// With shared buffers the head split's Transpose is read through: no layer writes `t`, and the
// Gathers become strided copies of the Reshape's output that bring the batch back to dim 0.
void expect_transpose_read_through(const engine::EnginePlan& plan) {
  EXPECT_EQ(find_plan_tensor(plan, "t"), nullptr);
  for (const char* part : {"q", "k", "v"}) {
    for (const engine::PlanLayer& layer : plan.layers) {
      if (layer.outputs.empty() || layer.outputs[0] < 0 || plan.tensors[static_cast<size_t>(layer.outputs[0])].name != part) {
        continue;
      }
      EXPECT_EQ(layer.kind, "strided_copy") << part;
      EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.inputs[0])].name, "r") << part;
    }
  }
}

// Per image: the runs of 1 and 3 images give the batch-8 run's bytes; that run matches the reference.
void expect_batch_independent(const TextModelEngine& built, double reference_tolerance) {
  batch_testing::expect_batch_independent(built, {{"x", random_tensor({kMaxBatch, kTokens, kWidth}, 3)}}, kMaxBatch,
                                          "y", reference_tolerance);
}

TEST(VitAttention, Fp32TransposeMovesTheBatchAndEveryBatchGivesTheSameImages) {
  TextModelEngine shared = build_attention(false);
  ASSERT_NE(shared.engine, nullptr);
  expect_transpose_read_through(shared.engine->plan());
  expect_batch_independent(shared, 1e-4);
  TextModelEngine built = build_attention(false, false, /*share_buffers=*/false);
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(plan.fixed_batch_reason, "");
  // [3, B, 4, 49, 32]: the batch is dim 1; Gather brings it back to dim 0.
  const engine::PlanTensor* moved = find_plan_tensor(plan, "t");
  ASSERT_NE(moved, nullptr);
  EXPECT_TRUE(moved->batched);
  EXPECT_EQ(moved->batch_axis, 1);
  const engine::PlanTensor* gathered = find_plan_tensor(plan, "q");
  ASSERT_NE(gathered, nullptr);
  EXPECT_TRUE(engine::batch_leads(*gathered) && gathered->batched);
  expect_batch_independent(built, 1e-4);
}

TEST(VitAttention, QdqInt8TransposeMovesTheBatchAndEveryBatchGivesTheSameImages) {
  TextModelEngine shared = build_attention(true);
  ASSERT_NE(shared.engine, nullptr);
  expect_transpose_read_through(shared.engine->plan());
  expect_batch_independent(shared, 3e-2);
  TextModelEngine built = build_attention(true, false, /*share_buffers=*/false);
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(plan.fixed_batch_reason, "");
  // The 5-D transpose runs on int8 with the batch moving to dim 1.
  bool int8_transpose_moves_batch = false;
  int batched_matmuls = 0, softmax_quantize = 0;
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind == "qbatched_matmul") ++batched_matmuls;
    if (layer.kind == "softmax_quantize") ++softmax_quantize;  // Softmax -> Q: one layer writing int8 P
    if (layer.kind != "int8_transpose") continue;
    const engine::PlanTensor& output = plan.tensors[static_cast<size_t>(layer.outputs[0])];
    int8_transpose_moves_batch = int8_transpose_moves_batch || (output.batched && output.batch_axis == 1);
  }
  EXPECT_TRUE(int8_transpose_moves_batch);
  EXPECT_EQ(batched_matmuls, 2);
  EXPECT_EQ(softmax_quantize, 1);
  expect_batch_independent(built, 3e-2);

  // The engine file keeps where the batch is.
  const std::string engine_path = built.path + ".qdqrt";
  ASSERT_TRUE(built.engine->save(engine_path).is_ok());
  auto loaded = engine::Engine::load(engine_path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  TensorMap inputs = {{"x", random_tensor({kMaxBatch, kTokens, kWidth}, 4)}};
  auto original = run_per_image(*built.engine, inputs, kMaxBatch, 3);
  auto reloaded = run_per_image(**loaded, inputs, kMaxBatch, 3);
  ASSERT_TRUE(original.ok() && reloaded.ok());
  for (size_t image = 0; image < static_cast<size_t>(kMaxBatch); ++image) {
    EXPECT_TRUE(bit_equal(original->slices.at("y")[image], reloaded->slices.at("y")[image])) << image;
  }
  fs::remove(engine_path);
}

// timm's and Swin's layout: slice_gathered_parts (and, on a float projection, split_sliced_projection)
// leave a Slice or a projection and one 4-D Transpose per part (no 5-D Transpose, no Gather); every
// batch gives the same images.
TEST(VitAttention, HeadSplitRunsAsOneProjectionPerPart) {
  for (bool qdq : {false, true}) {
    SCOPED_TRACE(qdq ? "QDQ" : "FP32");
    TextModelEngine built = build_attention(qdq, /*parts_first=*/true);
    ASSERT_NE(built.engine, nullptr);
    const engine::EnginePlan& plan = built.engine->plan();
    EXPECT_EQ(plan.fixed_batch_reason, "");
    EXPECT_EQ(find_plan_tensor(plan, "t"), nullptr) << "the packed 5-D transpose is gone";
    int projections = 0;
    for (const engine::PlanLayer& layer : plan.layers) {
      EXPECT_NE(layer.op_type, "Gather") << layer.name;
      EXPECT_NE(layer.kind, "reference") << layer.name;
      if (layer.kind == "fp32_gemm" || layer.kind == "qmatmul") ++projections;
    }
    // FP32: q, k, v and the output projection. QDQ: the packed projection writes int8 codes (its
    // output is quantized), which the parts slice: it stays one layer.
    EXPECT_EQ(projections, qdq ? 2 : 4);
    expect_batch_independent(built, qdq ? 3e-2 : 1e-4);
  }
}

// Builds `text` (input x of shape `shape` at the max batch) and expects batch `max_batch` to run
// and batch 1 to be refused with a message naming `culprit`.
void expect_refusal(const std::string& text, const Shape& shape, const std::string& culprit) {
  const std::string path = per_test_model_path();
  ASSERT_TRUE(write_text_model(text, {}, 1, path).is_ok());
  engine::BuildOptions options;
  options.input_shapes["x"] = shape;
  auto built = engine::Engine::build_from_file(path, options);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::Engine& engine = **built;
  EXPECT_NE(engine.plan().fixed_batch_reason.find(culprit), std::string::npos) << engine.plan().fixed_batch_reason;
  auto context = engine.create_context({.threads = 1});
  TensorMap inputs = {{"x", random_tensor(shape, 5)}};
  EXPECT_TRUE(run_images(engine, *context, inputs, 0, shape[0]).ok());
  auto refused = run_images(engine, *context, inputs, 0, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(fmt::format("runs only at batch {}", shape[0])), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find(culprit), std::string::npos) << refused.status().message();
}

// Expand to a constant [3, 4]: at batch 1 the output stays [3, 4] (it does not follow the batch),
// and at batch 2 the model is invalid: the batch dim N broadcast against 3 has no expression.
TEST(BatchRefusal, ValueThatDoesNotFollowTheBatch) {
  expect_refusal(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4] x) => (float[3,4] y)
<int64[2] shape = {3, 4}>
{
  y = Expand(x, shape)
}
)",
                 {3, 4}, "the batch dim of 'y' [3, 4] cannot be tracked");
}

// A Reshape whose constant target has the batch in it: ONNX's shape inference accepts it at batch 5
// (it does not count elements), the element counts do not.
TEST(BatchRefusal, ReshapeToAConstantShapeWithTheBatch) {
  expect_refusal(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,8] x) => (float[4,16] y)
<int64[2] shape = {4, 16}>
{
  y = Reshape(x, shape)
}
)",
                 {4, 2, 8}, "cannot make [5, 2, 8] into [4, 16]");
}

// What a Reshape to a target holding the maximum batch writes is labelled batched on dim 0 without
// the tracker; a value computed from it has dims that do not change with the batch, which the
// tracker would call unbatched: it is labelled alike, so the quantized Concat reading both the
// reshaped rows and a batched input binds (MViT-V2's residual pooling, once its ScatterND is a
// Concat), runs at the maximum batch and refuses the others.
TEST(BatchRefusal, ValuesComputedFromAReshapeToTheMaximumBatchAreLabelledAlike) {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,3] x, float[N,4] v) => (float[2,10] y)
<int64[2] target = {2, 6}, float s = {0.05}, int8 z = {0}>
{
  r = Reshape(x, target)
  c = Concat<axis = 1>(r, v)
  q = QuantizeLinear(c, s, z)
  y = DequantizeLinear(q, s, z)
}
)";
  const std::string path = per_test_model_path();
  ASSERT_TRUE(write_text_model(text, {}, 1, path).is_ok());
  engine::BuildOptions options;
  options.input_shapes = {{"x", {2, 2, 3}}, {"v", {2, 4}}};
  auto built = engine::Engine::build_from_file(path, options);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  EXPECT_NE((*built)->plan().fixed_batch_reason.find("cannot make [3, 2, 3] into [2, 6]"), std::string::npos)
      << (*built)->plan().fixed_batch_reason;
  TensorMap inputs = {{"x", random_tensor({2, 2, 3}, 5)}, {"v", random_tensor({2, 4}, 6)}};
  auto context = (*built)->create_context({.threads = 1});
  auto outputs = run_images(**built, *context, inputs, 0, 2);
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  auto graph = load_onnx_file(path);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto expected = run_reference(*graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  EXPECT_TRUE(bit_equal(outputs->at("y"), expected->at("y")));
  EXPECT_FALSE(run_images(**built, *context, inputs, 0, 1).ok());
}

// A shape computed from the batch (folded into a constant [4, 4] at build time) read by a layer
// that needs its value: right only at the maximum batch.
// (Expand of such a shape runs at any batch: ClassTokenExpandRunsAtEveryBatch.)
TEST(BatchRefusal, LayerReadsAConstantComputedForTheMaximumBatch) {
  expect_refusal(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4] x) => (float[N,4] y)
{
  s = Shape(x)
  ones = ConstantOfShape<value = float[1] {1.0}>(s)
  y = Add(x, ones)
}
)",
                 {4, 4}, "a constant computed for batch 4");
}

// A ViT's class token as torch exports it (tests/common/vit_class_token_graph.h). The target
// shapes are evaluated at build (evaluate_shape_computations), the Expand and Gather run as strided
// copies at any batch, also in an engine built for maximum batch 1 (where the output's batch dim
// and the token's leading dim are both 1, yet only the first follows the batch).
void expect_class_token_expand_at_every_batch(int64_t max_batch) {
  const std::string path = per_test_model_path();
  ASSERT_TRUE(write_text_model(qdqrt::testing::vit_class_token_text("N"), {}, 1, path).is_ok());
  engine::BuildOptions options;
  options.input_shapes["x"] = {max_batch, 3, 4};
  auto built = engine::Engine::build_from_file(path, options);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::Engine& engine = **built;
  EXPECT_EQ(engine.plan().fixed_batch_reason, "");
  for (const engine::PlanLayer& layer : engine.plan().layers) {
    EXPECT_NE(layer.kind, "reference") << layer.name << " at maximum batch " << max_batch;
    if (layer.op_type == "Expand") {
      EXPECT_EQ(layer.kind, "strided_copy") << "maximum batch " << max_batch;
    }
  }
  TensorMap inputs = {{"x", random_tensor({max_batch, 3, 4}, 9)}};
  auto graph = load_onnx_file(path);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  for (int64_t per_run : {int64_t{1}, int64_t{3}, kMaxBatch}) {
    if (per_run > max_batch) continue;
    auto outputs = run_per_image(engine, inputs, max_batch, per_run);
    ASSERT_TRUE(outputs.ok()) << "batch " << per_run << ": " << outputs.status().to_string();
    for (int64_t image = 0; image < max_batch; ++image) {
      auto expected = run_reference(*graph, {{"x", slice(inputs.at("x"), 0, 1, image, 1)}});
      ASSERT_TRUE(expected.ok()) << expected.status().to_string();
      for (const char* name : {"y", "first"}) {
        EXPECT_TRUE(bit_equal(outputs->slices.at(name)[static_cast<size_t>(image)], expected->at(name)))
            << name << " of image " << image << ", " << per_run << " at a time, maximum batch " << max_batch;
      }
    }
  }
}

TEST(VitClassToken, ClassTokenExpandRunsAtEveryBatch) { expect_class_token_expand_at_every_batch(kMaxBatch); }

TEST(VitClassToken, ClassTokenExpandRunsAtMaximumBatchOne) { expect_class_token_expand_at_every_batch(1); }

// The shipped ViT (models/fmnist_vit_qdq.onnx) in INT8 and all-float: no layer falls back to the
// reference executor, whatever the maximum batch (its class-token Expand did at maximum batch 1).
TEST(VitClassToken, ShippedVitHasNoReferenceLayerAtAnyMaximumBatch) {
  const std::string path = std::string(QDQRT_MODELS_DIR) + "/fmnist_vit_qdq.onnx";
  for (engine::Precision precision : {engine::Precision::kInt8, engine::Precision::kFp32}) {
    for (int64_t max_batch : {int64_t{1}, int64_t{2}, kMaxBatch}) {
      engine::BuildOptions options;
      options.precision = precision;
      options.input_shapes["input"] = {max_batch, 1, 28, 28};
      auto built = engine::Engine::build_from_file(path, options);
      ASSERT_TRUE(built.ok()) << built.status().to_string();
      EXPECT_EQ((*built)->plan().fixed_batch_reason, "") << "maximum batch " << max_batch;
      for (const engine::PlanLayer& layer : (*built)->plan().layers) {
        // FP32 MatMul of two activations and Erf are left out of this check.
        const bool awaiting_fp32_layer =
            precision == engine::Precision::kFp32 && (layer.op_type == "MatMul" || layer.op_type == "Erf");
        if (awaiting_fp32_layer) continue;
        EXPECT_NE(layer.kind, "reference") << layer.name << " at maximum batch " << max_batch
                                           << (precision == engine::Precision::kFp32 ? " (fp32)" : " (int8)");
      }
    }
  }
}

// A value whose shape is not a multiple of the batch (Concat of the batch with one more row).
TEST(BatchRefusal, DimThatIsNotAMultipleOfTheBatch) {
  expect_refusal(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4] x) => (float[M,4] y)
<float[1,4] row = {1.0, 2.0, 3.0, 4.0}>
{
  y = Concat<axis = 0>(x, row)
}
)",
                 {4, 4}, "is not a multiple of the batch");
}

// A reference-layer kernel that fails at run time (an index out of range) is an error naming the
// layer, not NaN outputs.
TEST(BatchRefusal, FailingReferenceKernelIsAnError) {
  const std::string path = fs::path(::testing::TempDir()) / "gather_failure.onnx";
  // GatherElements has no native lowering: the reference layer runs it.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4] x, int64[N,2] index) => (float[N,2] y)
{
  y = GatherElements<axis = 1>(x, index)
}
)";
  ASSERT_TRUE(write_text_model(text, {}, 1, path).is_ok());
  engine::BuildOptions options;
  options.input_shapes["x"] = {2, 4};
  options.input_shapes["index"] = {2, 2};
  auto built = engine::Engine::build_from_file(path, options);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  Tensor x = random_tensor({2, 4}, 1);
  Tensor index(DataType::kInt64, {2, 2});
  for (int64_t i = 0; i < 4; ++i) index.data<int64_t>()[i] = i == 3 ? 9 : i % 4;
  TensorMap inputs = {{"x", x}, {"index", index}};
  auto context = (*built)->create_context({.threads = 1});
  auto outputs = run_images(**built, *context, inputs, 0, 2);
  ASSERT_FALSE(outputs.ok());
  EXPECT_NE(outputs.status().message().find("layer 'GatherElements"), std::string::npos) << outputs.status().message();
  index.data<int64_t>()[3] = 1;
  inputs["index"] = index;
  EXPECT_TRUE(run_images(**built, *context, inputs, 0, 2).ok());
}

}  // namespace
}  // namespace qdqrt::batch_testing
