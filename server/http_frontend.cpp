#include "server/http_frontend.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "server/http_codec.h"
#include "server/http_connection.h"

namespace qdqrt::server {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

void send_json(httplib::Response& response, const json& body) {
  response.status = 200;
  response.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

std::string match_or_empty(const httplib::Request& request, size_t index) {
  return request.matches.size() > index ? request.matches[index].str() : std::string();
}

json tensor_metadata_json(const std::vector<TensorMetadata>& tensors) {
  json list = json::array();
  for (const TensorMetadata& tensor : tensors) {
    list.push_back({{"name", tensor.name}, {"datatype", tensor.datatype}, {"shape", tensor.shape}});
  }
  return list;
}

}  // namespace

HttpFrontend::HttpFrontend(InferenceServer& server, HttpOptions options, bool metrics_only)
    : server_(server), options_(std::move(options)), http_(std::make_unique<RoutingServer>(options_.max_body_bytes)) {
  options_.threads = std::max(1, options_.threads);
  options_.max_queued_connections = std::max(1, options_.max_queued_connections);
  if (metrics_only) {
    add_metrics_route();
  } else {
    add_routes();
  }
}

HttpFrontend::~HttpFrontend() { stop(); }

void HttpFrontend::add_metrics_route() {
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(server_.metrics().prometheus_text(), "text/plain; version=0.0.4");
  });
}

