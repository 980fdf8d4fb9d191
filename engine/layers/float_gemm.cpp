// fp32 Gemm and MatMul with a constant B, kind "fp32_gemm": Y[rows, N] = alpha * A[rows, K] x B + bias.
// A is any rank >= 2 activation (MatMul: the leading dims are rows; Gemm: [M, K], transA = 0);
// B is the constant [K, N] (or [N, K] with transB), stored as given. Gemm's beta * C becomes the
// bias when C is a constant scalar, [N] or [1, N]. Work items: blocks of rows x blocks of columns,
// the row blocks counted from each image's first row: a row's GEMM call (and so its bits, which
// depend on the call's size) is the same whatever the batch.
#include <algorithm>

#include <fmt/format.h>

#include "engine/layers/float_common.h"
#include "core/ops/matmul.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kKind = "fp32_gemm";

struct GemmShape {
  int64_t k = 0, n = 0;
  bool trans_b = false;
  float alpha = 1.0f;
  int64_t row_block = 1, col_block = 1;
};

class GemmLayer final : public Layer {
 public:
  // rows_per_image: A's rows per image when it is batched, else 0 (all rows are one "image").
  GemmLayer(GemmShape shape, const float* b, const float* bias, int32_t input, int32_t output, int64_t rows_per_image,
            kernels::Fp32Kernels fp32)
      : s_(shape), b_(b), bias_(bias), input_(input), output_(output), rows_per_image_(rows_per_image), fp32_(fp32) {}

  WorkShape work(const RunState& state) const override {
    const int64_t rows = image_rows(state);
    return {.items = images(state) * row_blocks(rows) * col_blocks(),
            .ops_per_item = 2.0 * static_cast<double>(std::min(rows, s_.row_block) * std::min(s_.n, s_.col_block) * s_.k)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t rows = image_rows(state);
    const int64_t blocks_per_image = row_blocks(rows) * col_blocks();
    const float* a = state.data<float>(input_);
    float* y = state.data<float>(output_);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / blocks_per_image, block = item % blocks_per_image;
      const int64_t block_row = (block / col_blocks()) * s_.row_block;
      const int64_t row_begin = image * rows + block_row;
      const int64_t col_begin = (block % col_blocks()) * s_.col_block;
      kernels::Fp32GemmParams params;
      params.m = static_cast<size_t>(std::min(s_.row_block, rows - block_row));
      params.n = static_cast<size_t>(std::min(s_.col_block, s_.n - col_begin));
      params.k = static_cast<size_t>(s_.k);
      params.transpose_b = s_.trans_b;
      params.alpha = s_.alpha;
      const float* b = s_.trans_b ? b_ + col_begin * s_.k : b_ + col_begin;
      gemm_in_stack_sized_calls(fp32_, params, a + row_begin * s_.k, static_cast<size_t>(s_.k), b,
                    static_cast<size_t>(s_.trans_b ? s_.k : s_.n), bias_ ? bias_ + col_begin : nullptr,
                    y + row_begin * s_.n + col_begin, static_cast<size_t>(s_.n));
    }
  }

 private:
  int64_t col_blocks() const { return (s_.n + s_.col_block - 1) / s_.col_block; }
  int64_t row_blocks(int64_t rows) const { return (rows + s_.row_block - 1) / s_.row_block; }
  int64_t images(const RunState& state) const { return rows_per_image_ > 0 ? state.batch : 1; }
  int64_t image_rows(const RunState& state) const {
    if (rows_per_image_ > 0) return rows_per_image_;
    return s_.k ? state.numel(input_) / s_.k : 0;
  }

  GemmShape s_;
  const float* b_;
  const float* bias_;
  int32_t input_, output_;
  int64_t rows_per_image_;
  kernels::Fp32Kernels fp32_;
};

Result<std::unique_ptr<Layer>> bind_gemm(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* a, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *a, "input", DataType::kFloat, -1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, -1));
  GemmShape s;
  QDQRT_ASSIGN_OR_RETURN(s.k, params::kK.read(context));
  QDQRT_ASSIGN_OR_RETURN(s.n, params::kN.read(context));
  QDQRT_ASSIGN_OR_RETURN(s.trans_b, params::kTransposeB.read(context));
  QDQRT_ASSIGN_OR_RETURN(s.alpha, params::kAlpha.read(context));
  QDQRT_ASSIGN_OR_RETURN(s.row_block, params::kRowBlock.read(context));
  QDQRT_ASSIGN_OR_RETURN(s.col_block, params::kColumnBlock.read(context));
  if (a->shape.size() < 2 || a->shape.size() != y->shape.size() || a->shape.back() != s.k || y->shape.back() != s.n ||
      !std::equal(a->shape.begin(), a->shape.end() - 1, y->shape.begin()) || a->batched != y->batched) {
    return context.error(fmt::format("input {} and output {} do not fit k={} n={}", shape_to_string(a->shape),
                                     shape_to_string(y->shape), s.k, s.n));
  }
  if (safe_numel({s.k, s.n}) < 0) return context.error("B is too large");
  // A block larger than the matrix is one block (and keeps rows + row_block from overflowing).
  s.col_block = std::min(s.col_block, std::max<int64_t>(s.n, 1));
  s.row_block = std::min(s.row_block, std::max<int64_t>(s.k > 0 ? safe_numel(a->shape) / s.k : 0, 1));
  QDQRT_ASSIGN_OR_RETURN(const float* b, params::kB.read(context, s.k * s.n));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read_optional(context, s.n));
  const int64_t rows_per_image = a->batched ? safe_numel(a->shape) / s.k / context.plan().max_batch : 0;
  return std::unique_ptr<Layer>(std::make_unique<GemmLayer>(s, b, bias, context.layer().inputs[0],
                                                            context.layer().outputs[0], rows_per_image,
                                                            kernels::fp32_kernels(bind_isa(context.plan()))));
}

