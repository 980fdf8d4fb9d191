// Reference kernels of the elementwise family. Each op is a small functor; generic kernels
// apply it over every element (unary) or over numpy-broadcast pairs (binary). Float math is
// done in double and rounded once to the output type; float16/bfloat16 go through float32.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/ops/elementwise.h"
#include "reference/kernel_registry.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/dtype_helpers.h"
#include "reference/ops/half_float.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

// Constructs Op from the node's typed attributes when Op names an Attributes type.
template <class Op>
Result<Op> make_op(const Node& node) {
  if constexpr (requires { typename Op::Attributes; }) {
    QDQRT_ASSIGN_OR_RETURN(const typename Op::Attributes* attributes, typed_attributes<typename Op::Attributes>(node));
    return Op(*attributes);
  } else {
    (void)node;
    return Op{};
  }
}

// ---- float unary ops: double -> double ----

struct SqrtOp { double operator()(double x) const { return std::sqrt(x); } };
struct ExpOp { double operator()(double x) const { return std::exp(x); } };
struct LogOp { double operator()(double x) const { return std::log(x); } };
struct ErfOp { double operator()(double x) const { return std::erf(x); } };
struct ReciprocalOp { double operator()(double x) const { return 1.0 / x; } };
struct TanhOp { double operator()(double x) const { return std::tanh(x); } };
struct FloorOp { double operator()(double x) const { return std::floor(x); } };
struct CeilOp { double operator()(double x) const { return std::ceil(x); } };
// Half to even, as ONNX Round specifies (the default rounding mode of nearbyint).
struct RoundOp { double operator()(double x) const { return std::nearbyint(x); } };
struct SinOp { double operator()(double x) const { return std::sin(x); } };
struct CosOp { double operator()(double x) const { return std::cos(x); } };
struct TanOp { double operator()(double x) const { return std::tan(x); } };
struct AsinOp { double operator()(double x) const { return std::asin(x); } };
struct AcosOp { double operator()(double x) const { return std::acos(x); } };
struct AtanOp { double operator()(double x) const { return std::atan(x); } };
struct SinhOp { double operator()(double x) const { return std::sinh(x); } };
struct CoshOp { double operator()(double x) const { return std::cosh(x); } };
struct AsinhOp { double operator()(double x) const { return std::asinh(x); } };
struct AcoshOp { double operator()(double x) const { return std::acosh(x); } };
struct AtanhOp { double operator()(double x) const { return std::atanh(x); } };
struct SigmoidOp {
  double operator()(double x) const { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
};
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
struct SoftplusOp { double operator()(double x) const { return softplus(x); } };
struct SoftsignOp { double operator()(double x) const { return x / (1.0 + std::fabs(x)); } };
struct MishOp { double operator()(double x) const { return x * std::tanh(softplus(x)); } };
struct HardSwishOp {
  double operator()(double x) const { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }
};

struct LeakyReluOp {
  using Attributes = LeakyReluAttributes;
  explicit LeakyReluOp(const Attributes& a) : alpha(a.alpha) {}
  double operator()(double x) const { return x < 0 ? alpha * x : x; }
  double alpha;
};
struct EluOp {
  using Attributes = EluAttributes;
  explicit EluOp(const Attributes& a) : alpha(a.alpha) {}
  double operator()(double x) const { return x < 0 ? alpha * (std::exp(x) - 1.0) : x; }
  double alpha;
};
struct CeluOp {
  using Attributes = CeluAttributes;
  explicit CeluOp(const Attributes& a) : alpha(a.alpha) {}
  double operator()(double x) const { return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1.0)); }
  double alpha;
};
struct SeluOp {
  using Attributes = SeluAttributes;
  explicit SeluOp(const Attributes& a) : alpha(a.alpha), gamma(a.gamma) {}
  double operator()(double x) const { return x <= 0 ? gamma * (alpha * std::exp(x) - alpha) : gamma * x; }
  double alpha, gamma;
};
struct ThresholdedReluOp {
  using Attributes = ThresholdedReluAttributes;
  explicit ThresholdedReluOp(const Attributes& a) : alpha(a.alpha) {}
  double operator()(double x) const { return x > alpha ? x : 0.0; }
  double alpha;
};
struct HardSigmoidOp {
  using Attributes = HardSigmoidAttributes;
  explicit HardSigmoidOp(const Attributes& a) : alpha(a.alpha), beta(a.beta) {}
  double operator()(double x) const { return std::clamp(alpha * x + beta, 0.0, 1.0); }
  double alpha, beta;
};
struct GeluOp {
  using Attributes = GeluAttributes;
  explicit GeluOp(const Attributes& a) : tanh_approximation(a.tanh_approximation) {}
  double operator()(double x) const {
    if (tanh_approximation) {
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    }
    return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  }
  bool tanh_approximation;
};

