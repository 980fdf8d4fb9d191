// AMX-INT8 GEMM and convolution, bit-exact against the oracle. The one kernel (kernels/gemm/
// qgemm_amx_inl.h) runs here over two tile layers: the emulated one on every AVX-512 machine, so
// it is tested without AMX, and the real instructions only where CPUID, XCR0 and Linux allow AMX
// (skipped with the missing feature named elsewhere). The real kernel is called directly, not
// through dispatch, so a wrong kernel fails loudly with its tile configuration printed.
#include <cstddef>
#include <cstring>

#include "conv_tester.h"
#include "gemm_tester.h"
#include "kernels/gemm/qgemm_amx_tiles_inl.h"

namespace qdqrt::kernels::testing {
namespace {

using internal::AmxTiles;

// Emulated AMX through dispatch (or not) for the scope of a test; restores the previous state
// (QDQRT_AMX_EMULATION=1 runs the whole binary emulated, as on an AMX machine).
class ScopedAmxEmulation {
 public:
  explicit ScopedAmxEmulation(bool enabled = true) : previous_(amx_emulation()) { set_amx_emulation(enabled); }
  ~ScopedAmxEmulation() { set_amx_emulation(previous_); }

 private:
  bool previous_;
};

const char* tiles_name(AmxTiles tiles) { return tiles == AmxTiles::kHardware ? "hardware" : "emulated"; }

// ---------------------------------------------------------------------------------------------
// The emulated tile layer against the instruction's definition.

TEST(AmxTileLayer, ConfigIsPalette1Layout) {
  EXPECT_EQ(offsetof(internal::AmxTileConfig, palette_id), 0u);
  EXPECT_EQ(offsetof(internal::AmxTileConfig, start_row), 1u);
  EXPECT_EQ(offsetof(internal::AmxTileConfig, colsb), 16u);
  EXPECT_EQ(offsetof(internal::AmxTileConfig, rows), 48u);
  const internal::AmxTileConfig config = internal::amx_kernel_tile_config();
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&config);
  EXPECT_EQ(bytes[0], 1);  // palette 1
  for (int tile = 0; tile < 8; ++tile) {
    EXPECT_EQ(bytes[16 + 2 * tile], 64) << "tile " << tile;  // colsb, little-endian uint16
    EXPECT_EQ(bytes[17 + 2 * tile], 0) << "tile " << tile;
    EXPECT_EQ(bytes[48 + tile], 16) << "tile " << tile;
  }
  for (int tile = 8; tile < 16; ++tile) EXPECT_EQ(bytes[48 + tile], 0) << "tile " << tile;
}

// tdpbusd: C[m][n] += sum_g sum_i u8 A[m][4g+i] * s8 B[g][4n+i], wrapping, on odd shapes.
TEST(AmxTileLayer, EmulatedDpbusdIsUnsignedBySignedInGroupsOfFour) {
  internal::AmxTileConfig config;
  config.palette_id = 1;
  const int rows = 3, groups = 5, columns = 7;
  config.rows[0] = rows, config.colsb[0] = 4 * columns;  // C
  config.rows[4] = rows, config.colsb[4] = 4 * groups;   // A
  config.rows[6] = groups, config.colsb[6] = 4 * columns;  // B
  std::mt19937 rng(5);
  uint8_t a[rows][4 * groups], b[groups][4 * columns];
  fill_bytes(rng, &a[0][0], sizeof(a));
  fill_bytes(rng, &b[0][0], sizeof(b));
  a[0][0] = 255, b[0][0] = 0x80;  // 255 * -128: unsigned times signed
  for (int g = 0; g < groups; ++g) {  // row 1, column 2 adds 20 * 255 * 127 to INT32_MAX
    for (int i = 0; i < 4; ++i) a[1][4 * g + i] = 255, b[g][4 * 2 + i] = 127;
  }
  int32_t c[rows][columns];
  for (int m = 0; m < rows; ++m) {
    for (int n = 0; n < columns; ++n) c[m][n] = m == 1 && n == 2 ? INT32_MAX : -1000 * m + n;  // one wraps
  }
  int32_t expected[rows][columns];
  for (int m = 0; m < rows; ++m) {
    for (int n = 0; n < columns; ++n) {
      uint32_t sum = static_cast<uint32_t>(c[m][n]);
      for (int g = 0; g < groups; ++g) {
        for (int i = 0; i < 4; ++i) sum += static_cast<uint32_t>(a[m][4 * g + i] * static_cast<int8_t>(b[g][4 * n + i]));
      }
      expected[m][n] = static_cast<int32_t>(sum);
    }
  }
  using Tiles = internal::EmulatedTiles;
  Tiles::load_config(config);
  Tiles::load<0>(c, sizeof(c[0]));
  Tiles::load<4>(a, sizeof(a[0]));
  Tiles::load<6>(b, sizeof(b[0]));
  Tiles::dpbusd<0, 4, 6>();
  int32_t result[rows][columns + 1];
  std::memset(result, 0x5A, sizeof(result));
  Tiles::store<0>(result, sizeof(result[0]));
  Tiles::release();
  for (int m = 0; m < rows; ++m) {
    for (int n = 0; n < columns; ++n) EXPECT_EQ(result[m][n], expected[m][n]) << "row " << m << " column " << n;
    EXPECT_EQ(result[m][columns], 0x5A5A5A5A) << "stored past colsb in row " << m;
  }
  EXPECT_LT(expected[1][2], 0) << "the INT32_MAX accumulator was meant to wrap";
}

void multiply_with_short_b_tile() {
  internal::AmxTileConfig config = internal::amx_kernel_tile_config();
  config.rows[6] = 8;  // B has 8 rows, A's 64 bytes are 16 k groups
  internal::EmulatedTiles::load_config(config);
  internal::EmulatedTiles::dpbusd<0, 4, 6>();
}

TEST(AmxTileLayerDeathTest, EmulatedShapeMismatchFaultsLikeTheHardware) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(multiply_with_short_b_tile(), "B rows differ from A's k groups");
  EXPECT_DEATH(internal::EmulatedTiles::zero<0>(), "before ldtilecfg");
}

