#include "kernels/qepilogue.h"

#include <algorithm>

namespace qdqrt::kernels {

const char* output_type_name(OutputType type) {
  switch (type) {
    case OutputType::kS8: return "s8";
    case OutputType::kU8: return "u8";
    case OutputType::kF32: return "f32";
  }
  return "unknown";
}

const char* activation_name(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kNone: return "none";
    case ActivationKind::kRelu: return "relu";
    case ActivationKind::kClip: return "clip";
    case ActivationKind::kLeakyRelu: return "leakyrelu";
  }
  return "unknown";
}

Epilogue make_epilogue(OutputType output_type, float output_scale, int32_t output_zero_point,
                       const Activation& activation, const Residual* residual, const PointwiseProgram* program) {
  Epilogue e;
  e.output_type = output_type;
  float scale = 1.0f;
  if (program != nullptr) {
    // Bias, residual and activation stay in real units; the program's result is quantized after.
    e.program = program;
    e.output_zero_point = output_type == OutputType::kF32 ? 0 : output_zero_point;
    e.program_inverse_scale = output_type == OutputType::kF32 ? 1.0f : 1.0f / output_scale;
    e.clamp_min = -std::numeric_limits<float>::infinity();
    e.clamp_max = std::numeric_limits<float>::infinity();
    if (output_type != OutputType::kF32) {
      e.saturate_min = (output_type == OutputType::kS8 ? -128.0f : 0.0f) - static_cast<float>(output_zero_point);
      e.saturate_max = (output_type == OutputType::kS8 ? 127.0f : 255.0f) - static_cast<float>(output_zero_point);
    }
  } else if (output_type == OutputType::kF32) {
    e.output_zero_point = 0;
    e.clamp_min = -std::numeric_limits<float>::infinity();
    e.clamp_max = std::numeric_limits<float>::infinity();
  } else {
    scale = output_scale;
    e.output_zero_point = output_zero_point;
    const float quant_min = output_type == OutputType::kS8 ? -128.0f : 0.0f;
    const float quant_max = output_type == OutputType::kS8 ? 127.0f : 255.0f;
    // Clamping to these integers before rounding equals saturating after rounding.
    e.clamp_min = quant_min - static_cast<float>(output_zero_point);
    e.clamp_max = quant_max - static_cast<float>(output_zero_point);
  }
  switch (activation.kind) {
    case ActivationKind::kNone: break;
    case ActivationKind::kRelu: e.clamp_min = std::max(e.clamp_min, 0.0f); break;
    case ActivationKind::kClip:
      e.clamp_min = std::max(e.clamp_min, activation.clip_min / scale);
      e.clamp_max = std::min(e.clamp_max, activation.clip_max / scale);
      break;
    case ActivationKind::kLeakyRelu:
      e.leaky = true;
      e.leaky_alpha = activation.leaky_alpha;
      break;
  }
  if (residual && residual->data) {
    e.residual = residual->data;
    e.residual_row_stride = residual->row_stride;
    e.residual_signed = residual->is_signed;
    e.residual_zero_point = residual->zero_point;
    e.residual_multiplier = residual->scale / scale;
  }
  return e;
}

}  // namespace qdqrt::kernels
