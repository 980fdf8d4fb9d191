// "strided_copy": one data-movement layer for the ops that read their input at fixed strides,
// any dtype, rank <= 6, the batch on any axis of either side (any_batch_layout):
//   Transpose   that the float and int8 transposes leave (rank 5-6, the batch moved off dim 0:
//               the head split [B,T,3,H,D] -> [3,B,H,T,D] of attention);
//   Gather      of a constant scalar index (q/k/v = qkv[0..2], the class token x[:, 0]);
//   Expand      (the class token [1,1,D] to [B,1,D]: its target shape, folded at the built batch,
//               is never read; the output's dims come from RunState::dim);
//   Slice       with constant starts/ends/axes and steps >= 1 (torch.chunk's channel split, the
//               q/k/v thirds of a packed projection, x[..., ::2]);
//   Split       one layer per output, each a Slice of its part.
// "constant_pad" (below): Pad in constant mode.
// Params (engine/layer_params.h): per output axis the input axis it walks (`source_axes`, -1:
// broadcast, stride 0) and, optionally, the step it walks it by (`copy.steps`, default 1); per
// input axis the index it starts at (`starts`; the fixed index of an axis no output axis walks).
// Input and output are both plain or both (rank 4, batch on dim 0) channels-last: a Slice or Split
// reads its input as it is stored and writes its parts the same way, so the channel split after an
// NHWC convolution copies each pixel's channel range (a reader that wants NCHW gets a reorder of its
// part; a copy across layouts would gather one element per row, slower than a reorder's blocked
// transpose). Items: output rows in storage order, after dims of 1 are dropped and neighbouring
// dims that are neighbours in the input too are merged (rows up to 16384 elements); 1- and 4-byte
// rows that walk the input at a stride beside a contiguous output dim copy as tiled 2-D transposes.
// The float and int8 Transpose layers (plain_transpose, int8_transpose) run as this layer too
// (make_transpose_copy).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/ops/tensor.h"
#include "engine/layer.h"
#include "engine/layer_params.h"
#include "engine/layers/copy_geometry.h"
#include "engine/layers/element_size.h"
#include "engine/layers/float_common.h"
#include "engine/layers/layer_families.h"
#include "engine/plan_aliases.h"

namespace qdqrt::engine {

namespace {

constexpr const char* kKind = "strided_copy";
constexpr size_t kMaxRank = kMaxCopyRank;
// The longest row (elements) merging dims makes of a copy's innermost dim.
constexpr int64_t kMaxMergedRow = 16384;
// Work items of a copy: the output's rows of `inner` elements (its last stored dim).
WorkShape output_rows(const RunState& state, int32_t output, int64_t inner) {
  return {.items = inner > 0 ? state.numel(output) / inner : 0, .ops_per_item = static_cast<double>(inner)};
}

// The logical axis stored at each position: plain is the identity, NHWC keeps [N, C, H, W] as N, H, W, C.
std::array<size_t, kMaxRank> storage_order(Layout layout, size_t rank) {
  std::array<size_t, kMaxRank> order{};
  for (size_t a = 0; a < rank; ++a) order[a] = a;
  if (layout == Layout::kNhwc && rank == 4) order = {0, 2, 3, 1};
  return order;
}

std::optional<BatchLayout> tracked(const BuildContext& context, const std::string& value) {
  if (context.constant(value) != nullptr) return BatchLayout{};
  return context.batch_layout(value);
}

class StridedCopyLayer final : public Layer {
 public:
  int32_t input = -1, output = -1;
  size_t element = 1;
  CopyGeometry geometry;
  Layout input_layout = Layout::kPlain, output_layout = Layout::kPlain;
  // A part of a Concat's rows (engine/plan_aliases.h): output rows of this many elements, this
  // many apart; 0: a dense output.
  int64_t output_row_length = 0, output_row_stride = 0;

  // Output dims in storage order and, per stored output axis, the input stride; the input offset
  // of element 0.
  int64_t layout(const RunState& state, std::array<int64_t, kMaxRank>& dims, std::array<int64_t, kMaxRank>& strides) const {
    const size_t x_rank = geometry.starts.size(), y_rank = geometry.source_axes.size();
    const std::array<size_t, kMaxRank> x_order = storage_order(input_layout, x_rank);
    const std::array<size_t, kMaxRank> y_order = storage_order(output_layout, y_rank);
    std::array<int64_t, kMaxRank> input_strides{};  // per logical input axis
    int64_t stride = 1, base = 0;
    for (size_t p = x_rank; p-- > 0;) {
      const size_t a = x_order[p];
      input_strides[a] = stride;
      base += geometry.starts[a] * stride;
      stride *= state.dim(input, a);
    }
    for (size_t p = 0; p < y_rank; ++p) {
      const size_t k = y_order[p];
      dims[p] = state.dim(output, k);
      const int64_t source = geometry.source_axes[k];
      strides[p] = source < 0 ? 0 : input_strides[static_cast<size_t>(source)] * geometry.step(k);
    }
    return base;
  }

