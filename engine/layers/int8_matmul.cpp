// QMatMul on plain-layout int8/uint8 activations.
//   "qmatmul": constant B [K][N] packed at build time (kernels::pack_gemm); rows M = all leading
//              dims of A (batch included) split across threads, or for a few rows (batch-1 FC)
//              column blocks of PackedGemm::nr so several threads share one GEMV.
//   "qbatched_matmul": B is an activation ([K][N], or [..., K][N] with A's leading dims): B is
//              packed per matrix at run time into this thread's scratch (a PackedGemm over
//              borrowed scratch memory, so run() never allocates), then rows are split.
// Params (engine/layer_params.h): m, k, n (per matrix), batch_count (matrices at the maximum
// batch) + the epilogue; qmatmul: packed weights under "w."; qbatched_matmul: isa, a/b scale and
// zero-point, blob "bias" (float [n], optional).
// Tensors: inputs {a [, b] [, residual]}, output {y}; all kPlain. Both count their rows (and
// qbatched_matmul its matrices) from a's elements at run time, so they take the batch off dim 0
// (any_batch_layout; the same in a, y and the residual): qmatmul on any dim of a but the last
// (nn.MultiheadAttention's [L, N, E] projections between Q/DQ), qbatched_matmul on dim 0 with
// any number of slices per image (its heads [N * heads, L, d], b alike), or with a 2-D b on any
// dim of a but the last.
#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "engine/layers/int8_common.h"
#include "engine/warm_stream.h"
#include "kernels/dispatch.h"
#include "kernels/gemm/qgemm.h"
#include "core/ops/fused_layers.h"

