// Slice and Split as strided_copy layers (engine/layers/strided_copy.cpp) and the Pad and
// ReduceMean forms the optimizer turns into pools (fold_pad_into_pool, lower_spatial_mean):
// - single ops (Engine::build): random slices of every rank, negative and clamped indices, steps,
//   fp32/int8/uint8/int64, and Splits of every opset form, bit-identical to the reference executor
//   at batch 1 and the maximum batch, on 1 and 2 threads; a negative step stays on the reference
//   layer; bind refuses steps that walk past the input;
// - Pad in constant mode as a constant_pad layer (pads, crops, every dtype and opset form);
//   reflect and edge stay on the reference layer;
// - engine level (Engine::build): the channel split between NHWC convolutions reads and writes
//   channels-last without reorders, the int8 split between equal Q/DQ stays int8 (bit-exact), and
//   the Pad and spatial-mean models run with no reference layer (FP32 within 1e-5; INT8 within the
//   INT8 pools' 1 LSB, and the same bytes as the engine that runs the Pads unfolded).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <functional>

#include "engine/engine.h"
#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"
#include "tests/common/layer_params_check.h"

namespace qdqrt::testing {
namespace {

constexpr int64_t kMaxBatch = 3;

TensorMap seeded_inputs(const Graph& graph, int64_t batch, uint32_t seed) {
  std::mt19937 rng(seed);
  TensorMap inputs;
  for (const std::string& name : graph.inputs) {
    const ValueInfo* info = graph.find_value(name);
    Shape shape = *info->static_shape();
    shape[0] = batch;
    Tensor tensor(info->dtype, shape);
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      const uint32_t bits = rng();
      if (tensor.dtype() == DataType::kFloat) {
        tensor.data<float>()[i] = static_cast<float>(static_cast<int32_t>(bits % 20001) - 10000) / 3333.0f;
      } else if (tensor.dtype() == DataType::kInt64) {
        tensor.data<int64_t>()[i] = static_cast<int64_t>(bits) * 77777;
      } else {
        static_cast<uint8_t*>(tensor.raw_data())[i] = static_cast<uint8_t>(bits >> 8);
      }
    }
    inputs[name] = tensor;
  }
  return inputs;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

Result<TensorMap> run_engine(const engine::Engine& engine, const TensorMap& inputs, int threads) {
  auto context = engine.create_context({.threads = threads});
  std::vector<engine::ConstTensorBinding> bindings;
  int64_t batch = 1;
  for (const auto& [name, tensor] : inputs) {
    bindings.push_back({name, tensor.raw_data(), tensor.shape()});
    batch = tensor.dim(0);
  }
  TensorMap outputs;
  for (const engine::IoTensorInfo& info : engine.outputs()) outputs[info.name] = Tensor(info.dtype, info.shape_at_batch(batch));
  std::vector<engine::TensorBinding> output_bindings;
  for (auto& [name, tensor] : outputs) output_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  QDQRT_RETURN_IF_ERROR(context->run(bindings, output_bindings));
  return outputs;
}

// Builds `text` (Engine::build), expects `count` layers of `kind`, and outputs identical to the
// reference executor's at batch 1 and the maximum batch, on 1 and 2 threads.
void expect_identical(const std::string& text, const std::string& kind, int count) {
  SCOPED_TRACE(text);
  auto graph = load_text_graph(text, kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  std::vector<std::string> kinds;
  for (const engine::LayerProfileEntry& layer : (*engine)->layers()) kinds.push_back(layer.kind);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), kind), count) << fmt::format("{}", fmt::join(kinds, ", "));
  for (int64_t batch : {int64_t{1}, kMaxBatch}) {
    TensorMap inputs = seeded_inputs(*graph, batch, 9 + static_cast<uint32_t>(batch));
    auto expected = run_reference(*graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    for (int threads : {1, 2}) {
      auto actual = run_engine(**engine, inputs, threads);
      ASSERT_TRUE(actual.ok()) << actual.status().to_string();
      for (const auto& [name, tensor] : *expected) {
        EXPECT_TRUE(same_bytes(actual->at(name), tensor)) << name << " batch " << batch << " threads " << threads;
      }
    }
  }
}

int count_kind(const engine::EnginePlan& plan, const std::string& kind) {
  return static_cast<int>(std::count_if(plan.layers.begin(), plan.layers.end(),
                                         [&](const engine::PlanLayer& layer) { return layer.kind == kind; }));
}

std::string ints(const std::vector<int64_t>& values) { return fmt::format("{}", fmt::join(values, ", ")); }

TEST(SliceLayer, RandomSlicesMatchTheReferenceBitForBit) {
  std::mt19937 rng(3);
  const char* dtypes[] = {"float", "int8", "uint8", "int64"};
  for (int trial = 0; trial < 60; ++trial) {
    const int rank = 2 + static_cast<int>(rng() % 4);
    std::vector<int64_t> dims = {kMaxBatch};
    for (int a = 1; a < rank; ++a) dims.push_back(1 + static_cast<int64_t>(rng() % 9));
    std::vector<int64_t> starts, ends, axes, steps;
    for (int a = 1; a < rank; ++a) {
      if (rng() % 3 == 0) continue;  // axis left whole
      const int64_t dim = dims[static_cast<size_t>(a)];
      int64_t start = static_cast<int64_t>(rng() % static_cast<uint32_t>(dim));
      int64_t end = start + 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(dim - start));
      if (rng() % 4 == 0) start -= dim;                            // counted from the end
      if (rng() % 5 == 0) end = std::numeric_limits<int64_t>::max();  // clamped
      axes.push_back(rng() % 2 == 0 ? a : a - rank);
      starts.push_back(start);
      ends.push_back(end);
      steps.push_back(1 + static_cast<int64_t>(rng() % 3));
    }
    if (axes.empty()) continue;
    const char* dtype = dtypes[trial % 4];
    std::string shape = "N";
    for (int a = 1; a < rank; ++a) shape += fmt::format(",{}", dims[static_cast<size_t>(a)]);
    const size_t n = axes.size();
    const std::string text = model(
        13, fmt::format("g ({}[{}] x) => ({} y)", dtype, shape, dtype),
        {fmt::format("int64[{}] s = {{{}}}", n, ints(starts)), fmt::format("int64[{}] e = {{{}}}", n, ints(ends)),
         fmt::format("int64[{}] a = {{{}}}", n, ints(axes)), fmt::format("int64[{}] st = {{{}}}", n, ints(steps))},
        "y = Slice(x, s, e, a, st)");
    expect_identical(text, "strided_copy", 1);
  }
}

