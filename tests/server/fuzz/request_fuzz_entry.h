// The request parsers' fuzz entry point, shared by the libFuzzer target (fuzz_serve_request.cpp,
// clang only, scripts/fuzz_serve_request.sh) and the gtest that replays corpus/ and mutations of
// it on every build (request_fuzz_replay_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt::server {

// The first byte picks the parser: 0 the HTTP JSON body; 1 Triton's binary extension (the next
// two bytes, little-endian, are Inference-Header-Content-Length); 2 a gRPC ModelInferRequest
// (protobuf bytes); 3 the bytes a client sends on one HTTP connection, served by the connection
// layer (server/http_connection.h) with a 4 KiB body limit: chunked and compressed bodies,
// framing, header limits, pipelined requests. The parser must return, never throw; a refusal must be a kBadRequest with a
// message; an accepted request must hold exactly shape x dtype-size bytes per input. Traps
// otherwise.
void fuzz_serve_request_one_input(const uint8_t* data, size_t size);

}  // namespace qdqrt::server
