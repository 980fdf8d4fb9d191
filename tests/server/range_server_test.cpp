// qdqrt serve over a range of shapes (config.json 'input_ranges'): a QDQ conv net with symbolic
// batch, height and width, written with onnx's text parser, served from one RangeEngine. Requests
// of mixed shapes (concurrent, over HTTP on 127.0.0.1 and in-process) equal a direct run of the
// same range engine and of an engine built for exactly that shape; shapes outside the range are a
// 400 naming the input, dim and range; metadata and configuration report -1 for the dims that vary;
// dynamic batching merges only requests of equal shape.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <variant>

#include "core/file_reading.h"
#include "engine/engine_file.h"
#include "server/grpc_frontend.h"
#include "server/grpc_predict_v2.grpc.pb.h"
#include "server/http_frontend.h"
#include "server/inference_server.h"
#include "server/model_config.h"
#include "server/model_runner.h"
#include "tests/engine_batch/batch_helpers.h"
#include "tests/server/served_repository.h"

namespace qdqrt::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Q/DQ conv 3x3 -> Relu -> Q/DQ conv 3x3 stride 2 (f: [N, 8, ceil(H/2), ceil(W/2)]), then f
// flattened per channel by a Reshape whose target is Concat(Shape(f)[0:2], -1) (y: [N, 8, M]).
constexpr const char* kConvText = R"(<ir_version: 8, opset_import: ["" : 13]>
convnet (float[N,3,H,W] x) => (float[N,8,Hh,Wh] f, float[N,8,M] y)
<int64[2] first2 = {0, 1}, int64[1] minus1 = {-1},
 float sx = {0.0078125}, float sw = {0.004}, float sa = {0.02}, int8 z8 = {0}>
{
  x_q = QuantizeLinear(x, sx, z8)
  x_d = DequantizeLinear(x_q, sx, z8)
  w1_q = QuantizeLinear(w1, sw, z8)
  w1_d = DequantizeLinear(w1_q, sw, z8)
  w2_q = QuantizeLinear(w2, sw, z8)
  w2_d = DequantizeLinear(w2_q, sw, z8)
  c1 = Conv<pads = [1, 1, 1, 1]>(x_d, w1_d, b1)
  r1 = Relu(c1)
  r1_q = QuantizeLinear(r1, sa, z8)
  r1_d = DequantizeLinear(r1_q, sa, z8)
  c2 = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(r1_d, w2_d, b2)
  c2_q = QuantizeLinear(c2, sa, z8)
  c2_d = DequantizeLinear(c2_q, sa, z8)
  f = Identity(c2_d)
  shape_f = Shape(f)
  head = Gather<axis = 0>(shape_f, first2)
  target = Concat<axis = 0>(head, minus1)
  y = Reshape(c2_d, target)
}
)";

constexpr const char* kRangeConfig =
    R"("input_ranges": {"x": {"min": [1, 3, 8, 8], "opt": [4, 3, 16, 16], "max": [4, 3, 24, 24]}})";

std::vector<float> random_values(const Shape& shape, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
  for (float& v : values) v = value(generator);
  return values;
}

InferTensor float_tensor(const std::string& name, const Shape& shape, const std::vector<float>& values) {
  InferTensor tensor{name, DataType::kFloat, shape, {}, std::nullopt};
  tensor.data.resize(values.size() * sizeof(float));
  std::memcpy(tensor.data.data(), values.data(), tensor.data.size());
  return tensor;
}

class RangeServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    served_ = new ServedRepository("qdqrt_range_server_test_");
    root_ = served_->root();
    model_path_ = (root_ / "conv.onnx").string();
    Status written = batch_testing::write_text_model(
        kConvText, {{"w1", {8, 3, 3, 3}, 0.3f}, {"b1", {8}, 0.1f}, {"w2", {8, 8, 3, 3}, 0.2f}, {"b2", {8}, 0.1f}}, 11,
        model_path_);
    ASSERT_TRUE(written.is_ok()) << written.to_string();
    served_->add_model("conv", model_path_,
                       fmt::format(R"({{"max_batch_size": 4, "instance_group": {{"count": 2}},
        "dynamic_batching": {{"max_queue_delay_microseconds": 2000}}, {}}})",
                                   kRangeConfig));
    served_->add_model("conv_no_delay", model_path_,
                       fmt::format(R"({{"max_batch_size": 4, "dynamic_batching": true, {}}})", kRangeConfig));
    HttpOptions http_options;
    http_options.max_body_bytes = 4 << 20;
    Status started = served_->start({}, http_options, {});
    ASSERT_TRUE(started.is_ok()) << started.to_string();
    server_ = &served_->server();
    http_port_ = served_->http_port();
    grpc_port_ = served_->grpc_port();
  }
  static void TearDownTestSuite() {
    delete served_;
    served_ = nullptr;
    server_ = nullptr;
  }

  static std::shared_ptr<ModelRunner> runner(const std::string& model) {
    ServeError error;
    auto found = server_->repository().find(model, "", error);
    EXPECT_TRUE(found) << error.message;
    return found;
  }

  // The outputs (f, y) of one direct run of the model's range engine at `shape`.
  static std::vector<std::vector<float>> direct_run(const Shape& shape, const std::vector<float>& values) {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    const engine::RangeEngine& range = *runner("conv")->range_engine();
    static std::unique_ptr<engine::RangeContext> context = range.create_context({.threads = 1});
    auto infos = range.output_infos({{"x", shape}});
    EXPECT_TRUE(infos.ok()) << infos.status().to_string();
    if (!infos.ok()) return {};
    std::vector<std::vector<float>> outputs;
    std::vector<engine::TensorBinding> bindings;
    for (const auto& info : *infos) outputs.emplace_back(static_cast<size_t>(shape_numel(info.shape)));
    for (size_t index = 0; index < infos->size(); ++index) {
      bindings.push_back({(*infos)[index].name, outputs[index].data(), (*infos)[index].shape});
    }
    std::vector<engine::ConstTensorBinding> inputs = {{"x", values.data(), shape}};
    Status status = context->run(inputs, bindings);
    EXPECT_TRUE(status.is_ok()) << status.to_string();
    return outputs;
  }

  static std::vector<std::vector<float>> floats_of(const std::vector<InferTensor>& outputs) {
    std::vector<std::vector<float>> values;
    for (const InferTensor& output : outputs) {
      values.emplace_back(output.data.size() / sizeof(float));
      std::memcpy(values.back().data(), output.data.data(), output.data.size());
    }
    return values;
  }

  static inline ServedRepository* served_ = nullptr;
  static inline fs::path root_;
  static inline std::string model_path_;
  static inline InferenceServer* server_ = nullptr;  // served_'s
  static inline int http_port_ = 0;
  static inline int grpc_port_ = 0;
};

TEST_F(RangeServerTest, MetadataAndConfigReportTheDimsThatVaryAsMinusOne) {
  httplib::Client http("127.0.0.1", http_port_);
  auto metadata = http.Get("/v2/models/conv");
  ASSERT_TRUE(metadata);
  ASSERT_EQ(metadata->status, 200) << metadata->body;
  EXPECT_EQ(json::parse(metadata->body), json::parse(R"({"name":"conv","versions":["1"],"platform":"qdqrt_onnx",
      "inputs":[{"name":"x","datatype":"FP32","shape":[-1,3,-1,-1]}],
      "outputs":[{"name":"f","datatype":"FP32","shape":[-1,8,-1,-1]},{"name":"y","datatype":"FP32","shape":[-1,8,-1]}]})"));
  auto config = http.Get("/v2/models/conv/config");
  ASSERT_TRUE(config);
  ASSERT_EQ(config->status, 200) << config->body;
  json view = json::parse(config->body);
  EXPECT_EQ(view["max_batch_size"], 4);
  EXPECT_EQ(view["input"][0]["dims"], json::parse("[3, -1, -1]"));
  EXPECT_EQ(view["output"][1]["dims"], json::parse("[8, -1]"));
}