// y = op(x) for float inputs.
template <class Op>
Status float_unary(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(Op op, make_op<Op>(node));
  const Tensor& x = *inputs[0];
  return visit_float(node, "input 0", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    Tensor y(x.dtype(), x.shape());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = static_cast<T>(op(static_cast<double>(in[i])));
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

// ---- numeric unary ops: T -> T for every numeric type ----

struct NegOp {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return wrapping_sub<T>(0, x);
    else return -x;
  }
};
struct AbsOp {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (std::is_integral_v<T>) return x < 0 ? wrapping_sub<T>(0, x) : x;
    else return std::fabs(x);
  }
};
struct SignOp {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return x;
    }
    return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};
// NaN passes through, like numpy's maximum(x, 0).
struct ReluOp {
  template <class T> T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
struct ShrinkOp {
  using Attributes = ShrinkAttributes;
  explicit ShrinkOp(const Attributes& a) : bias(a.bias), lambd(a.lambd) {}
  template <class T> T operator()(T x) const {
    double v = static_cast<double>(x);
    return cast_from_double<T>(v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
  }
  double bias, lambd;
};

template <class Op>
Status numeric_unary(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(Op op, make_op<Op>(node));
  const Tensor& x = *inputs[0];
  return visit_numeric(node, "input 0", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    Tensor y(x.dtype(), x.shape());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = op(in[i]);
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

// ---- predicates: float -> bool ----

Status is_nan_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  const Tensor& x = *inputs[0];
  return visit_float(node, "input 0", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    Tensor y(DataType::kBool, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) y.data<bool>()[i] = std::isnan(x.data<T>()[i]);
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

Status is_inf_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const IsInfAttributes* attributes, typed_attributes<IsInfAttributes>(node));
  const Tensor& x = *inputs[0];
  return visit_float(node, "input 0", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    Tensor y(DataType::kBool, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      T v = x.data<T>()[i];
      y.data<bool>()[i] = std::isinf(v) && ((v > 0 && attributes->detect_positive) || (v < 0 && attributes->detect_negative));
    }
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

Status not_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  const Tensor& x = *inputs[0];
  if (x.dtype() != DataType::kBool) return unsupported_dtype(node, "input 0", x.dtype());
  Tensor y(DataType::kBool, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<bool>()[i] = !x.data<bool>()[i];
  outputs[0] = std::move(y);
  return Status::ok();
}

// ---- binary ops with numpy broadcasting ----

Status check_same_dtype(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    return node_error(node, "inputs have different dtypes {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  }
  return Status::ok();
}

// Integer division and modulo by zero are undefined: report them instead.
template <class T>
Status check_no_integer_zero(const Node& node, const Tensor& divisor) {
  if constexpr (std::is_integral_v<T>) {
    for (int64_t i = 0; i < divisor.numel(); ++i) {
      if (divisor.data<T>()[i] == 0) return node_error(node, "integer division by zero (divisor element {})", i);
    }
  }
  (void)node;
  (void)divisor;
  return Status::ok();
}

enum class Arithmetic { kAdd, kSub, kMul, kDiv };

template <Arithmetic kind>
Status arithmetic_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  QDQRT_RETURN_IF_ERROR(check_same_dtype(node, a, b));
  return visit_numeric(node, "input 0", a.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    if constexpr (kind == Arithmetic::kDiv) QDQRT_RETURN_IF_ERROR(check_no_integer_zero<T>(node, b));
    auto op = [](T x, T y) -> T {
      if constexpr (std::is_integral_v<T>) {
        if constexpr (kind == Arithmetic::kAdd) return wrapping_add<T>(x, y);
        if constexpr (kind == Arithmetic::kSub) return wrapping_sub<T>(x, y);
        if constexpr (kind == Arithmetic::kMul) return wrapping_mul<T>(x, y);
        // C truncation; INT_MIN / -1 overflows, numpy wraps it.
        if constexpr (std::is_signed_v<T>) {
          if (y == -1) return wrapping_sub<T>(0, x);
        }
        return static_cast<T>(x / y);
      } else {
        if constexpr (kind == Arithmetic::kAdd) return x + y;
        if constexpr (kind == Arithmetic::kSub) return x - y;
        if constexpr (kind == Arithmetic::kMul) return x * y;
        return x / y;
      }
    };
    QDQRT_ASSIGN_OR_RETURN(outputs[0], (broadcast_binary<T, T, T>(node, a, b, op)));
    return Status::ok();
  });
}

// Pow: exponent may have another numeric dtype; the output has the base's dtype.
Status pow_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  const Tensor& base = *inputs[0];
  const Tensor& exponent = *inputs[1];
  return visit_numeric(node, "base", base.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    return visit_numeric(node, "exponent", exponent.dtype(), [&]<class E>(std::type_identity<E>) -> Status {
      auto op = [](T x, E y) -> T {
        return cast_from_double<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
      };
      QDQRT_ASSIGN_OR_RETURN(outputs[0], (broadcast_binary<T, T, E>(node, base, exponent, op)));
      return Status::ok();
    });
  });
}

Status mod_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  QDQRT_ASSIGN_OR_RETURN(const ModAttributes* attributes, typed_attributes<ModAttributes>(node));
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  QDQRT_RETURN_IF_ERROR(check_same_dtype(node, a, b));
  const bool fmod = attributes->fmod;
  return visit_numeric(node, "input 0", a.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    if constexpr (std::is_floating_point_v<T>) {
      if (!fmod) return node_error(node, "fmod must be 1 for float inputs");
      QDQRT_ASSIGN_OR_RETURN(outputs[0], (broadcast_binary<T, T, T>(node, a, b, [](T x, T y) { return std::fmod(x, y); })));
    } else {
      QDQRT_RETURN_IF_ERROR(check_no_integer_zero<T>(node, b));
      auto op = [fmod](T x, T y) -> T {
        if constexpr (std::is_signed_v<T>) {
          if (y == -1) return 0;  // avoids INT_MIN % -1 overflow
        }
        T r = static_cast<T>(x % y);
        if constexpr (std::is_signed_v<T>) {
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
        }
        return r;
      };
      QDQRT_ASSIGN_OR_RETURN(outputs[0], (broadcast_binary<T, T, T>(node, a, b, op)));
    }
    return Status::ok();
  });
}

