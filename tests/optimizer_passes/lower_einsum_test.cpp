// lower_einsum: each matrix-product form becomes Transpose/Unsqueeze/MatMul nodes computing what
// the reference Einsum kernel computes; other equations stay Einsum (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

std::string einsum_model(const std::string& a, const std::string& b, const std::string& y, const std::string& equation,
                         int opset = 13) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (float" + a + " a, float" + b +
         " b) => (float" + y + " y)\n{\n  y = Einsum<equation = \"" + equation + "\">(a, b)\n}\n";
}

struct Form {
  const char* equation;
  const char* a;
  const char* b;
  const char* y;
  const char* ops;  // the lowered graph's op sequence
};

TEST(LowerEinsum, MatrixProductFormsBecomeMatMulAndMatchTheReference) {
  const Form forms[] = {
      // attention scores (B transposed) and attention output (plain batched MatMul)
      {"bhid,bhjd->bhij", "[2,3,4,5]", "[2,3,6,5]", "[2,3,4,6]", "Transpose,MatMul"},
      {"bhij,bhjd->bhid", "[2,3,4,6]", "[2,3,6,5]", "[2,3,4,5]", "MatMul"},
      {"bij,bjk->bik", "[2,4,5]", "[2,5,3]", "[2,4,3]", "MatMul"},
      {"ij,jk->ik", "[4,5]", "[5,3]", "[4,3]", "MatMul"},
      {"ij,jk", "[4,5]", "[5,3]", "[4,3]", "MatMul"},  // implicit output "ik"
      // the output transposed, and A given K-major
      {"ij,jk->ki", "[4,5]", "[5,3]", "[3,4]", "MatMul,Transpose"},
      {"ji,jk->ik", "[5,4]", "[5,3]", "[4,3]", "Transpose,MatMul"},
      // a batch letter of A only: B broadcasts over it (Unsqueeze); a batch dim of 1 broadcasts
      {"bnid,jd->bnij", "[2,3,4,5]", "[6,5]", "[2,3,4,6]", "Transpose,Unsqueeze,MatMul"},
      {"bij,bjk->bik", "[1,4,5]", "[3,5,2]", "[3,4,2]", "MatMul"},
  };
  for (const Form& form : forms) {
    SCOPED_TRACE(form.equation);
    Graph graph = parse_graph(einsum_model(form.a, form.b, form.y, form.equation));
    Graph rewritten = run_passes(graph, {"lower_einsum"});
    EXPECT_EQ(op_sequence(rewritten), form.ops);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 21), 1e-5, 1e-5);
    const ValueInfo* y = rewritten.find_value("y");
    ASSERT_NE(y, nullptr);
    ASSERT_TRUE(y->static_shape().has_value());
  }
}

TEST(LowerEinsum, OpsetTwelveUnsqueezeTakesAxesAsAnAttribute) {
  Graph graph = parse_graph(einsum_model("[2,4,5]", "[5,3]", "[2,4,3]", "bij,jk->bik", 12));
  Graph rewritten = run_passes(graph, {"lower_einsum"});
  EXPECT_EQ(op_sequence(rewritten), "Unsqueeze,MatMul");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 22), 1e-5, 1e-5);
}

// Between Q/DQ pairs (a quantized attention), the lowered MatMul is what the INT8 fusions take:
// no float MatMul and no Einsum are left, only the output's DequantizeLinear.
TEST(LowerEinsum, QuantizedAttentionBecomesAnInt8MatMul) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 16]>
    g (float[1,2,8,4] q, float[1,2,8,4] k) => (float[1,2,8,8] y)
    <float s = {0.05}, int8 z = {0}>
    {
      qq = QuantizeLinear(q, s, z)
      qd = DequantizeLinear(qq, s, z)
      kq = QuantizeLinear(k, s, z)
      kd = DequantizeLinear(kq, s, z)
      scores = Einsum<equation = "bhid,bhjd->bhij">(qd, kd)
      sq = QuantizeLinear(scores, s, z)
      y = DequantizeLinear(sq, s, z)
    })");
  Graph optimized = graph;
  ASSERT_TRUE(optimizer::optimize(optimized).ok());
  EXPECT_EQ(count_ops(optimized, "Einsum"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "MatMul"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "DequantizeLinear"), 1) << op_sequence(optimized);
  expect_same_outputs(graph, optimized, random_inputs(graph, 23), 1e-5, 1e-5);
}

TEST(LowerEinsum, MustNotFire) {
  const Form kept[] = {
      {"...ij,...jk->...ik", "[2,4,5]", "[2,5,3]", "[2,4,3]", "Einsum"},  // ellipsis
      {"ij,jk->k", "[4,5]", "[5,3]", "[3]", "Einsum"},                    // i summed within A
      {"i,i->", "[4]", "[4]", "[]", "Einsum"},                            // no kept letters
      {"ij,ij->ij", "[4,5]", "[4,5]", "[4,5]", "Einsum"},                 // nothing contracted
      {"ijk,jk->i", "[2,4,5]", "[4,5]", "[2]", "Einsum"},                 // two contracted letters
      {"ii,ij->ij", "[4,4]", "[4,5]", "[4,5]", "Einsum"},                 // a diagonal
  };
  for (const Form& form : kept) {
    SCOPED_TRACE(form.equation);
    Graph graph = parse_graph(einsum_model(form.a, form.b, form.y, form.equation));
    Graph rewritten = run_passes(graph, {"lower_einsum"});
    EXPECT_EQ(op_sequence(rewritten), form.ops);
  }
  // A matrix product in double stays an Einsum: MatMul runs float32.
  std::string model = einsum_model("[2,4,5]", "[2,5,3]", "[2,4,3]", "bij,bjk->bik");
  for (size_t at = model.find("float"); at != std::string::npos; at = model.find("float", at)) {
    model.replace(at, 5, "double");
  }
  Graph rewritten = run_passes(parse_graph(model), {"lower_einsum"});
  EXPECT_EQ(op_sequence(rewritten), "Einsum");
}

}  // namespace
}  // namespace qdqrt::testing
