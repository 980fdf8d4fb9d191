#include "tools/calibration/collector.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include <unistd.h>

#include "reference/executor.h"

namespace qdqrt::calibration {
namespace {

// "\rcalibrate max [##########          ] 128/256 images" on stderr, redrawn as batches finish.
class ProgressBar {
 public:
  // Redrawn in place on a terminal; elsewhere (logs, pipes) only the final line is written.
  ProgressBar(std::string label, int64_t total, bool enabled)
      : label_(std::move(label)), total_(total), enabled_(enabled), interactive_(isatty(fileno(stderr)) != 0) {
    draw(0);
  }
  void advance(int64_t count) {
    int64_t done = done_.fetch_add(count) + count;
    draw(done);
  }
  void finish() {
    if (!enabled_) return;
    if (!interactive_) {
      interactive_ = true;
      draw(done_.load());
    }
    std::fprintf(stderr, "\n");
  }

 private:
  void draw(int64_t done) {
    if (!enabled_ || !interactive_) return;
    constexpr int kWidth = 30;
    std::lock_guard<std::mutex> lock(mutex_);
    int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\r%s [%s] %lld/%lld images", label_.c_str(), bar.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_));
    std::fflush(stderr);
  }
  std::string label_;
  int64_t total_;
  bool enabled_;
  bool interactive_;
  std::atomic<int64_t> done_{0};
  std::mutex mutex_;
};

Tensor slice_batch(const Tensor& images, int64_t begin, int64_t end) {
  Shape shape = images.shape();
  shape[0] = end - begin;
  Tensor batch(images.dtype(), shape);
  const size_t image_bytes = images.nbytes() / static_cast<size_t>(images.dim(0));
  std::memcpy(batch.raw_data(), static_cast<const std::byte*>(images.raw_data()) + static_cast<size_t>(begin) * image_bytes,
              batch.nbytes());
  return batch;
}

Status check_inputs(const Graph& graph, const std::vector<Tensor>& groups, const std::vector<std::string>& tensors) {
  if (graph.inputs.size() != 1) {
    return unsupported("calibration feeds one image tensor, but the model has {} inputs", graph.inputs.size());
  }
  if (groups.empty()) return invalid_argument("calibration needs images, got none");
  for (const Tensor& images : groups) {
    if (images.dtype() != DataType::kFloat || images.rank() < 1 || images.dim(0) == 0) {
      return invalid_argument("calibration needs a non-empty float32 batch of images, got {} {}",
                              dtype_name(images.dtype()), shape_to_string(images.shape()));
    }
  }
  for (const std::string& name : tensors) {
    const ValueInfo* info = graph.find_value(name);
    if (info != nullptr && info->dtype != DataType::kFloat && info->dtype != DataType::kUndefined) {
      return invalid_argument("tensor '{}' to calibrate is {}, not float32", name, dtype_name(info->dtype));
    }
  }
  return Status::ok();
}

// Runs every batch (TBB-parallel) and hands each batch's requested tensors to `consume`, which
// writes into its thread's accumulator.
// Images of different sizes come as several groups (each of one size): a batch never spans two.
template <class Accumulator, class Consume>
Status run_batches(const Graph& graph, const std::vector<Tensor>& groups, const std::vector<std::string>& tensors,
                   const CollectOptions& options, const std::string& label,
                   tbb::enumerable_thread_specific<Accumulator>& accumulators, Consume consume) {
  const int64_t batch_size = std::max<int64_t>(1, options.batch_size);
  struct Batch {
    size_t group;
    int64_t begin, end;  // within the group
    int64_t first;       // index of its first image in the data set
  };
  std::vector<Batch> batch_list;
  int64_t count = 0;
  for (size_t group = 0; group < groups.size(); ++group) {
    const int64_t size = groups[group].dim(0);
    for (int64_t begin = 0; begin < size; begin += batch_size) {
      batch_list.push_back({group, begin, std::min(size, begin + batch_size), count + begin});
    }
    count += size;
  }
  const int64_t batches = static_cast<int64_t>(batch_list.size());
  ReferenceRunOptions run_options;
  run_options.extra_outputs = tensors;
  ProgressBar progress(label, count, options.show_progress);
  std::mutex error_mutex;
  std::optional<Status> first_error;
  std::atomic<bool> failed{false};
  auto body = [&](int64_t b) {
    if (failed.load()) return;
    const Batch& batch = batch_list[static_cast<size_t>(b)];
    const int64_t begin = batch.first, end = batch.first + batch.end - batch.begin;
    auto outputs = run_reference(graph, {{graph.inputs[0], slice_batch(groups[batch.group], batch.begin, batch.end)}},
                                 run_options);
    if (!outputs.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = outputs.status().with_context(fmt::format("images {}..{}", begin, end - 1));
      failed = true;
      return;
    }
    Accumulator& accumulator = accumulators.local();
    for (const std::string& name : tensors) {
      const Tensor& value = outputs->at(name);
      if (value.dtype() != DataType::kFloat) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = invalid_argument("tensor '{}' is {}, not float32", name, dtype_name(value.dtype()));
        failed = true;
        return;
      }
      consume(accumulator, name, value);
    }
    progress.advance(end - begin);
  };
  tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
  arena.execute([&] { tbb::parallel_for(int64_t{0}, batches, body); });
  progress.finish();
  if (first_error) return *first_error;
  return Status::ok();
}

}  // namespace