// PRelu: slope broadcasts to X (unidirectionally).
Status prelu_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  const Tensor& x = *inputs[0];
  const Tensor& slope = *inputs[1];
  QDQRT_RETURN_IF_ERROR(check_same_dtype(node, x, slope));
  return visit_numeric(node, "X", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    auto op = [](T v, T s) -> T { return v < T(0) ? static_cast<T>(v * s) : v; };
    QDQRT_ASSIGN_OR_RETURN(Tensor y, (broadcast_binary<T, T, T>(node, x, slope, op)));
    if (y.shape() != x.shape()) {
      return node_error(node, "slope shape {} does not broadcast to X shape {}", shape_to_string(slope.shape()),
                        shape_to_string(x.shape()));
    }
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

enum class Comparison { kEqual, kGreater, kLess, kGreaterOrEqual, kLessOrEqual };

template <Comparison kind>
Status comparison_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  QDQRT_RETURN_IF_ERROR(check_same_dtype(node, a, b));
  return visit_numeric_or_bool(node, "input 0", a.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    auto op = [](T x, T y) -> bool {
      if constexpr (kind == Comparison::kEqual) return x == y;
      if constexpr (kind == Comparison::kGreater) return x > y;
      if constexpr (kind == Comparison::kLess) return x < y;
      if constexpr (kind == Comparison::kGreaterOrEqual) return x >= y;
      return x <= y;
    };
    QDQRT_ASSIGN_OR_RETURN(outputs[0], (broadcast_binary<bool, T, T>(node, a, b, op)));
    return Status::ok();
  });
}