// Four clients, each a bounded list of requests cycling through shapes in the range (batch 1..3):
// every answer equals the direct run of its own input, and one shape equals an engine built for
// exactly that shape.
TEST_F(RangeServerTest, MixedShapesConcurrentlyEqualDirectRuns) {
  const std::vector<Shape> shapes = {{1, 3, 8, 8}, {2, 3, 16, 12}, {1, 3, 24, 24}, {3, 3, 9, 17}, {2, 3, 16, 12}};
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> clients;
  for (int client = 0; client < 4; ++client) {
    clients.emplace_back([&, client] {
      httplib::Client http("127.0.0.1", http_port_);
      http.set_read_timeout(60, 0);
      for (int request = 0; request < 10; ++request) {
        const Shape& shape = shapes[static_cast<size_t>(client + request) % shapes.size()];
        std::vector<float> values = random_values(shape, static_cast<uint32_t>(100 * client + request));
        json body = {{"inputs", {{{"name", "x"}, {"shape", shape}, {"datatype", "FP32"}, {"data", values}}}}};
        auto response = http.Post("/v2/models/conv/infer", body.dump(), "application/json");
        if (!response || response->status != 200) {
          ++failures;
          continue;
        }
        json answer = json::parse(response->body);
        std::vector<std::vector<float>> expected = direct_run(shape, values);
        for (size_t index = 0; index < expected.size(); ++index) {
          if (answer["outputs"][index]["data"].get<std::vector<float>>() != expected[index]) ++mismatches;
        }
      }
    });
  }
  for (auto& thread : clients) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);

  // The engine built for exactly one of those shapes gives the same bytes.
  const Shape shape = {3, 3, 9, 17};
  std::vector<float> values = random_values(shape, 7);
  engine::BuildOptions options;
  options.input_shapes["x"] = shape;
  auto fixed = engine::Engine::build_from_file(model_path_, options);
  ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
  auto context = (*fixed)->create_context({.threads = 1});
  std::vector<std::vector<float>> outputs;
  std::vector<engine::TensorBinding> bindings;
  for (const auto& info : (*fixed)->outputs()) outputs.emplace_back(static_cast<size_t>(shape_numel(info.shape)));
  for (size_t index = 0; index < outputs.size(); ++index) {
    bindings.push_back({(*fixed)->outputs()[index].name, outputs[index].data(), (*fixed)->outputs()[index].shape});
  }
  std::vector<engine::ConstTensorBinding> inputs = {{"x", values.data(), shape}};
  ASSERT_TRUE(context->run(inputs, bindings).is_ok());
  InferRequest request;
  request.model_name = "conv";
  request.inputs.push_back(float_tensor("x", shape, values));
  auto result = server_->infer(std::move(request));
  ASSERT_TRUE(std::holds_alternative<InferResponse>(result)) << std::get<ServeError>(result).message;
  const InferResponse& response = std::get<InferResponse>(result);
  EXPECT_EQ(response.outputs[0].shape, (Shape{3, 8, 5, 9}));
  EXPECT_EQ(response.outputs[1].shape, (Shape{3, 8, 45}));
  EXPECT_EQ(floats_of(response.outputs), outputs);
}

TEST_F(RangeServerTest, ShapesOutsideTheRangeAre400NamingInputDimAndRange) {
  httplib::Client http("127.0.0.1", http_port_);
  struct Case {
    Shape shape;
    std::string expected;
  };
  for (const Case& bad :
       {Case{{1, 3, 32, 16}, "input 'x': dim 2 of [1, 3, 32, 16] is 32, outside the profile's range 8..24"},
        Case{{1, 3, 8, 7}, "dim 3 of [1, 3, 8, 7] is 7, outside the profile's range 8..24"},
        Case{{5, 3, 8, 8}, "dim 0 of [5, 3, 8, 8] is 5, outside the profile's range 1..4"},
        Case{{1, 3, 8}, "rank 3"}}) {
    SCOPED_TRACE(shape_to_string(bad.shape));
    std::vector<float> values(static_cast<size_t>(shape_numel(bad.shape)), 0.5f);
    json body = {{"inputs", {{{"name", "x"}, {"shape", bad.shape}, {"datatype", "FP32"}, {"data", values}}}}};
    auto response = http.Post("/v2/models/conv/infer", body.dump(), "application/json");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 400);
    EXPECT_NE(json::parse(response->body)["error"].get<std::string>().find(bad.expected), std::string::npos)
        << response->body;
  }
  // gRPC: INVALID_ARGUMENT with the same message.
  inference::ModelInferRequest grpc_request;
  grpc_request.set_model_name("conv");
  auto* input = grpc_request.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  for (int64_t dim : {1, 3, 32, 16}) input->add_shape(dim);
  std::vector<float> grpc_values(1 * 3 * 32 * 16, 0.5f);
  grpc_request.add_raw_input_contents(
      std::string(reinterpret_cast<const char*>(grpc_values.data()), grpc_values.size() * sizeof(float)));
  inference::ModelInferResponse grpc_reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port_), grpc::InsecureChannelCredentials());
  grpc::Status status = inference::GRPCInferenceService::NewStub(channel)->ModelInfer(&context, grpc_request, &grpc_reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("dim 2 of [1, 3, 32, 16] is 32, outside the profile's range 8..24"),
            std::string::npos)
      << status.error_message();
  // A wrong dtype is refused before the range is looked at.
  InferRequest request;
  request.model_name = "conv";
  request.inputs.push_back(InferTensor{"x", DataType::kInt32, {1, 3, 8, 8}, std::vector<uint8_t>(768), std::nullopt});
  auto result = server_->infer(std::move(request));
  ASSERT_TRUE(std::holds_alternative<ServeError>(result));
  EXPECT_EQ(std::get<ServeError>(result).kind, ErrorKind::kBadRequest);
  EXPECT_NE(std::get<ServeError>(result).message.find("datatype INT32"), std::string::npos);
  // The server keeps serving.
  std::vector<float> values = random_values({1, 3, 8, 8}, 3);
  json body = {{"inputs", {{{"name", "x"}, {"shape", {1, 3, 8, 8}}, {"datatype", "FP32"}, {"data", values}}}}};
  EXPECT_EQ(http.Post("/v2/models/conv/infer", body.dump(), "application/json")->status, 200);
}

