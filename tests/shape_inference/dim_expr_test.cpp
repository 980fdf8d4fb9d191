#include "core/dim_expr.h"

#include <gtest/gtest.h>

#include "core/shape_inference.h"

namespace qdqrt {
namespace {

const DimExpr N = DimExpr::symbol("N");
DimExpr c(int64_t value) { return DimExpr::constant(value); }

TEST(DimExpr, ConstantsFoldAndSymbolsEvaluate) {
  EXPECT_EQ((c(3) + c(4)).constant_value(), 7);
  EXPECT_EQ(floor_div(c(-7), c(2)).constant_value(), -4);  // floor, as a dim computation needs
  EXPECT_EQ(ceil_div(c(7), c(2)).constant_value(), 4);
  EXPECT_EQ(mod(c(-7), c(3)).constant_value(), 2);
  EXPECT_FALSE(N.is_constant());
  EXPECT_EQ((c(3) * N + c(1)).evaluate({{"N", 5}}), 16);
  EXPECT_EQ(N.evaluate({}), std::nullopt);  // no value for the symbol
  EXPECT_EQ(floor_div(N, c(0)).evaluate({{"N", 5}}), std::nullopt);
  EXPECT_EQ((c(INT64_MAX) * N).evaluate({{"N", 2}}), std::nullopt);  // overflow is not a value
  EXPECT_FALSE(DimExpr().known());
  EXPECT_FALSE((DimExpr() + N).known());
}

TEST(DimExpr, SimplifiesTheFormsReshapeMakes) {
  // (N * 49 * 384) // (49 * 384) is N: the inferred dim of a Reshape to [-1, 49, 384].
  const DimExpr numel = N * c(49) * c(384);
  EXPECT_EQ(numel.to_string(), "18816*N");
  EXPECT_TRUE(floor_div(numel, c(49 * 384)).same_as(N));
  EXPECT_EQ(floor_div(numel, c(384)).to_string(), "49*N");
  EXPECT_TRUE((N + c(0)).same_as(N));
  EXPECT_TRUE((c(1) * N).same_as(N));
  EXPECT_EQ((c(0) * N).constant_value(), 0);
  EXPECT_TRUE(max(N, N).same_as(N));
  EXPECT_EQ((c(2) * N * (c(3) * N)).to_string(), "6*(N*N)");
  // A Reshape to [N, -1, 192] of N*6272*192 values: (1204224*N)//(192*N) is 6272, and x//x is 1.
  EXPECT_EQ(floor_div(N * c(6272 * 192), N * c(192)).constant_value(), 6272);
  EXPECT_EQ(floor_div(N * c(7), N * c(2)).constant_value(), 3);
  EXPECT_EQ(floor_div(N, N).constant_value(), 1);
  EXPECT_EQ(floor_div(N * c(8), DimExpr::symbol("H") * c(2)).constant_value(), std::nullopt);  // other dims
  // Not simplified, still exact: (N + 1) // 2.
  const DimExpr half = floor_div(N + c(1), c(2));
  EXPECT_EQ(half.evaluate({{"N", 7}}), 4);
  EXPECT_EQ(half.symbols(), std::vector<std::string>{"N"});
  EXPECT_TRUE(half.depends_on("N"));
  EXPECT_FALSE(half.depends_on("H"));
  EXPECT_FALSE(DimExpr().same_as(DimExpr()));
}

TEST(DimArithmetic, ValuesAndExpressionsTogether) {
  const Dim batch = symbolic_dim("N", 4);
  const Dim product = batch * static_dim(3);
  EXPECT_EQ(product.value, 12);
  EXPECT_EQ(product.expr.to_string(), "3*N");
  EXPECT_EQ(floor_div(product, static_dim(3)).expr.to_string(), "N");
  // A value below zero is no dim: no value, no expression.
  const Dim negative = static_dim(2) - static_dim(5);
  EXPECT_FALSE(negative.is_static());
  // An unknown value with a known expression (inspect, no shapes given).
  const Dim unbound = symbolic_dim("N") + static_dim(1);
  EXPECT_FALSE(unbound.is_static());
  EXPECT_EQ(unbound.expr.evaluate({{"N", 2}}), 3);
  EXPECT_TRUE(same_dim(batch, symbolic_dim("N", 4)));
  EXPECT_FALSE(same_dim(batch, static_dim(4)));  // equal here, not everywhere
  EXPECT_EQ(dims_product({batch, static_dim(2), static_dim(5)}).expr.to_string(), "10*N");
}

}  // namespace
}  // namespace qdqrt
