// fuse_constant_operand_lookup: a QAdd/QMul of one constant value (ONNX Runtime's quantize_static
// writes GELU's + 1 and * 0.5 as u8 initializers read through a DequantizeLinear) becomes one
// QLookup "ConstantAdd"/"ConstantMul": structure, bit-equal numbers, must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x -> Q/DQ -> `body` (reads xd, writes v; constants c (scalar u8), v3 ([7] u8), r4 ([1,1,1,1] u8))
// -> Q/DQ -> y. Swin-T's GELU on ORT's scales: x in [-1, 1] (2/255, zp 128), 1 at code 255 of
// 1/255, the sum in [0, 2] (2/255, zp 0): every sum lands on a .5.
std::string model(const std::string& body, const std::string& outputs = "") {
  return fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2,6,7] x) => (float[2,6,7] y{})\n"
      "<float xs = {{0.007843138}}, uint8 xz = {{128}}, uint8 c = {{255}}, float cs = {{0.003921569}}, uint8 cz = {{0}},"
      " uint8[7] v3 = {{10, 200, 255, 0, 7, 99, 128}}, uint8[1,1,1,1] r4 = {{255}}, float ys = {{0.007843138}}, uint8 yz = {{0}}>\n{{\n"
      "xq = QuantizeLinear(x, xs, xz)\nxd = DequantizeLinear(xq, xs, xz)\ncd = DequantizeLinear(c, cs, cz)\n"
      "{}vq = QuantizeLinear(v, ys, yz)\ny = DequantizeLinear(vq, ys, yz)\n}}\n",
      outputs, body);
}

Graph fuse(const std::string& text) {
  Graph original = load_text(text);
  optimizer::PassContext context;
  Graph graph = original;
  for (const char* name : {"fuse_qdq_binary", "fuse_qdq_clamp", "fuse_constant_operand_lookup"}) {
    optimizer::FusionPass pass(name);
    graph = run_pass(graph, pass, context);
  }
  std::mt19937 rng(9);
  expect_same_outputs(original, graph, random_inputs(original, rng, -1.2f, 1.2f), 0.0f);
  return graph;
}

TEST(FuseConstantOperandLookup, AddOrMulOfOneConstantBecomesOneTable) {
  for (const auto& [body, function, operand] : std::vector<std::tuple<std::string, LookupFunction, float>>{
           {"v = Add(xd, cd)\n", LookupFunction::kConstantAdd, 1.0f},
           {"v = Add(cd, xd)\n", LookupFunction::kConstantAdd, 1.0f},
           {"v = Mul(cd, xd)\n", LookupFunction::kConstantMul, 1.0f},
           {"hd = DequantizeLinear(c, xs, xz)\nv = Mul(xd, hd)\n", LookupFunction::kConstantMul, 127 * 0.007843138f}}) {
    SCOPED_TRACE(body);
    Graph fused = fuse(model(body));
    EXPECT_EQ(count_ops(fused, layers::kQAdd) + count_ops(fused, layers::kQMul), 0);
    ASSERT_EQ(count_ops(fused, layers::kQLookup), 1);
    const auto& attributes = find_op(fused, layers::kQLookup)->attrs<QLookupAttributes>();
    EXPECT_EQ(attributes.function, function);
    EXPECT_FLOAT_EQ(attributes.operand, operand);
    // The whole pipeline takes it too.
    Graph optimized = load_text(model(body));
    auto report = optimizer::optimize(optimized);
    ASSERT_TRUE(report.ok()) << report.status().to_string();
    EXPECT_EQ(count_ops(optimized, layers::kQLookup), 1);
  }
}

TEST(FuseConstantOperandLookup, MustNotFire) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // a constant of several values (a per-channel bias)
      {"v3d = DequantizeLinear(v3, cs, cz)\nv = Add(xd, v3d)\n", ""},
      // both operands computed at run time
      {"v = Add(xd, xd)\n", ""},
      // an activation joins the QAdd: the table would have to hold it too
      {"s = Add(xd, cd)\nv = Relu(s)\n", ""},
      // a constant of a higher rank than x: the sum broadcasts up
      {"r4d = DequantizeLinear(r4, cs, cz)\nv = Add(xd, r4d)\n", ""},
  };
  for (const auto& [body, outputs] : cases) {
    SCOPED_TRACE(body);
    std::string text = model(body, outputs);
    if (body.find("r4d") != std::string::npos) text.replace(text.find("float[2,6,7] y"), 14, "float[1,2,6,7] y");
    Graph fused = fuse(text);
    EXPECT_EQ(count_ops(fused, layers::kQLookup), 0);
  }
}

}  // namespace
}  // namespace qdqrt::testing
