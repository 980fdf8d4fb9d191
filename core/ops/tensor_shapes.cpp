#include "core/ops/tensor_shapes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "core/op_registry.h"
#include "core/ops/fused_op_table.h"
#include "core/ops/shape_function_helpers.h"
#include "core/ops/tensor.h"

namespace qdqrt {

namespace {

// A start or end this far from 0 means "to the end": no dim reaches it (ONNX writes INT64_MAX or
// INT64_MIN), and adding a dim to it cannot overflow.
constexpr int64_t kUnbounded = int64_t{1} << 62;

const std::string& input_name(const ShapeInferenceContext& context, size_t i) { return context.node().input(i); }

// A dim's value: its constant expression, else its value at the shapes being built (elements
// may be negative: a -1 in a Reshape target is the constant expression -1).
std::optional<int64_t> known_value(const Dim& dim) {
  if (std::optional<int64_t> constant = dim.expr.constant_value()) return constant;
  if (dim.value >= 0) return dim.value;
  return std::nullopt;
}

// A dim for messages: its value, or its expression when it follows a dynamic dim ("N").
std::string dim_text(const Dim& dim) {
  if (std::optional<int64_t> value = dim.expr.constant_value()) return std::to_string(*value);
  if (dim.expr.known()) return dim.expr.to_string();
  if (dim.is_static()) return std::to_string(dim.value);
  return "?";
}

std::string dims_text(const Dims& dims) {
  std::vector<std::string> parts;
  for (const Dim& dim : dims) parts.push_back(dim_text(dim));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// A dim from a value (negative: not known) and an expression.
Dim make_dim(std::optional<int64_t> value, DimExpr expr) {
  Dim dim;
  if (value && *value >= 0) dim.value = *value;
  dim.expr = std::move(expr);
  return dim;
}

// An element given as a dim (a constant, or an expression of the dynamic dims).
Dim element_dim(const Dim& element) {
  if (std::optional<int64_t> constant = element.expr.constant_value()) return static_dim(*constant);
  return make_dim(element.value >= 0 ? std::optional<int64_t>(element.value) : std::nullopt, element.expr);
}

// Axes in [-rank, rank - 1], made non-negative; repeated axes are an error.
Result<std::vector<int64_t>> normalize_axes(const ShapeInferenceContext& context, const std::vector<int64_t>& axes,
                                            int64_t rank, const char* what) {
  std::vector<int64_t> normalized;
  std::set<int64_t> seen;
  for (int64_t axis : axes) {
    QDQRT_ASSIGN_OR_RETURN(size_t resolved, resolve_axis(context, axis, static_cast<size_t>(rank), what));
    if (!seen.insert(static_cast<int64_t>(resolved)).second)
      return context.error("{} {} is given twice in [{}]", what, axis, fmt::join(axes, ", "));
    normalized.push_back(static_cast<int64_t>(resolved));
  }
  return normalized;
}

// The integer values of input i (constant, or followed to constants); an error naming it when
// they are not known.
Result<std::vector<int64_t>> required_ints(const ShapeInferenceContext& context, size_t i, const char* what) {
  if (!context.has_input(i)) return context.error("input {} ({}) is missing", i, what);
  if (const OptionalDims& dims = context.input_dims(i); dims && dims->size() > 1) {
    return context.error("{} '{}' must be 1-D, got rank {}", what, input_name(context, i), dims->size());
  }
  std::optional<std::vector<int64_t>> values = context.input_ints(i);
  if (!values) return context.error("{} '{}' is not constant", what, input_name(context, i));
  return *values;
}

// The elements of input i (constants or expressions of the dynamic dims); an error naming it when
// they are not followed.
Result<const Dims*> required_elements(const ShapeInferenceContext& context, size_t i, const char* what) {
  if (!context.has_input(i)) return context.error("input {} ({}) is missing", i, what);
  if (const OptionalDims& dims = context.input_dims(i); dims && dims->size() > 1) {
    return context.error("{} '{}' must be 1-D, got rank {}", what, input_name(context, i), dims->size());
  }
  const OptionalDims& elements = context.input_elements(i);
  if (!elements) {
    return context.error("{} '{}' is neither constant nor computed from known shapes", what, input_name(context, i));
  }
  return &*elements;
}

void set_elements(ShapeInferenceContext& context, size_t output, Dims elements) {
  if (static_cast<int64_t>(elements.size()) <= kMaxFollowedElements) {
    context.set_output_elements(output, std::move(elements));
  }
}

// Ops that keep the elements in order (Reshape, Squeeze, Identity, ...): input 0's pass on.
void pass_elements(ShapeInferenceContext& context) {
  if (const OptionalDims& elements = context.input_elements(0)) set_elements(context, 0, *elements);
}

// The sizes of `dims` when every one is known and they hold `count` elements: the layout of a
// followed multi-dimensional integer tensor (the [4, 2] pads torch builds for a computed F.pad).
std::optional<std::vector<int64_t>> element_layout(const Dims& dims, size_t count) {
  std::vector<int64_t> sizes;
  int64_t product = 1;
  for (const Dim& dim : dims) {
    std::optional<int64_t> value = known_value(dim);
    if (!value || *value < 0 || *value > kMaxFollowedElements) return std::nullopt;
    sizes.push_back(*value);
    product *= *value;
  }
  if (product != static_cast<int64_t>(count)) return std::nullopt;
  return sizes;
}

// Row-major coordinates of `index` in a tensor of `sizes`.
std::vector<int64_t> coordinates_of(int64_t index, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> coordinates(sizes.size(), 0);
  for (size_t axis = sizes.size(); axis-- > 0;) {
    coordinates[axis] = index % sizes[axis];
    index /= sizes[axis];
  }
  return coordinates;
}

// Row-major index of `coordinates` in a tensor of `sizes`.
int64_t index_of(const std::vector<int64_t>& coordinates, const std::vector<int64_t>& sizes) {
  int64_t index = 0;
  for (size_t axis = 0; axis < sizes.size(); ++axis) index = index * sizes[axis] + coordinates[axis];
  return index;
}

// Types whose Constant, ConstantOfShape and Cast outputs carry elements: the integers (the 4-bit
// ones too, unlike is_integer_element_type) and bool.
bool holds_integers(DataType dtype) { return dtype_is_integer(dtype) || dtype == DataType::kBool; }

}  // namespace

// ---- Flatten / Reshape / Transpose / Squeeze / Unsqueeze ----

Status infer_flatten_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<FlattenAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = attributes->axis;
  if (axis < -rank || axis > rank) {
    return context.error("axis {} is out of range for rank {} (allowed [{}, {}])", axis, rank, -rank, rank);
  }
  if (axis < 0) axis += rank;
  const size_t split = static_cast<size_t>(axis);
  context.set_output_dims(0, {dims_product(x, 0, split), dims_product(x, split)});
  pass_elements(context);
  return Status::ok();
}

Status infer_reshape_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<ReshapeAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims* target, required_elements(context, 1, "the target shape"));
  const OptionalDims& x = context.input_dims(0);
  Dims y;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < target->size(); ++i) {
    const Dim& element = (*target)[i];
    std::optional<int64_t> value = element.expr.constant_value();
    if (!value) {
      // An expression of the dynamic dims (a dim read by Shape), or not known.
      y.push_back(element_dim(element));
      continue;
    }
    if (*value == -1) {
      if (inferred) return context.error("the target shape {} has more than one -1", dims_text(*target));
      inferred = i;
      y.push_back(Dim{});
    } else if (*value == 0 && !attributes->allowzero) {
      if (!x) {
        y.push_back(Dim{});
        continue;
      }
      if (i >= x->size()) {
        return context.error("the target shape {} copies dim {} (a 0) but the input {} has rank {}", dims_text(*target),
                             i, dims_text(*x), x->size());
      }
      y.push_back((*x)[i]);
    } else if (*value < 0) {
      return context.error("the target shape {} has the invalid dim {}", dims_text(*target), *value);
    } else {
      y.push_back(static_dim(*value));
    }
  }
  Dim others = static_dim(1);
  for (size_t i = 0; i < y.size(); ++i) {
    if (i != inferred) others = others * y[i];
  }
  if (inferred && known_value(others) == 0) {
    return context.error("the target shape {} has a -1 beside dims whose product is 0", dims_text(*target));
  }
  if (x) {
    const std::optional<int64_t> input_count = known_value(dims_product(*x)), output_count = known_value(others);
    if (inferred) {
      if (input_count && output_count && *input_count % *output_count != 0) {
        return context.error("the input {} ({} elements) cannot be reshaped to {}: {} is not a multiple of {}",
                             dims_text(*x), *input_count, dims_text(*target), *input_count, *output_count);
      }
      // The -1 is the input's elements over the other dims' product; a dynamic dim on both sides
      // (a 0 copying it, or the dim read by Shape) cancels, so that [N, -1] of [N, 6, 4] is 24.
      std::vector<bool> cancelled(x->size(), false);
      Dim numerator = static_dim(1), denominator = static_dim(1);
      for (size_t i = 0; i < y.size(); ++i) {
        if (i == inferred) continue;
        bool cancels = false;
        if (y[i].expr.known() && !y[i].expr.is_constant()) {
          for (size_t d = 0; d < x->size() && !cancels; ++d) {
            if (!cancelled[d] && (*x)[d].expr.same_as(y[i].expr)) cancelled[d] = cancels = true;
          }
        }
        if (!cancels) denominator = denominator * y[i];
      }
      for (size_t d = 0; d < x->size(); ++d) {
        if (!cancelled[d]) numerator = numerator * (*x)[d];
      }
      Dim dim = floor_div(numerator, denominator);
      if (input_count && output_count) dim.value = *input_count / *output_count;
      y[*inferred] = std::move(dim);
    } else if (input_count && output_count && *input_count != *output_count) {
      return context.error("the input {} has {} elements, the target shape {} has {}", dims_text(*x), *input_count,
                           dims_text(y), *output_count);
    }
  }
  context.set_output_dims(0, std::move(y));
  pass_elements(context);
  return Status::ok();
}

