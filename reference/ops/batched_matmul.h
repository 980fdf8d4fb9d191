// Numpy matmul for the reference's MatMul, Gemm, MatMulInteger, QLinearMatMul and the fused
// QMatMul: shapes with broadcast batch axes, then a batched product in the accumulator type.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::reference {

// Numpy matmul shapes: 1-D A is a row vector, 1-D B a column vector (their unit axis dropped
// from the output); leading batch axes broadcast.
struct MatMulPlan {
  int64_t m = 1, k = 1, n = 1;
  Shape output_shape;
  std::vector<int64_t> a_offsets;  // per output batch, the first element of its A matrix
  std::vector<int64_t> b_offsets;
};
Result<MatMulPlan> plan_matmul(const Node& node, const Shape& a_shape, const Shape& b_shape);

// Batched product of values already converted to the accumulator type; returns the output's
// elements row-major.
template <class Acc>
std::vector<Acc> batched_matmul(const std::vector<Acc>& a, const std::vector<Acc>& b, const MatMulPlan& plan) {
  const size_t batches = plan.a_offsets.size();
  std::vector<Acc> out(batches * static_cast<size_t>(plan.m * plan.n), Acc(0));
  for (size_t batch = 0; batch < batches; ++batch) {
    const Acc* a_matrix = a.data() + plan.a_offsets[batch];
    const Acc* b_matrix = b.data() + plan.b_offsets[batch];
    Acc* out_matrix = out.data() + static_cast<int64_t>(batch) * plan.m * plan.n;
    for (int64_t i = 0; i < plan.m; ++i) {
      Acc* out_row = out_matrix + i * plan.n;
      for (int64_t p = 0; p < plan.k; ++p) {
        const Acc a_value = a_matrix[i * plan.k + p];
        const Acc* b_row = b_matrix + p * plan.n;
        for (int64_t j = 0; j < plan.n; ++j) out_row[j] += a_value * b_row[j];
      }
    }
  }
  return out;
}

}  // namespace qdqrt::reference
