// The reference layer: every attribute kind and constant inputs survive the params/blobs
// encoding; bind refuses damaged layers with a message naming the layer; the fp32 model runs; the
// layer records why no native layer took its node, and BuildOptions::no_reference_layers refuses it.
#include <gtest/gtest.h>

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "engine/layers/layer_families.h"
#include "optimizer/pipeline.h"
#include "tests/common/layer_params_check.h"
#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

void expect_same(const Graph& graph, const HarnessPlan& built, int64_t batch, double tolerance) {
  TensorMap inputs = random_inputs(graph, batch, 3);
  auto expected = run_reference(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  auto actual = harness_run(built, inputs, 2);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  for (const auto& [name, tensor] : *expected) {
    EXPECT_LE(relative_error(actual->at(name), tensor), tolerance) << name << " batch " << batch;
  }
}

// Resize cubic (strings), ConstantOfShape (tensor attribute, constant input), Elu (float), Hardmax
// (int), ReduceMean (ints), Constant (floats, no inputs): all through the reference layer.
const char* const kAttributeModel = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,3,4] x) => (float r, float c, float e, float l, float t, float f)
<int64[1] shape = {5}, float[4] scales = {1.0, 1.0, 2.0, 1.5}>
{
  r = Resize<mode="cubic", coordinate_transformation_mode="asymmetric", nearest_mode="floor">(x, , scales)
  c = ConstantOfShape<value=float[1] {2.5}>(shape)
  e = Elu<alpha=0.5>(x)
  l = Hardmax<axis=-1>(x)
  t = ReduceMean<axes=[1, 3], keepdims=1>(x)
  f = Constant<value_floats=[1.0, 2.5, -3.25]>()
}
)";

TEST(ReferenceLayer, AttributesAndConstantsRoundTrip) {
  auto graph = load_text_graph(kAttributeModel, 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto built = harness_build(*graph, 2);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  for (const auto& layer : built->plan.layers) {
    EXPECT_EQ(layer.kind, "reference") << layer.name;
    EXPECT_EQ(layer.kernel, "reference");
  }
  expect_same(*graph, *built, 1, 0.0);
  expect_same(*graph, *built, 2, 0.0);
}

// Corrupts one layer of a built plan and expects bind to refuse it with `message`.
void expect_bind_error(engine::EnginePlan plan, size_t index, const std::function<void(engine::PlanLayer&)>& damage,
                       const std::string& message) {
  damage(plan.layers[index]);
  auto bound = harness_bind(plan, index);
  ASSERT_FALSE(bound.ok()) << "damage accepted: " << message;
  EXPECT_NE(bound.status().message().find(message), std::string::npos) << bound.status().message();
  EXPECT_NE(bound.status().message().find(plan.layers[index].name), std::string::npos) << bound.status().message();
}

TEST(ReferenceLayer, BindRefusesDamagedLayers) {
  auto graph = load_text_graph(kAttributeModel, 2);
  ASSERT_TRUE(graph.ok());
  auto built = harness_build(*graph, 2);
  ASSERT_TRUE(built.ok());
  const auto& plan = built->plan;
  size_t resize = 0, constant = 0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].op_type == "Resize") resize = i;
    if (plan.layers[i].op_type == "ConstantOfShape") constant = i;
  }
  expect_bind_error(plan, resize, [](engine::PlanLayer& l) { l.params = {}; }, "op_type");
  expect_bind_error(plan, resize, [](engine::PlanLayer& l) { l.params.set("op_type", std::string("NoSuchOp")); },
                    "NoSuchOp");
  expect_bind_error(plan, resize, [](engine::PlanLayer& l) { l.params.set("opset", int64_t{99}); }, "opset 99");
  expect_bind_error(plan, resize, [](engine::PlanLayer& l) { l.params.set("input_indices", std::vector<int64_t>{5, 0, 0}); },
                    "names layer input 5");
  expect_bind_error(plan, resize, [](engine::PlanLayer& l) { l.params.set("attr0.kind", int64_t{42}); }, "unknown kind 42");
  expect_bind_error(plan, resize, [](engine::PlanLayer& l) { l.params.set("attr0.value", int64_t{1}); }, "is a int");
  // A typed-attribute check the parser does: Resize mode must be a known value.
  expect_bind_error(plan, resize, [](engine::PlanLayer& l) {
    for (int i = 0; i < 3; ++i) {
      if (*l.params.get_string(fmt::format("attr{}.name", i)) == "mode") l.params.set(fmt::format("attr{}.value", i), std::string("cubicle"));
    }
  }, "cubicle");
  expect_bind_error(plan, constant, [](engine::PlanLayer& l) {
    l.blobs[0] = engine::make_blob("const0", "12345", 5);
  }, "const0");
  expect_bind_error(plan, constant, [](engine::PlanLayer& l) { l.params.set("const0.dtype", int64_t{999}); }, "dtype 999");
  expect_bind_error(plan, constant, [](engine::PlanLayer& l) { l.params.set("output_slots", std::vector<int64_t>{3}); },
                    "out of range");
}

