// nn.MultiheadAttention as torch.onnx exports it (batch_first): the block runs [L, N, E] with the
// batch on dim 1, its heads as [N * heads, L, d] (the batch on dim 0, `heads` slices per image)
// and the output projection as a Gemm on [L * N, E]. The float layers that count their rows or
// matrices at run time (fp32_gemm, fp32_matmul, fp32_binary, fp32_softmax) take these tensors:
// no reference layer, and built for batch 8 and run 1, 3 and 8 images at a time every image's
// output is bit-identical and matches the reference executor. Layers that cannot split per image
// (a Softmax over the batch's axis, a constant varying along a dim before the batch) still go to
// the reference layer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "tests/engine_batch/batch_helpers.h"

namespace qdqrt::batch_testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxBatch = 8;
constexpr int64_t kTokens = 10;
constexpr int64_t kWidth = 32;  // 4 heads of 8

// One projection of the in-projection: MatMul by the transposed weight, then the bias Add, on
// [L, N, E]; reshaped to the heads [L, N * 4, 8] and transposed to [N * 4, L, 8].
std::string projection(const std::string& name) {
  return fmt::format("  {0}_mm = MatMul(t, w{0})\n  {0}_b = Add({0}_mm, b{0})\n  {0}_r = Reshape({0}_b, heads_shape)\n"
                     "  {0}_h = Transpose<perm = [1, 0, 2]>({0}_r)\n",
                     name);
}

std::string attention_text() {
  std::string body;
  body += "  t = Transpose<perm = [1, 0, 2]>(x)\n";
  body += "  s = Shape(t)\n  l = Gather<axis = 0>(s, zero)\n  n = Gather<axis = 0>(s, one)\n";
  body += "  nh = Mul(n, heads)\n  heads_shape = Concat<axis = 0>(l, nh, depth)\n";
  body += projection("q") + projection("k") + projection("v");
  body += "  q_scaled = Div(q_h, scale)\n  k_t = Transpose<perm = [0, 2, 1]>(k_h)\n";
  body += "  scores = MatMul(q_scaled, k_t)\n  p = Softmax<axis = -1>(scores)\n  o = MatMul(p, v_h)\n";
  body += "  o_t = Transpose<perm = [1, 0, 2]>(o)\n  ln = Mul(l, n)\n  rows_shape = Concat<axis = 0>(ln, width)\n";
  body += "  rows = Reshape(o_t, rows_shape)\n  proj = Gemm<transB = 1>(rows, wo, bo)\n";
  body += "  back_shape = Concat<axis = 0>(l, n, width)\n  back = Reshape(proj, back_shape)\n";
  body += "  y = Transpose<perm = [1, 0, 2]>(back)\n";
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
mha (float[N,{0},{1}] x) => (float[N,{0},{1}] y)
<int64[1] zero = {{0}}, int64[1] one = {{1}}, int64 heads = {{4}}, int64[1] depth = {{8}}, int64[1] width = {{{1}}},
 float scale = {{2.828427}}>
{{
{2}}}
)",
                     kTokens, kWidth, body);
}