TEST(SliceLayer, ChannelSplitOfShuffleNetAndDefaultAxes) {
  // torch.chunk(x, 2, dim=1): two Slices of the channels (ShuffleNetV2, the C2f blocks).
  expect_identical(model(13, "g (float[N,116,5,7] x) => (float y, float z)",
                                 {"int64[1] zero = {0}", "int64[1] half = {58}", "int64[1] end = {116}",
                                  "int64[1] one = {1}"},
                                 "y = Slice(x, zero, half, one)\nz = Slice(x, half, end, one)"),
                           "strided_copy", 2);
  // torch 1.13's tensor_split (MViT's class token split) writes scalar starts and ends.
  expect_identical(model(13, "g (float[N,2,9,5] x) => (float y, float z)",
                                 {"int64 zero = {0}", "int64 one = {1}", "int64 nine = {9}", "int64[1] axis = {2}"},
                                 "y = Slice(x, zero, one, axis)\nz = Slice(x, one, nine, axis)"),
                           "strided_copy", 2);
  // No axes: starts/ends cover the leading axes (the batch whole); opset 10 (no steps input).
  expect_identical(model(10, "g (float[N,6,5] x) => (float y)",
                                 {"int64[3] s = {0, 1, 2}", "int64[3] e = {1000, -1, 5}"}, "y = Slice(x, s, e)"),
                           "strided_copy", 1);
}

// Copies whose output dims are partly neighbours in the input too (merged into longer rows): the
// channel shuffle's transpose, a channel slice of planes longer than the longest merged row, a
// slice with dims of 1.
TEST(SliceLayer, MergedRowsMatchBitForBit) {
  expect_identical(model(13, "g (float[N,2,58,7,7] x) => (float y)", {},
                         "y = Transpose <perm = [0, 2, 1, 3, 4]> (x)"),
                   "strided_copy", 1);
  expect_identical(model(13, "g (float[N,4,128,160] x) => (float y)",
                         {"int64[1] s = {1}", "int64[1] e = {3}", "int64[1] a = {1}"}, "y = Slice(x, s, e, a)"),
                   "strided_copy", 1);
  expect_identical(model(13, "g (float[N,1,6,1,5] x) => (float y)",
                         {"int64[1] s = {1}", "int64[1] e = {4}", "int64[1] a = {2}"}, "y = Slice(x, s, e, a)"),
                   "strided_copy", 1);
}

// Transposes whose output rows walk the input at a stride while the next output dim walks it
// contiguously (attention's K^T: [T, H, D] -> [H, D, T]) run as 2-D transposes in tiles: the same
// bytes as the reference for 4-byte elements, tile edges (9 x 20, 130 tokens), on 1 and 2 threads
// (130 tokens at batch 3: the rows split inside a run of the contiguous dim); 8-byte elements keep
// the element loop.
TEST(TransposeLayer, StridedRowsRunAsTiledTransposes) {
  const char* texts[] = {
      "g (float[N,2,9,3,20] x) => (float y) { y = Transpose <perm = [0, 1, 3, 4, 2]> (x) }",
      "g (int32[N,1,130,12,64] x) => (int32 y) { y = Transpose <perm = [0, 1, 3, 4, 2]> (x) }",
      "g (float[N,1,130,12,64] x) => (float y) { y = Transpose <perm = [0, 1, 3, 4, 2]> (x) }",
      "g (int64[N,2,9,3,20] x) => (int64 y) { y = Transpose <perm = [0, 1, 3, 4, 2]> (x) }"};
  for (const char* body : texts) {
    expect_identical(std::string("<ir_version: 8, opset_import: [\"\" : 13]>\n") + body, "strided_copy", 1);
  }
}

TEST(SplitLayer, EveryFormIsOneCopyPerOutput) {
  // Opset 13: sizes as input 1; opset 11: the split attribute; equal parts; opset 18 num_outputs
  // (ceil-sized parts, the last smaller); the last axis, negative.
  expect_identical(model(13, "g (float[N,10,3,4] x) => (float a, float b, float c)", {"int64[3] sz = {2, 5, 3}"},
                                 "a, b, c = Split<axis=1>(x, sz)"),
                           "strided_copy", 3);
  expect_identical(model(11, "g (uint8[N,4,6] x) => (uint8 a, uint8 b)", {},
                                 "a, b = Split<axis=-1, split=[1, 5]>(x)"),
                           "strided_copy", 2);
  expect_identical(model(13, "g (int8[N,8,3] x) => (int8 a, int8 b)", {}, "a, b = Split<axis=1>(x)"),
                           "strided_copy", 2);
  expect_identical(model(18, "g (float[N,3,7] x) => (float a, float b, float c)", {},
                                 "a, b, c = Split<axis=2, num_outputs=3>(x)"),
                           "strided_copy", 3);
}

