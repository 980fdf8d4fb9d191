// End to end through the engine (engine/builder.cpp, the TBB runtime): every float op case and the
// fp32 Fashion-MNIST model built with Engine::build / build_from_file, run at batch 1 and the
// maximum batch on 1 and 2 threads, against the reference executor on the original graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <tuple>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include <unistd.h>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

constexpr int64_t kMaxBatch = 3;  // the Gelu cases declare their output at batch 3
constexpr double kTolerance = 1e-4;

// Runs `engine` on `inputs` (batch = dim 0) and returns its outputs.
Result<TensorMap> run_engine(const engine::Engine& engine, int threads, const TensorMap& inputs) {
  auto context = engine.create_context({.threads = threads});
  std::vector<engine::ConstTensorBinding> bindings;
  int64_t batch = 1;
  for (const auto& [name, tensor] : inputs) {
    bindings.push_back({name, tensor.raw_data(), tensor.shape()});
    if (tensor.rank() > 0) batch = tensor.dim(0);
  }
  TensorMap outputs;
  std::vector<engine::TensorBinding> output_bindings;
  for (const engine::IoTensorInfo& info : engine.outputs()) {
    Shape shape = info.shape;
    if (info.batched) shape[0] = batch;
    outputs[info.name] = Tensor(info.dtype, shape);
  }
  for (auto& [name, tensor] : outputs) output_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  QDQRT_RETURN_IF_ERROR(context->run(bindings, output_bindings));
  return outputs;
}

void expect_engine_matches(const engine::Engine& engine, const Graph& graph, const std::string& what) {
  for (int threads : {1, 2}) {
    for (int64_t batch : {int64_t{1}, engine.max_batch()}) {
      TensorMap inputs = random_inputs(graph, batch, 17);
      auto expected = run_reference(graph, inputs);
      ASSERT_TRUE(expected.ok()) << expected.status().to_string();
      auto actual = run_engine(engine, threads, inputs);
      ASSERT_TRUE(actual.ok()) << what << ": " << actual.status().to_string();
      for (const auto& [name, tensor] : *expected) {
        ASSERT_TRUE(actual->count(name)) << name;
        EXPECT_LE(relative_error(actual->at(name), tensor), kTolerance)
            << what << " " << name << " batch " << batch << " threads " << threads;
      }
    }
  }
}

// Builds `text` (batch 3), expects `count` layers of `kind` and no reference layer, and the
// engine to match the reference executor before and after an engine-file round trip.
void expect_fused_layers(const std::string& text, const std::string& kind, int count, const std::string& file,
                         const std::string& name) {
  auto graph = load_text_graph(text, 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  int layers = 0;
  for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
    EXPECT_NE(layer.kind, "reference") << layer.name;
    layers += layer.kind == kind;
  }
  EXPECT_EQ(layers, count);
  expect_engine_matches(**engine, *graph, name);
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  Status saved = (*engine)->save(path);
  if (saved.code() == StatusCode::kUnsupported) return;
  ASSERT_TRUE(saved.is_ok()) << saved.to_string();
  auto loaded = engine::Engine::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_engine_matches(**loaded, *graph, name + " loaded");
}

void expect_case(const OpCase& op_case) {
  SCOPED_TRACE(op_case.name);
  auto graph = load_text_graph(op_case.text, kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  bool found = false;
  for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
    found = found || layer.kind == op_case.kind;
    if (layer.kind == "reference") {
      EXPECT_EQ(layer.kernel, "reference");
    }
    if (op_case.kind != "reference") {
      EXPECT_NE(layer.kind, "reference") << layer.name;
    }
  }
  EXPECT_TRUE(found) << "no " << op_case.kind << " layer";
  expect_engine_matches(**engine, *graph, op_case.name);
}

// One test per case list (not one ctest process per case: process start-up dominates).
TEST(EngineFloatOps, Conv) {
  for (const OpCase& op_case : conv_cases()) expect_case(op_case);
}
TEST(EngineFloatOps, Ops) {
  for (const OpCase& op_case : other_cases()) expect_case(op_case);
}
TEST(EngineFloatOps, ConstantBMatMul) {
  for (const OpCase& op_case : constant_b_matmul_cases()) expect_case(op_case);
}
TEST(EngineFloatOps, Fallback) {
  for (const OpCase& op_case : fallback_cases()) expect_case(op_case);
}

TEST(EngineFloatModels, FmnistResnetFp32) {
  const std::string path = std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx";
  engine::BuildOptions options;
  options.input_shapes["input"] = {kMaxBatch, 1, 28, 28};
  auto engine = engine::Engine::build_from_file(path, options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->max_batch(), kMaxBatch);
  for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
    EXPECT_NE(layer.kind, "reference") << layer.name;
    EXPECT_FALSE(layer.kernel.empty()) << layer.name;
  }
  LoadOptions load_options;
  load_options.input_shapes = options.input_shapes;
  auto graph = load_onnx_file(path, load_options);
  ASSERT_TRUE(graph.ok());
  expect_engine_matches(**engine, *graph, "fmnist_resnet_fp32");
}

// The other shipped fp32 models, same checks. ViT: its MatMuls (also the attention's two-activation
// ones) and Erf run native too.
TEST(EngineFloatModels, FmnistEfficientnetAndVitFp32) {
  for (const char* model : {"fmnist_efficientnet_fp32", "fmnist_vit_fp32"}) {
    SCOPED_TRACE(model);
    const std::string path = std::string(QDQRT_MODELS_DIR) + "/" + model + ".onnx";
    engine::BuildOptions options;
    options.input_shapes["input"] = {kMaxBatch, 1, 28, 28};
    auto engine = engine::Engine::build_from_file(path, options);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
      EXPECT_NE(layer.kind, "reference") << layer.name;
    }
    LoadOptions load_options;
    load_options.input_shapes = options.input_shapes;
    auto graph = load_onnx_file(path, load_options);
    ASSERT_TRUE(graph.ok());
    expect_engine_matches(**engine, *graph, model);
  }
}

