// The HTTP connection layer under the frontends: cpp-httplib parses requests, inflates bodies
// and routes, over sockets this layer reads and writes itself, so the limits httplib 0.11 lacks
// hold however a request arrives: request-head bytes and header count (431), a deadline for the
// head and for the whole request (408), RFC 9112 framing checked before any body is read, and
// bodies counted as they arrive and as they inflate, chunked or not (413). Connections are
// served by a fixed pool of threads behind a bounded queue (ConnectionPool).
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http_options.h"
#include "server/serve_error.h"

namespace qdqrt::server {

// httplib's routing with the checks above installed (pre-routing), its refusals given a JSON
// body, and an exception barrier (500, or 503 "out of memory" for std::bad_alloc).
class RoutingServer : public httplib::Server {
 public:
  explicit RoutingServer(size_t max_body_bytes);

  // Serves one connection's requests (keep-alive) and closes it without resetting it.
  // `rejecting`: every request is answered 429. `stopping`: the request that has arrived is
  // served, then the connection closes. `stop_deadline`: steady-clock ticks past which no read
  // waits. `crowded`: connections wait for a thread (an idle keep-alive connection gives its up).
  void serve_connection(int fd, const HttpOptions& options, bool rejecting, const std::atomic<bool>& stopping,
                        const std::atomic<int64_t>& stop_deadline, const std::function<bool()>& crowded);

 private:
  static constexpr size_t kMaxRequestsPerConnection = size_t{1} << 20;
};

// The request body, read through httplib's ContentReader (which undoes chunked framing and
// gzip/deflate/br) and counted as it comes: never more than `max_bytes` in memory, however the
// body is framed or compressed. On failure (413, 408, 400) the response is set, the connection
// will close, and nullopt is returned. Only inside a RoutingServer route.
std::optional<std::string> read_body(const httplib::Request& request, httplib::Response& response,
                                     const httplib::ContentReader& reader, size_t max_bytes);

// {"error": ...} with the error's HTTP status.
void send_error(httplib::Response& response, const ServeError& error);

// A fixed pool of threads behind a bounded queue of connections. Past the queue a connection
// goes to a small pool that answers 429 with "Connection: close"; when even that is full the
// accept thread answers 429 itself without reading (so the listen backlog, not memory or
// threads, absorbs a flood, and a slow client never holds the accept thread).
class ConnectionPool {
 public:
  using Serve = std::function<void(int fd, bool rejecting)>;

  ConnectionPool(int threads, int max_queued, Serve serve);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Takes ownership of `fd`.
  void enqueue(int fd);
  // Connections are waiting and every thread is busy.
  bool crowded();
  // Serves every connection queued, then joins. Idempotent.
  void shutdown();

 private:
  static constexpr int kRejectThreads = 2;
  void work(std::deque<int>& queue, bool rejecting);

  size_t max_queued_;
  Serve serve_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<int> jobs_;
  std::deque<int> rejects_;
  bool stopping_ = false;
  int idle_workers_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace qdqrt::server
