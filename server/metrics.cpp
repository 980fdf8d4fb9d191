#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <utility>

namespace qdqrt::server {

void ModelMetrics::record_batch(int64_t batch_size) {
  size_t bucket = 0;
  while (bucket < kBatchBuckets.size() && batch_size > kBatchBuckets[bucket]) ++bucket;
  batch_size_counts[bucket].fetch_add(1, std::memory_order_relaxed);
  batch_size_sum.fetch_add(static_cast<uint64_t>(batch_size), std::memory_order_relaxed);
}

void ModelMetrics::record_execution(int64_t batch_size, size_t requests, uint64_t input_ns, uint64_t infer_ns,
                                    uint64_t output_ns) {
  compute_count.fetch_add(requests, std::memory_order_relaxed);
  compute_input_ns.fetch_add(input_ns * requests, std::memory_order_relaxed);
  compute_infer_ns.fetch_add(infer_ns * requests, std::memory_order_relaxed);
  compute_output_ns.fetch_add(output_ns * requests, std::memory_order_relaxed);
  compute_input_duration_us.fetch_add(input_ns / 1000, std::memory_order_relaxed);
  compute_output_duration_us.fetch_add(output_ns / 1000, std::memory_order_relaxed);
  std::lock_guard lock(batch_mutex_);
  BatchStatistics& entry = batch_statistics_[batch_size];
  entry.batch_size = batch_size;
  for (auto [statistic, ns] : {std::pair{&entry.compute_input, input_ns}, std::pair{&entry.compute_infer, infer_ns},
                               std::pair{&entry.compute_output, output_ns}}) {
    statistic->count += 1;
    statistic->ns += ns;
  }
}

ModelStatistics ModelMetrics::statistics() const {
  ModelStatistics statistics;
  statistics.name = model;
  statistics.version = version;
  statistics.last_inference_ms = last_inference_ms.load();
  statistics.inference_count = inference_count.load();
  statistics.execution_count = exec_count.load();
  statistics.success = {request_success.load(), success_ns.load()};
  statistics.fail = {request_failure.load(), failure_ns.load()};
  statistics.queue = {queue_count.load(), queue_ns.load()};
  uint64_t computed = compute_count.load();
  statistics.compute_input = {computed, compute_input_ns.load()};
  statistics.compute_infer = {computed, compute_infer_ns.load()};
  statistics.compute_output = {computed, compute_output_ns.load()};
  std::lock_guard lock(batch_mutex_);
  for (const auto& [size, entry] : batch_statistics_) statistics.batches.push_back(entry);
  return statistics;
}

std::shared_ptr<ModelMetrics> MetricsRegistry::model_metrics(const std::string& model, const std::string& version) {
  std::lock_guard lock(mutex_);
  for (const auto& metrics : models_) {
    if (metrics->model == model && metrics->version == version) return metrics;
  }
  auto metrics = std::make_shared<ModelMetrics>();
  metrics->model = model;
  metrics->version = version;
  models_.push_back(metrics);
  return metrics;
}

std::string MetricsRegistry::cpu_text() const {
  std::string text;
  std::ifstream stat("/proc/stat");
  std::string label;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal && label == "cpu") {
    uint64_t busy = user + nice + system + irq + softirq + steal;
    uint64_t total = busy + idle + iowait;
    double utilization = 0.0;
    if (total > last_total_jiffies_ && busy >= last_busy_jiffies_) {
      utilization = static_cast<double>(busy - last_busy_jiffies_) / static_cast<double>(total - last_total_jiffies_);
    }
    last_busy_jiffies_ = busy;
    last_total_jiffies_ = total;
    text += fmt::format("# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0] since the last scrape\n"
                        "# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization {}\n",
                        std::clamp(utilization, 0.0, 1.0));
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0, total_kib = 0, available_kib = 0;
  while (meminfo >> key >> value) {
    std::getline(meminfo, unit);
    if (key == "MemTotal:") total_kib = value;
    if (key == "MemAvailable:") available_kib = value;
  }
  if (total_kib > 0) {
    text += fmt::format("# HELP nv_cpu_memory_total_bytes CPU total memory (RAM), in bytes\n"
                        "# TYPE nv_cpu_memory_total_bytes gauge\nnv_cpu_memory_total_bytes {}\n"
                        "# HELP nv_cpu_memory_used_bytes CPU used memory (RAM), in bytes\n"
                        "# TYPE nv_cpu_memory_used_bytes gauge\nnv_cpu_memory_used_bytes {}\n",
                        total_kib * 1024, (total_kib - std::min(available_kib, total_kib)) * 1024);
  }
  return text;
}

std::string MetricsRegistry::prometheus_text() const {
  std::lock_guard lock(mutex_);
  std::string text = cpu_text();
  auto counter = [&](const char* name, const char* help, const std::function<uint64_t(const ModelMetrics&)>& value) {
    text += fmt::format("# HELP {} {}\n# TYPE {} counter\n", name, help, name);
    for (const auto& metrics : models_) {
      text += fmt::format("{}{{model=\"{}\",version=\"{}\"}} {}\n", name, metrics->model, metrics->version,
                          value(*metrics));
    }
  };
  counter("nv_inference_request_success", "Number of successful inference requests, all batch sizes",
          [](const ModelMetrics& m) { return m.request_success.load(); });
  counter("nv_inference_request_failure", "Number of failed inference requests, all batch sizes",
          [](const ModelMetrics& m) { return m.request_failure.load(); });
  counter("nv_inference_count", "Number of inferences performed (a batch of n counts n)",
          [](const ModelMetrics& m) { return m.inference_count.load(); });
  counter("nv_inference_exec_count", "Number of model executions performed (a merged batch counts once)",
          [](const ModelMetrics& m) { return m.exec_count.load(); });
  counter("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds",
          [](const ModelMetrics& m) { return m.request_duration_us.load(); });
  counter("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds",
          [](const ModelMetrics& m) { return m.queue_duration_us.load(); });
  counter("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds",
          [](const ModelMetrics& m) { return m.compute_infer_duration_us.load(); });
  counter("nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds",
          [](const ModelMetrics& m) { return m.compute_input_duration_us.load(); });
  counter("nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds",
          [](const ModelMetrics& m) { return m.compute_output_duration_us.load(); });
  const char* pending = "nv_inference_pending_request_count";
  text += fmt::format("# HELP {} Instantaneous number of pending requests awaiting execution per-model\n# TYPE {} gauge\n",
                      pending, pending);
  for (const auto& metrics : models_) {
    text += fmt::format("{}{{model=\"{}\",version=\"{}\"}} {}\n", pending, metrics->model, metrics->version,
                        std::max<int64_t>(0, metrics->pending_requests.load()));
  }
  const char* histogram = "qdqrt_inference_batch_size";
  text += fmt::format("# HELP {} Batch size of each model execution\n# TYPE {} histogram\n", histogram, histogram);
  for (const auto& metrics : models_) {
    std::string labels = fmt::format("model=\"{}\",version=\"{}\"", metrics->model, metrics->version);
    uint64_t cumulative = 0;
    for (size_t bucket = 0; bucket < ModelMetrics::kBatchBuckets.size(); ++bucket) {
      cumulative += metrics->batch_size_counts[bucket].load();
      text += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", histogram, labels, ModelMetrics::kBatchBuckets[bucket],
                          cumulative);
    }
    cumulative += metrics->batch_size_counts.back().load();
    text += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", histogram, labels, cumulative);
    text += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", histogram, labels, metrics->batch_size_sum.load(),
                        histogram, labels, cumulative);
  }
  return text;
}

}  // namespace qdqrt::server
