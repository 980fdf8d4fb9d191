#include "reference/ops/batched_matmul.h"

#include "reference/ops/broadcast.h"

namespace qdqrt::reference {

Result<MatMulPlan> plan_matmul(const Node& node, const Shape& a_shape, const Shape& b_shape) {
  if (a_shape.empty() || b_shape.empty()) {
    return invalid_argument("{}: MatMul inputs must have rank >= 1, got A {} and B {}", node.describe(),
                            shape_to_string(a_shape), shape_to_string(b_shape));
  }
  Shape a = a_shape, b = b_shape;
  const bool a_is_vector = a.size() == 1, b_is_vector = b.size() == 1;
  if (a_is_vector) a.insert(a.begin(), 1);
  if (b_is_vector) b.push_back(1);
  MatMulPlan plan;
  plan.m = a[a.size() - 2];
  plan.k = a[a.size() - 1];
  plan.n = b[b.size() - 1];
  if (b[b.size() - 2] != plan.k) {
    return invalid_argument("{}: inner dimensions differ: A {} and B {}", node.describe(), shape_to_string(a_shape),
                            shape_to_string(b_shape));
  }
  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  QDQRT_ASSIGN_OR_RETURN(Shape batch_shape, broadcast_shapes(node, {a_batch, b_batch}));
  plan.a_offsets = broadcast_offsets(a_batch, batch_shape);
  plan.b_offsets = broadcast_offsets(b_batch, batch_shape);
  for (int64_t& offset : plan.a_offsets) offset *= plan.m * plan.k;
  for (int64_t& offset : plan.b_offsets) offset *= plan.k * plan.n;
  plan.output_shape = batch_shape;
  if (!a_is_vector) plan.output_shape.push_back(plan.m);
  if (!b_is_vector) plan.output_shape.push_back(plan.n);
  return plan;
}

}  // namespace qdqrt::reference