void HttpFrontend::add_routes() {
  using httplib::ContentReader;
  using httplib::Request;
  using httplib::Response;
  http_->Get("/v2/health/live",
             [this](const Request&, Response& response) { response.status = server_.live() ? 200 : 503; });
  http_->Get("/v2/health/ready",
             [this](const Request&, Response& response) { response.status = server_.ready() ? 200 : 503; });
  http_->Get(R"(/v2/?)", [](const Request&, Response& response) {
    send_json(response, {{"name", kServerName}, {"version", kServerVersion}, {"extensions", server_extensions()}});
  });
  auto version_policy_json = [](const VersionPolicy& policy) -> json {
    switch (policy.kind) {
      case VersionPolicy::Kind::kAll:
        return {{"all", json::object()}};
      case VersionPolicy::Kind::kSpecific:
        return {{"specific", {{"versions", policy.versions}}}};
      case VersionPolicy::Kind::kLatest:
        break;
    }
    return {{"latest", {{"num_versions", policy.num_versions}}}};
  };
  http_->Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/config)", [this, version_policy_json](const Request& request, Response& response) {
    auto config = server_.model_config(match_or_empty(request, 1), match_or_empty(request, 2));
    if (auto* error = std::get_if<ServeError>(&config)) return send_error(response, *error);
    const ModelConfigView& model = std::get<ModelConfigView>(config);
    auto tensors = [](const std::vector<ModelConfigView::Tensor>& list) {
      json items = json::array();
      for (const auto& tensor : list)
        items.push_back({{"name", tensor.name}, {"data_type", tensor.datatype}, {"dims", tensor.dims}});
      return items;
    };
    json body = {
        {"name", model.name},
        {"platform", kPlatform},
        {"backend", "qdqrt"},
        {"version_policy", version_policy_json(model.version_policy)},
        {"max_batch_size", model.max_batch_size},
        {"input", tensors(model.inputs)},
        {"output", tensors(model.outputs)},
        {"instance_group", {{{"name", model.name + "_0"}, {"kind", "KIND_CPU"}, {"count", model.instance_count}}}}};
    if (model.dynamic_batching) {
      body["dynamic_batching"] = {{"preferred_batch_size", model.preferred_batch_sizes},
                                  {"max_queue_delay_microseconds", model.max_queue_delay_us}};
    }
    send_json(response, body);
  });
  // Before the metadata route, which would take "stats" for a model name.
  http_->Get(R"(/v2/models(?:/([^/]+)(?:/versions/([^/]+))?)?/stats)",
             [this](const Request& request, Response& response) {
               auto statistics = server_.model_statistics(match_or_empty(request, 1), match_or_empty(request, 2));
               if (auto* error = std::get_if<ServeError>(&statistics)) return send_error(response, *error);
               auto duration = [](const DurationStatistic& statistic) {
                 return json{{"count", statistic.count}, {"ns", statistic.ns}};
               };
               json models = json::array();
               for (const ModelStatistics& model : std::get<std::vector<ModelStatistics>>(statistics)) {
                 json batches = json::array();
                 for (const BatchStatistics& batch : model.batches) {
                   batches.push_back({{"batch_size", batch.batch_size},
                                      {"compute_input", duration(batch.compute_input)},
                                      {"compute_infer", duration(batch.compute_infer)},
                                      {"compute_output", duration(batch.compute_output)}});
                 }
                 models.push_back({{"name", model.name},
                                   {"version", model.version},
                                   {"last_inference", model.last_inference_ms},
                                   {"inference_count", model.inference_count},
                                   {"execution_count", model.execution_count},
                                   {"inference_stats",
                                    {{"success", duration(model.success)},
                                     {"fail", duration(model.fail)},
                                     {"queue", duration(model.queue)},
                                     {"compute_input", duration(model.compute_input)},
                                     {"compute_infer", duration(model.compute_infer)},
                                     {"compute_output", duration(model.compute_output)},
                                     {"cache_hit", duration({})},
                                     {"cache_miss", duration({})}}},
                                   {"batch_stats", std::move(batches)}});
               }
               send_json(response, {{"model_stats", std::move(models)}});
             });
  http_->Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)", [this](const Request& request, Response& response) {
    auto metadata = server_.model_metadata(match_or_empty(request, 1), match_or_empty(request, 2));
    if (auto* error = std::get_if<ServeError>(&metadata)) return send_error(response, *error);
    const ModelMetadata& model = std::get<ModelMetadata>(metadata);
    send_json(response, {{"name", model.name},
                         {"versions", model.versions},
                         {"platform", model.platform},
                         {"inputs", tensor_metadata_json(model.inputs)},
                         {"outputs", tensor_metadata_json(model.outputs)}});
  });
  http_->Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/ready)", [this](const Request& request, Response& response) {
    if (auto error = server_.model_ready(match_or_empty(request, 1), match_or_empty(request, 2))) {
      return send_error(response, *error);
    }
    response.status = 200;
  });
  size_t max_body = options_.max_body_bytes;
  http_->Post(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/infer)",
              [this, max_body](const Request& request, Response& response, const ContentReader& reader) {
                auto body = read_body(request, response, reader, max_body);
                if (!body) return;
                // An unknown model is a 404 whatever the body holds (as Triton answers).
                if (auto error = server_.model_ready(match_or_empty(request, 1), match_or_empty(request, 2));
                    error && error->kind == ErrorKind::kNotFound) {
                  return send_error(response, *error);
                }
                std::optional<std::string> header_length;
                if (request.has_header("Inference-Header-Content-Length")) {
                  header_length = request.get_header_value("Inference-Header-Content-Length");
                }
                auto parsed = parse_http_infer_request(*body, header_length);
                body = std::nullopt;  // the tensors hold their own copy
                if (auto* error = std::get_if<ServeError>(&parsed)) return send_error(response, *error);
                InferRequest& infer_request = std::get<InferRequest>(parsed);
                infer_request.model_name = match_or_empty(request, 1);
                infer_request.model_version = match_or_empty(request, 2);
                auto result = server_.infer(std::move(infer_request));
                if (auto* error = std::get_if<ServeError>(&result)) return send_error(response, *error);
                auto encoded = encode_http_infer_response(std::get<InferResponse>(result));
                if (auto* error = std::get_if<ServeError>(&encoded)) return send_error(response, *error);
                HttpBody& http_body = std::get<HttpBody>(encoded);
                if (http_body.header_length) {
                  response.set_header("Inference-Header-Content-Length", std::to_string(*http_body.header_length));
                }
                response.status = 200;
                response.set_content(std::move(http_body.content), http_body.content_type.c_str());
              });
  // Triton's system shared-memory extension.
  http_->Get(R"(/v2/systemsharedmemory(?:/region/([^/]+))?/status)", [this](const Request& request, Response& response) {
    auto regions = server_.shared_memory().status(match_or_empty(request, 1));
    if (!regions.ok()) return send_error(response, ServeError{ErrorKind::kBadRequest, regions.status().message()});
    json list = json::array();
    for (const SharedMemoryStatus& region : *regions) {
      list.push_back({{"name", region.name}, {"key", region.key}, {"offset", region.offset}, {"byte_size", region.byte_size}});
    }
    send_json(response, list);
  });
  http_->Post(R"(/v2/systemsharedmemory/region/([^/]+)/register)", [this, max_body](const Request& request, Response& response,
                                                                                   const ContentReader& reader) {
    auto body = read_body(request, response, reader, max_body);
    if (!body) return;
    std::string name = match_or_empty(request, 1);
    json options = json::parse(*body, nullptr, /*allow_exceptions=*/false);
    auto refuse = [&](const std::string& message) {
      send_error(response, ServeError{ErrorKind::kBadRequest, "shared memory region '" + name + "': " + message});
    };
    if (!options.is_object()) return refuse("the body must be a JSON object {\"key\", \"offset\", \"byte_size\"}");
    for (const auto& [field, value] : options.items()) {
      if (field != "key" && field != "offset" && field != "byte_size") return refuse("unknown field '" + field + "'");
    }
    auto key = options.find("key");
    if (key == options.end() || !key->is_string()) return refuse("'key' must be a string");
    auto offset = options.find("offset");
    if (offset != options.end() && !offset->is_number_unsigned()) return refuse("'offset' must be a non-negative integer");
    auto byte_size = options.find("byte_size");
    if (byte_size == options.end() || !byte_size->is_number_unsigned()) {
      return refuse("'byte_size' must be a non-negative integer");
    }
    Status status = server_.shared_memory().register_region(name, key->get<std::string>(),
                                                            offset == options.end() ? 0 : offset->get<uint64_t>(),
                                                            byte_size->get<uint64_t>());
    if (!status.is_ok()) return send_error(response, ServeError{ErrorKind::kBadRequest, status.message()});
    response.status = 200;
  });
  http_->Post(R"(/v2/systemsharedmemory(?:/region/([^/]+))?/unregister)", [this, max_body](const Request& request,
                                                                                          Response& response,
                                                                                          const ContentReader& reader) {
    if (!read_body(request, response, reader, max_body)) return;
    Status status = server_.shared_memory().unregister(match_or_empty(request, 1));
    if (!status.is_ok()) return send_error(response, ServeError{ErrorKind::kBadRequest, status.message()});
    response.status = 200;
  });
  http_->Post("/v2/repository/index", [this, max_body](const Request& request, Response& response,
                                                       const ContentReader& reader) {
    auto body = read_body(request, response, reader, max_body);
    if (!body) return;
    bool ready_only = false;
    if (!body->empty()) {
      json options = json::parse(*body, nullptr, /*allow_exceptions=*/false);
      if (!options.is_object())
        return send_error(response, ServeError{ErrorKind::kBadRequest, "the index request must be a JSON object"});
      if (auto ready = options.find("ready"); ready != options.end()) {
        if (!ready->is_boolean())
          return send_error(response, ServeError{ErrorKind::kBadRequest, "'ready' must be true or false"});
        ready_only = ready->get<bool>();
      }
    }
    json list = json::array();
    for (const ModelIndexEntry& entry : server_.repository().index()) {
      if (ready_only && entry.state != "READY") continue;
      json item = {{"name", entry.name}, {"version", entry.version}, {"state", entry.state}};
      if (!entry.reason.empty()) item["reason"] = entry.reason;
      list.push_back(std::move(item));
    }
    send_json(response, list);
  });
  http_->Post(
      R"(/v2/repository/models/([^/]+)/(load|unload))",
      [this, max_body](const Request& request, Response& response, const ContentReader& reader) {
        auto body = read_body(request, response, reader, max_body);
        if (!body) return;
        std::string name = match_or_empty(request, 1);
        bool loading = match_or_empty(request, 2) == "load";
        if (!body->empty()) {
          json options = json::parse(*body, nullptr, /*allow_exceptions=*/false);
          if (!options.is_object())
            return send_error(response, ServeError{ErrorKind::kBadRequest, "the request body must be a JSON object"});
          // Triton's load parameters (a config override, model files) are not supported: refused,
          // never ignored.
          if (auto parameters = options.find("parameters"); parameters != options.end()) {
            if (!parameters->is_object())
              return send_error(response, ServeError{ErrorKind::kBadRequest, "'parameters' must be an object"});
            if (!parameters->empty()) {
              return send_error(response, serve_error(ErrorKind::kBadRequest, "{} parameter '{}' is not supported",
                                                      loading ? "load" : "unload", parameters->begin().key()));
            }
          }
        }
        Status status = loading ? server_.repository().load(name) : server_.repository().unload(name);
        if (!status.is_ok()) {
          ErrorKind kind = ErrorKind::kBadRequest;
          if (is_unknown_model(status)) kind = ErrorKind::kNotFound;
          if (status.code() == StatusCode::kInternal) kind = ErrorKind::kInternal;
          return send_error(response, ServeError{kind, status.to_string()});
        }
        response.status = 200;
      });
}