  // layout(), with dims of 1 left out and neighbouring output dims that are also neighbours in the
  // input (stride of the outer = stride x extent of the inner) merged: the channel shuffle
  // [2, 58, 28, 28] -> [58, 2, 28, 28] copies rows of 784 elements, not 28. The innermost dim
  // grows only up to kMaxMergedRow elements, so a large copy keeps rows to split over threads.
  // Returns the input offset of element 0; `rank` gets the merged rank.
  int64_t merged_layout(const RunState& state, std::array<int64_t, kMaxRank>& dims,
                        std::array<int64_t, kMaxRank>& strides, size_t& rank) const {
    std::array<int64_t, kMaxRank> full_dims{}, full_strides{};
    const int64_t base = layout(state, full_dims, full_strides);
    const size_t full_rank = geometry.source_axes.size();
    // From the innermost dim outwards, into dims[kMaxRank - rank ...], then moved to the front.
    rank = 0;
    for (size_t p = full_rank; p-- > 0;) {
      const int64_t dim = full_dims[p], stride = full_strides[p];
      if (dim == 1) continue;
      if (dim == 0) {  // an empty output: one empty row
        dims[0] = 0;
        strides[0] = 1;
        rank = 1;
        return base;
      }
      const size_t inner = kMaxRank - rank;  // the merged dim just inside this one
      const bool innermost = rank == 1;
      if (rank > 0 && stride == strides[inner] * dims[inner] &&
          (!innermost || dims[inner] * dim <= kMaxMergedRow)) {
        dims[inner] *= dim;
        continue;
      }
      ++rank;
      dims[kMaxRank - rank] = dim;
      strides[kMaxRank - rank] = stride;
    }
    if (rank == 0) {
      dims[0] = 1;
      strides[0] = 1;
      rank = 1;
      return base;
    }
    for (size_t p = 0; p < rank; ++p) {
      dims[p] = dims[kMaxRank - rank + p];
      strides[p] = strides[kMaxRank - rank + p];
    }
    return base;
  }

  WorkShape work(const RunState& state) const override {
    std::array<int64_t, kMaxRank> dims{}, strides{};
    size_t rank = 0;
    merged_layout(state, dims, strides, rank);
    return output_rows(state, output, dims[rank - 1]);
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    visit_element_size(element, [&]<class T>() { run_typed<T>(state, begin, end); });
  }

 private:
  template <class T>
  void run_typed(const RunState& state, int64_t begin, int64_t end) const {
    std::array<int64_t, kMaxRank> dims{}, strides{};
    size_t rank = 0;
    const int64_t base = merged_layout(state, dims, strides, rank);
    const int64_t inner = dims[rank - 1], inner_stride = strides[rank - 1];
    const T* x = state.data<const T>(input);
    T* y = state.data<T>(output);
    // Row `begin`'s index once, then an odometer: the short rows of attention (16 values) made
    // the per-row divisions cost more than the copies.
    std::array<int64_t, kMaxRank> index{};
    int64_t offset = base, rest = begin;
    for (size_t k = rank - 1; k-- > 0;) {
      index[k] = rest % dims[k];
      offset += index[k] * strides[k];
      rest /= dims[k];
    }
    auto copy = [inner_stride](T* target, const T* source, int64_t count) {
      if (inner_stride == 1) {
        std::memcpy(target, source, static_cast<size_t>(count) * sizeof(T));
      } else if (inner_stride == 0) {
        // A broadcast row (F.normalize's norm expanded over the head dim): a vector fill; the
        // element loop below took ~40 cycles per row of 32.
        std::fill(target, target + count, *source);
      } else {
        for (int64_t i = 0; i < count; ++i) target[i] = source[i * inner_stride];
      }
    };
    // A transpose inside the copy (attention's K^T [T, H, D] -> [H, D, T]: each output row walks
    // the input at a stride while the next output dim walks it contiguously): the rows of one run
    // along that dim are one 2-D transpose in tiles (kernels/reorder/reorder.h) instead of one
    // strided load per element. Same bytes.
    const bool tiled = (sizeof(T) == 1 || sizeof(T) == 4) && output_row_stride == 0 && rank >= 2 &&
                       inner_stride > 1 && strides[rank - 2] == 1;
    // The input offset and index of the next output row (an odometer over the dims before the row).
    const auto next_row = [&] {
      for (size_t k = rank - 1; k-- > 0;) {
        offset += strides[k];
        if (++index[k] < dims[k]) break;
        offset -= index[k] * strides[k];
        index[k] = 0;
      }
    };
    for (int64_t row = begin; row < end;) {
      if (tiled) {
        const size_t d = rank - 2;
        const int64_t run = std::min(end - row, dims[d] - index[d]);
        transpose_tile<T>(static_cast<size_t>(inner), static_cast<size_t>(run), x + offset,
                          static_cast<size_t>(inner_stride), y + row * inner, static_cast<size_t>(inner));
        // To the run's last row (dim d has stride 1), then one step on as every row takes.
        row += run;
        index[d] += run - 1;
        offset += run - 1;
        next_row();
        continue;
      }
      const T* source = x + offset;
      if (output_row_stride == 0) {
        copy(y + row * inner, source, inner);
      } else {
        // The copy's row in pieces where it crosses the output's rows (one division per copy row:
        // a tap of a lowered 3-D conv writes 56-byte pieces of 16384-element rows).
        const int64_t position = row * inner;
        int64_t output_row = position / output_row_length, column = position % output_row_length;
        for (int64_t i = 0; i < inner; ++output_row, column = 0) {
          const int64_t count = std::min(inner - i, output_row_length - column);
          copy(y + output_row * output_row_stride + column, source + i * inner_stride, count);
          i += count;
        }
      }
      next_row();
      ++row;
    }
  }