namespace qdqrt::engine::int8 {

namespace {

constexpr const char* kConstantKind = "qmatmul";
constexpr const char* kBatchedKind = "qbatched_matmul";
constexpr int64_t kRowsPerItem = 6;           // the widest row tile
constexpr int64_t kBatchedRowsPerItem = 24;
constexpr int64_t kColumnSplitRowBlocks = 4;  // fewer row blocks than this: split columns too

struct MatMulSpec {
  Shape a_shape, b_shape, y_shape;
  int64_t m = 0, k = 0, n = 0;
  int64_t batch_count = 1;  // matrices (qbatched_matmul)
  DataType a_dtype = DataType::kInt8;
  float a_scale = 1.0f;
  int32_t a_zero_point = 0;
  const Tensor* b_constant = nullptr;
  DataType b_dtype = DataType::kInt8;
  const Tensor* b_scales = nullptr;
  int32_t b_zero_point = 0;
  const Tensor* bias = nullptr;
  EpilogueSpec epilogue;
};

Result<MatMulSpec> analyze_qmatmul(const Node& node, const BuildContext& context) {
  using namespace qdqrt::layers;
  const auto* attributes = dynamic_cast<const QMatMulAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return unsupported("{}: one output", node.describe());
  MatMulSpec spec;
  const std::string& a = node.input(kMatMulA);
  if (a.empty() || context.constant(a) != nullptr) return unsupported("{}: a must be a runtime value", node.describe());
  QDQRT_ASSIGN_OR_RETURN(spec.a_dtype, context.dtype_of(a));
  if (!is_8bit(spec.a_dtype)) return unsupported("{}: a is {}", node.describe(), dtype_name(spec.a_dtype));
  QDQRT_ASSIGN_OR_RETURN(spec.a_shape, static_shape(node, context, a));
  QDQRT_ASSIGN_OR_RETURN(spec.y_shape, static_shape(node, context, node.outputs[0]));
  if (spec.a_shape.size() < 2 || spec.y_shape.size() != spec.a_shape.size()) {
    return unsupported("{}: a must have rank >= 2 and the output a's rank", node.describe());
  }
  QDQRT_ASSIGN_OR_RETURN(spec.a_scale, scale_input(node, context, kMatMulAScale, "a_scale"));
  DataType a_zp_dtype = spec.a_dtype;
  QDQRT_ASSIGN_OR_RETURN(spec.a_zero_point,
                         zero_point_input(node, context, kMatMulAZeroPoint, "a_zero_point", 1, &a_zp_dtype));
  if (a_zp_dtype != spec.a_dtype) return unsupported("{}: a and a_zero_point types differ", node.describe());
  spec.k = spec.a_shape.back();
  spec.m = spec.a_shape[spec.a_shape.size() - 2];

  const std::string& b = node.input(kMatMulB);
  if (b.empty()) return unsupported("{}: b is absent", node.describe());
  spec.b_constant = context.constant(b);
  if (spec.b_constant) {
    spec.b_dtype = spec.b_constant->dtype();
    spec.b_shape = spec.b_constant->shape();
  } else {
    QDQRT_ASSIGN_OR_RETURN(spec.b_dtype, context.dtype_of(b));
    QDQRT_ASSIGN_OR_RETURN(spec.b_shape, static_shape(node, context, b));
  }
  if (!is_8bit(spec.b_dtype) || spec.b_shape.size() < 2 || spec.b_shape[spec.b_shape.size() - 2] != spec.k) {
    return unsupported("{}: b must be int8/uint8 [.., K={}, N]", node.describe(), spec.k);
  }
  spec.n = spec.b_shape.back();
  if (spec.b_constant && spec.b_shape.size() != 2) return unsupported("{}: constant b must be 2-D", node.describe());
  // Leading dims: B 2-D folds every leading dim of A into the rows; else they must match A's.
  int64_t leading = 1;
  for (size_t axis = 0; axis + 2 < spec.a_shape.size(); ++axis) leading *= spec.a_shape[axis];
  if (spec.b_shape.size() == 2) {
    spec.m *= leading;
    spec.batch_count = 1;
  } else {
    if (spec.b_shape.size() != spec.a_shape.size() ||
        !std::equal(spec.a_shape.begin(), spec.a_shape.end() - 2, spec.b_shape.begin())) {
      return unsupported("{}: broadcast batch dims of b", node.describe());
    }
    spec.batch_count = leading;
  }
  Shape expected_y = spec.a_shape;
  expected_y.back() = spec.n;
  if (spec.y_shape != expected_y) return unsupported("{}: output shape", node.describe());
  if (spec.m * spec.batch_count >= INT_MAX / 2 || spec.k >= INT_MAX / 64 || spec.n >= INT_MAX / 64) {
    return unsupported("{}: too large", node.describe());
  }

  const int64_t scale_count = spec.b_constant ? spec.n : 1;
  QDQRT_ASSIGN_OR_RETURN(spec.b_scales, constant_input(node, context, kMatMulBScale, "b_scale", DataType::kFloat));
  if (spec.b_scales->numel() != 1 && spec.b_scales->numel() != scale_count) {
    return unsupported("{}: b_scale has {} values", node.describe(), spec.b_scales->numel());
  }
  for (float scale : spec.b_scales->values<float>()) {
    if (!std::isfinite(scale) || scale < 0.0f) return unsupported("{}: b_scale {}", node.describe(), scale);
  }
  DataType b_zp_dtype = spec.b_dtype;
  QDQRT_ASSIGN_OR_RETURN(spec.b_zero_point,
                         zero_point_input(node, context, kMatMulBZeroPoint, "b_zero_point", scale_count, &b_zp_dtype));
  if (b_zp_dtype != spec.b_dtype) return unsupported("{}: b and b_zero_point types differ", node.describe());
  if (node.has_input(kMatMulBias)) {
    QDQRT_ASSIGN_OR_RETURN(spec.bias, constant_input(node, context, kMatMulBias, "bias", DataType::kFloat, spec.n));
  }

  QDQRT_ASSIGN_OR_RETURN(spec.epilogue, read_epilogue_inputs(node, context, kMatMulYScale, spec.y_shape,
                                                            kernel_activation(attributes->fused), spec.n));
  return spec;
}

// Per-thread scratch of a run-time packed B: data, bias, multiplier, float_bias, each 64-aligned.
struct ScratchLayout {
  int64_t data_bytes = 0, column_bytes = 0;
  int64_t total() const { return align64(data_bytes) + 3 * align64(column_bytes); }
};
ScratchLayout scratch_layout(kernels::Isa isa, int64_t n, int64_t k) {
  // The same tile run-time packing picks for n columns (kernels::pack_gemm with nr = 0).
  const kernels::internal::GemmImplementation& impl = kernels::choose_gemm_implementation(isa, static_cast<int>(n));
  ScratchLayout layout;
  const int64_t n_padded = round_up(n, impl.nr), k_padded = kernels::packed_k_padded(impl.isa, impl.k_group, k);
  layout.data_bytes = n_padded * k_padded * impl.element_size;
  layout.column_bytes = n_padded * 4;
  return layout;
}

Status lower_qmatmul(const Node& node, BuildContext& context) {
  using namespace qdqrt::layers;
  QDQRT_ASSIGN_OR_RETURN(MatMulSpec spec, analyze_qmatmul(node, context));
  PlanLayer layer;
  layer.name = fused_layer_name(node);
  layer.source_nodes = {node.name};
  layer.op_type = node.op_type;
  QDQRT_ASSIGN_OR_RETURN(int32_t a, context.input(node.input(kMatMulA), Layout::kPlain));
  layer.inputs.push_back(a);
  if (!spec.b_constant) {
    QDQRT_ASSIGN_OR_RETURN(int32_t b, context.input(node.input(kMatMulB), Layout::kPlain));
    layer.inputs.push_back(b);
  }
  if (spec.epilogue.has_residual) {
    QDQRT_ASSIGN_OR_RETURN(int32_t residual, context.input(node.input(kMatMulResidual), Layout::kPlain));
    layer.inputs.push_back(residual);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kPlain));
  layer.outputs.push_back(y);
  using namespace params;
  kM.write(layer, spec.m);
  kK.write(layer, spec.k);
  kN.write(layer, spec.n);
  kBatchCount.write(layer, spec.batch_count);
  store_epilogue(layer, spec.epilogue);
  if (spec.b_constant) {
    layer.kind = kConstantKind;
    kernels::GemmWeightsDesc desc;
    desc.n = static_cast<int>(spec.n);
    desc.k = static_cast<int>(spec.k);
    desc.weights = spec.b_constant->raw_data();
    desc.stride_n = 1;
    desc.stride_k = spec.n;
    desc.weights_signed = spec.b_dtype == DataType::kInt8;
    desc.weight_zero_point = spec.b_zero_point;
    desc.weight_scales = spec.b_scales->data<float>();
    desc.per_channel = spec.b_scales->numel() > 1;
    desc.bias_float = spec.bias ? spec.bias->data<float>() : nullptr;
    desc.input_scale = spec.a_scale;
    desc.input_zero_point = spec.a_zero_point;
    desc.input_signed = spec.a_dtype == DataType::kInt8;
    desc.output_scale = 1.0f;  // the weights keep real units: out.scale is divided in at bind
    kernels::PackedGemm packed =
        kernels::pack_gemm(desc, kernels::gemm_isa_for_shape(context.isa(), spec.m, spec.k, spec.n));
    store_gemm(layer, kMatMulWeights, packed);
    layer.kernel = kernels::gemm_kernel_name(packed, false, static_cast<int>(spec.m));
  } else {
    layer.kind = kBatchedKind;
    const kernels::Isa isa = kernels::gemm_isa_for_shape(kernels::usable_isa(context.isa()), spec.m, spec.k, spec.n);
    kIsa.write(layer, isa);
    kAScale.write(layer, spec.a_scale);
    kAZeroPoint.write(layer, spec.a_zero_point);
    kBScale.write(layer, spec.b_scales->data<float>()[0]);
    kBZeroPoint.write(layer, spec.b_zero_point);
    if (spec.bias) kBias.write_bytes(layer, spec.bias->raw_data(), spec.bias->nbytes());
    layer.scratch_bytes = scratch_layout(isa, spec.n, spec.k).total();
    kernels::PackedGemm probe;
    probe.isa = isa;
    probe.nr = kernels::choose_gemm_implementation(isa, static_cast<int>(spec.n)).nr;
    probe.input_signed = spec.a_dtype == DataType::kInt8;
    probe.weight_zero_point_s8 = spec.b_zero_point - (spec.b_dtype == DataType::kInt8 ? 0 : 128);
    layer.kernel = kernels::gemm_kernel_name(probe, false, static_cast<int>(spec.m));
  }
  context.add_layer(std::move(layer));
  return Status::ok();
}

// Rows [row_begin, row_end) x column tiles [tile_begin, tile_end) of one GEMM.
struct Tile {
  int64_t row_begin, row_end, tile_begin, tile_end;
};

// Items are row blocks x column tiles (column tiles only when there are few row blocks).
class ItemGrid {
 public:
  int64_t rows_per_item = kRowsPerItem;
  int64_t tiles = 1;  // column tiles of nr columns (1 when columns are not split)

