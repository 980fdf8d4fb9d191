// LayerNorm over the rows of a row-major fp32 matrix (the last axis of a transformer's
// activations): y = (x - mean) / sqrt(variance + epsilon) * gamma + beta, with the population
// variance of the centred values (two passes: as stable as the reference's). The output is fp32,
// or 8-bit when a QuantizeLinear followed (y / y_scale rounded half to even, + zero-point,
// saturated): the next Linear's int8 input written in the same pass.
//
// Implementations: layer_norm_scalar.cpp (the plain reference the others are tested against),
// layer_norm_avx2.cpp and layer_norm_avx512skx.cpp (layer_norm_vector_impl.h at 8 and 16 lanes);
// kernels/dispatch.cpp picks one. Vector and scalar sums differ in order: |d| <= 1e-5 * (1 + |y|)
// in float, at most 1 code after quantization.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace qdqrt::kernels {

struct LayerNormParams {
  size_t rows = 0, columns = 0;
  float epsilon = 1e-5f;
  const float* gamma = nullptr;  // [columns]
  const float* beta = nullptr;   // [columns]
  // 8-bit output when y_scale > 0 (int8 when y_signed, else uint8); fp32 when 0.
  float y_scale = 0.0f;
  int32_t y_zero_point = 0;
  bool y_signed = true;
};

// Rows [0, params.rows) of x (row stride `columns`) into y (fp32 or 8-bit, same stride).
using LayerNormFn = void (*)(const LayerNormParams& params, const float* x, void* y);

#define QDQRT_DECLARE_LAYER_NORM(isa) \
  namespace isa {                     \
  void layer_norm(const LayerNormParams& params, const float* x, void* y); \
  }
QDQRT_DECLARE_LAYER_NORM(scalar)
QDQRT_DECLARE_LAYER_NORM(avx2)
QDQRT_DECLARE_LAYER_NORM(avx512skx)
#undef QDQRT_DECLARE_LAYER_NORM

}  // namespace qdqrt::kernels