  // dst[c * dst_stride + r] = src[r * src_stride + c] (1- and 4-byte elements).
  template <class T>
  void transpose_tile(size_t rows, size_t cols, const T* src, size_t src_stride, T* dst, size_t dst_stride) const {
    if constexpr (sizeof(T) == 4) {
      transposes.transpose32.fn(rows, cols, reinterpret_cast<const uint32_t*>(src), src_stride,
                                reinterpret_cast<uint32_t*>(dst), dst_stride);
    } else if constexpr (sizeof(T) == 1) {
      transposes.transpose8.fn(rows, cols, reinterpret_cast<const uint8_t*>(src), src_stride,
                               reinterpret_cast<uint8_t*>(dst), dst_stride);
    }
  }

  kernels::ReorderKernels transposes = kernels::reorder_kernels(kernels::active_isa());
};

// A channels-last tensor is rank 4 with the batch (if any) on dim 0, one slice per image.
bool layout_allowed(const PlanTensor& tensor) {
  return tensor.layout == Layout::kPlain ||
         (tensor.layout == Layout::kNhwc && tensor.shape.size() == 4 && batch_leads(tensor));
}

// The one input and one output of a copy layer, of one dtype the copies move, and its size.
struct CopyOperands {
  const PlanTensor* x = nullptr;
  const PlanTensor* y = nullptr;
  size_t element = 0;
};

Result<CopyOperands> bind_copy_operands(const BindContext& context) {
  if (context.layer().inputs.size() != 1 || context.layer().outputs.size() != 1) {
    return context.error("expects one input and one output");
  }
  CopyOperands operands;
  QDQRT_ASSIGN_OR_RETURN(operands.x, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(operands.y, context.output(0));
  operands.element = dtype_size(operands.x->dtype);
  if (operands.x->dtype != operands.y->dtype || !is_copyable_element_size(operands.element)) {
    return context.error("input and output must have one dtype of 1, 2, 4 or 8 bytes");
  }
  return operands;
}

Result<std::unique_ptr<Layer>> bind_strided_copy(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const CopyOperands operands, bind_copy_operands(context));
  const PlanTensor* x = operands.x;
  const PlanTensor* y = operands.y;
  const size_t element = operands.element;
  if (x->shape.empty() || x->shape.size() > kMaxRank || y->shape.empty() || y->shape.size() > kMaxRank) {
    return context.error("ranks must be 1..6");
  }
  if (!layout_allowed(*x) || !layout_allowed(*y) || x->layout != y->layout) {
    return context.error("input and output must both be plain, or both rank-4 NHWC with the batch on dim 0");
  }
  for (const PlanTensor* tensor : {x, y}) {
    for (int64_t dim : tensor->shape) {
      if (dim < 0 || dim > params::kMaxDim) return context.error(fmt::format("'{}' has a bad shape", tensor->name));
    }
    if (tensor->batched && (static_cast<size_t>(tensor->batch_axis) >= tensor->shape.size() ||
                            tensor->shape[static_cast<size_t>(tensor->batch_axis)] !=
                                tensor->batch_factor * context.plan().max_batch)) {
      return context.error(fmt::format("'{}' is batched but its batch dim is not the maximum batch", tensor->name));
    }
  }
  auto layer = std::make_unique<StridedCopyLayer>();
  const int64_t x_rank = static_cast<int64_t>(x->shape.size());
  QDQRT_ASSIGN_OR_RETURN(layer->geometry.source_axes,
                         params::kSourceAxes.read_in(context, y->shape.size(), -1, x_rank - 1));
  QDQRT_ASSIGN_OR_RETURN(layer->geometry.starts, params::kStarts.read(context, x->shape.size()));
  if (context.layer().params.has(std::string(kCopySteps.key()))) {
    QDQRT_ASSIGN_OR_RETURN(layer->geometry.steps, kCopySteps.read(context, y->shape.size()));
  }
  if (!fits(layer->geometry, x->shape, batch_layout_of(*x), y->shape, batch_layout_of(*y))) {
    return context.error(fmt::format("source axes, starts and steps do not map input {} onto output {} (batch kept in place)",
                                     shape_to_string(x->shape), shape_to_string(y->shape)));
  }
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  layer->element = element;
  layer->input_layout = x->layout;
  layer->output_layout = y->layout;
  if (y->row_stride != 0) {
    layer->output_row_length = strided_row_length(context.plan(), *y);
    layer->output_row_stride = y->row_stride;
    if (layer->output_row_length <= 0 || layer->output_row_length > y->row_stride || !batch_on_dim0(*y)) {
      return context.error(fmt::format("output rows of {} at stride {} (batch in front) do not hold '{}'",
                                       layer->output_row_length, y->row_stride, y->name));
    }
  }
  return std::unique_ptr<Layer>(std::move(layer));
}

}  // namespace

std::unique_ptr<Layer> make_transpose_copy(int32_t input, int32_t output, size_t element,
                                           std::span<const int64_t> perm) {
  auto layer = std::make_unique<StridedCopyLayer>();
  layer->input = input;
  layer->output = output;
  layer->element = element;
  layer->geometry.source_axes.assign(perm.begin(), perm.end());
  layer->geometry.starts.assign(perm.size(), 0);
  return layer;
}

namespace {

// Writes its one output in rows at any stride (StridedCopyLayer::output_row_stride).
bool writes_strided_rows(const PlanLayer& layer, size_t output, const PlanTensor& tensor, int64_t row_length) {
  return output == 0 && layer.outputs.size() == 1 && row_length > 0 && batch_on_dim0(tensor);
}

// --- Lowerings: each op's geometry for output `output` of the node, or nullopt when this layer
// does not take it.

using GeometryFn = std::function<std::optional<CopyGeometry>(const Node&, size_t output, const Shape& x,
                                                             const Shape& y, const BuildContext&)>;

std::optional<CopyGeometry> transpose_geometry(const Node& node, size_t, const Shape& x, const Shape& y,
                                               const BuildContext&) {
  std::vector<int64_t> perm = node.attrs<TransposeAttributes>().perm;
  if (perm.empty()) {
    for (size_t a = x.size(); a-- > 0;) perm.push_back(static_cast<int64_t>(a));
  }
  if (perm.size() != x.size() || y.size() != x.size()) return std::nullopt;
  return CopyGeometry{.source_axes = perm, .starts = std::vector<int64_t>(x.size(), 0), .steps = {}};
}

std::optional<CopyGeometry> gather_geometry(const Node& node, size_t, const Shape& x, const Shape& y,
                                            const BuildContext& context) {
  const Tensor* indices = context.constant(node.input(1));
  if (indices == nullptr || !indices->shape().empty() || y.size() + 1 != x.size()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attrs<GatherAttributes>().axis;
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank) return std::nullopt;
  int64_t index = indices->value_as_int64(0);
  index = index < 0 ? index + x[static_cast<size_t>(axis)] : index;
  CopyGeometry geometry{.source_axes = {}, .starts = std::vector<int64_t>(x.size(), 0), .steps = {}};
  geometry.starts[static_cast<size_t>(axis)] = index;
  for (int64_t a = 0; a < rank; ++a) {
    if (a != axis) geometry.source_axes.push_back(a);
  }
  return geometry;
}

// A size-1 input axis is broadcast (stride 0) unless it is the input's batch axis, also where the
// output dim is 1 too: at maximum batch 1 the output's batch axis [1,1,D] looks like a copy of the
// class token's leading 1, but it follows the run's batch while the input's does not.
std::optional<CopyGeometry> expand_geometry(const Node& node, size_t, const Shape& x, const Shape& y,
                                            const BuildContext& context) {
  if (x.size() > y.size()) return std::nullopt;
  const std::optional<BatchLayout> x_batch = tracked(context, node.input(0));
  if (!x_batch) return std::nullopt;
  CopyGeometry geometry{.source_axes = {}, .starts = std::vector<int64_t>(x.size(), 0), .steps = {}};
  const size_t lead = y.size() - x.size();
  for (size_t k = 0; k < y.size(); ++k) {
    const bool broadcast =
        k < lead || (x[k - lead] == 1 && !(x_batch->batched && static_cast<size_t>(x_batch->axis) == k - lead));
    geometry.source_axes.push_back(broadcast ? -1 : static_cast<int64_t>(k - lead));
  }
  return geometry;
}

// The integer values of constant input `i`, or nullopt (absent: `fallback`). `scalar_ok`: a 0-D
// constant is one value (torch 1.13 exports tensor_split's Slice bounds as scalars; onnx's Slice
// and the reference read them so).
std::optional<std::vector<int64_t>> constant_ints(const Node& node, size_t i, const BuildContext& context,
                                                  std::optional<std::vector<int64_t>> fallback, bool scalar_ok = false) {
  if (!node.has_input(i)) return fallback;
  const Tensor* tensor = context.constant(node.input(i));
  if (tensor == nullptr || (tensor->dtype() != DataType::kInt64 && tensor->dtype() != DataType::kInt32) ||
      tensor->rank() > 1 || (tensor->rank() == 0 && !scalar_ok)) {
    return std::nullopt;
  }
  std::vector<int64_t> values;
  for (int64_t j = 0; j < tensor->numel(); ++j) values.push_back(tensor->value_as_int64(j));
  return values;
}

// Slice (opset >= 10: starts, ends, axes, steps as inputs), steps >= 1. ONNX's clamping: a
// negative start or end counts from the end, then both clamp to [0, dim].
std::optional<CopyGeometry> slice_geometry(const Node& node, size_t, const Shape& x, const Shape& y,
                                           const BuildContext& context) {
  if (node.opset < 10 || x.size() != y.size()) return std::nullopt;
  const std::optional<std::vector<int64_t>> starts = constant_ints(node, 1, context, std::nullopt, true);
  const std::optional<std::vector<int64_t>> ends = constant_ints(node, 2, context, std::nullopt, true);
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  std::vector<int64_t> default_axes(starts->size());
  for (size_t i = 0; i < default_axes.size(); ++i) default_axes[i] = static_cast<int64_t>(i);
  const std::optional<std::vector<int64_t>> axes = constant_ints(node, 3, context, default_axes, true);
  const std::optional<std::vector<int64_t>> steps =
      constant_ints(node, 4, context, std::vector<int64_t>(starts->size(), 1), true);
  if (!axes || !steps || axes->size() != starts->size() || steps->size() != starts->size()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.size());
  CopyGeometry geometry{.source_axes = {}, .starts = std::vector<int64_t>(x.size(), 0),
                        .steps = std::vector<int64_t>(x.size(), 1)};
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < starts->size(); ++i) {
    int64_t axis = (*axes)[i];
    axis = axis < 0 ? axis + rank : axis;
    const int64_t step = (*steps)[i];
    if (axis < 0 || axis >= rank || seen[static_cast<size_t>(axis)] || step < 1 || step > params::kMaxDim) {
      return std::nullopt;
    }
    seen[static_cast<size_t>(axis)] = true;
    const int64_t dim = x[static_cast<size_t>(axis)];
    int64_t start = std::clamp<int64_t>((*starts)[i], -params::kMaxDim * 2, params::kMaxDim * 2);
    int64_t end = std::clamp<int64_t>((*ends)[i], -params::kMaxDim * 2, params::kMaxDim * 2);
    start = std::clamp<int64_t>(start < 0 ? start + dim : start, 0, dim);
    end = std::clamp<int64_t>(end < 0 ? end + dim : end, 0, dim);
    const int64_t length = end > start ? (end - start + step - 1) / step : 0;
    if (length != y[static_cast<size_t>(axis)]) return std::nullopt;
    geometry.starts[static_cast<size_t>(axis)] = length > 0 ? start : 0;
    geometry.steps[static_cast<size_t>(axis)] = step;
  }
  for (int64_t a = 0; a < rank; ++a) geometry.source_axes.push_back(a);
  if (std::all_of(geometry.steps.begin(), geometry.steps.end(), [](int64_t step) { return step == 1; })) {
    geometry.steps.clear();
  }
  return geometry;
}

// Output `output` of a Split: its part starts after the earlier outputs' dims along the axis.
std::optional<CopyGeometry> split_geometry(const Node& node, size_t output, const Shape& x, const Shape& y,
                                           const BuildContext& context) {
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attrs<SplitAttributes>().axis;
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank || y.size() != x.size()) return std::nullopt;
  int64_t start = 0;
  for (size_t i = 0; i < output; ++i) {
    if (node.outputs[i].empty()) return std::nullopt;
    Result<Shape> part = context.shape_of(node.outputs[i]);
    if (!part.ok() || part->size() != x.size()) return std::nullopt;
    start += (*part)[static_cast<size_t>(axis)];
  }
  CopyGeometry geometry{.source_axes = {}, .starts = std::vector<int64_t>(x.size(), 0), .steps = {}};
  geometry.starts[static_cast<size_t>(axis)] = y[static_cast<size_t>(axis)] > 0 ? start : 0;
  for (int64_t a = 0; a < rank; ++a) {
    if (a != axis && x[static_cast<size_t>(a)] != y[static_cast<size_t>(a)]) return std::nullopt;
    geometry.source_axes.push_back(a);
  }
  return geometry;
}

