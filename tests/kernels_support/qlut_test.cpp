// Lookup-table activations: table construction checked against the float definition, and every
// apply variant (scalar, AVX2 vpshufb, AVX-512BW vpshufb, AVX-512 VBMI vpermi2b) bit-exact.
#include <cmath>

#include "kernels/lut/qlut.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

const LutFunction kAllFunctions[] = {
    LutFunction::kSigmoid, LutFunction::kSilu,      LutFunction::kHardSwish, LutFunction::kHardSigmoid,
    LutFunction::kTanh,    LutFunction::kGelu,      LutFunction::kGeluTanh,  LutFunction::kLeakyRelu,
    LutFunction::kElu,     LutFunction::kSoftplus,  LutFunction::kExp,       LutFunction::kRelu,
    LutFunction::kIdentity};

std::vector<NamedKernel<LutFn>> lut_variants() {
  std::vector<NamedKernel<LutFn>> variants;
  for (Isa isa : test_isas()) {
    for (bool allow_vbmi : {false, true}) {
      const NamedKernel<LutFn> kernel = lut_kernel(isa, allow_vbmi);
      bool seen = false;
      for (const auto& v : variants) seen |= v.fn == kernel.fn;
      if (!seen) variants.push_back(kernel);
    }
  }
  return variants;
}

class LutTester {
 public:
  LutTester& n(size_t value) { n_ = value; return *this; }
  LutTester& seed(uint32_t value) { seed_ = value; return *this; }
  LutTester& in_place(bool value) { in_place_ = value; return *this; }

  void test(const NamedKernel<LutFn>& kernel, const uint8_t* table) const {
    std::mt19937 rng(seed_);
    const std::vector<uint8_t> input = random_bytes<uint8_t>(rng, n_);
    std::vector<uint8_t> expected(n_);
    scalar::lut(n_, input.data(), expected.data(), table);
    Guarded<uint8_t> guarded_input(n_, placement_for(seed_));
    Guarded<uint8_t> output(n_, placement_for(seed_ + 1));
    guarded_input.copy_from(input);
    uint8_t* destination = in_place_ ? guarded_input.data() : output.data();
    kernel.fn(n_, guarded_input.data(), destination, table);
    const std::string description = std::string(kernel.name) + " n=" + std::to_string(n_) +
                                    " in_place=" + std::to_string(in_place_) + " seed=" + std::to_string(seed_);
    ASSERT_EQ(first_mismatch(expected.data(), destination, n_), "") << description;
    ASSERT_EQ(output.check_canaries(), "") << description;
    ASSERT_EQ(guarded_input.check_canaries(), "") << description;
  }

 private:
  size_t n_ = 1;
  uint32_t seed_ = 1;
  bool in_place_ = false;
};

TEST(Lut, EveryVariantMatchesScalarForEveryFunction) {
  uint32_t seed = 1;
  const auto variants = lut_variants();
  for (LutFunction function : kAllFunctions) {
    uint8_t table[256];
    build_lut<uint8_t, int8_t>(function, default_lut_params(function), 0.05f, 128, 0.02f, -5, table);
    for (const auto& kernel : variants) {
      for (size_t n : sweep_sizes()) {
        LutTester().n(n).seed(seed).in_place(seed % 5 == 0).test(kernel, table);
        ++seed;
      }
    }
  }
}

TEST(Lut, EveryVariantHandlesAllByteValuesWithRandomTable) {
  // A random table exercises every table position (activation tables are monotone-ish and would
  // hide a wrong nibble mixing in the vpshufb variants).
  std::mt19937 rng(42);
  const std::vector<uint8_t> table = random_bytes<uint8_t>(rng, 256);
  std::vector<uint8_t> input(256 * 3);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<uint8_t>(i * 7 + i / 256);
  for (const auto& kernel : lut_variants()) {
    std::vector<uint8_t> output(input.size());
    kernel.fn(input.size(), input.data(), output.data(), table.data());
    for (size_t i = 0; i < input.size(); ++i) {
      ASSERT_EQ(output[i], table[input[i]]) << kernel.name << " index " << i << " input " << int(input[i]);
    }
  }
}

// Each table entry is QuantizeLinear(f(DequantizeLinear(v))) computed independently (double f).
template <class TIn, class TOut>
void check_tables_against_double(int32_t input_zero_point, int32_t output_zero_point) {
  for (LutFunction function : kAllFunctions) {
    const LutFunctionParams params = default_lut_params(function);
    const float input_scale = 0.04f, output_scale = function == LutFunction::kExp ? 0.5f : 0.015f;
    uint8_t table[256];
    build_lut<TIn, TOut>(function, params, input_scale, input_zero_point, output_scale, output_zero_point, table);
    for (int byte = 0; byte < 256; ++byte) {
      const TIn value = static_cast<TIn>(static_cast<uint8_t>(byte));
      const double x = (static_cast<double>(value) - input_zero_point) * input_scale;
      double y = x;
      switch (function) {
        case LutFunction::kSigmoid: y = 1.0 / (1.0 + std::exp(-x)); break;
        case LutFunction::kSilu: y = x / (1.0 + std::exp(-x)); break;
        case LutFunction::kHardSwish: y = x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); break;
        case LutFunction::kHardSigmoid: y = std::clamp(0.2 * x + 0.5, 0.0, 1.0); break;
        case LutFunction::kTanh: y = std::tanh(x); break;
        case LutFunction::kGelu: y = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); break;
        case LutFunction::kGeluTanh:
          y = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
          break;
        case LutFunction::kLeakyRelu: y = x >= 0 ? x : 0.01 * x; break;
        case LutFunction::kElu: y = x >= 0 ? x : std::expm1(x); break;
        case LutFunction::kSoftplus: y = std::log1p(std::exp(x)); break;
        case LutFunction::kExp: y = std::exp(x); break;
        case LutFunction::kRelu: y = std::max(x, 0.0); break;
        case LutFunction::kIdentity: y = x; break;
      }
      const double q = std::clamp(std::nearbyint(y / output_scale) + output_zero_point, double(QTraits<TOut>::min),
                                  double(QTraits<TOut>::max));
      const TOut actual = static_cast<TOut>(table[byte]);
      ASSERT_LE(std::abs(q - actual), 1.0) << lut_function_name(function) << " byte " << byte;
    }
  }
}

TEST(Lut, TablesFollowQuantizedFunctionDefinition) {
  check_tables_against_double<int8_t, int8_t>(0, 0);
  check_tables_against_double<uint8_t, uint8_t>(128, 0);
  check_tables_against_double<uint8_t, int8_t>(255, -128);
  check_tables_against_double<int8_t, uint8_t>(-17, 37);
}

TEST(Lut, SigmoidTableKnownValues) {
  uint8_t table[256];
  // uint8 input around zp 128 with scale 0.1, output scale 1/256 zp 0 (ORT's QLinearSigmoid style).
  build_lut<uint8_t, uint8_t>(LutFunction::kSigmoid, {}, 0.1f, 128, 1.0f / 256.0f, 0, table);
  EXPECT_EQ(table[128], 128);  // sigmoid(0) = 0.5
  EXPECT_EQ(table[255], 255);  // sigmoid(12.7) * 256 = 255.99 -> saturates
  EXPECT_EQ(table[0], 0);      // sigmoid(-12.8) * 256 = 0.0007
  EXPECT_EQ(table[138], static_cast<uint8_t>(std::nearbyint(256.0 / (1.0 + std::exp(-1.0)))));
}

}  // namespace
}  // namespace qdqrt::kernels::testing