Status infer_transpose_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<TransposeAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> perm = attributes->perm;
  if (perm.empty()) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return context.error("perm [{}] has {} entries for the input's rank {}", fmt::join(perm, ", "), perm.size(), rank);
  }
  std::vector<bool> seen(perm.size(), false);
  Dims y;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      return context.error("perm [{}] is not a permutation of 0..{}", fmt::join(perm, ", "), rank - 1);
    }
    seen[static_cast<size_t>(p)] = true;
    y.push_back(x[static_cast<size_t>(p)]);
  }
  context.set_output_dims(0, std::move(y));
  if (rank <= 1) {
    pass_elements(context);
  } else if (const OptionalDims& elements = context.input_elements(0)) {
    // A transposed shape table (torch's computed F.pad pads): its elements, permuted.
    if (std::optional<std::vector<int64_t>> sizes = element_layout(x, elements->size())) {
      std::vector<int64_t> output_sizes;
      for (int64_t p : perm) output_sizes.push_back((*sizes)[static_cast<size_t>(p)]);
      Dims permuted;
      for (int64_t k = 0; k < static_cast<int64_t>(elements->size()); ++k) {
        const std::vector<int64_t> output_coordinates = coordinates_of(k, output_sizes);
        std::vector<int64_t> input_coordinates(perm.size());
        for (size_t i = 0; i < perm.size(); ++i) input_coordinates[static_cast<size_t>(perm[i])] = output_coordinates[i];
        permuted.push_back((*elements)[static_cast<size_t>(index_of(input_coordinates, *sizes))]);
      }
      set_elements(context, 0, std::move(permuted));
    }
  }
  return Status::ok();
}