struct Analysis {
  CopyGeometry geometry;
  size_t element = 0;
};

std::optional<Analysis> analyze(const Node& node, size_t output, const BuildContext& context,
                                const GeometryFn& geometry_of) {
  if (!node.domain.empty() || !node.has_input(0) || output >= node.outputs.size() || node.outputs[output].empty()) {
    return std::nullopt;
  }
  Result<Shape> x = context.shape_of(node.input(0));
  Result<Shape> y = context.shape_of(node.outputs[output]);
  Result<DataType> dtype = context.dtype_of(node.input(0));
  if (!x.ok() || !y.ok() || !dtype.ok()) return std::nullopt;
  const std::optional<BatchLayout> x_batch = tracked(context, node.input(0));
  const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs[output]);
  if (!x_batch || !y_batch) return std::nullopt;
  std::optional<CopyGeometry> geometry = geometry_of(node, output, *x, *y, context);
  if (!geometry || !fits(*geometry, *x, *x_batch, *y, *y_batch)) return std::nullopt;
  const size_t element = dtype_size(*dtype);
  if (!is_copyable_element_size(element)) return std::nullopt;
  return Analysis{std::move(*geometry), element};
}

// Slice and Split follow the stored layout; the other ops copy plain tensors.
struct CopyOp {
  const char* op_type;
  GeometryFn geometry_of;
  bool follows_layout;
};

