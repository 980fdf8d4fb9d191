// 256-entry lookup tables for quantized unary activations between Q and DQ (ONNX Runtime's
// QLinearLookup idea): every possible 8-bit input maps to one 8-bit output, so Sigmoid, SiLU,
// HardSwish, Tanh, GELU ... cost one table lookup per element.
//
// Table entry for input byte v (the raw bit pattern; int8 inputs index by uint8_t(v)):
//   x = float(int32(v) - input_zp) * input_scale          (DequantizeLinear, fp32)
//   y = f(x)                                               (fp32 via <cmath>, see lut_function_value)
//   q = round_half_to_even(clamp(y / output_scale, qmin - output_zp, qmax - output_zp)) + output_zp
// The apply kernels are dtype-agnostic byte gathers (x8-lut); all variants are bit-exact.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/qtypes.h"

namespace qdqrt::kernels {

enum class LutFunction {
  kSigmoid,      // 1 / (1 + exp(-x))
  kSilu,         // x * sigmoid(x)  (a.k.a. Swish; Mul(x, Sigmoid(x)) when both sides share Q)
  kHardSwish,    // x * max(0, min(1, x / 6 + 0.5))  (ONNX HardSwish)
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kTanh,
  kGelu,         // 0.5 * x * (1 + erf(x / sqrt(2)))
  kGeluTanh,     // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
  kLeakyRelu,    // x >= 0 ? x : alpha * x
  kElu,          // x >= 0 ? x : alpha * (exp(x) - 1)
  kSoftplus,     // log(1 + exp(x))
  kExp,
  kRelu,
  kIdentity,     // pure requantization through the table
};
const char* lut_function_name(LutFunction function);

struct LutFunctionParams {
  float alpha = 0.0f;  // HardSigmoid (0.2), LeakyRelu (0.01), Elu (1.0)
  float beta = 0.0f;   // HardSigmoid (0.5)
};
// ONNX defaults for the function's attributes.
LutFunctionParams default_lut_params(LutFunction function);

// f(x) in fp32 (exposed so tests and the float fallback agree on the definition).
float lut_function_value(LutFunction function, const LutFunctionParams& params, float x);

// Builds table[256]. TIn/TOut: int8_t or uint8_t.
template <class TIn, class TOut>
void build_lut(LutFunction function, const LutFunctionParams& params, float input_scale, int32_t input_zero_point,
               float output_scale, int32_t output_zero_point, uint8_t table[256]);

// output[i] = table[input[i]], i < n. In-place (output == input) is allowed.
using LutFn = void (*)(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table);

namespace scalar {
void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table);
}
namespace avx2 {
void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table);  // 16x vpshufb
}
namespace avx512skx {
void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table);  // AVX-512BW 16x vpshufb
}
namespace avx512vbmi {
void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table);  // 2x vpermi2b
}

}  // namespace qdqrt::kernels