// Every float kind and the reference layer: whatever damage to a param or blob bind refuses, the
// message names the layer; every key is documented in docs/engine_format.md.
TEST(ReferenceLayer, EveryRefusalNamesTheLayerAndEveryKeyIsDocumented) {
  for (const std::string& text : {std::string(kAttributeModel), all_kinds_model()}) {
    auto graph = load_text_graph(text, 2);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto built = harness_build(*graph, 2);
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    for (size_t i = 0; i < built->plan.layers.size(); ++i) {
      SCOPED_TRACE(built->plan.layers[i].kind + " " + built->plan.layers[i].name);
      BindDamageResult result = damage_each_param_and_blob(built->plan, i);
      if (!built->plan.layers[i].params.values().empty()) {
        EXPECT_GT(result.refused, 0);
      }
      EXPECT_TRUE(result.unnamed.empty()) << fmt::format("{}", fmt::join(result.unnamed, "\n"));
    }
    std::vector<std::string> missing = undocumented_keys(built->plan, QDQRT_ENGINE_FORMAT_DOC);
    EXPECT_TRUE(missing.empty()) << fmt::format("{}", fmt::join(missing, "\n"));
  }
}

// A node whose output does not follow the batch: the layer writes NaN instead of stale data.
TEST(ReferenceLayer, OutputShapeMismatchPoisonsOutput) {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4] x) => (float y)
<int64[2] shape = {3, 4}>
{
  y = Expand(x, shape)
}
)";
  auto graph = load_text_graph(text, 3);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto built = harness_build(*graph, 3);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  // At batch 1 Expand still gives [3, 4] while the plan expects [1, 4] (y is batched).
  ASSERT_TRUE(built->plan.tensors[static_cast<size_t>(built->plan.outputs[0])].batched);
  auto outputs = harness_run(*built, random_inputs(*graph, 1, 5), 1);
  ASSERT_TRUE(outputs.ok());
  const Tensor& y = outputs->at("y");
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_TRUE(std::isnan(y.data<float>()[i]));
}

TEST(ReferenceLayer, NativeLoweringsFallBackForUnsupportedValues) {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 20]>
g (float[N,6] x) => (float[2,6] y)
{
  y = Gelu<approximate="tanh">(x)
}
)";
  auto graph = load_text_graph(text, 2);
  ASSERT_TRUE(graph.ok());
  auto built = harness_build(*graph, 2);
  ASSERT_TRUE(built.ok());
  ASSERT_EQ(built->plan.layers.size(), 1u);
  EXPECT_EQ(built->plan.layers[0].kind, "reference");
  expect_same(*graph, *built, 2, 0.0);
}

// Every node of the optimized QDQ model (QConv, QMatMul, QAdd, QGlobalAveragePool, Q/DQ, ...: the
// qdqrt-domain fused layers with their attribute lists) through the reference layer: bit-exact.
TEST(ReferenceLayer, FusedQdqModelBitExact) {
  const std::string path = std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_qdq.onnx";
  auto graph = load_file_graph(path, 4);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  ASSERT_TRUE(optimizer::optimize(*graph).ok());
  int fused = 0;
  for (const Node& node : graph->nodes) fused += node.domain == kQdqrtDomain ? 1 : 0;
  EXPECT_GE(fused, 5);
  auto built = harness_build(*graph, 4, /*all_reference=*/true);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  EXPECT_EQ(built->plan.layers.size(), graph->nodes.size());
  expect_same(*graph, *built, 4, 0.0);
  expect_same(*graph, *built, 1, 0.0);
}

// CumSum has no native layer; the vector MatMul is declined by the native MatMul lowering.
const char* const kFallbackModel = R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[N,4] x) => (float y, float v)
<int64 axis = {1}, float[4] w = {1.0, 2.0, 3.0, 4.0}>
{
  c = CumSum(x, axis)
  y = Relu(c)
  v = MatMul(x, w)
}
)";

const char* const kNativeOnlyModel = R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[N,4] x) => (float y)
{
  y = Relu(x)
}
)";