Status lower(const Node& node, BuildContext& context, const CopyOp& op) {
  // Every output first: nothing is declared unless all of them lower.
  std::vector<Analysis> analyses;
  for (size_t output = 0; output < node.outputs.size(); ++output) {
    if (node.outputs[output].empty()) continue;
    std::optional<Analysis> analysis = analyze(node, output, context, op.geometry_of);
    if (!analysis) return internal_error("{}: strided_copy accepted a node it cannot lower", node.describe());
    analyses.push_back(std::move(*analysis));
  }
  int32_t x = -1;
  if (op.follows_layout) {
    QDQRT_ASSIGN_OR_RETURN(x, context.input_as_stored(node.input(0)));
    if (!layout_allowed(context.tensor(x))) {
      QDQRT_ASSIGN_OR_RETURN(x, context.input(node.input(0), Layout::kPlain));
    }
  } else {
    QDQRT_ASSIGN_OR_RETURN(x, context.input(node.input(0), Layout::kPlain));
  }
  size_t next = 0;
  for (size_t output = 0; output < node.outputs.size(); ++output) {
    if (node.outputs[output].empty()) continue;
    const Analysis& analysis = analyses[next++];
    const std::string& value = node.outputs[output];
    // The input's layout (see the top of the file).
    const std::optional<BatchLayout> y_batch = context.batch_layout(value);
    const bool nhwc = op.follows_layout && context.tensor(x).layout == Layout::kNhwc && y_batch && batch_leads(*y_batch);
    QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(value, nhwc ? Layout::kNhwc : Layout::kPlain));
    PlanLayer layer = fp32::make_layer(node, kKind, fmt::format("x{}-strided-copy", analysis.element * 8));
    layer.inputs = {x};
    layer.outputs = {y};
    params::kSourceAxes.write(layer, analysis.geometry.source_axes);
    params::kStarts.write(layer, analysis.geometry.starts);
    if (!analysis.geometry.steps.empty()) kCopySteps.write(layer, analysis.geometry.steps);
    context.add_layer(std::move(layer));
  }
  return Status::ok();
}

