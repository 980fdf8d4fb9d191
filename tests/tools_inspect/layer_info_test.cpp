// optimizer/layer_info on hand-built optimized graphs (qdqrt-domain layers as the fusion passes
// make them), and the JSON of `qdqrt inspect --exportLayerInfo`.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/attribute_values.h"
#include "core/ops/fused_add_quantize.h"
#include "core/ops/fused_layers.h"
#include "optimizer/layer_info.h"
#include "tools/inspect_command.h"

namespace qdqrt::optimizer {
namespace {

std::vector<Dim> dims(std::initializer_list<int64_t> values, const std::string& first_symbol = "") {
  std::vector<Dim> out;
  for (int64_t v : values) out.push_back(Dim{v, ""});
  if (!first_symbol.empty()) out[0] = Dim{-1, first_symbol};
  return out;
}

Node make_node(const std::string& name, const std::string& op_type, std::vector<std::string> inputs,
               std::vector<std::string> outputs, const std::string& domain = "") {
  Node node;
  node.name = name;
  node.op_type = op_type;
  node.domain = domain;
  node.opset = domain.empty() ? 13 : 1;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  return node;
}

void add_value(Graph& graph, const std::string& name, DataType dtype, std::vector<Dim> shape) {
  graph.values[name] = ValueInfo{name, dtype, std::move(shape)};
}

// x(float) -Q-> xq -QConv(conv1+bn1+relu1, u8 out zp 3)-> c1 -DQ-> c1f -Conv(float, depthwise)-> d
//   -Q-> dq -DQ-> dqf -QConv(group 2, float out)-> g ; plus a float MatMul on g.
Graph optimized_graph() {
  Graph graph;
  graph.opsets[""] = 13;
  graph.inputs = {"x"};
  graph.outputs = {"m"};
  add_value(graph, "x", DataType::kFloat, dims({0, 4, 8, 8}, "batch"));
  add_value(graph, "xq", DataType::kInt8, dims({0, 4, 8, 8}, "batch"));
  add_value(graph, "c1", DataType::kUint8, dims({0, 4, 8, 8}, "batch"));
  add_value(graph, "c1f", DataType::kFloat, dims({0, 4, 8, 8}, "batch"));
  add_value(graph, "d", DataType::kFloat, dims({0, 4, 8, 8}, "batch"));
  add_value(graph, "dq", DataType::kInt8, dims({0, 4, 8, 8}, "batch"));
  add_value(graph, "dqf", DataType::kFloat, dims({0, 4, 8, 8}, "batch"));
  add_value(graph, "g", DataType::kFloat, dims({0, 6, 8, 8}, "batch"));
  add_value(graph, "m", DataType::kFloat, dims({0, 6, 8, 5}, "batch"));
  graph.initializers["s"] = Tensor::scalar<float>(0.1f);
  graph.initializers["zp_s8"] = Tensor::scalar<int8_t>(0);
  graph.initializers["zp_u8"] = Tensor::scalar<uint8_t>(3);
  graph.initializers["w1"] = Tensor(DataType::kInt8, {4, 4, 3, 3});
  graph.initializers["w1_scale"] = Tensor(DataType::kFloat, {4});
  graph.initializers["w1_zp"] = Tensor(DataType::kInt8, {4});
  graph.initializers["wd"] = Tensor(DataType::kFloat, {4, 1, 3, 3});
  graph.initializers["wg"] = Tensor(DataType::kInt8, {6, 2, 1, 1});
  graph.initializers["wm"] = Tensor(DataType::kFloat, {8, 5});

  graph.nodes.push_back(make_node("q_x", "QuantizeLinear", {"x", "s", "zp_s8"}, {"xq"}));
  Node conv1 = make_node("conv1", layers::kQConv, {"xq", "s", "zp_s8", "w1", "w1_scale", "w1_zp", "", "s", "zp_u8"},
                         {"c1"}, kQdqrtDomain);
  conv1.attributes["fused_nodes"] = strings_attribute({"conv1", "bn1", "relu1"});
  graph.nodes.push_back(conv1);
  graph.nodes.push_back(make_node("dq_c1", "DequantizeLinear", {"c1", "s", "zp_u8"}, {"c1f"}));
  Node depthwise = make_node("dw", "Conv", {"c1f", "wd"}, {"d"});
  depthwise.attributes["group"] = int_attribute(4);
  graph.nodes.push_back(depthwise);
  graph.nodes.push_back(make_node("q_d", "QuantizeLinear", {"d", "s", "zp_s8"}, {"dq"}));
  graph.nodes.push_back(make_node("dq_d", "DequantizeLinear", {"dq", "s", "zp_s8"}, {"dqf"}));
  Node grouped = make_node("gconv", layers::kQConv, {"dq", "s", "zp_s8", "wg", "s", "zp_s8"}, {"g"}, kQdqrtDomain);
  grouped.attributes["group"] = int_attribute(2);
  graph.nodes.push_back(grouped);
  graph.nodes.push_back(make_node("mm", "MatMul", {"g", "wm"}, {"m"}));
  // dqf is read by nobody but stays to exercise the counting; make it a graph output.
  graph.outputs.push_back("dqf");
  return graph;
}

// Large static dims: MAC counts that overflow int64 are left uncounted (nullopt, "-"), totals
// saturate, and nothing is negative (inspect once printed negative totals; UBSan: signed overflow).
TEST(LayerInfo, MacsThatOverflowAreNotCountedAndTotalsStayPositive) {
  Graph graph;
  graph.opsets[""] = 13;
  graph.inputs = {"a", "b"};
  graph.outputs = {"c", "e"};
  const int64_t big = int64_t{1} << 31;
  add_value(graph, "a", DataType::kFloat, dims({big, big}));
  add_value(graph, "b", DataType::kFloat, dims({big, big}));
  add_value(graph, "c", DataType::kFloat, dims({big, big}));
  graph.nodes.push_back(make_node("mm", "MatMul", {"a", "b"}, {"c"}));
  // Two layers whose MACs fit alone but not together.
  add_value(graph, "d", DataType::kFloat, dims({int64_t{1} << 31, 1 << 16}));
  add_value(graph, "w", DataType::kFloat, dims({1 << 16, 1 << 15}));
  add_value(graph, "e", DataType::kFloat, dims({int64_t{1} << 31, 1 << 15}));
  graph.inputs.push_back("d");
  graph.inputs.push_back("w");
  graph.nodes.push_back(make_node("mm2", "MatMul", {"d", "w"}, {"e"}));
  graph.nodes.push_back(make_node("mm3", "MatMul", {"d", "w"}, {"e2"}));
  add_value(graph, "e2", DataType::kFloat, dims({int64_t{1} << 31, 1 << 15}));
  graph.outputs.push_back("e2");
  LayerReport report = compute_layer_info(graph, {}, {});
  EXPECT_FALSE(report.layers[0].macs.has_value());
  ASSERT_TRUE(report.layers[1].macs.has_value());
  EXPECT_EQ(*report.layers[1].macs, int64_t{1} << 62);
  EXPECT_EQ(report.summary.float_macs, INT64_MAX);
  EXPECT_GE(report.summary.int8_mac_share(), 0.0);
  const std::string table = format_layer_summary(report);
  EXPECT_EQ(table.find(" -9"), std::string::npos) << table;
}

TEST(LayerInfo, NamesKindsPrecisionsZeroPointsShapesAndMacs) {
  Graph graph = optimized_graph();
  LayerReport report = compute_layer_info(graph, {}, {{"batch", 2}});
  ASSERT_EQ(report.layers.size(), graph.nodes.size());

  const LayerInfo& conv1 = report.layers[1];
  EXPECT_EQ(conv1.name, "conv1 + bn1 + relu1");
  EXPECT_EQ(conv1.kind, "Conv");
  EXPECT_EQ(conv1.precision, "INT8");
  ASSERT_EQ(conv1.inputs.size(), 1u);  // constants (weights, scales) are not listed
  EXPECT_EQ(conv1.inputs[0].dtype, DataType::kInt8);
  EXPECT_EQ(conv1.inputs[0].zero_point, 0);
  ASSERT_EQ(conv1.outputs.size(), 1u);
  EXPECT_EQ(conv1.outputs[0].dtype, DataType::kUint8);
  EXPECT_EQ(conv1.outputs[0].zero_point, 3);
  EXPECT_EQ(dims_to_string(*conv1.outputs[0].shape), "[2, 4, 8, 8]");
  EXPECT_EQ(conv1.macs, 2 * 4 * 8 * 8 * (4 * 3 * 3));

  EXPECT_EQ(report.layers[3].kind, "DepthwiseConv");
  EXPECT_EQ(report.layers[3].precision, "FP32");
  EXPECT_EQ(report.layers[3].macs, 2 * 4 * 8 * 8 * 9);
  EXPECT_EQ(report.layers[6].kind, "GroupConv");
  EXPECT_EQ(report.layers[6].outputs[0].dtype, DataType::kFloat);
  EXPECT_EQ(report.layers[6].macs, 2 * 6 * 8 * 8 * 2);
  EXPECT_EQ(report.layers[7].kind, "MatMul");
  EXPECT_EQ(report.layers[7].macs, 2 * 6 * 8 * 5 * 8);
  EXPECT_EQ(report.layers[0].precision, "Q/DQ");
}

TEST(LayerInfo, SummaryCountsMacsAndQdqInsideInt8Regions) {
  Graph graph = optimized_graph();
  std::vector<FloatReason> reasons = {{"add_3", "Add", "residual input is float"}};
  LayerReport report = compute_layer_info(graph, reasons, {{"batch", 1}});
  const LayerSummary& summary = report.summary;
  EXPECT_EQ(summary.int8_macs, 4 * 8 * 8 * 36 + 6 * 8 * 8 * 2);
  EXPECT_EQ(summary.float_macs, 4 * 8 * 8 * 9 + 6 * 8 * 5 * 8);
  EXPECT_NEAR(summary.int8_mac_share(), 9984.0 / (9984.0 + 4224.0), 1e-12);
  EXPECT_EQ(summary.quantize_nodes, 2);
  EXPECT_EQ(summary.dequantize_nodes, 2);
  // q_x reads float (border), dq_c1 feeds a float conv (border), q_d reads float (border);
  // dq_d reads the same int8 tensor a QConv reads and feeds nothing: a border too.
  EXPECT_TRUE(summary.qdq_inside_int8.empty());
  EXPECT_EQ(summary.layers_per_precision.at("INT8"), 2);
  EXPECT_EQ(summary.layers_per_precision.at("FP32"), 2);
  EXPECT_EQ(summary.layers_per_precision.at("Q/DQ"), 4);
  EXPECT_TRUE(summary.unbound_symbols.empty());
  std::string text = format_layer_summary(report);
  EXPECT_NE(text.find("Add 'add_3': residual input is float"), std::string::npos) << text;
  EXPECT_NE(text.find("70.3%"), std::string::npos) << text;

  // A DQ feeding a qdqrt layer and a Q reading a DQ sit inside an INT8 region.
  graph.nodes[6].inputs[0] = "dqf";
  graph.nodes.push_back(make_node("q_again", "QuantizeLinear", {"dqf", "s", "zp_s8"}, {"again"}));
  graph.outputs.push_back("again");
  LayerReport inside = compute_layer_info(graph, {});
  EXPECT_EQ(inside.summary.qdq_inside_int8, (std::vector<std::string>{"dq_d", "q_again"}));
  EXPECT_EQ(inside.summary.unbound_symbols, std::vector<std::string>{"batch"});
}

// Every float layer and Q/DQ left gets a reason: recorded by a pass, or read off the graph; a
// DQ -> float op -> Q island that no pass explained is listed as unexplained.
TEST(LayerInfo, EveryFloatLayerAndQdqNodeIsExplainedOrListed) {
  Graph graph = optimized_graph();
  LayerReport report = compute_layer_info(graph, {}, {{"batch", 1}});
  const LayerSummary& summary = report.summary;
  EXPECT_EQ(summary.float_layers, 2);
  EXPECT_EQ(summary.explained_float_layers, 1);
  EXPECT_EQ(summary.explained_qdq_nodes, 4);
  EXPECT_EQ(summary.unexplained, std::vector<std::string>{"Conv 'dw'"});
  std::vector<std::string> texts;
  for (const FloatReason& reason : summary.qdq_reasons) texts.push_back(format_float_reason(reason));
  for (const FloatReason& reason : summary.float_reasons) texts.push_back(format_float_reason(reason));
  EXPECT_EQ(texts, (std::vector<std::string>{
                       "QuantizeLinear 'q_x': quantizes graph input 'x'",
                       "DequantizeLinear 'dq_c1': dequantizes for float Conv 'dw'",
                       "QuantizeLinear 'q_d': quantizes the output of float Conv 'dw'",
                       "DequantizeLinear 'dq_d': dequantizes graph output 'dqf'",
                       "MatMul 'mm': not quantized in the model (no DequantizeLinear before it, no QuantizeLinear "
                       "after it)"}));
  std::string text = format_layer_summary(report);
  EXPECT_NE(text.find("Float layers with a reason: 1 of 2"), std::string::npos) << text;
  EXPECT_NE(text.find("Q/DQ nodes with a reason: 4 of 4"), std::string::npos) << text;
  EXPECT_NE(text.find("Unexplained: 1\n  Conv 'dw'"), std::string::npos) << text;

  // A reason a pass recorded explains it.
  LayerReport recorded = compute_layer_info(graph, {{"dw", "Conv", "why"}}, {{"batch", 1}});
  EXPECT_TRUE(recorded.summary.unexplained.empty());
  EXPECT_EQ(recorded.summary.explained_float_layers, 2);
  // An op no fusion handles has no INT8 layer: that is the reason.
  graph.nodes[3].op_type = "ReduceMean";
  LayerReport no_layer = compute_layer_info(graph, {}, {{"batch", 1}});
  EXPECT_TRUE(no_layer.summary.unexplained.empty());
  EXPECT_EQ(no_layer.summary.float_reasons[0].reason,
            "no INT8 layer for ReduceMean (runs in float between DequantizeLinear and QuantizeLinear)");
}

// A residual block's start when the residual branch is float: an INT8 conv writes float because an
// AddQuantize (a fused layer with float operands) reads its output beside the next conv's Q.
TEST(LayerInfo, QuantizeOfAFloatOutputThatAFusedLayerAlsoReadsIsExplained) {
  Graph graph;
  graph.opsets[""] = 13;
  graph.inputs = {"xq", "r"};
  graph.outputs = {"sum_q", "c_q"};
  for (const char* name : {"c", "r"}) add_value(graph, name, DataType::kFloat, dims({1, 4, 8, 8}));
  for (const char* name : {"xq", "c_q", "sum_q"}) add_value(graph, name, DataType::kUint8, dims({1, 4, 8, 8}));
  graph.initializers["s"] = Tensor::scalar<float>(0.1f);
  graph.initializers["zp"] = Tensor::scalar<uint8_t>(0);
  graph.initializers["w"] = Tensor(DataType::kInt8, {4, 4, 1, 1});
  graph.initializers["w_scale"] = Tensor(DataType::kFloat, {4});
  graph.initializers["w_zp"] = Tensor(DataType::kInt8, {4});
  graph.nodes.push_back(make_node("conv", layers::kQConv, {"xq", "s", "zp", "w", "w_scale", "w_zp"}, {"c"},
                                  kQdqrtDomain));
  graph.nodes.push_back(make_node("q_c", "QuantizeLinear", {"c", "s", "zp"}, {"c_q"}));
  graph.nodes.push_back(make_node("add", layers::kAddQuantize, {"c", "r", "s", "zp"}, {"sum_q"}, kQdqrtDomain));
  LayerReport report = compute_layer_info(graph, {}, {});
  EXPECT_TRUE(report.summary.unexplained.empty()) << format_layer_summary(report);
  ASSERT_EQ(report.summary.qdq_reasons.size(), 1u);
  EXPECT_EQ(format_float_reason(report.summary.qdq_reasons[0]),
            "QuantizeLinear 'q_c': quantizes the float output of QConv 'conv', which AddQuantize 'add' also reads as "
            "float");
}

TEST(LayerInfo, QdqListsOnlyItsDataInputEvenWhenScaleIsComputed) {
  // Before constant folding, QAT exports compute scales with nodes (Cast of a Constant).
  Graph graph = optimized_graph();
  graph.nodes.insert(graph.nodes.begin(), make_node("scale_cast", "Identity", {"s"}, {"s_computed"}));
  graph.values["s_computed"] = ValueInfo{"s_computed", DataType::kFloat, std::vector<Dim>{}};
  graph.nodes[1].inputs[1] = "s_computed";  // q_x
  graph.nodes[3].inputs[1] = "s_computed";  // dq_c1
  LayerReport report = compute_layer_info(graph, {});
  ASSERT_EQ(report.layers[1].inputs.size(), 1u);
  EXPECT_EQ(report.layers[1].inputs[0].name, "x");
  ASSERT_EQ(report.layers[3].inputs.size(), 1u);
  EXPECT_EQ(report.layers[3].inputs[0].name, "c1");
  EXPECT_EQ(report.layers[3].inputs[0].zero_point, 3);
}

TEST(LayerInfo, InspectTableHasOneRowPerLayerAndHeader) {
  Graph graph = optimized_graph();
  std::string table = tools::format_inspect_table(compute_layer_info(graph, {}, {{"batch", 1}}), 0);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), static_cast<long>(graph.nodes.size() + 1));
  EXPECT_NE(table.find("conv1 + bn1 + relu1"), std::string::npos);
  EXPECT_NE(table.find("uint8(zp=3)"), std::string::npos) << table;
  EXPECT_NE(table.find("DepthwiseConv"), std::string::npos);
}

