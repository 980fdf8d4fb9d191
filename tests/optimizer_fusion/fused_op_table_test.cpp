// The fused op table (core/ops/fused_op_table.h): every qdqrt-domain op the registry accepts has a
// complete row, and each row walks the steps docs/adding_an_op.md lists for a fused op: its parser
// reads a sample node, its reference kernel runs it, its shape function gives the kernel's output
// shape and carries a symbolic batch, and inspect, layer_kind and the layer JSON read one kind and
// one type from it.
#include "core/ops/fused_op_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include <map>
#include <random>
#include <set>
#include <string>

#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/ops/fused.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "optimizer/layer_info.h"
#include "parser/onnx_loader.h"
#include "reference/executor.h"
#include "reference/kernel_registry.h"
#include "tests/common/fused_op_samples.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(FusedOpTable, EveryRegisteredFusedOpHasACompleteRow) {
  std::set<std::string> registered;
  for (const OpSchema* schema : OpRegistry::instance().all()) {
    if (schema->domain != layers::kDomain) continue;
    SCOPED_TRACE(schema->op_type);
    registered.insert(schema->op_type);
    const FusedOpRow* row = find_fused_op(schema->op_type);
    ASSERT_NE(row, nullptr) << "a qdqrt-domain op without a row in kFusedOps (core/ops/fused.cpp)";
    EXPECT_EQ(row->parse_attributes, schema->parse_attributes);
  }
  std::set<std::string> rows;
  for (const FusedOpRow& row : fused_op_table()) {
    SCOPED_TRACE(row.op_type);
    EXPECT_TRUE(rows.insert(row.op_type).second) << "two rows";
    EXPECT_TRUE(registered.count(row.op_type)) << "a row the op registry does not accept";
    EXPECT_NE(row.kind, nullptr);
    EXPECT_NE(row.parse_attributes, nullptr);
    EXPECT_NE(row.fused_info, nullptr);
    EXPECT_NE(row.output_shape, nullptr) << "without it the engine cannot follow the batch";
    ASSERT_NE(row.layer_info_type, nullptr);
    EXPECT_NE(std::string(row.layer_info_type), "Unknown");
    EXPECT_TRUE(KernelRegistry::instance().find(layers::kDomain, row.op_type) != nullptr) << "no reference kernel";
    for (const QuantizedInputSlot& slot : row.quantized_inputs) {
      EXPECT_GE(slot.value, 0);
      EXPECT_EQ(slot.zero_point, slot.value + 2) << "(value, scale, zero_point) triples";
    }
  }
}

Tensor zeros_at_batch(const ValueInfo& info, int64_t batch) {
  Shape shape;
  for (const Dim& dim : *info.shape) shape.push_back(dim.is_static() ? dim.value : batch);
  return Tensor(info.dtype, shape);
}

