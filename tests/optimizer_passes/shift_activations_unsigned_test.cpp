#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

const std::vector<std::string> kShift = {"shift_activations_unsigned"};

// The zero-point initializer of the named node's input 2.
const Tensor& zero_point_of(const Graph& graph, const std::string& output) {
  for (const Node& node : graph.nodes) {
    if (node.outputs[0] == output) return graph.initializers.at(node.inputs[2]);
  }
  static const Tensor none;
  ADD_FAILURE() << "no node writes " << output;
  return none;
}

// A [1,4,5,5] model: x quantized to q1 (zp = -3 unless given), DQ'd to d1, a 1x1 int8 weight wd,
// then `body`.
Graph conv_model(const std::string& outputs, const std::string& body, const std::string& x_zero_point = "-3") {
  return parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,5,5] x) => ()" + outputs + R"()
    <float s = {0.05}, int8 zp = {)" + x_zero_point + R"(}, float s2 = {0.1}, int8 zp2 = {1}, float ws = {0.02},
     int8 zw = {0}, int8[4,4,1,1] w = {1, -2, 3, 4, -5, 6, 7, 8, 9, -10, 11, 12, 13, 14, -15, 16}>
    {
      q1 = QuantizeLinear(x, s, zp)
      d1 = DequantizeLinear(q1, s, zp)
      wd = DequantizeLinear(w, ws, zw)
)" + body + "\n    }");
}

TEST(ShiftActivationsUnsigned, ConvInputsBecomeUint8WithZeroPointPlus128) {
  // x -> Q -> DQ -> Conv -> Q -> DQ -> Conv: both activations feed a conv's data input.
  Graph graph = conv_model("float[1,4,5,5] y", R"(
      c1 = Conv(d1, wd)
      q2 = QuantizeLinear(c1, s2, zp2)
      d2 = DequantizeLinear(q2, s2, zp2)
      y = Conv(d2, wd))");
  Graph rewritten = run_passes(graph, kShift);
  EXPECT_EQ(op_sequence(rewritten), op_sequence(graph));
  for (const auto& [value, zero_point] : std::vector<std::pair<std::string, int>>{
           {"q1", 125}, {"d1", 125}, {"q2", 129}, {"d2", 129}}) {
    const Tensor& zp = zero_point_of(rewritten, value);
    ASSERT_EQ(zp.dtype(), DataType::kUint8) << value;
    EXPECT_EQ(zp.data<uint8_t>()[0], zero_point) << value;
  }
  EXPECT_EQ(rewritten.find_value("q1")->dtype, DataType::kUint8);
  // The weights' DQ keeps int8.
  EXPECT_EQ(zero_point_of(rewritten, "wd").dtype(), DataType::kInt8);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 7), 0.0, 0.0);
}

// A residual Add joins its operands and its quantized sum: all three shift together.
TEST(ShiftActivationsUnsigned, ResidualAddShiftsItsOperandsAndSumTogether) {
  Graph graph = conv_model("float[1,4,5,5] y", R"(
      c1 = Conv(d1, wd)
      q2 = QuantizeLinear(c1, s2, zp2)
      d2 = DequantizeLinear(q2, s2, zp2)
      a = Add(d2, d1)
      q3 = QuantizeLinear(a, s2, zp2)
      d3 = DequantizeLinear(q3, s2, zp2)
      y = Conv(d3, wd))", "0");
  Graph rewritten = run_passes(graph, kShift);
  for (const std::string value : {"q1", "q2", "q3"}) {
    EXPECT_EQ(zero_point_of(rewritten, value).dtype(), DataType::kUint8) << value;
  }
  expect_same_outputs(graph, rewritten, random_inputs(graph, 8), 0.0, 0.0);
}

