// Softmax + QuantizeLinear kernels (kernels/softmax/softmax_quantize.h): SoftmaxQuantizeTester
// runs every ISA's kernel on seeded rows. Against the scalar kernel (the definition) the codes are
// bit-exact; against a double-precision softmax quantized with ONNX's QuantizeLinear they are
// within one code (vexp's ~2 ulp and float sums move a value across a rounding boundary rarely).
#include "kernels/softmax/softmax_quantize.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/dispatch.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

class SoftmaxQuantizeTester {
 public:
  SoftmaxQuantizeTester(size_t rows, size_t columns) : rows_(rows), columns_(columns) {}
  SoftmaxQuantizeTester& output(float scale, int32_t zero_point, bool is_signed) {
    params_.y_scale = scale;
    params_.y_zero_point = zero_point;
    params_.y_signed = is_signed;
    return *this;
  }
  // Scores spread over [-spread, spread] (attention logits are a few units; masks reach -1e4).
  SoftmaxQuantizeTester& spread(float spread) {
    spread_ = spread;
    return *this;
  }

  void test(Isa isa, uint32_t seed) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> values(-spread_, spread_);
    std::vector<float> x(rows_ * columns_);
    for (float& v : x) v = values(generator);
    params_.rows = rows_;
    params_.columns = columns_;
    std::vector<uint8_t> out(x.size(), 0xAA), expected(x.size(), 0x55);
    softmax_quantize_kernel(isa).fn(params_, x.data(), out.data());
    scalar::softmax_quantize(params_, x.data(), expected.data());
    const std::vector<double> oracle_codes = oracle(x);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(out[i], expected[i]) << isa_name(isa) << " index " << i << " of " << rows_ << "x" << columns_;
      const double actual = params_.y_signed ? static_cast<int8_t>(out[i]) : out[i];
      ASSERT_LE(std::abs(actual - oracle_codes[i]), 1.0) << isa_name(isa) << " index " << i;
    }
  }

 private:
  std::vector<double> oracle(const std::vector<float>& x) const {
    std::vector<double> codes(x.size());
    const double low = params_.y_signed ? -128 : 0, high = params_.y_signed ? 127 : 255;
    for (size_t row = 0; row < rows_; ++row) {
      const float* in = x.data() + row * columns_;
      const double max_value = *std::max_element(in, in + columns_);
      double sum = 0.0;
      for (size_t c = 0; c < columns_; ++c) sum += std::exp(in[c] - max_value);
      for (size_t c = 0; c < columns_; ++c) {
        const double probability = std::exp(in[c] - max_value) / sum;
        codes[row * columns_ + c] =
            std::clamp(std::nearbyint(probability / params_.y_scale) + params_.y_zero_point, low, high);
      }
    }
    return codes;
  }

  size_t rows_, columns_;
  float spread_ = 4.0f;
  SoftmaxQuantizeParams params_;
};

TEST(SoftmaxQuantizeKernels, Int8BitExactWithTheScalarDefinitionOnEveryIsa) {
  for (Isa isa : test_isas()) {
    // 17: a ViT's 16 patches + class token; 128: a BERT sequence; 1100: past the stack buffer.
    for (size_t columns : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 128, 197, 1100}) {
      SoftmaxQuantizeTester(6, columns).output(1.0f / 127.0f, 0, true).test(isa, static_cast<uint32_t>(columns));
      SoftmaxQuantizeTester(3, columns).output(1.0f / 255.0f, -128, true).test(isa, 7);
    }
  }
}

TEST(SoftmaxQuantizeKernels, Uint8AndSaturationOnEveryIsa) {
  for (Isa isa : test_isas()) {
    for (size_t columns : {2, 16, 17, 40}) {
      SoftmaxQuantizeTester(4, columns).output(1.0f / 255.0f, 0, false).test(isa, 21);
      // A coarse scale saturates the large probabilities at 127 / 255.
      SoftmaxQuantizeTester(4, columns).output(0.002f, 0, true).spread(8.0f).test(isa, 22);
      SoftmaxQuantizeTester(4, columns).output(0.002f, 10, false).spread(8.0f).test(isa, 23);
    }
  }
}

TEST(SoftmaxQuantizeKernels, MaskedScoresOnEveryIsa) {
  // Large negative logits (additive attention masks): their exponentials underflow to ~0.
  for (Isa isa : test_isas()) {
    for (size_t columns : {5, 17, 128}) {
      SoftmaxQuantizeTester(4, columns).output(1.0f / 127.0f, 0, true).spread(1e4f).test(isa, 31);
    }
  }
}

TEST(SoftmaxQuantizeKernels, DispatchNamesTheKernel) {
  EXPECT_STREQ(softmax_quantize_kernel(Isa::kScalar).name, "f32-qs8-softmax-scalar");
  for (Isa isa : test_isas()) EXPECT_NE(softmax_quantize_kernel(isa).fn, nullptr);
}

}  // namespace
}  // namespace qdqrt::kernels::testing
