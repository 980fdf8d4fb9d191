// Shared pieces of the kernel testers: the ISAs to run, seeded data, output comparison.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/pointwise/pointwise_program.h"
#include "kernels/qepilogue.h"
#include "guarded_buffer.h"

namespace qdqrt::kernels::testing {

// Every ISA this machine can run, lowest first.
inline std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAmxInt8}) {
    if (isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

inline void fill_bytes(std::mt19937& rng, uint8_t* data, size_t count) {
  std::uniform_int_distribution<int> dist(0, 255);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<uint8_t>(dist(rng));
}

// Quantization and epilogue settings shared by the GEMM and convolution testers.
struct QuantSettings {
  bool input_signed = true;
  int32_t input_zero_point = 0;
  bool weights_signed = true;
  int32_t weight_zero_point = 0;
  bool per_channel = true;
  bool bias_int32 = true;
  bool bias_float = false;
  OutputType output_type = OutputType::kS8;
  int32_t output_zero_point = 0;
  Activation activation;
  bool residual = false;
  bool residual_signed = true;
  int32_t residual_zero_point = 0;
  const PointwiseProgram* program = nullptr;  // the accumulators then stay in real units

  std::string describe() const {
    std::ostringstream s;
    s << "input " << (input_signed ? "s8" : "u8") << " zp " << input_zero_point << ", weights "
      << (weights_signed ? "s8" : "u8") << " zp " << weight_zero_point << (per_channel ? " per-channel" : " per-tensor")
      << ", bias" << (bias_int32 ? " int32" : "") << (bias_float ? " float" : "") << ", output "
      << output_type_name(output_type) << " zp " << output_zero_point << ", activation "
      << activation_name(activation.kind) << ", residual "
      << (residual ? (std::string(residual_signed ? "s8" : "u8") + " zp " + std::to_string(residual_zero_point))
                   : "off")
      << ", pointwise " << (program ? pointwise_program_summary(*program) : std::string("off"));
    return s.str();
  }
};

// Every output type x activation (none/relu/clip/leakyrelu) x residual (off/s8/u8) combination.
inline std::vector<QuantSettings> output_epilogue_sweep() {
  const Activation activations[] = {
      Activation{},
      Activation{ActivationKind::kRelu},
      Activation{ActivationKind::kClip, -20.5f, 33.25f},
      Activation{ActivationKind::kLeakyRelu, 0, 0, 0.1f},
  };
  std::vector<QuantSettings> sweep;
  for (OutputType type : {OutputType::kS8, OutputType::kU8, OutputType::kF32}) {
    for (const Activation& activation : activations) {
      for (int residual = 0; residual < 3; ++residual) {
        QuantSettings q;
        q.output_type = type;
        q.output_zero_point = type == OutputType::kU8 ? 120 : type == OutputType::kS8 ? -9 : 0;
        q.activation = activation;
        q.residual = residual > 0;
        q.residual_signed = residual == 1;
        q.residual_zero_point = residual == 1 ? 5 : 130;
        sweep.push_back(q);
      }
    }
  }
  return sweep;
}

// The random quantization of one GEMM or convolution case, drawn after its input and weights:
// weight scales and int32 and float biases per output channel, and an output scale that spreads
// outputs over (and sometimes beyond) the int8 range for `reduction` products per output.
struct CaseQuantization {
  static constexpr float kInputScale = 0.02f;
  static constexpr float kWeightBase = 0.01f;
  std::vector<float> weight_scales;
  std::vector<int32_t> bias_int32;
  std::vector<float> bias_float;
  float output_scale = 1.0f;

  CaseQuantization(std::mt19937& rng, int channels, int64_t reduction, float output_scale_factor = 1.0f)
      : weight_scales(static_cast<size_t>(channels)),
        bias_int32(static_cast<size_t>(channels)),
        bias_float(static_cast<size_t>(channels)) {
    std::uniform_real_distribution<float> unit(0.5f, 1.5f);
    for (float& scale : weight_scales) scale = kWeightBase * unit(rng);
    std::uniform_int_distribution<int32_t> bias_dist(-20000, 20000);
    for (int32_t& bias : bias_int32) bias = bias_dist(rng);
    // Typical |accumulator| in real units.
    const float real_spread = std::sqrt(static_cast<float>(reduction)) * 74.0f * 73.0f * kInputScale * kWeightBase;
    output_scale = real_spread / 40.0f * output_scale_factor;
    std::uniform_real_distribution<float> signed_unit(-1.0f, 1.0f);
    for (float& bias : bias_float) bias = signed_unit(rng) * real_spread;
  }

  // The quantization fields of a GemmWeightsDesc or ConvWeightsDesc.
  template <class WeightsDesc>
  void describe(const QuantSettings& q, WeightsDesc& desc) const {
    desc.weights_signed = q.weights_signed;
    desc.weight_zero_point = q.weight_zero_point;
    desc.weight_scales = weight_scales.data();
    desc.per_channel = q.per_channel;
    desc.bias_int32 = q.bias_int32 ? bias_int32.data() : nullptr;
    desc.bias_float = q.bias_float ? bias_float.data() : nullptr;
    desc.input_scale = kInputScale;
    desc.input_zero_point = q.input_zero_point;
    desc.input_signed = q.input_signed;
    desc.output_scale = q.output_type == OutputType::kF32 || q.program ? 1.0f : output_scale;
  }

  // The residual operand of the settings (its scale 0.7 output quanta) over `residual`.
  Residual residual(const QuantSettings& q, const GuardedBuffer& buffer, int64_t row_stride) const {
    return Residual{buffer.data(), row_stride, q.residual_signed, output_scale * 0.7f, q.residual_zero_point};
  }

  // The case's epilogue; the settings give clip bounds in output quanta.
  Epilogue epilogue(const QuantSettings& q, const Residual& residual) const {
    Activation activation = q.activation;
    activation.clip_min *= output_scale;
    activation.clip_max *= output_scale;
    return make_epilogue(q.output_type, output_scale, q.output_zero_point, activation, q.residual ? &residual : nullptr,
                         q.program);
  }
};

// Compares `count` outputs of a row-strided output; int8 outputs must be bit-equal, fp32 within
// 1e-5 relative (in practice they are bit-equal too: every ISA uses the same fma sequence).
inline void expect_outputs_equal(OutputType type, const uint8_t* expected, const uint8_t* actual, int rows, int columns,
                                 int64_t row_stride, const std::string& context) {
  int failures = 0;
  for (int r = 0; r < rows && failures < 5; ++r) {
    for (int c = 0; c < columns && failures < 5; ++c) {
      const int64_t i = r * row_stride + c;
      if (type == OutputType::kF32) {
        const float e = reinterpret_cast<const float*>(expected)[i];
        const float a = reinterpret_cast<const float*>(actual)[i];
        const float tolerance = 1e-5f * std::max(1.0f, std::fabs(e));
        if (!(std::fabs(e - a) <= tolerance)) {
          ADD_FAILURE() << context << ": row " << r << " column " << c << ": expected " << e << ", got " << a;
          ++failures;
        }
      } else if (expected[i] != actual[i]) {
        const int e = type == OutputType::kS8 ? static_cast<int8_t>(expected[i]) : expected[i];
        const int a = type == OutputType::kS8 ? static_cast<int8_t>(actual[i]) : actual[i];
        ADD_FAILURE() << context << ": row " << r << " column " << c << ": expected " << e << ", got " << a;
        ++failures;
      }
    }
  }
}

}  // namespace qdqrt::kernels::testing