// Shared by Gemm and MatMul once the operands are known.
Status add_gemm_layer(const Node& node, BuildContext& context, const Tensor& b, bool trans_b, float alpha,
                      const std::vector<float>& bias) {
  GemmShape s;
  s.trans_b = trans_b;
  s.k = trans_b ? b.dim(1) : b.dim(0);
  s.n = trans_b ? b.dim(0) : b.dim(1);
  s.alpha = alpha;
  // Work items of 64 x 64 (also the GEMM call size, float_common.h; a 1-row FC layer still splits).
  s.row_block = kGemmMaxRows;
  s.col_block = std::min<int64_t>(s.n, kGemmMaxColumns);
  const kernels::Fp32Kernels fp32 = kernels::fp32_kernels(kernels::usable_isa(context.isa()));
  PlanLayer layer = make_layer(node, kKind, fp32.gemm.name);
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {input};
  layer.outputs = {output};
  params::kK.write(layer, s.k);
  params::kN.write(layer, s.n);
  params::kTransposeB.write(layer, s.trans_b);
  params::kAlpha.write(layer, s.alpha);
  params::kRowBlock.write(layer, s.row_block);
  params::kColumnBlock.write(layer, s.col_block);
  params::kB.write_bytes(layer, b.raw_data(), b.nbytes());
  if (!bias.empty()) params::kBias.write(layer, bias);
  context.add_layer(std::move(layer));
  return Status::ok();
}

Status lower_matmul(const Node& node, BuildContext& context) {
  const Tensor* b = context.constant(node.input(1));
  auto a_shape = context.shape_of(node.input(0));
  if (b == nullptr || b->dtype() != DataType::kFloat || b->rank() != 2 || !a_shape.ok() || a_shape->size() < 2 ||
      a_shape->back() != b->dim(0) || context.constant(node.input(0)) != nullptr) {
    return lower_with_reference(node, context);  // runtime or batched B, vector A, ...
  }
  return add_gemm_layer(node, context, *b, false, 1.0f, {});
}

Status lower_gemm(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<GemmAttributes>();
  const Tensor* b = context.constant(node.input(1));
  auto a_shape = context.shape_of(node.input(0));
  if (attributes.trans_a || b == nullptr || b->dtype() != DataType::kFloat || b->rank() != 2 || !a_shape.ok() ||
      a_shape->size() != 2 || context.constant(node.input(0)) != nullptr) {
    return lower_with_reference(node, context);
  }
  const int64_t k = attributes.trans_b ? b->dim(1) : b->dim(0);
  const int64_t n = attributes.trans_b ? b->dim(0) : b->dim(1);
  if ((*a_shape)[1] != k) return lower_with_reference(node, context);
  std::vector<float> bias;
  if (node.has_input(2) && attributes.beta != 0.0f) {
    const Tensor* c = context.constant(node.input(2));
    // A C that varies along rows ([M, 1], [M, N]) is left to the reference.
    const bool row_vector = c != nullptr && c->dtype() == DataType::kFloat &&
                            ((c->rank() == 1 && c->dim(0) == n) || (c->rank() == 2 && c->dim(0) == 1 && c->dim(1) == n) ||
                             c->numel() == 1);
    if (!row_vector) return lower_with_reference(node, context);
    const float* values = c->data<float>();
    for (int64_t j = 0; j < n; ++j) bias.push_back(attributes.beta * values[c->numel() == 1 ? 0 : j]);
  }
  return add_gemm_layer(node, context, *b, attributes.trans_b, attributes.alpha, bias);
}

}  // namespace

void register_gemm(LayerRegistry& registry) {
  registry.add_kind({kKind, bind_gemm});
  registry.add_lowering({.domain = "", .op_type = "MatMul", .lower = lower_matmul, .accepts = all_float});
  registry.add_lowering({.domain = "", .op_type = "Gemm", .lower = lower_gemm, .accepts = all_float});
}

}  // namespace qdqrt::engine::fp32