TEST(FusedOpTable, EveryRowWalksTheSteps) {
  for (const FusedOpRow& row : fused_op_table()) {
    SCOPED_TRACE(row.op_type);
    auto sample = fused_op_samples().find(row.op_type);
    ASSERT_NE(sample, fused_op_samples().end())
        << "add a sample node for the op to fused_op_samples() (tests/common/fused_op_samples.h)";
    Graph graph = load_text(std::string(kFusedSampleHeader) + "\n" + sample->second.text);
    ASSERT_EQ(graph.nodes.size(), 1u);
    const Node& node = graph.nodes[0];
    ASSERT_EQ(fused_op_row(node), &row);
    // The parser ran at load and its attributes carry the common part.
    ASSERT_NE(node.typed_attributes, nullptr);
    EXPECT_NE(fused_layer_info(node), nullptr);
    EXPECT_EQ(fused_layer_info(node)->fused_nodes.empty(), false);

    // The shape function keeps the symbolic batch ...
    OptionalDims symbolic = row.output_shape(node, input_shapes_in(graph, node));
    ASSERT_TRUE(symbolic.has_value());
    EXPECT_EQ(dims_to_string(*symbolic), sample->second.output_dims);
    // ... and at a concrete batch gives the reference kernel's output shape.
    constexpr int64_t kBatch = 3;
    TensorMap inputs;
    for (const std::string& name : graph.inputs) inputs[name] = zeros_at_batch(*graph.find_value(name), kBatch);
    Result<TensorMap> outputs = run_reference(graph, inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    Graph at_batch = graph;
    for (const std::string& name : graph.inputs) {
      for (Dim& dim : *at_batch.values.at(name).shape) {
        if (!dim.is_static()) dim = Dim{.value = kBatch, .symbol = {}, .expr = {}};
      }
    }
    OptionalDims concrete = row.output_shape(node, input_shapes_in(at_batch, node));
    ASSERT_TRUE(concrete.has_value());
    EXPECT_EQ(dims_to_string(*concrete), shape_to_string(outputs.value().at(node.outputs[0]).shape()));

    // One kind for inspect and layer_kind; the JSON type from the row.
    optimizer::LayerReport report = optimizer::compute_layer_info(graph, {});
    ASSERT_EQ(report.layers.size(), 1u);
    EXPECT_EQ(report.layers[0].kind, layer_kind(node, &graph));
    EXPECT_FALSE(report.layers[0].kind.empty());
  }
}

// A QLookup's kind is its function, in layer_kind and in inspect alike; "Lookup" without one.
TEST(FusedOpTable, LookupKindIsItsFunctionEverywhere) {
  Graph graph = load_text(std::string(kFusedSampleHeader) + "\n" + fused_op_samples().at(layers::kQLookup).text);
  EXPECT_EQ(layer_kind(graph.nodes[0], &graph), "Sigmoid");
  EXPECT_EQ(layer_kind(graph.nodes[0]), "Sigmoid");
  EXPECT_EQ(optimizer::compute_layer_info(graph, {}).layers[0].kind, "Sigmoid");
  graph.nodes[0].attributes.erase("function");  // unparsed: the row's label
  EXPECT_EQ(layer_kind(graph.nodes[0]), "Lookup");
}

// Depthwise means one input and one output channel per group; a channel multiplier is GroupConv,
// in layer_kind and in inspect alike.
TEST(FusedOpTable, ConvKindsAgree) {
  for (const auto& [output_channels, expected] :
       std::vector<std::pair<int64_t, std::string>>{{4, "DepthwiseConv"}, {8, "GroupConv"}}) {
    std::string weights = fmt::format("int8[{},1,1,1] w = {{{}}}", output_channels, sample_ones(output_channels));
    Graph graph = load_text(fmt::format(R"({}
g (int8[N,4,3,3] x) => (float[N,{},3,3] y)
<float s = {{0.5}}, int8 z = {{0}}, {}>
{{
  y = qdqrt.QConv <group = 4, fused_nodes = ["conv"]> (x, s, z, w, s, z)
}})",
                                        kFusedSampleHeader, output_channels, weights));
    EXPECT_EQ(layer_kind(graph.nodes[0], &graph), expected);
    EXPECT_EQ(optimizer::compute_layer_info(graph, {}).layers[0].kind, expected);
  }
}

// Every Conv- and MatMul-like layer counts its MACs in inspect (the INT8 MAC share is
// int8 / (int8 + float): a layer left out of the float total inflates it).
TEST(FusedOpTable, EveryConvAndMatMulLayerCountsItsMacs) {
  const std::set<std::string> mac_kinds = {"Conv", "DepthwiseConv", "GroupConv", "MatMul"};
  for (const FusedOpRow& row : fused_op_table()) {
    SCOPED_TRACE(row.op_type);
    Graph graph = load_text(std::string(kFusedSampleHeader) + "\n" + fused_op_samples().at(row.op_type).text);
    optimizer::LayerReport report = optimizer::compute_layer_info(graph, {}, {{"N", 2}});
    ASSERT_EQ(report.layers.size(), 1u);
    const bool counted = report.layers[0].macs.has_value() && *report.layers[0].macs > 0;
    EXPECT_EQ(counted, mac_kinds.count(report.layers[0].kind) > 0) << report.layers[0].kind;
  }
}

