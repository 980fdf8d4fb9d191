// qdqrt exec's statistics and reports on known samples: trtexec's median and percentile rule,
// the performance summary block, the trace averages, the profile table and every JSON export.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

#include "tools/exec_report.h"

namespace qdqrt::tools {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), 1.0);
  return values;
}

TEST(ExecPercentiles, ParsesListsAndRefusesBadValues) {
  auto parsed = parse_percentiles("90,95,99");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, (std::vector<double>{90, 95, 99}));
  parsed = parse_percentiles(" 50 , 99.9,0,100");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, (std::vector<double>{50, 99.9, 0, 100}));

  for (const char* bad : {"", "90,", ",90", "abc", "90,x", "101", "-1", "90;95", "1e400", "nan", "inf", "90 95"}) {
    auto result = parse_percentiles(bad);
    EXPECT_FALSE(result.ok()) << "'" << bad << "' was accepted";
  }
  EXPECT_NE(parse_percentiles("101").status().message().find("not in [0, 100]"), std::string::npos);
  EXPECT_NE(parse_percentiles("90,x").status().message().find("'x' is not a number"), std::string::npos);
}

TEST(ExecStatistics, MedianLikeTrtexec) {
  std::vector<double> odd = {1, 2, 7};
  std::vector<double> even = {1, 2, 4, 7};
  EXPECT_DOUBLE_EQ(median_of_sorted(odd), 2.0);
  EXPECT_DOUBLE_EQ(median_of_sorted(even), 3.0);
  EXPECT_TRUE(std::isinf(median_of_sorted({})));
}

TEST(ExecStatistics, PercentileLikeTrtexec) {
  // sorted[max(n - 1 - floor((100 - p) / 100 * n), 0)]
  std::vector<double> ten = one_to(10);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(ten, 90), 9.0);   // exclude 1
  EXPECT_DOUBLE_EQ(percentile_of_sorted(ten, 95), 10.0);  // exclude floor(0.5) = 0
  EXPECT_DOUBLE_EQ(percentile_of_sorted(ten, 99), 10.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(ten, 100), 10.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(ten, 50), 5.0);   // exclude 5 -> index 4
  EXPECT_DOUBLE_EQ(percentile_of_sorted(ten, 0), 1.0);    // exclude 10 -> index clamped to 0
  std::vector<double> hundred = one_to(100);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(hundred, 90), 90.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(hundred, 95), 95.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(hundred, 99), 99.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(hundred, 99.5), 100.0);
  std::vector<double> twenty = one_to(20);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(twenty, 95), 19.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(twenty, 99), 20.0);
  std::vector<double> single = {4.5};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(single, 0), 4.5);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(single, 99), 4.5);
  EXPECT_TRUE(std::isinf(percentile_of_sorted({}, 90)));
}

TEST(ExecStatistics, LatencyStatsOfUnsortedSamples) {
  std::vector<double> samples = {5, 3, 9, 1, 7, 2, 10, 4, 8, 6};
  std::vector<double> percentiles = {90, 99};
  LatencyStats stats = compute_latency_stats(samples, percentiles);
  EXPECT_EQ(stats.count, 10u);
  EXPECT_DOUBLE_EQ(stats.min, 1);
  EXPECT_DOUBLE_EQ(stats.max, 10);
  EXPECT_DOUBLE_EQ(stats.mean, 5.5);
  EXPECT_DOUBLE_EQ(stats.median, 5.5);
  ASSERT_EQ(stats.percentiles.size(), 2u);
  EXPECT_DOUBLE_EQ(stats.percentiles[0].first, 90);
  EXPECT_DOUBLE_EQ(stats.percentiles[0].second, 9);
  EXPECT_DOUBLE_EQ(stats.percentiles[1].second, 10);
}

std::vector<InferenceTiming> back_to_back(const std::vector<double>& latencies, double gap_ms = 0) {
  std::vector<InferenceTiming> timings;
  double now = 0;
  for (double latency : latencies) {
    timings.push_back({now, now + latency});
    now += latency + gap_ms;
  }
  return timings;
}

