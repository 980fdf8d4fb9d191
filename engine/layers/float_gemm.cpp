// fp32 GEMM on the igemm microkernel (kernels/fp32/fp32_sgemm.h):
//   fp32_gemm    Gemm, MatMul with a constant B and FusedMatMul (MatMul + bias Add [+ GELU]):
//                Y[rows, N] = function(A[rows, K] x (alpha * B) + bias).
//                A is any rank >= 2 activation (MatMul: the leading dims are rows; Gemm: [M, K],
//                transA = 0). B ([K, N], or [N, K] with transB) times alpha is packed at build for
//                the plan's ISA (`isa` param); Gemm's beta * C becomes the bias when C is a
//                constant scalar, [N] or [1, N]. Work items: (column block, microkernel tile of
//                rows), ColumnBlockSplit (float_common.h): a 1-row FC layer splits its columns;
//                a transformer's tokens at batch 1 against large weights: blocks of columns over
//                every row (GemmLayer::whole_rows).
//   fp32_matmul  MatMul of two activations, A [..., M, K] x B [..., K, N] (the attention's
//                Q x K^T and P x V), or of an activation and a constant B with leading dims
//                (MViT-V2's relative positions): B's leading dims equal A's, or broadcast to them
//                (each 1 or A's; one B for every matrix when all are 1). Each thread packs the B
//                of the matrices it runs into its scratch; B of at most 64 columns within L1
//                (Swin's 49 x 49 x 32 windows, BERT's P x V) is read in place instead
//                (kernels/fp32/fp32_small_matmul.h, same bits). Work items: (matrix, tile of
//                rows). The batch may be in the leading dims (a broadcast B's own dims after
//                it), or in M (A's dim rank - 2: more rows per matrix, its leading dims fixed).
// Both take the batch on any axis their rows or matrices span (any_batch_layout): attention
// exported from nn.MultiheadAttention runs [L, N, E] with the batch on dim 1 and its heads as
// [N * heads, L, d]; the rows and matrices are counted at run time from the tensors' elements.
// Every output is summed in k order whatever the split, so its bits do not depend on the batch or
// the thread count. Both run run_sgemm_with_layout(kAuto): a deep k with many columns packs A per
// row block (kernels/fp32/fp32_sgemm_prefetch.h), with the same bits. Nothing allocates in run().
#include <algorithm>

#include <fmt/format.h>

#include "engine/layers/float_common.h"
#include "core/ops/fused_layers.h"
#include "core/ops/fused_matmul.h"
#include "core/ops/matmul.h"
#include "kernels/fp32/fp32_dot_rows.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/fp32/fp32_sgemm_prefetch.h"
#include "kernels/fp32/fp32_small_matmul.h"

namespace qdqrt::engine::fp32 {

Status check_gemm_tensors(const BindContext& context, const PlanTensor& a, const PlanTensor& y, int64_t k, int64_t n) {
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, a, "input", DataType::kFloat, -1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, y, "output", DataType::kFloat, -1));
  if (a.shape.size() < 2 || a.shape.size() != y.shape.size() || a.shape.back() != k || y.shape.back() != n ||
      !std::equal(a.shape.begin(), a.shape.end() - 1, y.shape.begin()) || a.batched != y.batched) {
    return context.error(fmt::format("input {} and output {} do not fit k={} n={}", shape_to_string(a.shape),
                                     shape_to_string(y.shape), k, n));
  }
  // Rows are every dim but the last: the batch may be on any of them, the same in A and the output.
  if (a.batched && (a.batch_axis < 0 || a.batch_axis + 1 >= static_cast<int32_t>(a.shape.size()) ||
                    batch_layout_of(a) != batch_layout_of(y))) {
    return context.error(fmt::format("the batch (input dim {}, output dim {}) is not in the rows", a.batch_axis,
                                     y.batch_axis));
  }
  if (k > INT32_MAX / 2 || n > INT32_MAX / 2 || safe_numel({k, n}) < 0) return context.error("B is too large");
  return Status::ok();
}

