// KServe v2 infer requests and responses over HTTP: the JSON body, and Triton's binary tensor
// data extension (the JSON header's length in Inference-Header-Content-Length, then the raw
// tensors in order). Pure functions of their input: fuzzed by tests/server/fuzz.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "server/infer_types.h"

namespace qdqrt::server {

// `header_length`: the Inference-Header-Content-Length header's value, as sent (nullopt when
// absent: the whole body is JSON). Never throws; malformed input is a kBadRequest error.
std::variant<InferRequest, ServeError> parse_http_infer_request(std::string_view body,
                                                                const std::optional<std::string>& header_length);

struct HttpBody {
  std::string content;
  std::string content_type;
  std::optional<size_t> header_length;  // set when binary outputs follow the JSON header
};
// Refused (kBadRequest) when an output asked for as JSON holds NaN or Inf, which JSON cannot
// carry: the binary extension carries them.
std::variant<HttpBody, ServeError> encode_http_infer_response(const InferResponse& response);

// A request's JSON may hold at most this many values (each costs far more in a DOM than in the
// text) and nest at most this deep; counted before the DOM is built.
inline constexpr size_t kMaxJsonElements = size_t{1} << 22;
inline constexpr size_t kMaxJsonDepth = 64;

// {"error": "..."}
std::string error_json(const std::string& message);

}  // namespace qdqrt::server
