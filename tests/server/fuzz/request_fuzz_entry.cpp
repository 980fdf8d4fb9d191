#include "tests/server/fuzz/request_fuzz_entry.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/grpc_codec.h"
#include "server/http_codec.h"
#include "server/http_connection.h"

namespace qdqrt::server {

namespace {

void check(const std::variant<InferRequest, ServeError>& parsed) {
  if (const auto* error = std::get_if<ServeError>(&parsed)) {
    if (error->kind != ErrorKind::kBadRequest || error->message.empty()) __builtin_trap();
    return;
  }
  for (const InferTensor& tensor : std::get<InferRequest>(parsed).inputs) {
    auto count = checked_element_count(tensor.shape, INT64_MAX);
    if (!count || tensor.data.size() != static_cast<uint64_t>(*count) * dtype_size(tensor.dtype)) __builtin_trap();
  }
}

constexpr size_t kFuzzBodyLimit = 4096;

// A RoutingServer with two routes: GET /live and POST /echo (the body's size, read bounded).
RoutingServer& fuzz_routing_server() {
  static RoutingServer* routing = [] {
    auto* server = new RoutingServer(kFuzzBodyLimit);
    server->Get("/live", [](const httplib::Request&, httplib::Response& response) { response.status = 200; });
    server->Post("/echo", [](const httplib::Request& request, httplib::Response& response,
                             const httplib::ContentReader& reader) {
      auto body = read_body(request, response, reader, kFuzzBodyLimit);
      if (!body) return;
      if (body->size() > kFuzzBodyLimit) __builtin_trap();
      response.set_content(std::to_string(body->size()), "text/plain");
    });
    return server;
  }();
  return *routing;
}

// The bytes as one client connection (then its end of input), served on a socket pair on this
// thread: framing, chunked bodies, gzip/deflate/br bodies, limits, pipelining.
void serve_http_bytes(std::string_view bytes) {
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) return;
  int buffer = 4 << 20;
  for (int socket : sockets) {
    ::setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
    ::setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  }
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t count = ::send(sockets[1], bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (count <= 0) break;
    sent += static_cast<size_t>(count);
  }
  ::shutdown(sockets[1], SHUT_WR);
  HttpOptions options;
  options.max_body_bytes = kFuzzBodyLimit;
  options.max_header_bytes = 2048;
  options.max_header_count = 16;
  options.read_timeout_seconds = 1;
  options.header_timeout_seconds = 1;
  options.request_timeout_seconds = 1;
  static const std::atomic<bool> not_stopping{false};
  static const std::atomic<int64_t> no_deadline{INT64_MAX};
  fuzz_routing_server().serve_connection(sockets[0], std::string(), options, false, not_stopping, no_deadline, nullptr);
  ::close(sockets[1]);
}

}  // namespace

void fuzz_serve_request_one_input(const uint8_t* data, size_t size) {
  if (size == 0) return;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      check(parse_http_infer_request(body, std::nullopt));
      break;
    case 1: {
      if (body.size() < 2) return;
      size_t header_length = static_cast<uint8_t>(body[0]) | (static_cast<size_t>(static_cast<uint8_t>(body[1])) << 8);
      check(parse_http_infer_request(body.substr(2), std::to_string(header_length)));
      break;
    }
    case 2: {
      inference::ModelInferRequest message;
      if (!message.ParseFromArray(body.data(), static_cast<int>(body.size()))) return;
      check(request_from_grpc(message));
      break;
    }
    case 3:
      serve_http_bytes(body);
      break;
  }
}

}  // namespace qdqrt::server
