// Runs one loaded model version on `instance_count` ExecutionContexts of the shared Engine (or,
// for a model served over a range of shapes, RangeContexts of the shared RangeEngine: requests of
// any shape in its profile, each shape lowered on its first request; engine/profiles.h).
// A request that finds an idle instance and nothing queued runs at once on the caller's thread
// (no hand-off: the lowest latency). Otherwise it waits in a bounded queue, from which one
// dispatcher thread per instance takes work as instances free up; with dynamic batching a
// dispatcher merges queued requests along dim 0 (up to max_batch_size, waiting at most the queue
// delay for more), runs them as one batch and splits the outputs back per request. Only requests
// of equal shape past the batch merge: a queued request of another shape waits for a later batch.
// A frontend that reads several ready requests in a row on one thread (gRPC's completion queue)
// gathers them with a ModelRunner::GatherScope, so they merge into one run on that thread
// instead of running one by one while nothing reads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/profiles.h"
#include "server/infer_types.h"
#include "server/metrics.h"
#include "server/model_config.h"

namespace qdqrt::server {

struct InferOutcome {
  std::optional<ServeError> error;
  std::vector<InferTensor> outputs;  // every engine output, in the engine's order
};

// Owned by a shared_ptr (ModelRepository), which a GatherScope holds while it gathers.
class ModelRunner : public std::enable_shared_from_this<ModelRunner> {
 public:
  ModelRunner(std::shared_ptr<const engine::Engine> engine, const ModelConfig& config,
              std::shared_ptr<ModelMetrics> metrics);
  // A model served over the shapes of `range`'s profile. Lowers the profile's min and max shapes
  // (a range that does not build fails here, not at a request) to learn which output dims vary.
  static Result<std::shared_ptr<ModelRunner>> create_for_range(std::shared_ptr<const engine::RangeEngine> range,
                                                               const ModelConfig& config,
                                                               std::shared_ptr<ModelMetrics> metrics);
  ~ModelRunner();  // shutdown()
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  using InferDone = std::function<void(InferOutcome)>;

  // Checks the inputs against the engine and runs them, at once on this thread when an instance
  // is idle and nothing is queued, else through the queue. `done` gets the outcome exactly once:
  // on this thread when the request ran at once or was refused (kUnavailable when the queue is
  // full or the runner stopped), else on the dispatcher thread that ran its batch, so an
  // asynchronous frontend holds no thread per queued request. `done` must not block. Safe from
  // any number of threads.
  void infer_async(std::vector<InferTensor> inputs, InferDone done);
  // Stops taking requests, answers every queued one, joins the workers. Idempotent.
  void shutdown();
  // Draining: batches run with what is queued, without waiting the queue delay for more.
  void stop_batch_waits();

  // While one is alive on a thread, a request that would run at once on that thread is queued
  // instead (without waking the dispatchers). When the outermost scope ends, each model that got
  // such requests runs one batch of its queue on this thread (merged when batching is on; what
  // is left goes to the dispatchers). So requests read together run together, with no hand-off.
  class GatherScope {
   public:
    GatherScope();
    ~GatherScope();
    GatherScope(const GatherScope&) = delete;
    GatherScope& operator=(const GatherScope&) = delete;
  };

  // Shapes at the maximum batch (a range model: at its profile's max shapes).
  const std::vector<engine::IoTensorInfo>& inputs() const { return inputs_; }
  const std::vector<engine::IoTensorInfo>& outputs() const { return outputs_; }
  // The shapes clients see (model metadata and configuration): -1 for the batch and every dim
  // that varies across the profile.
  const std::vector<Shape>& input_dims() const { return input_dims_; }
  const std::vector<Shape>& output_dims() const { return output_dims_; }
  int64_t max_batch() const { return max_batch_; }
  const ModelConfig& config() const { return config_; }
  // The engine (a range model: the one lowered for the profile's opt shapes).
  const engine::Engine& engine() const { return *engine_; }
  // The range engine of a model served over a range of shapes; nullptr otherwise.
  const engine::RangeEngine* range_engine() const { return range_.get(); }
  ModelMetrics& metrics() { return *metrics_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    std::vector<InferTensor> inputs;  // in the engine's input order
    int64_t batch = 1;
    Clock::time_point enqueued;
    InferDone done;  // records the metrics, then answers the caller
  };
  struct Worker;
  // create_for_range's: `inputs`/`outputs` at the profile's max shapes, dims with -1 where they vary.
  ModelRunner(std::shared_ptr<const engine::RangeEngine> range, std::shared_ptr<const engine::Engine> opt_engine,
              std::vector<engine::IoTensorInfo> inputs, std::vector<engine::IoTensorInfo> outputs,
              std::vector<Shape> input_dims, std::vector<Shape> output_dims, int64_t range_batch,
              const ModelConfig& config, std::shared_ptr<ModelMetrics> metrics);
  // Fills the merge flag, the instances and their dispatcher threads (both constructors).
  void start_instances();
  // Equal shapes past the batch: only such requests merge.
  static bool same_shapes(const Pending& a, const Pending& b);
  // Whether `request`'s shapes at `batch` lie in a profile of the range engine (always for a fixed one).
  bool batch_in_range(const Pending& request, int64_t batch) const;

  std::optional<ServeError> check_inputs(std::vector<InferTensor>& inputs, int64_t& batch) const;
  // check_inputs for a range model: every shape in the profile.
  std::optional<ServeError> check_range_inputs(std::vector<InferTensor>& ordered, const std::vector<bool>& seen,
                                               std::vector<InferTensor>& inputs, int64_t& batch) const;
  void dispatcher_loop();
  // Takes a worker and a batch from the queue, waiting for both (and, when merging, up to the
  // queue delay for more requests): empty when stopping with nothing queued.
  std::vector<std::unique_ptr<Pending>> take_batch(Worker*& worker);
  // Fills `batch` (holding its first request) from the queue's front while merging allows;
  // waits until `deadline` for more only if `wait`.
  void merge_queued(std::unique_lock<std::mutex>& lock, std::vector<std::unique_ptr<Pending>>& batch,
                    Clock::time_point deadline, bool wait);
  // GatherScope's end: runs one batch of the queue here if an instance is idle.
  void run_gathered();
  void release(Worker* worker);
  // Runs the batch, releases the worker, then answers each request (an exception on the way
  // becomes each request's error; the worker is always released).
  void run_batch(Worker& worker, std::vector<std::unique_ptr<Pending>>& batch);
  // The engine run and the split of its outputs into one outcome per request.
  Status compute_batch(Worker& worker, std::vector<std::unique_ptr<Pending>>& batch, std::vector<InferOutcome>& outcomes);

  std::shared_ptr<const engine::Engine> engine_;
  std::shared_ptr<const engine::RangeEngine> range_;
  ModelConfig config_;
  std::shared_ptr<ModelMetrics> metrics_;
  std::vector<engine::IoTensorInfo> inputs_;
  std::vector<engine::IoTensorInfo> outputs_;
  std::vector<Shape> input_dims_;
  std::vector<Shape> output_dims_;
  int64_t max_batch_ = 1;
  bool can_merge_ = false;  // every input and output has the batch as dim 0

  std::mutex mutex_;
  std::condition_variable queue_changed_;
  std::deque<std::unique_ptr<Pending>> queue_;
  uint64_t arrivals_ = 0;  // requests queued so far: a batch waiting for more wakes on a change
  bool stopping_ = false;
  bool no_batch_waits_ = false;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_workers_;
  std::vector<std::thread> threads_;
};

}  // namespace qdqrt::server