TEST(SliceLayer, OtherFormsStayOnTheReference) {
  // A negative step (a flip).
  expect_identical(model(13, "g (float[N,6,5] x) => (float y)",
                                 {"int64[1] s = {-1}", "int64[1] e = {-100}", "int64[1] a = {2}", "int64[1] st = {-2}"},
                                 "y = Slice(x, s, e, a, st)"),
                           "reference", 1);
}

// Bind refuses copies whose steps walk past the input (or are not one per output axis), naming the layer.
TEST(SliceLayer, BindRefusesStepsPastTheInput) {
  auto graph = load_text_graph(model(13, "g (float[N,9,4] x) => (float y)",
                                     {"int64[1] s = {1}", "int64[1] e = {9}", "int64[1] a = {1}", "int64[1] st = {2}"},
                                     "y = Slice(x, s, e, a, st)"),
                               kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const engine::EnginePlan& plan = (*engine)->plan();
  auto copy = std::find_if(plan.layers.begin(), plan.layers.end(),
                           [](const engine::PlanLayer& layer) { return layer.kind == "strided_copy"; });
  ASSERT_NE(copy, plan.layers.end());
  EXPECT_EQ(*copy->params.get_ints("copy.steps"), (std::vector<int64_t>{1, 2, 1}));
  const size_t index = static_cast<size_t>(copy - plan.layers.begin());
  for (const std::vector<int64_t>& steps : std::vector<std::vector<int64_t>>{{1, 3, 1}, {1, 0, 1}, {2, 2, 1}, {1, 2}}) {
    engine::EnginePlan damaged = plan;
    damaged.layers[index].params.set("copy.steps", steps);
    auto bound = engine::Engine::from_plan(std::move(damaged));
    ASSERT_FALSE(bound.ok()) << fmt::format("steps [{}] accepted", ints(steps));
    EXPECT_NE(bound.status().message().find(copy->name), std::string::npos) << bound.status().message();
  }
}

TEST(PadLayer, ConstantPadsAndCropsMatchBitForBit) {
  std::mt19937 rng(13);
  const char* dtypes[] = {"float", "int8", "uint8", "int64"};
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 2 + static_cast<int>(rng() % 4);
    std::vector<int64_t> begins(static_cast<size_t>(rank), 0), ends(static_cast<size_t>(rank), 0);
    std::string shape = "N";
    for (int a = 1; a < rank; ++a) {
      const int64_t dim = 1 + static_cast<int64_t>(rng() % 7);
      shape += fmt::format(",{}", dim);
      begins[static_cast<size_t>(a)] = static_cast<int64_t>(rng() % 4) - 1;  // -1 crops
      ends[static_cast<size_t>(a)] = static_cast<int64_t>(rng() % 4) - (dim > 1 ? 1 : 0);
      if (begins[static_cast<size_t>(a)] < 0 && ends[static_cast<size_t>(a)] < 0 && dim < 3) begins[static_cast<size_t>(a)] = 0;
    }
    std::vector<int64_t> pads = begins;
    pads.insert(pads.end(), ends.begin(), ends.end());
    const char* dtype = dtypes[trial % 4];
    const std::string value = std::string(dtype) == "float" ? "-2.5" : (std::string(dtype) == "int64" ? "-7" : "3");
    expect_identical(model(13, fmt::format("g ({}[{}] x) => ({} y)", dtype, shape, dtype),
                           {fmt::format("int64[{}] p = {{{}}}", pads.size(), ints(pads)),
                            fmt::format("{} v = {{{}}}", dtype, value)},
                           "y = Pad(x, p, v)"),
                     "constant_pad", 1);
  }
}

TEST(PadLayer, EveryOpsetFormAndTheFormsThatStay) {
  // Opset 2 and 10: pads and value as attributes; 11: no value (zero); 18: axes.
  expect_identical(model(10, "g (float[N,3,4,5] x) => (float y)", {},
                         "y = Pad<pads=[0, 1, 0, 2, 0, 0, 3, 1], value=1.5>(x)"),
                   "constant_pad", 1);
  expect_identical(model(11, "g (uint8[N,2,3] x) => (uint8 y)", {"int64[6] p = {0, 2, 1, 0, 0, 2}"}, "y = Pad(x, p)"),
                   "constant_pad", 1);
  expect_identical(model(18, "g (float[N,4,6,5] x) => (float y)", {"int64[4] p = {1, 2, 0, 1}", "int64[2] a = {-2, 3}"},
                         "y = Pad(x, p, , a)"),
                   "constant_pad", 1);
  // Reflect and edge repeat the input: the reference layer.
  expect_identical(model(13, "g (float[N,3,4,5] x) => (float y)", {"int64[8] p = {0, 0, 1, 2, 0, 0, 2, 1}"},
                         "y = Pad<mode=\"reflect\">(x, p)"),
                   "reference", 1);
  expect_identical(model(13, "g (float[N,3,4,5] x) => (float y)", {"int64[8] p = {0, 0, 1, 2, 0, 0, 2, 1}"},
                         "y = Pad<mode=\"edge\">(x, p)"),
                   "reference", 1);
}

// The Pad fold_pad_into_pool keeps (a non-zero value) runs as a constant_pad layer before the pool.
TEST(PadLayer, PadThatDoesNotFoldRunsBeforeThePool) {
  expect_identical(model(13, "g (float[N,3,6,5] x) => (float y)",
                         {"int64[8] p = {0, 0, 1, 1, 0, 0, 1, 1}", "float v = {1.0}"},
                         "q = Pad(x, p, v)\ny = AveragePool<kernel_shape=[3,3]>(q)"),
                   "constant_pad", 1);
}