namespace {

constexpr const char* kGemmKind = "fp32_gemm";
constexpr const char* kMatMulKind = "fp32_matmul";

// ---------------------------------------------------------------------------------------------
// Constant B

class GemmLayer final : public Layer {
 public:
  GemmLayer(kernels::PackedSgemm packed, kernels::Fp32EpilogueActivation activation, int32_t input, int32_t output)
      : packed_(std::move(packed)), input_(input), output_(output) {
    epilogue_.activation = activation;
  }

  WorkShape work(const RunState& state) const override {
    const int64_t rows = this->rows(state);
    const ColumnBlockSplit split = work_split(rows);
    return {.items = split.items(),
            .ops_per_item = 2.0 * static_cast<double>(rows_per_item(rows)) * static_cast<double>(packed_.n) /
                            static_cast<double>(split.column_blocks) * static_cast<double>(packed_.channels)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t rows = this->rows(state);
    const int64_t item_rows = rows_per_item(rows);
    const float* a = state.data<float>(input_);
    float* y = state.data<float>(output_);
    work_split(rows).for_each_call(begin, end, [&](int64_t first, int64_t last, int64_t column_begin, int64_t column_end) {
      kernels::run_sgemm_with_layout(packed_, a, packed_.channels, y, packed_.n, epilogue_,
                                     first * item_rows, std::min(rows, last * item_rows),
                                     static_cast<int>(column_begin), static_cast<int>(column_end),
                                     kernels::SgemmALayout::kAuto);
    });
  }

 private:
  // Whole-rows split: more rows than one tile and at most kWholeRowsMaxRows (a transformer's
  // 128-197 tokens at batch 1), weights past a core's L2 share (kWholeRowsMinWeightBytes). Every
  // item is then a block of columns over all the rows, so each thread streams only its own columns
  // of B from memory, once; items of row tiles (a block's B read by every chunk that holds some of
  // its rows) streamed B about twice over. The blocks: kWholeRowsBlocks (a multiple of 2 and 4
  // threads' chunks), or half as many for fewer panels.
  static constexpr int64_t kWholeRowsMaxRows = 256;
  static constexpr int64_t kWholeRowsMinWeightBytes = 1 << 20;
  static constexpr int64_t kWholeRowsBlocks = 8;
  static constexpr int64_t kWholeRowsMinPanelsPerBlock = 4;
  bool whole_rows(int64_t rows) const {
    return rows > packed_.mr && rows <= kWholeRowsMaxRows &&
           static_cast<int64_t>(packed_.n) * packed_.channels * static_cast<int64_t>(sizeof(float)) >=
               kWholeRowsMinWeightBytes;
  }
  int64_t rows(const RunState& state) const { return state.numel(input_) / packed_.channels; }
  int64_t rows_per_item(int64_t rows) const { return whole_rows(rows) ? std::max<int64_t>(rows, 1) : packed_.mr; }
  ColumnBlockSplit work_split(int64_t rows) const {
    if (whole_rows(rows)) {
      const int64_t panels = (packed_.n + packed_.nr - 1) / packed_.nr;
      const int64_t blocks = panels >= kWholeRowsBlocks * kWholeRowsMinPanelsPerBlock ? kWholeRowsBlocks
                                                                                       : kWholeRowsBlocks / 2;
      return ColumnBlockSplit::blocks_of(packed_.n, packed_.nr, std::min(blocks, panels));
    }
    return ColumnBlockSplit((rows + packed_.mr - 1) / packed_.mr, packed_.n, packed_.nr);
  }

  kernels::PackedSgemm packed_;
  kernels::Fp32Epilogue epilogue_;
  int32_t input_, output_;
};

Result<std::unique_ptr<Layer>> bind_gemm(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* a, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_ASSIGN_OR_RETURN(int64_t k, params::kK.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t n, params::kN.read(context));
  QDQRT_RETURN_IF_ERROR(check_gemm_tensors(context, *a, *y, k, n));
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, read_packed_isa(context));
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  QDQRT_ASSIGN_OR_RETURN(const float* weights, params::kWeights.read(context, kernels::packed_sgemm_floats(ni, k, isa)));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::sgemm_padded_n(ni, isa)));
  // The epilogue's function: written only when there is one (a FusedMatMul's GELU).
  kernels::Fp32EpilogueActivation activation = kernels::Fp32EpilogueActivation::kNone;
  if (context.layer().params.has(std::string(params::kEpilogueFunction.key()))) {
    QDQRT_ASSIGN_OR_RETURN(activation, params::kEpilogueFunction.read(context));
  }
  return std::unique_ptr<Layer>(std::make_unique<GemmLayer>(
      kernels::packed_sgemm_view(ni, 1, ki, isa, weights, bias, /*with_zeros=*/false), activation,
      context.layer().inputs[0], context.layer().outputs[0]));
}