TEST(ShiftActivationsUnsigned, MustNotFireWhereAnotherOpReadsTheTensor) {
  // The Add's other operand is also read by MaxPool: the whole Add component keeps int8.
  Graph pooled = conv_model("float[1,4,5,5] y, float[1,4,5,5] z", R"(
      c1 = Conv(d1, wd)
      q2 = QuantizeLinear(c1, s, zp)
      d2 = DequantizeLinear(q2, s, zp)
      m = MaxPool <kernel_shape = [1, 1]> (d2)
      a = Add(d1, d2)
      q3 = QuantizeLinear(a, s, zp)
      d3 = DequantizeLinear(q3, s, zp)
      y = Conv(d3, wd)
      z = Relu(m))");
  Graph rewritten = run_passes(pooled, kShift);
  for (const std::string value : {"q1", "q2", "q3"}) {
    EXPECT_EQ(zero_point_of(rewritten, value).dtype(), DataType::kInt8) << value;
  }
  // A float island (Sigmoid) reads the DQ; an attention-style MatMul reads it as its second
  // operand; the Q is a graph output: each keeps int8.
  for (const std::string reader : {"Sigmoid(d1)", "MatMul(d1, d1)"}) {
    Graph graph = parse_graph(std::string(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4,4] x) => (float[4,4] y)
      <float s = {0.05}, int8 zp = {0}>
      {
        q1 = QuantizeLinear(x, s, zp)
        d1 = DequantizeLinear(q1, s, zp)
        y = )") + reader + "\n}");
    EXPECT_EQ(zero_point_of(run_passes(graph, kShift), "q1").dtype(), DataType::kInt8) << reader;
  }
  Graph output = conv_model("int8[1,4,5,5] q1, float[1,4,5,5] y", "      y = Conv(d1, wd)");
  EXPECT_EQ(zero_point_of(run_passes(output, kShift), "q1").dtype(), DataType::kInt8);
}

// The writer must take the new type too: a Q fed by a GlobalAveragePool or a MaxPool (one type in
// and out) keeps int8 even though only a Conv reads it; an int8 Mul of DQs (a QMul) changes with
// its operands: together when nothing else reads them, not at all when a Sigmoid reads one.
TEST(ShiftActivationsUnsigned, MustNotFireWhereTheWriterKeepsItsInputType) {
  struct Case {
    std::string writer, extra_reader;
    DataType expected;
  };
  for (const Case& c : std::vector<Case>{{"GlobalAveragePool(d1)", "", DataType::kInt8},
                                         {"MaxPool <kernel_shape = [1, 1]> (d1)", "", DataType::kInt8},
                                         {"Mul(d1, d1)", "", DataType::kUint8},
                                         {"Mul(d1, d1)", "z = Sigmoid(d1)", DataType::kInt8}}) {
    const bool global = c.writer.rfind("Global", 0) == 0;
    std::string outputs = global ? "float[1,4,1,1] y" : "float[1,4,5,5] y";
    if (!c.extra_reader.empty()) outputs += ", float[1,4,5,5] z";
    Graph graph = conv_model(outputs, R"(
      m = )" + c.writer + R"(
      q2 = QuantizeLinear(m, s2, zp2)
      d2 = DequantizeLinear(q2, s2, zp2)
      y = Conv(d2, wd)
      )" + c.extra_reader);
    Graph rewritten = run_passes(graph, kShift);
    EXPECT_EQ(zero_point_of(rewritten, "q1").dtype(), c.expected)
        << c.writer << " " << c.extra_reader;
    EXPECT_EQ(zero_point_of(rewritten, "q2").dtype(), c.expected) << c.writer << " " << c.extra_reader;
    expect_same_outputs(graph, rewritten, random_inputs(graph, 11), 0.0, 0.0);
  }
}

