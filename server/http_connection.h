// The HTTP connection layer under the frontends: cpp-httplib parses requests, inflates bodies
// and routes, over sockets this layer reads and writes itself, so the limits httplib 0.11 lacks
// hold however a request arrives: request-head bytes and header count (431), a deadline for the
// head and for the whole request (408), RFC 9112 framing checked before any body is read, and
// bodies counted as they arrive and as they inflate, chunked or not (413). Connections are
// served by a fixed pool of threads behind a bounded queue (ConnectionPool).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
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

  // Hands an idle connection (and any bytes read past its last request) back to a HeadReader.
  using Park = std::function<void(int fd, std::string buffered)>;

  // Serves one connection's requests (keep-alive) starting with the bytes in `prefix`, then
  // closes it without resetting it, or parks it when it goes idle between requests (`park`
  // set; otherwise this thread waits up to the keep-alive timeout for the next request).
  // `rejecting`: every request is answered 429. `stopping`: the request that has arrived is
  // served, then the connection closes. `stop_deadline`: steady-clock ticks past which no read
  // waits.
  // `crowded` (optional): connections wait for a pool thread, so this one is not kept waiting
  // for the connection's next request.
  void serve_connection(int fd, std::string prefix, const HttpOptions& options, bool rejecting,
                        const std::atomic<bool>& stopping, const std::atomic<int64_t>& stop_deadline, const Park& park,
                        const std::function<bool()>& crowded = nullptr);

 private:
  static constexpr size_t kMaxRequestsPerConnection = size_t{1} << 20;
  // How long a thread waits for a connection's next request before handing it to the reader.
  static constexpr int kKeepServingMs = 10;
};

// The request body, read through httplib's ContentReader (which undoes chunked framing and
// gzip/deflate/br) and counted as it comes: never more than `max_bytes` in memory, however the
// body is framed or compressed. On failure (413, 408, 400) the response is set, the connection
// will close, and nullopt is returned. Only inside a RoutingServer route.
std::optional<std::string> read_body(const httplib::Request& request, httplib::Response& response,
                                     const httplib::ContentReader& reader, size_t max_bytes);

// {"error": ...} with the error's HTTP status.
void send_error(httplib::Response& response, const ServeError& error);

// A fixed pool of threads behind a bounded queue of connections whose request head has arrived.
// Past the queue a connection goes to a small pool that answers 429 with "Connection: close";
// when even that is full it is answered 429 at once, without waiting for a thread.
class ConnectionPool {
 public:
  using Serve = std::function<void(int fd, std::string prefix, bool rejecting)>;

  ConnectionPool(int threads, int max_queued, Serve serve);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Takes ownership of `fd`; `prefix`: the bytes already read from it.
  void enqueue(int fd, std::string prefix);
  // Connections wait for a thread.
  bool crowded();
  // Serves every connection queued, then joins. Idempotent.
  void shutdown();

 private:
  static constexpr int kRejectThreads = 2;
  struct Job {
    int fd = -1;
    std::string prefix;
  };
  void work(std::deque<Job>& queue, bool rejecting);

  size_t max_queued_;
  Serve serve_;
  std::mutex mutex_;
  std::condition_variable jobs_changed_;
  std::condition_variable rejects_changed_;
  std::deque<Job> jobs_;
  std::deque<Job> rejects_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Holds connections while they are idle between requests or their request head is still
// arriving, all on one thread (epoll), so neither slow heads nor idle keep-alive connections
// hold a pool thread. A connection whose head is complete goes on (`ready`) with the bytes read
// so far; a head over the size limit is answered 431, one past the header deadline 408, an idle
// connection past the keep-alive timeout is closed.
class HeadReader {
 public:
  using Ready = std::function<void(int fd, std::string bytes)>;
  using Clock = std::chrono::steady_clock;

  HeadReader(const HttpOptions& options, Ready ready);
  ~HeadReader();
  HeadReader(const HeadReader&) = delete;
  HeadReader& operator=(const HeadReader&) = delete;

  bool start();
  // Takes ownership of `fd`: a new connection (`idle` false), or one idle after a response.
  void add(int fd, std::string buffered, bool idle);
  // Idle connections close now; heads still arriving get until `deadline` (then 408); returns
  // when none is left. Connections added afterwards are closed.
  void stop(Clock::time_point deadline);

 private:
  struct Incoming {
    int fd;
    std::string bytes;
    bool idle;
  };
  void loop();

  const HttpOptions options_;
  Ready ready_;
  int epoll_ = -1;
  int wake_ = -1;
  std::mutex mutex_;
  std::vector<Incoming> incoming_;
  bool stopping_ = false;
  bool stopped_ = false;
  Clock::time_point stop_deadline_;
  std::thread thread_;
};

}  // namespace qdqrt::server
