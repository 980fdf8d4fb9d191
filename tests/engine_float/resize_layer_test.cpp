// The Resize layers (engine/layers/resize_layers.cpp) against the reference executor: every
// coordinate_transformation_mode and nearest_mode they take, scales and sizes, opsets 10..19,
// fp32 and int8/uint8 nearest, at batch 1 and the maximum batch with the items in one range and
// split in three; outputs must be bit-identical (NaN: any NaN; inputs include -0, infinities and NaN). Forms the
// layers do not take stay on the reference layer; bad scales/sizes are errors naming the node.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/engine.h"
#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

constexpr int64_t kMaxBatch = 3;

TensorMap resize_inputs(const Graph& graph, int64_t batch, uint32_t seed) {
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
        float value = static_cast<float>(static_cast<int32_t>(bits % 20001) - 10000) / 3333.0f;
        if (bits % 97 == 0) value = -0.0f;
        tensor.data<float>()[i] = value;
      } else {
        static_cast<uint8_t*>(tensor.raw_data())[i] = static_cast<uint8_t>(bits >> 8);
      }
    }
    inputs[name] = tensor;
  }
  return inputs;
}

// Bit-identical, except that a NaN matches any NaN (which NaN an addition of two NaNs keeps
// follows operand order, which the compiler may swap).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  if (a.dtype() != DataType::kFloat) return std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::memcmp(&x, &y, sizeof(float)) != 0) return false;
  }
  return true;
}