  int64_t columns_split(int64_t rows) const {
    return ceil_div(rows, rows_per_item) < kColumnSplitRowBlocks ? tiles : 1;
  }
  int64_t items(int64_t rows) const { return ceil_div(rows, rows_per_item) * columns_split(rows); }
  // Calls fn(Tile) for each row block in [begin, end) with its contiguous column-tile range.
  template <class Fn>
  void for_each(int64_t rows, int64_t begin, int64_t end, Fn fn) const {
    const int64_t split = columns_split(rows);
    while (begin < end) {
      const int64_t block = begin / split;
      const int64_t first_tile = begin % split;
      const int64_t last_tile = std::min(split, first_tile + (end - begin));
      Tile tile{block * rows_per_item, std::min(rows, (block + 1) * rows_per_item), first_tile, last_tile};
      if (split == 1) {
        // Whole row blocks: merge consecutive ones into one call.
        tile.row_end = std::min(rows, end * rows_per_item);
        tile.tile_end = 1;
        begin = end;
      } else {
        begin += last_tile - first_tile;
      }
      fn(tile);
    }
  }
};

class QMatMulLayer final : public Layer {
 public:
  kernels::PackedGemm packed;
  kernels::Epilogue epilogue;
  int32_t input = -1, residual = -1, output = -1;
  int64_t k = 0, n = 0;
  ItemGrid grid;
  std::vector<std::shared_ptr<const void>> owners;
  std::span<const int8_t> following_weights = {};  // the next layer's leading_weights()