// FusedDepthwiseConv's MACs are those of the three convs it stands for (1x1 expansion, depthwise,
// 1x1 projection), counted as inspect counts them on the unfused graph; without the expansion or
// the projection, those of the two convs that are left.
TEST(FusedOpTable, FusedDepthwiseConvCountsTheMacsOfItsThreeConvs) {
  const std::string weights = "<float[8,4,1,1] ew = {" + sample_ones(8 * 4) + "}, float[8,1,3,3] w = {" +
                              sample_ones(8 * 9) + "}, float[5,8,1,1] pw = {" + sample_ones(5 * 8) + "}>";
  struct Case {
    bool expand, project;
  };
  for (const Case& c : {Case{true, true}, Case{true, false}, Case{false, true}}) {
    SCOPED_TRACE(fmt::format("expand {} project {}", c.expand, c.project));
    const int x_channels = c.expand ? 4 : 8;
    const int y_channels = c.project ? 5 : 8;
    const std::string signature = fmt::format("g (float[N,{},7,7] x) => (float[N,{},4,4] y)\n{}\n", x_channels,
                                              y_channels, weights);
    std::string convs = "{\n";
    convs += c.expand ? "  e = Conv (x, ew)\n" : "  e = Identity (x)\n";
    convs += fmt::format("  d = Conv <group = 8, pads = [1, 1, 1, 1], strides = [2, 2]> (e, w)\n");
    convs += c.project ? "  y = Conv (d, pw)\n}" : "  y = Identity (d)\n}";
    Graph unfused = load_text(std::string(kFusedSampleHeader) + "\n" + signature + convs);
    ASSERT_TRUE(infer_shapes(unfused).is_ok());
    int64_t expected = 0;
    for (const optimizer::LayerInfo& layer : optimizer::compute_layer_info(unfused, {}, {{"N", 3}}).layers) {
      expected += layer.macs.value_or(0);
    }
    Graph fused = load_text(std::string(kFusedSampleHeader) + "\n" + signature +
                            fmt::format("{{\n  y = qdqrt.FusedDepthwiseConv <group = 8, pads = [1, 1, 1, 1], "
                                        "strides = [2, 2], fused_nodes = [{}], part_nodes = [{}, 1, {}]> "
                                        "(x, {}, , w{})\n}}",
                                        c.expand && c.project ? "\"e\", \"d\", \"y\"" : "\"a\", \"b\"",
                                        c.expand ? 1 : 0, c.project ? 1 : 0, c.expand ? "ew" : "",
                                        c.project ? ", , pw" : ""));
    optimizer::LayerReport report = optimizer::compute_layer_info(fused, {}, {{"N", 3}});
    ASSERT_EQ(report.layers.size(), 1u);
    EXPECT_EQ(report.layers[0].macs, expected);
    EXPECT_EQ(report.summary.float_macs, expected);
    // 3 * (8 * 16 * 9 depthwise + [8 * 49 * 4 expansion] + [5 * 16 * 8 projection])
    EXPECT_EQ(expected, 3 * (8 * 16 * 9 + (c.expand ? 8 * 49 * 4 : 0) + (c.project ? 5 * 16 * 8 : 0)));
  }
}

// ConvTranspose (a float layer where no fusion takes it): every input element times C_out / group * k.
TEST(FusedOpTable, ConvTransposeCountsItsMacs) {
  Graph graph = load_text(std::string(kFusedSampleHeader) + R"(
g (float[N,4,5,5] x) => (float[N,6,10,10] y)
<float[4,3,2,2] w = {)" + sample_ones(4 * 3 * 4) + R"(}>
{
  y = ConvTranspose <group = 2, strides = [2, 2]> (x, w)
})");
  optimizer::LayerReport report = optimizer::compute_layer_info(graph, {}, {{"N", 2}});
  ASSERT_EQ(report.layers.size(), 1u);
  // Each of the 2 * 4 * 25 inputs feeds 3 output channels of its group through a 2x2 window.
  EXPECT_EQ(report.layers[0].macs, 2 * 4 * 25 * 3 * 4);
  EXPECT_EQ(report.summary.float_macs, 2 * 4 * 25 * 3 * 4);
}

