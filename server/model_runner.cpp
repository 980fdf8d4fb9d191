#include "server/model_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace qdqrt::server {

namespace {

int64_t elements_past_batch(const Shape& shape) {
  int64_t count = 1;
  for (size_t axis = 1; axis < shape.size(); ++axis) count *= shape[axis];
  return count;
}

// A tensor's dims as clients see them: -1 for the batch.
Shape client_dims(const engine::IoTensorInfo& info) {
  Shape dims = info.shape;
  if (info.batched && info.batch_axis >= 0 && static_cast<size_t>(info.batch_axis) < dims.size()) {
    dims[static_cast<size_t>(info.batch_axis)] = -1;
  }
  return dims;
}

int64_t microseconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::microseconds>(to - from).count();
}

// The runners that queued requests for this thread's GatherScope, and how deep the scopes nest.
struct GatherState {
  int depth = 0;
  std::vector<std::shared_ptr<ModelRunner>> runners;
};
thread_local GatherState t_gather;

}  // namespace

struct ModelRunner::Worker {
  std::unique_ptr<engine::ExecutionContext> context;    // a fixed engine's
  std::unique_ptr<engine::RangeContext> range_context;  // or a range engine's
  // Merged batches are gathered here (per input, sized for the maximum batch).
  std::vector<std::vector<uint8_t>> merged_inputs;
  std::vector<std::vector<uint8_t>> merged_outputs;
};

ModelRunner::ModelRunner(std::shared_ptr<const engine::Engine> engine, const ModelConfig& config,
                         std::shared_ptr<ModelMetrics> metrics)
    : engine_(std::move(engine)), config_(config), metrics_(std::move(metrics)) {
  inputs_ = engine_->inputs();
  outputs_ = engine_->outputs();
  for (const auto& info : inputs_) input_dims_.push_back(client_dims(info));
  for (const auto& info : outputs_) output_dims_.push_back(client_dims(info));
  max_batch_ = std::max<int64_t>(1, std::min<int64_t>(engine_->max_batch(), config_.max_batch_size));
  start_instances();
}

