// The KServe v2 HTTP/REST endpoints (and the Prometheus /metrics endpoint) on cpp-httplib.
// Connections are served by a fixed pool of threads behind a bounded queue: past it a
// connection is answered 429 and closed, so neither threads nor memory grow with the traffic.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "server/inference_server.h"

namespace httplib {
class Server;
}

namespace qdqrt::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                    // 0: any free port (tests)
  int threads = 32;                   // connections served at once
  int max_queued_connections = 256;   // accepted connections waiting for a thread; past it: 429
  size_t max_body_bytes = 64u << 20;  // larger bodies: 413
  int read_timeout_seconds = 5;       // a client slower than this between bytes is dropped
  int keep_alive_timeout_seconds = 5;
};

class HttpFrontend {
 public:
  // `metrics_only`: serve only GET /metrics (the --metricsPort listener).
  HttpFrontend(InferenceServer& server, HttpOptions options, bool metrics_only = false);
  ~HttpFrontend();
  HttpFrontend(const HttpFrontend&) = delete;
  HttpFrontend& operator=(const HttpFrontend&) = delete;

  // Binds and serves on a thread of its own; returns the port (the one chosen when 0).
  Result<int> start();
  // Stops accepting, lets each connection finish the request it is in, joins. Idempotent.
  void stop();

 private:
  void add_routes();
  void add_metrics_route();

  InferenceServer& server_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  int listen_socket_ = -1;
  static constexpr int kListenBacklog = 1024;
};

}  // namespace qdqrt::server
