// Reference Gemm and MatMul (float32), accumulating in double.
#include "core/ops/matmul.h"
#include "reference/kernel_registry.h"
#include "reference/ops/batched_matmul.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/op_helpers.h"
#include "reference/ops/family_kernels.h"

namespace qdqrt {

namespace {

using namespace reference;

Status gemm_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const GemmAttributes* typed, typed_attributes<GemmAttributes>(node));
  const GemmAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* a, required_input(node, inputs, 0, "A"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b, required_input(node, inputs, 1, "B"));
  const Tensor* c = optional_input(inputs, 2);
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *a, "input A", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *b, "input B", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_rank(node, *a, "input A", 2));
  QDQRT_RETURN_IF_ERROR(expect_rank(node, *b, "input B", 2));
  const int64_t m = attributes.trans_a ? a->dim(1) : a->dim(0);
  const int64_t k = attributes.trans_a ? a->dim(0) : a->dim(1);
  const int64_t b_k = attributes.trans_b ? b->dim(1) : b->dim(0);
  const int64_t n = attributes.trans_b ? b->dim(0) : b->dim(1);
  if (k != b_k) {
    return invalid_argument("{}: inner dimensions differ: A {} (transA={}) and B {} (transB={})", node.describe(),
                            shape_to_string(a->shape()), attributes.trans_a, shape_to_string(b->shape()),
                            attributes.trans_b);
  }
  // C broadcasts unidirectionally to [M, N].
  std::vector<int64_t> c_offsets;
  std::vector<double> c_values;
  if (c != nullptr) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *c, "input C", {DataType::kFloat}));
    QDQRT_ASSIGN_OR_RETURN(Shape broadcast, broadcast_shapes(node, {c->shape(), {m, n}}));
    if (broadcast != Shape{m, n}) {
      return invalid_argument("{}: C {} does not broadcast to [{}, {}]", node.describe(), shape_to_string(c->shape()), m, n);
    }
    c_offsets = broadcast_offsets(c->shape(), {m, n});
    c_values = to_doubles(*c);
  }
  const std::vector<double> a_values = to_doubles(*a);
  const std::vector<double> b_values = to_doubles(*b);
  Tensor output(DataType::kFloat, {m, n});
  float* out = output.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        double a_value = attributes.trans_a ? a_values[static_cast<size_t>(p * m + i)] : a_values[static_cast<size_t>(i * k + p)];
        double b_value = attributes.trans_b ? b_values[static_cast<size_t>(j * k + p)] : b_values[static_cast<size_t>(p * n + j)];
        sum += a_value * b_value;
      }
      double result = static_cast<double>(attributes.alpha) * sum;
      if (c != nullptr) result += static_cast<double>(attributes.beta) * c_values[static_cast<size_t>(c_offsets[static_cast<size_t>(i * n + j)])];
      out[i * n + j] = static_cast<float>(result);
    }
  }
  outputs[0] = std::move(output);
  return Status::ok();
}

Status matmul_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* a, required_input(node, inputs, 0, "A"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b, required_input(node, inputs, 1, "B"));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *a, "input A", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *b, "input B", {DataType::kFloat}));
  QDQRT_ASSIGN_OR_RETURN(MatMulPlan plan, plan_matmul(node, a->shape(), b->shape()));
  std::vector<double> product = batched_matmul(to_doubles(*a), to_doubles(*b), plan);
  Tensor output(DataType::kFloat, plan.output_shape);
  float* out = output.data<float>();
  for (size_t i = 0; i < product.size(); ++i) out[i] = static_cast<float>(product[i]);
  outputs[0] = std::move(output);
  return Status::ok();
}

}  // namespace

void register_matmul_kernels(KernelRegistry& registry) {
  registry.add("", "Gemm", gemm_kernel);
  registry.add("", "MatMul", matmul_kernel);
  register_einsum_kernels(registry);
}

}  // namespace qdqrt
