// fp32_reduce_mean and fp32_pow (engine/layers/float_reduce.cpp, float_pow.cpp) against the
// reference executor, bit for bit: random shapes (rows shorter and longer than the kernels' blocks,
// counts off their multiples), each layer's items in one range and split in three, batch 1 and the
// maximum batch. The forms they do not take stay reference layers that say why; bind refuses
// damaged params naming the layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

constexpr int64_t kMaxBatch = 3;

// Equal bits, or both NaN.
void expect_bit_equal(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), DataType::kFloat) << what;
  int64_t differing = 0, first = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const float a = actual.data<float>()[i], e = expected.data<float>()[i];
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::memcmp(&a, &e, sizeof(float)) != 0 && differing++ == 0) first = i;
  }
  EXPECT_EQ(differing, 0) << what << ": first at " << first << ": " << actual.data<float>()[first] << " vs "
                          << expected.data<float>()[first];
}

// Builds `text`, expects a `kind` layer and no reference layer, and compares every output with the
// reference executor's bits at batch 1 and kMaxBatch, the items in one range and in three.
void expect_exact(const std::string& text, const std::string& kind) {
  auto graph = load_text_graph(text, kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string() << "\n" << text;
  auto built = harness_build(*graph, kMaxBatch);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const auto kinds = layer_kinds(built->plan);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), kind), 1) << fmt::format("{}", fmt::join(kinds, ", "));
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "reference"), 0) << text;
  for (int64_t batch : {int64_t{1}, kMaxBatch}) {
    TensorMap inputs = random_inputs(*graph, batch, 5);
    auto expected = run_reference(*graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    for (int64_t chunks : {1, 3}) {
      auto actual = harness_run(*built, inputs, chunks);
      ASSERT_TRUE(actual.ok()) << actual.status().to_string();
      for (const auto& [name, tensor] : *expected) {
        expect_bit_equal(actual->at(name), tensor, fmt::format("{} batch {} chunks {}", name, batch, chunks));
      }
    }
  }
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "N";
  for (int64_t dim : dims) text += fmt::format(",{}", dim);
  return text;
}

TEST(ReduceMeanLayer, RandomShapesMatchTheReferenceBitForBit) {
  std::mt19937 rng(23);
  auto uniform = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(rng); };
  for (int trial = 0; trial < 40; ++trial) {
    // Dims after the batch: 1 to 3 of them, mostly short, sometimes a transformer's row.
    std::vector<int64_t> dims(static_cast<size_t>(uniform(1, 3)));
    for (int64_t& dim : dims) dim = uniform(0, 5) == 0 ? uniform(200, 800) : uniform(1, 19);
    const int64_t rank = static_cast<int64_t>(dims.size()) + 1;
    const int64_t first = uniform(1, rank - 1), last = uniform(first, rank - 1);
    std::vector<int64_t> axes;
    for (int64_t axis = first; axis <= last; ++axis) axes.push_back(uniform(0, 1) ? axis : axis - rank);
    std::shuffle(axes.begin(), axes.end(), rng);
    const int keepdims = static_cast<int>(uniform(0, 1));
    const std::string text =
        model(13, fmt::format("g (float[{}] x) => (float y)", dims_text(dims)), {},
              fmt::format("y = ReduceMean<axes=[{}], keepdims={}>(x)", fmt::join(axes, ","), keepdims));
    SCOPED_TRACE(text);
    expect_exact(text, "fp32_reduce_mean");
  }
}

TEST(ReduceMeanLayer, EveryAxisButTheBatch) {
  expect_exact(model(13, "g (float[N,3,4,5] x) => (float y)", {}, "y = ReduceMean<axes=[1,2,3], keepdims=0>(x)"),
               "fp32_reduce_mean");
  expect_exact(model(13, "g (float[N,2,3,4,5] x) => (float y)", {}, "y = ReduceMean<axes=[-4,-3,-2,-1]>(x)"),
               "fp32_reduce_mean");
}

TEST(PowLayer, ConstantExponentsMatchTheReferenceBitForBit) {
  std::mt19937 rng(29);
  const std::vector<std::string> exponents = {"float e = {2.0}",  "int64 e = {2}",    "int64[1] e = {3}",
                                              "float e = {0.5}",  "float e = {-1.5}", "double e = {1.25}",
                                              "int32 e = {-2}",   "float[1,1] e = {2.0}"};
  for (const std::string& exponent : exponents) {
    const int64_t rows = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    const int64_t columns = std::uniform_int_distribution<int64_t>(1, 70)(rng);
    const std::string text =
        model(13, fmt::format("g (float[N,{},{}] x) => (float y)", rows, columns), {exponent}, "y = Pow(x, e)");
    SCOPED_TRACE(text);
    expect_exact(text, "fp32_pow");
  }
  // Long enough for several items.
  expect_exact(model(13, "g (float[N,40000] x) => (float y)", {"float e = {2.0}"}, "y = Pow(x, e)"), "fp32_pow");
}