Status infer_squeeze_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<SqueezeAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = attributes->axes;
  if (attributes->axes_from_input && context.has_input(1)) {
    QDQRT_ASSIGN_OR_RETURN(axes, required_ints(context, 1, "axes"));
  }
  std::vector<bool> squeezed(x.size(), false);
  if (!axes.empty()) {
    QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> resolved, normalize_axes(context, axes, rank, "axis"));
    for (int64_t axis : resolved) {
      const Dim& dim = x[static_cast<size_t>(axis)];
      std::optional<int64_t> value = known_value(dim);
      if (value && *value != 1) {
        return context.error("cannot squeeze axis {} of size {} (input {})", axis, *value, dims_text(x));
      }
      squeezed[static_cast<size_t>(axis)] = true;
    }
  } else {
    // Without axes every dim of size 1 goes: each dim's size must be known, and not follow a
    // dynamic dim (the output's rank would change with it).
    for (size_t d = 0; d < x.size(); ++d) {
      const Dim& dim = x[d];
      std::optional<int64_t> value = dim.expr.known() ? dim.expr.constant_value() : known_value(dim);
      if (!value) {
        return context.error("squeezes without axes, but whether dim {} ({}) of the input {} is 1 is not known", d,
                             dim_text(dim), dims_text(x));
      }
      squeezed[d] = *value == 1;
    }
  }
  Dims y;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!squeezed[d]) y.push_back(x[d]);
  }
  context.set_output_dims(0, std::move(y));
  pass_elements(context);
  return Status::ok();
}

Status infer_unsqueeze_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<UnsqueezeAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  std::vector<int64_t> axes = attributes->axes;
  if (attributes->axes_from_input) {
    QDQRT_ASSIGN_OR_RETURN(axes, required_ints(context, 1, "axes"));
  }
  if (axes.empty()) return context.error("axes must not be empty");
  const int64_t rank = static_cast<int64_t>(x.size() + axes.size());
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> resolved, normalize_axes(context, axes, rank, "axis"));
  Dims y;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(resolved.begin(), resolved.end(), d) != resolved.end()) {
      y.push_back(static_dim(1));
    } else {
      y.push_back(x[next++]);
    }
  }
  context.set_output_dims(0, std::move(y));
  pass_elements(context);
  return Status::ok();
}

// ---- Concat / Split ----

Status infer_concat_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<ConcatAttributes>(context));
  if (context.input_count() == 0) return context.error("needs at least one input");
  QDQRT_ASSIGN_OR_RETURN(const Dims first, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(first.size());
  if (rank == 0) return context.error("cannot concatenate scalars (input '{}' has rank 0)", input_name(context, 0));
  QDQRT_ASSIGN_OR_RETURN(const size_t along, resolve_axis(context, attributes->axis, first.size(), "axis"));
  const int64_t axis = static_cast<int64_t>(along);
  Dims y = first;
  bool follow_elements = axis == 0;
  Dims elements;
  for (size_t i = 0; i < context.input_count(); ++i) {
    QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, i));
    if (x.size() != first.size()) {
      return context.error("input {} '{}' has rank {}, input 0 has rank {}", i, input_name(context, i), x.size(), rank);
    }
    if (i > 0) {
      for (size_t d = 0; d < x.size(); ++d) {
        if (d == along) continue;
        const Dim& dx = x[d];
        Dim& dy = y[d];
        std::optional<int64_t> vx = known_value(dx), vy = known_value(dy);
        if (vx && vy && *vx != *vy) {
          return context.error("input {} '{}' {} does not match input 0 {} outside axis {}", i, input_name(context, i),
                               dims_text(x), dims_text(first), axis);
        }
        if (!dy.expr.known() && dx.expr.known()) dy.expr = dx.expr;
        if (!dy.is_static() && vx) dy.value = *vx;
      }
      y[along] = y[along] + x[along];
    }
    const OptionalDims& part = context.input_elements(i);
    if (follow_elements && part) {
      elements.insert(elements.end(), part->begin(), part->end());
    } else {
      follow_elements = false;
    }
  }
  context.set_output_dims(0, std::move(y));
  if (follow_elements) set_elements(context, 0, std::move(elements));
  return Status::ok();
}