std::string reason_of(const engine::EnginePlan& plan, const std::string& op_type) {
  for (const auto& layer : plan.layers) {
    if (layer.kind == "reference" && layer.op_type == op_type) return engine::reference_layer_reason(layer);
  }
  return "(no reference layer for " + op_type + ")";
}

TEST(ReferenceLayer, RecordsWhyTheNativeLayersDeclinedAndTheFileKeepsIt) {
  auto graph = load_text_graph(kFallbackModel, 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  engine::BuildOptions options;
  options.precision = engine::Precision::kFp32;
  auto engine = engine::Engine::build(*graph, options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ(reason_of((*engine)->plan(), "CumSum"), "no native layer implements CumSum");
  EXPECT_EQ(reason_of((*engine)->plan(), "MatMul"),
            "the native MatMul layers do not take these inputs or attributes (inputs: float32 [2, 4], constant "
            "float32 [4])");
  const std::string path = ::testing::TempDir() + "/reference_reason.qdqrt";
  ASSERT_TRUE((*engine)->save(path).is_ok());
  auto loaded = engine::Engine::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(reason_of((*loaded)->plan(), "CumSum"), "no native layer implements CumSum");
  std::remove(path.c_str());
}

TEST(ReferenceLayer, NoReferenceLayersRefusesTheBuildNamingEachNode) {
  auto graph = load_text_graph(kFallbackModel, 1);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  engine::BuildOptions options;
  options.precision = engine::Precision::kFp32;
  options.no_reference_layers = true;
  auto engine = engine::Engine::build(*graph, options);
  ASSERT_FALSE(engine.ok());
  const std::string message = engine.status().message();
  EXPECT_NE(message.find("2 node(s) would run on the reference executor"), std::string::npos) << message;
  EXPECT_NE(message.find("CumSum '"), std::string::npos) << message;
  EXPECT_NE(message.find("no native layer implements CumSum"), std::string::npos) << message;
  EXPECT_NE(message.find("MatMul '"), std::string::npos) << message;
}

TEST(ReferenceLayer, NoReferenceLayersBuildsAModelWithoutThem) {
  auto graph = load_text_graph(kNativeOnlyModel, 1);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  engine::BuildOptions options;
  options.precision = engine::Precision::kFp32;
  options.no_reference_layers = true;
  auto engine = engine::Engine::build(*graph, options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  for (const auto& layer : (*engine)->plan().layers) EXPECT_NE(layer.kind, "reference") << layer.name;
}

// Attention's Einsums become native MatMul layers (lower_einsum); a diagonal stays Einsum on the
// reference layer, whose reason names the equation.
TEST(ReferenceLayer, EinsumLowersToMatMulLayersOrSaysWhyNot) {
  auto attention = load_text_graph(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,8,4] q, float[N,2,8,4] k) => (float y)
{
  s = Einsum<equation = "bhid,bhjd->bhij">(q, k)
  y = Einsum<equation = "bhij,bhjd->bhid">(s, k)
}
)",
                                   2);
  ASSERT_TRUE(attention.ok()) << attention.status().to_string();
  engine::BuildOptions options;
  options.precision = engine::Precision::kFp32;
  options.no_reference_layers = true;
  auto engine = engine::Engine::build(*attention, options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  int matmuls = 0;
  for (const auto& layer : (*engine)->plan().layers) matmuls += layer.op_type == "MatMul" ? 1 : 0;
  EXPECT_EQ(matmuls, 2);

  auto diagonal = load_text_graph(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4,4] x, float[N,4,5] w) => (float y)
{
  y = Einsum<equation = "bii,bij->bij">(x, w)
}
)",
                                  1);
  ASSERT_TRUE(diagonal.ok()) << diagonal.status().to_string();
  options.no_reference_layers = false;
  auto kept = engine::Engine::build(*diagonal, options);
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  EXPECT_EQ(reason_of((*kept)->plan(), "Einsum"),
            "no native layer implements Einsum, and 'bii,bij->bij' is not a two-operand matrix product the optimizer's "
            "lower_einsum rewrites to MatMul");
}

TEST(FloatModels, FmnistResnetFp32MatchesReference) {
  const std::string path = std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx";
  for (int64_t max_batch : {1, 4}) {
    auto graph = load_file_graph(path, max_batch);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    ASSERT_TRUE(optimizer::optimize(*graph).ok());
    auto built = harness_build(*graph, max_batch);
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    for (const auto& layer : built->plan.layers) EXPECT_NE(layer.kind, "reference") << layer.name;
    expect_same(*graph, *built, max_batch, 1e-4);
    if (max_batch > 1) expect_same(*graph, *built, 1, 1e-4);
  }
}

}  // namespace
}  // namespace qdqrt::testing
