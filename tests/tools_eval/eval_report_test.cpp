#include <gtest/gtest.h>

#include "tools/eval_report.h"

namespace qdqrt::tools {
namespace {

EvalSummary two_rows() {
  EvalSummary summary;
  summary.dataset = "fashion-mnist test <x&y>";
  summary.images = 100;
  summary.batch = 32;
  summary.threads = 2;
  summary.rows.push_back({"resnet_fp32", "a/resnet_fp32.onnx", "fp32", 100, 91.5, 99.75, 100.0, 0.8, 2000, "resnet_fp32"});
  summary.rows.push_back({"resnet_qdq", "a/resnet_qdq.onnx", "int8", 100, 91.25, 99.5, 98.0, 0.25, 6500, "resnet_fp32"});
  return summary;
}

TEST(EvalReport, TableHasHeaderAndOneRowPerModel) {
  std::string table = format_eval_table(two_rows());
  EXPECT_NE(table.find("model"), std::string::npos);
  EXPECT_NE(table.find("throughput b32 (img/s)"), std::string::npos);
  EXPECT_NE(table.find("resnet_fp32 | fp32      |     91.50 |     99.75 |        100.00 | itself      |"), std::string::npos) << table;
  EXPECT_NE(table.find("resnet_qdq  | int8      |     91.25 |     99.50 |         98.00 | resnet_fp32 |"), std::string::npos) << table;
  EXPECT_NE(table.find("0.250"), std::string::npos);
  EXPECT_NE(table.find("6500"), std::string::npos);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4);
}

TEST(EvalReport, JsonCarriesEveryColumn) {
  auto json = eval_to_json(two_rows());
  EXPECT_EQ(json["images"], 100);
  ASSERT_EQ(json["models"].size(), 2u);
  EXPECT_EQ(json["models"][1]["model"], "resnet_qdq");
  EXPECT_EQ(json["models"][1]["precision"], "int8");
  EXPECT_DOUBLE_EQ(json["models"][1]["top1"].get<double>(), 91.25);
  EXPECT_DOUBLE_EQ(json["models"][1]["agreement"].get<double>(), 98.0);
  EXPECT_EQ(json["models"][1]["agreementWith"], "resnet_fp32");
  EXPECT_DOUBLE_EQ(json["models"][1]["latencyMedianB1Ms"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(json["models"][1]["throughputImgPerS"].get<double>(), 6500);
}

TEST(EvalReport, NiceTicks) {
  std::vector<double> unit = linear_ticks(0, 1, 5);  // step 0.2
  ASSERT_EQ(unit.size(), 6u);
  EXPECT_NEAR(unit[3], 0.6, 1e-12);
  std::vector<double> ticks = linear_ticks(88.3, 92.1, 5);
  ASSERT_EQ(ticks.size(), 4u);  // step 1: 89, 90, 91, 92
  EXPECT_DOUBLE_EQ(ticks.front(), 89);
  EXPECT_DOUBLE_EQ(ticks.back(), 92);
}

TEST(EvalReport, SvgHasPointsLabelsAxesAndEscapes) {
  std::string svg = eval_plot_svg(two_rows());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("Top-1 accuracy vs latency"), std::string::npos);
  EXPECT_NE(svg.find("top-1 accuracy (%)"), std::string::npos);
  EXPECT_NE(svg.find("resnet_fp32 (fp32, 91.50%)"), std::string::npos);
  EXPECT_NE(svg.find("resnet_qdq (int8, 91.25%)"), std::string::npos);
  EXPECT_NE(svg.find("&lt;x&amp;y&gt;"), std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 2u);
  // 0.25 .. 0.8 ms is less than 10x: linear axis.
  EXPECT_EQ(svg.find("log scale"), std::string::npos);
  EvalSummary wide = two_rows();
  wide.rows[0].latency_median_ms = 12;
  EXPECT_NE(eval_plot_svg(wide).find("log scale"), std::string::npos);
}

}  // namespace
}  // namespace qdqrt::tools