// The forms left to the reference layer, each with its reason.
TEST(ReduceMeanAndPow, UnsupportedFormsStayReferenceAndSayWhy) {
  struct Case {
    std::string text, reason;
  };
  const std::vector<Case> cases = {
      {model(13, "g (float[N,3,4,5] x) => (float y)", {}, "y = ReduceMean<axes=[1,3]>(x)"), "are not consecutive"},
      {model(13, "g (float[N,3,4] x) => (float y)", {}, "y = ReduceMean<axes=[0,1]>(x)"), "reduces the batch axis"},
      {model(13, "g (float[N,6] x, float[N,6] e) => (float y)", {}, "y = Pow(x, e)"), "computed at run time"},
      {model(13, "g (float[N,6] x) => (float y)", {"float[6] e = {1.0, 2.0, 3.0, 1.0, 2.0, 3.0}"}, "y = Pow(x, e)"),
       "single-value exponent"},
      {model(13, "g (float[N,6] x) => (float y)", {"double e = {0.1}"}, "y = Pow(x, e)"), "not exactly a float"},
      {model(13, "g (int32[N,6] x) => (int32 y)", {"int32 e = {2}"}, "y = Pow(x, e)"), "do not take these inputs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto graph = load_text_graph(c.text, kMaxBatch);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto built = harness_build(*graph, kMaxBatch);
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    ASSERT_EQ(built->plan.layers.size(), 1u);
    const engine::PlanLayer& layer = built->plan.layers[0];
    EXPECT_EQ(layer.kind, "reference");
    auto reason = layer.params.get_string("reason");
    ASSERT_TRUE(reason.ok()) << reason.status().to_string();
    EXPECT_NE(reason->find(c.reason), std::string::npos) << *reason;
  }
}

// Damages layer `index` of a built plan; bind must refuse it with `message` and the layer's name.
void expect_bind_error(engine::EnginePlan plan, size_t index, const std::function<void(engine::PlanLayer&)>& damage,
                       const std::string& message) {
  damage(plan.layers[index]);
  auto bound = harness_bind(plan, index);
  ASSERT_FALSE(bound.ok()) << "damage accepted: " << message;
  EXPECT_NE(bound.status().message().find(message), std::string::npos) << bound.status().message();
  EXPECT_NE(bound.status().message().find(plan.layers[index].name), std::string::npos) << bound.status().message();
}

TEST(ReduceMeanAndPow, BindRefusesDamagedLayers) {
  auto graph = load_text_graph(model(13, "g (float[N,3,4,5] x) => (float y)", {"float two = {2.0}"},
                                     "m = ReduceMean<axes=[2,3], keepdims=1>(x)\ny = Pow(m, two)"),
                               kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto built = harness_build(*graph, kMaxBatch);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  ASSERT_EQ(layer_kinds(built->plan), (std::vector<std::string>{"fp32_reduce_mean", "fp32_pow"}));
  ASSERT_TRUE(harness_bind(built->plan, 0).ok());
  ASSERT_TRUE(harness_bind(built->plan, 1).ok());
  using Ints = std::vector<int64_t>;
  expect_bind_error(built->plan, 0, [](engine::PlanLayer& l) { l.params.set("axes", Ints{3, 2}); },
                    "not ascending and consecutive");
  expect_bind_error(built->plan, 0, [](engine::PlanLayer& l) { l.params.set("axes", Ints{1, 3}); },
                    "not ascending and consecutive");
  expect_bind_error(built->plan, 0, [](engine::PlanLayer& l) { l.params.set("axes", Ints{4}); }, "do not fit");
  expect_bind_error(built->plan, 0, [](engine::PlanLayer& l) { l.params.set("axes", Ints{0}); }, "batch axis 0");
  expect_bind_error(built->plan, 0, [](engine::PlanLayer& l) { l.params.set("axes", Ints{1}); },
                    "is not input");
  expect_bind_error(built->plan, 0, [](engine::PlanLayer& l) { l.params.set("axes", Ints{}); }, "do not fit");
  expect_bind_error(built->plan, 0, [](engine::PlanLayer& l) { l.params.set("axes", std::string("2")); }, "axes");
  expect_bind_error(built->plan, 1, [](engine::PlanLayer& l) { l.params = {}; }, "exponent");
  expect_bind_error(built->plan, 1, [](engine::PlanLayer& l) { l.inputs.push_back(l.inputs[0]); }, "one input");
}

}  // namespace
}  // namespace qdqrt::testing