// Requests gathered on one thread merge into one run only when their shapes (past the batch) are
// equal; the others run separately, and every answer equals the direct run.
TEST_F(RangeServerTest, DynamicBatchingMergesOnlyEqualShapes) {
  auto served = runner("conv_no_delay");
  ASSERT_TRUE(served);
  struct Case {
    std::vector<Shape> shapes;
    uint64_t runs;
  };
  for (const Case& gathered :
       {Case{{{1, 3, 8, 8}, {2, 3, 8, 8}, {1, 3, 8, 8}}, 1}, Case{{{1, 3, 8, 8}, {1, 3, 16, 16}, {1, 3, 8, 8}}, 2},
        Case{{{1, 3, 8, 8}, {1, 3, 8, 10}, {1, 3, 10, 8}}, 3}}) {
    auto metrics = std::make_shared<ModelMetrics>();
    auto range = std::shared_ptr<const engine::RangeEngine>(served, served->range_engine());
    auto created = ModelRunner::create_for_range(range, served->config(), metrics);
    ASSERT_TRUE(created.ok()) << created.status().to_string();
    std::shared_ptr<ModelRunner> model = *created;
    // A dispatcher thread that has not reached its wait yet would take the queue itself.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const size_t count = gathered.shapes.size();
    std::vector<std::vector<float>> values(count);
    std::vector<std::vector<std::vector<float>>> answers(count);
    {
      ModelRunner::GatherScope scope;
      for (size_t request = 0; request < count; ++request) {
        values[request] = random_values(gathered.shapes[request], static_cast<uint32_t>(40 + request));
        std::vector<InferTensor> inputs;
        inputs.push_back(float_tensor("x", gathered.shapes[request], values[request]));
        model->infer_async(std::move(inputs), [&, request](InferOutcome outcome) {
          ASSERT_FALSE(outcome.error) << outcome.error->message;
          answers[request] = floats_of(outcome.outputs);
        });
      }
    }
    model->shutdown();  // answers what the dispatchers took
    EXPECT_EQ(metrics->request_success.load(), count);
    EXPECT_EQ(metrics->exec_count.load(), gathered.runs);
    for (size_t request = 0; request < count; ++request) {
      EXPECT_EQ(answers[request], direct_run(gathered.shapes[request], values[request])) << request;
    }
  }
}