enum class Logic { kAnd, kOr, kXor };

template <Logic kind>
Status logic_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  if (a.dtype() != DataType::kBool) return unsupported_dtype(node, "input 0", a.dtype());
  if (b.dtype() != DataType::kBool) return unsupported_dtype(node, "input 1", b.dtype());
  auto op = [](bool x, bool y) -> bool {
    if constexpr (kind == Logic::kAnd) return x && y;
    if constexpr (kind == Logic::kOr) return x || y;
    return x != y;
  };
  QDQRT_ASSIGN_OR_RETURN(outputs[0], (broadcast_binary<bool, bool, bool>(node, a, b, op)));
  return Status::ok();
}

// Where(condition, X, Y): a dtype-independent select with three-way broadcasting.
Status where_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 3, 3));
  const Tensor& condition = *inputs[0];
  const Tensor& x = *inputs[1];
  const Tensor& y = *inputs[2];
  if (condition.dtype() != DataType::kBool) return unsupported_dtype(node, "condition", condition.dtype());
  QDQRT_RETURN_IF_ERROR(check_same_dtype(node, x, y));
  if (dtype_size(x.dtype()) == 0) return unsupported_dtype(node, "X", x.dtype());
  QDQRT_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(node, {condition.shape(), x.shape(), y.shape()}));
  Tensor out(x.dtype(), out_shape);
  const size_t size = dtype_size(x.dtype());
  const bool* select = condition.data<bool>();
  std::array<std::vector<int64_t>, 3> strides = {broadcast_strides(condition.shape(), out_shape),
                                                 broadcast_strides(x.shape(), out_shape),
                                                 broadcast_strides(y.shape(), out_shape)};
  for_each_index<3>(out_shape, strides, [&](int64_t index, const std::array<int64_t, 3>& offsets) {
    if (select[offsets[0]]) copy_element(bytes_of(out), index, bytes_of(x), offsets[1], size);
    else copy_element(bytes_of(out), index, bytes_of(y), offsets[2], size);
  });
  outputs[0] = std::move(out);
  return Status::ok();
}

// ---- variadic Min/Max/Sum/Mean: a pairwise broadcasting fold ----

enum class Variadic { kMin, kMax, kSum, kMean };

template <Variadic kind>
Status variadic_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  if (inputs.empty()) return node_error(node, "needs at least one input");
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, inputs.size(), inputs.size()));
  for (size_t i = 1; i < inputs.size(); ++i) QDQRT_RETURN_IF_ERROR(check_same_dtype(node, *inputs[0], *inputs[i]));
  return visit_numeric(node, "input 0", inputs[0]->dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    auto op = [](T x, T y) -> T {
      if constexpr (kind == Variadic::kMin || kind == Variadic::kMax) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<T>::quiet_NaN();
        }
        return kind == Variadic::kMin ? std::min(x, y) : std::max(x, y);
      } else if constexpr (std::is_integral_v<T>) {
        return wrapping_add<T>(x, y);
      } else {
        return x + y;
      }
    };
    Tensor result = inputs[0]->clone();
    for (size_t i = 1; i < inputs.size(); ++i) {
      QDQRT_ASSIGN_OR_RETURN(result, (broadcast_binary<T, T, T>(node, result, *inputs[i], op)));
    }
    if constexpr (kind == Variadic::kMean) {
      T* data = result.data<T>();
      for (int64_t i = 0; i < result.numel(); ++i) data[i] = static_cast<T>(data[i] / static_cast<T>(inputs.size()));
    }
    outputs[0] = std::move(result);
    return Status::ok();
  });
}