ModelRunner::ModelRunner(std::shared_ptr<const engine::RangeEngine> range,
                         std::shared_ptr<const engine::Engine> opt_engine, std::vector<engine::IoTensorInfo> inputs,
                         std::vector<engine::IoTensorInfo> outputs, std::vector<Shape> input_dims,
                         std::vector<Shape> output_dims, int64_t range_batch, const ModelConfig& config,
                         std::shared_ptr<ModelMetrics> metrics)
    : engine_(std::move(opt_engine)),
      range_(std::move(range)),
      config_(config),
      metrics_(std::move(metrics)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      input_dims_(std::move(input_dims)),
      output_dims_(std::move(output_dims)) {
  max_batch_ = std::max<int64_t>(1, std::min<int64_t>(range_batch, config_.max_batch_size));
  start_instances();
}

Result<std::shared_ptr<ModelRunner>> ModelRunner::create_for_range(std::shared_ptr<const engine::RangeEngine> range,
                                                                   const ModelConfig& config,
                                                                   std::shared_ptr<ModelMetrics> metrics) {
  const std::vector<engine::ShapeProfile>& profiles = range->profiles();
  std::map<std::string, Shape> opt_shapes;
  for (const auto& [name, input_range] : profiles.front()) opt_shapes[name] = input_range.opt;
  auto opt_engine = range->engine_for(opt_shapes);
  if (!opt_engine.ok()) return opt_engine.status().with_context("the first profile's opt shapes");
  std::vector<engine::IoTensorInfo> inputs = (*opt_engine)->inputs();
  // The batch the range runs up to: dim 0 of the batched inputs' max shapes, in any profile.
  auto profile_batch = [&](const engine::ShapeProfile& profile) {
    int64_t batch = 1;
    for (const auto& info : inputs) {
      if (info.batched && !profile.at(info.name).max.empty()) batch = profile.at(info.name).max[0];
    }
    return batch;
  };
  int64_t range_batch = 1;
  for (const auto& profile : profiles) range_batch = std::max(range_batch, profile_batch(profile));
  // Each profile's min and max shapes at its largest batch: an output dim that differs between
  // any two of them varies. (Also: a profile that does not build fails the load here.)
  std::vector<std::vector<engine::IoTensorInfo>> ends;
  for (size_t index = 0; index < profiles.size(); ++index) {
    const engine::ShapeProfile& profile = profiles[index];
    for (Shape engine::ShapeRange::*end : {&engine::ShapeRange::min, &engine::ShapeRange::max}) {
      std::map<std::string, Shape> shapes;
      for (const auto& info : inputs) {
        Shape shape = profile.at(info.name).*end;
        if (info.batched && !shape.empty()) shape[0] = profile_batch(profile);
        shapes[info.name] = shape;
      }
      auto outputs = range->output_infos(shapes);
      if (!outputs.ok()) {
        return outputs.status().with_context(
            fmt::format("profile {}'s {} shapes", index, end == &engine::ShapeRange::min ? "min" : "max"));
      }
      if (!ends.empty() && outputs->size() != ends.front().size()) {
        return internal_error("profile {} gives {} outputs, profile 0 {}", index, outputs->size(), ends.front().size());
      }
      ends.push_back(std::move(outputs).value());
    }
  }
  // Inputs: the largest shape of any profile (merge buffers are sized for it); -1 where a dim
  // varies within a profile or between profiles.
  std::vector<Shape> input_dims;
  for (auto& info : inputs) {
    const engine::ShapeRange& first = profiles.front().at(info.name);
    Shape largest = first.max;
    for (const auto& profile : profiles) {
      const engine::ShapeRange& input_range = profile.at(info.name);
      for (size_t axis = 0; axis < largest.size() && axis < input_range.max.size(); ++axis) {
        largest[axis] = std::max(largest[axis], input_range.max[axis]);
      }
    }
    if (info.batched && !largest.empty()) largest[0] = range_batch;
    info.shape = largest;
    Shape dims = client_dims(info);
    for (const auto& profile : profiles) {
      const engine::ShapeRange& input_range = profile.at(info.name);
      for (size_t axis = 0; axis < dims.size() && axis < input_range.max.size(); ++axis) {
        if (input_range.min[axis] != first.min[axis] || input_range.max[axis] != first.min[axis]) dims[axis] = -1;
      }
    }
    input_dims.push_back(dims);
  }
  std::vector<engine::IoTensorInfo> outputs = ends.front();
  std::vector<Shape> output_dims;
  for (size_t index = 0; index < outputs.size(); ++index) {
    engine::IoTensorInfo& info = outputs[index];
    bool same_rank = true;
    for (const auto& end : ends) same_rank = same_rank && end[index].shape.size() == info.shape.size();
    std::vector<bool> varies(info.shape.size(), !same_rank);
    for (const auto& end : ends) {
      for (size_t axis = 0; same_rank && axis < info.shape.size(); ++axis) {
        if (end[index].shape[axis] != ends.front()[index].shape[axis]) varies[axis] = true;
        info.shape[axis] = std::max(info.shape[axis], end[index].shape[axis]);
      }
    }
    info.shape = info.shape_at_batch(range_batch);
    Shape dims = client_dims(info);
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      if (varies[axis]) dims[axis] = -1;
    }
    output_dims.push_back(dims);
  }
  return std::shared_ptr<ModelRunner>(new ModelRunner(std::move(range), *opt_engine, std::move(inputs),
                                                      std::move(outputs), std::move(input_dims), std::move(output_dims),
                                                      range_batch, config, std::move(metrics)));
}

void ModelRunner::start_instances() {
  can_merge_ = config_.dynamic_batching && max_batch_ > 1;
  for (const auto& info : inputs_) can_merge_ = can_merge_ && info.batched && !info.shape.empty();
  // Requests are cut back out of dim 0: every output must have its batch there, one row per image.
  for (const auto& info : outputs_) {
    can_merge_ = can_merge_ && info.batched && info.batch_axis == 0 && info.batch_factor == 1 && !info.shape.empty();
  }
  int instances = std::max(1, config_.instance_count);
  for (int index = 0; index < instances; ++index) {
    auto worker = std::make_unique<Worker>();
    const int threads = std::max(1, config_.threads_per_instance);
    if (range_) {
      worker->range_context = range_->create_context({.threads = threads});
    } else {
      worker->context = engine_->create_context({.threads = threads});
    }
    if (can_merge_) {
      // Sized for the largest shape; a range model's output of another shape may grow them once.
      for (const auto& info : inputs_) {
        worker->merged_inputs.emplace_back(max_batch_ * elements_past_batch(info.shape) * dtype_size(info.dtype));
      }
      for (const auto& info : outputs_) {
        worker->merged_outputs.emplace_back(max_batch_ * elements_past_batch(info.shape) * dtype_size(info.dtype));
      }
    }
    workers_.push_back(std::move(worker));
  }
  for (auto& worker : workers_) {
    idle_workers_.push_back(worker.get());
    threads_.emplace_back([this] { dispatcher_loop(); });
  }
}