// Between Q/DQ, as a quantizer that takes MatMul (ONNX Runtime's) leaves nn.MultiheadAttention:
// the packed in-projection's input quantized per tensor, its int8 weight [E, 3E] per column, the
// bias Add and the q/k/v Slices after it, and Q/DQ around the attention's MatMuls.
// split_sliced_projection gives one INT8 QMatMul per Slice, each with the batch on dim 1 of its
// [L, N, E]; the attention's MatMuls are INT8 batched matmuls with 4 heads per image on dim 0.
std::string quantized_attention_text() {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> codes(-127, 127);
  std::uniform_real_distribution<float> unit(0.5f, 1.5f);
  std::string weight, scales, zeros, bias;
  for (int64_t i = 0; i < kWidth * 3 * kWidth; ++i) weight += fmt::format("{}{}", i ? ", " : "", codes(rng));
  for (int64_t j = 0; j < 3 * kWidth; ++j) {
    scales += fmt::format("{}{}", j ? ", " : "", 0.002f * unit(rng));
    zeros += fmt::format("{}0", j ? ", " : "");
    bias += fmt::format("{}{}", j ? ", " : "", 0.1f * (unit(rng) - 1.0f));
  }
  std::string body;
  body += "  t = Transpose<perm = [1, 0, 2]>(x)\n  t_q = QuantizeLinear(t, xs, xz)\n  t_d = DequantizeLinear(t_q, xs, xz)\n";
  body += "  w_d = DequantizeLinear<axis = 1>(w, ws, wz)\n  mm = MatMul(t_d, w_d)\n  packed = Add(b, mm)\n";
  body += "  q_b = Slice(packed, zero, e1, last)\n  k_b = Slice(packed, e1, e2, last)\n  v_b = Slice(packed, e2, e3, last)\n";
  body += "  s = Shape(t)\n  l = Gather<axis = 0>(s, zero)\n  n = Gather<axis = 0>(s, one)\n";
  body += "  nh = Mul(n, heads)\n  heads_shape = Concat<axis = 0>(l, nh, depth)\n";
  for (const char* name : {"q", "k", "v"}) {
    body += fmt::format("  {0}_r = Reshape({0}_b, heads_shape)\n  {0}_h = Transpose<perm = [1, 0, 2]>({0}_r)\n", name);
  }
  // The attention's MatMuls between Q/DQ too: INT8 batched matmuls on [N * 4, L, 8].
  auto quantized = [](const std::string& value, const std::string& scale) {
    return fmt::format("  {0}_q = QuantizeLinear({0}, {1}, xz)\n  {0}_d = DequantizeLinear({0}_q, {1}, xz)\n", value,
                       scale);
  };
  body += "  q_scaled = Div(q_h, scale)\n  k_t = Transpose<perm = [0, 2, 1]>(k_h)\n";
  body += quantized("q_scaled", "hs") + quantized("k_t", "hs") + quantized("v_h", "hs");
  body += "  scores = MatMul(q_scaled_d, k_t_d)\n  p = Softmax<axis = -1>(scores)\n";
  body += quantized("p", "ps") + "  o = MatMul(p_d, v_h_d)\n";
  body += "  o_t = Transpose<perm = [1, 0, 2]>(o)\n  back_shape = Concat<axis = 0>(l, n, width)\n";
  body += "  back = Reshape(o_t, back_shape)\n  y = Transpose<perm = [1, 0, 2]>(back)\n";
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
quantized_mha (float[N,{0},{1}] x) => (float[N,{0},{1}] y)
<int64[1] zero = {{0}}, int64[1] one = {{1}}, int64 heads = {{4}}, int64[1] depth = {{8}}, int64[1] width = {{{1}}},
 int64[1] e1 = {{{1}}}, int64[1] e2 = {{{2}}}, int64[1] e3 = {{{3}}}, int64[1] last = {{-1}}, float scale = {{2.828427}},
 float xs = {{0.02}}, float hs = {{0.03}}, float ps = {{0.007874}}, int8 xz = {{0}}, int8[{1},{3}] w = {{{4}}}, float[{3}] ws = {{{5}}}, int8[{3}] wz = {{{6}}},
 float[{3}] b = {{{7}}}>
{{
{8}}}
)",
                     kTokens, kWidth, 2 * kWidth, 3 * kWidth, weight, scales, zeros, bias, body);
}

// Must not fire: a Softmax over the batch's axis of [L, N, E], and an Add of a constant that
// varies along L (before the batch): neither splits per image.
std::string refused_text() {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
refused (float[N,{0},{1}] x) => (float[N,{0},{1}] y)
{{
  t = Transpose<perm = [1, 0, 2]>(x)
  over_batch = Softmax<axis = 1>(t)
  along_l = Add(over_batch, c)
  y = Transpose<perm = [1, 0, 2]>(along_l)
}}
)",
                     kTokens, kWidth);
}