// Clip: bounds from attributes (opset < 11) or optional scalar inputs 1 and 2.
Status clip_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 3));
  QDQRT_ASSIGN_OR_RETURN(const ClipAttributes* attributes, typed_attributes<ClipAttributes>(node));
  const Tensor& x = *inputs[0];
  return visit_numeric(node, "input", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    T low = std::numeric_limits<T>::lowest();
    T high = std::numeric_limits<T>::max();
    if (!attributes->bounds_from_inputs) {
      low = cast_from_double<T>(attributes->min);
      high = cast_from_double<T>(attributes->max);
    } else {
      const char* names[] = {"", "min", "max"};
      for (size_t i = 1; i <= 2; ++i) {
        const Tensor* bound = optional_input(inputs, i);
        if (bound == nullptr) continue;
        if (bound->dtype() != x.dtype()) {
          return node_error(node, "{} has dtype {}, input has {}", names[i], dtype_name(bound->dtype()), dtype_name(x.dtype()));
        }
        if (bound->numel() != 1) {
          return node_error(node, "{} must be a scalar, got shape {}", names[i], shape_to_string(bound->shape()));
        }
        (i == 1 ? low : high) = bound->data<T>()[0];
      }
    }
    Tensor y(x.dtype(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      T v = x.data<T>()[i];
      // As numpy.clip: min(max(v, low), high), so low > high gives high everywhere.
      v = v < low ? low : v;
      y.data<T>()[i] = v > high ? high : v;
    }
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

// ---- Softmax, LogSoftmax, Hardmax ----

enum class Normalize { kSoftmax, kLogSoftmax, kHardmax };

template <Normalize kind>
Status softmax_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const SoftmaxAttributes* attributes, typed_attributes<SoftmaxAttributes>(node));
  const Tensor& x = *inputs[0];
  const int64_t rank = x.rank();
  if (rank == 0) return node_error(node, "input must have rank >= 1");
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, attributes->axis, rank, "axis"));
  // View the input as [outer, length, inner] and normalize over `length`.
  int64_t outer = 1, length = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  if (attributes->coerce_to_2d) {
    for (int64_t d = axis; d < rank; ++d) length *= x.dim(d);
  } else {
    length = x.dim(axis);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
  }
  return visit_float(node, "input", x.dtype(), [&]<class T>(std::type_identity<T>) -> Status {
    Tensor y(x.dtype(), x.shape());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    if (length == 0) outer = 0;  // nothing to normalize over
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * length * inner + i;
        auto at = [&](int64_t k) { return base + k * inner; };
        int64_t max_index = 0;
        for (int64_t k = 1; k < length; ++k) {
          if (in[at(k)] > in[at(max_index)]) max_index = k;
        }
        if constexpr (kind == Normalize::kHardmax) {
          for (int64_t k = 0; k < length; ++k) out[at(k)] = k == max_index ? T(1) : T(0);
        } else {
          const double max_value = static_cast<double>(in[at(max_index)]);
          double sum = 0.0;
          for (int64_t k = 0; k < length; ++k) sum += std::exp(static_cast<double>(in[at(k)]) - max_value);
          for (int64_t k = 0; k < length; ++k) {
            double shifted = static_cast<double>(in[at(k)]) - max_value;
            out[at(k)] = static_cast<T>(kind == Normalize::kSoftmax ? std::exp(shifted) / sum : shifted - std::log(sum));
          }
        }
      }
    }
    outputs[0] = std::move(y);
    return Status::ok();
  });
}

