// Tester of the BF16 GEMM (kernels/bf16/bf16_gemm.h): the AVX512_BF16 kernel against the scalar
// reference, EXACTLY (same bits), with random data, K and N tails, strided rows, a residual and a
// clamp, and the work split into row and column ranges the way the engine's threads split it. The
// reference itself is checked against a sum in double of the bf16-rounded operands. The AMX-BF16
// kernel (where the CPU and OS allow it) sums in the tile unit's own order: it is held to the
// reference within fp32 summation error, |difference| <= 2 k 2^-24 sum |a w| + 2^-22 |value|.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/aligned_buffer.h"
#include "kernels/bf16/bf16_gemm.h"

namespace qdqrt::kernels::testing {

class Bf16GemmTester {
 public:
  Bf16GemmTester& m(int value) { m_ = value; return *this; }
  Bf16GemmTester& k(int value) { k_ = value; return *this; }
  Bf16GemmTester& n(int value) { n_ = value; return *this; }
  // Floats between A rows (and output rows) beyond k (n).
  Bf16GemmTester& row_padding(int a, int c) { a_extra_ = a, c_extra_ = c; return *this; }
  Bf16GemmTester& transposed_weights(bool value) { transposed_ = value; return *this; }
  Bf16GemmTester& bias(bool value) { bias_ = value; return *this; }
  Bf16GemmTester& residual(bool value) { residual_ = value; return *this; }
  Bf16GemmTester& clamp(float low, float high) { min_ = low, max_ = high; return *this; }
  // Split rows at `row_split` and columns at the panel boundary below `column_split` (0: none).
  Bf16GemmTester& split(int row_split, int column_split) { row_split_ = row_split, column_split_ = column_split; return *this; }
  // Every 7th A value a denormal or a tiny value whose bf16 rounding is a denormal (read as zero).
  Bf16GemmTester& denormal_inputs(bool value) { denormals_ = value; return *this; }
  Bf16GemmTester& seed(uint32_t value) { seed_ = value; return *this; }

  void test() const {
    std::ostringstream shape;
    shape << "m " << m_ << " k " << k_ << " n " << n_ << ", row padding " << a_extra_ << "/" << c_extra_
          << (transposed_ ? ", W [N][K]" : ", W [K][N]") << ", bias " << bias_ << ", residual " << residual_
          << ", clamp [" << min_ << ", " << max_ << "], split " << row_split_ << "/" << column_split_ << ", seed "
          << seed_;
    SCOPED_TRACE(shape.str());
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> values(-1.0f, 1.0f);
    const int64_t a_stride = k_ + a_extra_, c_stride = n_ + c_extra_;
    std::vector<float> a(static_cast<size_t>(m_ * a_stride)), w(static_cast<size_t>(k_) * n_), bias(n_),
        residual(static_cast<size_t>(m_ * c_stride));
    for (float& value : a) value = values(rng);
    if (denormals_) {
      for (size_t i = 0; i < a.size(); i += 7) a[i] = (i % 14 == 0 ? 1e-39f : -1.17e-38f) * (1.0f + values(rng) / 4);
    }
    for (float& value : w) value = values(rng);
    for (float& value : bias) value = values(rng);
    for (float& value : residual) value = values(rng);

    Bf16GemmWeightsDesc desc;
    desc.n = n_;
    desc.k = k_;
    desc.weights = w.data();
    desc.stride_k = transposed_ ? 1 : n_;
    desc.stride_n = transposed_ ? k_ : 1;
    desc.bias = bias_ ? bias.data() : nullptr;
    AlignedBuffer<uint16_t> packed(static_cast<size_t>(packed_bf16_gemm_elements(n_, k_)));
    AlignedBuffer<float> packed_bias(static_cast<size_t>(bf16_gemm_padded_n(n_)));
    pack_bf16_gemm(desc, packed.data(), packed_bias.data());
    const Bf16GemmWeights weights{n_, k_, packed.data(), packed_bias.data()};
    Bf16GemmEpilogue epilogue;
    epilogue.min = min_;
    epilogue.max = max_;
    epilogue.residual = residual_ ? residual.data() : nullptr;
    epilogue.residual_row_stride = c_stride;

    const std::vector<float> reference = run(Bf16GemmVariant::kScalar, weights, a, epilogue);
    std::vector<double> magnitudes(reference.size(), 0.0);
    // The reference is a GEMM of the bf16-rounded operands: within fp32 summation error of one in
    // double (denormal inputs count as zero).
    for (int row = 0; row < m_; ++row) {
      for (int column = 0; column < n_; ++column) {
        double sum = 0.0, magnitude = 0.0;
        for (int depth = 0; depth < k_; ++depth) {
          const double product =
              static_cast<double>(float_from_bf16(bf16_from_float(a[static_cast<size_t>(row * a_stride + depth)]))) *
              float_from_bf16(bf16_from_float(w[static_cast<size_t>(depth * desc.stride_k + column * desc.stride_n)]));
          sum += product;
          magnitude += std::fabs(product);
        }
        double expected = sum + (bias_ ? bias[column] : 0.0f) + (residual_ ? residual[row * c_stride + column] : 0.0f);
        expected = std::min<double>(std::max<double>(expected, min_), max_);
        const float got = reference[static_cast<size_t>(row * c_stride + column)];
        magnitudes[static_cast<size_t>(row * c_stride + column)] = magnitude;
        ASSERT_NEAR(got, expected, 1e-6 * (magnitude + 4) * (k_ + 4))
            << "reference at row " << row << " column " << column;
      }
    }
    if (bf16_amx_usable()) {
      const std::vector<float> amx = run(Bf16GemmVariant::kAmxBf16, weights, a, epilogue);
      for (int row = 0; row < m_; ++row) {
        for (int column = 0; column < n_; ++column) {
          const size_t i = static_cast<size_t>(row * c_stride + column);
          const double bound = 2.0 * (k_ + 1) * std::ldexp(magnitudes[i], -24) + std::ldexp(std::fabs(reference[i]), -22);
          ASSERT_NEAR(amx[i], reference[i], bound) << "amxbf16 at row " << row << " column " << column;
        }
      }
    }
    if (!cpu_has_avx512bf16()) return;  // the caller skips with a message
    const std::vector<float> vector = run(Bf16GemmVariant::kAvx512Bf16, weights, a, epilogue);
    for (size_t i = 0; i < vector.size(); ++i) {
      uint32_t got, expected;
      std::memcpy(&got, &vector[i], 4);
      std::memcpy(&expected, &reference[i], 4);
      ASSERT_EQ(got, expected) << "row " << i / c_stride << " column " << i % c_stride << ": avx512bf16 " << vector[i]
                               << ", reference " << reference[i];
    }
  }

