// LayerNorm kernels (kernels/norm/layer_norm.h): LayerNormTester runs every ISA's kernel on seeded
// rows against a double-precision oracle (fp32 output within 1e-5 * (1 + |y|), 8-bit output
// within one code) and against the scalar kernel (the plain reference).
#include <cmath>
#include <random>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/norm/layer_norm.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

class LayerNormTester {
 public:
  LayerNormTester(size_t rows, size_t columns) : rows_(rows), columns_(columns) {}
  LayerNormTester& quantized(float scale, int32_t zero_point, bool is_signed) {
    params_.y_scale = scale;
    params_.y_zero_point = zero_point;
    params_.y_signed = is_signed;
    return *this;
  }

  void test(Isa isa, uint32_t seed) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> values(-3.0f, 5.0f), affine(-1.5f, 1.5f);
    std::vector<float> x(rows_ * columns_), gamma(columns_), beta(columns_);
    for (float& v : x) v = values(generator);
    for (size_t c = 0; c < columns_; ++c) {
      gamma[c] = affine(generator);
      beta[c] = affine(generator);
    }
    params_.rows = rows_;
    params_.columns = columns_;
    params_.epsilon = 1e-5f;
    params_.gamma = gamma.data();
    params_.beta = beta.data();
    const std::vector<double> expected = oracle(x, gamma, beta);
    const bool is_quantized = params_.y_scale != 0.0f;
    std::vector<float> float_out(rows_ * columns_), scalar_float_out(rows_ * columns_);
    std::vector<uint8_t> code_out(rows_ * columns_), scalar_code_out(rows_ * columns_);
    void* out = is_quantized ? static_cast<void*>(code_out.data()) : float_out.data();
    void* scalar_out = is_quantized ? static_cast<void*>(scalar_code_out.data()) : scalar_float_out.data();
    layer_norm_kernel(isa).fn(params_, x.data(), out);
    scalar::layer_norm(params_, x.data(), scalar_out);
    for (size_t i = 0; i < x.size(); ++i) {
      if (!is_quantized) {
        ASSERT_LE(std::abs(float_out[i] - expected[i]), 1e-5 * (1.0 + std::abs(expected[i])))
            << isa_name(isa) << " index " << i << " of " << rows_ << "x" << columns_;
        ASSERT_LE(std::abs(float_out[i] - scalar_float_out[i]), 1e-5 * (1.0 + std::abs(expected[i]))) << i;
        continue;
      }
      const double low = params_.y_signed ? -128 : 0, high = params_.y_signed ? 127 : 255;
      const double code = std::clamp(std::nearbyint(expected[i] / params_.y_scale) + params_.y_zero_point, low, high);
      const double actual = params_.y_signed ? static_cast<int8_t>(code_out[i]) : code_out[i];
      const double scalar = params_.y_signed ? static_cast<int8_t>(scalar_code_out[i]) : scalar_code_out[i];
      ASSERT_LE(std::abs(actual - code), 1.0) << isa_name(isa) << " index " << i;
      ASSERT_LE(std::abs(actual - scalar), 1.0) << isa_name(isa) << " index " << i;
    }
  }

 private:
  std::vector<double> oracle(const std::vector<float>& x, const std::vector<float>& gamma,
                             const std::vector<float>& beta) const {
    std::vector<double> y(x.size());
    for (size_t row = 0; row < rows_; ++row) {
      double sum = 0.0, squares = 0.0;
      for (size_t c = 0; c < columns_; ++c) sum += x[row * columns_ + c];
      const double mean = sum / static_cast<double>(columns_);
      for (size_t c = 0; c < columns_; ++c) squares += std::pow(x[row * columns_ + c] - mean, 2);
      const double inverse = 1.0 / std::sqrt(squares / static_cast<double>(columns_) + params_.epsilon);
      for (size_t c = 0; c < columns_; ++c) {
        y[row * columns_ + c] = (x[row * columns_ + c] - mean) * inverse * gamma[c] + beta[c];
      }
    }
    return y;
  }

  size_t rows_, columns_;
  LayerNormParams params_;
};

TEST(LayerNormKernels, Fp32OutputMatchesTheOracleOnEveryIsa) {
  for (Isa isa : test_isas()) {
    for (size_t columns : {1, 7, 16, 17, 64, 100, 768}) LayerNormTester(5, columns).test(isa, static_cast<uint32_t>(columns));
  }
}

TEST(LayerNormKernels, Int8AndUint8OutputWithinOneCodeOnEveryIsa) {
  for (Isa isa : test_isas()) {
    for (size_t columns : {3, 16, 64, 768}) {
      LayerNormTester(4, columns).quantized(0.02f, 0, true).test(isa, 11);  // saturates the tails
      LayerNormTester(4, columns).quantized(0.05f, 3, true).test(isa, 12);
      LayerNormTester(4, columns).quantized(0.03f, 128, false).test(isa, 13);
    }
  }
}

TEST(LayerNormKernels, DispatchNamesTheKernel) {
  EXPECT_STREQ(layer_norm_kernel(Isa::kScalar).name, "f32-layernorm-scalar");
  for (Isa isa : test_isas()) EXPECT_NE(layer_norm_kernel(isa).fn, nullptr);
}

}  // namespace
}  // namespace qdqrt::kernels::testing
