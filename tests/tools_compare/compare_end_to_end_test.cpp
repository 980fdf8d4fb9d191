// qdqrt compare in-process: on a small model written by the test (one quantized Conv whose input
// range is too narrow: compare must rank that tensor first with clipping) and on the shipped
// EfficientNet-style Q/DQ model with Fashion-MNIST images (the INT8 engine gives what the
// quantized reference run gives; every quantized activation is reported).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "parser/onnx_writer.h"
#include "tests/optimizer_passes/pass_test_util.h"
#include "tools/compare_command.h"
#include "tools/datasets.h"

namespace qdqrt::tools {
namespace {

// x (random in [-1, 1)) -> Q/DQ at scale 1/127 (fits) -> Conv -> Relu -> Q/DQ at scale 0.001 (far too
// narrow for the conv's output) -> y.
const char* kNarrowModel = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,2,4,4] x) => (float[N,3,4,4] y)
  <float s_in = {0.007874}, int8 zp = {0}, float s_out = {0.001},
   float[3,2,1,1] w = {0.5, -1.0, 1.5, 0.25, -0.75, 2.0}>
  {
    xq = QuantizeLinear(x, s_in, zp)
    xd = DequantizeLinear(xq, s_in, zp)
    c = Conv(xd, w)
    r = Relu(c)
    rq = QuantizeLinear(r, s_out, zp)
    y = DequantizeLinear(rq, s_out, zp)
  })";

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("qdqrt_compare_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(CompareTest, NarrowRangeRanksFirstWithClipping) {
  std::string model = (dir_ / "narrow.onnx").string();
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(kNarrowModel), model).is_ok());
  CompareOptions options;
  options.onnx_path = model;
  options.shapes = {{"x", {8, 2, 4, 4}}};
  options.json_path = (dir_ / "report.json").string();
  std::ostringstream out;
  auto outcome = run_compare(options, out);
  ASSERT_TRUE(std::holds_alternative<CompareReport>(outcome)) << std::get<RunError>(outcome).status.to_string();
  const CompareReport& report = std::get<CompareReport>(outcome);
  ASSERT_EQ(report.tensors.size(), 2u) << out.str();
  EXPECT_EQ(report.tensors[0].tensor, "r");
  EXPECT_EQ(report.tensors[0].producer, "Relu 'Relu_3'") << out.str();
  EXPECT_GT(report.tensors[0].clipped_fraction, 0.3);
  EXPECT_LT(report.tensors[0].local.sqnr_db, 10.0);
  EXPECT_EQ(report.tensors[0].readers, std::vector<std::string>{}) << "y is a graph output; nothing reads it";
  EXPECT_EQ(report.tensors[1].tensor, "x");
  EXPECT_EQ(report.tensors[1].readers, std::vector<std::string>{"Conv_2"});
  EXPECT_EQ(report.tensors[1].producer, "graph input");
  EXPECT_DOUBLE_EQ(report.tensors[1].clipped_fraction, 0.0);
  EXPECT_GT(report.tensors[1].local.sqnr_db, 30.0);
  // The input's quantization is the first error: the local and the accumulated error are the same.
  EXPECT_NEAR(report.tensors[1].local.sqnr_db, report.tensors[1].accumulated.sqnr_db, 1e-9);
  EXPECT_EQ(report.samples, 8);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_GE(report.outputs[0].engine_max_abs_diff, 0.0);
  EXPECT_LE(report.outputs[0].engine_max_abs_diff, 0.0011);  // at most one step of the output scale
  EXPECT_NE(out.str().find("=== Quantized tensors (2, worst first by local SQNR) ==="), std::string::npos) << out.str();
  EXPECT_TRUE(std::filesystem::exists(options.json_path));
}