TEST(FusedOpTable, ShapeFunctionsRefuseWhatDoesNotFit) {
  auto row_of = [](const char* op_type) {
    const FusedOpRow* row = find_fused_op(op_type);
    EXPECT_NE(row, nullptr);
    return row;
  };
  auto dims = [](std::vector<int64_t> values) {
    Dims result;
    for (int64_t value : values) result.push_back(Dim{.value = value, .symbol = {}, .expr = {}});
    return result;
  };
  Node matmul;
  matmul.op_type = layers::kQMatMul;
  matmul.domain = layers::kDomain;
  InputShapes inputs(layers::kMatMulInputCount);
  inputs[layers::kMatMulA] = dims({2, 5, 4});
  inputs[layers::kMatMulB] = dims({3, 3});  // K 4 against 3
  EXPECT_FALSE(row_of(layers::kQMatMul)->output_shape(matmul, inputs).has_value());
  inputs[layers::kMatMulB].reset();  // unknown
  EXPECT_FALSE(row_of(layers::kQMatMul)->output_shape(matmul, inputs).has_value());

  Node add;
  add.op_type = layers::kQAdd;
  add.domain = layers::kDomain;
  InputShapes binary(layers::kBinaryInputCount);
  binary[layers::kBinaryA] = dims({2, 3});
  binary[layers::kBinaryB] = dims({4});
  EXPECT_FALSE(row_of(layers::kQAdd)->output_shape(add, binary).has_value());
  // A symbol against a static dim > 1 is that dim; two different symbols are unknown.
  binary[layers::kBinaryA] = Dims{Dim{.value = -1, .symbol = "N", .expr = {}}, Dim{.value = -1, .symbol = "M", .expr = {}}};
  binary[layers::kBinaryB] = Dims{Dim{.value = -1, .symbol = "K", .expr = {}}, Dim{.value = 3, .symbol = {}, .expr = {}}};
  OptionalDims broadcast = row_of(layers::kQAdd)->output_shape(add, binary);
  ASSERT_TRUE(broadcast.has_value());
  EXPECT_EQ(dims_to_string(*broadcast), "[?, 3]");

  // Conv: a weight whose rank is not x's, a missing weight.
  Graph conv = load_text(std::string(kFusedSampleHeader) + "\n" + fused_op_samples().at(layers::kQConv).text);
  InputShapes conv_inputs = input_shapes_in(conv, conv.nodes[0]);
  conv_inputs[layers::kConvW] = dims({6, 2, 3});
  EXPECT_FALSE(row_of(layers::kQConv)->output_shape(conv.nodes[0], conv_inputs).has_value());
  conv_inputs.resize(layers::kConvW);
  EXPECT_FALSE(row_of(layers::kQConv)->output_shape(conv.nodes[0], conv_inputs).has_value());

  // Concat: parts of different ranks, or other dims that differ.
  Graph concat = load_text(std::string(kFusedSampleHeader) + "\n" + fused_op_samples().at(layers::kQConcat).text);
  InputShapes parts = input_shapes_in(concat, concat.nodes[0]);
  parts[layers::kConcatFirstX + 3] = dims({2, 3});
  EXPECT_FALSE(row_of(layers::kQConcat)->output_shape(concat.nodes[0], parts).has_value());
  parts[layers::kConcatFirstX + 3] = dims({2, 3, 5});
  EXPECT_FALSE(row_of(layers::kQConcat)->output_shape(concat.nodes[0], parts).has_value());

  // A kernel larger than the padded input.
  Graph graph = load_text(std::string(kFusedSampleHeader) + "\n" + fused_op_samples().at(layers::kQAveragePool).text);
  InputShapes pool(layers::kUnaryInputCount);
  pool[layers::kUnaryX] = dims({1, 3, 2, 2});
  EXPECT_FALSE(row_of(layers::kQAveragePool)->output_shape(graph.nodes[0], pool).has_value());
}