bool accepts(const Node& node, const BuildContext& context, const CopyOp& op) {
  bool any = false;
  for (size_t output = 0; output < node.outputs.size(); ++output) {
    if (node.outputs[output].empty()) continue;
    if (!analyze(node, output, context, op.geometry_of)) return false;
    any = true;
  }
  return any;
}

// The float and int8 transposes take rank <= 4 (float) or 8-bit tensors with the batch kept in
// place; this layer takes the rest.
bool transpose_left_over(const Node& node, const BuildContext& context) {
  Result<Shape> x = context.shape_of(node.input(0));
  const std::optional<BatchLayout> x_batch = context.batch_layout(node.input(0));
  const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs.empty() ? "" : node.outputs[0]);
  if (!x.ok()) return false;
  // Between NCHW and NHWC with the batch on dim 0: the float transpose may relabel it (no copy).
  const std::vector<int64_t>& perm = node.attrs<TransposeAttributes>().perm;
  if (x->size() == 4 && (perm == std::vector<int64_t>{0, 2, 3, 1} || perm == std::vector<int64_t>{0, 3, 1, 2}) &&
      x_batch && y_batch && batch_on_dim0(*x_batch) && x_batch->factor == y_batch->factor &&
      batch_on_dim0(*y_batch)) {
    return false;
  }
  return x->size() > 4 || !x_batch || !y_batch || !batch_leads(*x_batch) || !batch_leads(*y_batch);
}

// --- constant_pad: Pad in constant mode (negative pads crop), any dtype, plain tensors, the batch
// on dim 0 and not padded. Params: per axis the output index where the input starts (`pad.begin`,
// a pad's begin; negative: a crop), the fill element's bits (`pad.value_bits`, little-endian, the
// element's size). Items: output rows (all dims but the last): a row outside the input is filled,
// else the input row's part is copied between the fills.

constexpr const char* kPadKind = "constant_pad";
inline constexpr IntsCodec kPadBegin{"pad.begin", -params::kMaxDim, params::kMaxDim};
inline constexpr IntCodec kPadValueBits{"pad.value_bits"};

