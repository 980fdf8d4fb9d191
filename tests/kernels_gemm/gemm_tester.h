// GemmTester: fluent description of one GEMM case, checked on one or every supported ISA against
// the unpacked-weights oracle of kernels/oracle.h (int8 outputs bit-equal), with guarded buffers.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/dispatch.h"
#include "kernels/gemm/qgemm.h"
#include "kernels/gemm/qgemm_amx.h"
#include "kernels/oracle.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {

class GemmTester {
 public:
  GemmTester& m(int value) { m_ = value; return *this; }
  GemmTester& n(int value) { n_ = value; return *this; }
  GemmTester& k(int value) { k_ = value; return *this; }
  GemmTester& a_stride(int64_t value) { a_stride_ = value; return *this; }
  GemmTester& c_stride(int64_t value) { c_stride_ = value; return *this; }
  GemmTester& quant(const QuantSettings& value) { quant_ = value; return *this; }
  GemmTester& seed(uint32_t value) { seed_ = value; return *this; }
  // Run as this many row ranges (and two column ranges when n allows), like threads would.
  GemmTester& split(int parts) { split_ = parts; return *this; }
  // B given as a MatMul [K][N] operand instead of [N][K] weights.
  GemmTester& b_k_major(bool value) { b_k_major_ = value; return *this; }
  // Call the AMX kernel with these tiles directly (not through dispatch) on the avx512vnni
  // packing of the same width; test(isa) then ignores isa. Failures print the tile configuration.
  GemmTester& amx_tiles(internal::AmxTiles tiles) { amx_tiles_ = tiles; return *this; }
  // Repacks the weights with k padded to the k group only, as AMX-INT8 engine files packed before
  // the whole-tile-step padding hold them (the AMX kernel then copies the k tail).
  GemmTester& k_group_padding(bool value) { k_group_padding_ = value; return *this; }
  // Multiplies the output scale: a tiny factor makes |accumulator * multiplier| exceed 2^30, so
  // PackedGemm::bounded is false and the kernels must clamp before converting to int32.
  GemmTester& output_scale_factor(float value) { output_scale_factor_ = value; return *this; }
  // Checks PackedGemm::bounded after packing (the integer-clamp epilogue is reached or not).
  GemmTester& expect_bounded(bool value) { expect_bounded_ = value; return *this; }

  std::string describe(Isa isa) const {
    std::ostringstream s;
    s << "GEMM m=" << m_ << " n=" << n_ << " k=" << k_ << " a_stride=" << a_stride() << " c_stride=" << c_stride()
      << (b_k_major_ ? " B[K][N]" : " W[N][K]") << " split=" << split_ << " seed=" << seed_ << " isa=" << isa_name(isa)
      << " output_scale_factor=" << output_scale_factor_ << "; " << quant_.describe();
    return s.str();
  }

  // Every register tile of the ISA (kernels/dispatch.h), or the one packing picks when nr = 0.
  void test(Isa isa) const {
    if (amx_tiles_) {
      for (int nr : {64, 16}) test(Isa::kAvx512Vnni, nr);
      return;
    }
    for (const internal::GemmImplementation& tile : gemm_implementations(isa)) test(isa, tile.nr);
  }

