// Lookup-table functions and table construction (portable, shared by every ISA variant).
#include <cmath>

#include "kernels/lut/qlut.h"
#include "kernels/scalar_math.h"

namespace qdqrt::kernels {

const char* lut_function_name(LutFunction function) {
  switch (function) {
    case LutFunction::kSigmoid: return "sigmoid";
    case LutFunction::kSilu: return "silu";
    case LutFunction::kHardSwish: return "hardswish";
    case LutFunction::kHardSigmoid: return "hardsigmoid";
    case LutFunction::kTanh: return "tanh";
    case LutFunction::kGelu: return "gelu";
    case LutFunction::kGeluTanh: return "gelu_tanh";
    case LutFunction::kLeakyRelu: return "leakyrelu";
    case LutFunction::kElu: return "elu";
    case LutFunction::kSoftplus: return "softplus";
    case LutFunction::kExp: return "exp";
    case LutFunction::kRelu: return "relu";
    case LutFunction::kIdentity: return "identity";
  }
  return "unknown";
}

LutFunctionParams default_lut_params(LutFunction function) {
  switch (function) {
    case LutFunction::kHardSigmoid: return {0.2f, 0.5f};
    case LutFunction::kLeakyRelu: return {0.01f, 0.0f};
    case LutFunction::kElu: return {1.0f, 0.0f};
    default: return {};
  }
}

float lut_function_value(LutFunction function, const LutFunctionParams& params, float x) {
  switch (function) {
    case LutFunction::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case LutFunction::kSilu: return x / (1.0f + std::exp(-x));
    case LutFunction::kHardSwish: return x * std::fmax(0.0f, std::fmin(1.0f, x / 6.0f + 0.5f));
    case LutFunction::kHardSigmoid: return std::fmax(0.0f, std::fmin(1.0f, params.alpha * x + params.beta));
    case LutFunction::kTanh: return std::tanh(x);
    case LutFunction::kGelu: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case LutFunction::kGeluTanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + std::tanh(inner));
    }
    case LutFunction::kLeakyRelu: return x >= 0.0f ? x : params.alpha * x;
    case LutFunction::kElu: return x >= 0.0f ? x : params.alpha * std::expm1(x);
    case LutFunction::kSoftplus: return x > 20.0f ? x : std::log1p(std::exp(x));
    case LutFunction::kExp: return std::exp(x);
    case LutFunction::kRelu: return std::fmax(x, 0.0f);
    case LutFunction::kIdentity: return x;
  }
  return x;
}

template <class TIn, class TOut>
void build_lut(LutFunction function, const LutFunctionParams& params, float input_scale, int32_t input_zero_point,
               float output_scale, int32_t output_zero_point, uint8_t table[256]) {
  const float lo = static_cast<float>(QTraits<TOut>::min - output_zero_point);
  const float hi = static_cast<float>(QTraits<TOut>::max - output_zero_point);
  for (int byte = 0; byte < 256; ++byte) {
    const TIn value = static_cast<TIn>(static_cast<uint8_t>(byte));
    const float x = static_cast<float>(static_cast<int32_t>(value) - input_zero_point) * input_scale;
    const float y = lut_function_value(function, params, x);
    const int32_t q = scalar::requantize_value(y / output_scale, lo, hi, output_zero_point);
    table[byte] = static_cast<uint8_t>(static_cast<TOut>(q));
  }
}
template void build_lut<int8_t, int8_t>(LutFunction, const LutFunctionParams&, float, int32_t, float, int32_t,
                                        uint8_t*);
template void build_lut<int8_t, uint8_t>(LutFunction, const LutFunctionParams&, float, int32_t, float, int32_t,
                                         uint8_t*);
template void build_lut<uint8_t, int8_t>(LutFunction, const LutFunctionParams&, float, int32_t, float, int32_t,
                                         uint8_t*);
template void build_lut<uint8_t, uint8_t>(LutFunction, const LutFunctionParams&, float, int32_t, float, int32_t,
                                          uint8_t*);

}  // namespace qdqrt::kernels