class ConstantPadLayer final : public Layer {
 public:
  int32_t input = -1, output = -1;
  size_t element = 1;
  std::vector<int64_t> begin;  // per axis
  uint64_t value_bits = 0;

  WorkShape work(const RunState& state) const override {
    return output_rows(state, output, state.dim(output, begin.size() - 1));
  }

  void run(const RunState& state, int64_t begin_row, int64_t end_row, std::span<uint8_t>) const override {
    visit_element_size(element, [&]<class T>() { run_typed<T>(state, begin_row, end_row); });
  }

 private:
  template <class T>
  void run_typed(const RunState& state, int64_t begin_row, int64_t end_row) const {
    const size_t rank = begin.size();
    std::array<int64_t, kMaxRank> x_dims{}, y_dims{};
    for (size_t a = 0; a < rank; ++a) {
      x_dims[a] = state.dim(input, a);
      y_dims[a] = state.dim(output, a);
    }
    T fill;
    std::memcpy(&fill, &value_bits, sizeof(T));
    const T* x = state.data<const T>(input);
    T* y = state.data<T>(output);
    const int64_t y_inner = y_dims[rank - 1], x_inner = x_dims[rank - 1];
    const int64_t first = std::clamp<int64_t>(begin[rank - 1], 0, y_inner);  // output columns [first, last) copy
    const int64_t last = std::clamp<int64_t>(begin[rank - 1] + x_inner, 0, y_inner);
    for (int64_t row = begin_row; row < end_row; ++row) {
      T* target = y + row * y_inner;
      // The input row this output row reads, or -1 when one of its indices is in a pad.
      int64_t rest = row, source_row = 0, stride = 1;
      bool inside = true;
      for (size_t a = rank - 1; a-- > 0;) {
        const int64_t index = rest % y_dims[a] - begin[a];
        rest /= y_dims[a];
        if (index < 0 || index >= x_dims[a]) {
          inside = false;
          break;
        }
        source_row += index * stride;
        stride *= x_dims[a];
      }
      if (!inside || last <= first) {
        std::fill_n(target, y_inner, fill);
        continue;
      }
      std::fill_n(target, first, fill);
      std::memcpy(target + first, x + source_row * x_inner + (first - begin[rank - 1]),
                  static_cast<size_t>(last - first) * sizeof(T));
      std::fill_n(target + last, y_inner - last, fill);
    }
  }
};

Result<std::unique_ptr<Layer>> bind_constant_pad(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const CopyOperands operands, bind_copy_operands(context));
  const PlanTensor* x = operands.x;
  const PlanTensor* y = operands.y;
  const size_t element = operands.element;
  if (x->layout != Layout::kPlain || y->layout != Layout::kPlain) return context.error("tensors must be plain");
  if (x->shape.empty() || x->shape.size() > kMaxRank || y->shape.size() != x->shape.size()) {
    return context.error("input and output must have one rank of 1..6");
  }
  for (const PlanTensor* tensor : {x, y}) {
    for (int64_t dim : tensor->shape) {
      if (dim < 0 || dim > params::kMaxDim) return context.error(fmt::format("'{}' has a bad shape", tensor->name));
    }
  }
  if (x->batched != y->batched || !batch_on_dim0(*x) || !batch_on_dim0(*y) ||
      (x->batched && (x->shape[0] != y->shape[0] || x->batch_factor != y->batch_factor))) {
    return context.error("the batch must be dim 0 of both, not padded");
  }
  auto layer = std::make_unique<ConstantPadLayer>();
  QDQRT_ASSIGN_OR_RETURN(layer->begin, kPadBegin.read(context, x->shape.size()));
  if (x->batched && layer->begin[0] != 0) return context.error("the batch must be dim 0 of both, not padded");
  QDQRT_ASSIGN_OR_RETURN(const int64_t bits, kPadValueBits.read(context));
  if (element < 8 && (bits < 0 || bits >= (int64_t{1} << (8 * element)))) {
    return context.error(fmt::format("pad.value_bits {} does not fit a {}-byte element", bits, element));
  }
  layer->value_bits = static_cast<uint64_t>(bits);
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  layer->element = element;
  return std::unique_ptr<Layer>(std::move(layer));
}

// The constant Pad's begin offsets and fill bits, or nullopt (another mode, runtime pads or
// value, a padded batch, shapes that do not add up).
struct PadAnalysis {
  std::vector<int64_t> begin;
  uint64_t value_bits = 0;
};