TEST(ExecSummary, ThroughputWalltimeAndBlock) {
  // 4 runs of 2, 4, 6, 8 ms with 0.5 ms between them: walltime 21.5 ms.
  std::vector<InferenceTiming> timings = back_to_back({2, 4, 6, 8}, 0.5);
  std::vector<double> percentiles = {90, 95, 99};
  PerformanceSummary summary = summarize_performance(timings, percentiles);
  EXPECT_EQ(summary.inferences, 4u);
  EXPECT_NEAR(summary.walltime_s, 0.0215, 1e-12);
  EXPECT_NEAR(summary.throughput_qps, 4 / 0.0215, 1e-9);
  EXPECT_DOUBLE_EQ(summary.latency.median, 5);
  EXPECT_DOUBLE_EQ(summary.latency.mean, 5);

  std::string text = format_performance_summary(summary);
  EXPECT_EQ(text,
            "=== Performance summary ===\n"
            "Throughput: 186.047 qps\n"
            "Latency: min = 2 ms, max = 8 ms, mean = 5 ms, median = 5 ms, percentile(90%) = 8 ms, "
            "percentile(95%) = 8 ms, percentile(99%) = 8 ms\n"
            "Total Host Walltime: 0.0215 s\n"
            "Total Inferences: 4\n");
  std::vector<double> fractional = {99.9};
  EXPECT_NE(format_performance_summary(summarize_performance(timings, fractional)).find("percentile(99.9%) = 8 ms"),
            std::string::npos);
}

// trtexec's stability check: coefficient of variation (stddev / mean) above 2.5% warns.
TEST(ExecSummary, StabilityWarningAboveTrtexecsThreshold) {
  std::vector<double> percentiles = {90};
  LatencyStats steady = compute_latency_stats({1.0, 1.01, 0.99, 1.0}, percentiles);
  EXPECT_NEAR(steady.stddev, std::sqrt(0.00005), 1e-12);
  EXPECT_LT(steady.coefficient_of_variation(), 0.025);
  EXPECT_EQ(format_stability_warning(steady), "");
  LatencyStats noisy = compute_latency_stats({1.0, 1.0, 1.0, 2.0}, percentiles);  // mean 1.25, stddev 0.433
  EXPECT_NEAR(noisy.coefficient_of_variation(), 0.4330127 / 1.25, 1e-6);
  std::string warning = format_stability_warning(noisy);
  EXPECT_EQ(warning.rfind("[W] * Latency is unstable, with coefficient of variation = 34.64% (above 2.5%).\n", 0), 0u)
      << warning;
  EXPECT_EQ(format_stability_warning(compute_latency_stats({1.0}, percentiles)), "");  // one run: nothing to say
}

// Runs whose helpers stalled (another process on their cores) went on one thread: exec says how many.
TEST(ExecSummary, SingleThreadRunsWarnWithTheirCount) {
  EXPECT_EQ(format_single_thread_warning(0, 50), "");
  const std::string warning = format_single_thread_warning(7, 50);
  EXPECT_NE(warning.find("[W] * 7 of 50 timed runs went on the calling thread alone"), std::string::npos) << warning;
  EXPECT_NE(warning.find("fewer --threads"), std::string::npos) << warning;
}

TEST(ExecSummary, EmptyTimingsDoNotDivideByZero) {
  PerformanceSummary summary = summarize_performance({}, std::vector<double>{90});
  EXPECT_EQ(summary.inferences, 0u);
  EXPECT_EQ(summary.throughput_qps, 0);
  EXPECT_EQ(summary.walltime_s, 0);
}

TEST(ExecSummary, TraceAveragesGroupAvgRunsAndDropThePartialGroup) {
  std::vector<InferenceTiming> timings = back_to_back({1, 3, 5, 7, 100});
  std::string text = format_trace_averages(timings, 2);
  EXPECT_EQ(text,
            "=== Trace details ===\n"
            "Trace averages of 2 runs:\n"
            "Average on 2 runs - latency: 2 ms\n"
            "Average on 2 runs - latency: 6 ms\n");
}

TEST(ExecSummary, TimesJsonHasEveryTrtexecField) {
  std::vector<InferenceTiming> timings = {{1.0, 3.5}};
  nlohmann::json json = nlohmann::json::parse(timings_to_json_text(timings));
  EXPECT_EQ(json[0], nlohmann::json::parse(R"({"startEnqMs": 1.0, "endEnqMs": 3.5, "startH2dMs": 1.0, "endH2dMs": 1.0,
      "startComputeMs": 1.0, "endComputeMs": 3.5, "startD2hMs": 3.5, "endD2hMs": 3.5, "h2dMs": 0.0,
      "computeMs": 2.5, "d2hMs": 0.0, "latencyMs": 2.5})"));
}