// A MaxPool or Reshape that propagate_qdq left on the int8 tensor (ResNet's stem pool, read by two
// convs) is followed: its output shifts with its input. Must not fire where its Indices are read,
// where the pooled tensor is also a graph output, or where a Pad (its pad value is the zero-point)
// moves the bytes.
TEST(ShiftActivationsUnsigned, ByteMovingOpsOnInt8ShiftTheirInputAndOutputTogether) {
  struct Case {
    std::string outputs, mover;
    DataType expected;
  };
  for (const Case& c : std::vector<Case>{
           {"float[1,4,4,4] y, float[1,4,4,4] z", "m = MaxPool <kernel_shape = [2, 2]> (q2)", DataType::kUint8},
           {"float[1,4,4,4] y, float[1,4,4,4] z", "m0 = MaxPool <kernel_shape = [2, 2]> (q2)\n"
                                                   "m = Reshape(m0, shape)", DataType::kUint8},
           {"float[1,4,4,4] y, float[1,4,4,4] z, int64[1,4,4,4] i",
            "m, i = MaxPool <kernel_shape = [2, 2]> (q2)", DataType::kInt8},
           {"float[1,4,4,4] y, float[1,4,4,4] z, int8[1,4,4,4] m", "m = MaxPool <kernel_shape = [2, 2]> (q2)",
            DataType::kInt8},
           {"float[1,4,4,4] y, float[1,4,4,4] z", "m0 = MaxPool <kernel_shape = [2, 2]> (q2)\n"
                                                   "m = Pad <mode = \"edge\"> (m0, pads)", DataType::kInt8}}) {
    Graph graph = conv_model(c.outputs, R"(
      shape = Constant <value = int64[4] {1, 4, 4, 4}> ()
      pads = Constant <value = int64[8] {0, 0, 0, 0, 0, 0, 0, 0}> ()
      c1 = Conv(d1, wd)
      q2 = QuantizeLinear(c1, s2, zp2)
      )" + c.mover + R"(
      d3 = DequantizeLinear(m, s2, zp2)
      y = Conv(d3, wd)
      z = Conv(d3, wd))");
    Graph rewritten = run_passes(graph, kShift);
    EXPECT_EQ(zero_point_of(rewritten, "q2").dtype(), c.expected) << c.mover << " " << c.outputs;
    EXPECT_EQ(zero_point_of(rewritten, "d3").dtype(), c.expected) << c.mover << " " << c.outputs;
    EXPECT_EQ(rewritten.find_value("m")->dtype, c.expected) << c.mover << " " << c.outputs;
    expect_same_outputs(graph, rewritten, random_inputs(graph, 12), 0.0, 0.0);
  }
}

// ResNet's blocks: Add(the block's last conv, not quantized; DQ(block input)) goes into that
// conv's epilogue (the residual fusion), which reads a residual of either type: the block input,
// also read by the next convs, shifts. Must not fire where the conv's output has another reader
// (the Add stays a float Add), where the other operand is not a layer's, or where the Add
// broadcasts.
TEST(ShiftActivationsUnsigned, ResidualOfALayerEpilogueShifts) {
  struct Case {
    std::string outputs, add, extra;
    DataType expected;
  };
  for (const Case& c : std::vector<Case>{
           {"float[1,4,5,5] y", "a = Add(c2, d1)", "", DataType::kUint8},
           {"float[1,4,5,5] y", "a = Add(d1, c2)", "", DataType::kUint8},
           {"float[1,4,5,5] y, float[1,4,5,5] z", "a = Add(c2, d1)", "z = Relu(c2)", DataType::kInt8},
           {"float[1,4,5,5] y", "a = Add(x, d1)", "", DataType::kInt8},
           {"float[1,4,5,5] y", "a = Add(cb, d1)", "", DataType::kInt8}}) {
    Graph graph = conv_model(c.outputs, R"(
      c1 = Conv(d1, wd)
      q2 = QuantizeLinear(c1, s2, zp2)
      d2 = DequantizeLinear(q2, s2, zp2)
      c2 = Conv(d2, wd)
      p = ReduceMean <axes = [2, 3], keepdims = 1> (c1)
      cb = Mul(p, p)
      )" + c.add + R"(
      r = Relu(a)
      q3 = QuantizeLinear(r, s2, zp2)
      d3 = DequantizeLinear(q3, s2, zp2)
      y = Conv(d3, wd)
      )" + c.extra, "0");
    Graph rewritten = run_passes(graph, kShift);
    EXPECT_EQ(zero_point_of(rewritten, "q1").dtype(), c.expected) << c.add << " " << c.extra;
    EXPECT_EQ(zero_point_of(rewritten, "q3").dtype(), DataType::kUint8) << c.add;  // written by a float Quantize
    expect_same_outputs(graph, rewritten, random_inputs(graph, 13), 0.0, 0.0);
  }
}