Result<int> HttpFrontend::start() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return io_error("cannot create a socket: {}", std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(options_.port));
  if (::inet_pton(AF_INET, options_.host.c_str(), &address.sin_addr) != 1) {
    ::close(fd);
    return invalid_argument("--host '{}' is not an IPv4 address", options_.host);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(fd, kListenBacklog) != 0) {
    int error = errno;
    ::close(fd);
    return io_error("cannot listen on {}:{}: {}", options_.host, options_.port, std::strerror(error));
  }
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    return io_error("cannot create a pipe: {}", std::strerror(errno));
  }
  listen_socket_ = fd;
  pool_ = std::make_unique<ConnectionPool>(
      options_.threads, options_.max_queued_connections, [this](int client, std::string prefix, bool rejecting) {
        HttpOptions options = options_;
        if (rejecting) {
          // Turned away: a short deadline, so slow clients cannot hold the 429 threads.
          options.header_timeout_seconds = 1;
          options.request_timeout_seconds = 1;
          options.read_timeout_seconds = 1;
        }
        http_->serve_connection(
            client, std::move(prefix), options, rejecting, stopping_, stop_deadline_,
            [this](int fd, std::string buffered) { heads_->add(fd, std::move(buffered), true); },
            [this] { return pool_->crowded(); });
      });
  heads_ = std::make_unique<HeadReader>(
      options_, [this](int client, std::string bytes) { pool_->enqueue(client, std::move(bytes)); });
  if (!heads_->start()) return io_error("cannot start the HTTP head reader: {}", std::strerror(errno));
  acceptor_ = std::thread([this] { accept_loop(); });
  return static_cast<int>(ntohs(address.sin_port));
}