// NHWC convs absorb the residual Add and the Relu/Clip that only they feed (the epilogue runs them):
// ResNet's bottleneck (the Add's second operand written before the conv that absorbs it, also when
// the shortcut conv comes last), MobileNet's Clip(0, 6), and forms that must stay separate.
TEST(EngineFloatModels, ConvEpiloguesAreFused) {
  struct FusionCase {
    std::string name, body;
    std::vector<std::string> inits;
    int convs;            // fp32_conv layers expected
    int separate_layers;  // fp32_unary + fp32_binary layers left
  };
  const std::vector<std::string> bottleneck_weights = {weights("w1", {8, 8, 1, 1}), weights("w2", {8, 8, 3, 3}),
                                                       weights("w3", {8, 8, 1, 1}), weights("b", {8})};
  const std::vector<FusionCase> cases = {
      {"conv_relu", "c = Conv(x, w1, b)\ny = Relu(c)", bottleneck_weights, 1, 0},
      {"conv_clip6", "c = Conv<pads=[1,1,1,1]>(x, w2, b)\ny = Clip(c, lo, hi)",
       {weights("w2", {8, 8, 3, 3}), weights("b", {8}), "float lo = {0.0}", "float hi = {6.0}"}, 1, 0},
      {"bottleneck_identity",
       "a = Conv(x, w1, b)\nar = Relu(a)\nc = Conv<pads=[1,1,1,1]>(ar, w2, b)\ncr = Relu(c)\nd = Conv(cr, w3)\n"
       "s = Add(d, x)\ny = Relu(s)",
       bottleneck_weights, 3, 0},
      {"bottleneck_shortcut_conv_last",
       "a = Conv(x, w1, b)\nar = Relu(a)\nd = Conv(ar, w3)\nsc = Conv(x, w1)\ns = Add(d, sc)\ny = Relu(s)",
       bottleneck_weights, 3, 0},
      {"relu_before_add_stays", "a = Conv(x, w1, b)\nar = Relu(a)\ny = Add(ar, x)", bottleneck_weights, 1, 1},
      {"two_readers_stay", "a = Conv(x, w1, b)\nr = Relu(a)\ny = Add(r, a)", bottleneck_weights, 1, 2},
      {"conv_output_is_graph_output", "y = Conv(x, w1, b)\nr = Relu(y)", bottleneck_weights, 1, 1},
      // A group conv on the igemm (blocks of groups) absorbs its Relu; one whose groups of 2 output
      // channels do not fill the igemm's panels runs an NCHW kernel, which has no epilogue: the
      // optimizer leaves its Relu.
      {"group_conv_relu", "c = Conv<group=2>(x, wg, b)\ny = Relu(c)", {weights("wg", {8, 4, 1, 1}), weights("b", {8})},
       1, 0},
      {"narrow_group_conv_relu_stays", "c = Conv<group=4>(x, wg, b)\ny = Relu(c)",
       {weights("wg", {8, 2, 1, 1}), weights("b", {8})}, 1, 1},
  };
  for (const FusionCase& fusion : cases) {
    SCOPED_TRACE(fusion.name);
    const std::string outputs = fusion.name == "conv_output_is_graph_output" ? "float y, float r" : "float y";
    auto graph = load_text_graph(model(13, "g (float[N,8,7,6] x) => (" + outputs + ")", fusion.inits, fusion.body), 3);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto engine = engine::Engine::build(*graph, {});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    int convs = 0, separate = 0;
    for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
      convs += layer.kind == "fp32_conv";
      separate += layer.kind == "fp32_unary" || layer.kind == "fp32_binary";
    }
    EXPECT_EQ(convs, fusion.convs);
    EXPECT_EQ(separate, fusion.separate_layers);
    expect_engine_matches(**engine, *graph, fusion.name);
  }
}

// A FusedConv node (as the optimizer writes it, or by hand) lowers to the NHWC conv layer with
// its epilogue, named after its nodes (a group conv too); one whose conv the NHWC kernels do not
// take (groups of 2 output channels) runs on the reference kernel. All match the reference executor.
TEST(EngineFloatModels, FusedConvLowersToTheConvEpilogue) {
  const std::string residual_clip =
      "y = qdqrt.FusedConv<pads=[1,1,1,1], activation=\"Clip\", activation_min=-0.5, activation_max=0.75, "
      "fused_nodes=[\"conv\", \"add\", \"clip\"]>(x, w, b, x)";
  const std::string group_silu = "y = qdqrt.FusedConv<group=2, function=\"SiLU\", fused_nodes=[\"gconv\"]>(x, wg, b)";
  const std::string narrow_group_silu =
      "y = qdqrt.FusedConv<group=4, function=\"SiLU\", fused_nodes=[\"gconv\"]>(x, wn, b)";
  for (const auto& [body, kind, name] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {residual_clip, "fp32_conv", "conv + add + clip"},
           {group_silu, "fp32_conv", "gconv"},
           {narrow_group_silu, "reference", ""}}) {
    SCOPED_TRACE(body);
    std::string text = model(13, "g (float[N,8,7,6] x) => (float[3,8,7,6] y)",
                             {weights("w", {8, 8, 3, 3}), weights("wg", {8, 4, 1, 1}), weights("wn", {8, 2, 1, 1}),
                              weights("b", {8})},
                             body);
    const std::string opsets = "[\"\" : 13]";
    text.replace(text.find(opsets), opsets.size(), "[\"\" : 13, \"qdqrt\" : 1]");
    auto graph = load_text_graph(text, 3);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto engine = engine::Engine::build(*graph, {});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    std::vector<std::string> kinds;
    for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
      if (layer.kind != "reorder") kinds.push_back(name.empty() ? layer.kind : layer.kind + " " + layer.name);
    }
    EXPECT_EQ(kinds, std::vector<std::string>{name.empty() ? kind : kind + " " + name});
    expect_engine_matches(**engine, *graph, kind);
  }
}

