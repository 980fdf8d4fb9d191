// The KServe v2 HTTP/REST endpoints (and the Prometheus /metrics endpoint) over the connection
// layer of server/http_connection.h: a listening socket and accept thread of its own, a fixed
// pool of threads behind a bounded queue (past it: 429), and every request bounded in head size,
// body size and time, so neither threads nor memory grow with the traffic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "server/http_options.h"
#include "server/inference_server.h"

namespace qdqrt::server {

class ConnectionPool;
class HeadReader;
class RoutingServer;

class HttpFrontend {
 public:
  // `metrics_only`: serve only GET /metrics (the --metricsPort listener).
  HttpFrontend(InferenceServer& server, HttpOptions options, bool metrics_only = false);
  ~HttpFrontend();
  HttpFrontend(const HttpFrontend&) = delete;
  HttpFrontend& operator=(const HttpFrontend&) = delete;

  // Binds and serves on a thread of its own; returns the port (the one chosen when 0).
  Result<int> start();
  // Stops accepting: connections already accepted by the kernel are taken too and each gets
  // an answer (a request that has arrived is served, with "Connection: close"); idle
  // keep-alive connections are closed. Joins. Idempotent.
  void stop();

 private:
  void add_routes();
  void add_metrics_route();
  void accept_loop();
  // Accepts what the listen backlog holds (at most `most`) and hands each to the pool.
  void accept_ready(int most);

  InferenceServer& server_;
  HttpOptions options_;
  std::unique_ptr<RoutingServer> http_;
  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<HeadReader> heads_;
  std::thread acceptor_;
  int listen_socket_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> stop_deadline_{INT64_MAX};  // steady-clock ticks
  static constexpr int kListenBacklog = 1024;
  static constexpr int kStopGraceSeconds = 5;
};

}  // namespace qdqrt::server