// Shared by Gemm, MatMul and FusedMatMul once the operands are known: packs alpha * B with the
// bias; `activation` (a FusedMatMul's GELU) runs in the epilogue.
Status add_gemm_layer(const Node& node, BuildContext& context, const Tensor& b, bool trans_b, float alpha,
                      const std::vector<float>& bias,
                      kernels::Fp32EpilogueActivation activation = kernels::Fp32EpilogueActivation::kNone) {
  const int64_t k = trans_b ? b.dim(1) : b.dim(0);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  if (k > INT32_MAX / 2 || n > INT32_MAX / 2) return lower_with_reference(node, context);
  // The batch in K (a rank-1 A, or moved to the last dim) is not a row.
  const auto a_batch = context.batch_layout(node.input(0));
  QDQRT_ASSIGN_OR_RETURN(Shape a_shape, context.shape_of(node.input(0)));
  const auto y_batch = context.batch_layout(node.outputs[0]);
  if ((a_batch && a_batch->batched && a_batch->axis + 1 >= static_cast<int32_t>(a_shape.size())) ||
      (a_batch && y_batch && *a_batch != *y_batch)) {
    return lower_with_reference(node, context);
  }
  std::vector<float> scaled;
  const float* values = b.data<float>();
  if (alpha != 1.0f) {
    scaled.assign(values, values + b.numel());
    for (float& value : scaled) value *= alpha;
    values = scaled.data();
  }
  if (context.bf16_float_gemm()) {
    QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
    QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
    return add_bf16_gemm_layer(node, context, values, k, n, trans_b, bias,
                               activation == kernels::Fp32EpilogueActivation::kGelu, input, output);
  }
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  kernels::SgemmWeightsDesc desc;
  desc.n = static_cast<int>(n);
  desc.channels = static_cast<int>(k);
  desc.weights = values;
  desc.stride_n = trans_b ? k : 1;
  desc.stride_channel = trans_b ? 1 : n;
  desc.bias = bias.empty() ? nullptr : bias.data();
  const kernels::PackedSgemm packed = kernels::pack_sgemm(desc, isa);
  kernels::Fp32Epilogue epilogue;
  epilogue.activation = activation;
  PlanLayer layer = make_layer(node, kGemmKind,
                               kernels::dot_rows_applies(packed, epilogue) ? kernels::dot_rows_kernel_name(isa)
                                                                           : kernels::sgemm_kernel_name(packed, false));
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {input};
  layer.outputs = {output};
  params::kK.write(layer, k);
  params::kN.write(layer, n);
  params::kIsa.write(layer, isa);
  params::kWeights.write_bytes(layer, packed.data.data(), packed.data.size() * sizeof(float));
  params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
  if (activation != kernels::Fp32EpilogueActivation::kNone) params::kEpilogueFunction.write(layer, activation);
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Two activations

// Which B matrix each matrix of A reads (matrices count A's leading dims in row-major order):
// one B for all (no terms), the one of the same index (B holds A's leading dims, batch included),
// or B broadcast over some of A's leading dims (numpy's rule, B's dims right-aligned): the sum over
// B's dims of more than 1 of (matrix / inner % count) * stride. MViT-V2's relative positions
// (`bythwc,hkc->bythwk`) multiply [N, heads, T, H, W, C] by one constant [C, K] per h.
struct BMatrixIndex {
  struct Term {
    int64_t inner, count, stride;
  };
  bool same_index = false;
  std::vector<Term> terms;
  int64_t of(int64_t matrix) const {
    if (same_index) return matrix;
    int64_t index = 0;
    for (const Term& term : terms) index += matrix / term.inner % term.count * term.stride;
    return index;
  }
};

// B's matrices against A's leading dims; nullopt where they do not broadcast, or where a dim B
// has of its own precedes A's batch (`a_batch_axis`, in A's leading dims): the matrices' strides
// there change with the batch. A batched B holds A's leading dims and batch.
std::optional<BMatrixIndex> b_matrix_index(const Shape& a, const Shape& b, std::optional<int32_t> a_batch_axis,
                                           bool b_batched) {
  if (a.size() < 2 || b.size() < 2 || b.size() > a.size()) return std::nullopt;
  const size_t leading = a.size() - 2, offset = a.size() - b.size();
  Shape b_leading(leading, 1);
  for (size_t d = offset; d < leading; ++d) b_leading[d] = b[d - offset];
  const bool same = std::equal(b_leading.begin(), b_leading.end(), a.begin());
  BMatrixIndex index;
  if (b_batched || (same && !a_batch_axis)) {
    if (!same || (b_batched && b.size() != a.size())) return std::nullopt;
    index.same_index = true;
    return index;
  }
  int64_t stride = 1;
  for (size_t d = leading; d-- > 0;) {
    if (b_leading[d] == 1) continue;
    if (b_leading[d] != a[d] || (a_batch_axis && static_cast<int32_t>(d) <= *a_batch_axis)) return std::nullopt;
    int64_t inner = 1;
    for (size_t e = d + 1; e < leading; ++e) inner *= a[e];
    index.terms.push_back({.inner = inner, .count = a[d], .stride = stride});
    stride *= b_leading[d];
  }
  return index;
}

class MatMulLayer final : public Layer {
 public:
  MatMulLayer(int64_t m, int64_t k, int64_t n, bool rows_batched, int64_t leading, BMatrixIndex b_index,
              kernels::Isa isa, int32_t a, int32_t b, int32_t output)
      : m_(m), k_(k), n_(n), rows_batched_(rows_batched), leading_(leading), b_index_(std::move(b_index)),
        small_(kernels::small_matmul_applies(isa, n, k)), isa_(isa), a_(a), b_(b), output_(output) {
    const kernels::SgemmTile tile = kernels::sgemm_tile(isa);
    mr_ = tile.mr;
    if (!small_) zero_bias_.resize(static_cast<size_t>(kernels::sgemm_padded_n(static_cast<int>(n), isa)));
  }

  WorkShape work(const RunState& state) const override {
    const int64_t tiles = this->tiles(state);
    const double tile_rows = tiles > 0 ? static_cast<double>(rows(state)) / static_cast<double>(tiles) : 0.0;
    return {.items = matrices(state) * tiles, .ops_per_item = 2.0 * tile_rows * static_cast<double>(k_ * n_)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const int64_t m = rows(state), tiles = this->tiles(state);
    const float* a = state.data<float>(a_);
    const float* b = state.data<float>(b_);
    float* y = state.data<float>(output_);
    if (small_) {
      // B read in place, the matrix's rows in near-equal tiles (fp32_small_matmul.h).
      for (int64_t item = begin; item < end;) {
        const int64_t matrix = item / tiles;
        const int64_t last = std::min(end, (matrix + 1) * tiles);
        kernels::run_small_matmul(isa_, a + matrix * m * k_, k_, b + b_index_.of(matrix) * k_ * n_, n_,
                                  y + matrix * m * n_, n_, m, static_cast<int>(n_), static_cast<int>(k_),
                                  item - matrix * tiles, last - matrix * tiles);
        item = last;
      }
      return;
    }
    float* packed_b = reinterpret_cast<float*>(scratch.data());
    const int n = static_cast<int>(n_), k = static_cast<int>(k_);
    kernels::SgemmWeightsDesc desc;
    desc.n = n;
    desc.channels = k;
    desc.stride_n = 1;
    desc.stride_channel = n_;
    const kernels::PackedSgemm packed =
        kernels::packed_sgemm_view(n, 1, k, isa_, packed_b, zero_bias_.data(), /*with_zeros=*/false);
    int64_t packed_matrix = -1;
    for (int64_t item = begin; item < end;) {
      const int64_t matrix = item / tiles;
      const int64_t last = std::min(end, (matrix + 1) * tiles);
      const int64_t b_matrix = b_index_.of(matrix);
      if (b_matrix != packed_matrix) {
        desc.weights = b + b_matrix * k_ * n_;
        kernels::pack_sgemm_into(desc, isa_, packed_b);
        packed_matrix = b_matrix;
      }
      const int64_t row_begin = (item - matrix * tiles) * mr_;
      const int64_t row_end = std::min(m, (last - matrix * tiles) * mr_);
      kernels::run_sgemm_with_layout(packed, a + matrix * m * k_, k_, y + matrix * m * n_, n_, kernels::Fp32Epilogue{},
                                     row_begin, row_end, 0, n, kernels::SgemmALayout::kAuto);
      item = last;
    }
  }

  // The packed B of one matrix (none where B is read in place).
  static int64_t scratch_bytes(int64_t k, int64_t n, kernels::Isa isa) {
    if (kernels::small_matmul_applies(isa, n, k)) return 0;
    return kernels::packed_sgemm_floats(static_cast<int>(n), k, isa) * static_cast<int64_t>(sizeof(float));
  }
  static std::string kernel_name(int64_t k, int64_t n, kernels::Isa isa) {
    if (kernels::small_matmul_applies(isa, n, k)) return kernels::small_matmul_kernel_name(isa, n);
    return kernels::sgemm_kernel_name(isa, false) + "-packb";
  }

 private:
  // Rows of each matrix: M, or, with the batch in the rows, A's rows over its `leading_` matrices.
  int64_t rows(const RunState& state) const { return rows_batched_ ? state.numel(a_) / (leading_ * k_) : m_; }
  int64_t tiles(const RunState& state) const {
    return small_ ? kernels::small_matmul_tiles(isa_, rows(state), n_) : (rows(state) + mr_ - 1) / mr_;
  }
  int64_t matrices(const RunState& state) const {
    const int64_t m = rows(state);
    return m > 0 ? state.numel(a_) / (m * k_) : 0;
  }

  int64_t m_, k_, n_;
  bool rows_batched_;
  int64_t leading_;  // A's matrices when the batch is in its rows (its leading dims are fixed then)
  BMatrixIndex b_index_;
  bool small_;  // B read in place (fp32_small_matmul.h), else packed per matrix into the scratch
  kernels::Isa isa_;
  int32_t a_, b_, output_;
  int64_t mr_ = 1;
  kernels::AlignedBuffer<float> zero_bias_;
};

// Where a MatMul's tensors hold the batch, as both the lowering and bind check it: A's leading
// dims or its rows (dim rank - 2: M grows with the batch), the output's the same as A's, a batched
// B's the same as A's leading one. Returns B's matrix index; nullopt for any other placement.
std::optional<BMatrixIndex> matmul_placement(const Shape& a_shape, const Shape& b_shape, const BatchLayout& a_batch,
                                             const BatchLayout& b_batch, const BatchLayout& y_batch) {
  const int32_t rank = static_cast<int32_t>(a_shape.size());
  auto same = [](const BatchLayout& x, const BatchLayout& z) { return x.batched == z.batched && (!x.batched || x == z); };
  const bool a_leading = a_batch.batched && a_batch.axis + 2 < rank;
  const bool a_rows = a_batch.batched && a_batch.axis == rank - 2;
  if ((a_batch.batched && !a_leading && !a_rows) || !same(a_batch, y_batch)) return std::nullopt;
  if (b_batch.batched &&
      (!a_leading || !same(b_batch, a_batch) || b_batch.axis + 2 >= static_cast<int32_t>(b_shape.size()))) {
    return std::nullopt;
  }
  return b_matrix_index(a_shape, b_shape, a_leading ? std::optional<int32_t>(a_batch.axis) : std::nullopt,
                        b_batch.batched);
}

Result<std::unique_ptr<Layer>> bind_matmul(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* a, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* b, context, context.input(1));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *a, "A", DataType::kFloat, -1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *b, "B", DataType::kFloat, -1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, -1));
  QDQRT_ASSIGN_OR_RETURN(int64_t m, params::kM.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t k, params::kK.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t n, params::kN.read(context));
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, read_packed_isa(context));
  const size_t rank = a->shape.size();
  const bool fits = rank >= 2 && b->shape.size() >= 2 && y->shape.size() == rank && a->shape[rank - 2] == m &&
                    a->shape[rank - 1] == k && b->shape[b->shape.size() - 2] == k && b->shape.back() == n &&
                    y->shape[rank - 2] == m && y->shape[rank - 1] == n &&
                    std::equal(a->shape.begin(), a->shape.end() - 2, y->shape.begin()) && a->batched == y->batched;
  if (!fits || k > INT32_MAX / 2 || n > INT32_MAX / 2) {
    return context.error(fmt::format("A {} x B {} -> {} is not a MatMul of m={} k={} n={}", shape_to_string(a->shape),
                                     shape_to_string(b->shape), shape_to_string(y->shape), m, k, n));
  }
  std::optional<BMatrixIndex> b_index =
      matmul_placement(a->shape, b->shape, batch_layout_of(*a), batch_layout_of(*b), batch_layout_of(*y));
  if (!b_index) {
    return context.error(fmt::format("B {} does not broadcast to A {}'s matrices, or the batch is in a MatMul's K or "
                                     "N, or in different dims of A and B",
                                     shape_to_string(b->shape), shape_to_string(a->shape)));
  }
  if (MatMulLayer::scratch_bytes(k, n, isa) > context.layer().scratch_bytes) {
    return context.error(fmt::format("scratch_bytes {} is less than the {} packed B needs", context.layer().scratch_bytes,
                                     MatMulLayer::scratch_bytes(k, n, isa)));
  }
  const bool rows_batched = a->batched && a->batch_axis == static_cast<int32_t>(rank) - 2;
  const int64_t leading = safe_numel(Shape(a->shape.begin(), a->shape.end() - 2));
  return std::unique_ptr<Layer>(std::make_unique<MatMulLayer>(m, k, n, rows_batched, leading, std::move(*b_index), isa,
                                                              context.layer().inputs[0], context.layer().inputs[1],
                                                              context.layer().outputs[0]));
}

