#include "tests/server/fuzz/request_fuzz_entry.h"

#include <string>
#include <string_view>

#include "server/grpc_codec.h"
#include "server/http_codec.h"

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

}  // namespace

void fuzz_serve_request_one_input(const uint8_t* data, size_t size) {
  if (size == 0) return;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
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
  }
}

}  // namespace qdqrt::server
