// The setup of the in-process server tests: a model repository in a temporary folder, loaded by an
// InferenceServer and served over HTTP and gRPC on 127.0.0.1 with ports the OS picks.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/grpc_frontend.h"
#include "server/http_frontend.h"
#include "server/inference_server.h"

namespace qdqrt::server {

class ServedRepository {
 public:
  // The folder: <temp>/<prefix><pid>, removed with the repository.
  explicit ServedRepository(const std::string& prefix)
      : root_(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))) {
    std::filesystem::create_directories(root_);
  }
  ServedRepository(const ServedRepository&) = delete;
  ServedRepository& operator=(const ServedRepository&) = delete;
  ~ServedRepository() {
    http_.reset();
    grpc_.reset();
    server_.reset();
    std::error_code error;
    std::filesystem::remove_all(root_, error);
  }

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path repository() const { return root_ / "repository"; }

  // Model `name`, version 1: a copy of `model`, and `config` as its config.json.
  void add_model(const std::string& name, const std::filesystem::path& model, const std::string& config) const {
    std::filesystem::create_directories(repository() / name / "1");
    std::filesystem::copy_file(model, repository() / name / "1" / "model.onnx");
    std::ofstream(repository() / name / "config.json") << config;
  }

  // Loads the repository (options.repository_dir is set here) and starts both frontends on
  // 127.0.0.1 (the options' host and port are set here).
  Status start(RepositoryOptions options, HttpOptions http_options, GrpcOptions grpc_options) {
    options.repository_dir = repository().string();
    server_ = std::make_unique<InferenceServer>(options);
    QDQRT_RETURN_IF_ERROR(server_->load_models());
    http_options.host = "127.0.0.1";
    http_options.port = 0;
    http_ = std::make_unique<HttpFrontend>(*server_, http_options);
    QDQRT_ASSIGN_OR_RETURN(http_port_, http_->start());
    grpc_options.host = "127.0.0.1";
    grpc_options.port = 0;
    grpc_ = std::make_unique<GrpcFrontend>(*server_, grpc_options);
    QDQRT_ASSIGN_OR_RETURN(grpc_port_, grpc_->start());
    return Status::ok();
  }

  InferenceServer& server() const { return *server_; }
  int http_port() const { return http_port_; }
  int grpc_port() const { return grpc_port_; }

 private:
  std::filesystem::path root_;
  std::unique_ptr<InferenceServer> server_;
  std::unique_ptr<HttpFrontend> http_;
  std::unique_ptr<GrpcFrontend> grpc_;
  int http_port_ = 0;
  int grpc_port_ = 0;
};

}  // namespace qdqrt::server