Result<std::map<std::string, float>> collect_max(const Graph& graph, const Tensor& images,
                                                 const std::vector<std::string>& tensors, const CollectOptions& options) {
  return collect_max(graph, std::vector<Tensor>{images}, tensors, options);
}

Result<std::map<std::string, float>> collect_max(const Graph& graph, const std::vector<Tensor>& images,
                                                 const std::vector<std::string>& tensors,
                                                 const CollectOptions& options) {
  QDQRT_RETURN_IF_ERROR(check_inputs(graph, images, tensors));
  using Maxima = std::map<std::string, float>;
  tbb::enumerable_thread_specific<Maxima> accumulators;
  QDQRT_RETURN_IF_ERROR(run_batches(graph, images, tensors, options, "calibrate: max pass      ", accumulators,
                                    [](Maxima& maxima, const std::string& name, const Tensor& value) {
                                      float largest = 0.0f;
                                      for (float x : value.values<float>()) {
                                        float magnitude = std::fabs(x);
                                        if (magnitude > largest) largest = magnitude;  // NaN never wins
                                      }
                                      auto [it, inserted] = maxima.emplace(name, largest);
                                      if (!inserted) it->second = std::max(it->second, largest);
                                    }));
  Maxima result;
  for (const std::string& name : tensors) result[name] = 0.0f;
  for (const Maxima& maxima : accumulators) {
    for (const auto& [name, value] : maxima) result[name] = std::max(result[name], value);
  }
  for (const auto& [name, value] : result) {
    if (!std::isfinite(value)) return invalid_argument("tensor '{}' holds non-finite values during calibration", name);
  }
  return result;
}

Result<std::map<std::string, Histogram>> collect_histograms(const Graph& graph, const Tensor& images,
                                                            const std::map<std::string, float>& ranges,
                                                            const CollectOptions& options) {
  return collect_histograms(graph, std::vector<Tensor>{images}, ranges, options);
}

Result<std::map<std::string, Histogram>> collect_histograms(const Graph& graph, const std::vector<Tensor>& images,
                                                            const std::map<std::string, float>& ranges,
                                                            const CollectOptions& options) {
  std::vector<std::string> tensors;
  for (const auto& [name, range] : ranges) tensors.push_back(name);
  QDQRT_RETURN_IF_ERROR(check_inputs(graph, images, tensors));
  using Histograms = std::map<std::string, Histogram>;
  tbb::enumerable_thread_specific<Histograms> accumulators;
  const int bins = options.histogram_bins;
  QDQRT_RETURN_IF_ERROR(run_batches(graph, images, tensors, options, "calibrate: histogram pass", accumulators,
                                    [&](Histograms& histograms, const std::string& name, const Tensor& value) {
                                      auto it = histograms.find(name);
                                      if (it == histograms.end()) {
                                        it = histograms.emplace(name, Histogram(bins, ranges.at(name))).first;
                                      }
                                      it->second.add(value.data<float>(), static_cast<size_t>(value.numel()));
                                    }));
  Histograms result;
  for (const auto& [name, range] : ranges) result.emplace(name, Histogram(bins, range));
  for (const Histograms& histograms : accumulators) {
    for (const auto& [name, histogram] : histograms) result.at(name).merge(histogram);
  }
  return result;
}

Result<std::map<std::string, float>> calibrate_tensors(const Graph& graph, const Tensor& images,
                                                       const std::vector<std::string>& tensors, const MethodSpec& method,
                                                       const CollectOptions& options) {
  return calibrate_tensors(graph, std::vector<Tensor>{images}, tensors, method, options);
}

Result<std::map<std::string, float>> calibrate_tensors(const Graph& graph, const std::vector<Tensor>& images,
                                                       const std::vector<std::string>& tensors,
                                                       const MethodSpec& method, const CollectOptions& options) {
  QDQRT_ASSIGN_OR_RETURN(auto maxima, collect_max(graph, images, tensors, options));
  if (!method.uses_histogram()) return maxima;
  QDQRT_ASSIGN_OR_RETURN(auto histograms, collect_histograms(graph, images, maxima, options));
  std::map<std::string, float> amax;
  for (const auto& [name, histogram] : histograms) {
    bool graph_input = std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end();
    amax[name] = graph_input && options.inputs_by_max ? maxima.at(name)
                                                       : static_cast<float>(amax_from_histogram(histogram, method));
  }
  return amax;
}

}  // namespace qdqrt::calibration