// ---------------------------------------------------------------------------------------------
// The kernel, called directly with emulated and with real tiles.

class AmxGemm : public ::testing::TestWithParam<AmxTiles> {
 protected:
  void SetUp() override {
    if (!isa_supported(Isa::kAvx512Vnni)) {
      GTEST_SKIP() << "this CPU lacks AVX-512 VNNI, which the AMX kernels' epilogue (and their emulation) needs";
    }
    if (GetParam() == AmxTiles::kHardware && !amx_hardware_missing().empty()) {
      GTEST_SKIP() << "no AMX here (" << amx_hardware_missing()
                   << "): the real-instruction AMX kernels are tested only on machines with AMX-INT8; the "
                      "emulated-tile tests cover the same kernel code";
    }
  }
  GemmTester tester() const { return GemmTester().amx_tiles(GetParam()); }
};

TEST_P(AmxGemm, RowTailsAroundTheTwoTileRows) {
  for (int m : {1, 2, 5, 15, 16, 17, 31, 32, 33, 47, 48, 64, 65, 100}) {
    tester().m(m).n(70).k(37).seed(m).test(Isa::kAmxInt8);
  }
}

TEST_P(AmxGemm, ColumnTails) {
  for (int n : {1, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 129}) {
    tester().m(35).n(n).k(20).seed(n).test(Isa::kAmxInt8);
  }
}

TEST_P(AmxGemm, KTailsAroundTheSixtyFourByteTile) {
  for (int k : {1, 2, 3, 4, 5, 60, 63, 64, 65, 67, 127, 128, 129, 192, 257, 576}) {
    tester().m(33).n(80).k(k).seed(k).test(Isa::kAmxInt8);
  }
}

// Engine files packed before the AMX weights were padded to whole 64-byte steps hold k padded to
// the k group only: the kernel copies their k tail into zero-padded tiles.
TEST_P(AmxGemm, WeightsPaddedToTheKGroupOnly) {
  for (int k : {1, 5, 37, 60, 65, 150, 257, 520}) {
    tester().m(33).n(80).k(k).k_group_padding(true).seed(k).test(Isa::kAmxInt8);
  }
}

TEST_P(AmxGemm, ZeroPointsAndUnsignedWeights) {
  int seed = 0;
  for (int zp : {0, 128, 255, 37}) {
    QuantSettings q;
    q.input_signed = false;
    q.input_zero_point = zp;
    tester().m(20).n(67).k(45).quant(q).seed(++seed).test(Isa::kAmxInt8);
  }
  for (int zp : {-128, 127, -5}) {
    QuantSettings q;
    q.input_zero_point = zp;
    tester().m(20).n(67).k(45).quant(q).seed(++seed).test(Isa::kAmxInt8);
  }
  for (bool weights_signed : {true, false}) {
    QuantSettings q;
    q.weights_signed = weights_signed;
    q.weight_zero_point = weights_signed ? -7 : 103;
    q.input_signed = false;
    q.input_zero_point = 90;
    tester().m(19).n(40).k(70).quant(q).seed(++seed).test(Isa::kAmxInt8);
  }
}

