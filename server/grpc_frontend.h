// The KServe v2 gRPC service (inference.GRPCInferenceService, server/grpc_predict_v2.proto) on
// gRPC C++'s asynchronous completion-queue API, polled by one thread (GrpcOptions::threads): the
// infers it reads together run on it, merged when batching is on, if their model is idle; one
// that queues holds no thread until the model's dispatcher answers it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "server/inference_server.h"

namespace grpc {
class Server;
class ServerCompletionQueue;
}

namespace qdqrt::server {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 8001;                       // 0: any free port
  size_t max_message_bytes = 64u << 20;  // larger requests: RESOURCE_EXHAUSTED
  // Completion queues, one thread each; that thread runs an idle model's infers. More than one
  // costs a thread hand-off per call in gRPC 1.51 (its pollers pass the polling role on), so one
  // is the default; an engine run blocks the reading of other calls meanwhile (they then merge).
  int threads = 1;
  int shutdown_grace_seconds = 5;        // in-flight RPCs get this long to finish on stop()
};

class GrpcFrontend {
 public:
  GrpcFrontend(InferenceServer& server, GrpcOptions options);
  ~GrpcFrontend();
  GrpcFrontend(const GrpcFrontend&) = delete;
  GrpcFrontend& operator=(const GrpcFrontend&) = delete;

  Result<int> start();  // returns the port (the one chosen when 0)
  void stop();          // stops accepting, waits for the RPCs in flight. Idempotent.

 private:
  class Service;
  InferenceServer& server_;
  GrpcOptions options_;
  std::unique_ptr<Service> service_;
  void drain_queues();

  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::unique_ptr<grpc::Server> grpc_;
  std::vector<std::thread> threads_;
};

}  // namespace qdqrt::server