// Float CNN blocks stay channels-last from the first conv to the last: the stem's MaxPool, the
// squeeze-excite gate (GlobalAveragePool, two 1x1 convs, Mul by the [N, C, 1, 1] gate), SiLU as
// x * Sigmoid(x) absorbed by its conv. One reorder in (the NCHW input), one out.
TEST(EngineFloatModels, CnnBlocksStayChannelsLast) {
  const std::vector<std::string> inits = {weights("stem", {16, 3, 3, 3}), weights("b16", {16}),
                                          weights("squeeze", {4, 16, 1, 1}), weights("b4", {4}),
                                          weights("excite", {16, 4, 1, 1}), weights("dw", {16, 1, 3, 3}),
                                          weights("project", {8, 16, 1, 1})};
  const std::string body =
      "s = Conv<pads=[1,1,1,1]>(x, stem, b16)\nsr = Relu(s)\np = MaxPool<kernel_shape=[3,3], strides=[2,2], "
      "pads=[1,1,1,1]>(sr)\nd = Conv<pads=[1,1,1,1], group=16>(p, dw, b16)\nds = Sigmoid(d)\ndsilu = Mul(d, ds)\n"
      "g = GlobalAveragePool(dsilu)\nq = Conv(g, squeeze, b4)\nqs = Sigmoid(q)\nqsilu = Mul(q, qs)\n"
      "e = Conv(qsilu, excite, b16)\ngate = Sigmoid(e)\ngated = Mul(dsilu, gate)\ny = Conv(gated, project)";
  auto graph = load_text_graph(model(13, "g (float[N,3,15,14] x) => (float y)", inits, body), 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  int reorders = 0, unary = 0;
  for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
    EXPECT_NE(layer.kind, "reference") << layer.name;
    reorders += layer.kind == "reorder";
    unary += layer.kind == "fp32_unary";
  }
  EXPECT_EQ(reorders, 2);
  EXPECT_EQ(unary, 0);  // Relu, both SiLUs and the gate's Sigmoid run in conv epilogues
  expect_engine_matches(**engine, *graph, "cnn blocks");
}

// Inception's, DenseNet's and ResNeXt's blocks stay channels-last: the average pools (pads counted
// and not, a 2x2/2 transition) and the max pool on the NHWC conv outputs, the Concat of channels
// of NHWC branches, DenseNet's BatchNorm + Relu on the Concat, grouped convs on the igemm with
// their Relu (ResNeXt's 32 groups of 4, RegNet's 6 groups of 8: a tail block). One reorder in
// (the NCHW input) and one out; matches the reference executor at batch 1 and 3.
TEST(EngineFloatModels, ConcatPoolAndGroupedBlocksStayChannelsLast) {
  const std::vector<std::string> inits = {
      weights("stem", {48, 3, 3, 3}), weights("b48", {48}),          weights("b1", {16, 48, 1, 1}),
      weights("b16", {16}),           weights("b3", {24, 48, 3, 3}), weights("b24", {24}),
      weights("pw", {8, 48, 1, 1}),   weights("b8", {8}),            weights("s", {112}),
      weights("shift", {112}),        weights("m", {112}),           weights("v", {112}, 0.5f, 2.0f),
      weights("g6", {48, 8, 3, 3}),   weights("g32", {128, 4, 3, 3}), weights("b128", {128}),
      weights("w128", {128, 112, 1, 1}), weights("out", {8, 128, 1, 1})};
  // Concat channels: 16 + 24 + 8 + 8 + 8 + 48 = 112.
  const std::string body =
      "st = Conv<pads=[1,1,1,1]>(x, stem, b48)\nsr = Relu(st)\n"
      "c1 = Conv(sr, b1, b16)\nr1 = Relu(c1)\n"
      "c3 = Conv<pads=[1,1,1,1]>(sr, b3, b24)\nr3 = Relu(c3)\n"
      "ap = AveragePool<kernel_shape=[3,3], pads=[1,1,1,1], count_include_pad=1>(sr)\npc = Conv(ap, pw, b8)\n"
      "ae = AveragePool<kernel_shape=[3,3], pads=[1,1,1,1]>(sr)\nec = Conv(ae, pw, b8)\n"
      "mp = MaxPool<kernel_shape=[3,3], pads=[1,1,1,1]>(sr)\nmc = Conv(mp, pw, b8)\n"
      "gc = Conv<pads=[1,1,1,1], group=6>(sr, g6, b48)\ngr = Relu(gc)\n"
      "cat = Concat<axis=1>(r1, r3, pc, ec, mc, gr)\n"
      "bn = BatchNormalization(cat, s, shift, m, v)\nbr = Relu(bn)\n"
      "w = Conv(br, w128, b128)\nt = AveragePool<kernel_shape=[2,2], strides=[2,2]>(w)\n"
      "x32 = Conv<pads=[1,1,1,1], group=32>(t, g32, b128)\nr32 = Relu(x32)\ny = Conv(r32, out, b8)";
  auto graph = load_text_graph(model(13, "g (float[N,3,10,9] x) => (float y)", inits, body), 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  int reorders = 0, unary = 0, pools = 0, grouped = 0;
  for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
    EXPECT_NE(layer.kind, "reference") << layer.name;
    reorders += layer.kind == "reorder";
    unary += layer.kind == "fp32_unary";
    if (layer.kind == "fp32_pool") {
      ++pools;
      EXPECT_NE(layer.kernel.find("-nhwc-"), std::string::npos) << layer.name << ": " << layer.kernel;
    }
    EXPECT_NE(layer.kind, "plain_concat") << "the Concat joins the BatchNorm after it";
    if (layer.kind == "fp32_fused_batchnorm") {
      EXPECT_NE(layer.kernel.find("nhwc"), std::string::npos) << layer.name << ": " << layer.kernel;
    }
    grouped += layer.kernel.rfind("f32-grouped-igemm", 0) == 0;
  }
  EXPECT_EQ(reorders, 2);
  EXPECT_EQ(unary, 0);  // the Relu after the BatchNorm joins it; the others run in conv epilogues
  EXPECT_EQ(pools, 4);
  EXPECT_EQ(grouped, 2);
  expect_engine_matches(**engine, *graph, "concat, pool and grouped blocks");
}

