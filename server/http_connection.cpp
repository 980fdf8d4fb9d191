#include "server/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "server/http_codec.h"

namespace qdqrt::server {

namespace {

using Clock = std::chrono::steady_clock;

int milliseconds_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 3'600'000));
}

// Waits for `events` on `fd` for at most `timeout_ms`: > 0 ready, 0 timed out, < 0 error.
int poll_one(int fd, short events, int timeout_ms) {
  pollfd entry{fd, events, 0};
  for (;;) {
    int ready = ::poll(&entry, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0 && (entry.revents & (POLLERR | POLLNVAL)) && !(entry.revents & events)) return -1;
    return ready;
  }
}

// Closes a connection without resetting it: a client whose request (or the rest of its body)
// was not read would otherwise get a reset, which can destroy the answer before it reads it.
// Reads what the client still sends for a bounded time and size first.
void close_gracefully(int fd, int linger_ms) {
  // No FIN first: some clients stop sending (and then fail their write) when they see it.
  if (linger_ms > 0 && poll_one(fd, POLLIN, 0) > 0) {
    char discard[16384];
    size_t drained = 0;
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(linger_ms);
    while (drained < (size_t{8} << 20) && poll_one(fd, POLLIN, milliseconds_until(deadline)) > 0) {
      ssize_t got = ::recv(fd, discard, sizeof(discard), MSG_DONTWAIT);
      if (got <= 0) break;
      drained += static_cast<size_t>(got);
    }
  }
  ::close(fd);
}

