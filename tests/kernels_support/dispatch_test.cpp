// dispatch (supporting kernels): the ISA limit (set_max_isa / QDQRT_MAX_ISA) changes what is selected, and
// names follow the <dtype>-<op>-<isa> scheme.
#include <string>

#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(SupportDispatch, NamesEncodeDtypeOpAndIsa) {
  EXPECT_STREQ(qbinary_kernels<int8_t>(Isa::kScalar).add.name, "qs8-vadd-minmax-scalar");
  EXPECT_STREQ(qbinary_kernels<uint8_t>(Isa::kAvx2).mul_scalar.name, "qu8-vmulc-minmax-avx2");
  EXPECT_STREQ(qbinary_kernels<uint8_t>(Isa::kAvxVnni).add.name, "qu8-vadd-minmax-avx2");
  EXPECT_STREQ(quantize_kernels<int8_t>(Isa::kAvx512Vnni).quantize.name, "f32-qs8-vcvt-avx512");
  EXPECT_STREQ(quantize_kernels<uint8_t>(Isa::kAvx2).dequantize_channels.name, "qu8-f32-vcvt-qc-avx2");
  EXPECT_STREQ(qpool_kernels<int8_t>(Isa::kAvx512Vnni).global_avgpool.name, "qs8-gavgpool-nhwc-minmax-avx512");
  EXPECT_STREQ(lut_kernel(Isa::kScalar).name, "x8-lut-scalar");
  EXPECT_STREQ(lut_kernel(Isa::kAvx2).name, "x8-lut-avx2");
  EXPECT_STREQ(lut_kernel(Isa::kAvx512Vnni, false).name, "x8-lut-avx512bw");
  EXPECT_STREQ(fp32_kernels(Isa::kAvx2).gemm.name, "f32-gemm-eigen-avx2");
  // The same request returns the same (interned) string.
  EXPECT_EQ(qbinary_kernels<int8_t>(Isa::kScalar).add.name, qbinary_kernels<int8_t>(Isa::kScalar).add.name);
}

TEST(SupportDispatch, MaxIsaLimitsTheDefaultSelection) {
  set_max_isa(Isa::kScalar);
  EXPECT_TRUE(ends_with(qbinary_kernels<int8_t>().add.name, "-scalar"));
  EXPECT_STREQ(lut_kernel().name, "x8-lut-scalar");
  EXPECT_EQ(quantize_kernels<uint8_t>().quantize.fn, &scalar::quantize<uint8_t>);
  if (isa_supported(Isa::kAvx2)) {
    set_max_isa(Isa::kAvx2);
    EXPECT_TRUE(ends_with(qpool_kernels<uint8_t>().maxpool.name, "-avx2"));
    EXPECT_STREQ(lut_kernel().name, "x8-lut-avx2");  // VBMI is never used below the AVX-512 level
    EXPECT_FALSE(avx512vbmi_usable());
  }
  if (isa_supported(Isa::kAvx512Vnni)) {
    set_max_isa(Isa::kAvx512Vnni);
    EXPECT_TRUE(ends_with(qpool_kernels<uint8_t>().maxpool.name, "-avx512"));
    EXPECT_STREQ(lut_kernel().name, cpu_has_avx512vbmi() ? "x8-lut-avx512vbmi" : "x8-lut-avx512bw");
  }
  set_max_isa(std::nullopt);
}

// The ISAs are not a chain (Zen 4/5 guests have AVX-512 VNNI but not AVX-VNNI): a limit picks the
// best ISA the CPU really has at or below it, never one it lacks.
TEST(SupportDispatch, MaxIsaNeverSelectsAnIsaTheCpuLacks) {
  for (Isa limit : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAmxInt8}) {
    set_max_isa(limit);
    const Isa active = active_isa();
    EXPECT_TRUE(isa_supported(active)) << "limit " << isa_name(limit) << " selected " << isa_name(active);
    EXPECT_LE(static_cast<int>(active), static_cast<int>(limit));
    EXPECT_TRUE(isa_supported(usable_isa(limit)));
  }
  set_max_isa(std::nullopt);
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  EXPECT_EQ(detected_isa(), best_supported_up_to(Isa::kAmxInt8));
}

// One visible skip per ISA this CPU lacks, so a run says which kernels it did not test.
class IsaPresence : public ::testing::TestWithParam<Isa> {};
TEST_P(IsaPresence, KernelsOfThisIsaAreTestedHere) {
  if (!isa_supported(GetParam())) {
    const std::string amx_note = GetParam() == Isa::kAmxInt8
                                     ? " (" + amx_unavailable_reason() + "; AmxGemm.*/emulated test the AMX kernel "
                                                                         "code on emulated tiles)"
                                     : "";
    GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam()) << ": its kernels are not tested on this machine"
                 << amx_note;
  }
  EXPECT_EQ(best_supported_up_to(GetParam()), GetParam());
}
INSTANTIATE_TEST_SUITE_P(Isas, IsaPresence,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAmxInt8),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace qdqrt::kernels::testing
