// Prometheus counters under Triton's names (nv_inference_*) so existing dashboards work, plus a
// histogram of executed batch sizes. One ModelMetrics per loaded model version; all lock-free.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace qdqrt::server {

struct ModelMetrics {
  std::string model;
  std::string version;
  std::atomic<uint64_t> request_success{0};
  std::atomic<uint64_t> request_failure{0};
  std::atomic<uint64_t> inference_count{0};  // samples (batch elements) inferred
  std::atomic<uint64_t> exec_count{0};       // engine runs (a merged batch counts once)
  std::atomic<uint64_t> request_duration_us{0};
  std::atomic<uint64_t> queue_duration_us{0};
  std::atomic<uint64_t> compute_infer_duration_us{0};
  static constexpr std::array<int64_t, 8> kBatchBuckets = {1, 2, 4, 8, 16, 32, 64, 128};
  std::array<std::atomic<uint64_t>, kBatchBuckets.size() + 1> batch_size_counts{};  // last: +Inf
  std::atomic<uint64_t> batch_size_sum{0};

  void record_batch(int64_t batch_size);
};

class MetricsRegistry {
 public:
  std::shared_ptr<ModelMetrics> model_metrics(const std::string& model, const std::string& version);
  // The Prometheus text exposition format.
  std::string prometheus_text() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<ModelMetrics>> models_;
};

}  // namespace qdqrt::server
