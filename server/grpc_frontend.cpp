#include "server/grpc_frontend.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "server/grpc_codec.h"
#include "server/model_runner.h"
#include "server/grpc_predict_v2.grpc.pb.h"

namespace qdqrt::server {

namespace {

grpc::Status to_grpc_status(const ServeError& error) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (error.kind) {
    case ErrorKind::kBadRequest: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case ErrorKind::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case ErrorKind::kTooLarge:
    case ErrorKind::kTooManyRequests: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case ErrorKind::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case ErrorKind::kInternal: code = grpc::StatusCode::INTERNAL; break;
  }
  return grpc::Status(code, error.message);
}

using AsyncService = inference::GRPCInferenceService::AsyncService;

// One RPC in flight on the completion queue: its tag is the object itself.
class Call {
 public:
  virtual ~Call() = default;
  // The queue returned this call's tag; `ok` is false when the server is shutting down.
  virtual void proceed(bool ok) = 0;
};

// A unary RPC: asks gRPC for the next call of its method, hands the request to `handler` (which
// fills the response and calls finish(), at once or later from another thread), and deletes
// itself once the answer is sent.
template <class Request, class Response>
class UnaryCall final : public Call {
 public:
  using RequestNext = std::function<void(grpc::ServerContext*, Request*, grpc::ServerAsyncResponseWriter<Response>*,
                                         void* tag)>;
  using Handler = std::function<void(UnaryCall&)>;

  // `unanswered` counts the calls taken and not yet finished (stop() waits for them).
  static void listen(RequestNext request_next, Handler handler, std::atomic<int64_t>* unanswered) {
    auto* call = new UnaryCall(std::move(request_next), std::move(handler), unanswered);
    call->request_next_(&call->context_, &call->request_, &call->writer_, call);
  }

  void proceed(bool ok) override {
    if (!ok || answered_) {
      // The answer is sent, or no call came (shutdown). A method whose next call could not be
      // asked for (out of memory) asks again now.
      if (ok && relisten_) try_listen();
      delete this;
      return;
    }
    relisten_ = !try_listen();  // the next call of this method, while this one is served
    answered_ = true;
    unanswered_->fetch_add(1);
    // The exception barrier: whatever the handler throws becomes the call's status.
    try {
      handler_(*this);
    } catch (const std::bad_alloc&) {
      finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "out of memory"));
    } catch (const std::exception& exception) {
      finish(grpc::Status(grpc::StatusCode::INTERNAL, exception.what()));
    } catch (...) {
      finish(grpc::Status(grpc::StatusCode::INTERNAL, "internal error"));
    }
  }

  Request& request() { return request_; }
  Response& response() { return response_; }
  // Sends the answer; only the first call counts (the exception barrier may race a late answer).
  void finish(const grpc::Status& status) {
    if (finished_.exchange(true)) return;
    std::atomic<int64_t>* unanswered = unanswered_;  // `this` may be gone once the answer is queued
    if (status.ok()) {
      writer_.Finish(response_, status, this);
    } else {
      writer_.FinishWithError(status, this);
    }
    unanswered->fetch_sub(1);
  }

 private:
  UnaryCall(RequestNext request_next, Handler handler, std::atomic<int64_t>* unanswered)
      : request_next_(std::move(request_next)), handler_(std::move(handler)), unanswered_(unanswered),
        writer_(&context_) {}

  RequestNext request_next_;
  Handler handler_;
  std::atomic<int64_t>* unanswered_;
  grpc::ServerContext context_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<Response> writer_;
  bool try_listen() {
    try {
      listen(request_next_, handler_, unanswered_);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  bool answered_ = false;
  bool relisten_ = false;
  std::atomic<bool> finished_{false};
};

}  // namespace

// The asynchronous (completion queue) API, with one thread per queue: the thread that polls a
// connection runs its calls, so an infer that finds its model idle runs there and is answered
// without a thread hand-off (gRPC 1.51's callback API hands every call to a separate thread and
// measured slower than the synchronous server). Infers read together are gathered and run as
// one batch when the thread has read them all. An infer that must queue returns at once and the
// model's dispatcher thread sends its answer, so no thread waits per queued call.
class GrpcFrontend::Service {
 public:
  explicit Service(InferenceServer& server) : server_(server) {}

  AsyncService& async_service() { return service_; }
  // Calls whose answer is still to come (queued in a model): their queue must outlive them.
  int64_t unanswered() const { return unanswered_.load(); }