Status infer_split_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<SplitAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) return context.error("cannot split a scalar");
  QDQRT_ASSIGN_OR_RETURN(const size_t along, resolve_axis(context, attributes->axis, x.size(), "axis"));
  const int64_t axis = static_cast<int64_t>(along);
  const Dim& dim = x[along];
  const std::optional<int64_t> dim_value = known_value(dim);
  if (dim_value > kUnbounded) return context.error("axis {} of the input {} is too large", axis, dims_text(x));
  const int64_t count = static_cast<int64_t>(context.node().outputs.size());
  if (count == 0) return context.error("has no outputs");
  std::vector<int64_t> sizes = attributes->split;
  if (attributes->split_from_input && context.has_input(1)) {
    if (attributes->num_outputs > 0) return context.error("the split input and num_outputs are both given");
    QDQRT_ASSIGN_OR_RETURN(sizes, required_ints(context, 1, "split"));
  }
  Dims parts;
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != count) {
      return context.error("split [{}] has {} sizes for {} outputs", fmt::join(sizes, ", "), sizes.size(), count);
    }
    int64_t total = 0;
    for (int64_t size : sizes) {
      std::optional<int64_t> sum = checked_add(total, size);
      if (size < 0 || !sum) return context.error("split [{}] has a negative or too large size", fmt::join(sizes, ", "));
      total = *sum;
      parts.push_back(static_dim(size));
    }
    if (dim_value && total != *dim_value) {
      return context.error("split [{}] sums to {}, but axis {} of the input {} has size {}", fmt::join(sizes, ", "),
                           total, axis, dims_text(x), *dim_value);
    }
  } else if (attributes->num_outputs > 0) {
    if (attributes->num_outputs != count) {
      return context.error("num_outputs is {} but the node has {} outputs", attributes->num_outputs, count);
    }
    // ceil(dim / n) per part, the last ones smaller (clamped to [0, chunk]).
    const Dim chunk = ceil_div(dim, static_dim(count));
    for (int64_t i = 0; i < count; ++i) {
      if (i == 0) {
        parts.push_back(chunk);
        continue;
      }
      // (In expressions: Dim arithmetic has no expression for a negative intermediate value.)
      const DimExpr rest = dim.expr - chunk.expr * DimExpr::constant(i);
      std::optional<int64_t> value;
      if (dim_value) {
        const int64_t chunk_value = (*dim_value + count - 1) / count;
        value = std::clamp<int64_t>(*dim_value - i * chunk_value, 0, chunk_value);
      }
      parts.push_back(make_dim(value, min(max(rest, DimExpr::constant(0)), chunk.expr)));
    }
  } else {
    if (dim_value && *dim_value % count != 0) {
      return context.error("axis {} of size {} (input {}) cannot be split evenly into {} outputs", axis, *dim_value,
                           dims_text(x), count);
    }
    parts.assign(static_cast<size_t>(count), floor_div(dim, static_dim(count)));
  }
  for (int64_t i = 0; i < count; ++i) {
    Dims y = x;
    y[along] = parts[static_cast<size_t>(i)];
    context.set_output_dims(static_cast<size_t>(i), std::move(y));
  }
  // A 1-D shape tensor split into parts: each part's elements.
  const OptionalDims& elements = context.input_elements(0);
  if (elements && rank == 1 && static_cast<int64_t>(elements->size()) == dim_value.value_or(-1)) {
    size_t offset = 0;
    for (int64_t i = 0; i < count; ++i) {
      std::optional<int64_t> size = known_value(parts[static_cast<size_t>(i)]);
      if (!size || offset + static_cast<size_t>(*size) > elements->size()) break;
      set_elements(context, static_cast<size_t>(i),
                   Dims(elements->begin() + static_cast<std::ptrdiff_t>(offset),
                        elements->begin() + static_cast<std::ptrdiff_t>(offset + static_cast<size_t>(*size))));
      offset += static_cast<size_t>(*size);
    }
  }
  return Status::ok();
}

// ---- Slice ----

namespace {

// One sliced axis: the first index, the step and the count, for a dim whose size is known.
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};

// ONNX's rule: negative starts/ends count from the end, then clamp to [0, dim] going forward and
// to [0, dim - 1] (start) / [-1, dim - 1] (end) going backward.
SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  step = std::clamp<int64_t>(step, -(dim + 1), dim + 1);  // keeps the arithmetic in range
  start = std::clamp<int64_t>(start, -kUnbounded, kUnbounded);
  end = std::clamp<int64_t>(end, -kUnbounded, kUnbounded);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
  SliceRange range{.start = start, .step = step, .length = 0};
  if (dim == 0) return range;
  if (step > 0 && end > start) range.length = (end - start + step - 1) / step;
  if (step < 0 && start > end) range.length = (start - end - step - 1) / -step;
  return range;
}

// The adjusted index c (ONNX's rule above) as an expression of the dim n, clamped to
// [low, n + high_offset].
DimExpr clamped_index(const DimExpr& n, int64_t c, int64_t low, int64_t high_offset) {
  const DimExpr high = n + DimExpr::constant(high_offset);
  DimExpr adjusted;
  if (c >= kUnbounded) return high;
  if (c <= -kUnbounded) {
    adjusted = DimExpr::constant(low);
  } else {
    adjusted = c < 0 ? n + DimExpr::constant(c) : DimExpr::constant(c);
  }
  return min(max(adjusted, DimExpr::constant(low)), high);
}