// ONNX Runtime's quantize_static layout (u8 activations) of the packed in-projection: the MatMul's
// output quantized on its own, then the bias Add between Q/DQ with the bias a u8 constant, on the
// sequence-first [L, N, 3E] (the batch on dim 1). The optimizer makes a QMatMul and a QAdd whose
// operand B is the constant. `bias_shape` is [3E], or [L, 1, 3E] for a bias that differs along L
// (before the batch: it cannot run per image).
std::string ort_bias_add_text(const std::string& bias_shape, int64_t bias_count) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> codes(-127, 127), bytes(0, 255);
  std::string weight, bias;
  for (int64_t i = 0; i < kWidth * 3 * kWidth; ++i) weight += fmt::format("{}{}", i ? ", " : "", codes(rng));
  for (int64_t j = 0; j < bias_count; ++j) bias += fmt::format("{}{}", j ? ", " : "", bytes(rng));
  std::string body;
  body += "  t = Transpose<perm = [1, 0, 2]>(x)\n  t_q = QuantizeLinear(t, xs, xz)\n  t_d = DequantizeLinear(t_q, xs, xz)\n";
  body += "  w_d = DequantizeLinear(w, ws, wz)\n  mm = MatMul(t_d, w_d)\n";
  body += "  mm_q = QuantizeLinear(mm, ms, mz)\n  mm_d = DequantizeLinear(mm_q, ms, mz)\n";
  body += "  b_d = DequantizeLinear(b, bs, bz)\n  packed = Add(mm_d, b_d)\n";
  body += "  packed_q = QuantizeLinear(packed, ps, pz)\n  packed_d = DequantizeLinear(packed_q, ps, pz)\n";
  body += "  y = Transpose<perm = [1, 0, 2]>(packed_d)\n";
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
ort_bias_add (float[N,{0},{1}] x) => (float[N,{0},{2}] y)
<float xs = {{0.008}}, uint8 xz = {{128}}, int8[{1},{2}] w = {{{3}}}, float ws = {{0.004}}, int8 wz = {{0}},
 float ms = {{0.03}}, uint8 mz = {{120}}, uint8{4} b = {{{5}}}, float bs = {{0.004}}, uint8 bz = {{130}},
 float ps = {{0.035}}, uint8 pz = {{125}}>
{{
{6}}}
)",
                     kTokens, kWidth, 3 * kWidth, weight, bias_shape, bias, body);
}

TextModelEngine build(const std::string& text, const std::vector<FloatInitializer>& initializers,
                      const std::string& name) {
  engine::BuildOptions options;
  options.input_shapes["x"] = {kMaxBatch, kTokens, kWidth};
  return build_text_model(text, initializers, 11, fs::path(::testing::TempDir()) / (name + ".onnx"), options);
}

// Per image: runs of 1 and 3 images give the batch-8 run's bits; that run matches the reference
// within `tolerance` (relative to the largest output).
void expect_batch_independent(const TextModelEngine& built, double tolerance = 1e-5) {
  batch_testing::expect_batch_independent(built, {{"x", random_tensor({kMaxBatch, kTokens, kWidth}, 3)}}, kMaxBatch,
                                          "y", tolerance);
}