// DenseNet's Concat -> BatchNorm -> Relu runs as one fp32_fused_batchnorm pass: channels-last on
// conv outputs (channel counts that end in partial vectors: 16 + 5 + 19, so a channel sits in a
// vector loop in one engine and in a tail in the other), plain on the graph's NCHW inputs; each
// output (the Relu's too) equal bit for bit to the three layers it replaces (the pass disabled)
// at batch 1 and 3, 1 and 2 threads, and within the tolerance of the reference executor.
TEST(EngineFloatModels, ConcatBatchNormReluIsOnePassWithTheSameBits) {
  const std::vector<std::string> inits = {
      weights("w16", {16, 3, 3, 3}), weights("b16", {16}), weights("w5", {5, 3, 1, 1}), weights("b5", {5}),
      weights("w19", {19, 3, 3, 3}), weights("b19", {19}), weights("s", {40}, 0.5f, 2.0f), weights("shift", {40}),
      weights("m", {40}), weights("v", {40}, 0.5f, 2.0f), weights("out", {8, 40, 1, 1}), weights("b8", {8}),
      weights("s2", {7}, 0.5f, 2.0f), weights("shift2", {7}), weights("m2", {7}), weights("v2", {7}, 0.5f, 2.0f)};
  const std::string body =
      "c16 = Conv<pads=[1,1,1,1]>(x, w16, b16)\nc5 = Conv(x, w5, b5)\nc19 = Conv<pads=[1,1,1,1]>(x, w19, b19)\n"
      "cat = Concat<axis=1>(c16, c5, c19)\nbn = BatchNormalization<epsilon=0.001>(cat, s, shift, m, v)\nbr = Relu(bn)\n"
      "y = Conv(br, out, b8)\n"
      "pc = Concat<axis=1>(x, p)\npn = BatchNormalization(pc, s2, shift2, m2, v2)\nz = Relu(pn)";
  auto graph = load_text_graph(
      model(13, "g (float[N,3,9,11] x, float[N,4,9,11] p) => (float y, float z, float br)", inits, body), kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto fused = engine::Engine::build(*graph, {});
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  std::vector<std::string> kernels;
  for (const engine::LayerProfileEntry& layer : (*fused)->layers()) {
    EXPECT_NE(layer.kind, "plain_concat") << layer.name;
    EXPECT_NE(layer.kind, "fp32_batchnorm") << layer.name;
    EXPECT_NE(layer.kind, "fp32_unary") << layer.name;
    if (layer.kind == "fp32_fused_batchnorm") kernels.push_back(layer.kernel);
  }
  std::sort(kernels.begin(), kernels.end());
  EXPECT_EQ(kernels, (std::vector<std::string>{"f32-vscaleshift-clamp-nhwc-multiversion", "f32-vscaleshift-clamp-scalar"}));
  engine::BuildOptions unfused_options;
  unfused_options.disabled_passes = {"fuse_float_batchnorm"};
  auto unfused = engine::Engine::build(*graph, unfused_options);
  ASSERT_TRUE(unfused.ok()) << unfused.status().to_string();
  const std::vector<std::string> unfused_kinds = layer_kinds((*unfused)->plan());
  EXPECT_EQ(std::count(unfused_kinds.begin(), unfused_kinds.end(), "fp32_batchnorm"), 2);
  for (int threads : {1, 2}) {
    for (int64_t batch : {int64_t{1}, kMaxBatch}) {
      TensorMap inputs = random_inputs(*graph, batch, 23);
      auto expected = run_engine(**unfused, threads, inputs);
      auto actual = run_engine(**fused, threads, inputs);
      ASSERT_TRUE(expected.ok() && actual.ok());
      for (const char* name : {"y", "z", "br"}) {
        const Tensor& a = actual->at(name);
        const Tensor& e = expected->at(name);
        ASSERT_EQ(a.shape(), e.shape()) << name;
        EXPECT_EQ(std::memcmp(a.raw_data(), e.raw_data(), a.nbytes()), 0)
            << name << " batch " << batch << " threads " << threads << ": not the unfused layers' bits";
      }
    }
  }
  expect_engine_matches(**fused, *graph, "concat, batchnorm and relu");
}

// Builds `body` (a Conv of `channels` outputs, then two MaxPools y and z) over x of `x_dims`; both
// pools run the channels-last kernel and the engine matches the reference.
void expect_nhwc_max_pools_match(const std::string& body, const std::string& x_dims, int64_t channels,
                                 const std::string& label) {
  auto graph = load_text_graph(model(13, fmt::format("g (float[N,3,{}] x) => (float y, float z)", x_dims),
                                     {weights("w", {channels, 3, 3, 3}), weights("b", {channels})}, body),
                               3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  int pools = 0;
  for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
    if (layer.kind == "fp32_pool") pools += layer.kernel == "f32-maxpool-nhwc-multiversion";
  }
  EXPECT_EQ(pools, 2);
  expect_engine_matches(**engine, *graph, label);
}

// Channels-last max pools of more taps than a pixel's pointer batch (9x9: 81 taps, in two passes)
// and of channels that end in a partial block (20), with pads and strides, match the reference.
TEST(EngineFloatModels, WideChannelsLastMaxPoolMatches) {
  expect_nhwc_max_pools_match(
      "c = Conv<pads=[1,1,1,1]>(x, w, b)\ny = MaxPool<kernel_shape=[9,9], pads=[4,4,4,4]>(c)\n"
      "z = MaxPool<kernel_shape=[3,5], strides=[2,3], pads=[1,2,1,2]>(c)",
      "11,12", 20, "wide max pools");
}

// Channels-last max pools over a 64-channel block in registers and a tail (72 channels): SqueezeNet's
// 3x3 stride-2 ceil-mode pool (its last window reads past the input), dilated and padded windows.
TEST(EngineFloatModels, ChannelsLastMaxPoolBlocksMatch) {
  expect_nhwc_max_pools_match(
      "c = Conv<pads=[1,1,1,1]>(x, w, b)\ny = MaxPool<kernel_shape=[3,3], strides=[2,2], ceil_mode=1>(c)\n"
      "z = MaxPool<kernel_shape=[3,2], strides=[1,2], dilations=[2,1], pads=[2,0,1,1]>(c)",
      "12,11", 72, "max pools of 72 channels");
}

// The squeeze-excite gate Mul folds into the 1x1 projection conv that is its only reader (the
// conv scales its packed weights by the gate per image): with and without a residual Add after
// it; not when the product has another reader, the projection is not 1x1, or the image has fewer
// than 2 x the padded output channels in pixels. Matches the reference at batch 1 and 3, 1 and 2
// threads, and after an engine-file round trip.
TEST(EngineFloatModels, SqueezeExciteGateFoldsIntoProjection) {
  struct GateCase {
    std::string name, input, body;
    int binary;  // fp32_binary layers left
  };
  const std::string se =
      "d = Conv<pads=[1,1,1,1], group=16>(x, dw, b16)\nds = Sigmoid(d)\ndsilu = Mul(d, ds)\n"
      "g = GlobalAveragePool(dsilu)\nq = Conv(g, squeeze, b4)\nqr = Relu(q)\ne = Conv(qr, excite, b16)\n"
      "gate = Sigmoid(e)\ngated = Mul(dsilu, gate)\n";
  const std::vector<GateCase> cases = {
      {"folded", "float[N,16,12,11] x", se + "y = Conv(gated, project, b40)", 0},
      {"folded_gate_first", "float[N,16,12,11] x",
       se + "gated2 = Mul(gate, dsilu)\ny0 = Conv(gated2, project, b40)\ny1 = Conv(gated, project, b40)\n"
            "y = Add(y0, y1)", 0},
      {"folded_with_residual", "float[N,16,9,8] x", se + "p = Conv(gated, project16, b16)\ny = Add(p, x)", 0},
      {"product_read_twice", "float[N,16,9,8] x", se + "p = Conv(gated, project16, b16)\ny = Add(p, gated)", 1},
      {"projection_3x3", "float[N,16,9,8] x", se + "y = Conv<pads=[1,1,1,1]>(gated, project3, b16)", 1},
      {"few_pixels", "float[N,16,9,7] x", se + "y = Conv(gated, project16, b16)", 1},
  };
  const std::vector<std::string> inits = {
      weights("b16", {16}), weights("dw", {16, 1, 3, 3}), weights("squeeze", {4, 16, 1, 1}), weights("b4", {4}),
      weights("excite", {16, 4, 1, 1}), weights("project", {40, 16, 1, 1}), weights("b40", {40}),
      weights("project16", {16, 16, 1, 1}), weights("project3", {16, 16, 3, 3})};
  for (const GateCase& gate_case : cases) {
    SCOPED_TRACE(gate_case.name);
    expect_fused_layers(model(13, "g (" + gate_case.input + ") => (float y)", inits, gate_case.body), "fp32_binary",
                        gate_case.binary, "qdqrt_engine_float_gate.qdqrt", gate_case.name);
  }
}

// A depthwise conv runs inside the 1x1 conv that is its only reader (bands of rows through
// scratch) when its output is at least 64 KiB per image and 28 pixels wide (narrower: only in a
// whole block, ExpansionFusesIntoDepthwise): with a residual Add
// after the 1x1, stride 2, batch 3, 1 and 2 threads, after an engine-file round trip; not when the
// depthwise output has a second reader or is small.
TEST(EngineFloatModels, DepthwiseFusesIntoPointwise) {
  struct PairCase {
    std::string name, input, body;
    int convs;
  };
  const std::string dw = "d = Conv<pads=[1,1,1,1], group=24>(x, dw, b24)\ndc = Relu(d)\n";
  const std::vector<PairCase> cases = {
      {"fused", "float[N,24,32,30] x", dw + "y = Conv(dc, project, b16)", 1},
      {"fused_residual", "float[N,24,32,30] x", dw + "p = Conv(dc, project24, b24)\ny = Add(p, x)", 1},
      {"fused_stride2", "float[N,24,64,58] x",
       "d = Conv<pads=[1,1,1,1], strides=[2,2], group=24>(x, dw, b24)\ndc = Relu(d)\ny = Conv(dc, project, b16)", 1},
      {"fused_5x5_odd", "float[N,24,31,29] x",
       "d = Conv<pads=[2,2,2,2], group=24>(x, dw5, b24)\ny = Conv(d, project, b16)", 1},
      {"second_reader", "float[N,24,32,30] x", dw + "p = Conv(dc, project24, b24)\ny = Add(p, dc)", 2},
      {"small", "float[N,24,16,30] x", dw + "y = Conv(dc, project, b16)", 2},
  };
  const std::vector<std::string> inits = {weights("dw", {24, 1, 3, 3}), weights("dw5", {24, 1, 5, 5}),
                                          weights("b24", {24}), weights("project", {16, 24, 1, 1}),
                                          weights("b16", {16}), weights("project24", {24, 24, 1, 1})};
  for (const PairCase& pair : cases) {
    SCOPED_TRACE(pair.name);
    expect_fused_layers(model(13, "g (" + pair.input + ") => (float y)", inits, pair.body), "fp32_conv", pair.convs,
                        "qdqrt_engine_float_dwpw.qdqrt", pair.name);
  }
}

// The 1x1 expansion before a depthwise conv runs inside it too (rows of expanded input per band,
// kept across the bands of a call): the whole MobileNetV2 block (expansion, depthwise,
// projection with the residual Add), EfficientNet-style expansion + stride-2 depthwise with SiLU
// whose output has two readers, odd sizes, a whole block in rows of 14 pixels; not when the
// expansion's output has a second reader, nor rows of 14 pixels outside a whole block of even rows.
TEST(EngineFloatModels, ExpansionFusesIntoDepthwise) {
  struct ChainCase {
    std::string name, input, body;
    int convs;
  };
  const std::string expand = "e = Conv(x, ex, b48)\ner = Relu(e)\n";
  const std::vector<ChainCase> cases = {
      {"block", "float[N,16,32,30] x",
       expand + "d = Conv<pads=[1,1,1,1], group=48>(er, dw, b48)\ndr = Relu(d)\np = Conv(dr, project, b16)\n"
                "y = Add(p, x)", 1},
      {"block_odd_stride2", "float[N,16,31,57] x",
       expand + "d = Conv<pads=[1,1,1,1], strides=[2,2], group=48>(er, dw, b48)\ny = Conv(d, project, b16)", 1},
      {"silu_stride2_two_readers", "float[N,16,33,58] x",
       "e = Conv(x, ex, b48)\nes = Sigmoid(e)\nesilu = Mul(e, es)\n"
       "d = Conv<pads=[2,2,2,2], strides=[2,2], group=48>(esilu, dw5, b48)\nds = Sigmoid(d)\ndsilu = Mul(d, ds)\n"
       "g = GlobalAveragePool(dsilu)\ny = Mul(dsilu, g)", 1},
      {"expansion_read_twice", "float[N,16,32,30] x",
       expand + "d = Conv<pads=[1,1,1,1], group=48>(er, dw, b48)\ny = Add(d, er)", 2},
      // Rows of 14 pixels: a whole block with an even number of rows (units of 7 rows) fuses; an
      // odd number of rows, or a block without its projection, does not.
      {"block_14_wide", "float[N,16,28,14] x",
       expand + "d = Conv<pads=[1,1,1,1], group=48>(er, dw, b48)\ndr = Relu(d)\np = Conv(dr, project, b16)\n"
                "y = Add(p, x)", 1},
      {"block_14_wide_odd_rows", "float[N,16,27,14] x",
       expand + "d = Conv<pads=[1,1,1,1], group=48>(er, dw, b48)\ndr = Relu(d)\ny = Conv(dr, project, b16)", 3},
      {"expansion_depthwise_14_wide", "float[N,16,28,14] x",
       expand + "d = Conv<pads=[1,1,1,1], group=48>(er, dw, b48)\ny = Relu(d)", 2},
  };
  const std::vector<std::string> inits = {weights("ex", {48, 16, 1, 1}), weights("b48", {48}),
                                          weights("dw", {48, 1, 3, 3}), weights("dw5", {48, 1, 5, 5}),
                                          weights("project", {16, 48, 1, 1}), weights("b16", {16})};
  for (const ChainCase& chain : cases) {
    SCOPED_TRACE(chain.name);
    expect_fused_layers(model(13, "g (" + chain.input + ") => (float y)", inits, chain.body), "fp32_conv", chain.convs,
                        "qdqrt_engine_float_chain.qdqrt", chain.name);
  }
}

// A GlobalAveragePool of a depthwise conv's output (squeeze-excite) sums the per-row channel sums
// the depthwise writes as a second output: the plain depthwise (a channel count with a tail past
// the vectors, stride 2), the depthwise fused with its expansion; not after a 1x1 conv. Matches
// the reference at batch 1 and 3, 1 and 2 threads, and after an engine-file round trip.
TEST(EngineFloatModels, GlobalPoolReadsDepthwiseRowSums) {
  struct PoolCase {
    std::string name, input, body;
    int row_sum_pools;
  };
  const std::string gate = "g = GlobalAveragePool(ds)\nq = Conv(g, squeeze, b4)\ne = Conv(q, excite, b)\n"
                           "gate = Sigmoid(e)\ny = Mul(ds, gate)";
  const std::vector<PoolCase> cases = {
      {"depthwise_silu", "float[N,48,12,11] x",
       "d = Conv<pads=[1,1,1,1], group=48>(x, dw, b)\nds0 = Sigmoid(d)\nds = Mul(d, ds0)\n" + gate, 1},
      {"depthwise_stride2_tail", "float[N,20,13,9] x",
       "ds = Conv<pads=[1,1,1,1], strides=[2,2], group=20>(x, dw20, b20)\ng = GlobalAveragePool(ds)\n"
       "y = Mul(ds, g)", 1},
      {"expansion_depthwise", "float[N,16,33,58] x",
       "e0 = Conv(x, ex, b)\ner = Relu(e0)\nd = Conv<pads=[2,2,2,2], strides=[2,2], group=48>(er, dw5, b)\n"
       "ds0 = Sigmoid(d)\nds = Mul(d, ds0)\n" + gate, 1},
      {"pointwise", "float[N,16,12,11] x", "ds = Conv(x, ex, b)\n" + gate, 0},
  };
  const std::vector<std::string> inits = {
      weights("ex", {48, 16, 1, 1}),  weights("b", {48}),           weights("dw", {48, 1, 3, 3}),
      weights("dw5", {48, 1, 5, 5}),  weights("dw20", {20, 1, 3, 3}), weights("b20", {20}),
      weights("squeeze", {4, 48, 1, 1}), weights("b4", {4}),       weights("excite", {48, 4, 1, 1})};
  for (const PoolCase& pool_case : cases) {
    SCOPED_TRACE(pool_case.name);
    const std::string text = model(13, "g (" + pool_case.input + ") => (float y)", inits, pool_case.body);
    auto graph = load_text_graph(text, 3);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto engine = engine::Engine::build(*graph, {});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    int pools = 0;
    for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
      pools += layer.kind == "fp32_global_avgpool_nhwc" && layer.kernel.find("(row sums)") != std::string::npos;
    }
    EXPECT_EQ(pools, pool_case.row_sum_pools);
    expect_fused_layers(text, "fp32_global_avgpool_nhwc", 1,
                        fmt::format("qdqrt_engine_float_rowsums_{}.qdqrt", static_cast<long>(getpid())),
                        pool_case.name);
  }
}

