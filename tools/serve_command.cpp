#include "tools/serve_command.h"

#include <malloc.h>
#include <signal.h>

#include <cstdio>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "core/file_reading.h"
#include "server/grpc_frontend.h"
#include "engine/profiles.h"
#include "server/inference_server.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"

namespace qdqrt::tools {

namespace {

std::string default_engine_cache_dir() {
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) return std::string(cache) + "/qdqrt/engines";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/qdqrt/engines";
  return "";
}

}  // namespace

int run_serve(const ServeOptions& options) {
  // Every thread started from here on inherits the blocked set, so only sigwait() sees these.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A client that hangs up mid-response must not kill the server.
  signal(SIGPIPE, SIG_IGN);
  // Request bodies and tensors of 256 KiB and more get pages of their own, returned when freed:
  // glibc otherwise raises this threshold after such a free and keeps later large buffers in
  // its arenas (one per thread), so resident memory would grow with the concurrency of past
  // large requests.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);

  server::RepositoryOptions repository;
  repository.repository_dir = options.model_repository;
  repository.models = options.models;
  repository.engine_cache_dir = options.engine_cache_dir;
  repository.defaults = options.model_defaults;
  server::InferenceServer inference(repository);
  Status loaded = inference.load_models();
  if (!loaded.is_ok()) {
    std::fprintf(stderr, "qdqrt serve: error: %s\n", loaded.to_string().c_str());
    return kExitFailure;
  }
  for (const auto& entry : inference.repository().index()) {
    std::fprintf(stderr, "qdqrt serve: model '%s' version %s %s\n", entry.name.c_str(), entry.version.c_str(),
                 entry.state.c_str());
  }

  std::unique_ptr<server::HttpFrontend> http;
  std::unique_ptr<server::GrpcFrontend> grpc;
  std::unique_ptr<server::HttpFrontend> metrics;
  int http_port = -1, grpc_port = -1, metrics_port = -1;
  auto fail = [&](const Status& status) {
    std::fprintf(stderr, "qdqrt serve: error: %s\n", status.to_string().c_str());
    return kExitFailure;
  };
  if (options.http_port >= 0) {
    server::HttpOptions http_options = options.http;
    http_options.host = options.host;
    http_options.port = options.http_port;
    http = std::make_unique<server::HttpFrontend>(inference, http_options);
    auto port = http->start();
    if (!port.ok()) return fail(port.status().with_context("--httpPort"));
    http_port = *port;
  }
  if (options.grpc_port >= 0) {
    server::GrpcOptions grpc_options;
    grpc_options.host = options.host;
    grpc_options.port = options.grpc_port;
    grpc_options.max_message_bytes = options.http.max_body_bytes;
    grpc_options.threads = options.grpc_threads;
    grpc = std::make_unique<server::GrpcFrontend>(inference, grpc_options);
    auto port = grpc->start();
    if (!port.ok()) return fail(port.status().with_context("--grpcPort"));
    grpc_port = *port;
  }
  if (options.metrics_port >= 0) {
    server::HttpOptions metrics_options;
    metrics_options.host = options.host;
    metrics_options.port = options.metrics_port;
    metrics_options.threads = 2;
    metrics_options.max_queued_connections = 16;
    metrics = std::make_unique<server::HttpFrontend>(inference, metrics_options, /*metrics_only=*/true);
    auto port = metrics->start();
    if (!port.ok()) return fail(port.status().with_context("--metricsPort"));
    metrics_port = *port;
  }
  std::fprintf(stderr, "qdqrt serve: listening on %s: HTTP %d, gRPC %d, metrics %d\n", options.host.c_str(), http_port,
               grpc_port, metrics_port);
  if (!options.port_file.empty()) {
    // Written aside and renamed so a reader never sees half of it.
    std::string temporary = options.port_file + ".tmp";
    {
      std::ofstream out(temporary);
      out << fmt::format("http={}\ngrpc={}\nmetrics={}\n", http_port, grpc_port, metrics_port);
    }
    std::error_code error;
    std::filesystem::rename(temporary, options.port_file, error);
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "qdqrt serve: %s: draining\n", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  inference.start_draining();
  // Frontends first: they stop accepting and wait for the requests they accepted, which the
  // runners (still running) answer. Then the runners, then the metrics.
  // Both at once, so the shutdown takes the longer of their grace periods, not the sum.
  std::thread http_stop([&] {
    if (http) http->stop();
  });
  if (grpc) grpc->stop();
  http_stop.join();
  inference.shutdown();
  if (metrics) metrics->stop();
  std::fprintf(stderr, "qdqrt serve: stopped\n");
  return kExitSuccess;
}

Command add_serve_command(CLI::App& app) {
  CLI::App* serve = app.add_subcommand("serve", "Serve models over the KServe v2 / Triton protocol (HTTP, gRPC)");
  serve->footer(
      "Models: --modelRepository=DIR (DIR/NAME/VERSION/model.onnx or model.qdqrt, optional\n"
      "DIR/NAME/config.json) and/or --model=NAME=PATH. The model flags below are defaults for models\n"
      "without a config.json. SIGTERM stops accepting, answers what was accepted and exits 0.\n"
      "Example: qdqrt serve --model=fmnist=models/fmnist_resnet_qdq.onnx\n"
      "         curl localhost:8000/v2/models/fmnist\n");
  auto options = std::make_shared<ServeOptions>();
  auto model_texts = std::make_shared<std::vector<std::string>>();
  auto no_cache = std::make_shared<bool>(false);
  auto no_dynamic_batching = std::make_shared<bool>(false);
  // --minShapes/--optShapes/--maxShapes texts, in that order.
  auto range_texts = std::make_shared<std::array<std::vector<std::string>, 3>>();
  options->engine_cache_dir = default_engine_cache_dir();
  serve->add_option("--modelRepository", options->model_repository, "Model repository folder")
      ->check(CLI::ExistingDirectory);
  serve->add_option("--model", *model_texts, "A single model: NAME=PATH (.onnx or .qdqrt); repeatable");
  serve->add_option("--engineCacheDir", options->engine_cache_dir, "Where built engines are cached")
      ->capture_default_str();
  serve->add_flag("--noEngineCache", *no_cache, "Build every engine at load, cache nothing");
  serve->add_option("--host", options->host, "Address to listen on")->capture_default_str();
  serve->add_option("--httpPort", options->http_port, "HTTP/REST port (0: any free port, -1: off)")
      ->capture_default_str()->check(CLI::Range(-1, 65535));
  serve->add_option("--grpcPort", options->grpc_port, "gRPC port (0: any free port, -1: off)")
      ->capture_default_str()->check(CLI::Range(-1, 65535));
  serve->add_option("--metricsPort", options->metrics_port, "Prometheus /metrics port (0: any, -1: off)")
      ->capture_default_str()->check(CLI::Range(-1, 65535));
  serve->add_option("--portFile", options->port_file, "Write the ports listened on to this file once ready");
  serve->add_option("--httpThreads", options->http.threads, "HTTP connections served at once")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  serve->add_option("--grpcThreads", options->grpc_threads,
                    "gRPC completion-queue threads (more than 1 costs a thread hand-off per call)")
      ->capture_default_str()->check(CLI::Range(1, 256));
  serve->add_option("--maxQueuedConnections", options->http.max_queued_connections,
                    "HTTP connections waiting for a thread; past it: 429")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  serve->add_option("--maxBodyBytes", options->http.max_body_bytes, "Largest request body / gRPC message; past it: 413")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 31));
  serve->add_option("--readTimeout", options->http.read_timeout_seconds, "Seconds a slow client may stall")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  serve->add_option("--headerTimeout", options->http.header_timeout_seconds,
                    "Seconds for a request's line and headers to arrive; past it: 408")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  serve->add_option("--requestTimeout", options->http.request_timeout_seconds,
                    "Seconds for a whole request (headers and body) to arrive; past it: 408")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  serve->add_option("--maxBatch", options->model_defaults.max_batch_size, "Default max batch size")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, server::kMaxBatchSize));
  serve->add_flag("--noDynamicBatching", *no_dynamic_batching, "Default: run each request on its own");
  serve->add_option("--maxQueueDelayUs", options->model_defaults.max_queue_delay_us,
                    "Default: how long a batch waits for more requests")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, server::kMaxQueueDelayUs));
  serve->add_option("--instances", options->model_defaults.instance_count, "Default: ExecutionContexts per model")
      ->capture_default_str()->check(CLI::Range(1, 256));
  serve->add_option("--threadsPerInstance", options->model_defaults.threads_per_instance,
                    "Default: threads of each ExecutionContext")
      ->capture_default_str()->check(CLI::Range(1, 256));
  serve->add_option("--maxQueueSize", options->model_defaults.max_queue_size,
                    "Default: queued requests per model; past it: 503")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  const char* range_flags[] = {"--minShapes", "--optShapes", "--maxShapes"};
  const char* range_help[] = {"Default: smallest shapes of a range served from one engine (NAME:DIMS[,...])",
                              "Default: the shapes the range engine is built for first (default: --maxShapes)",
                              "Default: largest shapes of the range (config.json 'input_ranges')"};
  for (size_t index = 0; index < 3; ++index) {
    serve->add_option(range_flags[index], (*range_texts)[index], range_help[index])
        ->check(quiet(shapes_validator()))
        ->type_name("NAME:DIMS[,...]");
  }
  auto execute = [options, model_texts, no_cache, no_dynamic_batching, range_texts]() -> int {
    for (const std::string& text : *model_texts) {
      size_t equals = text.find('=');
      if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
        std::fprintf(stderr, "qdqrt serve: error: --model '%s' must be NAME=PATH\n", text.c_str());
        return kExitUsage;
      }
      std::string path = text.substr(equals + 1);
      if (auto file = open_regular_file(path, "model"); !file.ok()) {
        std::fprintf(stderr, "qdqrt serve: error: --model '%s': %s\n", text.c_str(), file.status().message().c_str());
        return kExitUsage;
      }
      options->models.emplace_back(text.substr(0, equals), path);
    }
    if (options->models.empty() && options->model_repository.empty()) {
      std::fprintf(stderr, "qdqrt serve: error: give --modelRepository=DIR or --model=NAME=PATH\n");
      return kExitUsage;
    }
    if (*no_cache) options->engine_cache_dir.clear();
    // A range of shapes as trtexec gives it: the default 'input_ranges' of models without a config.json.
    std::array<std::map<std::string, Shape>, 3> range_shapes;
    for (size_t index = 0; index < 3; ++index) {
      auto shapes = collect_shapes((*range_texts)[index]);
      if (!shapes.ok()) {
        std::fprintf(stderr, "qdqrt serve: error: %s\n", shapes.status().message().c_str());
        return kExitUsage;
      }
      range_shapes[index] = *shapes;
    }
    auto profile = engine::make_profile(range_shapes[0], range_shapes[1], range_shapes[2]);
    if (!profile.ok()) {
      std::fprintf(stderr, "qdqrt serve: error: %s\n", profile.status().message().c_str());
      return kExitUsage;
    }
    options->model_defaults.input_ranges = *profile;
    if (*no_dynamic_batching) options->model_defaults.dynamic_batching = false;
    return run_serve(*options);
  };
  return Command{serve, execute};
}

}  // namespace qdqrt::tools