TEST_P(AmxGemm, EpiloguesOutputTypesAndResidual) {
  int seed = 0;
  for (QuantSettings q : output_epilogue_sweep()) {
    q.per_channel = seed % 2 == 0;
    q.bias_float = seed % 3 == 0;
    tester().m(18).n(81).k(30).c_stride(90).quant(q).seed(++seed).test(Isa::kAmxInt8);
  }
  PointwiseProgram silu;
  silu.size = 1;
  silu.code[0] = {PointwiseOp::kSilu, 0, 0, 0};
  QuantSettings q;
  q.program = &silu;
  tester().m(21).n(50).k(40).quant(q).test(Isa::kAmxInt8);
}

// A row block's column tiles are multiplied one after another while the previous tile's epilogue
// runs from the other accumulator buffer: several tiles per row block (64- and 16-column), with
// row and k tails, through every epilogue path (packed rows, residuals, fp32, leaky, SiLU).
TEST_P(AmxGemm, ColumnTilesOfARowBlockThroughEveryEpilogue) {
  int seed = 100;
  PointwiseProgram silu;
  silu.size = 1;
  silu.code[0] = {PointwiseOp::kSilu, 0, 0, 0};
  for (const int n : {40, 200}) {  // the tester runs both widths: up to 13 tiles of 16, 4 of 64 (one partial)
    for (const int m : {13, 45}) {
      for (QuantSettings q : output_epilogue_sweep()) {
        q.per_channel = seed % 2 == 0;
        tester().m(m).n(n).k(m == 13 ? 136 : 520).c_stride(n + 3).quant(q).seed(++seed).test(Isa::kAmxInt8);
      }
      QuantSettings q;
      q.program = &silu;
      tester().m(m).n(n).k(150).quant(q).seed(++seed).test(Isa::kAmxInt8);
    }
  }
  // The one column tile of a deep row block is requantized during the next row block, whose panel
  // packing has replaced the row terms of a weight zero-point by then.
  for (const int m : {33, 70}) {
    for (const int k : {70, 520}) {
      QuantSettings q;
      q.weights_signed = false;
      q.weight_zero_point = 103;
      q.input_signed = false;
      q.input_zero_point = 90;
      tester().m(m).n(k == 70 ? 40 : 16).k(k).quant(q).seed(++seed).test(Isa::kAmxInt8);
    }
  }
}

// Deep panels (3x3 and 1x1 convolutions of 128..512 channels): k of 16 groups per step with and
// without a k tail, row tails, several column tiles, residual and SiLU epilogues.
TEST_P(AmxGemm, DeepPanels) {
  int seed = 200;
  for (const int k : {1025, 1088, 1100, 1536, 2049}) {
    for (const int m : {7, 40}) {
      QuantSettings q;
      q.residual = (seed % 2) == 0;
      tester().m(m).n(k == 1100 ? 200 : 70).k(k).quant(q).seed(++seed).test(Isa::kAmxInt8);
    }
  }
  PointwiseProgram silu;
  silu.size = 1;
  silu.code[0] = {PointwiseOp::kSilu, 0, 0, 0};
  QuantSettings q;
  q.program = &silu;
  q.output_type = OutputType::kF32;
  tester().m(33).n(90).k(1300).quant(q).seed(++seed).test(Isa::kAmxInt8);
}

TEST_P(AmxGemm, StridesSplitsAndMatMulOperands) {
  tester().m(40).n(33).k(21).a_stride(29).c_stride(41).test(Isa::kAmxInt8);
  for (int parts : {2, 3}) tester().m(70).n(200).k(50).split(parts).seed(parts).test(Isa::kAmxInt8);
  tester().m(17).n(77).k(23).b_k_major(true).test(Isa::kAmxInt8);
}

// Unsigned rows of a plain matrix with K a multiple of 4 are read in place (no panel): A ends at
// its last row (a guard page follows), so partial row tiles must not read past it.
TEST_P(AmxGemm, UnsignedRowsReadInPlace) {
  QuantSettings q;
  q.input_signed = false;
  q.input_zero_point = 7;
  int seed = 0;
  for (int k : {4, 20, 64, 128, 132}) {
    for (int m : {1, 5, 16, 17, 31, 33}) tester().m(m).n(40).k(k).quant(q).seed(++seed).test(Isa::kAmxInt8);
  }
}

