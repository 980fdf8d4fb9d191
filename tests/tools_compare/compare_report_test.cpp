// qdqrt compare's measures on known arrays: SQNR, cosine, errors, fake quantization, clipping,
// the order, the table and the JSON.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "tools/compare_report.h"

namespace qdqrt::tools {
namespace {

TEST(CompareReport, ErrorStatsOnKnownArrays) {
  std::vector<float> reference = {1, -2, 3, -4};
  ErrorStats same = error_stats(reference, reference);
  EXPECT_TRUE(std::isinf(same.sqnr_db) && same.sqnr_db > 0);
  EXPECT_DOUBLE_EQ(same.cosine, 1.0);
  EXPECT_DOUBLE_EQ(same.max_abs_error, 0.0);
  // Noise 0.1 on every element: signal 30, noise 0.04 -> 10 log10(750) = 28.75 dB.
  std::vector<float> noisy = {1.1f, -2.1f, 3.1f, -4.1f};
  ErrorStats stats = error_stats(reference, noisy);
  EXPECT_NEAR(stats.sqnr_db, 10 * std::log10(30.0 / 0.04), 1e-4);
  EXPECT_NEAR(stats.max_abs_error, 0.1, 1e-6);
  EXPECT_NEAR(stats.mean_abs_error, 0.1, 1e-6);
  EXPECT_GT(stats.cosine, 0.999);
  std::vector<float> negated = {-1, 2, -3, 4};
  EXPECT_NEAR(error_stats(reference, negated).cosine, -1.0, 1e-12);
  std::vector<float> zeros = {0, 0, 0, 0};
  EXPECT_DOUBLE_EQ(error_stats(zeros, zeros).cosine, 1.0);
  EXPECT_DOUBLE_EQ(error_stats(reference, zeros).cosine, 0.0);
}

TEST(CompareReport, FakeQuantizationAndClipping) {
  QuantizedTensorReport int8;
  int8.scale = 0.5;
  EXPECT_DOUBLE_EQ(quantized_low(int8), -64.0);
  EXPECT_DOUBLE_EQ(quantized_high(int8), 63.5);
  EXPECT_FLOAT_EQ(fake_quantize(1.3f, int8), 1.5f);
  EXPECT_FLOAT_EQ(fake_quantize(0.25f, int8), 0.0f);  // half to even
  EXPECT_FLOAT_EQ(fake_quantize(100.0f, int8), 63.5f);
  QuantizedTensorReport uint8;
  uint8.scale = 1.0;
  uint8.zero_point = 128;
  uint8.is_unsigned = true;
  EXPECT_DOUBLE_EQ(quantized_low(uint8), -128.0);
  EXPECT_DOUBLE_EQ(quantized_high(uint8), 127.0);

  // A range too narrow: half the values clip, and the local SQNR says so.
  QuantizedTensorReport narrow;
  narrow.scale = 1.0 / 127;  // [-1.008, 1]
  std::vector<float> fp32 = {0.5f, -0.5f, 4.0f, -4.0f};
  measure_quantized_tensor(narrow, fp32, fp32);
  EXPECT_DOUBLE_EQ(narrow.clipped_fraction, 0.5);
  EXPECT_FLOAT_EQ(narrow.min, -4.0f);
  EXPECT_FLOAT_EQ(narrow.max, 4.0f);
  EXPECT_LT(narrow.local.sqnr_db, 5.0);
  EXPECT_TRUE(std::isinf(narrow.accumulated.sqnr_db));
  QuantizedTensorReport fitting;
  fitting.scale = 4.0 / 127;
  measure_quantized_tensor(fitting, fp32, fp32);
  EXPECT_DOUBLE_EQ(fitting.clipped_fraction, 0.0);
  EXPECT_GT(fitting.local.sqnr_db, 35.0);
}

TEST(CompareReport, WorstFirstTableAndJson) {
  CompareReport report;
  report.model = "m.onnx";
  report.reference = "r.onnx";
  report.samples = 4;
  for (double local : {30.0, 10.0, 20.0}) {
    QuantizedTensorReport tensor;
    tensor.tensor = fmt::format("t{}", static_cast<int>(local));
    tensor.producer = "Conv 'c'";
    tensor.scale = 0.1;
    tensor.local.sqnr_db = local;
    tensor.accumulated.sqnr_db = 40 - local;
    report.tensors.push_back(tensor);
  }
  sort_worst_first(report.tensors, CompareOrder::kLocal);
  EXPECT_EQ(report.tensors[0].tensor, "t10");
  EXPECT_EQ(report.tensors[2].tensor, "t30");
  std::string table = format_compare_table(report, 2);
  EXPECT_NE(table.find("local SQNR (dB)"), std::string::npos) << table;
  EXPECT_NE(table.find("t10 (Conv 'c') -> -\n"), std::string::npos) << table;
  EXPECT_EQ(table.find("t30"), std::string::npos) << table;
  EXPECT_NE(table.find("(1 more; --rows=0 shows all)"), std::string::npos) << table;
  sort_worst_first(report.tensors, CompareOrder::kAccumulated);
  EXPECT_EQ(report.tensors[0].tensor, "t30");
  nlohmann::json json = nlohmann::json::parse(compare_to_json(report).dump());
  EXPECT_EQ(json["tensors"].size(), 3u);
  EXPECT_EQ(json["tensors"][0]["local"]["sqnrDb"], 30.0);
  EXPECT_EQ(json["tensors"][0]["dtype"], "int8");
  EXPECT_EQ(json["samples"], 4);
}

}  // namespace
}  // namespace qdqrt::tools