// A run of `count` images matches the reference executor on the same images (a Softmax over the
// batch's axis mixes the images of one run, so runs of other sizes differ).
void expect_matches_reference(const TextModelEngine& built, int64_t count) {
  const engine::Engine& engine = *built.engine;
  TensorMap inputs = {{"x", random_tensor({count, kTokens, kWidth}, 5)}};
  auto context = engine.create_context({.threads = 2});
  auto outputs = run_images(engine, *context, inputs, 0, count);
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  auto graph = load_onnx_file(built.path);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto expected = run_reference(*graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  EXPECT_LE(relative_error(outputs->at("y"), expected->at("y")), 1e-5) << count << " images";
}

TEST(MultiheadAttention, BatchOffDimZeroRunsOnNativeFloatLayers) {
  const std::vector<FloatInitializer> weights = {
      {"wq", {kWidth, kWidth}, 0.2f}, {"wk", {kWidth, kWidth}, 0.2f}, {"wv", {kWidth, kWidth}, 0.2f},
      {"wo", {kWidth, kWidth}, 0.2f}, {"bq", {kWidth}, 0.1f},         {"bk", {kWidth}, 0.1f},
      {"bv", {kWidth}, 0.1f},         {"bo", {kWidth}, 0.1f}};
  TextModelEngine built = build(attention_text(), weights, "multihead_attention");
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(plan.fixed_batch_reason, "");
  std::map<std::string, int> kinds;
  for (const engine::PlanLayer& layer : plan.layers) ++kinds[layer.kind];
  EXPECT_EQ(kinds["reference"], 0);
  EXPECT_EQ(kinds["fp32_gemm"], 4);    // three in-projections (MatMul by a constant, bias Add fused) and the Gemm
  EXPECT_EQ(kinds["fp32_matmul"], 2);  // Q x K^T and P x V
  EXPECT_EQ(kinds["fp32_softmax"], 1);
  EXPECT_EQ(kinds["fp32_binary"], 1);  // the Div (the bias Adds are in the in-projections' epilogue)
  // Where the batch is: dim 1 of [L, N, E]; dim 0 of the heads, 4 per image; dim 0 of [L * N, E],
  // L rows per image.
  const engine::PlanTensor* projected = find_plan_tensor(plan, "q_b");
  ASSERT_NE(projected, nullptr);
  EXPECT_TRUE(projected->batched);
  EXPECT_EQ(projected->batch_axis, 1);
  const engine::PlanTensor* scores = find_plan_tensor(plan, "scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->batch_axis, 0);
  EXPECT_EQ(scores->batch_factor, 4);
  const engine::PlanTensor* rows = find_plan_tensor(plan, "proj");
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(rows->batch_axis, 0);
  EXPECT_EQ(rows->batch_factor, kTokens);
  expect_batch_independent(built);
}

// Engine files are untrusted: a layer whose tensors put the batch where it cannot split per image
// is refused at load with a message naming the layer.
TEST(MultiheadAttention, DamagedBatchLayoutsAreRefused) {
  const std::vector<FloatInitializer> weights = {
      {"wq", {kWidth, kWidth}, 0.2f}, {"wk", {kWidth, kWidth}, 0.2f}, {"wv", {kWidth, kWidth}, 0.2f},
      {"wo", {kWidth, kWidth}, 0.2f}, {"bq", {kWidth}, 0.1f},         {"bk", {kWidth}, 0.1f},
      {"bv", {kWidth}, 0.1f},         {"bo", {kWidth}, 0.1f}};
  TextModelEngine built = build(attention_text(), weights, "multihead_damaged");
  ASSERT_NE(built.engine, nullptr);
  ASSERT_TRUE(engine::Engine::from_plan(built.engine->plan()).ok());
  // `value` gets the batch on `axis` with `factor` slices per image (dims that still fit the
  // maximum batch, so only the layers can tell): the `kind` layer reading or writing it refuses.
  auto refused = [&](const std::string& value, int32_t axis, int64_t factor, const std::string& kind) {
    engine::EnginePlan plan = built.engine->plan();
    const int32_t index = plan.find_tensor(value);
    ASSERT_GE(index, 0) << value;
    engine::PlanTensor& tensor = plan.tensors[static_cast<size_t>(index)];
    tensor.batch_axis = axis;
    tensor.batch_factor = factor;
    std::string refusing;
    for (const engine::PlanLayer& layer : plan.layers) {
      const bool touches = std::find(layer.inputs.begin(), layer.inputs.end(), index) != layer.inputs.end() ||
                           std::find(layer.outputs.begin(), layer.outputs.end(), index) != layer.outputs.end();
      if (touches && layer.kind == kind && refusing.empty()) refusing = layer.name;
    }
    ASSERT_FALSE(refusing.empty()) << "no " << kind << " layer reads or writes " << value;
    auto loaded = engine::Engine::from_plan(std::move(plan));
    ASSERT_FALSE(loaded.ok()) << value << ": batch on dim " << axis << " x" << factor << " accepted";
    EXPECT_NE(loaded.status().message().find(refusing), std::string::npos) << loaded.status().message();
  };
  refused("q_scaled", 2, 8 / kMaxBatch, "fp32_binary");  // its input's batch is on dim 0
  refused("q_b", 2, kWidth / kMaxBatch, "fp32_gemm");     // the batch in the columns
  refused("rows", 1, kWidth / kMaxBatch, "fp32_gemm");    // the batch in K
}

TEST(MultiheadAttention, QuantizedInProjectionSplitsIntoInt8LayersWithTheBatchOffDimZero) {
  TextModelEngine built = build(quantized_attention_text(), {}, "quantized_multihead_attention");
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(plan.fixed_batch_reason, "");
  std::map<std::string, int> kinds;
  int moved_int8 = 0, heads_int8 = 0;
  for (const engine::PlanLayer& layer : plan.layers) {
    ++kinds[layer.kind];
    const engine::PlanTensor& output = plan.tensors[static_cast<size_t>(layer.outputs[0])];
    if (layer.kind == "qmatmul") moved_int8 += output.batched && output.batch_axis == 1;
    if (layer.kind == "qbatched_matmul") heads_int8 += output.batched && output.batch_factor == 4;
  }
  EXPECT_EQ(kinds["reference"], 0);
  EXPECT_EQ(kinds["qmatmul"], 3);  // q, k and v, each with its bias
  EXPECT_EQ(moved_int8, 3);
  EXPECT_EQ(kinds["qbatched_matmul"], 2);  // Q x K^T and P x V, 4 heads per image
  EXPECT_EQ(heads_int8, 2);
  // Measured 1.1e-7 of the largest output against the reference executor.
  expect_batch_independent(built);
  // Damaged: the batch in a projection's columns.
  engine::EnginePlan damaged = plan;
  const int32_t index = damaged.find_tensor("q_b");
  ASSERT_GE(index, 0);
  damaged.tensors[static_cast<size_t>(index)].batch_axis = 2;
  damaged.tensors[static_cast<size_t>(index)].batch_factor = kWidth / kMaxBatch;
  auto loaded = engine::Engine::from_plan(std::move(damaged));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("qmatmul"), std::string::npos) << loaded.status().message();
}

TEST(MultiheadAttention, OrtQuantizedBiasAddRunsAsQAddWithTheBatchOnDimOne) {
  TextModelEngine built = build(ort_bias_add_text(fmt::format("[{}]", 3 * kWidth), 3 * kWidth), {}, "ort_bias_add");
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(plan.fixed_batch_reason, "");
  std::map<std::string, int> kinds;
  int moved_qbinary = 0;
  for (const engine::PlanLayer& layer : plan.layers) {
    ++kinds[layer.kind];
    const engine::PlanTensor& output = plan.tensors[static_cast<size_t>(layer.outputs[0])];
    if (layer.kind == "qbinary") moved_qbinary += output.batched && output.batch_axis == 1 && output.batch_factor == 1;
  }
  EXPECT_EQ(kinds["reference"], 0);
  EXPECT_EQ(kinds["qmatmul"], 1);
  EXPECT_EQ(kinds["qbinary"], 1);
  EXPECT_EQ(moved_qbinary, 1);
  // Every image bit for bit at any batch; against the reference within one output code (0.035 of
  // about 4.4: the QAdd kernel's scale-ratio form may round a code the other way, docs/kernels_support.md).
  expect_batch_independent(built, 0.01);
  // Damaged: the batch moved into the QAdd output's columns, which no longer line up with its
  // input's (still on dim 1).
  engine::EnginePlan damaged = plan;
  int32_t qadd_output = -1;
  std::string qadd_name;
  for (const engine::PlanLayer& layer : damaged.layers) {
    if (layer.kind == "qbinary") qadd_output = layer.outputs[0], qadd_name = layer.name;
  }
  ASSERT_GE(qadd_output, 0);
  damaged.tensors[static_cast<size_t>(qadd_output)].batch_axis = 2;
  damaged.tensors[static_cast<size_t>(qadd_output)].batch_factor = 3 * kWidth / kMaxBatch;
  auto loaded = engine::Engine::from_plan(std::move(damaged));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find(qadd_name), std::string::npos) << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("does not line up"), std::string::npos) << loaded.status().message();
}