// The length of a slice of an axis of size n as an expression of n: exact for every n >= 0.
DimExpr slice_length_expr(const DimExpr& n, int64_t start, int64_t end, int64_t step) {
  const DimExpr zero = DimExpr::constant(0);
  if (step > 0) {
    const DimExpr s = DimExpr::constant(step);
    if (end >= kUnbounded) {
      // To the end: n - clamp(start) is n - start for start >= 0 (at least 0), -start for start < 0
      // (at most n).
      DimExpr count;
      if (start <= -kUnbounded || start == 0)
        count = n;
      else if (start >= kUnbounded)
        count = zero;
      else if (start > 0)
        count = max(n - DimExpr::constant(start), zero);
      else
        count = min(DimExpr::constant(-start), n);
      return ceil_div(count, s);
    }
    const DimExpr first = start == 0 || start <= -kUnbounded ? zero : clamped_index(n, start, 0, 0);
    const DimExpr last = clamped_index(n, end, 0, 0);
    if (first.is_constant() && first.constant_value() == 0) return ceil_div(last, s);
    return max(ceil_div(last - first, s), zero);
  }
  const DimExpr first = clamped_index(n, start, 0, -1);
  const DimExpr last = clamped_index(n, end, -1, -1);
  return max(ceil_div(first - last, DimExpr::constant(-step)), zero);
}

}  // namespace

Status infer_slice_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> starts, required_ints(context, 1, "starts"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> ends, required_ints(context, 2, "ends"));
  std::vector<int64_t> axes(starts.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (context.has_input(3)) {
    QDQRT_ASSIGN_OR_RETURN(axes, required_ints(context, 3, "axes"));
  }
  std::vector<int64_t> steps(starts.size(), 1);
  if (context.has_input(4)) {
    QDQRT_ASSIGN_OR_RETURN(steps, required_ints(context, 4, "steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return context.error("starts, ends, axes and steps have different lengths ({}, {}, {}, {})", starts.size(),
                         ends.size(), axes.size(), steps.size());
  }
  QDQRT_ASSIGN_OR_RETURN(axes, normalize_axes(context, axes, rank, "axis"));
  Dims y = x;
  // Per axis, the range picked where the axis size is known (an axis not sliced: all of it).
  std::vector<std::optional<SliceRange>> ranges(x.size());
  for (size_t axis = 0; axis < x.size(); ++axis) {
    if (std::optional<int64_t> value = known_value(x[axis])) {
      ranges[axis] = SliceRange{.start = 0, .step = 1, .length = *value};
    }
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (steps[i] == 0) return context.error("the step for axis {} is 0", axes[i]);
    const Dim& dim = x[static_cast<size_t>(axes[i])];
    std::optional<int64_t> length;
    std::optional<int64_t> value = known_value(dim);
    if (value > kUnbounded) return context.error("axis {} of the input {} is too large", axes[i], dims_text(x));
    if (value) {
      SliceRange range = slice_range(*value, starts[i], ends[i], steps[i]);
      length = range.length;
      ranges[static_cast<size_t>(axes[i])] = range;
    }
    DimExpr expr;
    if (dim.expr.constant_value()) {
      expr = DimExpr::constant(*length);
    } else if (dim.expr.known()) {
      expr = slice_length_expr(dim.expr, starts[i], ends[i], steps[i]);
    }
    y[static_cast<size_t>(axes[i])] = make_dim(length, std::move(expr));
  }
  context.set_output_dims(0, std::move(y));
  // A slice of a shape tensor (1-D, or the [4, 2] pads table of torch's computed F.pad, read
  // backwards): the elements it picks.
  const OptionalDims& elements = context.input_elements(0);
  std::optional<std::vector<int64_t>> sizes = elements ? element_layout(x, elements->size()) : std::nullopt;
  if (sizes) {
    std::vector<int64_t> output_sizes;
    int64_t count = 1;
    for (const std::optional<SliceRange>& range : ranges) {
      output_sizes.push_back(range->length);
      count *= range->length;
    }
    Dims picked;
    for (int64_t k = 0; k < count; ++k) {
      std::vector<int64_t> coordinates = coordinates_of(k, output_sizes);
      for (size_t axis = 0; axis < coordinates.size(); ++axis)
        coordinates[axis] = ranges[axis]->start + coordinates[axis] * ranges[axis]->step;
      picked.push_back((*elements)[static_cast<size_t>(index_of(coordinates, *sizes))]);
    }
    set_elements(context, 0, std::move(picked));
  }
  return Status::ok();
}

// ---- Gather / GatherElements ----

Status infer_gather_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<GatherAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims data, required_input_dims(context, 0, "data"));
  QDQRT_ASSIGN_OR_RETURN(const Dims indices, required_input_dims(context, 1, "indices"));
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0) return context.error("data '{}' must have rank >= 1", input_name(context, 0));
  QDQRT_ASSIGN_OR_RETURN(const size_t along, resolve_axis(context, attributes->axis, data.size(), "axis"));
  const int64_t axis = static_cast<int64_t>(along);
  std::optional<std::vector<int64_t>> index_values = context.input_ints(1);
  const std::optional<int64_t> extent = known_value(data[along]);
  if (index_values && extent) {
    for (int64_t& index : *index_values) {
      if (index < -*extent || index >= *extent) {
        return context.error("index {} of '{}' is out of range for axis {} of size {}", index, input_name(context, 1),
                             axis, *extent);
      }
      if (index < 0) index += *extent;
    }
  }
  Dims y(data.begin(), data.begin() + axis);
  y.insert(y.end(), indices.begin(), indices.end());
  y.insert(y.end(), data.begin() + axis + 1, data.end());
  context.set_output_dims(0, std::move(y));
  // Elements of a 1-D shape tensor picked by constant indices.
  const OptionalDims& elements = context.input_elements(0);
  if (elements && rank == 1 && index_values && extent && static_cast<int64_t>(elements->size()) == *extent) {
    Dims picked;
    for (int64_t index : *index_values) picked.push_back((*elements)[static_cast<size_t>(index)]);
    set_elements(context, 0, std::move(picked));
  }
  return Status::ok();
}

