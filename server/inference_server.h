// The protocol-independent server: the model repository, the metrics, and the KServe v2
// operations (health, metadata, infer) that the HTTP and gRPC frontends translate to and from.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "server/infer_types.h"
#include "server/metrics.h"
#include "server/model_repository.h"
#include "server/shared_memory.h"

namespace qdqrt::server {

inline constexpr const char* kServerName = "qdqrt";
inline constexpr const char* kServerVersion = "0.1.0";
inline constexpr const char* kPlatform = "qdqrt_onnx";

// The protocol extensions served (GET /v2 and gRPC ServerMetadata): only what is implemented.
std::vector<std::string> server_extensions();

struct TensorMetadata {
  std::string name;
  std::string datatype;
  Shape shape;  // -1 for the batch dim
};
struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
  int64_t max_batch_size = 0;
};

// Triton's model configuration of a loaded model (GET /v2/models/NAME/config, gRPC ModelConfig).
struct ModelConfigView {
  std::string name;
  std::string version;
  int64_t max_batch_size = 0;  // 0: a tensor has no batch on dim 0; dims are then whole shapes
  struct Tensor {
    std::string name;
    std::string datatype;  // Triton's enum name: "TYPE_FP32"
    Shape dims;            // without the batch dim when max_batch_size > 0
  };
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  VersionPolicy version_policy;
  int instance_count = 1;
  bool dynamic_batching = false;
  int64_t max_queue_delay_us = 0;
  std::vector<int64_t> preferred_batch_sizes;
};

class InferenceServer {
 public:
  explicit InferenceServer(RepositoryOptions options);

  Status load_models() { return repository_.load_all(); }
  bool live() const { return true; }
  bool ready() const { return !draining_.load() && repository_.all_ready(); }
  std::variant<ModelMetadata, ServeError> model_metadata(const std::string& name, const std::string& version) const;
  std::optional<ServeError> model_ready(const std::string& name, const std::string& version) const;
  // Triton's statistics extension: every loaded model (name ""), or one model (its loaded
  // version, or `version`, which must be the loaded one).
  std::variant<ModelConfigView, ServeError> model_config(const std::string& name, const std::string& version) const;
  std::variant<std::vector<ModelStatistics>, ServeError> model_statistics(const std::string& name,
                                                                          const std::string& version);
  using InferResult = std::variant<InferResponse, ServeError>;
  InferResult infer(InferRequest request);
  // The same without waiting: `done` gets the result once, on this thread or on the model's
  // dispatcher thread (ModelRunner::infer_async); `done` must not block.
  void infer_async(InferRequest request, std::function<void(InferResult)> done);

  // Shutdown: stop reporting ready (so a balancer stops routing here), then, once the frontends
  // have stopped accepting and answered what they accepted, stop the runners.
  void start_draining() {
    draining_ = true;
    repository_.stop_batch_waits();
  }
  void shutdown() { repository_.shutdown(); }

  ModelRepository& repository() { return repository_; }
  MetricsRegistry& metrics() { return metrics_; }
  SharedMemoryRegistry& shared_memory() { return shared_memory_; }

 private:
  void infer_async_unguarded(InferRequest request, std::function<void(InferResult)> done);

  MetricsRegistry metrics_;
  ModelRepository repository_;
  SharedMemoryRegistry shared_memory_;
  std::atomic<bool> draining_{false};
};

}  // namespace qdqrt::server