 private:
  // The output (padding between rows kept at a marker that must survive) over the split.
  std::vector<float> run(Bf16GemmVariant variant, const Bf16GemmWeights& weights, const std::vector<float>& a,
                         const Bf16GemmEpilogue& epilogue) const {
    const int64_t a_stride = k_ + a_extra_, c_stride = n_ + c_extra_;
    std::vector<float> c(static_cast<size_t>(m_ * c_stride), 12345.0f);
    AlignedBuffer<uint8_t> scratch(static_cast<size_t>(bf16_gemm_scratch_bytes(k_)));
    std::memset(scratch.data(), 0xFF, scratch.size());  // NaN bf16 pairs: stale scratch must not reach an output
    const int row_split = row_split_ > 0 && row_split_ < m_ ? row_split_ : m_;
    const int column_split =
        column_split_ > 0 ? std::min(n_, column_split_ / kBf16GemmNr * kBf16GemmNr) : n_;
    for (auto [row_begin, row_end] : {std::pair{0, row_split}, std::pair{row_split, m_}}) {
      for (auto [column_begin, column_end] : {std::pair{0, column_split}, std::pair{column_split, n_}}) {
        if (row_begin >= row_end || column_begin >= column_end) continue;
        run_bf16_gemm(variant, weights, a.data(), a_stride, c.data(), c_stride, epilogue, row_begin, row_end,
                      column_begin, column_end, scratch.data());
      }
    }
    for (int row = 0; row < m_; ++row) {
      for (int extra = 0; extra < c_extra_; ++extra) {
        EXPECT_EQ(c[static_cast<size_t>(row * c_stride + n_ + extra)], 12345.0f) << "row padding written, row " << row;
      }
    }
    return c;
  }

  int m_ = 1, k_ = 1, n_ = 1;
  int a_extra_ = 0, c_extra_ = 0;
  bool transposed_ = false, bias_ = true, residual_ = false, denormals_ = false;
  float min_ = -std::numeric_limits<float>::infinity(), max_ = std::numeric_limits<float>::infinity();
  int row_split_ = 0, column_split_ = 0;
  uint32_t seed_ = 1;
};

}  // namespace qdqrt::kernels::testing