void add(KernelRegistry& registry, const char* op_type, ReferenceKernel kernel) {
  registry.add(kOnnxDomain, op_type, kernel);
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& registry) {
  add(registry, "Sqrt", half_via_float<float_unary<SqrtOp>>);
  add(registry, "Exp", half_via_float<float_unary<ExpOp>>);
  add(registry, "Log", half_via_float<float_unary<LogOp>>);
  add(registry, "Erf", half_via_float<float_unary<ErfOp>>);
  add(registry, "Reciprocal", half_via_float<float_unary<ReciprocalOp>>);
  add(registry, "Tanh", half_via_float<float_unary<TanhOp>>);
  add(registry, "Floor", half_via_float<float_unary<FloorOp>>);
  add(registry, "Ceil", half_via_float<float_unary<CeilOp>>);
  add(registry, "Round", half_via_float<float_unary<RoundOp>>);
  add(registry, "Sin", half_via_float<float_unary<SinOp>>);
  add(registry, "Cos", half_via_float<float_unary<CosOp>>);
  add(registry, "Tan", half_via_float<float_unary<TanOp>>);
  add(registry, "Asin", half_via_float<float_unary<AsinOp>>);
  add(registry, "Acos", half_via_float<float_unary<AcosOp>>);
  add(registry, "Atan", half_via_float<float_unary<AtanOp>>);
  add(registry, "Sinh", half_via_float<float_unary<SinhOp>>);
  add(registry, "Cosh", half_via_float<float_unary<CoshOp>>);
  add(registry, "Asinh", half_via_float<float_unary<AsinhOp>>);
  add(registry, "Acosh", half_via_float<float_unary<AcoshOp>>);
  add(registry, "Atanh", half_via_float<float_unary<AtanhOp>>);
  add(registry, "Sigmoid", half_via_float<float_unary<SigmoidOp>>);
  add(registry, "Softplus", half_via_float<float_unary<SoftplusOp>>);
  add(registry, "Softsign", half_via_float<float_unary<SoftsignOp>>);
  add(registry, "Mish", half_via_float<float_unary<MishOp>>);
  add(registry, "HardSwish", half_via_float<float_unary<HardSwishOp>>);
  add(registry, "LeakyRelu", half_via_float<float_unary<LeakyReluOp>>);
  add(registry, "Elu", half_via_float<float_unary<EluOp>>);
  add(registry, "Celu", half_via_float<float_unary<CeluOp>>);
  add(registry, "Selu", half_via_float<float_unary<SeluOp>>);
  add(registry, "ThresholdedRelu", half_via_float<float_unary<ThresholdedReluOp>>);
  add(registry, "HardSigmoid", half_via_float<float_unary<HardSigmoidOp>>);
  add(registry, "Gelu", half_via_float<float_unary<GeluOp>>);

  add(registry, "Neg", half_via_float<numeric_unary<NegOp>>);
  add(registry, "Abs", half_via_float<numeric_unary<AbsOp>>);
  add(registry, "Sign", half_via_float<numeric_unary<SignOp>>);
  add(registry, "Relu", half_via_float<numeric_unary<ReluOp>>);
  add(registry, "Shrink", half_via_float<numeric_unary<ShrinkOp>>);

  add(registry, "IsNaN", half_via_float<is_nan_kernel>);
  add(registry, "IsInf", half_via_float<is_inf_kernel>);
  add(registry, "Not", not_kernel);

  add(registry, "Add", half_via_float<arithmetic_kernel<Arithmetic::kAdd>>);
  add(registry, "Sub", half_via_float<arithmetic_kernel<Arithmetic::kSub>>);
  add(registry, "Mul", half_via_float<arithmetic_kernel<Arithmetic::kMul>>);
  add(registry, "Div", half_via_float<arithmetic_kernel<Arithmetic::kDiv>>);
  add(registry, "Pow", half_via_float<pow_kernel>);
  add(registry, "Mod", half_via_float<mod_kernel>);
  add(registry, "PRelu", half_via_float<prelu_kernel>);

  add(registry, "Equal", half_via_float<comparison_kernel<Comparison::kEqual>>);
  add(registry, "Greater", half_via_float<comparison_kernel<Comparison::kGreater>>);
  add(registry, "Less", half_via_float<comparison_kernel<Comparison::kLess>>);
  add(registry, "GreaterOrEqual", half_via_float<comparison_kernel<Comparison::kGreaterOrEqual>>);
  add(registry, "LessOrEqual", half_via_float<comparison_kernel<Comparison::kLessOrEqual>>);
  add(registry, "And", logic_kernel<Logic::kAnd>);
  add(registry, "Or", logic_kernel<Logic::kOr>);
  add(registry, "Xor", logic_kernel<Logic::kXor>);
  add(registry, "Where", where_kernel);

  add(registry, "Min", half_via_float<variadic_kernel<Variadic::kMin>>);
  add(registry, "Max", half_via_float<variadic_kernel<Variadic::kMax>>);
  add(registry, "Sum", half_via_float<variadic_kernel<Variadic::kSum>>);
  add(registry, "Mean", half_via_float<variadic_kernel<Variadic::kMean>>);
  add(registry, "Clip", half_via_float<clip_kernel>);

  add(registry, "Softmax", half_via_float<softmax_kernel<Normalize::kSoftmax>>);
  add(registry, "LogSoftmax", half_via_float<softmax_kernel<Normalize::kLogSoftmax>>);
  add(registry, "Hardmax", half_via_float<softmax_kernel<Normalize::kHardmax>>);
}

}  // namespace qdqrt
