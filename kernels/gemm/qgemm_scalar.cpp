// Portable GEMM over the packed layout (4 rows x 16 columns, k groups of 4): the fallback when no
// AVX2 is present and a second, layout-aware check next to the unpacked-weights oracle (kernels/oracle.h).
#include "kernels/gemm/qgemm_driver_inl.h"

namespace qdqrt::kernels::internal {
namespace {

struct ScalarTraits {
  static constexpr int kMr = 4;
  static constexpr int kNr = 16;
  static constexpr int kKGroup = 4;
  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    PortableCopy::copy_flip(dst, src, count, flip);
  }
  using PanelElement = uint8_t;

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    uint32_t acc[MR][kNr] = {};
    for (int g = 0; g < k_groups; ++g) {
      for (int r = 0; r < MR; ++r) {
        const uint8_t* a_group = a + r * a_stride + 4 * g;
        for (int n = 0; n < kNr; ++n) {
          const int8_t* w = b + n * 4;
          int32_t sum = a_group[0] * w[0] + a_group[1] * w[1] + a_group[2] * w[2] + a_group[3] * w[3];
          acc[r][n] += static_cast<uint32_t>(sum);
        }
      }
      b += kNr * 4;
    }
    const Epilogue& e = *t.epilogue;
    for (int r = 0; r < MR; ++r) {
      char* row = t.c + r * t.c_row_bytes;
      for (int n = 0; n < t.n_valid; ++n) {
        uint32_t total = acc[r][n] + static_cast<uint32_t>(t.bias[n]);
        if (t.row_term) total += static_cast<uint32_t>(t.row_term[r]);
        int32_t residual = 0;
        if (t.residual) {
          const char* residual_row = t.residual + r * t.residual_row_bytes;
          residual = e.residual_signed ? static_cast<int32_t>(reinterpret_cast<const int8_t*>(residual_row)[n])
                                       : static_cast<int32_t>(reinterpret_cast<const uint8_t*>(residual_row)[n]);
        }
        float y = epilogue_value(static_cast<int32_t>(total), t.multiplier[n], t.float_bias[n], e, residual, t.column0 + n);
        epilogue_store(y, e, row, n);
      }
    }
  }
};

}  // namespace

void gemm_run_scalar(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                     const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<ScalarTraits>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

}  // namespace qdqrt::kernels::internal