std::optional<PadAnalysis> analyze_pad(const Node& node, const BuildContext& context) {
  if (!node.domain.empty() || !node.has_input(0) || node.outputs.size() != 1 || node.outputs[0].empty()) {
    return std::nullopt;
  }
  const auto& attributes = node.attrs<PadAttributes>();
  if (attributes.mode != PadMode::kConstant || context.constant(node.input(0)) != nullptr) return std::nullopt;
  Result<Shape> x = context.shape_of(node.input(0));
  Result<Shape> y = context.shape_of(node.outputs[0]);
  Result<DataType> dtype = context.dtype_of(node.input(0));
  if (!x.ok() || !y.ok() || !dtype.ok() || x->empty() || x->size() > kMaxRank || y->size() != x->size()) {
    return std::nullopt;
  }
  const size_t element = dtype_size(*dtype);
  if (!is_copyable_element_size(element)) return std::nullopt;
  const size_t rank = x->size();
  std::vector<int64_t> pads = attributes.pads;
  std::vector<int64_t> axes;
  for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  PadAnalysis analysis;
  if (attributes.pads_from_input) {
    const std::optional<std::vector<int64_t>> given = constant_ints(node, 1, context, std::nullopt);
    if (!given) return std::nullopt;
    pads = *given;
    if (node.has_input(3)) {
      const std::optional<std::vector<int64_t>> given_axes = constant_ints(node, 3, context, std::nullopt);
      if (!given_axes) return std::nullopt;
      axes = *given_axes;
    }
    if (node.has_input(2)) {
      const Tensor* value = context.constant(node.input(2));
      if (value == nullptr || value->numel() != 1 || value->dtype() != *dtype) return std::nullopt;
      std::memcpy(&analysis.value_bits, value->raw_data(), element);
    }
  } else {
    if (*dtype != DataType::kFloat) return std::nullopt;  // the value attribute is a float
    std::memcpy(&analysis.value_bits, &attributes.constant_value, sizeof(float));
  }
  if (pads.size() != 2 * axes.size()) return std::nullopt;
  analysis.begin.assign(rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
    if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(axis)]) return std::nullopt;
    seen[static_cast<size_t>(axis)] = true;
    const int64_t begin = pads[i], end = pads[axes.size() + i];
    if (std::abs(begin) > params::kMaxDim || std::abs(end) > params::kMaxDim) return std::nullopt;
    if ((*x)[static_cast<size_t>(axis)] + begin + end != (*y)[static_cast<size_t>(axis)]) return std::nullopt;
    analysis.begin[static_cast<size_t>(axis)] = begin;
  }
  const std::optional<BatchLayout> x_batch = context.batch_layout(node.input(0));
  const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs[0]);
  // The batch on dim 0, unpadded (several slices per image too: MViT's pooling pads the frames of
  // [batch * heads, T, C, H, W]); the layer reads every dim from the run.
  if (!x_batch || !y_batch || !batch_on_dim0(*x_batch) || !batch_on_dim0(*y_batch) ||
      x_batch->batched != y_batch->batched || (x_batch->batched && x_batch->factor != y_batch->factor)) {
    return std::nullopt;
  }
  if (x_batch->batched && ((*x)[0] != (*y)[0] || analysis.begin[0] != 0)) return std::nullopt;
  return analysis;
}

Status lower_constant_pad(const Node& node, BuildContext& context) {
  std::optional<PadAnalysis> analysis = analyze_pad(node, context);
  if (!analysis) return internal_error("{}: constant_pad accepted a node it cannot lower", node.describe());
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(0), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kPlain));
  PlanLayer layer =
      fp32::make_layer(node, kPadKind, fmt::format("x{}-constant-pad", dtype_size(context.tensor(x).dtype) * 8));
  layer.inputs = {x};
  layer.outputs = {y};
  kPadBegin.write(layer, analysis->begin);
  kPadValueBits.write(layer, static_cast<int64_t>(analysis->value_bits));
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_strided_copy(LayerRegistry& registry) {
  registry.add_kind({.kind = kKind,
                     .bind = bind_strided_copy,
                     .any_batch_layout = true,
                     .writes_strided_rows = writes_strided_rows});
  const CopyOp ops[] = {{"Transpose", transpose_geometry, false},
                        {"Gather", gather_geometry, false},
                        {"Expand", expand_geometry, false},
                        {"Slice", slice_geometry, true},
                        {"Split", split_geometry, true}};
  for (const CopyOp& op : ops) {
    const bool transpose = std::string(op.op_type) == "Transpose";
    registry.add_lowering({.domain = "",
                           .op_type = op.op_type,
                           .lower = [op](const Node& node, BuildContext& context) { return lower(node, context, op); },
                           .accepts = [op, transpose](const Node& node, const BuildContext& context) {
                             if (transpose && !transpose_left_over(node, context)) return false;
                             return accepts(node, context, op);
                           },
                           .any_batch_layout = true});
  }
  registry.add_kind({.kind = kPadKind, .bind = bind_constant_pad, .batch_slices_on_dim0 = true});
  registry.add_lowering({.domain = "",
                         .op_type = "Pad",
                         .lower = lower_constant_pad,
                         .accepts = [](const Node& node, const BuildContext& context) {
                           return analyze_pad(node, context).has_value();
                         },
                         .batch_slices_on_dim0 = true});
}

}  // namespace qdqrt::engine