TEST(PadLayer, BindRefusesBadFillsAndPaddedBatches) {
  auto graph = load_text_graph(model(13, "g (uint8[N,3,4] x) => (uint8 y)", {"int64[6] p = {0, 1, 0, 0, 1, 2}"},
                                     "y = Pad(x, p)"),
                               kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const engine::EnginePlan& plan = (*engine)->plan();
  auto pad = std::find_if(plan.layers.begin(), plan.layers.end(),
                          [](const engine::PlanLayer& layer) { return layer.kind == "constant_pad"; });
  ASSERT_NE(pad, plan.layers.end());
  const size_t index = static_cast<size_t>(pad - plan.layers.begin());
  const std::vector<std::pair<const char*, engine::ParamValue>> damages = {
      {"pad.value_bits", int64_t{256}},  // does not fit a uint8
      {"pad.value_bits", int64_t{-1}},
      {"pad.begin", std::vector<int64_t>{1, 1, 0}},  // pads the batch
      {"pad.begin", std::vector<int64_t>{0, 1}},     // one per axis
  };
  for (const auto& [key, value] : damages) {
    engine::EnginePlan damaged = plan;
    damaged.layers[index].params.set(key, value);
    auto bound = engine::Engine::from_plan(std::move(damaged));
    ASSERT_FALSE(bound.ok()) << key << " accepted";
    EXPECT_NE(bound.status().message().find(pad->name), std::string::npos) << bound.status().message();
  }
}

// Every damage to a strided_copy (NHWC, with steps) or constant_pad param that bind refuses names
// the layer, their keys are documented in docs/engine_format.md, and they survive an engine file.
TEST(CopyLayers, EveryRefusalNamesTheLayerAndEveryKeyIsDocumented) {
  auto graph = load_text_graph(
      model(13, "g (float[N,4,9,7] x) => (float y, float z)",
            {weights("w1", {8, 4, 1, 1}), weights("w2", {3, 4, 1, 1}, -1.0f, 1.0f, 8), "int64[2] s = {1, 0}",
             "int64[2] e = {9, 7}", "int64[2] a = {1, 2}", "int64[2] st = {2, 3}", "int64[8] p = {0, 0, 1, 0, 0, 0, 0, 2}",
             "float v = {0.5}"},
            "c = Conv(x, w1)\nt = Slice(c, s, e, a, st)\ny = Conv(t, w2)\nz = Pad(x, p, v)"),
      kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const engine::EnginePlan& plan = (*engine)->plan();
  EXPECT_EQ(count_kind(plan, "strided_copy"), 1);
  EXPECT_EQ(count_kind(plan, "constant_pad"), 1);
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].kind != "strided_copy" && plan.layers[i].kind != "constant_pad") continue;
    SCOPED_TRACE(plan.layers[i].kind);
    BindDamageResult result = damage_each_param_and_blob(plan, i);
    EXPECT_GT(result.refused, 0);
    EXPECT_TRUE(result.unnamed.empty()) << fmt::format("{}", fmt::join(result.unnamed, "\n"));
  }
  std::vector<std::string> missing = undocumented_keys(plan, QDQRT_ENGINE_FORMAT_DOC);
  EXPECT_TRUE(missing.empty()) << fmt::format("{}", fmt::join(missing, "\n"));
  // Through an engine file: the loaded engine computes what the built one does.
  const std::string path = (std::filesystem::temp_directory_path() / "copy_layers_test.qdqrt").string();
  Status saved = (*engine)->save(path);
  if (saved.code() != StatusCode::kUnsupported) {
    ASSERT_TRUE(saved.is_ok()) << saved.to_string();
    auto loaded = engine::Engine::load(path);
    std::remove(path.c_str());
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    TensorMap inputs = seeded_inputs(*graph, kMaxBatch, 33);
    auto built_outputs = run_engine(**engine, inputs, 1);
    auto loaded_outputs = run_engine(**loaded, inputs, 1);
    ASSERT_TRUE(built_outputs.ok() && loaded_outputs.ok());
    for (const auto& [name, tensor] : *built_outputs) EXPECT_TRUE(same_bytes(loaded_outputs->at(name), tensor)) << name;
  }
  // The NHWC slice with its output relabelled plain: one layout on both sides or nothing.
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].kind != "strided_copy") continue;
    ASSERT_EQ(plan.tensors[static_cast<size_t>(plan.layers[i].inputs[0])].layout, engine::Layout::kNhwc);
    ASSERT_TRUE(harness_bind(plan, i).ok());
    engine::EnginePlan damaged = plan;
    damaged.tensors[static_cast<size_t>(damaged.layers[i].outputs[0])].layout = engine::Layout::kPlain;
    auto bound = harness_bind(damaged, i);
    ASSERT_FALSE(bound.ok());
    EXPECT_NE(bound.status().message().find("must both be plain"), std::string::npos) << bound.status().message();
  }
  // Both copies: one input and one output, of one dtype of a size they move.
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].kind != "strided_copy" && plan.layers[i].kind != "constant_pad") continue;
    SCOPED_TRACE(plan.layers[i].kind);
    engine::EnginePlan two_outputs = plan;
    two_outputs.layers[i].outputs.push_back(two_outputs.layers[i].outputs[0]);
    auto bound = harness_bind(two_outputs, i);
    ASSERT_FALSE(bound.ok());
    EXPECT_NE(bound.status().message().find("one input and one output"), std::string::npos)
        << bound.status().message();
    engine::EnginePlan other_dtype = plan;
    DataType& output_dtype = other_dtype.tensors[static_cast<size_t>(other_dtype.layers[i].outputs[0])].dtype;
    output_dtype = output_dtype == DataType::kFloat ? DataType::kInt32 : DataType::kFloat;
    bound = harness_bind(other_dtype, i);
    ASSERT_FALSE(bound.ok());
    EXPECT_NE(bound.status().message().find("one dtype of 1, 2, 4 or 8 bytes"), std::string::npos)
        << bound.status().message();
  }
}

