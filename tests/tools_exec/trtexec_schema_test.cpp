// The files qdqrt writes in trtexec's shapes, checked against what trtexec's documentation and
// TensorRT Engine Explorer (TREx) read from them:
// - the log: every line "[MM/DD/YYYY-HH:MM:SS] [I] ", and the sections TREx's parse_trtexec_log
//   turns into dictionaries ("=== Performance summary ===": Throughput, Latency "min = .., max = ..",
//   Total Host Walltime; "=== Inference Options ==="; "=== Model Options ==="; "=== Build Options ===";
//   "=== Device Information ===");
// - --exportLayerInfo (TREx's graph importer): {"Layers": [{"Name", "LayerType", "Inputs",
//   "Outputs"}], "Bindings": [names]}, each tensor {"Name", "Dimensions": [ints], "Format/Datatype"}
//   with a format TREx's table knows; the same schema from `qdqrt exec` and `qdqrt inspect`;
// - --exportProfile: [{"count"}, {"name", "timeMs", "averageMs", "medianMs", "percentage"}, ...];
// - --exportTimes: trtexec's twelve fields per run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "parser/onnx_loader.h"
#include "tools/exec_command.h"
#include "tools/inspect_command.h"
#include "tools/inspect_report.h"
#include "tools/trtexec_log.h"