// FusedConv computes exactly what the Conv and the ops after it compute (the reference runs the
// same ops in the same order), for each epilogue it takes.
TEST(FusedConv, ReferenceMatchesTheNodesItStandsFor) {
  struct Case {
    std::string epilogue;    // the unfused nodes after "c = Conv(x, w[, bias])", writing y
    std::string attributes;  // the FusedConv's epilogue attributes
    bool residual;
    bool bias;
  };
  const std::vector<Case> cases = {
      {"y = Relu(c)", R"(activation = "Relu")", false, true},
      {"s = Add(c, r)\n  y = Relu(s)", R"(activation = "Relu")", true, true},
      {"s = Add(r, c)\n  y = Clip(s, lo, hi)", R"(activation = "Clip", activation_min = -0.5, activation_max = 0.75)",
       true, false},
      {"y = Sigmoid(c)", R"(function = "Sigmoid")", false, true},
      {"y = HardSwish(c)", R"(function = "HardSwish")", false, true},
      {"g = Sigmoid(c)\n  y = Mul(c, g)", R"(function = "SiLU")", false, true},
      {"s = Add(c, r)\n  g = Sigmoid(s)\n  y = Mul(s, g)", R"(function = "SiLU")", true, false},
      {"y = Add(c, r)", "", true, true},
  };
  std::mt19937 rng(11);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.epilogue);
    const std::string constants = float_initializer("w", {6, 2, 3, 3}, -1.0f, 1.0f, rng) + ", " +
                                  float_initializer("bias", {6}, -1.0f, 1.0f, rng) +
                                  ", float lo = {-0.5}, float hi = {0.75}";
    const std::string conv_inputs = c.bias ? "x, w, bias" : "x, w";
    const std::string header = R"(<ir_version: 8, opset_import: ["" : 14, "qdqrt" : 1]>
g (float[2,4,5,5] x, float[2,6,5,5] r) => (float[2,6,5,5] y)
<)" + constants + ">\n{\n";
    Graph unfused = load_text(header + "  c = Conv <group = 2, pads = [1, 1, 1, 1]> (" + conv_inputs + ")\n  " +
                              c.epilogue + "\n}");
    const std::string attributes = c.attributes.empty() ? "" : ", " + c.attributes;
    Graph fused = load_text(header + "  y = qdqrt.FusedConv <group = 2, pads = [1, 1, 1, 1], fused_nodes = [\"conv\"]" +
                            attributes + "> (" + conv_inputs + (c.bias ? "" : ", ") + (c.residual ? ", r" : "") +
                            ")\n}");
    ASSERT_EQ(fused.nodes.size(), 1u);
    expect_same_outputs(unfused, fused, random_inputs(unfused, rng, -3.0f, 3.0f), 0.0f);
  }
}

// The loader's error for a FusedConv node, or "" when it loads.
std::string fused_conv_error(const std::string& attributes, const std::string& residual_shape = "2,6,5,5") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 14, "qdqrt" : 1]>
g (float[2,4,5,5] x, float[)" + residual_shape + R"(] r) => (float[2,6,5,5] y)
<float[6,4,1,1] w = {)" + sample_ones(24) + R"(}>
{
  y = qdqrt.FusedConv <fused_nodes = ["conv"])" + attributes + R"(> (x, w, , r)
})";
  onnx::ModelProto model;
  EXPECT_TRUE(onnx::OnnxParser::Parse(model, text.c_str()).IsOK()) << text;
  Result<Graph> graph = load_onnx_model(model);
  if (!graph.ok()) return graph.status().to_string();
  TensorMap inputs;
  std::mt19937 rng(3);
  Result<TensorMap> outputs = run_reference(*graph, random_inputs(*graph, rng));
  return outputs.ok() ? "" : outputs.status().to_string();
}

TEST(FusedConv, BadAttributesAndInputsAreRefusedByName) {
  EXPECT_EQ(fused_conv_error(R"(, function = "SiLU")"), "");
  EXPECT_NE(fused_conv_error(R"(, function = "Tanh")").find("function"), std::string::npos);
  EXPECT_NE(fused_conv_error(R"(, function = "Tanh")").find("Tanh"), std::string::npos);
  const std::string both = fused_conv_error(R"(, activation = "Relu", function = "Sigmoid")");
  EXPECT_NE(both.find("at most one"), std::string::npos) << both;
  EXPECT_NE(fused_conv_error(R"(, activation = "LeakyRelu")").find("activation"), std::string::npos);
  EXPECT_NE(fused_conv_error(R"(, activation = "Clip", activation_min = 1.0, activation_max = 0.0)")
                .find("activation_min"),
            std::string::npos);
  // A residual that is not shaped like the output (the Add would broadcast).
  const std::string residual = fused_conv_error("", "2,6,1,1");
  EXPECT_NE(residual.find("residual"), std::string::npos) << residual;
}

