// Shared pieces of the native float layer files (engine/layers/float_*.cpp), registered together
// by register_float_layers() (float_layers.cpp). Internal to engine/layers/.
//
// Every float layer reads and writes Layout::kPlain fp32 tensors (ONNX row-major, NCHW), except
// the unary activations, which keep whatever layout their input is stored in. A lowering that
// meets an attribute value or a shape it does not handle calls lower_with_reference() instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/layer.h"
#include "engine/layer_params.h"
#include "engine/layers/layer_families.h"
#include "kernels/dispatch.h"
#include "kernels/fp32/fp32_kernels.h"

namespace qdqrt::engine::fp32 {

// The fp32 GEMM (Eigen) packs blocks of A (mc x kc) and B (kc x nc) on the stack only while each
// is <= 128 KiB and mallocs them on every call otherwise; kc, mc and nc never exceed k, m and n.
// gemm_in_stack_sized_calls() therefore splits C(m x n) += A(m x k) B(k x n) into calls of at most
// 512 depth (accumulating over depth slices with beta = 1) and rows, columns <= 32768 / depth
// (at least 64), which keeps run() free of heap allocation (tests/engine_float/allocation_test.cpp).
inline constexpr int64_t kGemmMaxRows = 64;
inline constexpr int64_t kGemmMaxColumns = 64;
inline constexpr int64_t kGemmMaxDepth = 512;

// Same contract as Fp32GemmFn (no transpose_a; relu not supported); bias (per column) may be null.
void gemm_in_stack_sized_calls(const kernels::Fp32Kernels& fp32, const kernels::Fp32GemmParams& params, const float* a,
                               size_t lda, const float* b, size_t ldb, const float* bias, float* c, size_t ldc);

// Work split of the layers on the fp32 igemm (float_conv/, float_gemm.cpp): items are (column
// block, row item), column-block major, so a chunk of consecutive items is one kernel call per
// block (and a run of whole blocks one call: a single thread passes over the input once). The
// columns split in units (an igemm panel, a depthwise vector) into blocks of at most
// kMaxBlockColumns, and into at least kFewRowsColumnBlocks when there are fewer than
// kFewRowItems row items (ResNet-50's layer4 at batch 1: 4 tiles of pixels), so threads balance
// and each streams only its share of the weights.
struct ColumnBlockSplit {
  static constexpr int64_t kMaxBlockColumns = 256;
  static constexpr int64_t kFewRowItems = 16;
  static constexpr int64_t kFewRowsColumnBlocks = 4;

  int64_t row_items = 1, column_blocks = 1;
  int64_t columns = 0, column_unit = 1, column_units = 1;