// inspect's table: the name last and cut, so the other columns stay narrow.
TEST(LayerInfo, InspectTableNameLastAndCut) {
  Graph graph = optimized_graph();
  optimizer::LayerReport report = compute_layer_info(graph, {}, {{"batch", 1}});
  report.layers[1].name = std::string(100, 'n');
  std::string table = tools::format_inspect_table(report, 20);
  EXPECT_EQ(table.rfind("Kind ", 0), 0u) << table;
  EXPECT_NE(table.find("  Name\n"), std::string::npos) << table;
  EXPECT_NE(table.find(" " + std::string(17, 'n') + "...\n"), std::string::npos) << table;
  EXPECT_EQ(table.find(std::string(18, 'n')), std::string::npos) << table;
  EXPECT_NE(tools::format_inspect_table(report, 0).find(std::string(100, 'n') + "\n"), std::string::npos);
  size_t longest = 0;
  for (size_t start = 0, end; (end = table.find('\n', start)) != std::string::npos; start = end + 1) {
    longest = std::max(longest, end - start);
  }
  EXPECT_LT(longest, 160u) << table;
}

TEST(LayerInfo, JsonHasLayersAndSummary) {
  Graph graph = optimized_graph();
  nlohmann::json json = tools::layer_report_to_json(compute_layer_info(graph, {{"add_3", "Add", "why"}}, {}));
  ASSERT_EQ(json["Layers"].size(), graph.nodes.size());
  EXPECT_EQ(json["Layers"][1]["Name"], "conv1 + bn1 + relu1");
  EXPECT_EQ(json["Layers"][1]["LayerType"], "Conv");
  EXPECT_EQ(json["Layers"][1]["Outputs"][0]["Datatype"], "uint8");
  EXPECT_EQ(json["Layers"][1]["Outputs"][0]["Format/Datatype"], "Row major linear UInt8 format");
  EXPECT_EQ(json["Layers"][1]["Outputs"][0]["ZeroPoint"], 3);
  EXPECT_EQ(json["Layers"][1]["Outputs"][0]["Dimensions"][0], -1);  // symbolic: -1, as TensorRT writes it
  EXPECT_EQ(json["Layers"][1]["Outputs"][0]["SymbolicDimensions"][0], "batch");
  EXPECT_EQ(json["Layers"][1]["ParameterType"], "Convolution");
  EXPECT_EQ(json["Bindings"], nlohmann::json::array());
  EXPECT_EQ(json["Layers"][0]["MACs"], nullptr);
  EXPECT_EQ(json["Summary"]["FloatReasons"][0]["Text"], "Add 'add_3': why");
  EXPECT_EQ(json["Summary"]["QuantizeLinearLeft"], 2);
}