// The loader's error for a QLookup "Erf" node with these attributes, or "" when it loads and runs.
std::string erf_lookup_error(const std::string& attributes) {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 14, "qdqrt" : 1]>
g (int8[2,7] x) => (int8[2,7] y)
<float s = {0.05}, float ys = {0.0078}, int8 z = {0}>
{
  y = qdqrt.QLookup <function = "Erf", fused_nodes = ["div", "erf"])" + attributes + R"(> (x, s, z, ys, z)
})";
  onnx::ModelProto model;
  EXPECT_TRUE(onnx::OnnxParser::Parse(model, text.c_str()).IsOK()) << text;
  Result<Graph> graph = load_onnx_model(model);
  if (!graph.ok()) return graph.status().to_string();
  const TensorMap inputs = {
      {"x", Tensor::from_vector<int8_t>({2, 7}, {-128, -100, -50, -1, 0, 1, 2, 3, 10, 40, 60, 90, 120, 127})}};
  Result<TensorMap> outputs = run_reference(*graph, inputs);
  return outputs.ok() ? "" : outputs.status().to_string();
}

TEST(QLookup, ErfOperandIsRequiredAndChecked) {
  EXPECT_EQ(erf_lookup_error(R"(, operand_op = "Div", operand = 1.4142135)"), "");
  EXPECT_EQ(erf_lookup_error(R"(, operand_op = "Mul", operand = 0.5)"), "");
  for (const auto& [attributes, field] : std::vector<std::pair<std::string, std::string>>{
           {R"(, operand = 1.4142135)", "operand_op"},
           {R"(, operand_op = "Add", operand = 1.0)", "operand_op"},
           {R"(, operand_op = "Div")", "operand"},
           {R"(, operand_op = "Div", operand = 0.0)", "operand"}}) {
    const std::string error = erf_lookup_error(attributes);
    EXPECT_NE(error.find(field), std::string::npos) << attributes << ": " << error;
  }
}

// A gate (input 4) scales x before the conv; the row sums (output 1) of y give a
// RowSumsGlobalAveragePool the plain pool's result (summed in another order: within 1e-6).
TEST(FusedConv, GateAndRowSumsMatchTheNodesTheyStandFor) {
  std::mt19937 rng(13);
  const std::string header = R"(<ir_version: 8, opset_import: ["" : 14, "qdqrt" : 1]>
g (float[2,4,5,5] x, float[2,4,1,1] gate) => (float[2,6,5,5] y, float[2,6,1,1] p)
<)" + float_initializer("w", {6, 2, 3, 3}, -1.0f, 1.0f, rng) + ", " +
                             float_initializer("bias", {6}, -1.0f, 1.0f, rng) + ">\n{\n";
  Graph unfused = load_text(header +
                            "  m = Mul(x, gate)\n  c = Conv <group = 2, pads = [1, 1, 1, 1]> (m, w, bias)\n"
                            "  y = Relu(c)\n  p = GlobalAveragePool(y)\n}");
  Graph fused = load_text(header +
                          "  y, sums = qdqrt.FusedConv <group = 2, pads = [1, 1, 1, 1], activation = \"Relu\", "
                          "fused_nodes = [\"mul\", \"conv\", \"relu\"]> (x, w, bias, , gate)\n"
                          "  p = qdqrt.RowSumsGlobalAveragePool <fused_nodes = [\"pool\"]> (y, sums)\n}");
  ASSERT_EQ(fused.nodes.size(), 2u);
  expect_same_outputs(unfused, fused, random_inputs(unfused, rng, -3.0f, 3.0f), 1e-6f);
}

// The reference's error for a gate or row sums that do not fit, or "" when it runs.
std::string gate_and_sums_error(const std::string& gate_shape, const std::string& sums_shape) {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 14, "qdqrt" : 1]>
g (float[2,4,5,5] x, float[)" + gate_shape + R"(] gate, float[)" + sums_shape + R"(] sums) => (float[2,6,5,5] y, float[2,4,1,1] p)
<float[6,4,1,1] w = {)" + sample_ones(24) + R"(}>
{
  y = qdqrt.FusedConv <fused_nodes = ["conv"]> (x, w, , , gate)
  p = qdqrt.RowSumsGlobalAveragePool <fused_nodes = ["pool"]> (x, sums)
})";
  onnx::ModelProto model;
  EXPECT_TRUE(onnx::OnnxParser::Parse(model, text.c_str()).IsOK()) << text;
  Result<Graph> graph = load_onnx_model(model);
  if (!graph.ok()) return graph.status().to_string();
  std::mt19937 rng(3);
  Result<TensorMap> outputs = run_reference(*graph, random_inputs(*graph, rng));
  return outputs.ok() ? "" : outputs.status().to_string();
}

