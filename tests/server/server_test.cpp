// qdqrt serve end to end in-process: the HTTP and gRPC frontends on 127.0.0.1 (ports chosen by
// the OS) over the shipped fmnist_resnet model. Every result is compared bit for bit with a
// direct ExecutionContext::run of the same input, with dynamic batching on and off.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/grpc_frontend.h"
#include "server/grpc_predict_v2.grpc.pb.h"
#include "server/http_frontend.h"
#include "server/inference_server.h"
#include "server/model_runner.h"

#include <zlib.h>

#include "tests/server/failing_allocation.h"
#include "tests/server/served_repository.h"

namespace qdqrt::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int64_t kPixels = 28 * 28;
constexpr int64_t kClasses = 10;

std::vector<float> random_images(int64_t batch, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
  std::vector<float> images(static_cast<size_t>(batch * kPixels));
  for (float& value : images) value = pixel(generator);
  return images;
}

std::string as_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// A repository in a temporary folder: "fmnist" (dynamic batching, a long queue delay so that
// concurrent requests merge), "fmnist_unbatched" (dynamic batching off) and "fmnist_tiny_queue".
class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    served_ = new ServedRepository("qdqrt_server_test_");
    root_ = served_->root();
    const fs::path model = fs::path(QDQRT_SOURCE_ROOT_DIR) / "models" / "fmnist_resnet_qdq.onnx";
    served_->add_model("fmnist", model,
                       R"({"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 20000}})");
    served_->add_model("fmnist_unbatched", model, R"({"max_batch_size": 8, "dynamic_batching": false})");
    served_->add_model("fmnist_no_delay", model, R"({"max_batch_size": 8, "dynamic_batching": true})");
    served_->add_model("fmnist_tiny_queue", model,
                       R"({"max_batch_size": 8, "dynamic_batching": false, "max_queue_size": 1})");
    RepositoryOptions options;
    options.engine_cache_dir = (root_ / "cache").string();
    HttpOptions http_options;
    http_options.max_body_bytes = 1 << 20;
    GrpcOptions grpc_options;
    grpc_options.max_message_bytes = 1 << 20;
    Status started = served_->start(options, http_options, grpc_options);
    ASSERT_TRUE(started.is_ok()) << started.to_string();
    server_ = &served_->server();
    http_port_ = served_->http_port();
    grpc_port_ = served_->grpc_port();
    ServeError error;
    auto runner = server_->repository().find("fmnist", "", error);
    ASSERT_TRUE(runner);
    engine_ = std::shared_ptr<const engine::Engine>(runner, &runner->engine());
  }
  static void TearDownTestSuite() {
    engine_.reset();
    delete served_;
    served_ = nullptr;
    server_ = nullptr;
  }

  // The reference: the same engine run directly, on one context of one thread.
  static std::vector<float> direct_run(const std::vector<float>& images) {
    static std::mutex mutex;
    static std::unique_ptr<engine::ExecutionContext> context;
    std::lock_guard lock(mutex);
    if (!context) context = engine_->create_context({.threads = 1});
    int64_t batch = static_cast<int64_t>(images.size()) / kPixels;
    std::vector<float> logits(static_cast<size_t>(batch * kClasses));
    Status status = context->run({{"input", images.data(), {batch, 1, 28, 28}}}, {{"output", logits.data(), {batch, kClasses}}});
    EXPECT_TRUE(status.is_ok()) << status.to_string();
    return logits;
  }

  // The images as ModelRunner's input list.
  static std::vector<InferTensor> runner_inputs(const std::vector<float>& images) {
    InferTensor input{"input", DataType::kFloat, {static_cast<int64_t>(images.size()) / kPixels, 1, 28, 28}, {}};
    input.data.resize(images.size() * sizeof(float));
    std::memcpy(input.data.data(), images.data(), input.data.size());
    std::vector<InferTensor> inputs;
    inputs.push_back(std::move(input));
    return inputs;
  }

  static std::unique_ptr<httplib::Client> client() {
    auto http = std::make_unique<httplib::Client>("127.0.0.1", http_port_);
    http->set_read_timeout(30, 0);
    return http;
  }

  static std::string json_request(const std::vector<float>& images, const std::string& id = "") {
    json body = {{"inputs", {{{"name", "input"},
                              {"shape", {static_cast<int64_t>(images.size()) / kPixels, 1, 28, 28}},
                              {"datatype", "FP32"},
                              {"data", images}}}}};
    if (!id.empty()) body["id"] = id;
    return body.dump();
  }

  // POST with the binary extension both ways; returns the logits or fails.
  static std::vector<float> infer_binary(httplib::Client& http, const std::string& model,
                                         const std::vector<float>& images) {
    int64_t batch = static_cast<int64_t>(images.size()) / kPixels;
    std::string header = json{{"inputs", {{{"name", "input"},
                                           {"shape", {batch, 1, 28, 28}},
                                           {"datatype", "FP32"},
                                           {"parameters", {{"binary_data_size", images.size() * sizeof(float)}}}}}},
                              {"outputs", {{{"name", "output"}, {"parameters", {{"binary_data", true}}}}}}}
                             .dump();
    httplib::Headers headers = {{"Inference-Header-Content-Length", std::to_string(header.size())}};
    auto response = http.Post(("/v2/models/" + model + "/infer").c_str(), headers, header + as_bytes(images),
                              "application/octet-stream");
    if (!response) {
      ADD_FAILURE() << "no response: " << httplib::to_string(response.error());
      return {};
    }
    if (response->status != 200) {
      ADD_FAILURE() << response->status << " " << response->body;
      return {};
    }
    size_t json_length = std::stoul(response->get_header_value("Inference-Header-Content-Length"));
    std::string binary = response->body.substr(json_length);
    std::vector<float> logits(binary.size() / sizeof(float));
    std::memcpy(logits.data(), binary.data(), logits.size() * sizeof(float));
    return logits;
  }

  static std::unique_ptr<inference::GRPCInferenceService::Stub> grpc_stub() {
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port_), grpc::InsecureChannelCredentials());
    return inference::GRPCInferenceService::NewStub(channel);
  }

  static std::shared_ptr<ModelMetrics> metrics_of(const std::string& model) {
    return server_->metrics().model_metrics(model, "1");
  }

  // `clients` threads each send `requests` requests of batch 1..3 (bounded: no loop runs on time
  // alone); every response must equal the direct run of that request's own input.
  static int count_mismatches(const std::string& model, int clients, int requests,
                              const std::function<std::vector<float>(const std::string&, const std::vector<float>&)>& infer) {
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int client_index = 0; client_index < clients; ++client_index) {
      threads.emplace_back([&, client_index] {
        for (int request = 0; request < requests; ++request) {
          int64_t batch = 1 + (client_index + request) % 3;
          std::vector<float> images = random_images(batch, static_cast<uint32_t>(1000 * client_index + request));
          std::vector<float> got = infer(model, images);
          std::vector<float> expected = direct_run(images);
          if (got.size() != expected.size() ||
              std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) != 0) {
            ++mismatches;
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    return mismatches.load();
  }

  static std::vector<float> grpc_infer(inference::GRPCInferenceService::Stub& stub, const std::string& model,
                                       const std::vector<float>& images, grpc::Status* status_out = nullptr) {
    inference::ModelInferRequest request;
    request.set_model_name(model);
    request.set_id("grpc-1");
    auto* input = request.add_inputs();
    input->set_name("input");
    input->set_datatype("FP32");
    for (int64_t dim : {static_cast<int64_t>(images.size()) / kPixels, int64_t{1}, int64_t{28}, int64_t{28}}) {
      input->add_shape(dim);
    }
    request.add_raw_input_contents(as_bytes(images));
    inference::ModelInferResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status status = stub.ModelInfer(&context, request, &response);
    if (status_out) *status_out = status;
    if (!status.ok()) {
      if (!status_out) ADD_FAILURE() << status.error_code() << " " << status.error_message();
      return {};
    }
    EXPECT_EQ(response.id(), "grpc-1");
    EXPECT_EQ(response.outputs_size(), 1);
    EXPECT_EQ(response.raw_output_contents_size(), 1);
    if (response.raw_output_contents_size() != 1) return {};
    const std::string& bytes = response.raw_output_contents(0);
    std::vector<float> logits(bytes.size() / sizeof(float));
    std::memcpy(logits.data(), bytes.data(), logits.size() * sizeof(float));
    return logits;
  }

  static inline ServedRepository* served_ = nullptr;
  static inline fs::path root_;
  static inline InferenceServer* server_ = nullptr;  // served_'s
  static inline int http_port_ = 0;
  static inline int grpc_port_ = 0;
  static inline std::shared_ptr<const engine::Engine> engine_;
};

// A front end of its own for a test: loopback, a free port, `threads` workers (0: the default).
HttpOptions loopback_options(int threads = 0) {
  HttpOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  if (threads > 0) options.threads = threads;
  return options;
}

TEST_F(ServerTest, HealthAndMetadata) {
  auto http = client();
  EXPECT_EQ(http->Get("/v2/health/live")->status, 200);
  EXPECT_EQ(http->Get("/v2/health/ready")->status, 200);
  json server = json::parse(http->Get("/v2")->body);
  EXPECT_EQ(server["name"], "qdqrt");
  EXPECT_NE(std::find(server["extensions"].begin(), server["extensions"].end(), "binary_tensor_data"),
            server["extensions"].end());
  auto metadata = http->Get("/v2/models/fmnist");
  ASSERT_EQ(metadata->status, 200);
  EXPECT_EQ(json::parse(metadata->body), json::parse(R"({"name":"fmnist","versions":["1"],"platform":"qdqrt_onnx",
      "inputs":[{"name":"input","datatype":"FP32","shape":[-1,1,28,28]}],
      "outputs":[{"name":"output","datatype":"FP32","shape":[-1,10]}]})"));
  EXPECT_EQ(http->Get("/v2/models/fmnist/versions/1")->status, 200);
  EXPECT_EQ(http->Get("/v2/models/fmnist/ready")->status, 200);
  EXPECT_EQ(http->Get("/v2/models/fmnist/versions/1/ready")->status, 200);
  auto unknown = http->Get("/v2/models/nope");
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(json::parse(unknown->body)["error"], "unknown model 'nope'");
  EXPECT_EQ(http->Get("/v2/models/fmnist/versions/7/ready")->status, 404);
  auto no_route = http->Get("/v3/whatever");
  EXPECT_EQ(no_route->status, 404);
  EXPECT_TRUE(json::parse(no_route->body).contains("error"));
}

TEST_F(ServerTest, JsonInferEqualsDirectRunBitForBit) {
  auto http = client();
  for (int64_t batch : {1, 3, 8}) {
    std::vector<float> images = random_images(batch, 100 + static_cast<uint32_t>(batch));
    auto response = http->Post("/v2/models/fmnist_unbatched/infer", json_request(images, "req-7"), "application/json");
    ASSERT_TRUE(response);
    ASSERT_EQ(response->status, 200) << response->body;
    json body = json::parse(response->body);
    EXPECT_EQ(body["id"], "req-7");
    EXPECT_EQ(body["model_name"], "fmnist_unbatched");
    EXPECT_EQ(body["model_version"], "1");
    EXPECT_EQ(body["outputs"][0]["shape"], json::parse("[" + std::to_string(batch) + ", 10]"));
    std::vector<float> expected = direct_run(images);
    std::vector<float> got = body["outputs"][0]["data"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0) << "batch " << batch;
  }
}

TEST_F(ServerTest, BinaryInferEqualsDirectRunBitForBit) {
  auto http = client();
  std::vector<float> images = random_images(5, 7);
  std::vector<float> got = infer_binary(*http, "fmnist", images);
  std::vector<float> expected = direct_run(images);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0);
}

TEST_F(ServerTest, DynamicBatchingMergesRequestsAndKeepsResultsBitIdentical) {
  uint64_t runs_before = metrics_of("fmnist")->exec_count.load();
  uint64_t requests_before = metrics_of("fmnist")->request_success.load();
  int mismatches = count_mismatches("fmnist", 8, 6, [](const std::string& model, const std::vector<float>& images) {
    auto http = client();
    return infer_binary(*http, model, images);
  });
  EXPECT_EQ(mismatches, 0);
  uint64_t runs = metrics_of("fmnist")->exec_count.load() - runs_before;
  uint64_t requests = metrics_of("fmnist")->request_success.load() - requests_before;
  EXPECT_EQ(requests, 48u);
  EXPECT_LT(runs, requests) << "no request was merged";
}

TEST_F(ServerTest, BatchingOffRunsEachRequestAloneBitIdentical) {
  uint64_t runs_before = metrics_of("fmnist_unbatched")->exec_count.load();
  int mismatches = count_mismatches("fmnist_unbatched", 6, 5, [](const std::string& model, const std::vector<float>& images) {
    auto http = client();
    return infer_binary(*http, model, images);
  });
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(metrics_of("fmnist_unbatched")->exec_count.load() - runs_before, 30u);
}

TEST_F(ServerTest, GrpcInferEqualsDirectRunWithBatchingOnAndOff) {
  for (const char* model : {"fmnist", "fmnist_unbatched"}) {
    int mismatches = count_mismatches(model, 6, 4, [](const std::string& name, const std::vector<float>& images) {
      auto stub = grpc_stub();
      return grpc_infer(*stub, name, images);
    });
    EXPECT_EQ(mismatches, 0) << model;
  }
}

// Requests submitted inside a GatherScope are queued, then run together on this thread when the
// scope ends: one merged run with batching on, one run each with it off; answers bit-identical.
TEST_F(ServerTest, GatheredRequestsRunTogetherOnTheGatheringThread) {
  for (bool batching : {true, false}) {
    ModelConfig config;
    config.dynamic_batching = batching;
    auto metrics = std::make_shared<ModelMetrics>();
    auto runner = std::make_shared<ModelRunner>(engine_, config, metrics);
    // A dispatcher thread that has not reached its wait yet would take the queue itself.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<std::vector<float>> images;
    std::vector<std::vector<float>> answers(5);
    std::vector<std::thread::id> answered_on(5);
    int answered_inside_scope = 0;
    {
      ModelRunner::GatherScope outer;
      {
        ModelRunner::GatherScope inner;  // nested scopes gather until the outermost ends
        for (int request = 0; request < 5; ++request) {
          images.push_back(random_images(1 + request % 2, static_cast<uint32_t>(500 + request)));
          runner->infer_async(runner_inputs(images.back()), [&, request](InferOutcome outcome) {
            ASSERT_FALSE(outcome.error) << outcome.error->message;
            ASSERT_EQ(outcome.outputs.size(), 1u);
            answers[request].resize(outcome.outputs[0].data.size() / sizeof(float));
            std::memcpy(answers[request].data(), outcome.outputs[0].data.data(), outcome.outputs[0].data.size());
            answered_on[request] = std::this_thread::get_id();
          });
        }
      }
      answered_inside_scope = static_cast<int>(metrics->request_success.load());
    }
    EXPECT_EQ(answered_inside_scope, 0) << "a gathered request ran before the scope ended";
    runner->shutdown();  // answers whatever the dispatchers took
    EXPECT_EQ(metrics->request_success.load(), 5u);
    for (int request = 0; request < 5; ++request) EXPECT_EQ(answers[request], direct_run(images[request])) << request;
    if (batching) {
      EXPECT_EQ(metrics->exec_count.load(), 1u) << "the gathered requests were not merged";
      for (const auto& thread : answered_on) EXPECT_EQ(thread, std::this_thread::get_id());
    } else {
      EXPECT_EQ(metrics->exec_count.load(), 5u);
      EXPECT_EQ(answered_on[0], std::this_thread::get_id());  // the first runs here, the rest on the dispatcher
    }
  }
}

// Without a scope, a request that finds the runner idle runs at once on the caller's thread.
TEST_F(ServerTest, IdleRunnerAnswersOnTheCallersThread) {
  auto metrics = std::make_shared<ModelMetrics>();
  auto runner = std::make_shared<ModelRunner>(engine_, ModelConfig{}, metrics);
  std::thread::id answered_on;
  runner->infer_async(runner_inputs(random_images(1, 9)), [&](InferOutcome outcome) {
    EXPECT_FALSE(outcome.error);
    answered_on = std::this_thread::get_id();
  });
  EXPECT_EQ(answered_on, std::this_thread::get_id());
  EXPECT_EQ(metrics->exec_count.load(), 1u);
}

// gRPC's completion-queue thread gathers the infers it reads together: with batching on and no
// queue delay they merge, and every answer stays bit-identical.
TEST_F(ServerTest, GrpcConcurrentInfersMergeAndStayBitIdentical) {
  uint64_t runs_before = metrics_of("fmnist_no_delay")->exec_count.load();
  uint64_t requests_before = metrics_of("fmnist_no_delay")->request_success.load();
  int mismatches = count_mismatches("fmnist_no_delay", 8, 6, [](const std::string& name, const std::vector<float>& images) {
    auto stub = grpc_stub();
    return grpc_infer(*stub, name, images);
  });
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(metrics_of("fmnist_no_delay")->request_success.load() - requests_before, 48u);
  EXPECT_LE(metrics_of("fmnist_no_delay")->exec_count.load() - runs_before, 48u);
}

TEST_F(ServerTest, GrpcHealthMetadataAndErrors) {
  auto stub = grpc_stub();
  {
    grpc::ClientContext context;
    inference::ServerLiveResponse response;
    ASSERT_TRUE(stub->ServerLive(&context, {}, &response).ok());
    EXPECT_TRUE(response.live());
  }
  {
    grpc::ClientContext context;
    inference::ServerReadyResponse response;
    ASSERT_TRUE(stub->ServerReady(&context, {}, &response).ok());
    EXPECT_TRUE(response.ready());
  }
  {
    grpc::ClientContext context;
    inference::ServerMetadataResponse response;
    ASSERT_TRUE(stub->ServerMetadata(&context, {}, &response).ok());
    EXPECT_EQ(response.name(), "qdqrt");
  }
  {
    grpc::ClientContext context;
    inference::ModelMetadataRequest request;
    request.set_name("fmnist");
    inference::ModelMetadataResponse response;
    ASSERT_TRUE(stub->ModelMetadata(&context, request, &response).ok());
    ASSERT_EQ(response.inputs_size(), 1);
    EXPECT_EQ(response.inputs(0).datatype(), "FP32");
    EXPECT_EQ(response.inputs(0).shape(0), -1);
    EXPECT_EQ(response.outputs(0).shape(1), 10);
  }
  {
    grpc::ClientContext context;
    inference::ModelReadyRequest request;
    request.set_name("nope");
    inference::ModelReadyResponse response;
    EXPECT_EQ(stub->ModelReady(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  grpc::Status status;
  grpc_infer(*stub, "nope", random_images(1, 1), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  grpc_infer(*stub, "fmnist", random_images(9, 1), &status);  // over max batch 8
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("batch 9 is outside 1..8"), std::string::npos) << status.error_message();
  grpc_infer(*stub, "fmnist", std::vector<float>(kPixels / 2), &status);  // shape [0,1,28,28] but bytes
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Over the 1 MiB message limit.
  grpc_infer(*stub, "fmnist", std::vector<float>(kPixels * 400), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The server is still serving.
  grpc_infer(*stub, "fmnist", random_images(1, 3), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(ServerTest, BadRequestsGetProtocolErrorsAndTheServerKeepsServing) {
  auto http = client();
  auto expect_error = [&](const std::string& path, const std::string& body, int status, const std::string& message) {
    auto response = http->Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(response) << path;
    EXPECT_EQ(response->status, status) << body.substr(0, 200) << " -> " << response->body;
    json error = json::parse(response->body, nullptr, false);
    ASSERT_TRUE(error.is_object() && error["error"].is_string()) << response->body;
    EXPECT_NE(error["error"].get<std::string>().find(message), std::string::npos) << error["error"];
  };
  std::vector<float> one = random_images(1, 5);
  std::string valid = json_request(one);
  expect_error("/v2/models/fmnist/infer", "{\"inputs\": [", 400, "not valid JSON");
  expect_error("/v2/models/nope/infer", valid, 404, "unknown model 'nope'");
  expect_error("/v2/models/fmnist/versions/2/infer", valid, 404, "version '2' of model 'fmnist' is not served (served: 1)");
  json wrong_dtype = json::parse(valid);
  wrong_dtype["inputs"][0]["datatype"] = "INT32";
  wrong_dtype["inputs"][0]["data"] = std::vector<int>(kPixels, 1);
  expect_error("/v2/models/fmnist/infer", wrong_dtype.dump(), 400, "datatype INT32 where the model expects FP32");
  json wrong_shape = json::parse(valid);
  wrong_shape["inputs"][0]["shape"] = {1, 28, 28, 1};
  expect_error("/v2/models/fmnist/infer", wrong_shape.dump(), 400, "does not match the model's [-1,1,28,28]");
  json wrong_count = json::parse(valid);
  wrong_count["inputs"][0]["data"] = std::vector<float>(10, 0.0f);
  expect_error("/v2/models/fmnist/infer", wrong_count.dump(), 400, "holds 10 values where the shape needs 784");
  json unknown_input = json::parse(valid);
  unknown_input["inputs"][0]["name"] = "pixels";
  expect_error("/v2/models/fmnist/infer", unknown_input.dump(), 400, "unexpected input 'pixels'");
  json unknown_output = json::parse(valid);
  unknown_output["outputs"] = {{{"name", "probabilities"}}};
  expect_error("/v2/models/fmnist/infer", unknown_output.dump(), 400, "unexpected inference output 'probabilities'");
  // Over the 1 MiB body limit.
  auto large = http->Post("/v2/models/fmnist/infer", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
  EXPECT_TRUE(json::parse(large->body).contains("error"));
  // Still serving, bit for bit.
  auto fresh = client();
  auto response = fresh->Post("/v2/models/fmnist/infer", valid, "application/json");
  ASSERT_TRUE(response);
  ASSERT_EQ(response->status, 200);
  std::vector<float> got = json::parse(response->body)["outputs"][0]["data"].get<std::vector<float>>();
  EXPECT_EQ(got, direct_run(one));
}

TEST_F(ServerTest, FullQueueShedsLoadWith503) {
  // Queue of 1, no batching: concurrent clients overflow it. Bounded: at most 10 s or 50 rounds
  // (it stops at the first overflow; on a loaded machine the rounds overlap less).
  std::atomic<int> ok{0}, unavailable{0}, other{0};
  std::mutex other_mutex;
  std::string other_text;
  auto start = std::chrono::steady_clock::now();
  std::string body = json_request(random_images(1, 9));
  for (int round = 0; round < 50 && unavailable == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10);
       ++round) {
    std::vector<std::thread> threads;
    for (int index = 0; index < 16; ++index) {
      threads.emplace_back([&] {
        auto http = client();
        auto response = http->Post("/v2/models/fmnist_tiny_queue/infer", body, "application/json");
        if (response && response->status == 200) {
          ++ok;
        } else if (response && response->status == 503 && json::parse(response->body)["error"].get<std::string>().find("queue") != std::string::npos) {
          ++unavailable;
        } else {
          ++other;
          std::lock_guard lock(other_mutex);
          other_text = response ? std::to_string(response->status) + " " + response->body
                                : "no response: " + httplib::to_string(response.error());
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  EXPECT_GT(unavailable.load(), 0);
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(other.load(), 0) << other_text;
}

TEST_F(ServerTest, RepositoryIndexUnloadAndLoad) {
  auto http = client();
  json index = json::parse(http->Post("/v2/repository/index", "", "application/json")->body);
  ASSERT_EQ(index.size(), 4u);
  EXPECT_EQ(index[0], json::parse(R"({"name":"fmnist","version":"1","state":"READY"})"));
  EXPECT_EQ(http->Post("/v2/repository/models/fmnist_tiny_queue/unload", "", "application/json")->status, 200);
  EXPECT_EQ(http->Get("/v2/models/fmnist_tiny_queue/ready")->status, 503);
  EXPECT_EQ(http->Get("/v2/health/ready")->status, 503);
  EXPECT_EQ(http->Post("/v2/models/fmnist_tiny_queue/infer", json_request(random_images(1, 2)), "application/json")->status, 503);
  EXPECT_EQ(http->Post("/v2/repository/models/fmnist_tiny_queue/load", "", "application/json")->status, 200);
  EXPECT_EQ(http->Get("/v2/models/fmnist_tiny_queue/ready")->status, 200);
  EXPECT_EQ(http->Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(http->Post("/v2/repository/models/nope/load", "", "application/json")->status, 404);
}

TEST_F(ServerTest, MetricsUseTritonsNames) {
  HttpOptions options = loopback_options();
  HttpFrontend metrics(*server_, options, /*metrics_only=*/true);
  auto port = metrics.start();
  ASSERT_TRUE(port.ok());
  httplib::Client http("127.0.0.1", *port);
  auto response = http.Get("/metrics");
  ASSERT_TRUE(response);
  ASSERT_EQ(response->status, 200);
  for (const char* name : {"nv_inference_request_success{model=\"fmnist\",version=\"1\"}", "nv_inference_request_failure",
                           "nv_inference_count", "nv_inference_exec_count", "nv_inference_request_duration_us",
                           "nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us",
                           "nv_inference_compute_input_duration_us", "nv_inference_compute_output_duration_us",
                           "nv_inference_pending_request_count{model=\"fmnist\",version=\"1\"} 0",
                           "qdqrt_inference_batch_size_bucket", "\nnv_cpu_utilization ", "\nnv_cpu_memory_total_bytes ",
                           "\nnv_cpu_memory_used_bytes "}) {
    EXPECT_NE(response->body.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(http.Get("/v2")->status, 404);
  // The machine's memory and a utilization within [0, 1].
  auto gauge = [&](const std::string& name) {
    size_t at = response->body.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(response->body.substr(at + name.size() + 2));
  };
  EXPECT_GT(gauge("nv_cpu_memory_total_bytes"), 1e8);
  EXPECT_GT(gauge("nv_cpu_memory_used_bytes"), 0.0);
  EXPECT_LT(gauge("nv_cpu_memory_used_bytes"), gauge("nv_cpu_memory_total_bytes"));
  double utilization = gauge("nv_cpu_utilization");
  EXPECT_GE(utilization, 0.0);
  EXPECT_LE(utilization, 1.0);
}

int connect_to(int port) {
  int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(socket_fd);
    return -1;
  }
  return socket_fd;
}

TEST_F(ServerTest, TooManyConnectionsGet429AndSlowClientsAreDropped) {
  HttpOptions options = loopback_options(1);
  options.max_queued_connections = 1;
  options.read_timeout_seconds = 1;
  HttpFrontend small(*server_, options);
  auto port = small.start();
  ASSERT_TRUE(port.ok());
  // A slow client holds the only thread (a request whose body stalls), another fills the queue.
  // (A slow request head holds no thread: the head reader keeps it.)
  std::string stalled = "POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"ready\"";
  int slow = connect_to(*port);
  ASSERT_GE(slow, 0);
  ASSERT_GT(::send(slow, stalled.data(), stalled.size(), 0), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int queued = connect_to(*port);
  ASSERT_GE(queued, 0);
  ASSERT_GT(::send(queued, stalled.data(), stalled.size(), 0), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  httplib::Client http("127.0.0.1", *port);
  http.set_read_timeout(10, 0);
  auto refused = http.Get("/v2/health/live");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(json::parse(refused->body)["error"], "too many connections; retry later");
  // The slow client is dropped after the 1 s read timeout; then the server serves again.
  ::close(queued);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (status != 200 && std::chrono::steady_clock::now() < deadline) {
    httplib::Client retry("127.0.0.1", *port);
    auto response = retry.Get("/v2/health/live");
    status = response ? response->status : 0;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(status, 200);
  ::close(slow);
}

TEST_F(ServerTest, CorruptEngineCacheEntryIsRebuilt) {
  // Every cached engine file gets garbled; a reload must notice, rebuild and serve correctly.
  int garbled = 0;
  for (const auto& entry : fs::directory_iterator(root_ / "cache")) {
    if (entry.path().filename().string().starts_with("fmnist_unbatched-")) {
      std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(100);
      file.write("garbage!", 8);
      ++garbled;
    }
  }
  ASSERT_EQ(garbled, 1);
  Status reloaded = server_->repository().load("fmnist_unbatched");
  ASSERT_TRUE(reloaded.is_ok()) << reloaded.to_string();
  auto http = client();
  std::vector<float> images = random_images(2, 77);
  EXPECT_EQ(infer_binary(*http, "fmnist_unbatched", images), direct_run(images));
}

// ---- Hostile and unusual traffic (loopback, bounded) ----

// Sends `request` on a fresh connection (ignoring send errors: the server may answer and close
// early), then reads until the server closes or `timeout_ms` passes. Returns what was read.
std::string raw_exchange(int port, const std::string& request, int timeout_ms = 10000) {
  int fd = connect_to(port);
  if (fd < 0) return "";
  timeval timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t count = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (count <= 0) break;
    sent += static_cast<size_t>(count);
  }
  std::string response;
  char buffer[65536];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t count = ::recv(fd, buffer, sizeof(buffer), 0);
    if (count <= 0) break;
    response.append(buffer, static_cast<size_t>(count));
  }
  ::close(fd);
  return response;
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

std::string body_of(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

std::string chunked(const std::string& body, size_t chunk_size) {
  std::string framed;
  for (size_t offset = 0; offset < body.size(); offset += chunk_size) {
    size_t size = std::min(chunk_size, body.size() - offset);
    char length[32];
    std::snprintf(length, sizeof(length), "%zx\r\n", size);
    framed += length;
    framed.append(body, offset, size);
    framed += "\r\n";
  }
  return framed + "0\r\n\r\n";
}

// gzip (window_bits 31) or zlib "deflate" (15) of `text`.
std::string compress(const std::string& text, int window_bits) {
  z_stream stream{};
  deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, text.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

std::string post_head(const std::string& path, const std::string& extra_headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers + "\r\n";
}

// A load of a name that does not exist is a 404 that leaves nothing behind: the server stays
// ready and the index does not grow (HTTP and gRPC, also '' and paths out of the repository).
TEST_F(ServerTest, UnknownModelLoadsLeaveNoEntryAndTheServerStaysReady) {
  auto http = client();
  size_t index_before = json::parse(http->Post("/v2/repository/index", "", "application/json")->body).size();
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::string path = "/v2/repository/models/missing_" + std::to_string(attempt) + "/load";
    EXPECT_EQ(http->Post(path.c_str(), "", "application/json")->status, 404);
  }
  EXPECT_EQ(http->Post("/v2/repository/models/../load", "", "application/json")->status, 404);
  EXPECT_EQ(http->Post("/v2/repository/models/missing_0/unload", "", "application/json")->status, 404);
  auto stub = grpc_stub();
  for (const std::string& name : {std::string(""), std::string("../../etc"), std::string("a/b"), std::string(".hidden"),
                                  std::string("fmnist\0x", 8)}) {
    grpc::ClientContext context;
    inference::RepositoryModelLoadRequest request;
    request.set_model_name(name);
    inference::RepositoryModelLoadResponse response;
    EXPECT_EQ(stub->RepositoryModelLoad(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND) << name;
  }
  EXPECT_EQ(http->Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(json::parse(http->Post("/v2/repository/index", "", "application/json")->body).size(), index_before);
}

// Each copy of a repeated output name would be another full output: refused as Triton does.
TEST_F(ServerTest, DuplicateOutputNamesAreRefused) {
  auto http = client();
  json body = json::parse(json_request(random_images(1, 4)));
  body["outputs"] = json::array();
  for (int copy = 0; copy < 3; ++copy) body["outputs"].push_back({{"name", "output"}});
  auto response = http->Post("/v2/models/fmnist/infer", body.dump(), "application/json");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 400);
  EXPECT_NE(response->body.find("output 'output' is requested more than once"), std::string::npos) << response->body;
  inference::ModelInferRequest request;
  request.set_model_name("fmnist");
  auto* input = request.add_inputs();
  input->set_name("input");
  input->set_datatype("FP32");
  for (int64_t dim : {1, 1, 28, 28}) input->add_shape(dim);
  request.add_raw_input_contents(as_bytes(random_images(1, 4)));
  request.add_outputs()->set_name("output");
  request.add_outputs()->set_name("output");
  inference::ModelInferResponse reply;
  grpc::ClientContext context;
  grpc::Status status = grpc_stub()->ModelInfer(&context, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("requested more than once"), std::string::npos) << status.error_message();
}

// Memory running out inside a handler (here: copying a batch-8 input, 25,088 bytes) is answered
// with an error on gRPC and HTTP alike, and the server keeps serving.
TEST_F(ServerTest, OutOfMemoryInAHandlerIsAnsweredAndTheServerKeepsServing) {
  std::vector<float> images = random_images(8, 11);
  ASSERT_EQ(images.size() * sizeof(float), 25088u);
  auto stub = grpc_stub();
  grpc::Status status;
  g_failing_allocation_size = 25088;
  grpc_infer(*stub, "fmnist_unbatched", images, &status);
  g_failing_allocation_size = SIZE_MAX;
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_EQ(status.error_message(), "out of memory");
  auto http = client();
  std::string header = json{{"inputs", {{{"name", "input"}, {"shape", {8, 1, 28, 28}}, {"datatype", "FP32"},
                                         {"parameters", {{"binary_data_size", 25088}}}}}}}.dump();
  httplib::Headers headers = {{"Inference-Header-Content-Length", std::to_string(header.size())}};
  g_failing_allocation_size = 25088;
  auto response = http->Post("/v2/models/fmnist_unbatched/infer", headers, header + as_bytes(images), "application/octet-stream");
  g_failing_allocation_size = SIZE_MAX;
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_NE(response->body.find("out of memory"), std::string::npos);
  EXPECT_EQ(grpc_infer(*stub, "fmnist_unbatched", images), direct_run(images));
  EXPECT_EQ(infer_binary(*http, "fmnist_unbatched", images), direct_run(images));
}

// A dispatcher whose answer callback throws keeps its instance and serves the next request.
TEST_F(ServerTest, DispatcherSurvivesAnAnswerThatThrows) {
  ModelConfig config;
  config.max_queue_delay_us = 1000;  // queued: answered on the dispatcher thread
  auto metrics = std::make_shared<ModelMetrics>();
  auto runner = std::make_shared<ModelRunner>(engine_, config, metrics);
  std::atomic<int> thrown{0};
  for (int request = 0; request < 3; ++request) {
    runner->infer_async(runner_inputs(random_images(1, 40 + static_cast<uint32_t>(request))), [&](InferOutcome) {
      ++thrown;
      throw std::runtime_error("callback failed");
    });
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (thrown < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(thrown.load(), 3);
  std::vector<float> images = random_images(1, 50);
  std::promise<std::vector<float>> answered;
  runner->infer_async(runner_inputs(images), [&](InferOutcome outcome) {
    std::vector<float> logits(outcome.outputs.empty() ? 0 : outcome.outputs[0].data.size() / sizeof(float));
    if (!logits.empty()) std::memcpy(logits.data(), outcome.outputs[0].data.data(), logits.size() * sizeof(float));
    answered.set_value(logits);
  });
  auto future = answered.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(future.get(), direct_run(images));
  runner->shutdown();
}

// --maxBodyBytes (1 MiB here) holds for chunked and gzip/deflate bodies: counted as they
// arrive and as they inflate, refused with 413 long before the inflated size.
TEST_F(ServerTest, ChunkedAndCompressedBodiesAreBoundedAfterDecoding) {
  std::string padded = json_request(random_images(1, 3));
  padded.insert(padded.size() - 1, std::string(3 << 20, ' '));  // 3 MiB of spaces inside the object
  std::string response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer",
                                                            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n") +
                                                      chunked(padded, 65536));
  EXPECT_EQ(status_of(response), 413) << response.substr(0, 300);
  EXPECT_NE(body_of(response).find("request body too large"), std::string::npos);
  std::string zeros(64 << 20, '0');
  for (auto [encoding, window_bits] : {std::pair{"gzip", 31}, std::pair{"deflate", 15}}) {
    std::string packed = compress(zeros, window_bits);
    ASSERT_LT(packed.size(), 200000u);
    response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer",
                                                  std::string("Content-Type: application/json\r\nContent-Encoding: ") + encoding +
                                                      "\r\nContent-Length: " + std::to_string(packed.size()) + "\r\n") +
                                            packed);
    EXPECT_EQ(status_of(response), 413) << encoding << ": " << response.substr(0, 300);
    // Chunked and compressed at once.
    response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer",
                                                  std::string("Content-Encoding: ") + encoding +
                                                      "\r\nTransfer-Encoding: chunked\r\n") +
                                            chunked(packed, 4096));
    EXPECT_EQ(status_of(response), 413) << encoding << " chunked: " << response.substr(0, 300);
  }
  EXPECT_EQ(client()->Get("/v2/health/live")->status, 200);
}

// Well-formed chunked and compressed requests are served, bit for bit.
TEST_F(ServerTest, ChunkedAndCompressedRequestsAreServed) {
  std::vector<float> images = random_images(2, 21);
  std::vector<float> expected = direct_run(images);
  std::string body = json_request(images);
  auto logits_of = [](const std::string& response) {
    json parsed = json::parse(body_of(response), nullptr, false);
    if (!parsed.is_object() || !parsed.contains("outputs")) return std::vector<float>{};
    return parsed["outputs"][0]["data"].get<std::vector<float>>();
  };
  std::string response = raw_exchange(http_port_, post_head("/v2/models/fmnist_unbatched/infer", "Transfer-Encoding: chunked\r\n") +
                                                      chunked(body, 1000));
  EXPECT_EQ(status_of(response), 200) << response.substr(0, 300);
  EXPECT_EQ(logits_of(response), expected);
  std::string packed = compress(body, 31);
  response = raw_exchange(http_port_, post_head("/v2/models/fmnist_unbatched/infer",
                                                "Content-Encoding: gzip\r\nContent-Length: " + std::to_string(packed.size()) + "\r\n") +
                                          packed);
  EXPECT_EQ(status_of(response), 200) << response.substr(0, 300);
  EXPECT_EQ(logits_of(response), expected);
}

// Header count and total header bytes are capped (431), before they cost memory.
TEST_F(ServerTest, OversizedRequestHeadsGet431) {
  std::string many = "GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int index = 0; index < 20000; ++index) many += "X-" + std::to_string(index) + ": 1\r\n";
  std::string response = raw_exchange(http_port_, many + "\r\n");
  EXPECT_EQ(status_of(response), 431) << response.substr(0, 300);
  std::string large = "GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int index = 0; index < 10; ++index) large += "X-Big-" + std::to_string(index) + ": " + std::string(4000, 'a') + "\r\n";
  response = raw_exchange(http_port_, large + "\r\n");
  EXPECT_EQ(status_of(response), 431) << response.substr(0, 300);
  EXPECT_EQ(status_of(raw_exchange(http_port_, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")), 200);
}

// RFC 9112 framing: disagreeing Content-Lengths, transfer codings other than chunked, both at
// once, multipart bodies: refused. A POST without a length has an empty body (answered, not
// waited on until the connection closes).
TEST_F(ServerTest, RequestFramingIsCheckedBeforeTheBodyIsRead) {
  std::string valid = json_request(random_images(1, 8));
  std::string length = "Content-Length: " + std::to_string(valid.size()) + "\r\n";
  std::string response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", length + "Content-Length: 5\r\n") + valid);
  EXPECT_EQ(status_of(response), 400);
  EXPECT_NE(body_of(response).find("Content-Length headers that disagree"), std::string::npos) << response;
  EXPECT_EQ(status_of(raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", length + length) + valid)), 200);
  response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", "Transfer-Encoding: gzip, chunked\r\n") + valid);
  EXPECT_EQ(status_of(response), 501) << response;
  response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", length + "Transfer-Encoding: chunked\r\n") + chunked(valid, 100));
  EXPECT_EQ(status_of(response), 400) << response;
  response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", length + "Content-Encoding: compress\r\n") + valid);
  EXPECT_EQ(status_of(response), 415) << response;
  response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", length + "Content-Type: multipart/form-data; boundary=x\r\n") + valid);
  EXPECT_EQ(status_of(response), 415) << response;
  response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", "Content-Length: 12x\r\n") + valid);
  EXPECT_EQ(status_of(response), 400) << response;
  response = raw_exchange(http_port_, post_head("/v2/repository/index", ""), 5000);
  EXPECT_EQ(status_of(response), 200) << response;
  EXPECT_TRUE(json::parse(body_of(response), nullptr, false).is_array());
  response = raw_exchange(http_port_, post_head("/v2/models/fmnist/infer", ""), 5000);
  EXPECT_EQ(status_of(response), 400) << response;
  EXPECT_NE(body_of(response).find("the request body is empty"), std::string::npos);
}

// curl -d sends JSON as a form: served whatever its size (httplib alone capped forms at 8 KiB).
TEST_F(ServerTest, FormEncodedJsonOver8KiBIsServed) {
  std::vector<float> images = random_images(3, 31);
  std::string body = json_request(images);
  ASSERT_GT(body.size(), 8192u);
  auto response = client()->Post("/v2/models/fmnist_unbatched/infer", body, "application/x-www-form-urlencoded");
  ASSERT_TRUE(response);
  ASSERT_EQ(response->status, 200) << response->body.substr(0, 300);
  EXPECT_EQ(json::parse(response->body)["outputs"][0]["data"].get<std::vector<float>>(), direct_run(images));
}

// A client that trickles its request head is cut off at the header deadline (408), however
// steadily it sends; then the thread serves others.
TEST_F(ServerTest, TricklingRequestHeadGets408AtTheHeaderDeadline) {
  HttpOptions options = loopback_options(1);
  options.header_timeout_seconds = 2;
  HttpFrontend small(*server_, options);
  auto port = small.start();
  ASSERT_TRUE(port.ok());
  int slow = connect_to(*port);
  ASSERT_GE(slow, 0);
  timeval timeout{1, 0};
  ::setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string head = "GET /v2/health/live HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
  auto start = std::chrono::steady_clock::now();
  std::string response;
  char buffer[4096];
  // One byte every 200 ms (well within the 5 s read timeout); bounded by 40 bytes (8 s).
  for (size_t index = 0; index < head.size() && response.empty(); ++index) {
    if (::send(slow, head.data() + index, 1, MSG_NOSIGNAL) <= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ssize_t count = ::recv(slow, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (count > 0) response.assign(buffer, static_cast<size_t>(count));
  }
  if (response.empty()) {
    ssize_t count = ::recv(slow, buffer, sizeof(buffer), 0);
    if (count > 0) response.assign(buffer, static_cast<size_t>(count));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(slow);
  EXPECT_EQ(status_of(response), 408) << response;
  EXPECT_LT(seconds, 4.0);
  httplib::Client http("127.0.0.1", *port);
  EXPECT_EQ(http.Get("/v2/health/live")->status, 200);
}

// A compressed gRPC message is refused before it is inflated (gRPC 1.51 would inflate it whole
// before checking the size limit).
TEST_F(ServerTest, GrpcCompressedRequestsAreRefusedWithoutInflating) {
  inference::ModelInferRequest request;
  request.set_model_name("fmnist");
  auto* input = request.add_inputs();
  input->set_name("input");
  input->set_datatype("FP32");
  for (int64_t dim : {1, 1, 28, 28}) input->add_shape(dim);
  request.add_raw_input_contents(std::string(32 << 20, '\0'));  // 32 MiB, a few KiB compressed
  inference::ModelInferResponse response;
  grpc::ClientContext context;
  context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status status = grpc_stub()->ModelInfer(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
  grpc_infer(*grpc_stub(), "fmnist", random_images(1, 3), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// Stopping answers every request already sent on an accepted connection (here 6 connections
// behind one thread, all sent before stop()), and returns within its grace period.
TEST_F(ServerTest, StopAnswersEveryAcceptedRequest) {
  HttpOptions options = loopback_options(1);
  auto small = std::make_unique<HttpFrontend>(*server_, options);
  auto port = small->start();
  ASSERT_TRUE(port.ok());
  std::string valid = json_request(random_images(1, 12));
  std::string request = "POST /v2/models/fmnist/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(valid.size()) + "\r\n\r\n" + valid;
  std::vector<int> sockets;
  for (int index = 0; index < 6; ++index) {
    int fd = connect_to(*port);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    sockets.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] { small->stop(); });
  int answered = 0;
  for (int fd : sockets) {
    timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    std::string response;
    char buffer[65536];
    for (;;) {
      ssize_t count = ::recv(fd, buffer, sizeof(buffer), 0);
      if (count <= 0) break;
      response.append(buffer, static_cast<size_t>(count));
    }
    int status = status_of(response);
    if (status == 200 || status == 503) ++answered;
    ::close(fd);
  }
  stopper.join();
  EXPECT_EQ(answered, 6);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 8.0);
}

// config.json errors: one clear error each, naming the model and the key; nothing loads with
// defaults by mistake.
TEST(ModelRepositoryConfig, BadConfigsAreRefusedNamingModelAndKey) {
  fs::path root = fs::temp_directory_path() / ("qdqrt_config_test_" + std::to_string(::getpid()));
  fs::create_directories(root);
  fs::path model = fs::path(QDQRT_SOURCE_ROOT_DIR) / "models" / "fmnist_resnet_qdq.onnx";
  auto add = [&](const std::string& name) {
    fs::create_directories(root / name / "1");
    fs::copy_file(model, root / name / "1" / "model.onnx");
    return root / name / "config.json";
  };
  fs::create_directories(add("config_is_directory"));
  fs::create_symlink("/dev/zero", add("config_is_device"));
  std::ofstream(add("unknown_input")) << R"({"input_shapes": {"pixels": [8, 1, 28, 28]}})";
  std::ofstream(add("huge_delay")) << R"({"dynamic_batching": {"max_queue_delay_microseconds": 10000000000000}})";
  std::ofstream(add("many_instances")) << R"({"instance_group": {"count": 1000000}})";
  add("triton_config");
  std::ofstream(root / "triton_config" / "config.pbtxt") << "max_batch_size: 4\n";
  MetricsRegistry metrics;
  RepositoryOptions options;
  options.repository_dir = root.string();
  ModelRepository repository(options, metrics);
  auto message_of = [&](const std::string& name) {
    Status status = repository.load(name);
    EXPECT_FALSE(status.is_ok()) << name;
    return status.message();
  };
  EXPECT_NE(message_of("config_is_directory").find("model 'config_is_directory'"), std::string::npos);
  EXPECT_NE(message_of("config_is_directory").find("is a directory, not a regular file"), std::string::npos);
  EXPECT_NE(message_of("config_is_device").find("is a character device, not a regular file"), std::string::npos);
  EXPECT_NE(message_of("unknown_input").find("'input_shapes' names 'pixels', which is not an input of the model"),
            std::string::npos)
      << message_of("unknown_input");
  EXPECT_NE(message_of("huge_delay").find("model 'huge_delay'"), std::string::npos);
  EXPECT_NE(message_of("huge_delay").find("'dynamic_batching.max_queue_delay_microseconds' must be in 0..10000000"),
            std::string::npos);
  EXPECT_NE(message_of("many_instances").find("'instance_group.count' must be in 1..256, got 1000000"), std::string::npos);
  EXPECT_NE(message_of("triton_config").find("has a config.pbtxt (Triton's protobuf text), which qdqrt does not read"),
            std::string::npos);
  // Each is listed unavailable with its reason; nothing is serving with defaults.
  for (const ModelIndexEntry& entry : repository.index()) EXPECT_EQ(entry.state, "UNAVAILABLE") << entry.name;
  EXPECT_EQ(repository.index().size(), 6u);
  repository.shutdown();
  std::error_code error;
  fs::remove_all(root, error);
}

// A served .qdqrt overwritten in place (cp over it) does not change what is served: the bytes
// verified at load are the ones that run. Replacing by rename and reloading serves the new file.
TEST_F(ServerTest, EngineFileOverwrittenInPlaceKeepsServingWhatWasLoaded) {
  fs::path folder = root_ / "repository" / "fmnist_saved" / "1";
  fs::create_directories(folder);
  fs::path file = folder / "model.qdqrt";
  ASSERT_TRUE(engine_->save(file.string()).is_ok());
  ASSERT_TRUE(server_->repository().load("fmnist_saved").is_ok());
  auto http = client();
  std::vector<float> images = random_images(2, 61);
  std::vector<float> expected = direct_run(images);
  EXPECT_EQ(infer_binary(*http, "fmnist_saved", images), expected);
  {
    // In place: same inode, every byte changed.
    std::fstream overwrite(file, std::ios::in | std::ios::out | std::ios::binary);
    std::string garbage(fs::file_size(file), '\x5a');
    overwrite.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  EXPECT_EQ(infer_binary(*http, "fmnist_saved", images), expected);
  EXPECT_EQ(infer_binary(*http, "fmnist_saved", images), expected);
  // A reload of the garbled file fails and keeps serving the loaded version.
  EXPECT_FALSE(server_->repository().load("fmnist_saved").is_ok());
  EXPECT_EQ(infer_binary(*http, "fmnist_saved", images), expected);
  ASSERT_TRUE(server_->repository().unload("fmnist_saved").is_ok());
  fs::remove_all(root_ / "repository" / "fmnist_saved");
  // The folder is gone: the load is a 404 and the entry goes with it (the server is ready again).
  EXPECT_TRUE(is_unknown_model(server_->repository().load("fmnist_saved")));
  EXPECT_TRUE(server_->ready());
}

// Idle keep-alive connections do not starve new clients: when every thread is busy and a
// connection waits, an idle one gives its thread up (long keep-alive timeout: without that the
// new client would wait 30 s).
TEST_F(ServerTest, IdleKeepAliveConnectionsDoNotStarveNewClients) {
  HttpOptions options = loopback_options(2);
  options.keep_alive_timeout_seconds = 30;
  HttpFrontend small(*server_, options);
  auto port = small.start();
  ASSERT_TRUE(port.ok());
  std::vector<int> idle;
  for (int index = 0; index < 2; ++index) {
    int fd = connect_to(*port);
    ASSERT_GE(fd, 0);
    std::string request = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_GT(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), 0);
    char buffer[1024];
    ASSERT_GT(::recv(fd, buffer, sizeof(buffer), 0), 0);  // answered; the connection stays open, idle
    idle.push_back(fd);
  }
  auto start = std::chrono::steady_clock::now();
  httplib::Client http("127.0.0.1", *port);
  http.set_read_timeout(5, 0);
  auto response = http.Get("/v2/health/live");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_LT(seconds, 2.0);
  for (int fd : idle) ::close(fd);
}

// Slow request heads hold no thread (the head reader keeps them), and slow bodies cannot hold
// the 429 threads (they answer without reading the body): with the pool and its queue held by
// stalled bodies and 40 trickling heads open, a new connection gets its 429 at once.
TEST_F(ServerTest, TooManyConnectionsGetAPrompt429EvenWhenSlowClientsHoldEveryThread) {
  HttpOptions options = loopback_options(1);
  options.max_queued_connections = 1;
  HttpFrontend small(*server_, options);
  auto port = small.start();
  ASSERT_TRUE(port.ok());
  std::vector<int> slow;
  std::string stalled = "POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
  for (int index = 0; index < 44; ++index) {
    int fd = connect_to(*port);
    ASSERT_GE(fd, 0);
    if (index < 4) {
      ::send(fd, stalled.data(), stalled.size(), MSG_NOSIGNAL);  // the thread, its queue, two 429s
    } else {
      ::send(fd, "GET /v2/health/live HTTP/1.1\r\nX-Slow: ", 38, MSG_NOSIGNAL);  // a head still arriving
    }
    slow.push_back(fd);
    if (index < 4) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto start = std::chrono::steady_clock::now();
  std::string response =
      raw_exchange(*port, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5000);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(status_of(response), 429) << response;
  EXPECT_LT(seconds, 0.5);
  for (int fd : slow) ::close(fd);
}

// 40 clients trickling their request heads do not delay anyone: with 2 threads, a new client is
// answered at once (the heads wait in the head reader, holding no thread).
TEST_F(ServerTest, TricklingHeadsDoNotDelayOtherClients) {
  HttpOptions options = loopback_options(2);
  HttpFrontend small(*server_, options);
  auto port = small.start();
  ASSERT_TRUE(port.ok());
  std::vector<int> slow;
  for (int index = 0; index < 40; ++index) {
    int fd = connect_to(*port);
    ASSERT_GE(fd, 0);
    ::send(fd, "GET /v2/health/live HTTP/1.1\r\nX-Slow: a", 40, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int probe = 0; probe < 5; ++probe) {
    auto start = std::chrono::steady_clock::now();
    std::string response =
        raw_exchange(*port, "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5000);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(status_of(response), 200) << response;
    EXPECT_LT(seconds, 0.5) << "probe " << probe;
  }
  for (int fd : slow) ::close(fd);
}

// Triton's statistics extension over HTTP and gRPC: counts that follow the requests made,
// durations, and per-batch-size executions.
TEST_F(ServerTest, StatisticsFollowTheRequestsInTritonsSchema) {
  auto http = client();
  auto stats_of = [&](const std::string& path) {
    auto response = http->Get(path.c_str());
    EXPECT_TRUE(response && response->status == 200) << (response ? response->body : "no response");
    return response ? json::parse(response->body) : json();
  };
  json before = stats_of("/v2/models/fmnist_unbatched/stats")["model_stats"][0];
  for (int64_t batch : {1, 3, 3}) {
    std::vector<float> images = random_images(batch, 70 + static_cast<uint32_t>(batch));
    EXPECT_EQ(infer_binary(*http, "fmnist_unbatched", images), direct_run(images));
  }
  json bad = json::parse(json_request(random_images(1, 2)));
  bad["inputs"][0]["shape"] = {1, 28, 28, 1};
  EXPECT_EQ(http->Post("/v2/models/fmnist_unbatched/infer", bad.dump(), "application/json")->status, 400);
  json after = stats_of("/v2/models/fmnist_unbatched/versions/1/stats")["model_stats"][0];
  EXPECT_EQ(after["name"], "fmnist_unbatched");
  EXPECT_EQ(after["version"], "1");
  const json& stats = after["inference_stats"];
  EXPECT_EQ(stats["success"]["count"].get<uint64_t>() - before["inference_stats"]["success"]["count"].get<uint64_t>(), 3u);
  EXPECT_EQ(stats["fail"]["count"].get<uint64_t>() - before["inference_stats"]["fail"]["count"].get<uint64_t>(), 1u);
  EXPECT_EQ(after["inference_count"].get<uint64_t>() - before["inference_count"].get<uint64_t>(), 7u);
  EXPECT_EQ(after["execution_count"].get<uint64_t>() - before["execution_count"].get<uint64_t>(), 3u);
  EXPECT_GT(stats["success"]["ns"].get<uint64_t>(), before["inference_stats"]["success"]["ns"].get<uint64_t>());
  EXPECT_GT(stats["compute_infer"]["ns"].get<uint64_t>(), 0u);
  EXPECT_GT(after["last_inference"].get<uint64_t>(), 1'700'000'000'000u);
  uint64_t batch_three = 0;
  for (const json& batch : after["batch_stats"]) {
    if (batch["batch_size"] == 3) batch_three = batch["compute_infer"]["count"].get<uint64_t>();
  }
  EXPECT_GE(batch_three, 2u);
  json all = stats_of("/v2/models/stats");
  EXPECT_GE(all["model_stats"].size(), 4u);
  EXPECT_EQ(http->Get("/v2/models/nope/stats")->status, 404);
  // gRPC: the same numbers.
  inference::ModelStatisticsRequest request;
  request.set_name("fmnist_unbatched");
  inference::ModelStatisticsResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(grpc_stub()->ModelStatistics(&context, request, &response).ok());
  ASSERT_EQ(response.model_stats_size(), 1);
  EXPECT_EQ(response.model_stats(0).inference_stats().success().count(), stats["success"]["count"].get<uint64_t>());
  EXPECT_EQ(response.model_stats(0).execution_count(), after["execution_count"].get<uint64_t>());
  json server = json::parse(http->Get("/v2")->body);
  EXPECT_NE(std::find(server["extensions"].begin(), server["extensions"].end(), "statistics"), server["extensions"].end());
}

// Shutdown has a deadline: a client trickling its head and one trickling its body are cut off
// (408) within the 5 s grace instead of keeping the server up.
TEST_F(ServerTest, StopHasADeadlineWhateverClientsTrickle) {
  HttpOptions options = loopback_options(2);
  options.read_timeout_seconds = 60;
  options.header_timeout_seconds = 60;
  options.request_timeout_seconds = 600;
  auto small = std::make_unique<HttpFrontend>(*server_, options);
  auto port = small->start();
  ASSERT_TRUE(port.ok());
  int head = connect_to(*port);
  int body = connect_to(*port);
  ASSERT_GE(head, 0);
  ASSERT_GE(body, 0);
  ::send(head, "GET /v2/health/live HTTP/1.1\r\nX-Slow: a", 38, MSG_NOSIGNAL);
  std::string stalled = "POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
  ::send(body, stalled.data(), stalled.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  small->stop();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 7.0);
  EXPECT_GT(seconds, 4.0);  // the grace is given, not cut short
  for (int fd : {head, body}) {
    timeval timeout{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    char buffer[4096];
    ssize_t count = ::recv(fd, buffer, sizeof(buffer), 0);
    EXPECT_EQ(count > 0 ? status_of(std::string(buffer, static_cast<size_t>(count))) : 0, 408);
    ::close(fd);
  }
}

// Draining stops the batching wait: a request waiting for more to merge with (10 s delay) is run
// at once instead of holding the shutdown.
TEST_F(ServerTest, DrainingStopsTheBatchingWait) {
  ModelConfig config;
  config.max_queue_delay_us = 10'000'000;
  auto metrics = std::make_shared<ModelMetrics>();
  auto runner = std::make_shared<ModelRunner>(engine_, config, metrics);
  std::vector<float> images = random_images(1, 81);
  std::promise<std::vector<float>> answered;
  runner->infer_async(runner_inputs(images), [&](InferOutcome outcome) {
    std::vector<float> logits(outcome.outputs.empty() ? 0 : outcome.outputs[0].data.size() / sizeof(float));
    if (!logits.empty()) std::memcpy(logits.data(), outcome.outputs[0].data.data(), logits.size() * sizeof(float));
    answered.set_value(logits);
  });
  auto future = answered.get_future();
  EXPECT_EQ(future.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);  // waiting to merge
  auto start = std::chrono::steady_clock::now();
  runner->stop_batch_waits();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_EQ(future.get(), direct_run(images));
  runner->shutdown();
}

// Load and unload take no parameters here (a config override, model files): refused, never ignored.
TEST_F(ServerTest, RepositoryLoadParametersAreRefused) {
  auto http = client();
  auto response = http->Post("/v2/repository/models/fmnist/load", R"({"parameters": {"config": "{}"}})", "application/json");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 400);
  EXPECT_NE(response->body.find("load parameter 'config' is not supported"), std::string::npos) << response->body;
  EXPECT_EQ(http->Post("/v2/repository/models/fmnist/load", R"({"parameters": {}})", "application/json")->status, 200);
  auto index = http->Post("/v2/repository/index", R"({"ready": true})", "application/json");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  for (const json& entry : json::parse(index->body)) EXPECT_EQ(entry["state"], "READY");
}

// Triton's model configuration extension: the config a model is served with, in Triton's schema
// (HTTP JSON and gRPC ModelConfig agree).
TEST_F(ServerTest, ModelConfigurationInTritonsSchema) {
  auto http = client();
  auto response = http->Get("/v2/models/fmnist/config");
  ASSERT_TRUE(response);
  ASSERT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(json::parse(response->body), json::parse(R"({"name": "fmnist", "platform": "qdqrt_onnx", "backend": "qdqrt",
      "version_policy": {"latest": {"num_versions": 1}}, "max_batch_size": 8,
      "input": [{"name": "input", "data_type": "TYPE_FP32", "dims": [1, 28, 28]}],
      "output": [{"name": "output", "data_type": "TYPE_FP32", "dims": [10]}],
      "instance_group": [{"name": "fmnist_0", "kind": "KIND_CPU", "count": 1}],
      "dynamic_batching": {"preferred_batch_size": [], "max_queue_delay_microseconds": 20000}})"));
  auto unbatched = http->Get("/v2/models/fmnist_unbatched/versions/1/config");
  ASSERT_TRUE(unbatched);
  EXPECT_FALSE(json::parse(unbatched->body).contains("dynamic_batching"));
  EXPECT_EQ(http->Get("/v2/models/nope/config")->status, 404);
  EXPECT_EQ(http->Get("/v2/models/fmnist/versions/2/config")->status, 404);
  inference::ModelConfigRequest request;
  request.set_name("fmnist");
  inference::ModelConfigResponse reply;
  grpc::ClientContext context;
  ASSERT_TRUE(grpc_stub()->ModelConfig(&context, request, &reply).ok());
  const auto& config = reply.config();
  EXPECT_EQ(config.max_batch_size(), 8);
  ASSERT_EQ(config.input_size(), 1);
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(std::vector<int64_t>(config.input(0).dims().begin(), config.input(0).dims().end()), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(config.output(0).dims(0), 10);
  EXPECT_EQ(config.dynamic_batching().max_queue_delay_microseconds(), 20000u);
  EXPECT_EQ(config.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_CPU);
}

// version_policy picks the version folders served: each answers on its own routes (HTTP and
// gRPC), a version not served is a 404 / NOT_FOUND naming it, and a bad policy is refused naming
// the model and the key while the versions loaded before keep serving.
TEST_F(ServerTest, VersionPolicyServesTheSelectedVersions) {
  const std::string name = "fmnist_versions";
  fs::path model_dir = root_ / "repository" / name;
  fs::create_directories(model_dir / "1");
  ASSERT_TRUE(engine_->save((model_dir / "1" / "model.qdqrt").string()).is_ok());
  for (const char* version : {"2", "3"}) {
    fs::create_directories(model_dir / version);
    fs::copy_file(model_dir / "1" / "model.qdqrt", model_dir / version / "model.qdqrt");
  }
  auto set_policy = [&](const std::string& policy) {
    std::ofstream(model_dir / "config.json", std::ios::trunc) << R"({"version_policy": )" << policy << "}";
  };
  auto http = client();
  auto stub = grpc_stub();
  std::vector<float> images = random_images(2, 71);
  std::vector<float> expected = direct_run(images);
  auto served = [&] {
    auto response = http->Get(("/v2/models/" + name).c_str());
    EXPECT_TRUE(response && response->status == 200);
    return response ? json::parse(response->body)["versions"].get<std::vector<std::string>>() : std::vector<std::string>{};
  };
  // JSON infer on a version's route: the answer names the version that ran it.
  auto version_answering = [&](const std::string& path) {
    auto response = http->Post(path.c_str(), json_request(images), "application/json");
    if (!response || response->status != 200) return std::string("status ") + (response ? std::to_string(response->status) : "none");
    json body = json::parse(response->body);
    EXPECT_EQ(body["outputs"][0]["data"].get<std::vector<float>>(), expected);
    return body["model_version"].get<std::string>();
  };
  auto grpc_version = [&](const std::string& version, grpc::Status& status) {
    inference::ModelInferRequest request;
    request.set_model_name(name);
    request.set_model_version(version);
    auto* input = request.add_inputs();
    input->set_name("input");
    input->set_datatype("FP32");
    for (int64_t dim : {int64_t{2}, int64_t{1}, int64_t{28}, int64_t{28}}) input->add_shape(dim);
    request.add_raw_input_contents(as_bytes(images));
    inference::ModelInferResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    status = stub->ModelInfer(&context, request, &response);
    return response.model_version();
  };
  auto config_policy = [&] {
    auto response = http->Get(("/v2/models/" + name + "/config").c_str());
    EXPECT_TRUE(response && response->status == 200);
    return response ? json::parse(response->body)["version_policy"] : json();
  };

  // Latest 2 of 1, 2, 3.
  set_policy(R"({"latest": {"num_versions": 2}})");
  Status loaded = server_->repository().load(name);
  ASSERT_TRUE(loaded.is_ok()) << loaded.to_string();
  EXPECT_EQ(served(), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(version_answering("/v2/models/" + name + "/infer"), "3");
  EXPECT_EQ(version_answering("/v2/models/" + name + "/versions/2/infer"), "2");
  EXPECT_EQ(version_answering("/v2/models/" + name + "/versions/3/infer"), "3");
  auto not_served = http->Get(("/v2/models/" + name + "/versions/1").c_str());
  ASSERT_TRUE(not_served);
  EXPECT_EQ(not_served->status, 404);
  EXPECT_NE(not_served->body.find("version '1' of model 'fmnist_versions' is not served (served: 2, 3)"), std::string::npos)
      << not_served->body;
  EXPECT_EQ(http->Post(("/v2/models/" + name + "/versions/1/infer").c_str(), json_request(images), "application/json")->status,
            404);
  EXPECT_EQ(http->Get(("/v2/models/" + name + "/versions/02/ready").c_str())->status, 404);
  EXPECT_EQ(http->Get(("/v2/models/" + name + "/versions/2/ready").c_str())->status, 200);
  EXPECT_EQ(config_policy(), json::parse(R"({"latest": {"num_versions": 2}})"));
  grpc::Status status;
  EXPECT_EQ(grpc_version("2", status), "2");
  EXPECT_TRUE(status.ok()) << status.error_message();
  grpc_version("1", status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("version '1'"), std::string::npos) << status.error_message();
  int ready_entries = 0;
  for (const ModelIndexEntry& entry : server_->repository().index()) {
    if (entry.name == name) ready_entries += entry.state == "READY";
  }
  EXPECT_EQ(ready_entries, 2);

  // All of them.
  set_policy(R"({"all": {}})");
  ASSERT_TRUE(server_->repository().load(name).is_ok());
  EXPECT_EQ(served(), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(version_answering("/v2/models/" + name + "/versions/1/infer"), "1");
  EXPECT_EQ(grpc_version("1", status), "1");
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(config_policy(), json::parse(R"({"all": {}})"));

  // The listed ones.
  set_policy(R"({"specific": {"versions": [3, 1]}})");
  ASSERT_TRUE(server_->repository().load(name).is_ok());
  EXPECT_EQ(served(), (std::vector<std::string>{"1", "3"}));
  EXPECT_EQ(http->Get(("/v2/models/" + name + "/versions/2").c_str())->status, 404);
  EXPECT_EQ(version_answering("/v2/models/" + name + "/infer"), "3");
  EXPECT_EQ(config_policy(), json::parse(R"({"specific": {"versions": [1, 3]}})"));
  inference::ModelConfigRequest config_request;
  config_request.set_name(name);
  inference::ModelConfigResponse config_reply;
  grpc::ClientContext config_context;
  ASSERT_TRUE(stub->ModelConfig(&config_context, config_request, &config_reply).ok());
  const auto& specific = config_reply.config().version_policy().specific().versions();
  EXPECT_EQ(std::vector<int64_t>(specific.begin(), specific.end()), (std::vector<int64_t>{1, 3}));

  // Bad policies: refused naming the model and the key; versions 1 and 3 keep serving.
  const std::pair<const char*, const char*> bad[] = {
      {R"({"specific": {"versions": [1, 7]}})", "'version_policy.specific.versions' names version 7, which is not on disk (versions: 1, 2, 3)"},
      {R"({"latest": {"num_versions": 0}})", "'version_policy.latest.num_versions' must be in 1..64, got 0"},
      {R"({"latest": {"num_versions": -3}})", "'version_policy.latest.num_versions' must be in 1..64, got -3"},
      {R"({"latest": {}})", "'version_policy.latest' needs 'num_versions'"},
      {R"({"latest": {"num_versions": 1, "count": 2}})", "unknown key 'version_policy.latest.count'"},
      {R"({"newest": {"num_versions": 1}})", "unknown key 'version_policy.newest'"},
      {R"({"all": {"versions": [1]}})", "unknown key 'version_policy.all.versions'"},
      {R"({"specific": {"versions": []}})", "'version_policy.specific.versions' must be a list of 1 to 64 versions"},
      {R"({"specific": {"versions": [1, 1]}})", "'version_policy.specific.versions' names version 1 twice"},
      {R"({"latest": {"num_versions": 1}, "all": {}})", "'version_policy' must be an object with one key"},
      {R"("latest")", "'version_policy' must be an object with one key"},
  };
  for (const auto& [policy, message] : bad) {
    set_policy(policy);
    Status refused = server_->repository().load(name);
    EXPECT_FALSE(refused.is_ok()) << policy;
    EXPECT_NE(refused.message().find("model 'fmnist_versions'"), std::string::npos) << refused.message();
    EXPECT_NE(refused.message().find(message), std::string::npos) << policy << ": " << refused.message();
    EXPECT_EQ(served(), (std::vector<std::string>{"1", "3"})) << policy;
  }
  EXPECT_EQ(version_answering("/v2/models/" + name + "/versions/1/infer"), "1");

  ASSERT_TRUE(server_->repository().unload(name).is_ok());
  fs::remove_all(model_dir);
  EXPECT_TRUE(is_unknown_model(server_->repository().load(name)));
  EXPECT_TRUE(server_->ready());
}

// Triton's system shared-memory extension: a region registered over HTTP or gRPC carries inputs
// and receives outputs bit-identical to a direct run; every out-of-range window, unknown region
// or key is a 400 / INVALID_ARGUMENT naming it; a region unregistered is no longer usable.
TEST_F(ServerTest, SystemSharedMemoryCarriesInputsAndOutputs) {
  const std::string key = "/qdqrt_server_test_" + std::to_string(::getpid());
  constexpr size_t kObjectBytes = 64 * 1024;
  int fd = ::shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::ftruncate(fd, kObjectBytes), 0);
  auto* object = static_cast<uint8_t*>(::mmap(nullptr, kObjectBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ::close(fd);
  ASSERT_NE(object, MAP_FAILED);
  auto http = client();
  auto post = [&](const std::string& path, const json& body) {
    auto response = http->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(response) << path;
    return response ? std::make_pair(response->status, response->body) : std::make_pair(0, std::string());
  };
  // The region is the object's window from byte 4096 (not page 0: the offset is honoured).
  constexpr uint64_t kRegionOffset = 4096;
  constexpr uint64_t kRegionBytes = 32 * 1024;
  auto [registered, registered_body] =
      post("/v2/systemsharedmemory/region/images/register", {{"key", key}, {"offset", kRegionOffset}, {"byte_size", kRegionBytes}});
  ASSERT_EQ(registered, 200) << registered_body;
  auto status = http->Get("/v2/systemsharedmemory/status");
  ASSERT_TRUE(status && status->status == 200);
  EXPECT_EQ(json::parse(status->body),
            json::parse(R"([{"name": "images", "key": ")" + key + R"(", "offset": 4096, "byte_size": 32768}])"));
  auto server_info = json::parse(http->Get("/v2")->body);
  EXPECT_NE(std::find(server_info["extensions"].begin(), server_info["extensions"].end(), "system_shared_memory"),
            server_info["extensions"].end());

  std::vector<float> images = random_images(3, 81);
  std::vector<float> expected = direct_run(images);
  const uint64_t input_at = 100;       // within the region
  const uint64_t output_at = 16 * 1024;
  std::memcpy(object + kRegionOffset + input_at, images.data(), images.size() * sizeof(float));
  std::memset(object + kRegionOffset + output_at, 0, 4096);
  auto shm_request = [&](uint64_t in_offset, uint64_t in_size, uint64_t out_offset, uint64_t out_size,
                         const std::string& region = "images") {
    return json{{"inputs", {{{"name", "input"},
                             {"shape", {3, 1, 28, 28}},
                             {"datatype", "FP32"},
                             {"parameters", {{"shared_memory_region", region},
                                             {"shared_memory_offset", in_offset},
                                             {"shared_memory_byte_size", in_size}}}}}},
                {"outputs", {{{"name", "output"},
                              {"parameters", {{"shared_memory_region", "images"},
                                              {"shared_memory_offset", out_offset},
                                              {"shared_memory_byte_size", out_size}}}}}}};
  };
  const uint64_t input_bytes = images.size() * sizeof(float);
  const uint64_t output_bytes = expected.size() * sizeof(float);
  auto [inferred, inferred_body] = post("/v2/models/fmnist/infer", shm_request(input_at, input_bytes, output_at, 4096));
  ASSERT_EQ(inferred, 200) << inferred_body;
  json answer = json::parse(inferred_body);
  EXPECT_FALSE(answer["outputs"][0].contains("data"));
  EXPECT_EQ(answer["outputs"][0]["parameters"],
            (json{{"shared_memory_region", "images"}, {"shared_memory_offset", output_at}, {"shared_memory_byte_size", output_bytes}}));
  std::vector<float> got(expected.size());
  std::memcpy(got.data(), object + kRegionOffset + output_at, output_bytes);
  EXPECT_EQ(got, expected);

  // Out of range, unknown, inconsistent: 400 naming the region or field.
  auto expect_refused = [&](const json& body, const std::string& message) {
    auto [code, text] = post("/v2/models/fmnist/infer", body);
    EXPECT_EQ(code, 400) << text;
    EXPECT_NE(text.find(message), std::string::npos) << message << " -> " << text;
  };
  expect_refused(shm_request(kRegionBytes - 8, input_bytes, output_at, 4096),
                 "input 'input': shared_memory_offset 32760 + shared_memory_byte_size 9408 runs past shared memory region 'images' of 32768 bytes");
  expect_refused(shm_request(input_at, input_bytes, kRegionBytes - 16, 4096), "output 'output': shared_memory_offset 32752");
  expect_refused(shm_request(input_at, input_bytes, output_at, 8),
                 "output 'output' has 120 bytes, more than its shared_memory_byte_size 8 in region 'images'");
  expect_refused(shm_request(input_at, input_bytes - 4, output_at, 4096), "shared_memory_byte_size 9404 is not the shape's 9408 bytes");
  expect_refused(shm_request(input_at, input_bytes, output_at, 4096, "nope"), "shared memory region 'nope' is not registered");
  json with_data = shm_request(input_at, input_bytes, output_at, 4096);
  with_data["inputs"][0]["data"] = images;
  expect_refused(with_data, "has both shared memory and data");
  json no_region = shm_request(input_at, input_bytes, output_at, 4096);
  no_region["inputs"][0]["parameters"].erase("shared_memory_region");
  expect_refused(no_region, "need 'shared_memory_region'");

  // Registration refusals.
  auto expect_register_refused = [&](const std::string& name, const json& body, const std::string& message) {
    auto [code, text] = post("/v2/systemsharedmemory/region/" + name + "/register", body);
    EXPECT_EQ(code, 400) << text;
    EXPECT_NE(text.find(message), std::string::npos) << message << " -> " << text;
  };
  expect_register_refused("images", {{"key", key}, {"byte_size", 16}}, "shared memory region 'images' is already registered");
  expect_register_refused("past", {{"key", key}, {"offset", 60000}, {"byte_size", 8192}},
                          "shared memory region 'past': 'offset' 60000 + 'byte_size' 8192 runs past the 65536 bytes");
  expect_register_refused("missing", {{"key", key + "_missing"}, {"byte_size", 16}}, "cannot open shared memory object");
  expect_register_refused("empty", {{"key", key}, {"byte_size", 0}}, "'byte_size' must be above 0");
  expect_register_refused("typo", {{"key", key}, {"byte_size", 16}, {"size", 1}}, "unknown field 'size'");
  expect_register_refused("nokey", {{"byte_size", 16}}, "'key' must be a string");
  EXPECT_EQ(http->Get("/v2/systemsharedmemory/region/past/status")->status, 400);

  // gRPC: register a second window, infer through it, status, unregister.
  auto stub = grpc_stub();
  {
    inference::SystemSharedMemoryRegisterRequest request;
    request.set_name("grpc_region");
    request.set_key(key);
    request.set_offset(kRegionOffset);
    request.set_byte_size(kRegionBytes);
    inference::SystemSharedMemoryRegisterResponse reply;
    grpc::ClientContext context;
    grpc::Status registered_status = stub->SystemSharedMemoryRegister(&context, request, &reply);
    ASSERT_TRUE(registered_status.ok()) << registered_status.error_message();
  }
  {
    inference::ModelInferRequest request;
    request.set_model_name("fmnist");
    auto* input = request.add_inputs();
    input->set_name("input");
    input->set_datatype("FP32");
    for (int64_t dim : {int64_t{3}, int64_t{1}, int64_t{28}, int64_t{28}}) input->add_shape(dim);
    (*input->mutable_parameters())["shared_memory_region"].set_string_param("grpc_region");
    (*input->mutable_parameters())["shared_memory_offset"].set_int64_param(static_cast<int64_t>(input_at));
    (*input->mutable_parameters())["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(input_bytes));
    auto* output = request.add_outputs();
    output->set_name("output");
    (*output->mutable_parameters())["shared_memory_region"].set_string_param("grpc_region");
    (*output->mutable_parameters())["shared_memory_offset"].set_int64_param(20000);
    (*output->mutable_parameters())["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(output_bytes));
    inference::ModelInferResponse reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status infer_status = stub->ModelInfer(&context, request, &reply);
    ASSERT_TRUE(infer_status.ok()) << infer_status.error_message();
    ASSERT_EQ(reply.outputs_size(), 1);
    EXPECT_EQ(reply.outputs(0).parameters().at("shared_memory_byte_size").int64_param(), static_cast<int64_t>(output_bytes));
    std::memcpy(got.data(), object + kRegionOffset + 20000, output_bytes);
    EXPECT_EQ(got, expected);
    (*input->mutable_parameters())["shared_memory_offset"].set_int64_param(static_cast<int64_t>(kRegionBytes));
    grpc::ClientContext refused_context;
    grpc::Status refused = stub->ModelInfer(&refused_context, request, &reply);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(refused.error_message().find("runs past shared memory region 'grpc_region'"), std::string::npos)
        << refused.error_message();
  }
  {
    inference::SystemSharedMemoryStatusRequest request;
    inference::SystemSharedMemoryStatusResponse reply;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->SystemSharedMemoryStatus(&context, request, &reply).ok());
    EXPECT_EQ(reply.regions_size(), 2);
    EXPECT_EQ(reply.regions().at("grpc_region").byte_size(), kRegionBytes);
    EXPECT_EQ(reply.regions().at("grpc_region").key(), key);
  }
  {
    inference::SystemSharedMemoryUnregisterRequest request;
    request.set_name("grpc_region");
    inference::SystemSharedMemoryUnregisterResponse reply;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->SystemSharedMemoryUnregister(&context, request, &reply).ok());
    inference::SystemSharedMemoryRegisterRequest bad;
    bad.set_name("grpc_past");
    bad.set_key(key);
    bad.set_offset(kObjectBytes);
    bad.set_byte_size(1);
    inference::SystemSharedMemoryRegisterResponse bad_reply;
    grpc::ClientContext bad_context;
    grpc::Status refused = stub->SystemSharedMemoryRegister(&bad_context, bad, &bad_reply);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(refused.error_message().find("shared memory region 'grpc_past'"), std::string::npos);
  }

  // Unregistered: no longer usable; unregister with no name drops every region.
  auto [unregistered, unregistered_body] = post("/v2/systemsharedmemory/region/images/unregister", json::object());
  EXPECT_EQ(unregistered, 200) << unregistered_body;
  expect_refused(shm_request(input_at, input_bytes, output_at, 4096), "shared memory region 'images' is not registered");
  EXPECT_EQ(post("/v2/systemsharedmemory/region/images/unregister", json::object()).first, 400);
  EXPECT_EQ(post("/v2/systemsharedmemory/region/images/register", {{"key", key}, {"byte_size", 16}}).first, 200);
  EXPECT_EQ(post("/v2/systemsharedmemory/unregister", json::object()).first, 200);
  EXPECT_EQ(json::parse(http->Get("/v2/systemsharedmemory/status")->body), json::array());
  ::munmap(object, kObjectBytes);
  ::shm_unlink(key.c_str());
}

// A request holds the regions it uses: unregistering one meanwhile unmaps it only once the
// request lets go (its window stays readable and writable until then).
TEST(SharedMemoryRegistryTest, UnregisterKeepsTheMappingOfARegionInUse) {
  const std::string key = "/qdqrt_registry_test_" + std::to_string(::getpid());
  int fd = ::shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::ftruncate(fd, 8192), 0);
  ASSERT_EQ(::pwrite(fd, "qdqrt", 5, 5000), 5);
  ::close(fd);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.register_region("held", key, 4999, 100).is_ok());
  auto region = registry.find("held");
  ASSERT_TRUE(region.ok());
  ASSERT_TRUE(registry.unregister("held").is_ok());
  EXPECT_FALSE(registry.find("held").ok());
  auto bytes = (*region)->window(1, 5, "input 'x'");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(*bytes), 5), "qdqrt");
  EXPECT_FALSE((*region)->window(96, 5, "input 'x'").ok());
  EXPECT_FALSE(registry.register_region("wide", key, 8000, 193).is_ok());
  EXPECT_TRUE(registry.register_region("exact", key, 8000, 192).is_ok());
  ::shm_unlink(key.c_str());
}

}  // namespace
}  // namespace qdqrt::server
