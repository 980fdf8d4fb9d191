// Reference kernels of the reduce family. Every input element is accumulated into the output
// element it reduces to (the output viewed with keepdims=1 and broadcast back to the input);
// floats accumulate in double, integers in int64.
#include <algorithm>
#include <cmath>

#include "core/ops/reduce.h"
#include "reference/kernel_registry.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/dtype_helpers.h"
#include "reference/ops/half_float.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Axes to reduce (normalized, sorted), or nullopt-like empty + is_noop for the identity case.
struct ReducePlan {
  std::vector<int64_t> axes;  // normalized
  bool identity = false;
  Shape kept_shape;    // input shape with reduced dims set to 1
  Shape output_shape;  // kept_shape, or without the reduced dims when keepdims=0
};

Result<ReducePlan> plan_reduce(const Node& node, Inputs inputs, const ReduceAttributes& attributes, const Tensor& x) {
  ReducePlan plan;
  std::vector<int64_t> axes = attributes.axes;
  if (attributes.axes_from_input) {
    if (const Tensor* axes_tensor = optional_input(inputs, 1)) {
      QDQRT_ASSIGN_OR_RETURN(axes, int64_values(node, *axes_tensor, "axes"));
    }
  } else if (optional_input(inputs, 1) != nullptr) {
    return node_error(node, "axes is an attribute at opset {}, not an input", node.opset);
  }
  if (axes.empty()) {
    if (attributes.noop_with_empty_axes) {
      plan.identity = true;
      return plan;
    }
    for (int64_t d = 0; d < x.rank(); ++d) axes.push_back(d);
  }
  QDQRT_ASSIGN_OR_RETURN(plan.axes, normalize_axes(node, axes, x.rank(), "axis"));
  std::sort(plan.axes.begin(), plan.axes.end());
  plan.kept_shape = x.shape();
  for (int64_t axis : plan.axes) plan.kept_shape[static_cast<size_t>(axis)] = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool reduced = std::binary_search(plan.axes.begin(), plan.axes.end(), d);
    if (!reduced || attributes.keepdims) plan.output_shape.push_back(plan.kept_shape[static_cast<size_t>(d)]);
  }
  return plan;
}

template <Reduction kind>
Status reduce_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 2));
  QDQRT_ASSIGN_OR_RETURN(const ReduceAttributes* attributes, typed_attributes<ReduceAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(node, inputs, *attributes, x));
  if (plan.identity) {
    outputs[0] = x.clone();
    return Status::ok();
  }
  return visit_numeric(node, "input", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    constexpr bool float_math = std::is_floating_point_v<T> || kind == Reduction::kL2 ||
                                kind == Reduction::kLogSum || kind == Reduction::kLogSumExp;
    using Acc = std::conditional_t<float_math, double, int64_t>;
    const int64_t out_count = shape_numel(plan.kept_shape);
    const int64_t reduced_count = out_count == 0 ? 0 : x.numel() / out_count;
    const T* in = x.data<T>();

    Acc initial = 0;
    if constexpr (kind == Reduction::kProd) initial = 1;
    if constexpr (kind == Reduction::kMax || kind == Reduction::kMin) {
      constexpr bool is_max = kind == Reduction::kMax;
      if constexpr (std::is_floating_point_v<T>) {
        initial = is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      } else {
        initial = is_max ? static_cast<Acc>(std::numeric_limits<T>::lowest()) : static_cast<Acc>(std::numeric_limits<T>::max());
      }
    }
    std::vector<Acc> acc(static_cast<size_t>(out_count), initial);
    std::array<std::vector<int64_t>, 2> strides = {row_major_strides(x.shape()),
                                                   broadcast_strides(plan.kept_shape, x.shape())};

    // LogSumExp subtracts each output's max before exponentiating, so it needs the max first.
    std::vector<double> max_values;
    if constexpr (kind == Reduction::kLogSumExp) {
      max_values.assign(static_cast<size_t>(out_count), -std::numeric_limits<double>::infinity());
      for_each_index<2>(x.shape(), strides, [&](int64_t, const std::array<int64_t, 2>& offsets) {
        max_values[offsets[1]] = std::max(max_values[offsets[1]], static_cast<double>(in[offsets[0]]));
      });
    }

    for_each_index<2>(x.shape(), strides, [&](int64_t, const std::array<int64_t, 2>& offsets) {
      const Acc v = static_cast<Acc>(in[offsets[0]]);
      Acc& a = acc[static_cast<size_t>(offsets[1])];
      if constexpr (kind == Reduction::kSum || kind == Reduction::kMean || kind == Reduction::kLogSum) a += v;
      if constexpr (kind == Reduction::kMax) a = std::max(a, v);
      if constexpr (kind == Reduction::kMin) a = std::min(a, v);
      if constexpr (kind == Reduction::kProd) a *= v;
      if constexpr (kind == Reduction::kL1) a += v < 0 ? -v : v;
      if constexpr (kind == Reduction::kL2 || kind == Reduction::kSumSquare) a += v * v;
      if constexpr (kind == Reduction::kLogSumExp) {
        const double max_value = max_values[static_cast<size_t>(offsets[1])];
        if (std::isfinite(max_value)) a += static_cast<Acc>(std::exp(static_cast<double>(v) - max_value));
      }
    });

    Tensor y(x.dtype(), plan.output_shape);
    T* out = y.data<T>();
    for (int64_t i = 0; i < out_count; ++i) {
      const Acc a = acc[static_cast<size_t>(i)];
      double value = static_cast<double>(a);
      if constexpr (kind == Reduction::kMean) {
        if constexpr (std::is_integral_v<T>) {
          value = reduced_count == 0 ? 0.0 : static_cast<double>(a / reduced_count);
        } else {
          value = value / static_cast<double>(reduced_count);
        }
      }
      if constexpr (kind == Reduction::kL2) value = std::sqrt(value);
      if constexpr (kind == Reduction::kLogSum) value = std::log(value);
      if constexpr (kind == Reduction::kLogSumExp) {
        const double max_value = max_values[static_cast<size_t>(i)];
        value = std::isfinite(max_value) ? max_value + std::log(value) : max_value;
      }
      if constexpr (!float_math && (kind == Reduction::kSum || kind == Reduction::kProd ||
                                              kind == Reduction::kSumSquare || kind == Reduction::kL1 ||
                                              kind == Reduction::kMax || kind == Reduction::kMin)) {
        out[i] = static_cast<T>(a);  // exact (wraps like numpy) instead of a round trip through double
      } else {
        out[i] = cast_from_double<T>(value);
      }
    }
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

// ArgMax / ArgMin along one axis; int64 indices.
template <bool is_max>
Status arg_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const ArgMinMaxAttributes* attributes, typed_attributes<ArgMinMaxAttributes>(node));
  const Tensor& x = *inputs[0];
  if (x.rank() == 0) return node_error(node, "input must have rank >= 1");
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, attributes->axis, x.rank(), "axis"));
  const int64_t length = x.dim(axis);
  if (length == 0) return node_error(node, "axis {} of input shape {} is empty", axis, shape_to_string(x.shape()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  Shape out_shape = x.shape();
  if (attributes->keepdims) out_shape[static_cast<size_t>(axis)] = 1;
  else out_shape.erase(out_shape.begin() + axis);
  return visit_numeric(node, "input", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    Tensor y(DataType::kInt64, out_shape);
    const T* in = x.data<T>();
    int64_t* out = y.data<int64_t>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* line = in + o * length * inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < length; ++k) {
          T v = line[k * inner], b = line[best * inner];
          bool better = is_max ? v > b : v < b;
          if (better || (attributes->select_last_index && v == b)) best = k;
        }
        out[o * inner + i] = best;
      }
    }
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

