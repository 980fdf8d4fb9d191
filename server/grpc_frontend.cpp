#include "server/grpc_frontend.h"

#include <chrono>

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include "server/grpc_codec.h"
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

}  // namespace

class GrpcFrontend::Service final : public inference::GRPCInferenceService::Service {
 public:
  explicit Service(InferenceServer& server) : server_(server) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* response) override {
    response->set_live(server_.live());
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* response) override {
    response->set_ready(server_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* request,
                          inference::ModelReadyResponse* response) override {
    auto error = server_.model_ready(request->name(), request->version());
    if (error && error->kind == ErrorKind::kNotFound) return to_grpc_status(*error);
    response->set_ready(!error);
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* response) override {
    response->set_name(kServerName);
    response->set_version(kServerVersion);
    for (const char* extension : {"binary_tensor_data", "model_repository", "statistics"}) {
      response->add_extensions(extension);
    }
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* request,
                             inference::ModelMetadataResponse* response) override {
    auto metadata = server_.model_metadata(request->name(), request->version());
    if (auto* error = std::get_if<ServeError>(&metadata)) return to_grpc_status(*error);
    const auto& model = std::get<qdqrt::server::ModelMetadata>(metadata);
    response->set_name(model.name);
    for (const std::string& version : model.versions) response->add_versions(version);
    response->set_platform(model.platform);
    auto fill = [](const std::vector<TensorMetadata>& tensors, auto* list) {
      for (const TensorMetadata& tensor : tensors) {
        auto* entry = list->Add();
        entry->set_name(tensor.name);
        entry->set_datatype(tensor.datatype);
        for (int64_t dim : tensor.shape) entry->add_shape(dim);
      }
    };
    fill(model.inputs, response->mutable_inputs());
    fill(model.outputs, response->mutable_outputs());
    return grpc::Status::OK;
  }
  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* request,
                          inference::ModelInferResponse* response) override {
    // The codec moves the raw bytes out; the request message is ours for this call.
    auto parsed = request_from_grpc(const_cast<inference::ModelInferRequest&>(*request));
    if (auto* error = std::get_if<ServeError>(&parsed)) return to_grpc_status(*error);
    auto result = server_.infer(std::move(std::get<InferRequest>(parsed)));
    if (auto* error = std::get_if<ServeError>(&result)) return to_grpc_status(*error);
    response_to_grpc(std::get<InferResponse>(result), *response);
    return grpc::Status::OK;
  }
  grpc::Status RepositoryIndex(grpc::ServerContext*, const inference::RepositoryIndexRequest* request,
                               inference::RepositoryIndexResponse* response) override {
    for (const ModelIndexEntry& entry : server_.repository().index()) {
      if (request->ready() && entry.state != "READY") continue;
      auto* model = response->add_models();
      model->set_name(entry.name);
      model->set_version(entry.version);
      model->set_state(entry.state);
      model->set_reason(entry.reason);
    }
    return grpc::Status::OK;
  }
  grpc::Status RepositoryModelLoad(grpc::ServerContext*, const inference::RepositoryModelLoadRequest* request,
                                   inference::RepositoryModelLoadResponse*) override {
    return repository_status(server_.repository().load(request->model_name()));
  }
  grpc::Status RepositoryModelUnload(grpc::ServerContext*, const inference::RepositoryModelUnloadRequest* request,
                                     inference::RepositoryModelUnloadResponse*) override {
    return repository_status(server_.repository().unload(request->model_name()));
  }

 private:
  static grpc::Status repository_status(const Status& status) {
    if (status.is_ok()) return grpc::Status::OK;
    bool unknown = status.message().starts_with("no model");
    return grpc::Status(unknown ? grpc::StatusCode::NOT_FOUND : grpc::StatusCode::INVALID_ARGUMENT, status.to_string());
  }

  InferenceServer& server_;
};

GrpcFrontend::GrpcFrontend(InferenceServer& server, GrpcOptions options)
    : server_(server), options_(std::move(options)), service_(std::make_unique<Service>(server)) {}

GrpcFrontend::~GrpcFrontend() { stop(); }

Result<int> GrpcFrontend::start() {
  grpc::ServerBuilder builder;
  int port = 0;
  std::string address = options_.host + ":" + std::to_string(options_.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(options_.max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(-1);
  grpc::ResourceQuota quota("qdqrt_serve");
  quota.SetMaxThreads(std::max(2, options_.max_threads));
  builder.SetResourceQuota(quota);
  grpc_ = builder.BuildAndStart();
  if (!grpc_ || port == 0) {
    grpc_.reset();
    return io_error("cannot listen on {} for gRPC (in use?)", address);
  }
  return port;
}

void GrpcFrontend::stop() {
  if (!grpc_) return;
  grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(options_.shutdown_grace_seconds));
  grpc_->Wait();
  grpc_.reset();
}

}  // namespace qdqrt::server