  // Asks for the first call of every method on `queue`, which serve(queue) then polls.
  void listen(grpc::ServerCompletionQueue* queue) {
    on<inference::ServerLiveRequest, inference::ServerLiveResponse>(queue, &AsyncService::RequestServerLive, [this](auto& call) {
      call.response().set_live(server_.live());
      call.finish(grpc::Status::OK);
    });
    on<inference::ServerReadyRequest, inference::ServerReadyResponse>(queue, &AsyncService::RequestServerReady, [this](auto& call) {
      call.response().set_ready(server_.ready());
      call.finish(grpc::Status::OK);
    });
    on<inference::ModelReadyRequest, inference::ModelReadyResponse>(queue, &AsyncService::RequestModelReady, [this](auto& call) {
      auto error = server_.model_ready(call.request().name(), call.request().version());
      if (error && error->kind == ErrorKind::kNotFound) return call.finish(to_grpc_status(*error));
      call.response().set_ready(!error);
      call.finish(grpc::Status::OK);
    });
    on<inference::ServerMetadataRequest, inference::ServerMetadataResponse>(queue, &AsyncService::RequestServerMetadata, [](auto& call) {
          call.response().set_name(kServerName);
          call.response().set_version(kServerVersion);
          for (const std::string& extension : server_extensions()) call.response().add_extensions(extension);
          call.finish(grpc::Status::OK);
        });
    on<inference::ModelMetadataRequest, inference::ModelMetadataResponse>(queue, &AsyncService::RequestModelMetadata, [this](auto& call) { call.finish(model_metadata(call.request(), call.response())); });
    on<inference::ModelInferRequest, inference::ModelInferResponse>(queue, &AsyncService::RequestModelInfer, [this](auto& call) {
      // The codec moves the raw bytes out; the request message is ours for this call.
      auto parsed = request_from_grpc(call.request());
      if (auto* error = std::get_if<ServeError>(&parsed)) return call.finish(to_grpc_status(*error));
      server_.infer_async(std::move(std::get<InferRequest>(parsed)), [&call](InferenceServer::InferResult result) {
        // Runs on a dispatcher thread too: nothing may escape it.
        try {
          if (auto* error = std::get_if<ServeError>(&result)) return call.finish(to_grpc_status(*error));
          response_to_grpc(std::get<InferResponse>(result), call.response());
          call.finish(grpc::Status::OK);
        } catch (const std::exception&) {
          call.response().Clear();
          call.finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "out of memory building the response"));
        }
      });
    });
    on<inference::RepositoryIndexRequest, inference::RepositoryIndexResponse>(queue, &AsyncService::RequestRepositoryIndex, [this](auto& call) {
          for (const ModelIndexEntry& entry : server_.repository().index()) {
            if (call.request().ready() && entry.state != "READY") continue;
            auto* model = call.response().add_models();
            model->set_name(entry.name);
            model->set_version(entry.version);
            model->set_state(entry.state);
            model->set_reason(entry.reason);
          }
          call.finish(grpc::Status::OK);
        });
    on<inference::ModelConfigRequest, inference::ModelConfigResponse>(queue, &AsyncService::RequestModelConfig, [this](auto& call) {
          auto config = server_.model_config(call.request().name(), call.request().version());
          if (auto* error = std::get_if<ServeError>(&config)) return call.finish(to_grpc_status(*error));
          const ModelConfigView& model = std::get<ModelConfigView>(config);
          auto* out = call.response().mutable_config();
          out->set_name(model.name);
          out->set_platform(kPlatform);
          out->set_backend("qdqrt");
          switch (model.version_policy.kind) {
            case VersionPolicy::Kind::kLatest:
              out->mutable_version_policy()->mutable_latest()->set_num_versions(
                  static_cast<uint32_t>(model.version_policy.num_versions));
              break;
            case VersionPolicy::Kind::kAll:
              out->mutable_version_policy()->mutable_all();
              break;
            case VersionPolicy::Kind::kSpecific:
              for (int64_t version : model.version_policy.versions) {
                out->mutable_version_policy()->mutable_specific()->add_versions(version);
              }
              break;
          }
          out->set_max_batch_size(static_cast<int32_t>(model.max_batch_size));
          auto data_type = [](const std::string& name) {
            inference::DataType type = inference::TYPE_INVALID;
            inference::DataType_Parse(name, &type);
            return type;
          };
          for (const auto& tensor : model.inputs) {
            auto* input = out->add_input();
            input->set_name(tensor.name);
            input->set_data_type(data_type(tensor.datatype));
            for (int64_t dim : tensor.dims) input->add_dims(dim);
          }
          for (const auto& tensor : model.outputs) {
            auto* output = out->add_output();
            output->set_name(tensor.name);
            output->set_data_type(data_type(tensor.datatype));
            for (int64_t dim : tensor.dims) output->add_dims(dim);
          }
          auto* group = out->add_instance_group();
          group->set_name(model.name + "_0");
          group->set_kind(inference::ModelInstanceGroup::KIND_CPU);
          group->set_count(model.instance_count);
          if (model.dynamic_batching) {
            auto* batching = out->mutable_dynamic_batching();
            for (int64_t size : model.preferred_batch_sizes) batching->add_preferred_batch_size(static_cast<int32_t>(size));
            batching->set_max_queue_delay_microseconds(static_cast<uint64_t>(model.max_queue_delay_us));
          }
          call.finish(grpc::Status::OK);
        });
    on<inference::ModelStatisticsRequest, inference::ModelStatisticsResponse>(queue, &AsyncService::RequestModelStatistics, [this](auto& call) {
          auto statistics = server_.model_statistics(call.request().name(), call.request().version());
          if (auto* error = std::get_if<ServeError>(&statistics)) return call.finish(to_grpc_status(*error));
          auto fill = [](const DurationStatistic& from, inference::StatisticDuration* to) {
            to->set_count(from.count);
            to->set_ns(from.ns);
          };
          for (const ModelStatistics& model : std::get<std::vector<ModelStatistics>>(statistics)) {
            auto* entry = call.response().add_model_stats();
            entry->set_name(model.name);
            entry->set_version(model.version);
            entry->set_last_inference(model.last_inference_ms);
            entry->set_inference_count(model.inference_count);
            entry->set_execution_count(model.execution_count);
            auto* stats = entry->mutable_inference_stats();
            fill(model.success, stats->mutable_success());
            fill(model.fail, stats->mutable_fail());
            fill(model.queue, stats->mutable_queue());
            fill(model.compute_input, stats->mutable_compute_input());
            fill(model.compute_infer, stats->mutable_compute_infer());
            fill(model.compute_output, stats->mutable_compute_output());
            stats->mutable_cache_hit();
            stats->mutable_cache_miss();
            for (const BatchStatistics& batch : model.batches) {
              auto* batch_entry = entry->add_batch_stats();
              batch_entry->set_batch_size(static_cast<uint64_t>(batch.batch_size));
              fill(batch.compute_input, batch_entry->mutable_compute_input());
              fill(batch.compute_infer, batch_entry->mutable_compute_infer());
              fill(batch.compute_output, batch_entry->mutable_compute_output());
            }
          }
          call.finish(grpc::Status::OK);
        });
    on<inference::RepositoryModelLoadRequest, inference::RepositoryModelLoadResponse>(queue, &AsyncService::RequestRepositoryModelLoad, [this](auto& call) {
          call.finish(repository_status(server_.repository().load(call.request().model_name())));
        });
    on<inference::RepositoryModelUnloadRequest, inference::RepositoryModelUnloadResponse>(queue, &AsyncService::RequestRepositoryModelUnload, [this](auto& call) {
          call.finish(repository_status(server_.repository().unload(call.request().model_name())));
        });
    on<inference::SystemSharedMemoryStatusRequest, inference::SystemSharedMemoryStatusResponse>(queue, &AsyncService::RequestSystemSharedMemoryStatus, [this](auto& call) {
          auto regions = server_.shared_memory().status(call.request().name());
          if (!regions.ok()) return call.finish(repository_status(regions.status()));
          for (const SharedMemoryStatus& region : *regions) {
            auto& entry = (*call.response().mutable_regions())[region.name];
            entry.set_name(region.name);
            entry.set_key(region.key);
            entry.set_offset(region.offset);
            entry.set_byte_size(region.byte_size);
          }
          call.finish(grpc::Status::OK);
        });
    on<inference::SystemSharedMemoryRegisterRequest, inference::SystemSharedMemoryRegisterResponse>(queue, &AsyncService::RequestSystemSharedMemoryRegister, [this](auto& call) {
          const auto& request = call.request();
          call.finish(repository_status(
              server_.shared_memory().register_region(request.name(), request.key(), request.offset(), request.byte_size())));
        });
    on<inference::SystemSharedMemoryUnregisterRequest, inference::SystemSharedMemoryUnregisterResponse>(queue, &AsyncService::RequestSystemSharedMemoryUnregister, [this](auto& call) {
          call.finish(repository_status(server_.shared_memory().unregister(call.request().name())));
        });
  }

  // Runs the calls the queue returns until the queue is shut down and drained. The infers among
  // the calls that are ready together are gathered and run together once they are all read (so
  // with batching on they merge into one run, on this thread when the model is idle).
  static void serve(grpc::ServerCompletionQueue* queue) {
    void* tag = nullptr;
    bool ok = false;
    while (queue->Next(&tag, &ok)) {
      ModelRunner::GatherScope gather;
      static_cast<Call*>(tag)->proceed(ok);
      for (int more = 0; more < kMostGathered; ++more) {
        if (queue->AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_MONOTONIC)) != grpc::CompletionQueue::GOT_EVENT) break;
        static_cast<Call*>(tag)->proceed(ok);
      }
    }
  }

 private:
  template <class Request, class Response, class Method, class Handler>
  void on(grpc::ServerCompletionQueue* queue, Method method, Handler handler) {
    UnaryCall<Request, Response>::listen(
        [this, queue, method](grpc::ServerContext* context, Request* request,
                              grpc::ServerAsyncResponseWriter<Response>* writer,
                              void* tag) { (service_.*method)(context, request, writer, queue, queue, tag); },
        std::move(handler), &unanswered_);
  }

  grpc::Status model_metadata(const inference::ModelMetadataRequest& request, inference::ModelMetadataResponse& response) {
    auto metadata = server_.model_metadata(request.name(), request.version());
    if (auto* error = std::get_if<ServeError>(&metadata)) return to_grpc_status(*error);
    const auto& model = std::get<qdqrt::server::ModelMetadata>(metadata);
    response.set_name(model.name);
    for (const std::string& version : model.versions) response.add_versions(version);
    response.set_platform(model.platform);
    auto fill = [](const std::vector<TensorMetadata>& tensors, auto* list) {
      for (const TensorMetadata& tensor : tensors) {
        auto* entry = list->Add();
        entry->set_name(tensor.name);
        entry->set_datatype(tensor.datatype);
        for (int64_t dim : tensor.shape) entry->add_shape(dim);
      }
    };
    fill(model.inputs, response.mutable_inputs());
    fill(model.outputs, response.mutable_outputs());
    return grpc::Status::OK;
  }

  static grpc::Status repository_status(const Status& status) {
    if (status.is_ok()) return grpc::Status::OK;
    grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT;
    if (is_unknown_model(status)) code = grpc::StatusCode::NOT_FOUND;
    if (status.code() == StatusCode::kInternal) code = grpc::StatusCode::INTERNAL;
    return grpc::Status(code, status.to_string());
  }

  // Events taken in one go before the gathered infers run (each call is several events).
  static constexpr int kMostGathered = 256;

  InferenceServer& server_;
  AsyncService service_;
  std::atomic<int64_t> unanswered_{0};
};