TEST_P(AmxGemm, LargeKSpansSeveralColumnChunks) {
  tester().m(33).n(512).k(4608).test(Isa::kAmxInt8);
}

INSTANTIATE_TEST_SUITE_P(Tiles, AmxGemm, ::testing::Values(AmxTiles::kEmulated, AmxTiles::kHardware),
                         [](const ::testing::TestParamInfo<AmxTiles>& info) { return tiles_name(info.param); });

// ---------------------------------------------------------------------------------------------
// Detection, the self-check and dispatch.

TEST(AmxDetection, HardwareMachinesPassTheSelfCheckAndOthersSayWhy) {
  ScopedAmxEmulation real_cpu(false);  // detection is judged on the real CPU
  const std::string missing = amx_hardware_missing();
  if (!missing.empty()) {
    EXPECT_FALSE(isa_supported(Isa::kAmxInt8));
    EXPECT_EQ(amx_unavailable_reason(), missing);
    EXPECT_LT(detected_isa(), Isa::kAmxInt8);
    GTEST_SKIP() << "no AMX here: " << missing;
  }
  EXPECT_EQ(internal::amx_self_check(), "");
  EXPECT_EQ(amx_unavailable_reason(), "");
  EXPECT_TRUE(isa_supported(Isa::kAmxInt8));
  EXPECT_EQ(detected_isa(), Isa::kAmxInt8);
}

TEST(AmxDispatch, MaxIsaBelowAmxNeverPicksTheAmxKernels) {
  if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  ScopedAmxEmulation emulation;
  set_max_isa(std::nullopt);
  EXPECT_TRUE(isa_supported(Isa::kAmxInt8));
  EXPECT_EQ(detected_isa(), Isa::kAmxInt8);
  std::vector<uint8_t> weights(128 * 40, 3);
  const float scale = 0.1f;
  GemmWeightsDesc desc;
  desc.n = 128;
  desc.k = 40;
  desc.weights = weights.data();
  desc.stride_n = 40;
  desc.weight_scales = &scale;
  const PackedGemm amx = pack_gemm(desc, Isa::kAmxInt8);
  EXPECT_EQ(amx.isa, Isa::kAmxInt8);
  EXPECT_EQ(gemm_kernel_name(amx, false, 50), "qs8-qc8w-gemm-32x64c4-fp32-amxint8");
  EXPECT_EQ(gemm_kernel_name(amx, true, 50), "qs8-qc8w-igemm-32x64c4-fp32-amxint8");
  // Only the GEMM family has AMX kernels: the others run their AVX-512 variants at this level.
  EXPECT_EQ(depthwise_implementation(Isa::kAmxInt8).isa, Isa::kAvx512Vnni);
  EXPECT_STREQ(quantize_kernels<int8_t>(Isa::kAmxInt8).quantize.name, "f32-qs8-vcvt-avx512");
  set_max_isa(Isa::kAvx512Vnni);
  EXPECT_EQ(active_isa(), Isa::kAvx512Vnni);
  EXPECT_EQ(pack_gemm(desc).isa, Isa::kAvx512Vnni);
  set_max_isa(std::nullopt);
  EXPECT_EQ(active_isa(), Isa::kAmxInt8);
  EXPECT_EQ(pack_gemm(desc).isa, Isa::kAmxInt8);
  ScopedAmxEmulation real_cpu(false);
  if (!amx_hardware_missing().empty()) {
    EXPECT_EQ(usable_isa(Isa::kAmxInt8), Isa::kAvx512Vnni);
    EXPECT_EQ(pack_gemm(desc, Isa::kAmxInt8).isa, Isa::kAvx512Vnni) << "packing must not pick AMX without it";
  }
}

TEST(AmxDetection, SelfCheckPassesOnTheEmulatedTiles) {
  if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  EXPECT_EQ(internal::amx_self_check(AmxTiles::kEmulated), "");
}