TEST(RangeModelConfig, InputRangesAreParsedAndBadOnesRefusedNamingTheKey) {
  auto parsed = parse_model_config(R"({"input_ranges": {"x": {"min": [1, 3, 8, 8], "max": [2, 3, 16, 16]}}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->input_ranges.at("x").opt, (Shape{2, 3, 16, 16}));  // opt defaults to max
  // Defaults (serve's --minShapes/--maxShapes) apply to a config.json without shapes; one that
  // gives shapes replaces them.
  ModelConfig defaults;
  defaults.input_ranges["x"] = {{1, 8}, {1, 8}, {1, 16}};
  auto kept = parse_model_config(R"({"max_batch_size": 2})", defaults);
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  EXPECT_EQ(kept->input_ranges.size(), 1u);
  auto replaced = parse_model_config(R"({"input_shapes": {"x": [1, 12]}})", defaults);
  ASSERT_TRUE(replaced.ok()) << replaced.status().to_string();
  EXPECT_TRUE(replaced->input_ranges.empty());
  struct Case {
    std::string json;
    std::string expected;
  };
  for (const Case& bad : {
           Case{R"({"input_ranges": [1]})", "'input_ranges' must map input names"},
           Case{R"({"input_ranges": {"x": [1, 2]}})", "'input_ranges.x' must be an object"},
           Case{R"({"input_ranges": {"x": {"max": [1]}}})", "'input_ranges.x' needs \"min\" and \"max\""},
           Case{R"({"input_ranges": {"x": {"min": [1], "max": [2], "best": [1]}}})",
                "unknown key 'input_ranges.x.best'"},
           Case{R"({"input_ranges": {"x": {"min": [1, 3], "max": [2]}}})", "differ in rank"},
           Case{R"({"input_ranges": {"x": {"min": [1, 9], "max": [2, 8]}}})",
                "dim 1 needs min <= opt <= max, got 9 <= 8 <= 8"},
           Case{R"({"input_ranges": {"x": {"min": [0], "max": [2]}}})", "'input_ranges.x.min' must be in 1.."},
           Case{R"({"input_ranges": {"x": {"min": [1], "max": [65536, 65536, 65536]}}})", "more than"},
           Case{R"({"input_shapes": {"x": [1]}, "input_ranges": {"x": {"min": [1], "max": [2]}}})",
                "input 'x' is in both 'input_shapes' and 'input_ranges'"},
       }) {
    auto refused = parse_model_config(bad.json);
    ASSERT_FALSE(refused.ok()) << bad.json;
    EXPECT_NE(refused.status().message().find(bad.expected), std::string::npos) << refused.status().to_string();
  }
}

// A range the model cannot take fails the load naming the model and the key; the others serve.
TEST(RangeModelRepository, BadRangesFailTheLoadNamingModelAndInput) {
  fs::path root = fs::temp_directory_path() / ("qdqrt_range_repository_test_" + std::to_string(::getpid()));
  fs::create_directories(root);
  const std::string model = (root / "conv.onnx").string();
  ASSERT_TRUE(batch_testing::write_text_model(
                  kConvText,
                  {{"w1", {8, 3, 3, 3}, 0.3f}, {"b1", {8}, 0.1f}, {"w2", {8, 8, 3, 3}, 0.2f}, {"b2", {8}, 0.1f}}, 11,
                  model)
                  .is_ok());
  struct Case {
    std::string config;
    std::string expected;
  };
  for (const Case& bad : {
           Case{R"({"input_ranges": {"image": {"min": [1, 3, 8, 8], "max": [1, 3, 9, 9]}}})",
                "'input_ranges' names 'image', which is not an input of the model (inputs: x)"},
           Case{R"({"input_ranges": {"x": {"min": [1, 4, 8, 8], "max": [1, 4, 9, 9]}}})",
                "input 'x': dim 1 is 3 in the model, the profile gives 4..4"},
           Case{R"({})", "has a symbolic dim past the batch"},
       }) {
    SCOPED_TRACE(bad.config);
    fs::remove_all(root / "repository");
    fs::create_directories(root / "repository" / "conv" / "1");
    fs::copy_file(model, root / "repository" / "conv" / "1" / "model.onnx");
    std::ofstream(root / "repository" / "conv" / "config.json") << bad.config;
    RepositoryOptions options;
    options.repository_dir = (root / "repository").string();
    InferenceServer server(options);
    Status loaded = server.load_models();
    ASSERT_FALSE(loaded.is_ok());
    EXPECT_NE(loaded.message().find("model 'conv'"), std::string::npos) << loaded.to_string();
    EXPECT_NE(loaded.message().find(bad.expected), std::string::npos) << loaded.to_string();
  }
  std::error_code error;
  fs::remove_all(root, error);
}

}  // namespace
}  // namespace qdqrt::server