TEST(FusedConv, GatesAndRowSumsThatDoNotFitAreRefusedByName) {
  EXPECT_EQ(gate_and_sums_error("2,4,1,1", "2,5,4"), "");
  const std::string gate = gate_and_sums_error("2,4,5,5", "2,5,4");
  EXPECT_NE(gate.find("gate"), std::string::npos) << gate;
  const std::string sums = gate_and_sums_error("2,4,1,1", "2,4,5");
  EXPECT_NE(sums.find("row sums"), std::string::npos) << sums;
}

// The loader's (or reference's) error for a FusedDepthwiseConv with `attributes`, or "" when it runs.
std::string fused_depthwise_error(const std::string& attributes, const std::string& inputs = "x, ew, , w, , pw") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 14, "qdqrt" : 1]>
g (float[2,4,5,5] x) => (float[2,3,5,5] y)
<float[8,4,1,1] ew = {)" + sample_ones(32) + R"(}, float[8,1,3,3] w = {)" + sample_ones(72) +
                           R"(}, float[3,8,1,1] pw = {)" + sample_ones(24) + R"(}>
{
  y = qdqrt.FusedDepthwiseConv <group = 8, pads = [1, 1, 1, 1], fused_nodes = ["e", "d", "p"])" + attributes +
                           R"(> ()" + inputs + R"()
})";
  onnx::ModelProto model;
  EXPECT_TRUE(onnx::OnnxParser::Parse(model, text.c_str()).IsOK()) << text;
  Result<Graph> graph = load_onnx_model(model);
  if (!graph.ok()) return graph.status().to_string();
  std::mt19937 rng(3);
  Result<TensorMap> outputs = run_reference(*graph, random_inputs(*graph, rng));
  return outputs.ok() ? "" : outputs.status().to_string();
}

TEST(FusedDepthwiseConv, BadAttributesAndInputsAreRefusedByName) {
  EXPECT_EQ(fused_depthwise_error(R"(, part_nodes = [1, 1, 1], expand_activation = "Relu")"), "");
  const std::string parts = fused_depthwise_error(", part_nodes = [1, 2, 1]");
  EXPECT_NE(parts.find("part_nodes"), std::string::npos) << parts;
  EXPECT_NE(fused_depthwise_error("").find("part_nodes"), std::string::npos);
  EXPECT_NE(fused_depthwise_error(", part_nodes = [2, -1, 2]").find("part_nodes"), std::string::npos);
  const std::string activation = fused_depthwise_error(R"(, part_nodes = [1, 1, 1], project_activation = "Tanh")");
  EXPECT_NE(activation.find("project_activation"), std::string::npos) << activation;
  const std::string both =
      fused_depthwise_error(R"(, part_nodes = [1, 1, 1], expand_activation = "Relu", expand_function = "SiLU")");
  EXPECT_NE(both.find("expand_function"), std::string::npos) << both;
  const std::string clip = fused_depthwise_error(
      R"(, part_nodes = [1, 1, 1], project_activation = "Clip", project_activation_min = 1.0, project_activation_max = 0.0)");
  EXPECT_NE(clip.find("project_activation_min"), std::string::npos) << clip;
  const std::string missing = fused_depthwise_error(", part_nodes = [1, 1, 1]", "x, ew, , w");
  EXPECT_NE(missing.find("does not match the parts given"), std::string::npos) << missing;
  EXPECT_NE(fused_depthwise_error(", part_nodes = [0, 3, 0]", "x, , , w").find("neither"), std::string::npos);
  // A residual without a projection has nothing to join.
  const std::string residual = fused_depthwise_error(", part_nodes = [2, 1, 0]", "x, ew, , w, , , , x");
  EXPECT_NE(residual.find("residual"), std::string::npos) << residual;
}

}  // namespace
}  // namespace qdqrt::testing