void write_all(int fd, const std::string& text, int timeout_ms) {
  size_t sent = 0;
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (sent < text.size() && poll_one(fd, POLLOUT, milliseconds_until(deadline)) > 0) {
    ssize_t count = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (count < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (count <= 0) return;
    sent += static_cast<size_t>(count);
  }
}

// A complete HTTP/1.1 error response that closes the connection (for answers given outside
// httplib's routing: an oversized or late request head, a connection turned away).
std::string raw_error_response(int status, const char* reason, const std::string& message) {
  std::string body = error_json(message);
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// One connection's socket as httplib reads and writes it, with the limits httplib 0.11 lacks:
// the request head is counted (bytes and lines) as httplib reads it, byte by byte; every read
// waits at most the read timeout and never past the request's deadlines.
class ConnectionStream final : public httplib::Stream {
 public:
  // `stop_deadline`: steady-clock nanoseconds past which no read waits (set when stopping).
  // `prefix`: bytes of this connection already read (by the HeadReader), read before the socket.
  ConnectionStream(int fd, std::string prefix, const HttpOptions& options, const std::atomic<int64_t>& stop_deadline)
      : fd_(fd), options_(options), prefix_(std::move(prefix)), stop_deadline_(stop_deadline) {}

  bool is_readable() const override { return has_buffered() || poll_one(fd_, POLLIN, 0) > 0; }
  bool is_writable() const override { return !closed_ && poll_one(fd_, POLLOUT, write_timeout_ms()) > 0; }

  ssize_t read(char* destination, size_t size) override {
    if (closed_) return -1;
    size_t count = 0;
    if (prefix_offset_ < prefix_.size()) {
      count = std::min(size, prefix_.size() - prefix_offset_);
      std::memcpy(destination, prefix_.data() + prefix_offset_, count);
      prefix_offset_ += count;
    } else {
      if (offset_ == length_ && !fill()) return -1;
      count = std::min(size, length_ - offset_);
      std::memcpy(destination, buffer_ + offset_, count);
      offset_ += count;
    }
    if (in_head_ && !account_head(destination, count)) return -1;
    if (!in_head_) {
      // Chunk framing and compression make the wire size differ from the body's: bound it too.
      body_wire_bytes_ += count;
      if (body_wire_bytes_ > 2 * options_.max_body_bytes + (size_t{64} << 10)) {
        body_too_large_ = true;
        return -1;
      }
    }
    return static_cast<ssize_t>(count);
  }

  ssize_t write(const char* source, size_t size) override {
    if (closed_) return static_cast<ssize_t>(size);  // answered already (see refuse())
    size_t sent = 0;
    while (sent < size) {
      if (poll_one(fd_, POLLOUT, write_timeout_ms()) <= 0) return -1;
      ssize_t count = ::send(fd_, source + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (count < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (count <= 0) return -1;
      sent += static_cast<size_t>(count);
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(false, ip, port); }
  int socket() const override { return fd_; }

  // Bytes read from the socket and not yet consumed (a pipelined request).
  bool has_buffered() const { return prefix_offset_ < prefix_.size() || offset_ < length_; }
  std::string take_buffered() {
    std::string rest = prefix_.substr(prefix_offset_);
    rest.append(buffer_ + offset_, length_ - offset_);
    prefix_.clear();
    prefix_offset_ = 0;
    offset_ = length_ = 0;
    return rest;
  }

  // Between requests: waits up to `timeout_ms` for the next request's first byte (less when
  // stopping: then only a request that has already arrived is served).
  bool wait_for_request(int timeout_ms, const std::atomic<bool>& stopping) {
    if (has_buffered()) return true;
    Clock::time_point end = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      // Stopping: a request already on its way is still served (one that crossed the close
      // would be lost), then the connection closes.
      bool last_look = stopping.load();
      int slice = last_look ? kLastLookMs : std::min(100, milliseconds_until(end));
      int ready = poll_one(fd_, POLLIN, slice);
      if (ready < 0) return false;
      if (ready > 0) {
        ssize_t got = ::recv(fd_, buffer_, sizeof(buffer_), MSG_DONTWAIT);
        if (got <= 0) return false;
        offset_ = 0;
        length_ = static_cast<size_t>(got);
        return true;
      }
      if (last_look || Clock::now() >= end) return false;
    }
  }

  void begin_request() {
    in_head_ = true;
    head_bytes_ = 0;
    head_lines_ = 0;
    body_wire_bytes_ = 0;
    timed_out_ = false;
    body_too_large_ = false;
    Clock::time_point now = Clock::now();
    head_deadline_ = now + std::chrono::seconds(options_.header_timeout_seconds);
    request_deadline_ = now + std::chrono::seconds(options_.request_timeout_seconds);
  }
  // httplib has read the head (the pre-routing handler runs): what follows is the body.
  void begin_body() { in_head_ = false; }

  // Reads and drops `count` body bytes (within the request's deadlines); false if they did not come.
  bool discard(uint64_t count) {
    char sink[16384];
    while (count > 0) {
      ssize_t got = read(sink, static_cast<size_t>(std::min<uint64_t>(count, sizeof(sink))));
      if (got <= 0) return false;
      body_wire_bytes_ = 0;  // dropped, not kept: not counted against the body's wire limit
      count -= static_cast<uint64_t>(got);
    }
    return true;
  }

  // The connection closes after this request (its body was not read, or it was refused).
  void set_must_close() { must_close_ = true; }
  bool must_close() const { return must_close_ || closed_; }
  // A read failed because the client was too slow (per read, or past a deadline).
  bool timed_out() const { return timed_out_; }
  bool body_too_large() const { return body_too_large_; }

  // Answers now, on the socket, and closes: httplib's own answer to the failed read that
  // follows is dropped.
  void refuse(int status, const char* reason, const std::string& message) {
    if (closed_) return;
    write_all(fd_, raw_error_response(status, reason, message), write_timeout_ms());
    closed_ = true;
    must_close_ = true;
  }

 private:
  static constexpr int kLastLookMs = 20;
  static constexpr int kPollSliceMs = 200;  // how soon a waiting read sees a stop

  int write_timeout_ms() const { return options_.read_timeout_seconds * 1000; }

  bool fill() {
    Clock::time_point read_deadline = Clock::now() + std::chrono::seconds(options_.read_timeout_seconds);
    for (;;) {
      // Re-read each round: a stop shortens the deadline of a read already waiting.
      Clock::time_point deadline = in_head_ ? std::min(head_deadline_, request_deadline_) : request_deadline_;
      deadline = std::min({deadline, read_deadline, Clock::time_point(Clock::duration(stop_deadline_.load()))});
      int wait_ms = std::min(kPollSliceMs, milliseconds_until(deadline));
      int ready = wait_ms > 0 ? poll_one(fd_, POLLIN, wait_ms) : 0;
      if (ready < 0) return false;
      if (ready == 0) {
        if (Clock::now() < deadline) continue;
        timed_out_ = true;
        if (in_head_) refuse(408, "Request Timeout", "the request head did not arrive in time");
        return false;
      }
      ssize_t got = ::recv(fd_, buffer_, sizeof(buffer_), MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got <= 0) return false;
      offset_ = 0;
      length_ = static_cast<size_t>(got);
      return true;
    }
  }

  bool account_head(const char* bytes, size_t count) {
    head_bytes_ += count;
    head_lines_ += static_cast<size_t>(std::count(bytes, bytes + count, '\n'));
    // Lines: the request line, the headers, and the blank line that ends them.
    if (head_bytes_ > options_.max_header_bytes || head_lines_ > static_cast<size_t>(options_.max_header_count) + 2) {
      refuse(431, "Request Header Fields Too Large",
             "the request head is over " + std::to_string(options_.max_header_bytes) + " bytes or " +
                 std::to_string(options_.max_header_count) + " header fields");
      return false;
    }
    return true;
  }

  void address_of(bool peer, std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    int result = peer ? ::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length)
                      : ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    ip.clear();
    port = 0;
    if (result != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
      port = ntohs(v4->sin_port);
    } else if (address.ss_family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  int fd_;
  const HttpOptions& options_;
  std::string prefix_;
  size_t prefix_offset_ = 0;
  char buffer_[16384];
  size_t offset_ = 0;
  size_t length_ = 0;
  bool in_head_ = true;
  size_t head_bytes_ = 0;
  size_t head_lines_ = 0;
  size_t body_wire_bytes_ = 0;
  const std::atomic<int64_t>& stop_deadline_;
  bool timed_out_ = false;
  bool body_too_large_ = false;
  bool must_close_ = false;
  bool closed_ = false;
  Clock::time_point head_deadline_;
  Clock::time_point request_deadline_;
};

// The connection a thread is serving: httplib's handlers reach its stream through this.
struct ConnectionState {
  ConnectionStream* stream = nullptr;
  bool rejecting = false;  // a connection turned away: every request is answered 429
};
thread_local ConnectionState t_connection;

// The connection closes after this answer, and the answer says so (else a client would send its
// next request on it).
void close_after_answer(httplib::Response& response) {
  if (t_connection.stream) t_connection.stream->set_must_close();
  if (!response.has_header("Connection")) response.set_header("Connection", "close");
}

// Refuses the request and closes the connection after the answer (its body, if any, is unread).
void refuse_and_close(httplib::Response& response, int status, const std::string& message) {
  response.status = status;
  response.set_content(error_json(message), "application/json");
  close_after_answer(response);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 408: return "request timeout";
    case 411: return "length required";
    case 413: return "request body too large";
    case 414: return "request URI too long";
    case 415: return "unsupported media type";
    case 429: return "too many connections";
    case 431: return "request header fields too large";
    case 501: return "not implemented";
    case 503: return "unavailable";
    default: return "request failed";
  }
}

bool is_digits(const std::string& text) {
  return !text.empty() && text.size() <= 19 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool equals_ignoring_case(const std::string& text, const char* word) {
  size_t length = std::strlen(word);
  if (text.size() != length) return false;
  for (size_t index = 0; index < length; ++index) {
    if (std::tolower(static_cast<unsigned char>(text[index])) != word[index]) return false;
  }
  return true;
}

bool carries_body(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" || method == "PRI";
}

// The checks on a request head that httplib 0.11 does not make, before any body is read (RFC
// 9112 section 6): one Content-Length, Transfer-Encoding only "chunked" and never with a
// Content-Length, a body encoding httplib inflates (and the body reader then bounds), no
// multipart body. A request with no length at all has an empty body.
bool refuse_request_head(const httplib::Request& request, httplib::Response& response, size_t max_body_bytes) {
  size_t length_count = request.get_header_value_count("Content-Length");
  std::string length_text = request.get_header_value("Content-Length");
  for (size_t index = 1; index < length_count; ++index) {
    if (request.get_header_value("Content-Length", index) != length_text) {
      refuse_and_close(response, 400, "the request has Content-Length headers that disagree");
      return true;
    }
  }
  if (length_count > 0 && !is_digits(length_text)) {
    refuse_and_close(response, 400, "Content-Length '" + length_text.substr(0, 40) + "' is not a length");
    return true;
  }
  size_t encoding_count = request.get_header_value_count("Transfer-Encoding");
  if (encoding_count > 0) {
    std::string encoding = request.get_header_value("Transfer-Encoding");
    if (encoding_count > 1 || !equals_ignoring_case(encoding, "chunked")) {
      refuse_and_close(response, 501,
                       "Transfer-Encoding '" + encoding.substr(0, 40) + "' is not supported (only chunked)");
      return true;
    }
    if (length_count > 0) {
      refuse_and_close(response, 400, "the request has both Content-Length and Transfer-Encoding");
      return true;
    }
  }
  if (request.get_header_value_count("Content-Encoding") > 1) {
    refuse_and_close(response, 415, "more than one Content-Encoding");
    return true;
  }
  if (request.has_header("Content-Encoding")) {
    std::string encoding = request.get_header_value("Content-Encoding");
    if (!equals_ignoring_case(encoding, "gzip") && !equals_ignoring_case(encoding, "deflate") &&
        !equals_ignoring_case(encoding, "br") && !equals_ignoring_case(encoding, "identity")) {
      refuse_and_close(response, 415, "Content-Encoding '" + encoding.substr(0, 40) + "' is not supported");
      return true;
    }
  }
  if (request.get_header_value("Content-Type").find("multipart/") != std::string::npos) {
    refuse_and_close(response, 415, "multipart bodies are not supported");
    return true;
  }
  if (length_count > 0 && std::stoull(length_text) > max_body_bytes) {
    std::string message = "request body too large: Content-Length " + length_text + " is over the limit of " +
                          std::to_string(max_body_bytes) + " bytes";
    // A body up to about twice the limit is read and dropped, so the connection can stay open
    // (clients that write the whole body first then see the answer); a larger one is not read.
    uint64_t length = std::stoull(length_text);
    if (t_connection.stream && length <= 2 * static_cast<uint64_t>(max_body_bytes) + (uint64_t{1} << 20) &&
        t_connection.stream->discard(length)) {
      send_error(response, ServeError{ErrorKind::kTooLarge, message});
    } else {
      refuse_and_close(response, 413, message);
    }
    return true;
  }
  if (!carries_body(request.method)) {
    // httplib reads no body for these: one that was sent would be read as the next request.
    if ((length_count > 0 && length_text != "0") || encoding_count > 0) close_after_answer(response);
  } else if (length_count == 0 && encoding_count == 0) {
    // No length: the body is empty (httplib would read until the connection closes).
    const_cast<httplib::Request&>(request).set_header("Content-Length", "0");
  }
  return false;
}

}  // namespace

void send_error(httplib::Response& response, const ServeError& error) {
  response.status = http_status_of(error.kind);
  response.set_content(error_json(error.message), "application/json");
}

// The request body, read through httplib's ContentReader (which undoes chunked framing and
// gzip/deflate/br) and counted as it comes: never more than `max_bytes` in memory, however
// the body is framed or compressed. On failure the response is set and the connection closes.
std::optional<std::string> read_body(const httplib::Request& request, httplib::Response& response,
                                     const httplib::ContentReader& reader, size_t max_bytes) {
  std::string body;
  std::string declared = request.get_header_value("Content-Length");
  if (is_digits(declared) && !request.has_header("Content-Encoding")) {
    body.reserve(static_cast<size_t>(std::min<unsigned long long>(std::stoull(declared), max_bytes)));
  }
  bool too_large = false;
  bool ok = reader([&](const char* data, size_t size) {
    if (size > max_bytes - body.size()) {
      too_large = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (ok) return body;
  ConnectionStream* stream = t_connection.stream;
  if (too_large || (stream && stream->body_too_large())) {
    refuse_and_close(response, 413,
                     "request body too large: over the limit of " + std::to_string(max_bytes) +
                         " bytes (counted after decompression)");
  } else if (stream && stream->timed_out()) {
    refuse_and_close(response, 408, "the request body did not arrive in time");
  } else {
    refuse_and_close(response, 400,
                     "the request body could not be read (chunked framing or compressed data is malformed)");
  }
  return std::nullopt;
}

RoutingServer::RoutingServer(size_t max_body_bytes) {
  set_payload_max_length(max_body_bytes);
  set_pre_routing_handler([max_body_bytes](const httplib::Request& request, httplib::Response& response) {
    if (t_connection.stream) t_connection.stream->begin_body();
    if (t_connection.rejecting) {
      refuse_and_close(response, 429, "too many connections; retry later");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (refuse_request_head(request, response, max_body_bytes)) return httplib::Server::HandlerResponse::Handled;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // httplib's own refusals (no route, unparsable request) carry no body.
  set_error_handler([](const httplib::Request&, httplib::Response& response) {
    if (response.body.empty()) {
      response.set_content(error_json(reason_phrase(response.status)), "application/json");
    }
  });
  // The exception barrier of every route.
  set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
    std::string message = "internal error";
    ErrorKind kind = ErrorKind::kInternal;
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::bad_alloc&) {
      message = "out of memory";
      kind = ErrorKind::kUnavailable;
    } catch (const std::exception& exception) {
      message = exception.what();
    } catch (...) {
    }
    send_error(response, ServeError{kind, message});
  });
}

void RoutingServer::serve_connection(int fd, std::string prefix, const HttpOptions& options, bool rejecting,
                                     const std::atomic<bool>& stopping, const std::atomic<int64_t>& stop_deadline,
                                     const Park& park, const std::function<bool()>& crowded) {
  ConnectionStream stream(fd, std::move(prefix), options, stop_deadline);
  t_connection = ConnectionState{&stream, rejecting};
  int keep_alive_ms = options.keep_alive_timeout_seconds * 1000;
  int first_wait_ms = rejecting ? 1000 : options.read_timeout_seconds * 1000;
  bool parked = false;
  try {
    for (size_t served = 0; served < kMaxRequestsPerConnection; ++served) {
      if (served > 0 && park && !stream.has_buffered() && !stopping.load()) {
        // A client that sends its next request at once keeps this thread (a hand-off to the
        // head reader and back costs two thread wake-ups), unless connections wait for one.
        bool next_arrived = !(crowded && crowded()) && stream.wait_for_request(kKeepServingMs, stopping);
        if (!next_arrived) {
          // Idle between requests: the HeadReader holds it, not this thread.
          park(fd, stream.take_buffered());
          parked = true;
          break;
        }
      }
      // The first request of a connection is waited for even when stopping: it was accepted.
      static const std::atomic<bool> not_stopping{false};
      bool next = served == 0 ? stream.wait_for_request(first_wait_ms, not_stopping)
                              : stream.wait_for_request(keep_alive_ms, stopping);
      if (!next) break;
      stream.begin_request();
      bool close_connection = rejecting || stopping.load() || served + 1 == kMaxRequestsPerConnection;
      bool connection_closed = false;
      bool ok = process_request(stream, close_connection, connection_closed, nullptr);
      if (!ok || connection_closed || close_connection || stream.must_close()) break;
    }
  } catch (const std::exception& exception) {
    std::fprintf(stderr, "serve: HTTP connection dropped: %s\n", exception.what());
  }
  t_connection = ConnectionState{};
  if (!parked) close_gracefully(fd, stream.must_close() ? 1000 : 0);
}

ConnectionPool::ConnectionPool(int threads, int max_queued, Serve serve)
    : max_queued_(static_cast<size_t>(std::max(1, max_queued))), serve_(std::move(serve)) {
  for (int index = 0; index < std::max(1, threads); ++index) workers_.emplace_back([this] { work(jobs_, false); });
  for (int index = 0; index < kRejectThreads; ++index) workers_.emplace_back([this] { work(rejects_, true); });
}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(int fd, std::string prefix) {
  {
    std::lock_guard lock(mutex_);
    try {
      if (jobs_.size() < max_queued_) {
        jobs_.push_back({fd, std::move(prefix)});
        jobs_changed_.notify_one();  // one request, one thread (not a wake-up of every idle one)
        return;
      }
      if (rejects_.size() < max_queued_) {
        rejects_.push_back({fd, std::move(prefix)});
        rejects_changed_.notify_one();
        return;
      }
    } catch (const std::bad_alloc&) {
    }
  }
  write_all(fd, raw_error_response(429, "Too Many Requests", "too many connections; retry later"), 100);
  close_gracefully(fd, 0);
}

bool ConnectionPool::crowded() {
  std::lock_guard lock(mutex_);
  return !jobs_.empty();
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  jobs_changed_.notify_all();
  rejects_changed_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ConnectionPool::work(std::deque<Job>& queue, bool rejecting) {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      (rejecting ? rejects_changed_ : jobs_changed_).wait(lock, [&] { return stopping_ || !queue.empty(); });
      if (queue.empty()) return;  // stopping and drained: every accepted connection was served
      job = std::move(queue.front());
      queue.pop_front();
    }
    serve_(job.fd, std::move(job.prefix), rejecting);
  }
}

HeadReader::HeadReader(const HttpOptions& options, Ready ready) : options_(options), ready_(std::move(ready)) {}

HeadReader::~HeadReader() {
  if (thread_.joinable()) stop(Clock::now());
  if (epoll_ >= 0) ::close(epoll_);
  if (wake_ >= 0) ::close(wake_);
}

bool HeadReader::start() {
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_ < 0 || wake_ < 0) return false;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = wake_;
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &event) != 0) return false;
  thread_ = std::thread([this] { loop(); });
  return true;
}

void HeadReader::add(int fd, std::string buffered, bool idle) {
  {
    std::lock_guard lock(mutex_);
    if (!stopped_) {
      try {
        incoming_.push_back({fd, std::move(buffered), idle});
      } catch (const std::bad_alloc&) {
        ::close(fd);
        return;
      }
      uint64_t one = 1;
      [[maybe_unused]] ssize_t written = ::write(wake_, &one, sizeof(one));
      return;
    }
  }
  close_gracefully(fd, 0);  // stopped: an idle connection is closed (a new one cannot come)
}

void HeadReader::stop(Clock::time_point deadline) {
  {
    std::lock_guard lock(mutex_);
    stop_deadline_ = deadline;
    stopping_ = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

namespace {

bool head_complete(const std::string& bytes) { return bytes.find("\r\n\r\n") != std::string::npos; }

}  // namespace

void HeadReader::loop() {
  struct Connection {
    std::string bytes;
    bool idle = true;  // between requests, no byte of the next one yet
    Clock::time_point deadline;
  };
  std::unordered_map<int, Connection> connections;
  auto forget = [&](int fd) {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    connections.erase(fd);
  };
  auto refuse = [&](int fd, int status, const char* reason, const std::string& message) {
    forget(fd);
    write_all(fd, raw_error_response(status, reason, message), 100);
    close_gracefully(fd, 0);
  };
  auto dispatch = [&](int fd) {
    std::string bytes = std::move(connections[fd].bytes);
    forget(fd);
    ready_(fd, std::move(bytes));
  };
  auto head_deadline = [&] { return Clock::now() + std::chrono::seconds(options_.header_timeout_seconds); };
  epoll_event events[256];
  char buffer[16384];
  for (;;) {
    int count = ::epoll_wait(epoll_, events, 256, 50);
    std::vector<Incoming> arrived;
    bool stopping = false;
    Clock::time_point stop_deadline;
    {
      std::lock_guard lock(mutex_);
      arrived.swap(incoming_);
      stopping = stopping_;
      stop_deadline = stop_deadline_;
      if (stopping) stopped_ = true;
    }
    for (Incoming& connection : arrived) {
      Connection& state = connections[connection.fd];
      state.bytes = std::move(connection.bytes);
      state.idle = connection.idle && state.bytes.empty();
      state.deadline =
          state.idle ? Clock::now() + std::chrono::seconds(options_.keep_alive_timeout_seconds) : head_deadline();
      if (head_complete(state.bytes)) {
        dispatch(connection.fd);
        continue;
      }
      epoll_event event{};
      event.events = EPOLLIN | EPOLLRDHUP;
      event.data.fd = connection.fd;
      if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, connection.fd, &event) != 0) {
        connections.erase(connection.fd);
        ::close(connection.fd);
      }
    }
    for (int index = 0; index < count; ++index) {
      int fd = events[index].data.fd;
      if (fd == wake_) {
        uint64_t value;
        [[maybe_unused]] ssize_t got = ::read(wake_, &value, sizeof(value));
        continue;
      }
      auto found = connections.find(fd);
      if (found == connections.end()) continue;
      Connection& state = found->second;
      bool closed = false;
      for (;;) {
        ssize_t got = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
        if (got > 0) {
          if (state.idle) {
            state.idle = false;
            state.deadline = head_deadline();
          }
          state.bytes.append(buffer, static_cast<size_t>(got));
          if (state.bytes.size() > options_.max_header_bytes + sizeof(buffer)) break;
          continue;
        }
        if (got == 0 || (errno != EAGAIN && errno != EINTR)) closed = true;
        if (got < 0 && errno == EINTR) continue;
        break;
      }
      if (head_complete(state.bytes)) {
        dispatch(fd);  // the stream checks the head's exact size and field count
      } else if (state.bytes.size() > options_.max_header_bytes) {
        refuse(fd, 431, "Request Header Fields Too Large",
               "the request head is over " + std::to_string(options_.max_header_bytes) + " bytes");
      } else if (closed) {
        forget(fd);
        ::close(fd);
      }
    }
    // Deadlines: an idle connection past its keep-alive timeout closes; a head still arriving
    // past its deadline is answered 408. Stopping: idle ones close now, heads get until the stop
    // deadline.
    Clock::time_point now = Clock::now();
    std::vector<std::pair<int, bool>> expired;  // fd, idle
    for (const auto& [fd, state] : connections) {
      Clock::time_point deadline = stopping ? std::min(state.deadline, stop_deadline) : state.deadline;
      if ((stopping && state.idle) || now >= deadline) expired.emplace_back(fd, state.idle);
    }
    for (auto [fd, idle] : expired) {
      if (idle) {
        forget(fd);
        close_gracefully(fd, 0);
      } else {
        refuse(fd, 408, "Request Timeout", "the request head did not arrive in time");
      }
    }
    if (stopping && connections.empty()) {
      std::lock_guard lock(mutex_);
      if (incoming_.empty()) return;
    }
  }
}
}  // namespace qdqrt::server