TEST(ExecSummary, TimesJsonHasOneObjectPerRun) {
  std::vector<InferenceTiming> timings = back_to_back({1.5, 2.5}, 1);
  nlohmann::json parsed = nlohmann::json::parse(timings_to_json_text(timings));
  ASSERT_TRUE(parsed.is_array());
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_DOUBLE_EQ(parsed[1]["startComputeMs"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(parsed[1]["endComputeMs"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(parsed[1]["latencyMs"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(parsed[1]["computeMs"].get<double>(), 2.5);
}

TEST(ExecProfile, RowsTotalsMediansAndPercentages) {
  ProfileRecorder recorder({"conv1 + relu1", "fc"});
  ASSERT_TRUE(recorder.add_run(std::vector<double>{1.0, 3.0}).is_ok());
  ASSERT_TRUE(recorder.add_run(std::vector<double>{2.0, 2.0}).is_ok());
  ASSERT_TRUE(recorder.add_run(std::vector<double>{6.0, 1.0}).is_ok());
  EXPECT_FALSE(recorder.add_run(std::vector<double>{1.0}).is_ok());  // wrong layer count
  ProfileReport report = summarize_profile(recorder);
  EXPECT_EQ(report.count, 3u);
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[0].name, "conv1 + relu1");
  EXPECT_DOUBLE_EQ(report.rows[0].time_ms, 9.0);
  EXPECT_DOUBLE_EQ(report.rows[0].average_ms, 3.0);
  EXPECT_DOUBLE_EQ(report.rows[0].median_ms, 2.0);
  EXPECT_DOUBLE_EQ(report.rows[0].percentage, 60.0);
  EXPECT_DOUBLE_EQ(report.rows[1].time_ms, 6.0);
  EXPECT_DOUBLE_EQ(report.rows[1].median_ms, 2.0);
  EXPECT_DOUBLE_EQ(report.rows[1].percentage, 40.0);
  EXPECT_DOUBLE_EQ(report.total.time_ms, 15.0);
  EXPECT_DOUBLE_EQ(report.total.average_ms, 5.0);
  EXPECT_DOUBLE_EQ(report.total.median_ms, 4.0);  // per-run totals 4, 4, 7
  EXPECT_DOUBLE_EQ(report.total.percentage, 100.0);

  std::string table = format_profile_table(report);
  EXPECT_EQ(table,
            "=== Profile (3 iterations) ===\n"
            "   Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer\n"
            "       9.00       3.0000       2.0000      60.0   conv1 + relu1\n"
            "       6.00       2.0000       2.0000      40.0   fc\n"
            "      15.00       5.0000       4.0000     100.0   Total\n");

  nlohmann::json json = nlohmann::json::parse(json_array_lines(profile_to_json(report)));
  ASSERT_EQ(json.size(), 3u);
  EXPECT_EQ(json[0]["count"], 3);
  EXPECT_EQ(json[1]["name"], "conv1 + relu1");
  EXPECT_DOUBLE_EQ(json[1]["timeMs"].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(json[1]["averageMs"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(json[1]["medianMs"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(json[1]["percentage"].get<double>() + json[2]["percentage"].get<double>(), 100.0);
}

TEST(ExecProfile, NoRunsGiveZeroRows) {
  ProfileRecorder recorder({"a"});
  ProfileReport report = summarize_profile(recorder);
  EXPECT_EQ(report.count, 0u);
  EXPECT_EQ(report.rows[0].time_ms, 0);
  EXPECT_EQ(report.rows[0].percentage, 0);
  EXPECT_EQ(report.total.median_ms, 0);
}

TEST(ExecOutputs, JsonLikeTrtexec) {
  Tensor logits = Tensor::from_vector<float>({1, 3}, {0.1f, -2.5f, NAN});
  Tensor labels = Tensor::from_vector<int64_t>({2}, {7, -1});
  Tensor scalar = Tensor::from_vector<uint8_t>({}, {200});
  nlohmann::json json = nlohmann::json::parse(
      json_array_lines(outputs_to_json({{"logits", logits}, {"labels", labels}, {"scalar", scalar}})));
  ASSERT_EQ(json.size(), 3u);
  EXPECT_EQ(json[0]["name"], "logits");
  EXPECT_EQ(json[0]["dimensions"], "1x3");
  EXPECT_EQ(json[0]["datatype"], "float32");
  ASSERT_EQ(json[0]["values"].size(), 3u);
  EXPECT_EQ(json[0]["values"][0].get<float>(), 0.1f);  // float's shortest text reads back exactly
  EXPECT_EQ(json[0]["values"][1].get<float>(), -2.5f);
  EXPECT_TRUE(json[0]["values"][2].is_null());
  EXPECT_EQ(json[1]["dimensions"], "2");
  EXPECT_EQ(json[1]["values"], nlohmann::json::array({7, -1}));
  EXPECT_EQ(json[2]["dimensions"], "");
  EXPECT_EQ(json[2]["values"], nlohmann::json::array({200}));
  // The text writes 0.1, not 0.10000000149011612.
  EXPECT_NE(json_array_lines(outputs_to_json({{"logits", logits}})).find("0.1,"), std::string::npos);
}

engine::EnginePlan two_layer_plan() {
  engine::EnginePlan plan;
  plan.precision = "int8";
  plan.isa = "avx512vnni";
  plan.cpu_features = {"avx512f", "avx512vnni"};
  plan.max_batch = 4;
  plan.source_model = "m.onnx";
  auto tensor = [](std::string name, DataType dtype, Shape shape, engine::Layout layout, engine::TensorKind kind) {
    engine::PlanTensor t;
    t.name = std::move(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.batched = true;
    t.layout = layout;
    t.kind = kind;
    return t;
  };
  plan.tensors = {tensor("x", DataType::kFloat, {4, 3, 8, 8}, engine::Layout::kPlain, engine::TensorKind::kInput),
                  tensor("x_q", DataType::kInt8, {4, 3, 8, 8}, engine::Layout::kNhwc, engine::TensorKind::kActivation),
                  tensor("y", DataType::kFloat, {4, 16, 8, 8}, engine::Layout::kPlain, engine::TensorKind::kOutput)};
  plan.inputs = {0};
  plan.outputs = {2};
  engine::PlanLayer quantize;
  quantize.kind = "quantize";
  quantize.name = "x_quantize";
  quantize.op_type = "QuantizeLinear";
  quantize.source_nodes = {"x_quantize"};
  quantize.inputs = {0};
  quantize.outputs = {1};
  quantize.kernel = "qs8-quantize-avx512";
  engine::PlanLayer conv;
  conv.kind = "qconv";
  conv.name = "conv1 + relu1";
  conv.op_type = "QConv";
  conv.source_nodes = {"conv1", "relu1"};
  conv.inputs = {1, -1};
  conv.outputs = {2};
  conv.kernel = "qs8-qc8w-gemm-6x64c4-avx512vnni";
  conv.scratch_bytes = 128;
  std::vector<uint8_t> weights(100, 1);
  conv.blobs.push_back(engine::make_blob("weights", weights.data(), weights.size()));
  std::vector<float> bias(16, 0.5f);
  conv.blobs.push_back(engine::make_blob("bias", bias.data(), bias.size() * sizeof(float)));
  // qconv's geometry as the builder stores it: a 3x3 window, stride 1, only the leading pads.
  conv.params.set("kernel", std::vector<int64_t>{3, 3});
  conv.params.set("strides", std::vector<int64_t>{1, 1});
  conv.params.set("dilations", std::vector<int64_t>{1, 1});
  conv.params.set("pads", std::vector<int64_t>{1, 1});
  conv.params.set("groups", int64_t{1});
  conv.params.set("out_channels", int64_t{16});
  plan.layers = {quantize, conv};
  return plan;
}

// The keys and types TREx (TensorRT Engine Explorer) reads from --exportLayerInfo: layer.py takes
// Name, ParameterType/LayerType, Inputs/Outputs and Weights/Bias {Type in Int8/Half/Float/Int32,
// Count}; df_preprocessing's Convolution view unpacks Kernel as [R, S] and casts Groups and OutMaps
// to int; annotate_convolutions reads Inputs[0]/Outputs[0] as NCHW. "Kernel" must be TensorRT's
// window, never a kernel name.
TEST(ExecLayerInfo, ConvolutionLayersCarryTheKeysTrexReads) {
  nlohmann::json json = nlohmann::json::parse(layer_info_to_json(two_layer_plan()).dump(2));
  for (const nlohmann::json& layer : json["Layers"]) {
    EXPECT_TRUE(layer["Name"].is_string());
    EXPECT_TRUE(layer["LayerType"].is_string());
    EXPECT_TRUE(layer["ParameterType"].is_string());
    EXPECT_TRUE(layer["TacticName"].is_string());
    for (const char* side : {"Inputs", "Outputs"}) {
      for (const nlohmann::json& tensor : layer[side]) {
        EXPECT_TRUE(tensor["Name"].is_string());
        EXPECT_TRUE(tensor["Dimensions"].is_array());
        EXPECT_TRUE(tensor["Format/Datatype"].is_string());
      }
    }
    if (layer["ParameterType"] != "Convolution") {
      EXPECT_FALSE(layer.contains("Kernel")) << layer.dump();
    }
  }
  const nlohmann::json& conv = json["Layers"][1];
  ASSERT_EQ(conv["ParameterType"], "Convolution");
  EXPECT_EQ(conv["Kernel"], nlohmann::json::array({3, 3}));
  EXPECT_TRUE(conv["Groups"].is_number_integer());
  EXPECT_EQ(conv["Groups"], 1);
  EXPECT_EQ(conv["OutMaps"], 16);
  EXPECT_EQ(conv["Stride"], nlohmann::json::array({1, 1}));
  EXPECT_EQ(conv["Dilation"], nlohmann::json::array({1, 1}));
  EXPECT_EQ(conv["PrePadding"], nlohmann::json::array({1, 1}));
  EXPECT_EQ(conv["PostPadding"], nlohmann::json::array({1, 1}));  // 8x8 in, 8x8 out, 3x3 window
  EXPECT_TRUE(conv["PaddingMode"].is_string());
  EXPECT_EQ(conv["HasBias"], 1);
  EXPECT_EQ(conv["Weights"], nlohmann::json({{"Type", "Int8"}, {"Count", 16 * 3 * 3 * 3}}));
  EXPECT_EQ(conv["Bias"], nlohmann::json({{"Type", "Float"}, {"Count", 16}}));
  const std::set<std::string> trex_types = {"Int8", "Half", "Float", "Int32"};
  EXPECT_TRUE(trex_types.count(conv["Weights"]["Type"].get<std::string>()));
  EXPECT_EQ(conv["Inputs"][0]["Dimensions"].size(), 4u);
  EXPECT_EQ(conv["Outputs"][0]["Dimensions"].size(), 4u);
}

TEST(ExecLayerInfo, ReferenceLayersCarryTheirReasonAndAreCounted) {
  engine::EnginePlan plan = two_layer_plan();
  nlohmann::json before = nlohmann::json::parse(layer_info_to_json(plan).dump(2));
  EXPECT_EQ(before["ReferenceLayers"], 0);
  for (const nlohmann::json& layer : before["Layers"]) EXPECT_FALSE(layer.contains("ReferenceReason")) << layer.dump();
  plan.layers[0].kind = "reference";
  plan.layers[0].params.set("reason", std::string("no native layer implements QuantizeLinear"));
  nlohmann::json after = nlohmann::json::parse(layer_info_to_json(plan).dump(2));
  EXPECT_EQ(after["ReferenceLayers"], 1);
  EXPECT_EQ(after["Layers"][0]["ReferenceReason"], "no native layer implements QuantizeLinear");
  plan.layers[0].params = {};  // a plan written before reasons were recorded
  EXPECT_EQ(nlohmann::json::parse(layer_info_to_json(plan).dump(2))["Layers"][0]["ReferenceReason"], "not recorded");
}

TEST(ExecLayerInfo, JsonHasLayersKernelsAndTensors) {
  nlohmann::json json = nlohmann::json::parse(layer_info_to_json(two_layer_plan()).dump(2));
  ASSERT_EQ(json["Layers"].size(), 2u);
  const nlohmann::json& conv = json["Layers"][1];
  EXPECT_EQ(conv["Name"], "conv1 + relu1");
  EXPECT_EQ(conv["LayerType"], "qconv");
  EXPECT_EQ(conv["OpType"], "QConv");
  EXPECT_EQ(conv["QdqrtKernel"], "qs8-qc8w-gemm-6x64c4-avx512vnni");
  EXPECT_EQ(conv["SourceNodes"], nlohmann::json::array({"conv1", "relu1"}));
  EXPECT_EQ(conv["WeightBytes"], 100 + 16 * 4);  // weights and bias blobs
  EXPECT_EQ(conv["ScratchBytes"], 128);
  EXPECT_EQ(conv["ParameterType"], "Convolution");
  EXPECT_EQ(conv["TacticName"], "qs8-qc8w-gemm-6x64c4-avx512vnni");
  EXPECT_EQ(conv["Precision"], "INT8");
  ASSERT_EQ(conv["Inputs"].size(), 1u);  // the absent optional input is left out (TREx reads each as a tensor)
  EXPECT_EQ(conv["Inputs"][0]["Name"], "x_q");
  EXPECT_EQ(conv["Inputs"][0]["Datatype"], "int8");
  EXPECT_EQ(conv["Inputs"][0]["Format/Datatype"], "Channel major Int8 format");
  EXPECT_EQ(conv["Inputs"][0]["Location"], "Host");
  EXPECT_EQ(conv["Inputs"][0]["Layout"], "nhwc");
  EXPECT_EQ(conv["Inputs"][0]["Dimensions"], nlohmann::json::array({4, 3, 8, 8}));
  EXPECT_EQ(conv["Outputs"][0]["Buffer"], "output");
  EXPECT_EQ(conv["Outputs"][0]["Format/Datatype"], "Row major linear FP32");
  EXPECT_EQ(json["Bindings"], nlohmann::json::array({"x", "y"}));  // names, as trtexec writes them
  EXPECT_EQ(json["Precision"], "int8");
  EXPECT_EQ(json["Int8Layers"], 1);
  EXPECT_EQ(json["LayerCount"], 2);
  EXPECT_EQ(json["ISA"], "avx512vnni");
  EXPECT_EQ(json["MaxBatch"], 4);
}

// A tensor in another's bytes (engine/plan_aliases.h) says where, in the text and the JSON.
TEST(ExecLayerInfo, AliasedTensorsNameTheirBytes) {
  engine::EnginePlan plan = two_layer_plan();
  engine::PlanTensor slice = plan.tensors[1];
  slice.name = "x_q_slice";
  slice.shape = {4, 1, 8, 8};
  slice.alias_of = 1;
  slice.alias_offset = 2;
  slice.row_stride = 3;
  plan.tensors.push_back(slice);
  plan.layers[0].outputs = {3};
  const std::string text = format_layer_info(plan);
  EXPECT_NE(text.find("x_q_slice int8 [4, 1, 8, 8] nhwc in x_q at byte 2 row stride 3"), std::string::npos) << text;
  nlohmann::json json = nlohmann::json::parse(layer_info_to_json(plan).dump(2));
  const nlohmann::json& output = json["Layers"][0]["Outputs"][0];
  EXPECT_EQ(output["AliasOf"], "x_q");
  EXPECT_EQ(output["AliasOffset"], 2);
  EXPECT_EQ(output["RowStride"], 3);
  EXPECT_FALSE(json["Layers"][1]["Inputs"][0].contains("AliasOf"));
}

TEST(ExecLayerInfo, NamesOnlyAtLayerNamesVerbosity) {
  nlohmann::json json = nlohmann::json::parse(layer_info_to_json(two_layer_plan(), false).dump());
  EXPECT_EQ(json, nlohmann::json::parse(R"({"Layers": ["x_quantize", "conv1 + relu1"], "Bindings": ["x", "y"]})"));
}

TEST(ExecLayerInfo, PrecisionCountSaysWhatRunsInInt8) {
  engine::EnginePlan plan = two_layer_plan();
  PrecisionCount count = count_layer_precisions(plan);
  EXPECT_EQ(count.layers, 2);
  EXPECT_EQ(count.int8_layers, 1);
  EXPECT_EQ(count.border_layers, 1);
  EXPECT_EQ(count.text(false), "int8 (int8: 1 of 2 layers, 1 quantize/dequantize/reorder)");
  // The same plan with every tensor in float: what a model without Q/DQ builds.
  for (engine::PlanTensor& tensor : plan.tensors) tensor.dtype = DataType::kFloat;
  plan.layers[0].kind = "fp32_conv";
  plan.layers[1].kind = "fp32_conv";
  count = count_layer_precisions(plan);
  EXPECT_EQ(count.label(), "fp32");
  EXPECT_EQ(count.text(false), "fp32 (int8: 0 of 2 layers; this model has no Q/DQ)");
  EXPECT_EQ(count.text(true), "fp32 (int8: 0 of 2 layers)");  // asked for with --fp32: nothing to warn about
}

TEST(ExecLayerInfo, TableNamesKindKernelAndTensors) {
  std::string text = format_layer_info(two_layer_plan());
  EXPECT_EQ(text.rfind("=== Layer information ===\n", 0), 0u);
  EXPECT_NE(text.find("qconv     qs8-qc8w-gemm-6x64c4-avx512vnni  conv1 + relu1"), std::string::npos) << text;
  EXPECT_NE(text.find("[x_q int8 [4, 3, 8, 8] nhwc, -] -> [y float32 [4, 16, 8, 8]]"), std::string::npos) << text;
}

}  // namespace
}  // namespace qdqrt::tools
