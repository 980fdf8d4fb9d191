#include "core/ops/fused_op_table.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/ops/fused_layers.h"
#include "core/ops/window.h"
#include "core/ops/shape_function_helpers.h"
#include "core/shape_inference.h"

namespace qdqrt {

namespace {

bool all_static(const Dims& dims, size_t first = 0) {
  return std::all_of(dims.begin() + static_cast<std::ptrdiff_t>(std::min(first, dims.size())), dims.end(),
                     [](const Dim& dim) { return dim.is_static(); });
}

// The spatial output dims of a window over x's dims after the first two; unknown dims when x's
// spatial dims are not all static.
std::optional<Dims> window_output_dims(const Node& node, const Dims& x, const Shape& kernel,
                                       const WindowAttributes& window) {
  Dims spatial;
  if (!all_static(x, 2)) {
    spatial.assign(x.size() - 2, Dim{});
    return spatial;
  }
  Shape input_spatial;
  for (size_t i = 2; i < x.size(); ++i) input_spatial.push_back(x[i].value);
  Result<WindowGeometry> geometry = resolve_window(node, input_spatial, kernel, window);
  if (!geometry.ok()) return std::nullopt;
  const Shape sizes = geometry->output_spatial();
  const size_t offset = 3 - static_cast<size_t>(geometry->spatial_rank);
  for (size_t i = 0; i < sizes.size(); ++i) {
    Dim dim;
    dim.value = sizes[i];
    const DimExpr& input = x[i + 2].expr;
    if (input.is_constant()) {
      dim.expr = DimExpr::constant(sizes[i]);
    } else if (input.known()) {
      // The rule of qdqrt's shape functions (core/ops/shape_function_helpers.h), kept only where it
      // gives this value at the input's.
      const size_t a = i + offset;
      const int64_t extent = geometry->dilations[a] * (geometry->kernel[a] - 1) + 1;
      auto rule = [&](const DimExpr& in) {
        return window_output_expr(in, extent, geometry->strides[a], geometry->pads_begin[a], geometry->pads_end[a],
                                  window.auto_pad, window.ceil_mode);
      };
      if (rule(DimExpr::constant(x[i + 2].value)).constant_value() == sizes[i]) dim.expr = rule(input);
    }
    spatial.push_back(std::move(dim));
  }
  return spatial;
}

}  // namespace

const FusedOpRow* find_fused_op(std::string_view op_type) {
  for (const FusedOpRow& row : fused_op_table()) {
    if (op_type == row.op_type) return &row;
  }
  return nullptr;
}

const FusedOpRow* fused_op_row(const Node& node) {
  return node.domain == layers::kDomain ? find_fused_op(node.op_type) : nullptr;
}

std::vector<QuantizedInputSlot> quantized_input_slots(const FusedOpRow& row, const Node& node) {
  std::vector<QuantizedInputSlot> slots = row.quantized_inputs;
  if (row.repeated_triples_from >= 0) {
    for (size_t i = static_cast<size_t>(row.repeated_triples_from); i + 2 < node.inputs.size(); i += 3) {
      slots.push_back({static_cast<int>(i), static_cast<int>(i + 2)});
    }
  }
  return slots;
}

std::string fused_layer_kind(const FusedOpRow& row, const Node& node, const InputShapes& inputs) {
  return row.refine_kind != nullptr ? row.refine_kind(node, inputs) : std::string(row.kind);
}

InputShapes input_shapes_in(const Graph& graph, const Node& node) {
  InputShapes shapes;
  for (const std::string& input : node.inputs) {
    OptionalDims dims;
    if (input.empty()) {
      // absent optional input
    } else if (const Tensor* constant = graph.find_initializer(input)) {
      dims = static_dims(constant->shape());
    } else if (const ValueInfo* info = graph.find_value(input)) {
      dims = info->shape;
    }
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

OptionalDims input_dims(const InputShapes& inputs, size_t slot) {
  return slot < inputs.size() ? inputs[slot] : std::nullopt;
}

std::string conv_kind(int64_t group, const OptionalDims& weight) {
  if (group == 1) return "Conv";
  if (weight && weight->size() >= 2 && (*weight)[0].is_static() && (*weight)[1].is_static()) {
    const int64_t output_channels = (*weight)[0].value;
    const int64_t input_channels = (*weight)[1].value * group;
    if (group == input_channels && group == output_channels) return "DepthwiseConv";
  }
  return "GroupConv";
}

OptionalDims broadcast_dims(const OptionalDims& a, const OptionalDims& b) {
  if (!a || !b) return std::nullopt;
  const size_t rank = std::max(a->size(), b->size());
  const Dim one = static_dim(1);
  Dims result(rank);
  for (size_t axis = 0; axis < rank; ++axis) {
    const Dim& da = axis + a->size() < rank ? one : (*a)[axis + a->size() - rank];
    const Dim& db = axis + b->size() < rank ? one : (*b)[axis + b->size() - rank];
    if (da.is_static() && db.is_static() && da.value != db.value && da.value != 1 && db.value != 1) {
      return std::nullopt;
    }
    // A dim that is 1 everywhere gives way; so does a 1 beside a dim that is not 1 here.
    const bool a_is_one = da.expr.constant_value() == 1 || (da.is_static() && da.value == 1 && !da.expr.known());
    const bool b_is_one = db.expr.constant_value() == 1 || (db.is_static() && db.value == 1 && !db.expr.known());
    if (a_is_one) {
      result[axis] = db;
    } else if (b_is_one) {
      result[axis] = da;
    } else if (same_dim(da, db)) {
      result[axis] = da;
    } else {
      // Both dynamic (at run time one of them is 1 or they agree): the larger. A dynamic dim
      // against a static n > 1 must be n: the model runs at that one size, which the dim's
      // expression cannot say.
      const bool both_dynamic = da.expr.known() && db.expr.known() && !da.expr.is_constant() && !db.expr.is_constant();
      if (both_dynamic) {
        result[axis] = max(da, db);
      } else {
        Dim dim;
        if (da.is_static() && db.is_static()) dim.value = std::max(da.value, db.value);
        else if (da.is_static() && da.value != 1) dim.value = da.value;
        else if (db.is_static() && db.value != 1) dim.value = db.value;
        result[axis] = dim;
      }
    }
  }
  return result;
}

OptionalDims conv_output_dims(const Node& node, const ConvAttributes& attributes, const OptionalDims& x,
                              const OptionalDims& weight) {
  if (!x || !weight || x->size() < 3 || weight->size() != x->size() || !all_static(*weight, 2)) return std::nullopt;
  Shape kernel;
  for (size_t i = 2; i < weight->size(); ++i) kernel.push_back((*weight)[i].value);
  const WindowAttributes window{.auto_pad = attributes.auto_pad,
                                .strides = &attributes.strides,
                                .dilations = &attributes.dilations,
                                .pads = &attributes.pads};
  std::optional<Dims> spatial = window_output_dims(node, *x, kernel, window);
  if (!spatial) return std::nullopt;
  Dims y = {(*x)[0], (*weight)[0]};
  y.insert(y.end(), spatial->begin(), spatial->end());
  return y;
}

OptionalDims pool_output_dims(const Node& node, const PoolAttributes& attributes, const OptionalDims& x) {
  if (!x || x->size() < 3) return std::nullopt;
  const WindowAttributes window{.auto_pad = attributes.auto_pad,
                                .strides = &attributes.strides,
                                .dilations = &attributes.dilations,
                                .pads = &attributes.pads,
                                .ceil_mode = attributes.ceil_mode};
  std::optional<Dims> spatial = window_output_dims(node, *x, attributes.kernel_shape, window);
  if (!spatial) return std::nullopt;
  Dims y = {(*x)[0], (*x)[1]};
  y.insert(y.end(), spatial->begin(), spatial->end());
  return y;
}

OptionalDims global_pool_output_dims(const OptionalDims& x) {
  if (!x || x->size() < 3) return std::nullopt;
  Dims y = *x;
  for (size_t i = 2; i < y.size(); ++i) y[i] = static_dim(1);
  return y;
}

OptionalDims matmul_output_dims(const OptionalDims& a, const OptionalDims& b) {
  if (!a || !b || a->size() < 2 || b->size() < 2) return std::nullopt;
  const Dim& k_a = (*a)[a->size() - 1];
  const Dim& k_b = (*b)[b->size() - 2];
  if (k_a.is_static() && k_b.is_static() && k_a.value != k_b.value) return std::nullopt;
  OptionalDims y = broadcast_dims(Dims(a->begin(), a->end() - 2), Dims(b->begin(), b->end() - 2));
  if (!y) return std::nullopt;
  y->push_back((*a)[a->size() - 2]);
  y->push_back((*b)[b->size() - 1]);
  return y;
}

OptionalDims concat_output_dims(const std::vector<OptionalDims>& parts, int64_t axis) {
  OptionalDims y;
  for (const OptionalDims& x : parts) {
    if (!x) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(x->size());
    const int64_t resolved = axis < 0 ? axis + rank : axis;
    if (resolved < 0 || resolved >= rank) return std::nullopt;
    const size_t along = static_cast<size_t>(resolved);
    if (!y) {
      y = x;
      continue;
    }
    if (y->size() != x->size()) return std::nullopt;
    for (size_t d = 0; d < x->size(); ++d) {
      if (d == along) continue;
      const Dim& dy = (*y)[d];
      const Dim& dx = (*x)[d];
      if (dy.is_static() && dx.is_static() && dy.value != dx.value) return std::nullopt;
      if (!dy.is_static() && !dy.expr.known()) (*y)[d] = dx;  // a dim one part knows is the dim
    }
    (*y)[along] = (*y)[along] + (*x)[along];
  }
  return y;
}

OptionalDims row_sums_output_dims(const Node&, const Dims& y, size_t output) {
  if (output != 1 || y.size() != 4) return std::nullopt;
  return Dims{y[0], y[2], y[1]};
}

std::optional<int64_t> conv_macs_per_output(const OptionalDims& weight) {
  if (!weight || weight->empty()) return std::nullopt;
  int64_t per_output = 1;
  for (size_t i = 1; i < weight->size(); ++i) {
    if (!(*weight)[i].is_static()) return std::nullopt;
    std::optional<int64_t> next = checked_mul(per_output, (*weight)[i].value);
    if (!next) return std::nullopt;
    per_output = *next;
  }
  return per_output;
}

std::optional<int64_t> matmul_macs_per_output(const OptionalDims& a) {
  if (!a || a->empty() || !a->back().is_static()) return std::nullopt;
  return a->back().value;
}

std::optional<int64_t> static_numel(const OptionalDims& dims) {
  if (!dims) return std::nullopt;
  int64_t count = 1;
  for (const Dim& dim : *dims) {
    if (!dim.is_static()) return std::nullopt;
    std::optional<int64_t> next = checked_mul(count, dim.value);
    if (!next) return std::nullopt;
    count = *next;
  }
  return count;
}

namespace {

std::optional<int64_t> times(std::optional<int64_t> a, std::optional<int64_t> b) {
  return a && b ? checked_mul(*a, *b) : std::nullopt;
}

}  // namespace

std::optional<int64_t> conv_macs(const OptionalDims& weight, const Dims& y) {
  return times(static_numel(y), conv_macs_per_output(weight));
}

std::optional<int64_t> matmul_macs(const OptionalDims& a, const Dims& y) {
  return times(static_numel(y), matmul_macs_per_output(a));
}

}  // namespace qdqrt