namespace qdqrt::server {
namespace {

std::string write_conv_model(const fs::path& dir) {
  const std::string path = (dir / "conv.onnx").string();
  EXPECT_TRUE(batch_testing::write_text_model(
                  kConvText,
                  {{"w1", {8, 3, 3, 3}, 0.3f}, {"b1", {8}, 0.1f}, {"w2", {8, 8, 3, 3}, 0.2f}, {"b2", {8}, 0.1f}}, 11,
                  path)
                  .is_ok());
  return path;
}

// The outputs of one request, or the error.
std::variant<std::vector<std::vector<float>>, ServeError> infer_at(InferenceServer& server, const std::string& model,
                                                                   const Shape& shape, uint32_t seed) {
  InferRequest request;
  request.model_name = model;
  request.inputs.push_back(float_tensor("x", shape, random_values(shape, seed)));
  auto result = server.infer(std::move(request));
  if (std::holds_alternative<ServeError>(result)) return std::get<ServeError>(result);
  std::vector<std::vector<float>> values;
  for (const InferTensor& output : std::get<InferResponse>(result).outputs) {
    values.emplace_back(output.data.size() / sizeof(float));
    std::memcpy(values.back().data(), output.data.data(), output.data.size());
  }
  return values;
}

// A range engine's file (two profiles) in the repository serves its profiles: shapes of either are
// answered as the ONNX model's range engine answers them, a shape in neither is a 400, and
// requests whose merged batch no profile holds are not merged.
TEST(RangeEngineFileServing, ProfilesOfASavedRangeEngineAreServed) {
  fs::path root = fs::temp_directory_path() / ("qdqrt_range_file_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "repository" / "conv" / "1");
  const std::string model = write_conv_model(root);
  // Profile 0: large images one at a time; profile 1: small images, batches up to 4.
  std::vector<engine::ShapeProfile> profiles = {{{"x", {{1, 3, 17, 17}, {1, 3, 24, 24}, {1, 3, 24, 24}}}},
                                                {{"x", {{1, 3, 8, 8}, {4, 3, 16, 16}, {4, 3, 16, 16}}}}};
  auto range = engine::RangeEngine::build_from_file(model, profiles, {});
  ASSERT_TRUE(range.ok()) << range.status().to_string();
  ASSERT_TRUE((*range)->write_file((root / "repository" / "conv" / "1" / "model.qdqrt").string()).is_ok());
  std::ofstream(root / "repository" / "conv" / "config.json") << R"({"max_batch_size": 4, "dynamic_batching": true})";
  RepositoryOptions options;
  options.repository_dir = (root / "repository").string();
  InferenceServer server(options);
  Status loaded = server.load_models();
  ASSERT_TRUE(loaded.is_ok()) << loaded.to_string();
  ServeError error;
  auto runner = server.repository().find("conv", "", error);
  ASSERT_TRUE(runner && runner->range_engine());
  EXPECT_EQ(runner->range_engine()->profiles().size(), 2u);
  EXPECT_EQ(runner->max_batch(), 4);
  EXPECT_EQ(runner->input_dims()[0], (Shape{-1, 3, -1, -1}));

  auto context = (*range)->create_context({.threads = 1});
  for (const Shape& shape : {Shape{1, 3, 20, 24}, Shape{3, 3, 8, 12}, Shape{1, 3, 17, 17}}) {
    SCOPED_TRACE(shape_to_string(shape));
    auto served = infer_at(server, "conv", shape, 5);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::vector<float>>>(served))
        << std::get<ServeError>(served).message;
    std::vector<float> values = random_values(shape, 5);
    auto infos = (*range)->output_infos({{"x", shape}});
    ASSERT_TRUE(infos.ok());
    std::vector<std::vector<float>> expected;
    std::vector<engine::TensorBinding> bindings;
    for (const auto& info : *infos) expected.emplace_back(static_cast<size_t>(shape_numel(info.shape)));
    for (size_t index = 0; index < infos->size(); ++index) {
      bindings.push_back({(*infos)[index].name, expected[index].data(), (*infos)[index].shape});
    }
    std::vector<engine::ConstTensorBinding> inputs = {{"x", values.data(), shape}};
    ASSERT_TRUE(context->run(inputs, bindings).is_ok());
    EXPECT_EQ(std::get<std::vector<std::vector<float>>>(served), expected);
  }
  // Batch 2 of large images, and a size between the profiles, lie in no profile.
  for (const Shape& shape : {Shape{2, 3, 20, 20}, Shape{1, 3, 16, 20}}) {
    auto refused = infer_at(server, "conv", shape, 6);
    ASSERT_TRUE(std::holds_alternative<ServeError>(refused)) << shape_to_string(shape);
    EXPECT_EQ(std::get<ServeError>(refused).kind, ErrorKind::kBadRequest);
    EXPECT_NE(std::get<ServeError>(refused).message.find("input 'x'"), std::string::npos)
        << std::get<ServeError>(refused).message;
  }
  // Two large images gathered together: merged they would be batch 2, which no profile holds.
  auto metrics = std::make_shared<ModelMetrics>();
  auto gathered = ModelRunner::create_for_range(*range, runner->config(), metrics);
  ASSERT_TRUE(gathered.ok()) << gathered.status().to_string();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::atomic<int> answered{0};
  {
    ModelRunner::GatherScope scope;
    for (uint32_t request = 0; request < 2; ++request) {
      std::vector<InferTensor> inputs;
      inputs.push_back(float_tensor("x", {1, 3, 20, 20}, random_values({1, 3, 20, 20}, request)));
      (*gathered)->infer_async(std::move(inputs), [&](InferOutcome outcome) {
        EXPECT_FALSE(outcome.error) << outcome.error->message;
        ++answered;
      });
    }
  }
  (*gathered)->shutdown();
  EXPECT_EQ(answered.load(), 2);
  EXPECT_EQ(metrics->exec_count.load(), 2u);
  // input_ranges cannot override an engine file's profiles.
  std::ofstream(root / "repository" / "conv" / "config.json")
      << R"({"input_ranges": {"x": {"min": [1, 3, 8, 8], "max": [1, 3, 9, 9]}}})";
  Status reloaded = server.repository().load("conv");
  ASSERT_FALSE(reloaded.is_ok());
  EXPECT_NE(reloaded.message().find("'input_ranges' needs a model.onnx"), std::string::npos) << reloaded.to_string();
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

// A model served over a range from ONNX is cached as a range engine's file and loaded from it
// the next time (the file is not rewritten); a cache entry for another range is not used.
TEST(RangeEngineFileServing, RangeModelsAreCachedAsRangeEngineFiles) {
  fs::path root = fs::temp_directory_path() / ("qdqrt_range_cache_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "repository" / "conv" / "1");
  fs::copy_file(write_conv_model(root), root / "repository" / "conv" / "1" / "model.onnx");
  auto configure = [&](int max_width) {
    std::ofstream(root / "repository" / "conv" / "config.json")
        << fmt::format(R"({{"input_ranges": {{"x": {{"min": [1, 3, 8, 8], "max": [2, 3, 16, {}]}}}}}})", max_width);
  };
  auto cache_files = [&] {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(root / "cache")) files.push_back(entry.path());
    return files;
  };
  RepositoryOptions options;
  options.repository_dir = (root / "repository").string();
  options.engine_cache_dir = (root / "cache").string();
  configure(16);
  std::vector<std::vector<float>> first_answer;
  {
    InferenceServer server(options);
    ASSERT_TRUE(server.load_models().is_ok());
    auto answer = infer_at(server, "conv", {2, 3, 12, 9}, 3);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::vector<float>>>(answer));
    first_answer = std::get<std::vector<std::vector<float>>>(answer);
  }
  ASSERT_EQ(cache_files().size(), 1u);
  const fs::path cached = cache_files().front();
  auto bytes = read_regular_file(cached.string(), "cache entry", size_t{1} << 30);
  ASSERT_TRUE(bytes.ok());
  EXPECT_TRUE(engine::is_range_engine_file(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size())));
  const auto written = fs::last_write_time(cached);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    InferenceServer server(options);
    ASSERT_TRUE(server.load_models().is_ok());
    EXPECT_EQ(fs::last_write_time(cached), written) << "the cached range engine was rebuilt";
    auto answer = infer_at(server, "conv", {2, 3, 12, 9}, 3);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::vector<float>>>(answer));
    EXPECT_EQ(std::get<std::vector<std::vector<float>>>(answer), first_answer);
  }
  configure(20);  // another range: another key, another file
  {
    InferenceServer server(options);
    ASSERT_TRUE(server.load_models().is_ok());
    auto answer = infer_at(server, "conv", {1, 3, 12, 20}, 3);
    EXPECT_TRUE(std::holds_alternative<std::vector<std::vector<float>>>(answer));
  }
  EXPECT_EQ(cache_files().size(), 2u);
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

}  // namespace
}  // namespace qdqrt::server