// CumSum along the axis given as a scalar input.
Status cum_sum_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  QDQRT_ASSIGN_OR_RETURN(const CumSumAttributes* attributes, typed_attributes<CumSumAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> axis_values, int64_values(node, *inputs[1], "axis"));
  if (axis_values.size() != 1) return node_error(node, "axis must be a scalar, got {} values", axis_values.size());
  if (x.rank() == 0) return node_error(node, "input must have rank >= 1");
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_values[0], x.rank(), "axis"));
  const int64_t length = x.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  return visit_numeric(node, "input", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    auto add = [](Acc sum, T value) -> Acc {
      if constexpr (std::is_integral_v<T>) return wrapping_add<T>(sum, value);
      else return sum + value;
    };
    Tensor y(x.dtype(), x.shape());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        Acc sum = 0;
        for (int64_t step = 0; step < length; ++step) {
          const int64_t k = attributes->reverse ? length - 1 - step : step;
          const int64_t offset = (o * length + k) * inner + i;
          if (attributes->exclusive) {
            out[offset] = static_cast<T>(sum);
            sum = add(sum, in[offset]);
          } else {
            sum = add(sum, in[offset]);
            out[offset] = static_cast<T>(sum);
          }
        }
      }
    }
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

}  // namespace

void register_reduce_kernels(KernelRegistry& registry) {
  registry.add(kOnnxDomain, "ReduceSum", half_via_float<reduce_kernel<Reduction::kSum>>);
  registry.add(kOnnxDomain, "ReduceMean", half_via_float<reduce_kernel<Reduction::kMean>>);
  registry.add(kOnnxDomain, "ReduceMax", half_via_float<reduce_kernel<Reduction::kMax>>);
  registry.add(kOnnxDomain, "ReduceMin", half_via_float<reduce_kernel<Reduction::kMin>>);
  registry.add(kOnnxDomain, "ReduceProd", half_via_float<reduce_kernel<Reduction::kProd>>);
  registry.add(kOnnxDomain, "ReduceL1", half_via_float<reduce_kernel<Reduction::kL1>>);
  registry.add(kOnnxDomain, "ReduceL2", half_via_float<reduce_kernel<Reduction::kL2>>);
  registry.add(kOnnxDomain, "ReduceSumSquare", half_via_float<reduce_kernel<Reduction::kSumSquare>>);
  registry.add(kOnnxDomain, "ReduceLogSum", half_via_float<reduce_kernel<Reduction::kLogSum>>);
  registry.add(kOnnxDomain, "ReduceLogSumExp", half_via_float<reduce_kernel<Reduction::kLogSumExp>>);
  registry.add(kOnnxDomain, "ArgMax", half_via_float<arg_kernel<true>>);
  registry.add(kOnnxDomain, "ArgMin", half_via_float<arg_kernel<false>>);
  registry.add(kOnnxDomain, "CumSum", half_via_float<cum_sum_kernel>);
}

}  // namespace qdqrt