// Must not fire: a bias that differs along L (before the batch) is not the same for every image,
// so the QAdd stays on the reference layer, which says why.
TEST(MultiheadAttention, QAddOfAnOperandVaryingBeforeTheBatchStaysReference) {
  TextModelEngine built =
      build(ort_bias_add_text(fmt::format("[{}, 1, {}]", kTokens, 3 * kWidth), kTokens * 3 * kWidth), {},
            "ort_bias_add_along_l");
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  int reference = 0;
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind != "reference") continue;
    ++reference;
    EXPECT_EQ(layer.op_type, "QAdd");
    auto reason = layer.params.get_string("reason");
    ASSERT_TRUE(reason.ok()) << reason.status().to_string();
    EXPECT_NE(reason->find("before the batch"), std::string::npos) << *reason;
  }
  EXPECT_EQ(reference, 1);
  for (int64_t count : {int64_t{kMaxBatch}, int64_t{3}}) expect_matches_reference(built, count);
}

// The start of a decomposed LayerNorm on the sequence-first [L, N, E] (what ONNX Runtime's Q/DQ
// leave of it when the LayerNorm fusion cannot match): ReduceMean over E, kept and dropped, and
// Pow run natively with the batch on dim 1.
TEST(MultiheadAttention, ReduceMeanAndPowTakeTheBatchOnDimOne) {
  const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
partial_norm (float[N,{0},{1}] x) => (float[N,{0},{1}] y, float[N,{0}] v)
<float two = {{2.0}}>
{{
  t = Transpose<perm = [1, 0, 2]>(x)
  mean = ReduceMean<axes = [-1]>(t)
  d = Sub(t, mean)
  d2 = Pow(d, two)
  var = ReduceMean<axes = [2], keepdims = 0>(d2)
  s = Add(d2, mean)
  y = Transpose<perm = [1, 0, 2]>(s)
  v = Transpose<perm = [1, 0]>(var)
}}
)",
                                       kTokens, kWidth);
  TextModelEngine built = build(text, {}, "partial_norm");
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(plan.fixed_batch_reason, "");
  std::map<std::string, int> kinds;
  for (const engine::PlanLayer& layer : plan.layers) ++kinds[layer.kind];
  EXPECT_EQ(kinds["reference"], 0);
  EXPECT_EQ(kinds["fp32_reduce_mean"], 2);
  EXPECT_EQ(kinds["fp32_pow"], 1);
  const engine::PlanTensor* variance = find_plan_tensor(plan, "var");
  ASSERT_NE(variance, nullptr);
  EXPECT_TRUE(variance->batched);
  EXPECT_EQ(variance->batch_axis, 1);
  // The reductions are the reference's double sums, the square exact: the reference's bits.
  expect_batch_independent(built, 0.0);
  batch_testing::expect_batch_independent(built, {{"x", random_tensor({kMaxBatch, kTokens, kWidth}, 3)}}, kMaxBatch,
                                          "v", 0.0);
}