Status infer_gather_elements_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<GatherElementsAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims indices, required_input_dims(context, 1, "indices"));
  if (const OptionalDims& data = context.input_dims(0)) {
    const int64_t rank = static_cast<int64_t>(data->size());
    if (rank == 0) return context.error("data '{}' must have rank >= 1", input_name(context, 0));
    QDQRT_RETURN_IF_ERROR(resolve_axis(context, attributes->axis, data->size(), "axis").status());
    if (indices.size() != data->size()) {
      return context.error("indices {} and data {} have different ranks", dims_text(indices), dims_text(*data));
    }
  }
  context.set_output_dims(0, indices);
  return Status::ok();
}

// ---- Shape / Size ----

Status infer_shape_op_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<ShapeAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  auto clamp = [rank](int64_t value) { return std::clamp<int64_t>(value < 0 ? value + rank : value, 0, rank); };
  const int64_t start = clamp(attributes->start);
  const int64_t end = clamp(attributes->end.value_or(rank));
  Dims elements;
  for (int64_t d = start; d < end; ++d) elements.push_back(x[static_cast<size_t>(d)]);
  context.set_output_dims(0, {static_dim(static_cast<int64_t>(elements.size()))});
  set_elements(context, 0, std::move(elements));
  return Status::ok();
}

Status infer_size_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  context.set_output_dims(0, {});
  set_elements(context, 0, {dims_product(x)});
  return Status::ok();
}

// ---- Cast / CastLike ----

namespace {

// A constant integer converted to `to` (C++ conversion: wraps like the reference's cast); nullopt
// when `to` is not an integer type.
std::optional<int64_t> cast_integer(int64_t value, DataType to) {
  switch (to) {
    case DataType::kInt64: return value;
    case DataType::kInt32: return static_cast<int32_t>(value);
    case DataType::kInt16: return static_cast<int16_t>(value);
    case DataType::kInt8: return static_cast<int8_t>(value);
    case DataType::kUint32: return static_cast<uint32_t>(value);
    case DataType::kUint16: return static_cast<uint16_t>(value);
    case DataType::kUint8: return static_cast<uint8_t>(value);
    case DataType::kUint64: return value >= 0 ? std::optional<int64_t>(value) : std::nullopt;
    case DataType::kBool: return value != 0 ? 1 : 0;
    default: return std::nullopt;
  }
}

// Integer elements (only integer tensors have them) cast to an integer type: constants convert; a dim (an expression)
// keeps its value in the 32- and 64-bit types, and is not known in narrower ones.
void cast_elements(ShapeInferenceContext& context, DataType to) {
  const OptionalDims& elements = context.input_elements(0);
  if (!elements || !holds_integers(to)) return;
  const bool keeps_dims =
      to == DataType::kInt64 || to == DataType::kInt32 || to == DataType::kUint64 || to == DataType::kUint32;
  Dims cast;
  for (const Dim& element : *elements) {
    if (std::optional<int64_t> value = element.expr.constant_value()) {
      std::optional<int64_t> converted = cast_integer(*value, to);
      cast.push_back(converted ? static_dim(*converted) : Dim{});
    } else {
      cast.push_back(keeps_dims ? element : Dim{});
    }
  }
  set_elements(context, 0, std::move(cast));
}

}  // namespace

Status infer_cast_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<CastAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  context.set_output_dims(0, x);
  cast_elements(context, attributes->to);
  return Status::ok();
}

Status infer_cast_like_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  context.set_output_dims(0, x);
  cast_elements(context, context.input_dtype(1));
  return Status::ok();
}

// ---- Constant / ConstantOfShape / Identity / Dropout ----

Status infer_constant_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<ConstantAttributes>(context));
  const Tensor& value = attributes->value;
  context.set_output_dims(0, static_dims(value.shape()));
  if (holds_integers(value.dtype()) && value.numel() <= kMaxFollowedElements) {
    Dims elements;
    for (int64_t i = 0; i < value.numel(); ++i) elements.push_back(static_dim(value.value_as_int64(i)));
    set_elements(context, 0, std::move(elements));
  }
  return Status::ok();
}

