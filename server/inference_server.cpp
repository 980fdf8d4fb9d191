#include "server/inference_server.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>

namespace qdqrt::server {

namespace {

// -1 for the batch and every dim that varies across a range model's profile (as Triton reports
// dynamic dims).
std::vector<TensorMetadata> tensor_metadata(const std::vector<engine::IoTensorInfo>& infos,
                                            const std::vector<Shape>& dims) {
  std::vector<TensorMetadata> tensors;
  for (size_t index = 0; index < infos.size(); ++index) {
    tensors.push_back({infos[index].name, kserve_dtype_name(infos[index].dtype), dims[index]});
  }
  return tensors;
}

}  // namespace

std::vector<std::string> server_extensions() {
  return {"binary_tensor_data", "model_configuration", "model_repository", "statistics", "system_shared_memory"};
}

InferenceServer::InferenceServer(RepositoryOptions options) : repository_(std::move(options), metrics_) {}

std::variant<ModelMetadata, ServeError> InferenceServer::model_metadata(const std::string& name,
                                                                        const std::string& version) const {
  ServeError error;
  auto runner = repository_.find(name, version, error);
  if (!runner) return error;
  ModelMetadata metadata;
  metadata.name = name;
  metadata.versions = repository_.served_versions(name);
  metadata.platform = kPlatform;
  metadata.inputs = tensor_metadata(runner->inputs(), runner->input_dims());
  metadata.outputs = tensor_metadata(runner->outputs(), runner->output_dims());
  metadata.max_batch_size = runner->max_batch();
  return metadata;
}

std::variant<ModelConfigView, ServeError> InferenceServer::model_config(const std::string& name,
                                                                        const std::string& version) const {
  ServeError error;
  auto runner = repository_.find(name, version, error);
  if (!runner) return error;
  ModelConfigView view;
  view.name = name;
  view.version = runner->metrics().version;
  // Triton's max_batch_size > 0 means every tensor has the batch as dim 0, left out of dims.
  bool batched = true;
  for (const auto* list : {&runner->inputs(), &runner->outputs()}) {
    for (const auto& info : *list) batched = batched && info.batched && info.batch_axis == 0 && info.batch_factor == 1 && !info.shape.empty();
  }
  view.max_batch_size = batched ? runner->max_batch() : 0;
  auto tensors = [&](const std::vector<engine::IoTensorInfo>& infos, const std::vector<Shape>& client_dims) {
    std::vector<ModelConfigView::Tensor> list;
    for (size_t index = 0; index < infos.size(); ++index) {
      // -1 at the batch and at the dims a range model's profile lets vary.
      Shape dims = client_dims[index];
      if (batched) dims.erase(dims.begin());
      list.push_back({infos[index].name, std::string("TYPE_") + kserve_dtype_name(infos[index].dtype), dims});
    }
    return list;
  };
  view.inputs = tensors(runner->inputs(), runner->input_dims());
  view.outputs = tensors(runner->outputs(), runner->output_dims());
  const ModelConfig& config = runner->config();
  view.version_policy = config.version_policy;
  view.instance_count = config.instance_count;
  view.dynamic_batching = config.dynamic_batching;
  view.max_queue_delay_us = config.max_queue_delay_us;
  view.preferred_batch_sizes = config.preferred_batch_sizes;
  return view;
}

std::optional<ServeError> InferenceServer::model_ready(const std::string& name, const std::string& version) const {
  ServeError error;
  if (!repository_.find(name, version, error)) return error;
  return std::nullopt;
}

std::variant<std::vector<ModelStatistics>, ServeError> InferenceServer::model_statistics(const std::string& name,
                                                                                        const std::string& version) {
  std::vector<ModelStatistics> statistics;
  if (name.empty()) {
    if (!version.empty()) return serve_error(ErrorKind::kBadRequest, "a version needs a model name");
    for (const ModelIndexEntry& entry : repository_.index()) {
      if (entry.state == "READY") statistics.push_back(metrics_.model_metrics(entry.name, entry.version)->statistics());
    }
    return statistics;
  }
  ServeError error;
  auto runner = repository_.find(name, version, error);
  if (!runner) return error;
  statistics.push_back(runner->metrics().statistics());
  return statistics;
}

InferenceServer::InferResult InferenceServer::infer(InferRequest request) {
  std::mutex mutex;
  std::condition_variable answered;
  std::optional<InferResult> result;
  infer_async(std::move(request), [&](InferResult answer) {
    std::lock_guard lock(mutex);
    result = std::move(answer);
    answered.notify_one();
  });
  std::unique_lock lock(mutex);
  answered.wait(lock, [&] { return result.has_value(); });
  return std::move(*result);
}

void InferenceServer::infer_async(InferRequest request, std::function<void(InferResult)> done) {
  // An exception anywhere on the way (bad_alloc above all) becomes an answer, and the caller is
  // answered exactly once even if the runner also answers later.
  struct Once {
    std::function<void(InferResult)> done;
    std::atomic<bool> called{false};
  };
  auto once = std::make_shared<Once>();
  once->done = std::move(done);
  auto answer_once = [once](InferResult result) {
    if (once->called.exchange(true)) return;
    once->done(std::move(result));
  };
  try {
    infer_async_unguarded(std::move(request), answer_once);
  } catch (const std::bad_alloc&) {
    answer_once(ServeError{ErrorKind::kUnavailable, "out of memory"});
  } catch (const std::exception& exception) {
    answer_once(ServeError{ErrorKind::kInternal, exception.what()});
  }
}

void InferenceServer::infer_async_unguarded(InferRequest request, std::function<void(InferResult)> done) {
  ServeError error;
  auto runner = repository_.find(request.model_name, request.model_version, error);
  if (!runner) return done(std::move(error));
  const auto& model_outputs = runner->outputs();
  std::vector<size_t> selected;  // engine output indices, in the order asked for
  for (const RequestedOutput& requested : request.outputs) {
    auto found = std::find_if(model_outputs.begin(), model_outputs.end(),
                              [&](const auto& info) { return info.name == requested.name; });
    if (found == model_outputs.end()) {
      runner->metrics().request_failure.fetch_add(1, std::memory_order_relaxed);
      return done(serve_error(ErrorKind::kBadRequest, "unexpected inference output '{}' for model '{}'",
                              requested.name, request.model_name));
    }
    size_t index = static_cast<size_t>(found - model_outputs.begin());
    // Each copy would be another full output in the response (Triton refuses these too).
    if (std::find(selected.begin(), selected.end(), index) != selected.end()) {
      runner->metrics().request_failure.fetch_add(1, std::memory_order_relaxed);
      return done(serve_error(ErrorKind::kBadRequest, "output '{}' is requested more than once", requested.name));
    }
    selected.push_back(index);
  }
  // Shared memory: inputs are copied out of their regions now; the regions outputs go to are held
  // by the answer (an unregister meanwhile unmaps them only after it).
  auto refuse = [&](const Status& status) {
    runner->metrics().request_failure.fetch_add(1, std::memory_order_relaxed);
    done(ServeError{ErrorKind::kBadRequest, status.message()});
  };
  for (InferTensor& input : request.inputs) {
    if (!input.shared_memory) continue;
    auto region = shared_memory_.find(input.shared_memory->region);
    if (!region.ok()) return refuse(region.status().with_context(fmt::format("input '{}'", input.name)));
    auto bytes = (*region)->window(input.shared_memory->offset, input.shared_memory->byte_size,
                                   fmt::format("input '{}'", input.name));
    if (!bytes.ok()) return refuse(bytes.status());
    input.data.assign(*bytes, *bytes + input.shared_memory->byte_size);
    input.shared_memory.reset();
  }
  std::vector<std::shared_ptr<const SharedMemoryRegion>> output_regions(request.outputs.size());
  for (size_t position = 0; position < request.outputs.size(); ++position) {
    const RequestedOutput& requested = request.outputs[position];
    if (!requested.shared_memory) continue;
    auto region = shared_memory_.find(requested.shared_memory->region);
    if (!region.ok()) return refuse(region.status().with_context(fmt::format("output '{}'", requested.name)));
    auto bytes = (*region)->window(requested.shared_memory->offset, requested.shared_memory->byte_size,
                                   fmt::format("output '{}'", requested.name));
    if (!bytes.ok()) return refuse(bytes.status());
    output_regions[position] = *region;
  }
  std::vector<InferTensor> inputs = std::move(request.inputs);
  // Not the runner itself: this lives in the runner's queue (a runner unloaded meanwhile answers
  // its queue as it shuts down).
  auto answer = [version = runner->metrics().version, request = std::move(request), selected = std::move(selected),
                 output_regions = std::move(output_regions), done = std::move(done)](InferOutcome outcome) mutable {
    if (outcome.error) return done(std::move(*outcome.error));
    InferResponse response;
    response.model_name = std::move(request.model_name);
    response.model_version = std::move(version);
    response.id = std::move(request.id);
    if (request.outputs.empty()) {
      response.outputs = std::move(outcome.outputs);
      response.output_binary.assign(response.outputs.size(), request.binary_data_output);
    } else {
      for (size_t position = 0; position < selected.size(); ++position) {
        response.outputs.push_back(outcome.outputs[selected[position]]);
        response.output_binary.push_back(request.outputs[position].binary_data.value_or(request.binary_data_output));
        const auto& target = request.outputs[position].shared_memory;
        if (!target) continue;
        InferTensor& output = response.outputs.back();
        if (output.data.size() > target->byte_size) {
          return done(serve_error(ErrorKind::kBadRequest,
                                  "output '{}' has {} bytes, more than its shared_memory_byte_size {} in region '{}'",
                                  output.name, output.data.size(), target->byte_size, target->region));
        }
        auto bytes = output_regions[position]->window(target->offset, output.data.size(), "output '" + output.name + "'");
        if (!bytes.ok()) return done(ServeError{ErrorKind::kBadRequest, bytes.status().message()});
        std::memcpy(*bytes, output.data.data(), output.data.size());
        output.shared_memory = SharedMemoryRef{target->region, target->offset, output.data.size()};
        output.data = {};
      }
    }
    done(std::move(response));
  };
  runner->infer_async(std::move(inputs), std::move(answer));
}

}  // namespace qdqrt::server