// A conv of the network's NCHW input of at most 4 channels (a stem) reads it in place
// (direct_nchw: no reorder to NHWC): 3x3 stride 2 with Clip, 7x7 stride 2 with Relu, SiLU, a
// residual Add, two convs of the same input; 5 channels and 3x3 stride 1 (Winograd) reorder.
// Matches the reference at batch 1 and 3, 1 and 2 threads, and after an engine-file round trip.
TEST(EngineFloatModels, StemConvReadsNchwInput) {
  struct StemCase {
    std::string name, input, body;
    int direct, reorders;
  };
  const std::vector<StemCase> cases = {
      {"clip_3x3s2", "float[N,3,17,16] x",
       "c = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w3, b32)\ny = Clip(c, lo, hi)", 1, 1},
      {"relu_7x7s2", "float[N,3,23,21] x",
       "c = Conv<pads=[3,3,3,3], strides=[2,2]>(x, w7, b32)\ny = Relu(c)", 1, 1},
      {"silu_two_channels", "float[N,2,15,30] x",
       "c = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w2, b32)\ncs = Sigmoid(c)\ny = Mul(c, cs)", 1, 1},
      {"two_readers_residual", "float[N,3,17,16] x",
       "c0 = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w3, b32)\nc1 = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w3b, b32)\n"
       "y = Add(c0, c1)", 2, 1},
      {"five_channels", "float[N,5,17,16] x", "y = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w5, b32)", 0, 2},
      {"winograd", "float[N,3,17,16] x", "y = Conv<pads=[1,1,1,1]>(x, w3, b32)", 0, 2},
  };
  const std::vector<std::string> inits = {
      weights("w3", {32, 3, 3, 3}), weights("w3b", {32, 3, 3, 3}), weights("w7", {32, 3, 7, 7}),
      weights("w2", {32, 2, 3, 3}), weights("w5", {32, 5, 3, 3}), weights("b32", {32}),
      "float lo = {0.0}", "float hi = {6.0}"};
  for (const StemCase& stem : cases) {
    SCOPED_TRACE(stem.name);
    const std::string text = model(13, "g (" + stem.input + ") => (float y)", inits, stem.body);
    auto graph = load_text_graph(text, 3);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto engine = engine::Engine::build(*graph, {});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    int direct = 0, reorders = 0;
    for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
      direct += layer.kind == "fp32_conv" && layer.kernel.find("direct-nchw") != std::string::npos;
      reorders += layer.kind == "reorder";
    }
    EXPECT_EQ(direct, stem.direct);
    EXPECT_EQ(reorders, stem.reorders);
    expect_fused_layers(text, "fp32_conv", stem.name == "two_readers_residual" ? 2 : 1,
                        fmt::format("qdqrt_engine_float_stem_{}.qdqrt", static_cast<long>(getpid())), stem.name);
  }
}