void HttpFrontend::accept_ready(int most) {
  for (int count = 0; count < most; ++count) {
    int client = ::accept4(listen_socket_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;  // EAGAIN: the backlog is empty
    }
    int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    heads_->add(client, std::string(), false);
  }
}

void HttpFrontend::accept_loop() {
  pollfd entries[2] = {{listen_socket_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
  while (!stopping_.load()) {
    int ready = ::poll(entries, 2, -1);
    if (ready < 0 && errno != EINTR) break;
    if (entries[1].revents != 0) break;
    if (entries[0].revents != 0) accept_ready(256);
  }
  // Stopping: the connections the kernel has accepted get an answer too (bounded).
  accept_ready(4096);
  ::close(listen_socket_);
  listen_socket_ = -1;
}

void HttpFrontend::stop() {
  if (!acceptor_.joinable()) return;
  // Requests still arriving get this long; past it their reads fail and they are answered 408.
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(kStopGraceSeconds);
  stop_deadline_ = deadline.time_since_epoch().count();
  stopping_ = true;
  char byte = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_pipe_[1], &byte, 1);
  acceptor_.join();
  // Order: the accept thread has handed over the backlog; the head reader hands over the heads
  // that complete in time; the pool serves what it holds.
  heads_->stop(deadline);
  pool_->shutdown();
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

}  // namespace qdqrt::server