Status add_matmul_layer(const Node& node, BuildContext& context, const Shape& a_shape, const Shape& b_shape) {
  const size_t rank = a_shape.size();
  if (rank < 2 || b_shape.size() < 2) return lower_with_reference(node, context);  // vectors
  const int64_t m = a_shape[rank - 2], k = a_shape[rank - 1], n = b_shape.back();
  if (b_shape[b_shape.size() - 2] != k || m < 1 || k < 1 || n < 1 || m > INT32_MAX / 2 || k > INT32_MAX / 2 ||
      n > INT32_MAX / 2) {
    return lower_with_reference(node, context);
  }
  // Where the batch is (bind checks the same on the plan's tensors); untracked: none.
  auto layout = [&](const std::string& value) { return context.batch_layout(value).value_or(BatchLayout{}); };
  const BatchLayout a_batch = layout(node.input(0));
  const BatchLayout y_batch = context.batch_layout(node.outputs[0]).value_or(a_batch);
  if (!matmul_placement(a_shape, b_shape, a_batch, layout(node.input(1)), y_batch)) {
    return lower_with_reference(node, context);  // broadcasts A's dims, B's batch elsewhere, ...
  }
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  PlanLayer layer = make_layer(node, kMatMulKind, MatMulLayer::kernel_name(k, n, isa));
  QDQRT_ASSIGN_OR_RETURN(int32_t a, context.input(node.input(0), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t b, context.input(node.input(1), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {a, b};
  layer.outputs = {output};
  layer.scratch_bytes = MatMulLayer::scratch_bytes(k, n, isa);
  params::kM.write(layer, m);
  params::kK.write(layer, k);
  params::kN.write(layer, n);
  params::kIsa.write(layer, isa);
  context.add_layer(std::move(layer));
  return Status::ok();
}

Status lower_matmul(const Node& node, BuildContext& context) {
  const Tensor* b = context.constant(node.input(1));
  auto a_shape = context.shape_of(node.input(0));
  if (!a_shape.ok() || a_shape->size() < 2 || context.constant(node.input(0)) != nullptr) {
    return lower_with_reference(node, context);  // vector A, constant A, unknown shape
  }
  if (b == nullptr) {
    auto b_shape = context.shape_of(node.input(1));
    if (!b_shape.ok()) return lower_with_reference(node, context);
    return add_matmul_layer(node, context, *a_shape, *b_shape);
  }
  if (b->dtype() != DataType::kFloat || b->rank() < 2 || a_shape->back() != b->dim(b->rank() - 2)) {
    return lower_with_reference(node, context);  // vector B, ...
  }
  // A constant B per matrix (leading dims): read as a tensor, as the attention's B.
  if (b->rank() > 2) return add_matmul_layer(node, context, *a_shape, b->shape());
  return add_gemm_layer(node, context, *b, false, 1.0f, {});
}

// FusedMatMul (core/ops/fused_matmul.h): fp32_gemm with the bias (and the GELU in the epilogue,
// `act.function` gelu); what it does not take (a bias
// that is not N values along the last axis, a B that is not a constant matrix, ...) runs on the
// reference.
Status lower_fused_matmul(const Node& node, BuildContext& context) {
  using namespace layers;
  const Tensor* b = context.constant(node.input(kFusedMatMulB));
  const Tensor* bias = node.has_input(kFusedMatMulBias) ? context.constant(node.input(kFusedMatMulBias)) : nullptr;
  auto a_shape = context.shape_of(node.input(kFusedMatMulA));
  if (b == nullptr || bias == nullptr || !a_shape.ok() || a_shape->size() < 2 ||
      context.constant(node.input(kFusedMatMulA)) != nullptr || b->dtype() != DataType::kFloat || b->rank() != 2 ||
      a_shape->back() != b->dim(0) || bias->dtype() != DataType::kFloat || bias->rank() < 1 ||
      bias->rank() > static_cast<int64_t>(a_shape->size()) || bias->numel() != b->dim(1) ||
      bias->dim(bias->rank() - 1) != b->dim(1)) {
    return lower_with_reference(node, context);
  }
  const float* values = bias->data<float>();
  return add_gemm_layer(node, context, *b, false, 1.0f, std::vector<float>(values, values + bias->numel()),
                        node.attrs<FusedMatMulAttributes>().gelu ? kernels::Fp32EpilogueActivation::kGelu
                                                                 : kernels::Fp32EpilogueActivation::kNone);
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
  registry.add_kind({.kind = kGemmKind, .bind = bind_gemm, .any_batch_layout = true});
  registry.add_kind({.kind = kMatMulKind, .bind = bind_matmul, .any_batch_layout = true});
  registry.add_lowering(
      {.domain = "", .op_type = "MatMul", .lower = lower_matmul, .accepts = all_float, .any_batch_layout = true});
  registry.add_lowering(
      {.domain = "", .op_type = "Gemm", .lower = lower_gemm, .accepts = all_float, .any_batch_layout = true});
  registry.add_lowering({.domain = layers::kDomain,
                         .op_type = layers::kFusedMatMul,
                         .lower = lower_fused_matmul,
                         .accepts = all_float,
                         .any_batch_layout = true});
}

}  // namespace qdqrt::engine::fp32