Status infer_constant_of_shape_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<ConstantOfShapeAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims* shape, required_elements(context, 0, "the shape"));
  Dims y;
  for (const Dim& element : *shape) {
    if (std::optional<int64_t> value = element.expr.constant_value(); value && *value < 0) {
      return context.error("the shape {} has the negative dim {}", dims_text(*shape), *value);
    }
    y.push_back(element_dim(element));
  }
  // A small integer fill of a static shape is a tensor of known elements.
  const Tensor& fill = attributes->value;
  const Dim count = dims_product(y);
  if (holds_integers(fill.dtype()) && fill.numel() == 1 && count.expr.is_constant() &&
      count.value <= kMaxFollowedElements) {
    set_elements(context, 0, Dims(static_cast<size_t>(count.value), static_dim(fill.value_as_int64(0))));
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

Status infer_identity_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  context.set_output_dims(0, x);
  pass_elements(context);
  return Status::ok();
}

Status infer_dropout_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  // ratio (opset 12) and training_mode are scalars.
  for (size_t i : {size_t{1}, size_t{2}}) {
    const OptionalDims& dims = context.input_dims(i);
    if (dims && !dims->empty()) {
      return context.error("input {} '{}' must be a scalar, got shape {}", i, input_name(context, i), dims_text(*dims));
    }
  }
  for (size_t i = 0; i < context.node().outputs.size() && i < 2; ++i) context.set_output_dims(i, x);
  pass_elements(context);
  return Status::ok();
}

// ---- Pad / Expand / Tile ----

Status infer_pad_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<PadAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  Dims pads;
  if (attributes->pads_from_input) {
    QDQRT_ASSIGN_OR_RETURN(const Dims* elements, required_elements(context, 1, "pads"));
    pads = *elements;
  } else {
    for (int64_t pad : attributes->pads) pads.push_back(static_dim(pad));
  }
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  if (attributes->pads_from_input && context.has_input(3)) {
    QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> given, required_ints(context, 3, "axes"));
    QDQRT_ASSIGN_OR_RETURN(axes, normalize_axes(context, given, rank, "axis"));
  }
  if (pads.size() != 2 * axes.size()) {
    return context.error("pads {} has {} values, expected {} (2 per padded axis of the input {})", dims_text(pads),
                         pads.size(), 2 * axes.size(), dims_text(x));
  }
  Dims y = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t axis = static_cast<size_t>(axes[i]);
    const Dim& begin = pads[i];
    const Dim& end = pads[i + axes.size()];
    std::optional<int64_t> value;
    std::optional<int64_t> dim_value = known_value(x[axis]), begin_value = known_value(begin),
                           end_value = known_value(end);
    if (dim_value && begin_value && end_value) {
      std::optional<int64_t> sum = checked_add(*dim_value, *begin_value);
      if (sum) sum = checked_add(*sum, *end_value);
      if (!sum || *sum < 0) {
        return context.error("pads {} crop axis {} of size {} below zero", dims_text(pads), axis, *dim_value);
      }
      value = sum;
    }
    y[axis] = make_dim(value, x[axis].expr + begin.expr + end.expr);
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

Status infer_expand_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(const Dims* shape, required_elements(context, 1, "the shape"));
  Dims target;
  for (const Dim& element : *shape) {
    if (std::optional<int64_t> value = element.expr.constant_value(); value && *value < 0) {
      return context.error("the shape {} has the negative dim {}", dims_text(*shape), *value);
    }
    target.push_back(element_dim(element));
  }
  OptionalDims y = broadcast_dims(x, target);
  if (!y) return context.error("the input {} does not broadcast to the shape {}", dims_text(x), dims_text(target));
  context.set_output_dims(0, std::move(*y));
  return Status::ok();
}