// Writers whose layers requantize into any type: a table (Sigmoid; SiLU as x * sigmoid(x) with
// the sigmoid quantized between) shifts its output while its input keeps int8.
TEST(ShiftActivationsUnsigned, TableWritersShiftTheirOutputOnly) {
  Graph graph = conv_model("float[1,4,5,5] y, float[1,4,5,5] z", R"(
      g = Sigmoid(d1)
      qg = QuantizeLinear(g, s2, zp2)
      dg = DequantizeLinear(qg, s2, zp2)
      m = Mul(d1, dg)
      q2 = QuantizeLinear(m, s2, zp2)
      d2 = DequantizeLinear(q2, s2, zp2)
      y = Conv(d2, wd)
      t = Tanh(d1)
      q3 = QuantizeLinear(t, s2, zp2)
      d3 = DequantizeLinear(q3, s2, zp2)
      z = Conv(d3, wd))");
  Graph rewritten = run_passes(graph, kShift);
  EXPECT_EQ(zero_point_of(rewritten, "q1").dtype(), DataType::kInt8);
  EXPECT_EQ(zero_point_of(rewritten, "qg").dtype(), DataType::kInt8);  // read by the Mul only
  EXPECT_EQ(zero_point_of(rewritten, "q2").dtype(), DataType::kUint8);
  EXPECT_EQ(zero_point_of(rewritten, "q3").dtype(), DataType::kUint8);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 9), 0.0, 0.0);
}

// DQ -> Relu/Clip -> Q (ONNX Runtime's s8 exports) folds into the layer before it only with equal
// parameters on both sides: the clamp's input and output shift together, or neither does.
TEST(ShiftActivationsUnsigned, ClampInputAndOutputShiftTogether) {
  Graph graph = conv_model("float[1,4,5,5] y", R"(
      c1 = Conv(d1, wd)
      q2 = QuantizeLinear(c1, s2, zp2)
      d2 = DequantizeLinear(q2, s2, zp2)
      r = Relu(d2)
      q3 = QuantizeLinear(r, s2, zp2)
      d3 = DequantizeLinear(q3, s2, zp2)
      y = Conv(d3, wd))");
  Graph rewritten = run_passes(graph, kShift);
  for (const std::string value : {"q1", "q2", "q3"}) {
    EXPECT_EQ(zero_point_of(rewritten, value).dtype(), DataType::kUint8) << value;
  }
  expect_same_outputs(graph, rewritten, random_inputs(graph, 10), 0.0, 0.0);
  // The clamp's input is also a graph output: neither side shifts.
  Graph kept = conv_model("float[1,4,5,5] y, int8[1,4,5,5] q2", R"(
      c1 = Conv(d1, wd)
      q2 = QuantizeLinear(c1, s2, zp2)
      d2 = DequantizeLinear(q2, s2, zp2)
      r = Relu(d2)
      q3 = QuantizeLinear(r, s2, zp2)
      d3 = DequantizeLinear(q3, s2, zp2)
      y = Conv(d3, wd))");
  Graph kept_rewritten = run_passes(kept, kShift);
  EXPECT_EQ(zero_point_of(kept_rewritten, "q2").dtype(), DataType::kInt8);
  EXPECT_EQ(zero_point_of(kept_rewritten, "q3").dtype(), DataType::kInt8);
}

}  // namespace
}  // namespace qdqrt::testing