// A Q fan-out's QRequantize (int8 zp 0 -> uint8 zp 128): an INT8 layer of kind Requantize
// with both zero-points, and neither Q/DQ nor inside an INT8 region.
TEST(LayerInfo, RequantizeLayer) {
  Graph graph;
  graph.opsets[""] = 13;
  graph.opsets[kQdqrtDomain] = 1;
  graph.inputs = {"a"};
  graph.outputs = {"b"};
  add_value(graph, "a", DataType::kInt8, dims({1, 8}));
  add_value(graph, "b", DataType::kUint8, dims({1, 8}));
  graph.initializers["as"] = Tensor::from_vector<float>({}, {0.1f});
  graph.initializers["az"] = Tensor::from_vector<int8_t>({}, {0});
  graph.initializers["bs"] = Tensor::from_vector<float>({}, {0.05f});
  graph.initializers["bz"] = Tensor::from_vector<uint8_t>({}, {128});
  graph.nodes.push_back(make_node("q_b", layers::kQRequantize, {"a", "as", "az", "bs", "bz"}, {"b"}, kQdqrtDomain));
  LayerReport report = compute_layer_info(graph, {});
  ASSERT_EQ(report.layers.size(), 1u);
  EXPECT_EQ(report.layers[0].kind, "Requantize");
  EXPECT_EQ(report.layers[0].precision, "INT8");
  ASSERT_EQ(report.layers[0].inputs.size(), 1u);
  EXPECT_EQ(report.layers[0].inputs[0].zero_point, 0);
  ASSERT_EQ(report.layers[0].outputs.size(), 1u);
  EXPECT_EQ(report.layers[0].outputs[0].zero_point, 128);
  EXPECT_EQ(report.summary.quantize_nodes, 0);
  EXPECT_TRUE(report.summary.qdq_inside_int8.empty());
}

TEST(LayerInfo, BindsInputSymbolsAndRejectsBadShapes) {
  Graph graph = optimized_graph();
  auto bound = bind_input_symbols(graph, {{"x", {8, 4, 8, 8}}});
  ASSERT_TRUE(bound.ok()) << bound.status().to_string();
  EXPECT_EQ(bound->at("batch"), 8);
  EXPECT_FALSE(bind_input_symbols(graph, {{"nope", {1}}}).ok());
  EXPECT_FALSE(bind_input_symbols(graph, {{"x", {8, 4, 8}}}).ok());
  auto static_mismatch = bind_input_symbols(graph, {{"x", {8, 5, 8, 8}}});
  ASSERT_FALSE(static_mismatch.ok());
  EXPECT_NE(static_mismatch.status().message().find("static dim 1 = 4"), std::string::npos);
}

}  // namespace
}  // namespace qdqrt::optimizer