Status infer_tile_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(const Dims* repeats, required_elements(context, 1, "repeats"));
  if (repeats->size() != x.size()) {
    return context.error("repeats {} has {} values for the input {} of rank {}", dims_text(*repeats), repeats->size(),
                         dims_text(x), x.size());
  }
  Dims y;
  for (size_t d = 0; d < x.size(); ++d) {
    const Dim& repeat = (*repeats)[d];
    if (std::optional<int64_t> value = repeat.expr.constant_value(); value && *value < 0) {
      return context.error("repeats {} has the negative value {}", dims_text(*repeats), *value);
    }
    Dim product = x[d] * element_dim(repeat);
    std::optional<int64_t> a = known_value(x[d]), b = known_value(repeat);
    if (a && b && !checked_mul(*a, *b))
      return context.error("repeats {} overflow the input {}", dims_text(*repeats), dims_text(x));
    y.push_back(std::move(product));
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

// ---- Range / NonZero ----

namespace {

// The one value of a scalar constant as a double.
std::optional<double> scalar_constant(const ShapeInferenceContext& context, size_t i) {
  const Tensor* constant = context.input_constant(i);
  if (constant == nullptr || constant->numel() != 1) return std::nullopt;
  if (constant->dtype() == DataType::kFloat16 || constant->dtype() == DataType::kBFloat16) return std::nullopt;
  return constant->value_as_double(0);
}

}  // namespace

Status infer_range_shape(ShapeInferenceContext& context) {
  for (size_t i = 0; i < 3; ++i) {
    const OptionalDims& dims = context.input_dims(i);
    if (dims && !dims->empty() && !(dims->size() == 1 && known_value((*dims)[0]) == 1)) {
      return context.error("input {} '{}' must be a scalar, got shape {}", i, input_name(context, i), dims_text(*dims));
    }
  }
  const OptionalDims &start = context.input_elements(0), &limit = context.input_elements(1),
                     &delta = context.input_elements(2);
  const bool followed = start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1;
  if (followed) {
    // Integer range: count = max(ceil((limit - start) / delta), 0), as an expression.
    const Dim &s = (*start)[0], &l = (*limit)[0], &d = (*delta)[0];
    std::optional<int64_t> sv = known_value(s), lv = known_value(l), dv = known_value(d);
    if (dv == 0) return context.error("delta '{}' is 0", input_name(context, 2));
    std::optional<int64_t> count;
    if (sv && lv && dv) {
      std::optional<int64_t> difference = checked_add(*lv, -*sv);
      if (!difference || *sv == INT64_MIN) return context.error("the range from {} to {} is too large", *sv, *lv);
      int64_t quotient = *difference / *dv;
      if (*difference % *dv != 0 && ((*difference < 0) == (*dv < 0))) ++quotient;
      count = std::max<int64_t>(quotient, 0);
    }
    const DimExpr expr = max(ceil_div(l.expr - s.expr, d.expr), DimExpr::constant(0));
    context.set_output_dims(0, {make_dim(count, expr)});
    // The elements, when their count does not depend on a dynamic dim.
    std::optional<int64_t> start_value = s.expr.constant_value(), delta_value = d.expr.constant_value();
    if (count && expr.is_constant() && *count <= kMaxFollowedElements && start_value && delta_value) {
      Dims elements;
      for (int64_t i = 0; i < *count; ++i) elements.push_back(static_dim(*start_value + i * *delta_value));
      set_elements(context, 0, std::move(elements));
    }
    return Status::ok();
  }
  // A float range of constants: the count as the reference computes it.
  std::optional<double> sv = scalar_constant(context, 0), lv = scalar_constant(context, 1),
                        dv = scalar_constant(context, 2);
  if (!sv || !lv || !dv) {
    return context.error("start, limit and delta are not all constant: the output's length depends on their values");
  }
  if (*dv == 0) return context.error("delta '{}' is 0", input_name(context, 2));
  const double count = std::ceil((*lv - *sv) / *dv);
  if (!(count <= static_cast<double>(int64_t{1} << 40))) return context.error("the range is too large");
  context.set_output_dims(0, {static_dim(std::max<int64_t>(0, static_cast<int64_t>(count)))});
  return Status::ok();
}

Status infer_non_zero_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t count = 0;
  if (const Tensor* constant = context.input_constant(0)) {
    const bool half = constant->dtype() == DataType::kFloat16 || constant->dtype() == DataType::kBFloat16;
    for (int64_t i = 0; i < constant->numel(); ++i) {
      const bool nonzero = half ? (constant->data<uint16_t>()[i] & 0x7fffu) != 0 : constant->value_as_double(i) != 0.0;
      count += nonzero ? 1 : 0;
    }
  } else if (std::optional<std::vector<int64_t>> values = context.input_ints(0)) {
    for (int64_t value : *values) count += value != 0 ? 1 : 0;
  } else {
    return context.error("its output's length is the number of non-zero values of '{}', which is not constant",
                         input_name(context, 0));
  }
  context.set_output_dims(0, {static_dim(rank), static_dim(count)});
  return Status::ok();
}

// ---- DepthToSpace / SpaceToDepth ----

namespace {

// blocksize^2, checking that the input is NCHW and the blocksize in range.
Result<int64_t> block_area(const ShapeInferenceContext& context, const Dims& x, int64_t blocksize) {
  if (x.size() != 4) return context.error("the input must be 4-D NCHW, got {}", dims_text(x));
  const std::optional<int64_t> area = checked_mul(blocksize, blocksize);
  if (blocksize < 1 || !area) return context.error("blocksize {} is out of range", blocksize);
  return *area;
}

}  // namespace

Status infer_depth_to_space_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<DepthToSpaceAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t b = attributes->blocksize;
  QDQRT_ASSIGN_OR_RETURN(const int64_t b_squared, block_area(context, x, b));
  const Dim square = static_dim(b_squared);
  if (std::optional<int64_t> channels = known_value(x[1]); channels && *channels % b_squared != 0) {
    return context.error("the input's {} channels are not a multiple of blocksize^2 = {}", *channels, b_squared);
  }
  const Dim block = static_dim(b);
  context.set_output_dims(0, {x[0], floor_div(x[1], square), x[2] * block, x[3] * block});
  return Status::ok();
}

Status infer_space_to_depth_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<SpaceToDepthAttributes>(context));
  QDQRT_ASSIGN_OR_RETURN(const Dims x, required_input_dims(context, 0));
  const int64_t b = attributes->blocksize;
  QDQRT_ASSIGN_OR_RETURN(const int64_t b_squared, block_area(context, x, b));
  for (size_t d : {size_t{2}, size_t{3}}) {
    if (std::optional<int64_t> size = known_value(x[d]); size && *size % b != 0) {
      return context.error("spatial dim {} of the input {} is not a multiple of blocksize {}", d, dims_text(x), b);
    }
  }
  const Dim block = static_dim(b);
  context.set_output_dims(0, {x[0], x[1] * static_dim(b_squared), floor_div(x[2], block), floor_div(x[3], block)});
  return Status::ok();
}

}  // namespace qdqrt