  void test(Isa isa, int nr) const {
    std::string context = describe(isa) + " nr=" + std::to_string(nr);
    if (amx_tiles_) {
      context += std::string(" AMX kernel called directly, ") +
                 (*amx_tiles_ == internal::AmxTiles::kHardware ? "real tiles" : "emulated tiles") +
                 ", tile config: " + internal::describe_tile_config(internal::amx_kernel_tile_config());
    }
    std::mt19937 rng(seed_);
    const QuantSettings& q = quant_;
    const int64_t lda = a_stride(), ldc = c_stride();
    const int out_size = output_element_size(q.output_type);

    GuardedBuffer a((m_ - 1) * lda + k_);
    fill_bytes(rng, a.data(), a.size());
    std::vector<uint8_t> weights(static_cast<size_t>(n_) * k_);
    fill_bytes(rng, weights.data(), weights.size());
    const CaseQuantization quantization(rng, n_, k_, output_scale_factor_);

    GemmWeightsDesc desc;
    desc.n = n_;
    desc.k = k_;
    desc.weights = weights.data();
    desc.stride_n = b_k_major_ ? 1 : k_;
    desc.stride_k = b_k_major_ ? n_ : 1;
    quantization.describe(q, desc);

    const int64_t residual_stride = n_ + 3;
    GuardedBuffer residual((m_ - 1) * residual_stride + n_);
    fill_bytes(rng, residual.data(), residual.size());
    const Residual residual_desc = quantization.residual(q, residual, residual_stride);
    const Epilogue epilogue = quantization.epilogue(q, residual_desc);

    const size_t c_bytes = ((m_ - 1) * ldc + n_) * out_size;
    GuardedBuffer expected(c_bytes), actual(c_bytes);
    std::memset(expected.data(), 0x5A, c_bytes);
    std::memset(actual.data(), 0x5A, c_bytes);
    oracle_gemm(desc, a.data(), lda, m_, expected.data(), ldc, epilogue);

    const PackedGemm packed = k_group_padding_ ? with_k_group_padding(pack_gemm(desc, isa, nr))
                                               : pack_gemm(desc, isa, nr);
    ASSERT_EQ(packed.isa, isa) << context;
    ASSERT_EQ(packed.nr, nr) << context;
    if (expect_bounded_) {
      ASSERT_EQ(packed.bounded, *expect_bounded_) << context;
    }
    GemmArgs args{a.data(), lda, actual.data(), ldc};
    const int n_split = n_ > packed.nr && split_ > 1 ? (n_ / 2) / packed.nr * packed.nr : 0;
    auto run_gemm = [&](const PackedGemm& packed, const GemmArgs& args, const Epilogue& epilogue, int m_begin,
                        int m_end, int n_begin, int n_end) {
      if (!amx_tiles_) return kernels::run_gemm(packed, args, epilogue, m_begin, m_end, n_begin, n_end);
      internal::ASource source;
      source.data = args.a;
      source.row_stride = args.a_row_stride;
      internal::gemm_run_amx(*amx_tiles_, packed, source, args.c, args.c_row_stride, epilogue, m_begin, m_end,
                             n_begin, n_end);
    };
    for (int part = 0; part < split_; ++part) {
      const int m_begin = static_cast<int>(static_cast<int64_t>(m_) * part / split_);
      const int m_end = static_cast<int>(static_cast<int64_t>(m_) * (part + 1) / split_);
      if (n_split > 0) {
        run_gemm(packed, args, epilogue, m_begin, m_end, 0, n_split);
        run_gemm(packed, args, epilogue, m_begin, m_end, n_split, n_);
      } else {
        run_gemm(packed, args, epilogue, m_begin, m_end, 0, n_);
      }
    }
    expect_outputs_equal(q.output_type, expected.data(), actual.data(), m_, n_, ldc, context);
    for (int r = 0; r + 1 < m_; ++r) {
      for (int64_t byte = n_ * out_size; byte < ldc * out_size; ++byte) {
        ASSERT_EQ(actual.data()[r * ldc * out_size + byte], 0x5A) << context << ": wrote into the row gap of row " << r;
      }
    }
    EXPECT_TRUE(actual.canary_intact()) << context << ": wrote before the output";
  }

  void test_all_isas() const {
    for (Isa isa : supported_isas()) test(isa);
  }

 private:
  int64_t a_stride() const { return a_stride_ ? a_stride_ : k_; }
  int64_t c_stride() const { return c_stride_ ? c_stride_ : n_; }

  int m_ = 1, n_ = 1, k_ = 1;
  int64_t a_stride_ = 0, c_stride_ = 0;
  QuantSettings quant_;
  uint32_t seed_ = 1;
  int split_ = 1;
  bool b_k_major_ = false;
  std::optional<internal::AmxTiles> amx_tiles_;
  bool k_group_padding_ = false;

  // The same weights in the layout [n / nr][k / k_group][nr][k_group] of k padded to k_group only.
  static PackedGemm with_k_group_padding(PackedGemm packed) {
    const int k_padded = (packed.k + packed.k_group - 1) / packed.k_group * packed.k_group;
    auto index = [&](int64_t padded, int64_t n, int64_t kk) {
      return packed_weight_index(padded, packed.nr, packed.k_group, n, kk) * packed.element_size;
    };
    AlignedBuffer<int8_t> data(static_cast<size_t>(packed.n_padded) * k_padded * packed.element_size);
    for (int64_t n = 0; n < packed.n_padded; ++n) {
      for (int64_t kk = 0; kk < k_padded; ++kk) {
        std::memcpy(data.data() + index(k_padded, n, kk), packed.data.data() + index(packed.k_padded, n, kk),
                    static_cast<size_t>(packed.element_size));
      }
    }
    packed.data = std::move(data);
    packed.k_padded = k_padded;
    return packed;
  }
  float output_scale_factor_ = 1.0f;
  std::optional<bool> expect_bounded_;
};

}  // namespace qdqrt::kernels::testing