// --- Engine::build: layouts, the int8 split, and the optimizer's pool forms.

struct Built {
  Graph graph;
  std::shared_ptr<const engine::Engine> engine;
};

Built build(const std::string& text, engine::Precision precision = engine::Precision::kInt8,
            bool share_buffers = true) {
  auto graph = load_text_graph(text, kMaxBatch);
  EXPECT_TRUE(graph.ok()) << graph.status().to_string();
  if (!graph.ok()) return {};
  engine::BuildOptions options;
  options.precision = precision;
  options.share_buffers = share_buffers;
  options.no_reference_layers = true;
  auto engine = engine::Engine::build(*graph, options);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  return {*graph, *engine};
}

// Outputs at most 1 LSB from `b` on at most 5% of the elements (8-bit: the INT8 pools requantize
// int32 sums, docs/engine_int8.md); 0 LSB when `exact`.
void expect_close_bytes(const Tensor& a, const Tensor& b, bool exact, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  const uint8_t* x = static_cast<const uint8_t*>(a.raw_data());
  const uint8_t* y = static_cast<const uint8_t*>(b.raw_data());
  int64_t differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int difference = std::abs(static_cast<int>(x[i]) - static_cast<int>(y[i]));
    EXPECT_LE(difference, exact ? 0 : 1) << what << " element " << i;
    differ += difference != 0;
  }
  EXPECT_LE(differ, a.numel() / 20) << what;
}

// Float outputs within `tolerance` of the reference, relative to its largest value; uint8
// outputs within 1 LSB on a few elements.
void expect_matches_reference(const Built& built, double tolerance) {
  ASSERT_TRUE(built.engine);
  for (int64_t batch : {int64_t{1}, kMaxBatch}) {
    TensorMap inputs = seeded_inputs(built.graph, batch, 31);
    auto expected = run_reference(built.graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    auto actual = run_engine(*built.engine, inputs, 2);
    ASSERT_TRUE(actual.ok()) << actual.status().to_string();
    for (const auto& [name, tensor] : *expected) {
      if (tensor.dtype() == DataType::kFloat) {
        EXPECT_LE(relative_error(actual->at(name), tensor), tolerance) << name << " batch " << batch;
      } else {
        expect_close_bytes(actual->at(name), tensor, tolerance == 0.0, fmt::format("{} batch {}", name, batch));
      }
    }
  }
}

// The C2f / ShuffleNet split between NHWC convolutions: each part read from the conv's
// channels-last output, the part the next conv reads written channels-last (no reorder before it).
TEST(SliceEngine, ChannelSplitBetweenConvolutionsStaysChannelsLast) {
  const std::string text = model(
      13, "g (float[N,4,9,7] x) => (float y)",
      {weights("w1", {8, 4, 1, 1}), weights("w2", {4, 4, 3, 3}, -1.0f, 1.0f, 8), "int64[2] sz = {4, 4}"},
      "c = Conv(x, w1)\na, b = Split<axis=1>(c, sz)\nd = Conv<pads=[1,1,1,1]>(b, w2)\ny = Concat<axis=1>(a, d)");
  Built built = build(text, engine::Precision::kFp32);
  ASSERT_TRUE(built.engine);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(count_kind(plan, "strided_copy"), 2);
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind != "strided_copy") continue;
    EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.inputs[0])].layout, engine::Layout::kNhwc) << layer.name;
  }
  // The conv's output is not reordered to NCHW for the split, nor the part back to NHWC for the conv.
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind != "reorder") continue;
    const std::string& reordered = plan.tensors[static_cast<size_t>(layer.inputs[0])].name;
    EXPECT_NE(reordered, "c") << layer.name;
    EXPECT_NE(reordered, "b") << layer.name;
  }
  expect_matches_reference(built, 1e-4);
}