// A dilated conv whose taps read only padding for part of the output (DeepLabV3's ASPP: dilation
// as large as the map) leaves those taps out per row tile ("live taps" in the kernel name): with
// Relu, with a residual Add, strided with asymmetric pads; a padded 3x3 on a larger map and an
// unpadded dilated one run the plain igemm (must not fire). Match the reference at batch 1 and 3,
// 1 and 2 threads, and after an engine-file round trip.
TEST(EngineFloatModels, DilatedConvSkipsDeadTaps) {
  struct DilatedCase {
    std::string name, input, body;
    bool live_taps;
  };
  const std::vector<DilatedCase> cases = {
      {"aspp_relu", "float[N,16,9,10] x", "c = Conv<pads=[6,6,6,6], dilations=[6,6]>(x, w)\ny = Relu(c)", true},
      {"aspp_residual", "float[N,16,9,10] x",
       "c = Conv<pads=[6,6,6,6], dilations=[6,6]>(x, w, b)\nr = Conv<pads=[1,1,1,1]>(x, w, b)\ny = Add(c, r)", true},
      {"strided_asymmetric", "float[N,16,11,7] x", "y = Conv<pads=[4,3,2,5], dilations=[3,4], strides=[2,1]>(x, w, b)",
       true},
      {"padded_3x3", "float[N,16,40,40] x", "y = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w, b)", false},
      {"dilated_unpadded", "float[N,16,20,20] x", "y = Conv<dilations=[4,4]>(x, w, b)", false},
  };
  const std::vector<std::string> inits = {weights("w", {20, 16, 3, 3}), weights("b", {20})};
  for (const DilatedCase& dilated : cases) {
    SCOPED_TRACE(dilated.name);
    const std::string text = model(13, "g (" + dilated.input + ") => (float y)", inits, dilated.body);
    auto graph = load_text_graph(text, 3);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto engine = engine::Engine::build(*graph, {});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    int live = 0, convs = 0;
    for (const engine::LayerProfileEntry& layer : (*engine)->layers()) {
      convs += layer.kind == "fp32_conv";
      live += layer.kind == "fp32_conv" && layer.kernel.find("live taps") != std::string::npos;
    }
    EXPECT_EQ(live, dilated.live_taps ? 1 : 0);
    expect_fused_layers(text, "fp32_conv", convs, fmt::format("qdqrt_engine_float_dilated_{}.qdqrt",
                                                              static_cast<long>(getpid())), dilated.name);
  }
}