namespace qdqrt::tools {
namespace {

const std::string kModel = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_qdq.onnx";

// The "Format/Datatype" strings of TREx's activations.py that qdqrt may write.
const std::set<std::string> kTrexFormats = {
    "Row major linear FP32",   "Row major linear FP16 format",  "Row major linear BFloat16 format",
    "Row major Int8 format",   "Row major linear UInt8 format", "Row major linear Int32",
    "Row major linear Int64 format", "Row major linear BOOL",   "Channel major FP32 format",
    "Channel major FP16 format", "Channel major Int8 format",   "Channel major UInt8 format"};

// What TREx's read_graph_file and Layer/Activation constructors require, as gtest failures.
void expect_trex_graph(const nlohmann::json& graph, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(graph.is_object());
  ASSERT_TRUE(graph.contains("Layers") && graph["Layers"].is_array() && !graph["Layers"].empty());
  ASSERT_TRUE(graph.contains("Bindings") && graph["Bindings"].is_array() && !graph["Bindings"].empty());
  std::set<std::string> tensors;
  for (const nlohmann::json& layer : graph["Layers"]) {
    ASSERT_TRUE(layer.is_object()) << "detailed layer info holds objects";
    ASSERT_TRUE(layer["Name"].is_string());
    ASSERT_TRUE(layer["LayerType"].is_string());
    ASSERT_TRUE(layer["ParameterType"].is_string());
    for (const char* side : {"Inputs", "Outputs"}) {
      ASSERT_TRUE(layer[side].is_array()) << layer["Name"];
      for (const nlohmann::json& tensor : layer[side]) {
        ASSERT_TRUE(tensor.is_object()) << layer["Name"];
        ASSERT_TRUE(tensor["Name"].is_string());
        ASSERT_TRUE(tensor["Location"].is_string());
        ASSERT_TRUE(tensor["Dimensions"].is_array()) << tensor;
        for (const nlohmann::json& dim : tensor["Dimensions"]) ASSERT_TRUE(dim.is_number_integer()) << tensor;
        ASSERT_TRUE(tensor["Format/Datatype"].is_string());
        EXPECT_TRUE(kTrexFormats.count(tensor["Format/Datatype"].get<std::string>())) << tensor;
        tensors.insert(tensor["Name"].get<std::string>());
      }
    }
  }
  for (const nlohmann::json& binding : graph["Bindings"]) {
    ASSERT_TRUE(binding.is_string()) << "Bindings are names";
    EXPECT_TRUE(tensors.count(binding.get<std::string>())) << binding << " is no layer's tensor";
  }
}

// TREx's parse_trtexec_log: a section starts at its header and holds the following
// "[date] [I] key: value" lines up to the first line that is not one.
std::map<std::string, std::map<std::string, std::string>> parse_log_sections(const std::string& log) {
  const std::vector<std::string> headers = {"=== Model Options ===", "=== Build Options ===",
                                            "=== Inference Options ===", "=== Device Information ===",
                                            "=== Performance summary ==="};
  const std::regex prefix(R"(\[\d+/\d+/\d+-\d+:\d+:\d+\] \[I\] )");
  std::map<std::string, std::map<std::string, std::string>> sections;
  std::string current;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    auto header = std::find_if(headers.begin(), headers.end(), [&](const std::string& h) { return line.find(h) != std::string::npos; });
    std::smatch match;
    if (!current.empty() && std::regex_search(line, match, prefix)) {
      std::string kv = line.substr(static_cast<size_t>(match.position(0) + match.length(0)));
      size_t colon = kv.find(':');
      if (colon != std::string::npos) {
        size_t next = kv.find(':', colon + 1);
        std::string value = kv.substr(colon + 1, next == std::string::npos ? std::string::npos : next - colon - 1);
        sections[current][kv.substr(0, colon)] = value.empty() ? value : value.substr(1);
        continue;
      }
    }
    current = header == headers.end() ? "" : *header;
  }
  return sections;
}

class TrtexecSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("qdqrt_trtexec_schema_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(TrtexecSchemaTest, ExecLogAndExportsHaveTrtexecsShapes) {
  ExecOptions options;
  options.onnx_path = kModel;
  options.shapes = {{"input", {4, 1, 28, 28}}};
  options.iterations = 12;
  options.warm_up_ms = 0;
  options.duration_s = 0;
  options.threads = 2;
  options.export_layer_info_path = path("graph.json");
  options.export_profile_path = path("profile.json");
  options.export_times_path = path("timing.json");
  std::ostringstream out;
  {
    TrtexecLogBuffer buffer(out);
    std::ostream log(&buffer);
    std::optional<RunError> error = run_exec(options, log);
    ASSERT_FALSE(error) << error->status.to_string();
  }
  std::string log = out.str();

  const std::regex line_prefix(R"(^\[\d{2}/\d{2}/\d{4}-\d{2}:\d{2}:\d{2}\] \[[IWEV]\] )");
  std::istringstream lines(log);
  int line_count = 0;
  for (std::string line; std::getline(lines, line); ++line_count) {
    EXPECT_TRUE(std::regex_search(line, line_prefix)) << line;
  }
  EXPECT_GT(line_count, 20);
  auto sections = parse_log_sections(log);
  const auto& performance = sections["=== Performance summary ==="];
  ASSERT_TRUE(performance.count("Throughput")) << log;
  EXPECT_GT(std::stod(performance.at("Throughput")), 0);
  EXPECT_NE(performance.at("Throughput").find(" qps"), std::string::npos);
  // "min = 0.1 ms, max = .., mean = .., median = .., percentile(90%) = .., ...": key = value pairs.
  std::string latency = performance.at("Latency");
  std::vector<double> stats;
  std::istringstream pairs(latency);
  for (std::string pair; std::getline(pairs, pair, ',');) {
    ASSERT_NE(pair.find(" = "), std::string::npos) << latency;
    stats.push_back(std::stod(pair.substr(pair.find(" = ") + 3)));
  }
  ASSERT_EQ(stats.size(), 7u) << latency;  // min, max, mean, median and the three default percentiles
  EXPECT_LE(stats[0], stats[3]);
  EXPECT_LE(stats[3], stats[1]);
  EXPECT_GT(std::stod(performance.at("Total Host Walltime")), 0);
  EXPECT_EQ(sections["=== Inference Options ==="]["Iterations"], "12");
  EXPECT_EQ(sections["=== Inference Options ==="]["Streams"], "1");
  EXPECT_EQ(sections["=== Model Options ==="]["Format"], "ONNX");
  EXPECT_EQ(sections["=== Build Options ==="]["Input build shapes"], "input=4x1x28x28");
  EXPECT_FALSE(sections["=== Device Information ==="]["Selected Device"].empty());

  std::ifstream graph_file(path("graph.json"));
  nlohmann::json graph = nlohmann::json::parse(graph_file);
  expect_trex_graph(graph, "qdqrt exec --exportLayerInfo");
  EXPECT_EQ(graph["Bindings"], nlohmann::json::array({"input", "output"}));

  std::ifstream profile_file(path("profile.json"));
  nlohmann::json profile = nlohmann::json::parse(profile_file);
  ASSERT_TRUE(profile.is_array());
  EXPECT_EQ(profile[0], (nlohmann::json{{"count", 12}}));
  for (size_t i = 1; i < profile.size(); ++i) {
    // TREx keeps the records of 4 or 5 keys.
    EXPECT_EQ(profile[i].size(), 5u) << profile[i];
    for (const char* key : {"timeMs", "averageMs", "medianMs", "percentage"}) EXPECT_TRUE(profile[i][key].is_number());
    EXPECT_TRUE(profile[i]["name"].is_string());
  }
  EXPECT_EQ(profile.size(), graph["Layers"].size() + 1);

  std::ifstream times_file(path("timing.json"));
  nlohmann::json times = nlohmann::json::parse(times_file);
  ASSERT_EQ(times.size(), 12u);
  const std::vector<std::string> fields = {"startEnqMs", "endEnqMs",  "startH2dMs", "endH2dMs",
                                           "startComputeMs", "endComputeMs", "startD2hMs", "endD2hMs",
                                           "h2dMs", "computeMs", "d2hMs", "latencyMs"};
  for (const nlohmann::json& time : times) {
    ASSERT_EQ(time.size(), fields.size()) << time;
    for (const std::string& field : fields) ASSERT_TRUE(time[field].is_number()) << field;
    EXPECT_LE(time["startComputeMs"].get<double>(), time["endComputeMs"].get<double>());
    EXPECT_DOUBLE_EQ(time["latencyMs"].get<double>(), time["computeMs"].get<double>());
  }
}

// `qdqrt inspect --exportLayerInfo` writes the same schema (from the optimized graph).
TEST_F(TrtexecSchemaTest, InspectLayerInfoHasTheSameSchema) {
  InspectOptions options;
  options.onnx_path = kModel;
  options.shapes = {{"input", {4, 1, 28, 28}}};
  options.export_layer_info_path = path("inspect.json");
  std::ostringstream out;
  bool usage = false;
  Status status = inspect_model(options, out, usage);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  std::ifstream file(path("inspect.json"));
  nlohmann::json graph = nlohmann::json::parse(file);
  expect_trex_graph(graph, "qdqrt inspect --exportLayerInfo");
  EXPECT_EQ(graph["Bindings"], nlohmann::json::array({"input", "output"}));
  EXPECT_TRUE(graph["Summary"].is_object());
}

TEST(TrtexecLog, PrefixKeepsSeverityAndWaitsForWholeLines) {
  EXPECT_EQ(prefix_log_line("Throughput: 1 qps", "[11/24/2026-21:45:57]"), "[11/24/2026-21:45:57] [I] Throughput: 1 qps");
  EXPECT_EQ(prefix_log_line("[W] careful", "[T]"), "[T] [W] careful");
  std::ostringstream sink;
  {
    TrtexecLogBuffer buffer(sink);
    std::ostream log(&buffer);
    log << "first " << 1;
    log.flush();
    EXPECT_EQ(sink.str(), "") << "a partial line waits for its newline";
    log << "\n[W] second\nthird";
  }
  const std::regex expected(R"(^\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\] \[I\] first 1
\[[^\]]+\] \[W\] second
\[[^\]]+\] \[I\] third
$)");
  EXPECT_TRUE(std::regex_match(sink.str(), expected)) << sink.str();
}

}  // namespace
}  // namespace qdqrt::tools
