// The fused epilogue every INT8 kernel applies in registers to its int32 accumulators:
//
//   acc   = sum_k (a - a_zp) * (w - w_zp) + bias_int32          (exact int32)
//   y     = fma(float(acc), multiplier[n], float_bias[n])        (output units)
//   y     = fma(float(residual - residual_zp), residual_multiplier, y)   (optional)
//   y     = y < 0 ? y * leaky_alpha : y                          (optional LeakyRelu)
//   y     = min(max(y, clamp_min), clamp_max)                    (Relu/Clip and int8 saturation)
//   y     = program(y) * (1 / output_scale), clamped to the int8/uint8 range   (optional program)
//   out   = int8/uint8: round_half_to_even(y) + output_zero_point;   fp32: y
//
// Without a program y is in output units from the start (the multipliers below). With a pointwise
// program (kernels/pointwise/pointwise_program.h: SiLU, GELU, ... between the layer and its Q) the
// multipliers and bounds stay in real units, the program runs in registers, and the true division
// by the output scale is QuantizeLinear's.
// multiplier[n] = input_scale * weight_scale[n] / output_scale and float_bias = bias / output_scale
// live with the packed weights (known at build time); everything else is a runtime Epilogue.
// Every ISA performs exactly this sequence of float operations (fma, not mul+add), so all
// variants are bit-exact with the scalar kernels and the test oracle.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/pointwise/pointwise_program.h"

namespace qdqrt::kernels {

enum class OutputType { kS8, kU8, kF32 };
enum class ActivationKind { kNone, kRelu, kClip, kLeakyRelu };

const char* output_type_name(OutputType type);        // "s8", "u8", "f32"
const char* activation_name(ActivationKind kind);     // "none", "relu", "clip", "leakyrelu"

inline int output_element_size(OutputType type) { return type == OutputType::kF32 ? 4 : 1; }

// Activation in REAL units (before output quantization), as the ONNX graph states it.
struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float clip_min = -std::numeric_limits<float>::infinity();  // kClip
  float clip_max = std::numeric_limits<float>::infinity();   // kClip
  float leaky_alpha = 0.01f;                                  // kLeakyRelu
};

// Residual (the other input of a fused Add), an int8/uint8 tensor with its own quantization.
struct Residual {
  const void* data = nullptr;   // element (row m, column n) at data[m * row_stride + n]
  int64_t row_stride = 0;       // elements
  bool is_signed = true;
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// The runtime epilogue, already converted to output units.
struct Epilogue {
  OutputType output_type = OutputType::kS8;
  int32_t output_zero_point = 0;
  float clamp_min = -128.0f;  // merged activation bound and int8/uint8 saturation bound
  float clamp_max = 127.0f;
  bool leaky = false;
  float leaky_alpha = 0.0f;
  const void* residual = nullptr;
  int64_t residual_row_stride = 0;  // elements
  bool residual_signed = true;
  int32_t residual_zero_point = 0;
  float residual_multiplier = 0.0f;  // residual_scale / output_scale
  // Optional pointwise program, run on the clamped real-unit value; then (int8/uint8 outputs)
  // y * program_inverse_scale clamped to [saturate_min, saturate_max]. A multiplication, not
  // QuantizeLinear's division: the program's exp/erf are polynomials anyway (|error| ~1e-7), and
  // one division fewer per vector matters on the SiLU after every conv of an EfficientNet.
  const PointwiseProgram* program = nullptr;
  int64_t program_channel_offset = 0;  // added to the column: a grouped conv's group runs columns 0..
  float program_inverse_scale = 1.0f;
  float saturate_min = -128.0f;
  float saturate_max = 127.0f;
};

// output_scale/output_zero_point are ignored for kF32 (the output is in real units).
// With a program the multipliers the kernel was packed with must be in real units (output scale 1).
Epilogue make_epilogue(OutputType output_type, float output_scale, int32_t output_zero_point,
                       const Activation& activation = {}, const Residual* residual = nullptr,
                       const PointwiseProgram* program = nullptr);

// The scalar definition of the epilogue (used by the scalar kernels and the test oracle).
// Returns the float value before rounding/storing; `channel` is the output column (the program's
// per-channel constants).
inline float epilogue_value(int32_t acc, float multiplier, float float_bias, const Epilogue& e,
                            int32_t residual_value, int64_t channel) {
  float y = std::fma(static_cast<float>(acc), multiplier, float_bias);
  if (e.residual) {
    y = std::fma(static_cast<float>(residual_value - e.residual_zero_point), e.residual_multiplier, y);
  }
  if (e.leaky && y < 0.0f) y = y * e.leaky_alpha;
  // Same operand order as vmaxps/vminps (second operand wins on ties), so -0.0 matches too.
  y = y > e.clamp_min ? y : e.clamp_min;
  y = y < e.clamp_max ? y : e.clamp_max;
  if (e.program != nullptr) {
    y = run_pointwise_scalar(*e.program, y, e.program_channel_offset + channel);
    if (e.output_type != OutputType::kF32) {
      // The upper bound first: the packed int8 stores then need only it (the packs saturate
      // below; a NaN takes the upper bound in both).
      y = y * e.program_inverse_scale;
      y = y < e.saturate_max ? y : e.saturate_max;
      y = y > e.saturate_min ? y : e.saturate_min;
    }
  }
  return y;
}

// Writes element n of the output row.
inline void epilogue_store(float y, const Epilogue& e, void* row, int64_t n) {
  switch (e.output_type) {
    case OutputType::kF32: static_cast<float*>(row)[n] = y; break;
    case OutputType::kS8:
      static_cast<int8_t*>(row)[n] = static_cast<int8_t>(static_cast<int32_t>(std::nearbyint(y)) + e.output_zero_point);
      break;
    case OutputType::kU8:
      static_cast<uint8_t*>(row)[n] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(y)) + e.output_zero_point);
      break;
  }
}

inline int32_t residual_at(const Epilogue& e, int64_t m, int64_t n) {
  if (!e.residual) return 0;
  int64_t index = m * e.residual_row_stride + n;
  return e.residual_signed ? static_cast<const int8_t*>(e.residual)[index]
                           : static_cast<const uint8_t*>(e.residual)[index];
}

}  // namespace qdqrt::kernels