TEST_F(CompareTest, ShippedModelOnImages) {
  if (!std::filesystem::exists(std::string(kDefaultFashionMnistDir))) GTEST_SKIP() << "no Fashion-MNIST";
  CompareOptions options;
  options.onnx_path = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_efficientnet_qdq.onnx";
  options.data_spec = "fashion-mnist:test";  // preprocessing from the model's metadata
  options.samples = 32;
  options.threads = 2;
  std::ostringstream out;
  auto outcome = run_compare(options, out);
  ASSERT_TRUE(std::holds_alternative<CompareReport>(outcome)) << std::get<RunError>(outcome).status.to_string();
  const CompareReport& report = std::get<CompareReport>(outcome);
  EXPECT_EQ(report.samples, 32);
  EXPECT_GE(report.tensors.size(), 20u);
  for (size_t i = 1; i < report.tensors.size(); ++i) {
    EXPECT_LE(report.tensors[i - 1].local.sqnr_db, report.tensors[i].local.sqnr_db);
  }
  EXPECT_GT(report.fp32_top1, 60.0);
  EXPECT_NEAR(report.int8_top1, report.fp32_top1, 10.0);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].engine_top1_agreement, 100.0) << out.str();
  EXPECT_GT(report.outputs[0].int8_vs_fp32.sqnr_db, 15.0);

  // Batch by batch (12 + 12 + 8 images): the same figures as in one batch.
  options.batch = 12;
  auto batched = run_compare(options, out);
  ASSERT_TRUE(std::holds_alternative<CompareReport>(batched)) << std::get<RunError>(batched).status.to_string();
  const CompareReport& in_batches = std::get<CompareReport>(batched);
  ASSERT_EQ(in_batches.tensors.size(), report.tensors.size());
  for (size_t i = 0; i < report.tensors.size(); ++i) {
    EXPECT_NEAR(in_batches.tensors[i].local.sqnr_db, report.tensors[i].local.sqnr_db, 1e-6);
    EXPECT_NEAR(in_batches.tensors[i].accumulated.sqnr_db, report.tensors[i].accumulated.sqnr_db, 1e-6);
    EXPECT_DOUBLE_EQ(in_batches.tensors[i].max, report.tensors[i].max);
    EXPECT_DOUBLE_EQ(in_batches.tensors[i].clipped_fraction, report.tensors[i].clipped_fraction);
  }
  EXPECT_DOUBLE_EQ(in_batches.int8_top1, report.int8_top1);
  EXPECT_DOUBLE_EQ(in_batches.outputs[0].top1_agreement, report.outputs[0].top1_agreement);
  EXPECT_EQ(in_batches.outputs[0].engine_top1_agreement, 100.0);
}

// An engine output whose batch is not on dim 0 (a sequence-first [S, N, C] tensor) is bound at the
// run's batch on its batch axis.
TEST_F(CompareTest, AnOutputWithTheBatchOffDimZero) {
  std::string model = (dir_ / "seq_first.onnx").string();
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,4] x) => (float[3,N,4] y)
    <float s = {0.007874}, int8 zp = {0}>
    {
      xq = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(xq, s, zp)
      y = Transpose <perm = [1, 0, 2]> (xd)
    })"),
                              model)
                  .is_ok());
  CompareOptions options;
  options.onnx_path = model;
  options.shapes = {{"x", {2, 3, 4}}};
  std::ostringstream out;
  auto outcome = run_compare(options, out);
  ASSERT_TRUE(std::holds_alternative<CompareReport>(outcome)) << std::get<RunError>(outcome).status.to_string();
  const CompareReport& report = std::get<CompareReport>(outcome);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].engine_max_abs_diff, 0.0) << out.str();
}

TEST_F(CompareTest, AModelWithoutQdqIsAUsageError) {
  std::string model = (dir_ / "plain.onnx").string();
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3] x) => (float[N,3] y) { y = Relu(x) })"),
                              model)
                  .is_ok());
  CompareOptions options;
  options.onnx_path = model;
  std::ostringstream out;
  auto outcome = run_compare(options, out);
  ASSERT_TRUE(std::holds_alternative<RunError>(outcome));
  EXPECT_TRUE(std::get<RunError>(outcome).usage);
  EXPECT_NE(std::get<RunError>(outcome).status.message().find("no QuantizeLinear -> DequantizeLinear"),
            std::string::npos);
}

}  // namespace
}  // namespace qdqrt::tools
