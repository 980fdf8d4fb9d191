// Prometheus counters under Triton's names (nv_inference_*) so existing dashboards work, plus a
// histogram of executed batch sizes. One ModelMetrics per loaded model version; all lock-free.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace qdqrt::server {

// Triton's statistics extension (GET /v2/models/NAME/stats, gRPC ModelStatistics).
struct DurationStatistic {
  uint64_t count = 0;
  uint64_t ns = 0;
};
struct BatchStatistics {
  int64_t batch_size = 0;
  DurationStatistic compute_input, compute_infer, compute_output;  // per execution of this size
};
struct ModelStatistics {
  std::string name;
  std::string version;
  uint64_t last_inference_ms = 0;  // since the epoch; 0: none yet
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  // Per request; compute_* count each request of a merged batch with the batch's duration.
  DurationStatistic success, fail, queue, compute_input, compute_infer, compute_output;
  std::vector<BatchStatistics> batches;  // by batch size
};

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
  std::atomic<uint64_t> compute_input_duration_us{0};   // gathering a merged batch's inputs
  std::atomic<uint64_t> compute_output_duration_us{0};  // splitting its outputs back per request
  std::atomic<int64_t> pending_requests{0};             // queued or running now
  // The same in nanoseconds, per request, for the statistics extension.
  std::atomic<uint64_t> success_ns{0};
  std::atomic<uint64_t> failure_ns{0};
  std::atomic<uint64_t> queue_count{0};
  std::atomic<uint64_t> queue_ns{0};
  std::atomic<uint64_t> compute_count{0};
  std::atomic<uint64_t> compute_input_ns{0};
  std::atomic<uint64_t> compute_infer_ns{0};
  std::atomic<uint64_t> compute_output_ns{0};
  std::atomic<uint64_t> last_inference_ms{0};
  static constexpr std::array<int64_t, 8> kBatchBuckets = {1, 2, 4, 8, 16, 32, 64, 128};
  std::array<std::atomic<uint64_t>, kBatchBuckets.size() + 1> batch_size_counts{};  // last: +Inf
  std::atomic<uint64_t> batch_size_sum{0};

  void record_batch(int64_t batch_size);
  // One successful execution of `requests` requests merged into `batch_size` rows.
  void record_execution(int64_t batch_size, size_t requests, uint64_t input_ns, uint64_t infer_ns, uint64_t output_ns);
  ModelStatistics statistics() const;

 private:
  mutable std::mutex batch_mutex_;
  std::map<int64_t, BatchStatistics> batch_statistics_;
};

class MetricsRegistry {
 public:
  std::shared_ptr<ModelMetrics> model_metrics(const std::string& model, const std::string& version);
  // The Prometheus text exposition format.
  std::string prometheus_text() const;

 private:
  // nv_cpu_utilization, nv_cpu_memory_total_bytes, nv_cpu_memory_used_bytes from /proc.
  std::string cpu_text() const;

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<ModelMetrics>> models_;
  // /proc/stat's busy and total jiffies at the last scrape: utilization is over the interval.
  mutable uint64_t last_busy_jiffies_ = 0;
  mutable uint64_t last_total_jiffies_ = 0;
};

}  // namespace qdqrt::server
