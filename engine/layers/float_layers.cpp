// Native fp32 layers: registration of the float_*.cpp files and their shared helpers
// (engine/layers/float_common.h). docs/engine_float_layers.md lists the layers.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "engine/layers/float_common.h"

namespace qdqrt::engine {

namespace fp32 {

kernels::Isa bind_isa(const EnginePlan& plan) {
  const kernels::Isa active = kernels::active_isa();
  auto isa = kernels::parse_isa(plan.isa);
  if (!isa) return active;
  return std::min(*isa, active);
}

Result<kernels::Isa> read_packed_isa(const BindContext& context, std::string_view prefix) {
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, params::kIsa.read(context, prefix));
  if (kernels::usable_isa(isa) != isa) {
    return context.error(fmt::format("weights packed for {}, this machine supports only {}", kernels::isa_name(isa),
                                     kernels::isa_name(kernels::detected_isa())));
  }
  return isa;
}

ColumnBlockSplit::ColumnBlockSplit(int64_t row_items_, int64_t columns_, int64_t column_unit_,
                                   int64_t few_rows_column_blocks)
    : row_items(std::max<int64_t>(row_items_, 1)), columns(columns_), column_unit(std::max<int64_t>(column_unit_, 1)) {
  column_units = std::max<int64_t>((columns + column_unit - 1) / column_unit, 1);
  const int64_t units_per_block = std::max<int64_t>(kMaxBlockColumns / column_unit, 1);
  column_blocks = (column_units + units_per_block - 1) / units_per_block;
  if (row_items < kFewRowItems) {
    column_blocks = std::max(column_blocks, std::min(column_units, few_rows_column_blocks));
    // Few units that do not divide evenly (MobileNetV2's 7x7 projections: 5 panels of 160 columns
    // in blocks of 1, 1, 1, 2 units gave one of two threads 60%): one unit per block.
    if (column_units <= 2 * few_rows_column_blocks && column_units % column_blocks != 0) column_blocks = column_units;
  }
}

DataType value_dtype(const BuildContext& context, const std::string& value) {
  auto dtype = context.dtype_of(value);
  return dtype.ok() ? *dtype : DataType::kUndefined;
}

bool all_float(const Node& node, const BuildContext& context) {
  for (const std::string& input : node.inputs) {
    if (!input.empty() && value_dtype(context, input) != DataType::kFloat) return false;
  }
  for (const std::string& output : node.outputs) {
    if (!output.empty() && value_dtype(context, output) != DataType::kFloat) return false;
  }
  return true;
}

PlanLayer make_layer(const Node& node, const std::string& kind, const std::string& kernel) {
  PlanLayer layer;
  layer.kind = kind;
  layer.name = node.name;
  layer.source_nodes = {node.name};
  layer.op_type = node.op_type;
  layer.kernel = kernel;
  return layer;
}

Status expect_tensor(const BindContext& context, const PlanTensor& tensor, const char* what, DataType dtype, int rank,
                     Layout layout) {
  if (tensor.dtype != dtype) {
    return context.error(fmt::format("{} '{}' is {}, expected {}", what, tensor.name, dtype_name(tensor.dtype),
                                     dtype_name(dtype)));
  }
  if (tensor.layout != layout) {
    return context.error(fmt::format("{} '{}' is stored {}, expected {}", what, tensor.name, layout_name(tensor.layout),
                                     layout_name(layout)));
  }
  if (rank >= 0 && static_cast<int>(tensor.shape.size()) != rank) {
    return context.error(fmt::format("{} '{}' has shape {}, expected rank {}", what, tensor.name,
                                     shape_to_string(tensor.shape), rank));
  }
  if (safe_numel(tensor.shape) < 0) {
    return context.error(fmt::format("{} '{}' has a bad shape {}", what, tensor.name, shape_to_string(tensor.shape)));
  }
  // The batch axis holds batch_factor slices per image (dim 0, one slice, for most tensors).
  if (tensor.batched &&
      (tensor.batch_axis < 0 || static_cast<size_t>(tensor.batch_axis) >= tensor.shape.size() ||
       tensor.batch_factor < 1 ||
       tensor.shape[static_cast<size_t>(tensor.batch_axis)] != context.plan().max_batch * tensor.batch_factor)) {
    return context.error(fmt::format("{} '{}' is batched but dim {} of its shape {} is not {} x the maximum batch {}",
                                     what, tensor.name, tensor.batch_axis, shape_to_string(tensor.shape),
                                     tensor.batch_factor, context.plan().max_batch));
  }
  return Status::ok();
}

int64_t safe_numel(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return -1;
    if (dim != 0 && count > (std::numeric_limits<int64_t>::max() / 16) / dim) return -1;
    count *= dim;
  }
  return count;
}

void gemm_in_stack_sized_calls(const kernels::Fp32Kernels& fp32, const kernels::Fp32GemmParams& params, const float* a,
                               size_t lda, const float* b, size_t ldb, const float* bias, float* c, size_t ldc) {
  // Shallow products take wider calls: each packed block (rows or columns x depth) stays <= 128 KiB.
  const size_t max_depth = kGemmMaxDepth;
  const size_t depth = std::max<size_t>(1, std::min(params.k, max_depth));
  const size_t block_floats = static_cast<size_t>(kGemmMaxRows * kGemmMaxDepth);
  const size_t max_rows = std::max<size_t>(kGemmMaxRows, block_floats / depth / 16 * 16);
  const size_t max_columns = std::max<size_t>(kGemmMaxColumns, block_floats / depth / 16 * 16);
  for (size_t row = 0; row < params.m; row += max_rows) {
    for (size_t column = 0; column < params.n; column += max_columns) {
      for (size_t k0 = 0; k0 < params.k || k0 == 0; k0 += max_depth) {
        kernels::Fp32GemmParams slice = params;
        slice.m = std::min(max_rows, params.m - row);
        slice.n = std::min(max_columns, params.n - column);
        slice.k = std::min(max_depth, params.k - k0);
        if (k0 > 0) slice.beta = 1.0f;  // accumulate onto the earlier depth slices
        const float* b_block = params.transpose_b ? b + column * ldb + k0 : b + k0 * ldb + column;
        fp32.gemm.fn(slice, a + row * lda + k0, lda, b_block, ldb, bias != nullptr && k0 == 0 ? bias + column : nullptr,
                     c + row * ldc + column, ldc);
        if (params.k == 0) break;
      }
    }
  }
}

Shape image_shape(const PlanTensor& tensor) {
  Shape shape = tensor.shape;
  if (tensor.batched && !shape.empty()) shape[0] = 1;
  return shape;
}

}  // namespace fp32

void register_float_layers(LayerRegistry& registry) {
  fp32::register_conv(registry);
  fp32::register_gemm(registry);
  fp32::register_bf16_gemm(registry);
  fp32::register_elementwise(registry);
  fp32::register_pool(registry);
  fp32::register_shape(registry);
  fp32::register_resize(registry);
  fp32::register_reduce(registry);
  fp32::register_pow(registry);
}

}  // namespace qdqrt::engine