// ConvNeXt's permutes around its channels-last ops: Transpose (0, 2, 3, 1) of a conv's NHWC output
// and Transpose (0, 3, 1, 2) read by a conv are copies of the bytes as stored (no reorder on
// either side); a damaged copy (shapes that are not the same bytes, a layout flipped) is refused
// at bind. A Transpose (0, 3, 1, 2) whose reader is not channels-last stays a transpose. With shared
// buffers (the default) the copies are views: their outputs are the bytes of c and r.
TEST(TransposeEngine, PermutesBetweenChannelsLastConvolutionsAreCopies) {
  const std::string text = model(
      13, "g (float[N,4,6,5] x) => (float y, float z)",
      {weights("w1", {8, 4, 1, 1}), weights("w2", {8, 8, 3, 3}, -1.0f, 1.0f, 8), weights("fc", {8, 8}, -1.0f, 1.0f, 9)},
      "c = Conv(x, w1)\nt = Transpose<perm=[0,2,3,1]>(c)\nm = MatMul(t, fc)\nr = Relu(m)\n"
      "u = Transpose<perm=[0,3,1,2]>(r)\ny = Conv<pads=[1,1,1,1]>(u, w2)\nz = Transpose<perm=[0,3,1,2]>(m)");
  Built shared = build(text, engine::Precision::kFp32);
  ASSERT_TRUE(shared.engine);
  EXPECT_EQ(count_kind(shared.engine->plan(), "plain_copy"), 0);
  for (const auto& [view, root] : {std::pair<std::string, std::string>{"t", "c"}, {"u", "r"}}) {
    const engine::EnginePlan& views = shared.engine->plan();
    ASSERT_GE(views.find_tensor(view), 0) << view;
    EXPECT_EQ(views.tensors[static_cast<size_t>(views.find_tensor(view))].alias_of, views.find_tensor(root)) << view;
  }
  expect_matches_reference(shared, 1e-5);
  Built built = build(text, engine::Precision::kFp32, false);
  ASSERT_TRUE(built.engine);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(count_kind(plan, "plain_copy"), 2);
  EXPECT_EQ(count_kind(plan, "plain_transpose"), 1);  // z: a graph output, read plain
  // Reorders only at the graph's edges (x in, y out), none around the permutes.
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind != "reorder") continue;
    const std::string& reordered = plan.tensors[static_cast<size_t>(layer.inputs[0])].name;
    EXPECT_TRUE(reordered == "x" || reordered.rfind("y", 0) == 0) << layer.name << " reorders " << reordered;
  }
  std::set<std::string> copies;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const engine::PlanLayer& layer = plan.layers[i];
    if (layer.kind != "plain_copy") continue;
    const engine::PlanTensor& in = plan.tensors[static_cast<size_t>(layer.inputs[0])];
    const engine::PlanTensor& out = plan.tensors[static_cast<size_t>(layer.outputs[0])];
    copies.insert(in.name);
    EXPECT_NE(in.layout, out.layout) << layer.name;
    auto refused = [&](const std::function<void(engine::EnginePlan&, engine::PlanLayer&)>& damage, const std::string& what) {
      engine::EnginePlan damaged = plan;
      damage(damaged, damaged.layers[i]);
      auto bound = harness_bind(damaged, i);
      EXPECT_FALSE(bound.ok()) << layer.name << ": " << what << " accepted";
      if (!bound.ok()) EXPECT_NE(bound.status().message().find(layer.name), std::string::npos) << bound.status().message();
    };
    ASSERT_TRUE(harness_bind(plan, i).ok()) << layer.name;
    refused([](engine::EnginePlan& p, engine::PlanLayer& l) {
      engine::PlanTensor& nhwc = p.tensors[static_cast<size_t>(l.inputs[0])].layout == engine::Layout::kNhwc
                                     ? p.tensors[static_cast<size_t>(l.inputs[0])]
                                     : p.tensors[static_cast<size_t>(l.outputs[0])];
      std::swap(nhwc.shape[2], nhwc.shape[3]);
    }, "an NHWC side of other dims");
    refused([](engine::EnginePlan& p, engine::PlanLayer& l) {
      engine::PlanTensor& in = p.tensors[static_cast<size_t>(l.inputs[0])];
      engine::PlanTensor& out = p.tensors[static_cast<size_t>(l.outputs[0])];
      std::swap(in.layout, out.layout);
    }, "layouts swapped");
  }
  EXPECT_EQ(copies, (std::set<std::string>{"c", "r"}));
  expect_matches_reference(built, 1e-5);
}

// ConvNeXt's residual stream at the end of a stage: the block's permute back (Transpose (0, 3, 1,
// 2)) is read by the residual Add, which takes the layout it is given; the Add is read by the next
// block's conv and by the downsample's permute (Transpose (0, 2, 3, 1), a copy of a channels-last
// input), so both readers past the Add want channels-last and the permute back is a copy. When
// more readers past the Add read plain, the permute back stays a transpose.
TEST(TransposeEngine, PermuteBackLooksPastTheResidualAdd) {
  for (const bool plain_majority : {false, true}) {
    SCOPED_TRACE(plain_majority ? "readers mostly plain" : "readers channels-last");
    const std::string extra = plain_majority ? "\np = Sigmoid(a)\nq = Tanh(a)" : "";
    const std::string outputs = plain_majority ? "(float y, float z, float p, float q)" : "(float y, float z)";
    const std::string text =
        model(13, "g (float[N,6,5,8] x) => " + outputs, {weights("w", {8, 8, 3, 3}, -1.0f, 1.0f, 8)},
              "u = Transpose<perm=[0,3,1,2]>(x)\na = Add(u, u)\ny = Conv<pads=[1,1,1,1]>(a, w)\n"
              "z = Transpose<perm=[0,2,3,1]>(a)" + extra);
    Built built = build(text, engine::Precision::kFp32, false);
    ASSERT_TRUE(built.engine);
    const engine::EnginePlan& plan = built.engine->plan();
    const engine::PlanTensor& a = plan.tensors[static_cast<size_t>(plan.find_tensor("a"))];
    EXPECT_EQ(a.layout, plain_majority ? engine::Layout::kPlain : engine::Layout::kNhwc);
    EXPECT_EQ(count_kind(plan, "plain_transpose"), plain_majority ? 2 : 0);
    expect_matches_reference(built, 1e-5);
  }
}

