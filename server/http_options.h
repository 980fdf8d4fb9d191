// The HTTP frontend's limits and sizes (server/http_connection.h, server/http_frontend.h).
#pragma once

#include <cstddef>
#include <string>

namespace qdqrt::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                    // 0: any free port (tests)
  int threads = 32;                   // connections served at once
  int max_queued_connections = 256;   // accepted connections waiting for a thread; past it: 429
  size_t max_body_bytes = 64u << 20;  // larger bodies (after decoding): 413
  int read_timeout_seconds = 5;       // a client slower than this between bytes is dropped (408)
  int keep_alive_timeout_seconds = 5;
  int header_timeout_seconds = 10;      // the request line and headers must arrive within this
  int request_timeout_seconds = 60;     // ... and the whole request (head and body) within this
  size_t max_header_bytes = 32u << 10;  // request line and headers together; past it: 431
  int max_header_count = 100;           // header fields; past it: 431
};

}  // namespace qdqrt::server
