// AMX-INT8 GEMM: the tile configuration, the dispatch entries (real or emulated tiles) and the
// self-check run before dispatch may choose AMX. Portable code: the kernels live in
// qgemm_amxint8.cpp (real tiles) and qgemm_amx_emulated_avx512vnni.cpp (emulated tiles).
#include "kernels/gemm/qgemm_amx.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/oracle.h"

namespace qdqrt::kernels::internal {

AmxTileConfig amx_kernel_tile_config() {
  AmxTileConfig config;
  config.palette_id = 1;
  for (int tile = 0; tile < 8; ++tile) {
    config.rows[tile] = kAmxTileRows;
    config.colsb[tile] = kAmxTileBytes;
  }
  return config;
}

std::string describe_tile_config(const AmxTileConfig& config) {
  std::ostringstream s;
  s << "palette " << static_cast<int>(config.palette_id) << ", start row " << static_cast<int>(config.start_row);
  for (int tile = 0; tile < 8; ++tile) {
    s << ", tmm" << tile << " " << static_cast<int>(config.rows[tile]) << "x" << config.colsb[tile] << "B";
  }
  return s.str();
}

void gemm_run_amx(AmxTiles tiles, const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                  const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  const bool wide = packed.nr == 64;
  if (tiles == AmxTiles::kHardware) {
    (wide ? gemm_run_amx_hardware_64 : gemm_run_amx_hardware_16)(packed, source, c, c_row_stride, epilogue, m_begin,
                                                                 m_end, n_begin, n_end);
  } else {
    (wide ? gemm_run_amx_emulated_64 : gemm_run_amx_emulated_16)(packed, source, c, c_row_stride, epilogue, m_begin,
                                                                 m_end, n_begin, n_end);
  }
}

void gemm_run_amxint8(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                      const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  gemm_run_amx(amx_emulation() ? AmxTiles::kEmulated : AmxTiles::kHardware, packed, source, c, c_row_stride,
               epilogue, m_begin, m_end, n_begin, n_end);
}

void gemm_run_amxint8_32x16(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                            const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  gemm_run_amxint8(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

namespace {

struct SelfCheckCase {
  int m, n, k, nr;
  bool input_signed;
  int32_t input_zero_point;
  OutputType output_type;
};

// One case against the oracle; "" when bit-exact.
std::string self_check_case(AmxTiles tiles, const SelfCheckCase& test, uint32_t seed) {
  uint32_t state = seed;
  auto next_byte = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<uint8_t>(state >> 24);
  };
  std::vector<uint8_t> a(static_cast<size_t>(test.m) * test.k), weights(static_cast<size_t>(test.n) * test.k);
  for (uint8_t& value : a) value = next_byte();
  for (uint8_t& value : weights) value = next_byte();
  std::vector<float> weight_scales(test.n);
  std::vector<int32_t> bias(test.n);
  for (int n = 0; n < test.n; ++n) {
    weight_scales[n] = 0.01f + 0.0001f * next_byte();
    bias[n] = (static_cast<int32_t>(next_byte()) - 128) * 97;
  }
  GemmWeightsDesc desc;
  desc.n = test.n;
  desc.k = test.k;
  desc.weights = weights.data();
  desc.stride_n = test.k;
  desc.weight_scales = weight_scales.data();
  desc.per_channel = true;
  desc.bias_int32 = bias.data();
  desc.input_scale = 0.02f;
  desc.input_signed = test.input_signed;
  desc.input_zero_point = test.input_zero_point;
  desc.output_scale = test.output_type == OutputType::kF32 ? 1.0f : 2.0f;
  const Epilogue epilogue = make_epilogue(test.output_type, desc.output_scale, 0);
  const size_t bytes = static_cast<size_t>(test.m) * test.n * output_element_size(test.output_type);
  std::vector<uint8_t> expected(bytes, 0x5A), actual(bytes, 0xA5);
  oracle_gemm(desc, a.data(), test.k, test.m, expected.data(), test.n, epilogue);
  // The avx512vnni packing of the same width is the AMX layout (qgemm_amx.h).
  const PackedGemm packed = pack_gemm(desc, Isa::kAvx512Vnni, test.nr);
  ASource source;
  source.data = a.data();
  source.row_stride = test.k;
  gemm_run_amx(tiles, packed, source, actual.data(), test.n, epilogue, 0, test.m, 0, test.n);
  const int element = output_element_size(test.output_type);
  for (size_t i = 0; i < bytes; ++i) {
    if (expected[i] == actual[i]) continue;
    const size_t index = i / element;
    std::ostringstream s;
    s << "m=" << test.m << " n=" << test.n << " k=" << test.k << " nr=" << test.nr << ": row " << index / test.n
      << " column " << index % test.n << " differs from the reference";
    return s.str();
  }
  return "";
}

}  // namespace

std::string amx_self_check(AmxTiles tiles) {
  const SelfCheckCase cases[] = {
      {37, 80, 150, 64, false, 77, OutputType::kF32},  // row, column and k tails
      {20, 40, 64, 16, true, -3, OutputType::kS8},
      {3, 64, 7, 64, true, 0, OutputType::kS8},
  };
  uint32_t seed = 1;
  for (const SelfCheckCase& test : cases) {
    std::string failure = self_check_case(tiles, test, seed++);
    if (!failure.empty()) return failure;
  }
  return "";
}

}  // namespace qdqrt::kernels::internal