bool ModelRunner::batch_in_range(const Pending& request, int64_t batch) const {
  if (!range_) return true;
  // A range engine's profiles may allow this shape only at some batches.
  std::map<std::string, Shape> shapes;
  for (size_t index = 0; index < inputs_.size(); ++index) {
    Shape shape = request.inputs[index].shape;
    if (inputs_[index].batched && !shape.empty()) shape[0] = batch;
    shapes[inputs_[index].name] = std::move(shape);
  }
  return range_->check_shapes(shapes).ok();
}

bool ModelRunner::same_shapes(const Pending& a, const Pending& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (size_t index = 0; index < a.inputs.size(); ++index) {
    const Shape& x = a.inputs[index].shape;
    const Shape& y = b.inputs[index].shape;
    if (x.size() != y.size() || x.empty()) return false;
    if (!std::equal(x.begin() + 1, x.end(), y.begin() + 1)) return false;
  }
  return true;
}

ModelRunner::~ModelRunner() { shutdown(); }

void ModelRunner::stop_batch_waits() {
  {
    std::lock_guard lock(mutex_);
    no_batch_waits_ = true;
  }
  queue_changed_.notify_all();
}

void ModelRunner::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queue_changed_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

namespace {

// An input the request must bind, with the model's datatype (fixed and range engines alike).
std::optional<ServeError> check_present_and_typed(const engine::IoTensorInfo& info, bool seen,
                                                  const InferTensor& tensor) {
  if (!seen) return serve_error(ErrorKind::kBadRequest, "input '{}' is missing", info.name);
  if (tensor.dtype != info.dtype) {
    return serve_error(ErrorKind::kBadRequest, "input '{}': datatype {} where the model expects {}", info.name,
                       kserve_dtype_name(tensor.dtype), kserve_dtype_name(info.dtype));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ServeError> ModelRunner::check_inputs(std::vector<InferTensor>& inputs, int64_t& batch) const {
  std::vector<InferTensor> ordered(inputs_.size());
  std::vector<bool> seen(inputs_.size(), false);
  for (InferTensor& tensor : inputs) {
    auto found = std::find_if(inputs_.begin(), inputs_.end(), [&](const auto& info) { return info.name == tensor.name; });
    if (found == inputs_.end()) return serve_error(ErrorKind::kBadRequest, "unexpected input '{}'", tensor.name);
    size_t index = static_cast<size_t>(found - inputs_.begin());
    if (seen[index]) return serve_error(ErrorKind::kBadRequest, "input '{}' is given twice", tensor.name);
    seen[index] = true;
    ordered[index] = std::move(tensor);
  }
  batch = 0;
  if (range_) return check_range_inputs(ordered, seen, inputs, batch);
  for (size_t index = 0; index < inputs_.size(); ++index) {
    const engine::IoTensorInfo& info = inputs_[index];
    if (auto error = check_present_and_typed(info, seen[index], ordered[index])) return error;
    const InferTensor& tensor = ordered[index];
    bool shape_ok = tensor.shape.size() == info.shape.size();
    for (size_t axis = info.batched ? 1 : 0; shape_ok && axis < info.shape.size(); ++axis) {
      shape_ok = tensor.shape[axis] == info.shape[axis];
    }
    if (shape_ok && info.batched) {
      int64_t tensor_batch = tensor.shape[0];
      if (tensor_batch < 1 || tensor_batch > max_batch_) {
        return serve_error(ErrorKind::kBadRequest, "input '{}': batch {} is outside 1..{}", info.name, tensor_batch,
                           max_batch_);
      }
      if (batch != 0 && batch != tensor_batch) {
        return serve_error(ErrorKind::kBadRequest, "inputs disagree on the batch size ({} and {})", batch,
                           tensor_batch);
      }
      batch = tensor_batch;
    }
    if (!shape_ok) {
      Shape expected = info.shape;
      if (info.batched) expected[0] = -1;
      return serve_error(ErrorKind::kBadRequest, "input '{}': shape [{}] does not match the model's [{}]", info.name,
                         fmt::join(tensor.shape, ","), fmt::join(expected, ","));
    }
  }
  if (batch == 0) batch = 1;
  inputs = std::move(ordered);
  return std::nullopt;
}

std::optional<ServeError> ModelRunner::check_range_inputs(std::vector<InferTensor>& ordered,
                                                          const std::vector<bool>& seen,
                                                          std::vector<InferTensor>& inputs, int64_t& batch) const {
  std::map<std::string, Shape> shapes;
  for (size_t index = 0; index < inputs_.size(); ++index) {
    const engine::IoTensorInfo& info = inputs_[index];
    if (auto error = check_present_and_typed(info, seen[index], ordered[index])) return error;
    const InferTensor& tensor = ordered[index];
    shapes[info.name] = tensor.shape;
  }
  // The range engine names the input, the dim and the profile's range.
  auto in_range = range_->check_shapes(shapes);
  if (!in_range.ok()) return ServeError{ErrorKind::kBadRequest, in_range.status().message()};
  for (size_t index = 0; index < inputs_.size(); ++index) {
    if (!inputs_[index].batched) continue;
    const int64_t tensor_batch = ordered[index].shape[0];
    if (tensor_batch > max_batch_) {
      return serve_error(ErrorKind::kBadRequest, "input '{}': batch {} is outside 1..{}", inputs_[index].name,
                         tensor_batch, max_batch_);
    }
    batch = tensor_batch;
  }
  if (batch == 0) batch = 1;
  inputs = std::move(ordered);
  return std::nullopt;
}

void ModelRunner::infer_async(std::vector<InferTensor> inputs, InferDone done) {
  Clock::time_point start = Clock::now();
  auto pending = std::make_unique<Pending>();
  metrics_->pending_requests.fetch_add(1, std::memory_order_relaxed);
  pending->done = [this, start, done = std::move(done)](InferOutcome outcome) {
    auto elapsed = Clock::now() - start;
    uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    metrics_->pending_requests.fetch_sub(1, std::memory_order_relaxed);
    if (outcome.error) {
      metrics_->request_failure.fetch_add(1, std::memory_order_relaxed);
      metrics_->failure_ns.fetch_add(ns, std::memory_order_relaxed);
    } else {
      metrics_->request_success.fetch_add(1, std::memory_order_relaxed);
      metrics_->request_duration_us.fetch_add(ns / 1000, std::memory_order_relaxed);
      metrics_->success_ns.fetch_add(ns, std::memory_order_relaxed);
      auto now = std::chrono::system_clock::now().time_since_epoch();
      metrics_->last_inference_ms.store(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()),
                                        std::memory_order_relaxed);
    }
    done(std::move(outcome));
  };
  auto refuse = [&](ServeError error) {
    InferOutcome outcome;
    outcome.error = std::move(error);
    pending->done(std::move(outcome));
  };
  if (auto error = check_inputs(inputs, pending->batch)) return refuse(std::move(*error));
  pending->inputs = std::move(inputs);
  pending->enqueued = start;
  Worker* idle_worker = nullptr;
  std::optional<ServeError> refusal;
  // A gathering thread runs what it queued when its scope ends (only runners a shared_ptr owns,
  // so the scope can keep them alive until then).
  std::shared_ptr<ModelRunner> gathering_runner = t_gather.depth > 0 ? weak_from_this().lock() : nullptr;
  bool gathered = false;
  {
    std::lock_guard lock(mutex_);
    // Nothing to merge with (and no delay to wait for): run now on this thread, or, when it is
    // gathering, when its scope ends.
    bool run_now = (queue_.empty() || gathering_runner) && !idle_workers_.empty() &&
                   (!can_merge_ || config_.max_queue_delay_us == 0);
    if (stopping_) {
      refusal = serve_error(ErrorKind::kUnavailable, "the server is shutting down");
    } else if (run_now && !gathering_runner) {
      idle_worker = idle_workers_.back();
      idle_workers_.pop_back();
    } else if (static_cast<int64_t>(queue_.size()) >= config_.max_queue_size) {
      refusal = serve_error(ErrorKind::kUnavailable, "the queue of model '{}' is full ({} requests)",
                            metrics_->model, config_.max_queue_size);
    } else {
      queue_.push_back(std::move(pending));
      ++arrivals_;
      gathered = run_now;
    }
  }
  if (refusal) return refuse(std::move(*refusal));  // answered outside the lock
  if (gathered) {
    auto& runners = t_gather.runners;
    try {
      if (std::find(runners.begin(), runners.end(), gathering_runner) == runners.end()) {
        runners.push_back(std::move(gathering_runner));
      }
    } catch (const std::bad_alloc&) {
      queue_changed_.notify_all();  // queued already: the dispatchers take it
    }
  } else if (idle_worker) {
    std::vector<std::unique_ptr<Pending>> batch;
    batch.push_back(std::move(pending));
    run_batch(*idle_worker, batch);
  } else {
    queue_changed_.notify_all();
  }
}

void ModelRunner::release(Worker* worker) {
  bool work_waiting = false;
  {
    std::lock_guard lock(mutex_);
    idle_workers_.push_back(worker);
    work_waiting = !queue_.empty();
  }
  // Waking the dispatchers for an empty queue would cost a context switch per request.
  if (work_waiting) queue_changed_.notify_all();
}

std::vector<std::unique_ptr<ModelRunner::Pending>> ModelRunner::take_batch(Worker*& worker) {
  std::vector<std::unique_ptr<Pending>> batch;
  // Reserved before anything is taken: merging then cannot throw with a worker and requests held.
  batch.reserve(static_cast<size_t>(max_batch_));
  std::unique_lock lock(mutex_);
  queue_changed_.wait(lock, [&] { return (!queue_.empty() && !idle_workers_.empty()) || (stopping_ && queue_.empty()); });
  if (queue_.empty()) return batch;  // stopping with nothing left
  worker = idle_workers_.back();
  idle_workers_.pop_back();
  Clock::time_point deadline = queue_.front()->enqueued + std::chrono::microseconds(config_.max_queue_delay_us);
  batch.push_back(std::move(queue_.front()));
  queue_.pop_front();
  merge_queued(lock, batch, deadline, true);
  // Other dispatchers may serve what is left.
  if (!queue_.empty()) queue_changed_.notify_all();
  return batch;
}

void ModelRunner::merge_queued(std::unique_lock<std::mutex>& lock, std::vector<std::unique_ptr<Pending>>& batch,
                               Clock::time_point deadline, bool wait) {
  if (!can_merge_) return;
  int64_t size = 0;
  for (const auto& pending : batch) size += pending->batch;
  auto is_preferred = [&](int64_t value) {
    return std::find(config_.preferred_batch_sizes.begin(), config_.preferred_batch_sizes.end(), value) !=
           config_.preferred_batch_sizes.end();
  };
  // Only requests of the first one's shape join it; the others stay queued, in order, for a later
  // batch. Bounded: at most kMaxScanned queued requests are looked at per pass.
  constexpr size_t kMaxScanned = 1024;
  while (size < max_batch_ && !is_preferred(size)) {
    bool full = false;
    size_t scanned = 0;
    for (auto it = queue_.begin(); it != queue_.end() && scanned < kMaxScanned; ++scanned) {
      if (!same_shapes(**it, *batch.front())) {
        ++it;
        continue;
      }
      if (size + (*it)->batch > max_batch_ || !batch_in_range(*batch.front(), size + (*it)->batch)) {
        full = true;
        break;
      }
      size += (*it)->batch;
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
      if (size >= max_batch_ || is_preferred(size)) break;
    }
    if (full || size >= max_batch_ || is_preferred(size)) break;
    // Waiting is worth it only while requests can still arrive: not when stopping.
    if (!wait || stopping_ || no_batch_waits_) break;
    const uint64_t seen = arrivals_;
    queue_changed_.wait_until(lock, deadline, [&] { return stopping_ || no_batch_waits_ || arrivals_ != seen; });
    if (arrivals_ == seen) break;  // the delay is over (or stopping) and nothing came
  }
}

ModelRunner::GatherScope::GatherScope() { ++t_gather.depth; }

ModelRunner::GatherScope::~GatherScope() {
  if (--t_gather.depth > 0) return;
  // Runs may answer requests whose callbacks gather again: take the list first.
  std::vector<std::shared_ptr<ModelRunner>> runners = std::move(t_gather.runners);
  t_gather.runners.clear();
  for (auto& runner : runners) runner->run_gathered();
}

void ModelRunner::run_gathered() {
  Worker* worker = nullptr;
  std::vector<std::unique_ptr<Pending>> batch;
  batch.reserve(static_cast<size_t>(max_batch_));
  bool work_waiting = false;
  {
    std::unique_lock lock(mutex_);
    work_waiting = !queue_.empty();
    if (work_waiting && !idle_workers_.empty()) {
      worker = idle_workers_.back();
      idle_workers_.pop_back();
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      // What was read together runs together: no waiting for more.
      merge_queued(lock, batch, Clock::now(), false);
    }
  }
  if (worker) {
    run_batch(*worker, batch);  // its release() wakes the dispatchers for what is left
  } else if (work_waiting) {
    queue_changed_.notify_all();  // every instance is busy (or stopping): the dispatchers take it
  }
}

void ModelRunner::dispatcher_loop() {
  for (;;) {
    Worker* worker = nullptr;
    std::vector<std::unique_ptr<Pending>> batch;
    try {
      batch = take_batch(worker);
    } catch (const std::exception&) {
      // Only the reservation can throw, before anything is taken: try again shortly.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (batch.empty()) return;
    run_batch(*worker, batch);
  }
}

void ModelRunner::run_batch(Worker& worker, std::vector<std::unique_ptr<Pending>>& batch) {
  Clock::time_point start = Clock::now();
  std::vector<InferOutcome> outcomes;
  std::optional<ServeError> failure;
  try {
    Status status = compute_batch(worker, batch, outcomes);
    if (!status.is_ok()) failure = ServeError{ErrorKind::kInternal, "inference failed: " + status.to_string()};
  } catch (const std::bad_alloc&) {
    failure = ServeError{ErrorKind::kUnavailable, "out of memory"};
  } catch (const std::exception& exception) {
    failure = ServeError{ErrorKind::kInternal, std::string("inference failed: ") + exception.what()};
  }
  // Free the instance before answering, so a client's next request finds it idle.
  release(&worker);
  for (size_t request = 0; request < batch.size(); ++request) {
    // One answer that throws must not keep the others unanswered or end the dispatcher.
    try {
      auto queued = std::chrono::duration_cast<std::chrono::nanoseconds>(start - batch[request]->enqueued).count();
      metrics_->queue_duration_us.fetch_add(static_cast<uint64_t>(queued) / 1000, std::memory_order_relaxed);
      metrics_->queue_count.fetch_add(1, std::memory_order_relaxed);
      metrics_->queue_ns.fetch_add(static_cast<uint64_t>(queued), std::memory_order_relaxed);
      InferOutcome outcome;
      if (failure || request >= outcomes.size()) {
        outcome.error = failure.value_or(ServeError{ErrorKind::kInternal, "inference failed"});
      } else {
        outcome = std::move(outcomes[request]);
      }
      batch[request]->done(std::move(outcome));
    } catch (const std::exception& exception) {
      std::fprintf(stderr, "serve: answering a request failed: %s\n", exception.what());
    } catch (...) {
      std::fprintf(stderr, "serve: answering a request failed\n");
    }
  }
}

Status ModelRunner::compute_batch(Worker& worker, std::vector<std::unique_ptr<Pending>>& batch,
                                  std::vector<InferOutcome>& outcomes) {
  Clock::time_point input_start = Clock::now();
  int64_t total = 0;
  for (const auto& pending : batch) total += pending->batch;
  outcomes.resize(batch.size());
  // A range model's outputs take their shapes from the run's input shapes.
  std::vector<engine::IoTensorInfo> run_outputs;
  if (range_) {
    std::map<std::string, Shape> shapes;
    for (size_t index = 0; index < inputs_.size(); ++index) {
      Shape shape = batch.front()->inputs[index].shape;
      if (inputs_[index].batched && !shape.empty()) shape[0] = total;
      shapes[inputs_[index].name] = std::move(shape);
    }
    QDQRT_ASSIGN_OR_RETURN(run_outputs, range_->output_infos(shapes));
    if (run_outputs.size() != outputs_.size()) return internal_error("the range engine's outputs changed");
  }
  std::vector<engine::ConstTensorBinding> input_bindings;
  std::vector<engine::TensorBinding> output_bindings;
  for (size_t index = 0; index < inputs_.size(); ++index) {
    const InferTensor& first = batch.front()->inputs[index];
    Shape shape = first.shape;
    if (batch.size() == 1) {
      input_bindings.push_back({inputs_[index].name, first.data.data(), shape});
      continue;
    }
    // Gather the requests' rows into one contiguous batch.
    size_t merged_bytes = 0;
    for (const auto& pending : batch) merged_bytes += pending->inputs[index].data.size();
    if (worker.merged_inputs[index].size() < merged_bytes) worker.merged_inputs[index].resize(merged_bytes);
    uint8_t* cursor = worker.merged_inputs[index].data();
    for (const auto& pending : batch) {
      const std::vector<uint8_t>& bytes = pending->inputs[index].data;
      std::memcpy(cursor, bytes.data(), bytes.size());
      cursor += bytes.size();
    }
    shape[0] = total;
    input_bindings.push_back({inputs_[index].name, worker.merged_inputs[index].data(), shape});
  }
  for (size_t index = 0; index < outputs_.size(); ++index) {
    const engine::IoTensorInfo& info = outputs_[index];
    // The batch may be on another dim (engine/engine.h).
    Shape shape = range_ ? run_outputs[index].shape : info.shape_at_batch(total);
    size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(info.dtype);
    if (batch.size() == 1) {
      InferTensor& output = outcomes[0].outputs.emplace_back();
      output.name = info.name;
      output.dtype = info.dtype;
      output.shape = shape;
      output.data.resize(bytes);
      output_bindings.push_back({info.name, output.data.data(), shape});
    } else {
      if (worker.merged_outputs[index].size() < bytes) worker.merged_outputs[index].resize(bytes);
      output_bindings.push_back({info.name, worker.merged_outputs[index].data(), shape});
    }
  }
  Clock::time_point compute_start = Clock::now();
  Status status = worker.range_context ? worker.range_context->run(input_bindings, output_bindings)
                                       : worker.context->run(input_bindings, output_bindings);
  Clock::time_point compute_end = Clock::now();
  if (status.is_ok() && batch.size() > 1) {
    // Split each output's rows back to the requests, in queue order.
    for (size_t index = 0; index < outputs_.size(); ++index) {
      const engine::IoTensorInfo& info = range_ ? run_outputs[index] : outputs_[index];
      size_t row_bytes = static_cast<size_t>(elements_past_batch(info.shape)) * dtype_size(info.dtype);
      const uint8_t* cursor = worker.merged_outputs[index].data();
      for (size_t request = 0; request < batch.size(); ++request) {
        InferTensor& output = outcomes[request].outputs.emplace_back();
        output.name = info.name;
        output.dtype = info.dtype;
        output.shape = info.shape;
        output.shape[0] = batch[request]->batch;
        size_t bytes = row_bytes * static_cast<size_t>(batch[request]->batch);
        output.data.assign(cursor, cursor + bytes);
        cursor += bytes;
      }
    }
  }
  Clock::time_point output_end = Clock::now();
  if (!status.is_ok()) return status;
  auto ns_between = [](Clock::time_point from, Clock::time_point to) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
  };
  metrics_->exec_count.fetch_add(1, std::memory_order_relaxed);
  metrics_->inference_count.fetch_add(static_cast<uint64_t>(total), std::memory_order_relaxed);
  metrics_->compute_infer_duration_us.fetch_add(microseconds_between(compute_start, compute_end),
                                                std::memory_order_relaxed);
  metrics_->record_batch(total);
  metrics_->record_execution(total, batch.size(), ns_between(input_start, compute_start),
                             ns_between(compute_start, compute_end), ns_between(compute_end, output_end));
  return status;
}

}  // namespace qdqrt::server