// A YOLO-style neck: conv -> 2x nearest Resize -> conv, and an LR-ASPP-style conv -> bilinear
// Resize -> conv, stay channels-last through the Resize (no reorder around it), match the
// reference and survive the engine file.
TEST(EngineFloatModels, ResizeStaysChannelsLast) {
  const std::string text =
      model(13, "g (float[N,4,6,6] x) => (float y, float z)",
            {weights("w", {9, 4, 3, 3}), weights("v", {8, 9, 3, 3}), "float[4] s = {1.0, 1.0, 2.0, 2.0}"},
            "c = Conv<pads=[1,1,1,1]>(x, w)\nr = Relu(c)\n"
            "u = Resize<mode=\"nearest\">(r, , s)\ny = Conv<pads=[1,1,1,1]>(u, v)\n"
            "b = Resize<mode=\"linear\">(r, , s)\nz = Conv<pads=[1,1,1,1]>(b, v)");
  expect_fused_layers(text, "resize_nearest", 1,
                      fmt::format("qdqrt_engine_float_resize_{}.qdqrt", static_cast<long>(getpid())), "resize_nhwc");
  auto graph = load_text_graph(text, 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const engine::EnginePlan& plan = (*engine)->plan();
  int reorders = 0, resizes = 0;
  for (const engine::PlanLayer& layer : plan.layers) {
    reorders += layer.kind == "reorder";
    if (layer.kind.rfind("resize_", 0) != 0) continue;
    ++resizes;
    EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.inputs[0])].layout, engine::Layout::kNhwc) << layer.kind;
    EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.outputs[0])].layout, engine::Layout::kNhwc) << layer.kind;
    EXPECT_NE(layer.kernel.find("-nhwc-"), std::string::npos) << layer.kernel;
  }
  EXPECT_EQ(resizes, 2);
  EXPECT_LE(reorders, 3);  // at most into the first conv and out of the last two
}