// AMX-INT8 packs only products of more than one row whose depth fills its 64-byte tile steps: a
// multiple of 64, 512 and more, or 96 and more that fills three quarters of its steps (k is padded
// to whole steps) with at least 32 columns; the others get the avx512vnni tiles, and every other
// level is returned as asked.
TEST(AmxDispatch, ShapeDecidesWhetherAmxPays) {
  if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  ScopedAmxEmulation emulation;
  set_max_isa(std::nullopt);
  for (int64_t k : {1, 27, 32, 63, 80, 95, 130, 136, 140}) {
    EXPECT_EQ(gemm_isa_for_shape(Isa::kAmxInt8, 196, k, 64), Isa::kAvx512Vnni) << k;
  }
  for (int64_t k : {64, 96, 127, 128, 144, 160, 192, 240, 256, 480, 511, 512, 520, 1008, 4608}) {
    EXPECT_EQ(gemm_isa_for_shape(Isa::kAmxInt8, 196, k, 64), Isa::kAmxInt8) << k;
    EXPECT_EQ(gemm_isa_for_shape(Isa::kAmxInt8, 2, k, 32), Isa::kAmxInt8) << k;
    EXPECT_EQ(gemm_isa_for_shape(Isa::kAmxInt8, 1, k, 64), Isa::kAvx512Vnni) << "a GEMV runs VNNI, k " << k;
  }
  // A ragged depth with few columns stays on VNNI; a whole number of steps does not need columns.
  EXPECT_EQ(gemm_isa_for_shape(Isa::kAmxInt8, 196, 144, 24), Isa::kAvx512Vnni);
  EXPECT_EQ(gemm_isa_for_shape(Isa::kAmxInt8, 196, 128, 24), Isa::kAmxInt8);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512Vnni}) {
    EXPECT_EQ(gemm_isa_for_shape(isa, 196, 27, 64), isa);
    EXPECT_EQ(gemm_isa_for_shape(isa, 1, 256, 64), isa);
  }
  ScopedAmxEmulation no_amx(false);
  if (!amx_hardware_missing().empty()) {  // AMX not usable: the level is left to usable_isa
    EXPECT_EQ(gemm_isa_for_shape(Isa::kAmxInt8, 196, 27, 64), Isa::kAmxInt8);
  }
}

TEST(AmxDispatch, ParseAndName) {
  EXPECT_EQ(parse_isa("amxint8"), Isa::kAmxInt8);
  EXPECT_STREQ(isa_name(Isa::kAmxInt8), "amxint8");
}

// ---------------------------------------------------------------------------------------------
// GEMM and convolution through dispatch (run_gemm / run_conv) on the AMX level: emulated here,
// the real tiles on AMX machines (where the plain testers' ISA sweeps include amxint8 as well).

class AmxThroughDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
    ASSERT_TRUE(isa_supported(Isa::kAmxInt8)) << amx_unavailable_reason();
  }
  // Real tiles where the CPU has them, else emulated ones.
  ScopedAmxEmulation emulation_{!amx_hardware_missing().empty()};
};

TEST_F(AmxThroughDispatch, Gemm) {
  GemmTester().m(45).n(100).k(70).split(2).test(Isa::kAmxInt8);
  GemmTester().m(1).n(130).k(1000).test(Isa::kAmxInt8);  // GEMV: one row of a 16-row tile
}

TEST_F(AmxThroughDispatch, PointwiseConvIsAGemmOverPixels) {
  ConvTester().input_size(6, 7).channels(40, 70).kernel(1, 1).test(Isa::kAmxInt8);
  ConvTester().batch(2).input_size(3, 5).channels(16, 64).kernel(1, 1).pixel_stride_extra(3, 5).test(Isa::kAmxInt8);
  ConvTester().input_size(8, 9).channels(24, 40).kernel(1, 1).stride(2, 2).test(Isa::kAmxInt8);
}

TEST_F(AmxThroughDispatch, ImplicitGemmConv) {
  int seed = 0;
  for (int stride : {1, 2}) {
    for (int pad : {0, 1}) {
      ConvTester().batch(2).input_size(11, 10).channels(12, 67).kernel(3, 3).stride(stride, stride)
          .padding(pad, pad, pad, pad).seed(++seed).test(Isa::kAmxInt8);
    }
  }
  ConvTester().input_size(9, 9).channels(19, 21).kernel(3, 3).padding(1, 1, 1, 1).dilation(2, 2).test(Isa::kAmxInt8);
  ConvTester().input_size(28, 28).channels(3, 64).kernel(7, 7).stride(2, 2).padding(3, 3, 3, 3).test(Isa::kAmxInt8);
  ConvTester().input_size(7, 7).channels(64, 64).kernel(3, 3).padding(1, 1, 1, 1).split(2).test(Isa::kAmxInt8);
}

TEST_F(AmxThroughDispatch, GroupedAndDepthwiseConv) {
  ConvTester().input_size(8, 8).channels(32, 48).groups(4).kernel(3, 3).padding(1, 1, 1, 1).test(Isa::kAmxInt8);
  ConvTester().input_size(9, 9).channels(32, 32).groups(32).kernel(3, 3).padding(1, 1, 1, 1).test(Isa::kAmxInt8);
}

}  // namespace
}  // namespace qdqrt::kernels::testing
