// The fused op table (core/ops/fused_op_table.h): every qdqrt-domain op the registry accepts has a
// complete row, and each row walks the steps docs/adding_an_op.md lists for a fused op: its parser
// reads a sample node, its reference kernel runs it, its shape function gives the kernel's output
// shape and carries a symbolic batch, and inspect, layer_kind and the layer JSON read one kind and
// one type from it.
#include "core/ops/fused_op_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/op_registry.h"
#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/layer_info.h"
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
        if (!dim.is_static()) dim = Dim{.value = kBatch, .symbol = {}};
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

TEST(FusedOpTable, ShapeFunctionsRefuseWhatDoesNotFit) {
  auto row_of = [](const char* op_type) {
    const FusedOpRow* row = find_fused_op(op_type);
    EXPECT_NE(row, nullptr);
    return row;
  };
  auto dims = [](std::vector<int64_t> values) {
    Dims result;
    for (int64_t value : values) result.push_back(Dim{.value = value, .symbol = {}});
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
  binary[layers::kBinaryA] = Dims{Dim{.value = -1, .symbol = "N"}, Dim{.value = -1, .symbol = "M"}};
  binary[layers::kBinaryB] = Dims{Dim{.value = -1, .symbol = "K"}, Dim{.value = 3, .symbol = {}}};
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

}  // namespace
}  // namespace qdqrt::testing