  std::span<const int8_t> leading_weights() const override { return {packed.data.data(), packed.data.size()}; }
  void set_following_weights(std::span<const int8_t> weights) override { following_weights = weights; }
  WarmSlice warm;  // set_warm_weights
  std::vector<std::span<const int8_t>> streamed_weights() const override {
    return {{packed.data.data(), packed.data.size()}};
  }
  void set_warm_weights(std::vector<std::span<const int8_t>> spans) override { warm.set(std::move(spans)); }

  int64_t rows(const RunState& state) const { return state.numel(input) / k; }

  // Whole-rows split: a transformer's tokens at batch 1 (more rows than one item, at most
  // kWholeRowsMaxRows) against weights past kWholeRowsMinWeightBytes. Items are then blocks of
  // column tiles over every row, so each thread streams only its own columns of B, once, and the
  // kernel gets whole row blocks (AMX: 32 rows); items of kRowsPerItem rows had every chunk
  // stream all of B through half-filled AMX row blocks. kWholeRowsBlocks blocks (a multiple of 2
  // and 4 threads' chunks), half as many for fewer column tiles.
  static constexpr int64_t kWholeRowsMaxRows = 256;
  static constexpr int64_t kWholeRowsMinWeightBytes = 512 * 1024;
  static constexpr int64_t kWholeRowsBlocks = 8;
  static constexpr int64_t kWholeRowsMinTilesPerBlock = 4;
  bool whole_rows(int64_t m) const {
    return m > kRowsPerItem && m <= kWholeRowsMaxRows && k * n >= kWholeRowsMinWeightBytes && grid.tiles >= 2;
  }
  int64_t whole_rows_blocks() const {
    return std::min(grid.tiles, grid.tiles >= kWholeRowsBlocks * kWholeRowsMinTilesPerBlock ? kWholeRowsBlocks
                                                                                            : kWholeRowsBlocks / 2);
  }

