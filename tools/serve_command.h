// `qdqrt serve`: a KServe v2 / Triton protocol model server (HTTP, gRPC, Prometheus metrics)
// over a model repository or single model files. Runs until SIGTERM or SIGINT, then stops
// accepting, answers every request it accepted and exits 0. See docs/serve.md.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "server/http_frontend.h"
#include "server/model_config.h"

namespace qdqrt::tools {

struct ServeOptions {
  std::string model_repository;
  std::vector<std::pair<std::string, std::string>> models;  // --model NAME=PATH
  std::string engine_cache_dir;                              // "" disables the cache
  std::string host = "127.0.0.1";
  int http_port = 8000;  // 0: any free port; -1: off
  int grpc_port = 8001;
  int grpc_threads = 1;  // completion-queue threads (server/grpc_frontend.h)
  int metrics_port = 8002;
  std::string port_file;  // written once listening: "http=P\ngrpc=P\nmetrics=P\n" (tests use port 0)
  server::HttpOptions http;
  server::ModelConfig model_defaults;
};

// Loads the models, serves until a signal, shuts down. Returns the exit code.
int run_serve(const ServeOptions& options);

}  // namespace qdqrt::tools