// ONNX Runtime's layout of the attention's query scaling and GELU on the sequence-first [L, N, E]:
// a QMul by one constant and a quantized Erf become tables (qlut), which map each element on its
// own whatever axis holds the batch.
TEST(MultiheadAttention, TablesTakeTheBatchOnDimOne) {
  const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
tables (float[N,{0},{1}] x) => (float[N,{0},{1}] y)
<float xs = {{0.02}}, uint8 xz = {{128}}, uint8 c = {{90}}, float cs = {{0.004}}, uint8 cz = {{0}},
 float ms = {{0.01}}, uint8 mz = {{128}}, float sqrt2 = {{1.4142135}}, float es = {{0.0078431}}, uint8 ez = {{128}}>
{{
  t = Transpose<perm = [1, 0, 2]>(x)
  tq = QuantizeLinear(t, xs, xz)
  td = DequantizeLinear(tq, xs, xz)
  cd = DequantizeLinear(c, cs, cz)
  m = Mul(td, cd)
  mq = QuantizeLinear(m, ms, mz)
  md = DequantizeLinear(mq, ms, mz)
  d = Div(md, sqrt2)
  e = Erf(d)
  eq = QuantizeLinear(e, es, ez)
  ed = DequantizeLinear(eq, es, ez)
  y = Transpose<perm = [1, 0, 2]>(ed)
}}
)",
                                       kTokens, kWidth);
  TextModelEngine built = build(text, {}, "tables");
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(plan.fixed_batch_reason, "");
  std::map<std::string, int> kinds;
  for (const engine::PlanLayer& layer : plan.layers) ++kinds[layer.kind];
  EXPECT_EQ(kinds["reference"], 0);
  EXPECT_EQ(kinds["qlut"], 2);
  // Tables of the source graph's float ops: its bits.
  expect_batch_independent(built, 0.0);
  for (int64_t count : {int64_t{kMaxBatch}, int64_t{3}}) expect_matches_reference(built, count);
}

TEST(MultiheadAttention, LayersThatCannotSplitPerImageStayReference) {
  TextModelEngine built = build(refused_text(), {{"c", {kTokens, 1, kWidth}, 1.0f}}, "multihead_refused");
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  std::map<std::string, std::string> kind_of;
  for (const engine::PlanLayer& layer : plan.layers) {
    for (int32_t output : layer.outputs) kind_of[plan.tensors[static_cast<size_t>(output)].name] = layer.kind;
  }
  EXPECT_EQ(kind_of["over_batch"], "reference");
  EXPECT_EQ(kind_of["along_l"], "reference");
  for (int64_t count : {int64_t{kMaxBatch}, int64_t{3}}) expect_matches_reference(built, count);
}

}  // namespace
}  // namespace qdqrt::batch_testing