// ConvNeXt's layer scale and residual between channels-last convolutions: Mul by a constant of one
// value per channel ([C, 1, 1] or [1, C, 1, 1]) or a scalar runs channels-last on the conv's NHWC
// output (the constant along the stored last axis), with no reorder; a constant that broadcasts
// along another axis ([5]: W) runs plain. Bind refuses a channels-last constant not laid out as
// [1, 1, 1, C].
TEST(ChannelsLastEngine, PerChannelConstantsRunOnTheStoredLayout) {
  const std::string text = model(
      13, "g (float[N,8,6,5] x) => (float y, float z)",
      {weights("w1", {8, 8, 1, 1}), weights("w2", {8, 8, 3, 3}, -1.0f, 1.0f, 8), weights("gamma", {8, 1, 1}, 0.5f, 2.0f, 9),
       weights("gamma4", {1, 8, 1, 1}, 0.5f, 2.0f, 10), "float[1] two = {2.0}", weights("wide", {5}, 0.5f, 2.0f, 11)},
      "c = Conv(x, w1)\nm = Mul(c, gamma)\nh = Add(gamma4, m)\ns = Mul(two, h)\nr = Add(s, x)\n"
      "y = Conv<pads=[1,1,1,1]>(r, w2)\nd = Conv(x, w1)\nz = Mul(d, wide)");
  Built built = build(text, engine::Precision::kFp32);
  ASSERT_TRUE(built.engine);
  const engine::EnginePlan& plan = built.engine->plan();
  std::set<std::string> nhwc_outputs, plain_outputs;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const engine::PlanLayer& layer = plan.layers[i];
    if (layer.kind == "reorder") {
      const std::string& reordered = plan.tensors[static_cast<size_t>(layer.inputs[0])].name;
      EXPECT_TRUE(reordered == "x" || reordered.rfind("y", 0) == 0 || reordered == "d")
          << layer.name << " reorders " << reordered;
    }
    if (layer.kind != "fp32_binary") continue;
    const engine::PlanTensor& out = plan.tensors[static_cast<size_t>(layer.outputs[0])];
    (out.layout == engine::Layout::kNhwc ? nhwc_outputs : plain_outputs).insert(out.name);
    ASSERT_TRUE(harness_bind(plan, i).ok()) << layer.name;
    if (out.layout != engine::Layout::kNhwc || layer.inputs.size() != 1) continue;
    for (const char* side : {"a", "b"}) {
      if (!layer.params.has(fmt::format("{}_shape", side))) continue;
      engine::EnginePlan damaged = plan;
      damaged.layers[i].params.set(fmt::format("{}_shape", side), std::vector<int64_t>{1, 8, 1, 1});
      auto bound = harness_bind(damaged, i);
      EXPECT_FALSE(bound.ok()) << layer.name << ": a constant [1, 8, 1, 1] accepted";
      if (!bound.ok()) EXPECT_NE(bound.status().message().find(layer.name), std::string::npos) << bound.status().message();
    }
  }
  EXPECT_EQ(nhwc_outputs, (std::set<std::string>{"m", "h", "s", "r"}));
  EXPECT_EQ(plain_outputs, std::set<std::string>{"z"});
  expect_matches_reference(built, 1e-5);
}

// Random slices (channels, rows, columns, steps) between two 1x1 convolutions: channels-last in
// and out.
TEST(SliceEngine, RandomSlicesBetweenConvolutionsReadAndWriteChannelsLast) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t channels = 2 + static_cast<int64_t>(rng() % 19), height = 1 + static_cast<int64_t>(rng() % 9);
    const int64_t width = 1 + static_cast<int64_t>(rng() % 11);
    const std::vector<int64_t> dims = {channels, height, width};
    std::vector<int64_t> starts, ends, axes, steps;
    std::vector<int64_t> sliced = dims;
    for (size_t a = 0; a < 3; ++a) {
      const int64_t start = static_cast<int64_t>(rng() % static_cast<uint32_t>(dims[a]));
      const int64_t step = 1 + static_cast<int64_t>(rng() % 2);
      const int64_t end = start + 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(dims[a] - start));
      axes.push_back(static_cast<int64_t>(a) + 1);
      starts.push_back(start);
      ends.push_back(end);
      steps.push_back(step);
      sliced[a] = (end - start + step - 1) / step;
    }
    const std::string text = model(
        13, fmt::format("g (float[N,3,{},{}] x) => (float y)", height, width),
        {weights("w1", {channels, 3, 1, 1}), weights("w2", {5, sliced[0], 1, 1}, -1.0f, 1.0f, 9),
         fmt::format("int64[3] s = {{{}}}", ints(starts)), fmt::format("int64[3] e = {{{}}}", ints(ends)),
         fmt::format("int64[3] a = {{{}}}", ints(axes)), fmt::format("int64[3] st = {{{}}}", ints(steps))},
        "c = Conv(x, w1)\nt = Slice(c, s, e, a, st)\ny = Conv(t, w2)");
    SCOPED_TRACE(text);
    Built built = build(text, engine::Precision::kFp32);
    ASSERT_TRUE(built.engine);
    const engine::EnginePlan& plan = built.engine->plan();
    for (const engine::PlanLayer& layer : plan.layers) {
      if (layer.kind != "strided_copy") continue;
      EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.inputs[0])].layout, engine::Layout::kNhwc);
      EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.outputs[0])].layout, engine::Layout::kNhwc);
    }
    EXPECT_EQ(count_kind(plan, "strided_copy"), 1);
    expect_matches_reference(built, 1e-4);
  }
}

// Q -> DQ -> Slice -> Q with equal parameters: the slice runs on the int8 tensor (propagate_qdq
// moves the Q above it), no DequantizeLinear layer is left, and the output is the reference's.
TEST(SliceEngine, SliceBetweenEqualQdqStaysInt8) {
  const std::string text = model(
      13, "g (float[N,12,5,6] x) => (uint8 y, uint8 z)",
      {"float s = {0.03}", "uint8 zp = {128}", "int64[1] zero = {0}", "int64[1] half = {6}", "int64[1] end = {12}",
       "int64[1] one = {1}"},
      "q = QuantizeLinear(x, s, zp)\nd = DequantizeLinear(q, s, zp)\na = Slice(d, zero, half, one)\n"
      "b = Slice(d, half, end, one)\ny = QuantizeLinear(a, s, zp)\nz = QuantizeLinear(b, s, zp)");
  Built built = build(text);
  ASSERT_TRUE(built.engine);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(count_kind(plan, "strided_copy"), 2);
  for (const engine::PlanLayer& layer : plan.layers) {
    EXPECT_NE(layer.op_type, "DequantizeLinear") << layer.name;
    if (layer.kind == "strided_copy") {
      EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.inputs[0])].dtype, DataType::kUint8) << layer.name;
    }
  }
  expect_matches_reference(built, 0.0);
}