  WorkShape work(const RunState& state) const override {
    const int64_t m = rows(state);
    if (whole_rows(m)) {
      const int64_t blocks = whole_rows_blocks();
      return {blocks, 2.0 * static_cast<double>(m * k * n) / static_cast<double>(blocks)};
    }
    const int64_t split = grid.columns_split(m);
    const int64_t rows_per_item = std::min(m, grid.rows_per_item);
    return {grid.items(m), 2.0 * static_cast<double>(rows_per_item * k * n) / static_cast<double>(split)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t m = rows(state);
    kernels::GemmArgs args;
    args.a = state.data(input);
    args.a_row_stride = k;
    args.c = state.data(output);
    args.c_row_stride = n;
    kernels::Epilogue run_epilogue = epilogue;
    if (residual >= 0) run_epilogue.residual = state.data(residual);
    // The kernel prefetches the next layer's first weights into this core's L2 during each call's
    // last row blocks (a thread's share is one call, except row blocks over column ranges of a
    // column-split grid: then each of them does).
    args.next.weights = following_weights;
    // This thread's share of the warm stream, by items, to its first call.
    args.next.warm = warm.share(begin, end, work(state).items);
    if (whole_rows(m)) {
      // Blocks [begin, end) are one run of column tiles.
      const int64_t blocks = whole_rows_blocks();
      const int64_t n_begin = grid.tiles * begin / blocks * packed.nr;
      const int64_t n_end = std::min(n, grid.tiles * end / blocks * packed.nr);
      if (n_begin < n_end) {
        kernels::run_gemm(packed, args, run_epilogue, 0, static_cast<int>(m), static_cast<int>(n_begin),
                          static_cast<int>(n_end));
      }
      return;
    }
    grid.for_each(m, begin, end, [&](const Tile& tile) {
      const int64_t split = grid.columns_split(m);
      const int64_t n_begin = split == 1 ? 0 : tile.tile_begin * packed.nr;
      const int64_t n_end = split == 1 ? n : std::min(n, tile.tile_end * packed.nr);
      kernels::run_gemm(packed, args, run_epilogue, static_cast<int>(tile.row_begin), static_cast<int>(tile.row_end),
                        static_cast<int>(n_begin), static_cast<int>(n_end));
      args.next.warm = {};
    });
  }
};

class QBatchedMatMulLayer final : public Layer {
 public:
  kernels::Isa isa = kernels::Isa::kScalar;
  kernels::Epilogue epilogue;
  int32_t a = -1, b = -1, residual = -1, output = -1;
  int64_t m = 0, k = 0, n = 0;
  int64_t matrices_per_image = 1;  // batch_count / max batch when the tensors are batched
  bool batched = false;
  bool a_signed = true, b_signed = true;
  float a_scale = 1.0f, b_scale = 1.0f, output_scale = 1.0f;
  int32_t a_zero_point = 0, b_zero_point = 0;
  const float* bias = nullptr;
  ScratchLayout layout;
  std::vector<std::shared_ptr<const void>> owners;

  int64_t matrices(const RunState& state) const {
    return batched ? state.dim(a, 0) * matrices_per_image : matrices_per_image;
  }
  // Rows per matrix: with a 2-D b, every leading dim of a (batch included) is folded into m.
  int64_t rows(const RunState& state) const { return matrices_per_image == 0 ? 0 : state.numel(a) / k / matrices(state); }
  int64_t blocks(const RunState& state) const { return ceil_div(rows(state), kBatchedRowsPerItem); }