  // few_rows_column_blocks: the column blocks when rows are few (Winograd: 2, as each column block
  // transforms the input tiles again).
  ColumnBlockSplit(int64_t row_items, int64_t columns, int64_t column_unit,
                   int64_t few_rows_column_blocks = kFewRowsColumnBlocks);
  // One row item, the columns in exactly `blocks` blocks of whole units (as even as they go).
  static ColumnBlockSplit blocks_of(int64_t columns, int64_t column_unit, int64_t blocks) {
    ColumnBlockSplit split(1, columns, column_unit);
    split.column_blocks = std::clamp<int64_t>(blocks, 1, split.column_units);
    return split;
  }
  int64_t items() const { return row_items * column_blocks; }
  // Calls run(first_row_item, end_row_item, column_begin, column_end) for items [begin, end).
  template <class Run>
  void for_each_call(int64_t begin, int64_t end, const Run& run) const {
    while (begin < end) {
      const int64_t block = begin / row_items;
      int64_t last_block = block;
      if (begin % row_items == 0 && end >= (block + 1) * row_items) last_block = end / row_items - 1;
      const int64_t call_end = std::min(end, (last_block + 1) * row_items);
      const int64_t column_begin = std::min(columns, column_units * block / column_blocks * column_unit);
      const int64_t column_end = std::min(columns, column_units * (last_block + 1) / column_blocks * column_unit);
      if (column_begin < column_end) {
        run(begin - block * row_items, call_end - last_block * row_items, column_begin, column_end);
      }
      begin = call_end;
    }
  }
};

// One registration function per file.
void register_conv(LayerRegistry& registry);         // float_conv/implementations.cpp: Conv
void register_gemm(LayerRegistry& registry);         // float_gemm.cpp: Gemm, MatMul
void register_bf16_gemm(LayerRegistry& registry);    // bf16_gemm.cpp: the bf16_gemm kind

// float_gemm.cpp: A [rows..., k] and Y [rows..., n] of fp32_gemm and bf16_gemm: float, every dim
// but the last equal, the batch (if any) in the rows and the same in both, k and n within int.
Status check_gemm_tensors(const BindContext& context, const PlanTensor& a, const PlanTensor& y, int64_t k, int64_t n);
// bf16_gemm.cpp: Y = A x B + bias (then GELU with `gelu`) with B ([K, N], or [N, K] with trans_b;
// alpha already applied by float_gemm.cpp's lowering, which calls it) constant, in bf16 with fp32
// sums (BuildContext::bf16_float_gemm()).
Status add_bf16_gemm_layer(const Node& node, BuildContext& context, const float* values, int64_t k, int64_t n,
                           bool trans_b, const std::vector<float>& bias, bool gelu, int32_t input, int32_t output);
void register_elementwise(LayerRegistry& registry);  // float_elementwise.cpp: binary, unary, Softmax, BatchNormalization
void register_pool(LayerRegistry& registry);         // float_pool.cpp: MaxPool, AveragePool, GlobalAveragePool
void register_shape(LayerRegistry& registry);        // float_shape.cpp: Reshape & co (copy), Concat, Transpose
void register_resize(LayerRegistry& registry);       // resize_layers.cpp: Resize (fp32; int8/uint8 nearest)
void register_reduce(LayerRegistry& registry);       // float_reduce.cpp: ReduceMean
void register_pow(LayerRegistry& registry);          // float_pow.cpp: Pow by a constant exponent

// The ISA float kernels run with: the plan's ISA limited to what this machine can run (float
// layers hold no ISA-specific packed data, so a lower ISA is always fine).
kernels::Isa bind_isa(const EnginePlan& plan);
// The `isa` param (under `prefix`) of a layer with packed weights: an error unless this machine
// runs that ISA (packed data is ISA-specific, unlike bind_isa's choice).
Result<kernels::Isa> read_packed_isa(const BindContext& context, std::string_view prefix = "");

// dtype of a node's input/output value (kUndefined when unknown).
DataType value_dtype(const BuildContext& context, const std::string& value);
// Accepts-predicate: every present input and output of the node is fp32.
bool all_float(const Node& node, const BuildContext& context);

// A layer for `node` with kind, kernel name, name and source set.
PlanLayer make_layer(const Node& node, const std::string& kind, const std::string& kernel);

// Checks a bound tensor: dtype, layout kPlain, rank (any when rank < 0). Errors name the layer.
Status expect_tensor(const BindContext& context, const PlanTensor& tensor, const char* what, DataType dtype, int rank,
                     Layout layout = Layout::kPlain);
// The number of elements of `shape`, or -1 when a dim is negative or the product overflows.
int64_t safe_numel(const Shape& shape);

// The shape with dim 0 set to 1 when `batched` (one image of a batched tensor).
Shape image_shape(const PlanTensor& tensor);

// Unwraps a Result<T> inside bind functions, prefixing errors with the layer.
#define QDQRT_BIND_ASSIGN(lhs, context, expr)                                       \
  QDQRT_ASSIGN_OR_RETURN_IMPL(QDQRT_CONCAT(bind_result_, __LINE__), lhs,             \
                              ::qdqrt::engine::fp32::prefixed((context), (expr)))

template <class T>
Result<T> prefixed(const BindContext& context, Result<T> result) {
  if (result.ok()) return result;
  if (result.status().message().rfind("layer '", 0) == 0) return result;
  return context.error(result.status().message());
}

}  // namespace qdqrt::engine::fp32
