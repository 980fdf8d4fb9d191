// The error a request can end in, as the protocol reports it: an HTTP status with
// {"error": "..."} and the matching gRPC status code.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

namespace qdqrt::server {

enum class ErrorKind {
  kBadRequest,       // HTTP 400, gRPC INVALID_ARGUMENT: malformed body, wrong dtype/shape/size
  kNotFound,         // HTTP 404, gRPC NOT_FOUND: unknown model, version, input or output
  kTooLarge,         // HTTP 413, gRPC RESOURCE_EXHAUSTED: body over the size limit
  kTooManyRequests,  // HTTP 429, gRPC RESOURCE_EXHAUSTED: too many connections
  kUnavailable,      // HTTP 503, gRPC UNAVAILABLE: queue full, model not ready, shutting down
  kInternal,         // HTTP 500, gRPC INTERNAL: the engine failed (a bug)
};

struct ServeError {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
};

int http_status_of(ErrorKind kind);

template <class... Args>
ServeError serve_error(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
  return ServeError{kind, fmt::format(format, std::forward<Args>(args)...)};
}

}  // namespace qdqrt::server