GrpcFrontend::GrpcFrontend(InferenceServer& server, GrpcOptions options)
    : server_(server), options_(std::move(options)), service_(std::make_unique<Service>(server)) {}

GrpcFrontend::~GrpcFrontend() { stop(); }

Result<int> GrpcFrontend::start() {
  grpc::ServerBuilder builder;
  int port = 0;
  std::string address = options_.host + ":" + std::to_string(options_.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service_->async_service());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(options_.max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(-1);
  // gRPC 1.51 inflates a compressed message whole before checking its size against the limit:
  // refuse compressed requests (UNIMPLEMENTED) instead of inflating them.
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
  // One queue per thread: the thread that polls a connection then runs its calls.
  for (int index = 0; index < std::max(1, options_.threads); ++index) queues_.push_back(builder.AddCompletionQueue());
  grpc_ = builder.BuildAndStart();
  if (!grpc_ || port == 0) {
    grpc_.reset();
    drain_queues();
    return io_error("cannot listen on {} for gRPC (in use?)", address);
  }
  for (auto& queue : queues_) {
    service_->listen(queue.get());
    threads_.emplace_back([queue = queue.get()] { Service::serve(queue); });
  }
  return port;
}

void GrpcFrontend::stop() {
  if (!grpc_) return;
  // Stops accepting; the calls in flight are answered (the queue threads keep running) until the
  // grace period ends, then cancelled.
  grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(options_.shutdown_grace_seconds));
  // A call cancelled by the grace period may still be queued in a model, whose dispatcher will
  // answer it (the runners answer their whole queue, even when shutting down): keep the
  // completion queues until it has.
  while (service_->unanswered() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  drain_queues();
  grpc_.reset();
}

void GrpcFrontend::drain_queues() {
  for (auto& queue : queues_) queue->Shutdown();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  // Queues no thread polled (start failed) still hand back their pending calls.
  for (auto& queue : queues_) {
    void* tag = nullptr;
    bool ok = false;
    while (queue->Next(&tag, &ok)) static_cast<Call*>(tag)->proceed(ok);
  }
  queues_.clear();
}

}  // namespace qdqrt::server