// Q -> DQ -> Split -> Q per part with equal parameters (fuse_qdq_split): the int8 Split is two
// int8 copies, no DequantizeLinear layer, the reference's bytes.
TEST(SliceEngine, SplitBetweenEqualQdqStaysInt8) {
  const std::string text = model(
      13, "g (float[N,10,4,3] x) => (uint8 y, uint8 z)",
      {"float s = {0.03}", "uint8 zp = {128}", "int64[2] sz = {3, 7}"},
      "q = QuantizeLinear(x, s, zp)\nd = DequantizeLinear(q, s, zp)\na, b = Split<axis=1>(d, sz)\n"
      "y = QuantizeLinear(a, s, zp)\nz = QuantizeLinear(b, s, zp)");
  Built built = build(text);
  ASSERT_TRUE(built.engine);
  const engine::EnginePlan& plan = built.engine->plan();
  EXPECT_EQ(count_kind(plan, "strided_copy"), 2);
  for (const engine::PlanLayer& layer : plan.layers) {
    EXPECT_NE(layer.op_type, "DequantizeLinear") << layer.name;
    if (layer.kind == "strided_copy") {
      EXPECT_EQ(plan.tensors[static_cast<size_t>(layer.inputs[0])].dtype, DataType::kUint8) << layer.name;
    }
  }
  expect_matches_reference(built, 0.0);
}

// The pool forms: Inception's Pad + AveragePool, DenseNet's zero Pad, MNASNet's mean over H, W.
std::string pool_forms_model() {
  return model(13, "g (float[N,5,7,6] x) => (float y, float z, float m)",
               {"int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}", "int64[8] zero = {0, 0, 0, 0, 0, 0, 0, 0}"},
               "p = Pad(x, pads)\ny = AveragePool<kernel_shape=[3,3]>(p)\n"
               "q = Pad(x, zero)\nz = AveragePool<kernel_shape=[2,2], strides=[2,2]>(q)\n"
               "m = ReduceMean<axes=[2,3], keepdims=0>(x)");
}

TEST(PoolForms, Fp32RunWithoutReferenceLayers) {
  Built built = build(pool_forms_model(), engine::Precision::kFp32);
  ASSERT_TRUE(built.engine);
  EXPECT_EQ(count_kind(built.engine->plan(), "fp32_pool"), 2);
  EXPECT_EQ(count_kind(built.engine->plan(), "fp32_global_avgpool"), 1);
  expect_matches_reference(built, 1e-5);
}

// Between Q/DQ the folded pool and the lowered mean are INT8 pool layers: their outputs are within
// the INT8 pools' 1 LSB of the reference executor and the same bytes as the engine that runs the
// Pads unfolded (constant_pad layers on the int8 tensor, then pools without pads) and the
// ReduceMean unlowered (an fp32_reduce_mean layer, then a quantize).
TEST(PoolForms, Int8BetweenQdqIsOneInt8LayerEach) {
  const std::string text = model(
      13, "g (float[N,6,7,5] x) => (uint8 y, uint8 z, uint8 m)",
      {"float s = {0.03}", "uint8 zp = {128}", "float so = {0.02}", "uint8 zo = {120}",
       "int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}", "int64[8] zero = {0, 0, 0, 0, 0, 0, 0, 0}"},
      "q = QuantizeLinear(x, s, zp)\nd = DequantizeLinear(q, s, zp)\n"
      "p = Pad(d, pads)\npa = AveragePool<kernel_shape=[3,3]>(p)\ny = QuantizeLinear(pa, so, zo)\n"
      "r = Pad(d, zero)\nra = AveragePool<kernel_shape=[2,2], strides=[2,2]>(r)\nz = QuantizeLinear(ra, so, zo)\n"
      "mm = ReduceMean<axes=[2,3], keepdims=1>(d)\nm = QuantizeLinear(mm, so, zo)");
  Built built = build(text);
  ASSERT_TRUE(built.engine);
  EXPECT_EQ(count_kind(built.engine->plan(), "qavgpool"), 2);
  EXPECT_EQ(count_kind(built.engine->plan(), "qgavgpool"), 1);
  expect_matches_reference(built, 1e-4);

  engine::BuildOptions unfolded;
  unfolded.disabled_passes = {"fold_pad_into_pool", "lower_spatial_mean", "remove_empty_pads"};
  auto reference_layers = engine::Engine::build(built.graph, unfolded);
  ASSERT_TRUE(reference_layers.ok()) << reference_layers.status().to_string();
  EXPECT_EQ(count_kind((*reference_layers)->plan(), "constant_pad"), 2);
  EXPECT_EQ(count_kind((*reference_layers)->plan(), "reference"), 0);
  EXPECT_EQ(count_kind((*reference_layers)->plan(), "fp32_reduce_mean"), 1);
  TensorMap inputs = seeded_inputs(built.graph, kMaxBatch, 32);
  auto folded_outputs = run_engine(*built.engine, inputs, 1);
  auto unfolded_outputs = run_engine(**reference_layers, inputs, 1);
  ASSERT_TRUE(folded_outputs.ok() && unfolded_outputs.ok());
  for (const char* name : {"y", "z"}) {
    expect_close_bytes(folded_outputs->at(name), unfolded_outputs->at(name), true, name);
  }
}

}  // namespace
}  // namespace qdqrt::testing