// A plan with reference and native layers survives the engine file: outputs bit-identical.
TEST(EngineFloatModels, EngineFileRoundTrip) {
  const std::string text =
      model(13, "g (float[N,2,6,6] x) => (float y, float r, float b)", {weights("w", {4, 2, 3, 3})},
            "c = Conv<pads=[1,1,1,1]>(x, w)\ne = Elu<alpha=0.5>(c)\ny = Relu(e)\n"
            "r = Resize<mode=\"cubic\">(c, , s)\nb = Resize<mode=\"linear\">(c, , s)");
  const std::string full = text.substr(0, text.find('>', text.find("<float")) ) + ", float[4] s = {1.0, 1.0, 2.0, 2.0}" +
                           text.substr(text.find('>', text.find("<float")));
  auto graph = load_text_graph(full, 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const std::string path = (std::filesystem::temp_directory_path() / "qdqrt_engine_float_roundtrip.qdqrt").string();
  Status saved = (*engine)->save(path);
  if (saved.code() == StatusCode::kUnsupported) GTEST_SKIP() << saved.message();
  ASSERT_TRUE(saved.is_ok()) << saved.to_string();
  auto loaded = engine::Engine::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  TensorMap inputs = random_inputs(*graph, 2, 9);
  auto first = run_engine(**engine, 1, inputs);
  auto second = run_engine(**loaded, 2, inputs);
  ASSERT_TRUE(first.ok() && second.ok());
  for (const auto& [name, tensor] : *first) EXPECT_EQ(relative_error(second->at(name), tensor), 0.0) << name;
  expect_engine_matches(**loaded, *graph, "loaded");
}

// A Linear on a rank-3 input (MatMul + bias Add, torch's export) runs as one fp32_gemm with the
// bias in its epilogue (fuse_float_matmul_bias): no binary layer, the numbers of the two nodes.
// Tiles and tails: 40 rows of 600 deep into 45 columns.
TEST(EngineFloatFusions, MatMulBiasRunsAsOneGemm) {
  const std::vector<std::string> inits = {weights("w", {12, 7}), weights("bias", {7}), weights("wide", {600, 45}),
                                          weights("bias45", {1, 45})};
  expect_fused_layers(model(13, "g (float[N,5,12] x) => (float y)", inits, "m = MatMul(x, w)\ny = Add(bias, m)"),
                      "fp32_gemm", 1, "qdqrt_engine_float_matmul_bias.qdqrt", "rank3");
  expect_fused_layers(model(13, "g (float[N,40,600] x) => (float y)", inits, "m = MatMul(x, wide)\ny = Add(m, bias45)"),
                      "fp32_gemm", 1, "qdqrt_engine_float_matmul_bias.qdqrt", "tails");
  auto graph = load_text_graph(model(13, "g (float[N,5,12] x) => (float y)", inits, "m = MatMul(x, w)\ny = Add(bias, m)"), 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  ASSERT_EQ((*engine)->layers().size(), 1u);
  EXPECT_EQ((*engine)->layers()[0].kind, "fp32_gemm");
}

// A transformer MLP's first Linear and its GELU (the erf chain torch writes) run as one fp32_gemm
// with the bias and the GELU in its epilogue; the second Linear and its bias as another.
TEST(EngineFloatFusions, MatMulBiasGeluRunsAsOneGemm) {
  const std::vector<std::string> inits = {weights("w1", {24, 70}), weights("b1", {70}), weights("w2", {70, 24}),
                                          weights("b2", {24}), "float sqrt2 = {1.4142135}", "float one = {1.0}",
                                          "float half = {0.5}"};
  const std::string body =
      "m = MatMul(x, w1)\nh = Add(b1, m)\nd = Div(h, sqrt2)\ne = Erf(d)\np = Add(e, one)\ng = Mul(h, p)\n"
      "a = Mul(g, half)\nm2 = MatMul(a, w2)\ny = Add(b2, m2)";
  const std::string text = model(13, "g (float[N,17,24] x) => (float y)", inits, body);
  expect_fused_layers(text, "fp32_gemm", 2, "qdqrt_engine_float_matmul_gelu.qdqrt", "mlp");
  auto graph = load_text_graph(text, 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->layers().size(), 2u);
}

// A FusedMatMul written by hand whose bias the GEMM cannot take (one value per row: [5, 1]) runs on
// the reference layer, with the Add's broadcast.
TEST(EngineFloatFusions, FusedMatMulWithARowBiasRunsOnTheReference) {
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 13, \"qdqrt\" : 1]>\n"
                           "g (float[N,5,12] x) => (float y)\n<" +
                           weights("w", {12, 7}) + ", " + weights("rows", {5, 1}) +
                           ">\n{\ny = qdqrt.FusedMatMul (x, w, rows)\n}";
  auto graph = load_text_graph(text, 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  ASSERT_EQ((*engine)->layers().size(), 1u);
  EXPECT_EQ((*engine)->layers()[0].kind, "reference");
  expect_engine_matches(**engine, *graph, "row bias");
}

// A transformer's projection at batch 1 (128 tokens, 1 MiB of weights) splits into blocks of
// columns over all its rows, so each thread streams only its own columns of B: 8 items, their
// operations the whole GEMM's. Every split gives the bits of one range, within the tolerance of the
// reference. Past kWholeRowsMaxRows (300 tokens) the items are tiles of rows again.
TEST(EngineFloatFusions, TransformerGemmSplitsColumnsOverWholeRows) {
  const std::vector<std::string> inits = {weights("w", {256, 1024})};
  for (const int64_t tokens : {int64_t{128}, int64_t{300}}) {
    SCOPED_TRACE(tokens);
    const std::string text = model(13, fmt::format("g (float[N,{},256] x) => (float y)", tokens), inits,
                                   "y = MatMul(x, w)");
    auto graph = load_text_graph(text, 1);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto built = harness_build(*graph, 1);
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    ASSERT_EQ(built->layers.size(), 1u);
    ASSERT_EQ(built->plan.layers[0].kind, "fp32_gemm");
    std::vector<void*> data(built->plan.tensors.size(), nullptr);
    engine::RunState state{&built->plan, 1, &data};
    const engine::WorkShape work = built->layers[0]->work(state);
    if (tokens == 128) {
      EXPECT_EQ(work.items, 8);
      EXPECT_DOUBLE_EQ(static_cast<double>(work.items) * work.ops_per_item, 2.0 * 128 * 256 * 1024);
    } else {
      EXPECT_GT(work.items, 8);  // (column block, row tile)
    }
    TensorMap inputs = random_inputs(*graph, 1, 23);
    auto expected = run_reference(*graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    auto whole = harness_run(*built, inputs, 1);
    ASSERT_TRUE(whole.ok()) << whole.status().to_string();
    EXPECT_LE(relative_error(whole->at("y"), expected->at("y")), kTolerance);
    for (const int64_t chunks : {int64_t{2}, int64_t{3}, int64_t{8}}) {
      auto split = harness_run(*built, inputs, chunks);
      ASSERT_TRUE(split.ok()) << split.status().to_string();
      EXPECT_EQ(relative_error(split->at("y"), whole->at("y")), 0.0) << chunks << " chunks";
    }
  }
}

}  // namespace
}  // namespace qdqrt::testing