// max_batch_only: `sizes` fix the batch (opsets before 18 list every axis).
void expect_identical(const std::string& text, const std::string& kind, bool special_values = false,
                      bool max_batch_only = false) {
  auto graph = load_text_graph(text, kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string() << "\n" << text;
  auto built = harness_build(*graph, kMaxBatch);
  ASSERT_TRUE(built.ok()) << built.status().to_string() << "\n" << text;
  const auto kinds = layer_kinds(built->plan);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end())
      << "no " << kind << " layer; got " << fmt::format("{}", fmt::join(kinds, ", ")) << "\n"
      << text;
  for (int64_t batch : {int64_t{1}, kMaxBatch}) {
    if (max_batch_only && batch != kMaxBatch) continue;
    TensorMap inputs = resize_inputs(*graph, batch, 5 + static_cast<uint32_t>(batch));
    if (special_values) {
      Tensor& x = inputs.begin()->second;
      if (x.dtype() == DataType::kFloat && x.numel() > 8) {
        x.data<float>()[1] = std::numeric_limits<float>::infinity();
        x.data<float>()[5] = -std::numeric_limits<float>::infinity();
        x.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
      }
    }
    auto expected = run_reference(*graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    for (int64_t chunks : {1, 3}) {
      auto actual = harness_run(*built, inputs, chunks);
      ASSERT_TRUE(actual.ok()) << actual.status().to_string();
      for (const auto& [name, tensor] : *expected) {
        EXPECT_TRUE(same_bits(actual->at(name), tensor)) << name << " batch " << batch << " chunks " << chunks;
      }
    }
  }
}

const char* const kCoordinateModes[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                        "tf_half_pixel_for_nn"};
const char* const kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

std::string scales_model(int opset, const std::string& dtype, const std::string& shape, const std::string& attributes,
                         const std::string& scales) {
  const std::string signature = fmt::format("g ({}[N,{}] x) => ({} y)", dtype, shape, dtype);
  if (opset < 11)
    return model(opset, signature, {"float[4] s = {" + scales + "}"}, "y = Resize<" + attributes + ">(x, s)");
  return model(opset, signature, {"float[0] roi = {}", "float[4] s = {" + scales + "}"},
               "y = Resize<" + attributes + ">(x, roi, s)");
}

TEST(ResizeLayer, NearestEveryMode) {
  for (const char* coordinate : kCoordinateModes) {
    for (const char* nearest : kNearestModes) {
      for (const char* scales : {"1.0, 1.0, 2.0, 2.0", "1.0, 1.0, 0.6, 1.7", "1.0, 1.0, 3.0, 0.5"}) {
        SCOPED_TRACE(fmt::format("{} {} {}", coordinate, nearest, scales));
        const std::string attributes = fmt::format(
            "mode=\"nearest\", coordinate_transformation_mode=\"{}\", nearest_mode=\"{}\"", coordinate, nearest);
        const std::string text = scales_model(13, "float", "3,7,11", attributes, scales);
        // tf_half_pixel_for_nn with round_prefer_ceil or ceil moves N and C: the reference keeps them.
        const bool moves_n = std::string(coordinate) == "tf_half_pixel_for_nn" &&
                             (std::string(nearest) == "round_prefer_ceil" || std::string(nearest) == "ceil");
        expect_identical(text, moves_n ? "reference" : "resize_nearest", true);
      }
    }
  }
}

TEST(ResizeLayer, BilinearEveryMode) {
  for (const char* coordinate : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    for (const char* scales :
         {"1.0, 1.0, 2.0, 2.0", "1.0, 1.0, 0.6, 1.7", "1.0, 1.0, 3.0, 0.5", "1.0, 1.0, 8.0, 8.0"}) {
      SCOPED_TRACE(fmt::format("{} {}", coordinate, scales));
      const std::string attributes = fmt::format("mode=\"linear\", coordinate_transformation_mode=\"{}\"", coordinate);
      expect_identical(scales_model(13, "float", "3,7,11", attributes, scales), "resize_bilinear", true);
    }
  }
  // Wide rows: the vector loop and its tail; a 1-pixel input (pytorch_half_pixel's 0 coordinate).
  expect_identical(scales_model(13, "float", "2,5,37", "mode=\"linear\"", "1.0, 1.0, 2.0, 2.0"), "resize_bilinear");
  expect_identical(
      scales_model(13, "float", "2,1,1", "mode=\"linear\", coordinate_transformation_mode=\"pytorch_half_pixel\"",
                   "1.0, 1.0, 4.0, 4.0"),
      "resize_bilinear");
}

TEST(ResizeLayer, OpsetsAndSizes) {
  // Opset 10: scales only, asymmetric/floor.
  expect_identical(scales_model(10, "float", "3,6,6", "mode=\"nearest\"", "1.0, 1.0, 2.0, 2.0"), "resize_nearest");
  expect_identical(scales_model(10, "float", "3,6,6", "mode=\"linear\"", "1.0, 1.0, 2.0, 3.0"), "resize_bilinear");
  // Opset 11: sizes after an empty scales; opset 13: scales absent.
  expect_identical(
      model(11, "g (float[N,3,5,7] x) => (float y)",
            {"float[0] roi = {}", "float[0] s = {}", fmt::format("int64[4] sz = {{{}, 3, 9, 20}}", kMaxBatch)},
            "y = Resize<mode=\"linear\", coordinate_transformation_mode=\"align_corners\">(x, roi, s, sz)"),
      "resize_bilinear", false, true);
  expect_identical(model(13, "g (float[N,3,5,7] x) => (float y)",
                         {"float[0] roi = {}", fmt::format("int64[4] sz = {{{}, 3, 4, 3}}", kMaxBatch)},
                         "y = Resize<mode=\"nearest\", nearest_mode=\"ceil\">(x, roi, , sz)"),
                   "resize_nearest", false, true);
}

TEST(ResizeLayer, Int8Nearest) {
  for (const char* dtype : {"int8", "uint8"}) {
    for (const char* coordinate : kCoordinateModes) {
      SCOPED_TRACE(fmt::format("{} {}", dtype, coordinate));
      expect_identical(scales_model(13, dtype, "4,6,9",
                                    fmt::format("mode=\"nearest\", coordinate_transformation_mode=\"{}\"", coordinate),
                                    "1.0, 1.0, 2.0, 1.5"),
                       "resize_nearest");
    }
  }
}

TEST(ResizeLayer, OtherFormsStayOnTheReference) {
  // Cubic, tf_crop_and_resize, a resize of C, rank 3.
  expect_identical(scales_model(13, "float", "3,6,6", "mode=\"cubic\"", "1.0, 1.0, 2.0, 2.0"), "reference");
  expect_identical(scales_model(13, "float", "3,6,6", "mode=\"nearest\"", "1.0, 2.0, 2.0, 2.0"), "reference");
  expect_identical(
      model(13, "g (float[N,3,6,6] x) => (float y)",
            {"float[8] roi = {0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7}", "float[4] s = {1.0, 1.0, 2.0, 2.0}"},
            "y = Resize<mode=\"linear\", coordinate_transformation_mode=\"tf_crop_and_resize\">(x, roi, s)"),
      "reference");
  expect_identical(model(13, "g (float[N,6,6] x) => (float y)", {"float[0] roi = {}", "float[3] s = {1.0, 2.0, 2.0}"},
                         "y = Resize<mode=\"linear\">(x, roi, s)"),
                   "reference");
}

// Bad scales or sizes: the graph does not load or the build fails, naming the node.
TEST(ResizeLayer, BadScalesAndSizesNameTheNode) {
  const std::vector<std::string> bodies = {"float[4] s = {1.0, 1.0, 0.0, 2.0}", "float[4] s = {1.0, 1.0, -2.0, 2.0}"};
  std::vector<std::string> texts;
  for (const std::string& scales : bodies) {
    texts.push_back(model(13, "g (float[N,3,6,6] x) => (float y)", {"float[0] roi = {}", scales},
                          "y = Resize<mode=\"linear\">(x, roi, s)"));
  }
  texts.push_back(model(13, "g (float[N,3,6,6] x) => (float y)",
                        {"float[0] roi = {}", "float[0] s = {}", "int64[4] sz = {3, 3, 0, 4}"},
                        "y = Resize<mode=\"nearest\">(x, roi, s, sz)"));
  // Scales and sizes both given: exactly one of them is allowed.
  texts.push_back(model(13, "g (float[N,3,6,6] x) => (float y)",
                        {"float[0] roi = {}", "float[4] s = {1.0, 1.0, 2.0, 2.0}", "int64[4] sz = {3, 3, 12, 12}"},
                        "y = Resize<mode=\"nearest\">(x, roi, s, sz)"));
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    auto graph = load_text_graph(text, kMaxBatch);
    if (!graph.ok()) {
      EXPECT_NE(graph.status().message().find("Resize"), std::string::npos) << graph.status().to_string();
      continue;
    }
    auto built = harness_build(*graph, kMaxBatch);
    ASSERT_FALSE(built.ok()) << "built: " << fmt::format("{}", fmt::join(layer_kinds(built->plan), ", "));
    EXPECT_NE(built.status().message().find("Resize '"), std::string::npos) << built.status().to_string();
  }
  // tf_crop_and_resize without its roi (the reference layer's form): the run fails naming the node.
  {
    auto graph = load_text_graph(
        model(13, "g (float[N,3,6,6] x) => (float y)", {"float[0] roi = {}", "float[4] s = {1.0, 1.0, 2.0, 2.0}"},
              "y = Resize<mode=\"linear\", coordinate_transformation_mode=\"tf_crop_and_resize\">(x, roi, s)"),
        kMaxBatch);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto built = engine::Engine::build(*graph, {});
    Status status = built.ok() ? Status::ok() : built.status();
    if (built.ok()) {
      const TensorMap inputs = resize_inputs(*graph, 1, 3);
      const Tensor& x = inputs.at("x");
      Tensor y(DataType::kFloat, {1, 3, 12, 12});
      auto context = (*built)->create_context({.threads = 1});
      status = context->run({{"x", x.raw_data(), x.shape()}}, {{"y", y.raw_data(), y.shape()}});
    }
    ASSERT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("Resize '"), std::string::npos) << status.to_string();
    EXPECT_NE(status.message().find("roi"), std::string::npos) << status.to_string();
  }
  // A NaN scale (the text format cannot spell one): the build names the node and the value.
  auto graph = load_text_graph(
      model(13, "g (float[N,3,6,6] x) => (float y)", {"float[0] roi = {}", "float[4] s = {1.0, 1.0, 2.0, 2.0}"},
            "y = Resize<mode=\"linear\">(x, roi, s)"),
      kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  graph->initializers.at("s").data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  auto built = harness_build(*graph, kMaxBatch);
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("Resize '"), std::string::npos) << built.status().to_string();
  EXPECT_NE(built.status().message().find("scales[3]"), std::string::npos) << built.status().to_string();
}

}  // namespace
}  // namespace qdqrt::testing