  WorkShape work(const RunState& state) const override {
    return {matrices(state) * blocks(state), 2.0 * static_cast<double>(kBatchedRowsPerItem * k * n)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const int64_t rows_per_matrix = rows(state);
    const int64_t block_count = blocks(state);
    kernels::PackedGemm packed;
    uint8_t* base = scratch.data();
    packed.data = kernels::AlignedBuffer<int8_t>::borrow(reinterpret_cast<int8_t*>(base),
                                                         static_cast<size_t>(layout.data_bytes));
    base += align64(layout.data_bytes);
    const size_t columns = static_cast<size_t>(layout.column_bytes / 4);
    packed.bias = kernels::AlignedBuffer<int32_t>::borrow(reinterpret_cast<int32_t*>(base), columns);
    base += align64(layout.column_bytes);
    packed.multiplier = kernels::AlignedBuffer<float>::borrow(reinterpret_cast<float*>(base), columns);
    base += align64(layout.column_bytes);
    packed.float_bias = kernels::AlignedBuffer<float>::borrow(reinterpret_cast<float*>(base), columns);
    const int output_size = kernels::output_element_size(epilogue.output_type);
    const uint8_t* a_data = state.data<const uint8_t>(a);
    const uint8_t* b_data = state.data<const uint8_t>(b);
    const uint8_t* residual_data = residual >= 0 ? state.data<const uint8_t>(residual) : nullptr;
    uint8_t* c_data = state.data<uint8_t>(output);
    int64_t item = begin;
    while (item < end) {
      const int64_t matrix = item / block_count;
      const int64_t block_begin = item % block_count;
      const int64_t block_end = std::min(block_count, block_begin + (end - item));
      kernels::GemmWeightsDesc desc;
      desc.n = static_cast<int>(n);
      desc.k = static_cast<int>(k);
      desc.weights = b_data + matrix * k * n;
      desc.stride_n = 1;
      desc.stride_k = n;
      desc.weights_signed = b_signed;
      desc.weight_zero_point = b_zero_point;
      desc.weight_scales = &b_scale;
      desc.bias_float = bias;
      desc.input_scale = a_scale;
      desc.input_zero_point = a_zero_point;
      desc.input_signed = a_signed;
      desc.output_scale = output_scale;
      kernels::pack_gemm(desc, isa, packed);
      kernels::GemmArgs args;
      args.a = a_data + matrix * rows_per_matrix * k;
      args.a_row_stride = k;
      args.c = c_data + matrix * rows_per_matrix * n * output_size;
      args.c_row_stride = n;
      kernels::Epilogue run_epilogue = epilogue;
      if (residual_data) run_epilogue.residual = residual_data + matrix * rows_per_matrix * n;
      kernels::run_gemm(packed, args, run_epilogue, static_cast<int>(block_begin * kBatchedRowsPerItem),
                        static_cast<int>(std::min(rows_per_matrix, block_end * kBatchedRowsPerItem)), 0,
                        static_cast<int>(n));
      item += block_end - block_begin;
    }
  }
};

struct CommonBind {
  int64_t m, k, n, batch_count;
  EpilogueSpec spec;
  const PlanTensor* a;
  const PlanTensor* y;
  int32_t residual = -1;
};

// Checks shared by both kinds; `residual_input` is the residual's input slot.
Result<CommonBind> bind_common(const BindContext& context, size_t residual_input) {
  using namespace params;
  CommonBind common;
  QDQRT_ASSIGN_OR_RETURN(common.m, kM.read(context));
  QDQRT_ASSIGN_OR_RETURN(common.k, kK.read_in(context, 1, kMatMulMaxKN));
  QDQRT_ASSIGN_OR_RETURN(common.n, kN.read_in(context, 1, kMatMulMaxKN));
  QDQRT_ASSIGN_OR_RETURN(common.batch_count, kBatchCount.read(context));
  QDQRT_ASSIGN_OR_RETURN(common.spec, load_epilogue(context));
  const int plain = static_cast<int>(Layout::kPlain);
  QDQRT_ASSIGN_OR_RETURN(common.a, check_input(context, 0, {"a", -1, plain, true}));
  QDQRT_ASSIGN_OR_RETURN(common.y, check_output(context, 0, {"output", -1, plain, false, epilogue_dtype(common.spec)}));
  const Shape& a_shape = common.a->shape;
  const Shape& y_shape = common.y->shape;
  if (a_shape.size() < 2 || a_shape.back() != common.k || y_shape.size() != a_shape.size() ||
      y_shape.back() != common.n || !std::equal(a_shape.begin(), a_shape.end() - 1, y_shape.begin()) ||
      common.a->batched != common.y->batched) {
    return context.error(fmt::format("a/output shapes do not match k={} n={}", common.k, common.n));
  }
  const int64_t matrix = common.m * common.k;  // < 2^56: no overflow
  const int64_t a_count = shape_numel(a_shape);
  if (a_count % matrix != 0 || a_count / matrix != common.batch_count) {
    return context.error(fmt::format("a has {} elements, expected {} x {} x {}", shape_numel(a_shape),
                                     common.batch_count, common.m, common.k));
  }
  if (common.spec.has_residual) {
    QDQRT_ASSIGN_OR_RETURN(
        const PlanTensor* r,
        check_input(context, residual_input,
                    {"residual", -1, plain, false, common.spec.residual_signed ? DataType::kInt8 : DataType::kUint8}));
    if (r->shape != y_shape || r->batched != common.y->batched) {
      return context.error("residual shape differs from the output");
    }
    common.residual = context.layer().inputs[residual_input];
  }
  const size_t expected_inputs = residual_input + (common.spec.has_residual ? 1 : 0);
  if (context.layer().inputs.size() != expected_inputs) {
    return context.error(fmt::format("{} inputs, expected {}", context.layer().inputs.size(), expected_inputs));
  }
  return common;
}

// The batch of a constant-weight matmul's rows: on a dim of a before the last, the same in the
// output (and the residual).
bool rows_hold_the_batch(const BatchLayout& a, const BatchLayout& y, size_t rank) {
  return a == y && (!a.batched || (a.axis >= 0 && static_cast<size_t>(a.axis) + 1 < rank));
}

Result<std::unique_ptr<Layer>> bind_qmatmul(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(CommonBind common, bind_common(context, 1));
  if (common.batch_count != 1) return context.error("a constant-weight matmul has one matrix");
  const BatchLayout a_batch = batch_layout_of(*common.a), y_batch = batch_layout_of(*common.y);
  bool residual_fits = true;
  if (common.residual >= 0) {
    QDQRT_ASSIGN_OR_RETURN(const PlanTensor* residual, context.input(1));
    residual_fits = batch_layout_of(*residual) == y_batch;
  }
  if (!rows_hold_the_batch(a_batch, y_batch, common.a->shape.size()) || !residual_fits) {
    return context.error(fmt::format("the batch (a dim {}, output dim {}) is not in the rows of a, the output and the "
                                     "residual alike",
                                     common.a->batch_axis, common.y->batch_axis));
  }
  auto layer = std::make_unique<QMatMulLayer>();
  QDQRT_ASSIGN_OR_RETURN(layer->packed, load_gemm(context, params::kMatMulWeights, fold_scale(common.spec)));
  if (layer->packed.n != common.n || layer->packed.k != common.k ||
      layer->packed.input_signed != (common.a->dtype == DataType::kInt8)) {
    return context.error(fmt::format("packed weights are {}x{}, expected {}x{}", layer->packed.n, layer->packed.k,
                                     common.n, common.k));
  }
  layer->epilogue = build_epilogue(common.spec, common.n);
  layer->input = context.layer().inputs[0];
  layer->residual = common.residual;
  layer->output = context.layer().outputs[0];
  layer->k = common.k;
  layer->n = common.n;
  layer->grid.tiles = ceil_div(common.n, layer->packed.nr);
  layer->owners = blob_owners(context.layer());
  if (common.spec.program) layer->owners.push_back(common.spec.program);
  return std::unique_ptr<Layer>(std::move(layer));
}

// Where a batched matmul takes the batch: the matrices' dim 0 (a and b alike), or with a 2-D b
// any dim of a but the last; the output (and the residual) as a.
bool matrices_hold_the_batch(const BatchLayout& a, const BatchLayout& b, const BatchLayout& y, size_t a_rank,
                             size_t b_rank) {
  if (a != y) return false;
  if (!a.batched) return !b.batched;
  if (b_rank == 2) return !b.batched && a.axis >= 0 && static_cast<size_t>(a.axis) + 1 < a_rank;
  return a.axis == 0 && b == a;
}

Result<std::unique_ptr<Layer>> bind_qbatched_matmul(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(CommonBind common, bind_common(context, 2));
  using namespace params;
  auto layer = std::make_unique<QBatchedMatMulLayer>();
  QDQRT_ASSIGN_OR_RETURN(layer->isa, kIsa.read(context));
  QDQRT_RETURN_IF_ERROR(check_within_plan_isa(context, layer->isa));
  if (kernels::usable_isa(layer->isa) != layer->isa) {
    return context.error(fmt::format("ISA '{}' is not usable on this machine", kernels::isa_name(layer->isa)));
  }
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* b, check_input(context, 1, {"b", -1, static_cast<int>(Layout::kPlain), true}));
  const Shape& a_shape = common.a->shape;
  const Shape& b_shape = b->shape;
  if (b_shape.size() < 2 || b_shape[b_shape.size() - 2] != common.k || b_shape.back() != common.n) {
    return context.error("b shape does not match k and n");
  }
  if (b_shape.size() == 2) {
    if (common.batch_count != 1) return context.error("a 2-D b multiplies one matrix");
    if (b->batched) return context.error("a 2-D b cannot be batched");
  } else {
    if (b_shape.size() != a_shape.size() || !std::equal(a_shape.begin(), a_shape.end() - 2, b_shape.begin()) ||
        b->batched != common.a->batched) {
      return context.error("b's leading dims differ from a's");
    }
    if (common.m != a_shape[a_shape.size() - 2]) return context.error("m does not match a");
  }
  bool residual_fits = true;
  if (common.residual >= 0) {
    QDQRT_ASSIGN_OR_RETURN(const PlanTensor* residual, context.input(2));
    residual_fits = batch_layout_of(*residual) == batch_layout_of(*common.y);
  }
  if (!residual_fits || !matrices_hold_the_batch(batch_layout_of(*common.a), batch_layout_of(*b),
                                                 batch_layout_of(*common.y), a_shape.size(), b_shape.size())) {
    return context.error(fmt::format("the batch (a dim {}, b dim {}, output dim {}) is not in the matrices of a, b and "
                                     "the output alike",
                                     common.a->batch_axis, b->batch_axis, common.y->batch_axis));
  }
  layer->batched = b_shape.size() > 2 && common.a->batched;
  layer->matrices_per_image = layer->batched ? common.batch_count / a_shape[0] : common.batch_count;
  if (layer->batched && layer->matrices_per_image * a_shape[0] != common.batch_count) {
    return context.error("batch_count is not a multiple of the batch");
  }
  QDQRT_ASSIGN_OR_RETURN(layer->a_scale, kAScale.read(context));
  QDQRT_ASSIGN_OR_RETURN(layer->b_scale, kBScale.read(context));
  layer->a_signed = common.a->dtype == DataType::kInt8;
  layer->b_signed = b->dtype == DataType::kInt8;
  QDQRT_ASSIGN_OR_RETURN(layer->a_zero_point, read_zero_point(context, kAZeroPoint, layer->a_signed));
  QDQRT_ASSIGN_OR_RETURN(layer->b_zero_point, read_zero_point(context, kBZeroPoint, layer->b_signed));
  layer->output_scale = fold_scale(common.spec);
  QDQRT_ASSIGN_OR_RETURN(layer->bias, kBias.read_optional(context, common.n));
  layer->layout = scratch_layout(layer->isa, common.n, common.k);
  if (context.layer().scratch_bytes < layer->layout.total()) {
    return context.error(fmt::format("scratch of {} bytes, the packed b needs {}", context.layer().scratch_bytes,
                                     layer->layout.total()));
  }
  layer->epilogue = build_epilogue(common.spec, common.n);
  layer->a = context.layer().inputs[0];
  layer->b = context.layer().inputs[1];
  layer->residual = common.residual;
  layer->output = context.layer().outputs[0];
  layer->m = common.m;
  layer->k = common.k;
  layer->n = common.n;
  layer->owners = blob_owners(context.layer());
  if (common.spec.program) layer->owners.push_back(common.spec.program);
  return std::unique_ptr<Layer>(std::move(layer));
}

}  // namespace

void register_int8_matmul_layers(LayerRegistry& registry) {
  registry.add_kind({.kind = kConstantKind, .bind = bind_qmatmul, .any_batch_layout = true});
  registry.add_kind({.kind = kBatchedKind, .bind = bind_qbatched_matmul, .any_batch_layout = true});
  NodeLowering lowering;
  lowering.domain = qdqrt::layers::kDomain;
  lowering.op_type = qdqrt::layers::kQMatMul;
  lowering.lower = lower_qmatmul;
  lowering.accepts = [](const Node& node, const BuildContext& context) { return analyze_qmatmul(node, context).ok(); };
  registry.add_lowering(lowering);
  // The batch off dim 0 (offered only to lowerings that say so): a constant b with the batch in
  // the rows of a and the output, or a runtime b with it in the matrices (bind checks the same).
  lowering.any_batch_layout = true;
  lowering.accepts = [](const Node& node, const BuildContext& context) {
    auto spec = analyze_qmatmul(node, context);
    if (!spec.ok()) return false;
    const auto a = context.batch_layout(node.input(qdqrt::layers::kMatMulA));
    const auto y = context.batch_layout(node.outputs[0]);
    if (!a || !y) return false;
    if (spec->b_constant != nullptr) {
      if (!rows_hold_the_batch(*a, *y, spec->a_shape.size())) return false;
    } else {
      const auto b = context.batch_layout(node.input(qdqrt::layers::kMatMulB));
      if (!b || !matrices_hold_the_batch(*a, *b, *y, spec->a_shape.size(), spec->b_shape.size())) return false;
    }
    if (spec->epilogue.has_residual) {
      const auto residual = context.batch_layout(node.input(qdqrt::layers::kMatMulResidual));
      if (!residual || *residual != *y) return false;
    }
    return true;
  };
  registry.add_lowering(std::move(lowering));
}

}  // namespace qdqrt::engine::int8
