#include "server/http_frontend.h"

#include <sys/socket.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/http_codec.h"

namespace qdqrt::server {

namespace {

using json = nlohmann::json;

// Set on the threads that only turn connections away (see BoundedTaskQueue).
thread_local bool t_rejecting_connections = false;

// httplib's ThreadPool queues connections without limit. This one serves `threads` connections
// at once and queues up to `max_queued`; past that a connection goes to a small pool that answers
// each of its requests 429 with "Connection: close", and when even that is full the accept
// thread answers it itself (so the listen backlog, not memory, absorbs a flood).
class BoundedTaskQueue : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(int threads, int max_queued) : max_queued_(static_cast<size_t>(max_queued)) {
    for (int index = 0; index < threads; ++index) workers_.emplace_back([this] { work(jobs_, false); });
    for (int index = 0; index < kRejectThreads; ++index) workers_.emplace_back([this] { work(rejects_, true); });
  }
  ~BoundedTaskQueue() override { shutdown(); }

  void enqueue(std::function<void()> job) override {
    {
      std::lock_guard lock(mutex_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(job));
        changed_.notify_all();
        return;
      }
      if (rejects_.size() < max_queued_) {
        rejects_.push_back(std::move(job));
        changed_.notify_all();
        return;
      }
    }
    t_rejecting_connections = true;
    job();
    t_rejecting_connections = false;
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

 private:
  static constexpr int kRejectThreads = 2;

  void work(std::deque<std::function<void()>>& queue, bool rejecting) {
    t_rejecting_connections = rejecting;
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || !queue.empty(); });
        if (queue.empty()) return;  // stopping and drained: every accepted connection was served
        job = std::move(queue.front());
        queue.pop_front();
      }
      job();
    }
  }

  size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::function<void()>> rejects_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

void send_error(httplib::Response& response, const ServeError& error) {
  response.status = http_status_of(error.kind);
  response.set_content(error_json(error.message), "application/json");
}

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

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 413: return "request body too large";
    case 414: return "request URI too long";
    case 429: return "too many connections";
    case 503: return "unavailable";
    default: return "request failed";
  }
}

}  // namespace

HttpFrontend::HttpFrontend(InferenceServer& server, HttpOptions options, bool metrics_only)
    : server_(server), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  int threads = std::max(1, options_.threads);
  int max_queued = std::max(1, options_.max_queued_connections);
  http_->new_task_queue = [threads, max_queued] { return new BoundedTaskQueue(threads, max_queued); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(options_.read_timeout_seconds, 0);
  http_->set_write_timeout(options_.read_timeout_seconds, 0);
  http_->set_keep_alive_timeout(options_.keep_alive_timeout_seconds);
  http_->set_keep_alive_max_count(1u << 20);
  http_->set_tcp_nodelay(true);
  // Debian's libcpp-httplib is built with a listen backlog of 5: a burst of connections then
  // overflows it and Linux resets some (SYN cookies). Keep the listening socket to listen() on it
  // again with a real backlog once bound.
  http_->set_socket_options([this](int socket_fd) {
    int one = 1;
    ::setsockopt(socket_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    listen_socket_ = socket_fd;
  });
  http_->set_pre_routing_handler([](const httplib::Request& request, httplib::Response& response) {
    if (!t_rejecting_connections) return httplib::Server::HandlerResponse::Unhandled;
    // Asking the client to close frees this thread for the next connection turned away.
    const_cast<httplib::Request&>(request).set_header("Connection", "close");
    send_error(response, serve_error(ErrorKind::kTooManyRequests, "too many connections; retry later"));
    return httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own refusals (no route, 413 over the body limit, unparsable request) carry no body.
  http_->set_error_handler([](const httplib::Request&, httplib::Response& response) {
    if (response.body.empty()) {
      response.set_content(error_json(reason_phrase(response.status)), "application/json");
    }
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
    std::string message = "internal error";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::bad_alloc&) {
      message = "out of memory";
    } catch (const std::exception& exception) {
      message = exception.what();
    } catch (...) {
    }
    send_error(response, ServeError{ErrorKind::kInternal, message});
  });
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
  using httplib::Request;
  using httplib::Response;
  http_->Get("/v2/health/live", [this](const Request&, Response& response) {
    response.status = server_.live() ? 200 : 503;
  });
  http_->Get("/v2/health/ready", [this](const Request&, Response& response) {
    response.status = server_.ready() ? 200 : 503;
  });
  http_->Get(R"(/v2/?)", [](const Request&, Response& response) {
    send_json(response, {{"name", kServerName},
                         {"version", kServerVersion},
                         {"extensions", {"binary_tensor_data", "model_repository", "statistics"}}});
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
  http_->Post(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/infer)", [this](const Request& request, Response& response) {
    // An unknown model is a 404 whatever the body holds (as Triton answers).
    if (auto error = server_.model_ready(match_or_empty(request, 1), match_or_empty(request, 2));
        error && error->kind == ErrorKind::kNotFound) {
      return send_error(response, *error);
    }
    std::optional<std::string> header_length;
    if (request.has_header("Inference-Header-Content-Length")) {
      header_length = request.get_header_value("Inference-Header-Content-Length");
    }
    auto parsed = parse_http_infer_request(request.body, header_length);
    if (auto* error = std::get_if<ServeError>(&parsed)) return send_error(response, *error);
    InferRequest& infer_request = std::get<InferRequest>(parsed);
    infer_request.model_name = match_or_empty(request, 1);
    infer_request.model_version = match_or_empty(request, 2);
    auto result = server_.infer(std::move(infer_request));
    if (auto* error = std::get_if<ServeError>(&result)) return send_error(response, *error);
    HttpBody body = encode_http_infer_response(std::get<InferResponse>(result));
    if (body.header_length) response.set_header("Inference-Header-Content-Length", std::to_string(*body.header_length));
    response.status = 200;
    response.set_content(std::move(body.content), body.content_type.c_str());
  });
  http_->Post("/v2/repository/index", [this](const Request&, Response& response) {
    json list = json::array();
    for (const ModelIndexEntry& entry : server_.repository().index()) {
      json item = {{"name", entry.name}, {"version", entry.version}, {"state", entry.state}};
      if (!entry.reason.empty()) item["reason"] = entry.reason;
      list.push_back(std::move(item));
    }
    send_json(response, list);
  });
  http_->Post(R"(/v2/repository/models/([^/]+)/(load|unload))", [this](const Request& request, Response& response) {
    std::string name = match_or_empty(request, 1);
    bool loading = match_or_empty(request, 2) == "load";
    Status status = loading ? server_.repository().load(name) : server_.repository().unload(name);
    if (!status.is_ok()) {
      bool unknown = status.message().starts_with("no model");
      return send_error(response, ServeError{unknown ? ErrorKind::kNotFound : ErrorKind::kBadRequest, status.to_string()});
    }
    response.status = 200;
  });
}

Result<int> HttpFrontend::start() {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
    if (port < 0) return io_error("cannot listen on {}: no free port", options_.host);
  } else if (!http_->bind_to_port(options_.host, port)) {
    return io_error("cannot listen on {}:{} (in use?)", options_.host, port);
  }
  if (listen_socket_ >= 0) ::listen(listen_socket_, kListenBacklog);
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  return port;
}

void HttpFrontend::stop() {
  if (!listener_.joinable()) return;
  http_->stop();
  listener_.join();
}

}  // namespace qdqrt::server
