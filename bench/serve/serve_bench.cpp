// bench/serve: qdqrt serve's throughput and p50/p99 latency at 1, 4, 16 and 64 concurrent
// clients, over HTTP (binary extension, and Triton's system shared memory) and gRPC (raw contents),
// with dynamic batching on and
// off, next to the same model run directly through the engine. The server runs in this process
// on 127.0.0.1 (OS-chosen ports); every client is a thread with its own keep-alive connection.
// Each point runs for --seconds (and at most --maxRequests requests). Prints a Markdown table.
//   serve_bench [--model=models/fmnist_resnet_qdq.onnx] [--seconds=3] [--concurrency=1,4,16,64]
//               [--instances=1] [--threads=2] [--protocols=http,grpc] [--batching=off,on] [--grpcThreads=N]
// Exits 1 if any request failed (ctest's bench_serve.smoke runs it for a few seconds).
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/grpc_frontend.h"
#include "server/grpc_predict_v2.grpc.pb.h"
#include "server/http_frontend.h"
#include "server/inference_server.h"

namespace {

namespace fs = std::filesystem;
using namespace qdqrt;
using Clock = std::chrono::steady_clock;

struct Point {
  double throughput = 0;  // requests (= samples, batch 1) per second
  double p50_us = 0;
  double p99_us = 0;
  int64_t requests = 0;
  int64_t failures = 0;
  // Per request: CPU time of the client threads, of the server's process (for the direct rows:
  // of the engine's pool, the caller being the client), and the context switches of both
  // processes.
  double client_cpu_us = 0;
  double server_cpu_us = 0;
  double switches = 0;
};

double thread_cpu_us() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) * 1e-3;
}

struct Usage {
  double cpu_us = 0;
  double switches = 0;  // voluntary + involuntary
};

// A process's CPU time and context switches so far: this process's from getrusage (which counts
// the client threads that have ended), another's summed over its live threads (/proc).
Usage process_usage(pid_t pid) {
  Usage usage;
  if (pid == ::getpid()) {
    rusage self{};
    ::getrusage(RUSAGE_SELF, &self);
    auto us = [](const timeval& time) { return static_cast<double>(time.tv_sec) * 1e6 + static_cast<double>(time.tv_usec); };
    usage.cpu_us = us(self.ru_utime) + us(self.ru_stime);
    usage.switches = static_cast<double>(self.ru_nvcsw + self.ru_nivcsw);
    return usage;
  }
  fs::path tasks = fs::path("/proc") / std::to_string(pid) / "task";
  std::error_code error;
  for (const auto& task : fs::directory_iterator(tasks, error)) {
    std::ifstream schedstat(task.path() / "schedstat");
    double on_cpu_ns = 0;
    if (schedstat >> on_cpu_ns) usage.cpu_us += on_cpu_ns * 1e-3;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("voluntary_ctxt_switches:") || line.starts_with("nonvoluntary_ctxt_switches:")) {
        usage.switches += std::stod(line.substr(line.find(':') + 1));
      }
    }
  }
  return usage;
}

Point summarize(std::vector<double>& latencies_us, double seconds, int64_t failures) {
  Point point;
  point.requests = static_cast<int64_t>(latencies_us.size());
  point.failures = failures;
  if (latencies_us.empty()) return point;
  std::sort(latencies_us.begin(), latencies_us.end());
  point.throughput = static_cast<double>(latencies_us.size()) / seconds;
  point.p50_us = latencies_us[latencies_us.size() / 2];
  point.p99_us = latencies_us[std::min(latencies_us.size() - 1, latencies_us.size() * 99 / 100)];
  return point;
}

// Runs `clients` threads, each calling `call(client_index)` (true on success) until the time or
// the request budget is used up. `server` is the server's process (this one for direct runs).
template <class MakeClient>
Point run_clients(int clients, double seconds, int64_t max_requests, pid_t server, MakeClient make_client) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int64_t> budget{max_requests};
  std::atomic<int64_t> failures{0};
  std::vector<std::thread> threads;
  std::vector<double> client_cpu_us(clients, 0.0);
  const pid_t self = ::getpid();
  Usage self_before = process_usage(self);
  Usage server_before = server == self ? Usage{} : process_usage(server);
  Clock::time_point start = Clock::now();
  Clock::time_point end = start + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  for (int index = 0; index < clients; ++index) {
    threads.emplace_back([&, index] {
      auto call = make_client(index);
      double cpu_before = thread_cpu_us();
      while (Clock::now() < end && budget.fetch_sub(1) > 0) {
        Clock::time_point sent = Clock::now();
        if (!call()) {
          ++failures;
          continue;
        }
        latencies[index].push_back(std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
      }
      client_cpu_us[index] = thread_cpu_us() - cpu_before;
    });
  }
  for (std::thread& thread : threads) thread.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  Usage self_after = process_usage(self);
  Usage server_after = server == self ? Usage{} : process_usage(server);
  std::vector<double> all;
  for (auto& list : latencies) all.insert(all.end(), list.begin(), list.end());
  Point point = summarize(all, elapsed, failures.load());
  double requests = static_cast<double>(std::max<int64_t>(1, point.requests));
  double client_cpu = 0;
  for (double cpu : client_cpu_us) client_cpu += cpu;
  point.client_cpu_us = client_cpu / requests;
  double server_cpu = server == self ? self_after.cpu_us - self_before.cpu_us - client_cpu
                                     : server_after.cpu_us - server_before.cpu_us;
  point.server_cpu_us = server_cpu / requests;
  point.switches = (self_after.switches - self_before.switches + server_after.switches - server_before.switches) / requests;
  return point;
}

std::vector<float> image(uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
  std::vector<float> values(28 * 28);
  for (float& value : values) value = pixel(generator);
  return values;
}

// A keep-alive HTTP/1.1 client that sends each request (head and body) in one write, as libcurl
// (tritonclient's HTTP transport) does for small bodies; cpp-httplib's client writes the head and
// the body apart, so the server reads a request in two pieces.
class OneWriteHttpClient {
 public:
  OneWriteHttpClient(int port, std::string request) : request_(std::move(request)) {
    socket_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(socket_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    timeval timeout{30, 0};  // a stuck server fails the request instead of hanging the bench
    ::setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(socket_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~OneWriteHttpClient() { ::close(socket_); }
  OneWriteHttpClient(const OneWriteHttpClient&) = delete;
  OneWriteHttpClient& operator=(const OneWriteHttpClient&) = delete;

  // Sends the request and reads the whole response; true on status 200.
  bool call() {
    if (!connected_) return false;
    for (size_t sent = 0; sent < request_.size();) {
      ssize_t count = ::send(socket_, request_.data() + sent, request_.size() - sent, MSG_NOSIGNAL);
      if (count <= 0) return false;
      sent += static_cast<size_t>(count);
    }
    response_.clear();
    size_t head_end = std::string::npos;
    size_t total = 0;
    char buffer[16384];
    while (head_end == std::string::npos || response_.size() < total) {
      ssize_t count = ::recv(socket_, buffer, sizeof(buffer), 0);
      if (count <= 0) return false;
      response_.append(buffer, static_cast<size_t>(count));
      if (head_end == std::string::npos && (head_end = response_.find("\r\n\r\n")) != std::string::npos) {
        size_t length_at = response_.find("Content-Length: ");
        if (length_at == std::string::npos || length_at > head_end) return false;
        total = head_end + 4 + std::stoull(response_.substr(length_at + 16, 20));
      }
    }
    return response_.compare(0, 12, "HTTP/1.1 200") == 0;
  }

 private:
  int socket_ = -1;
  bool connected_ = false;
  std::string request_;
  std::string response_;
};

struct ServerProcess {
  pid_t pid = -1;
  int stop_pipe = -1;  // closing it stops the server
  int http_port = 0;
  int grpc_port = 0;
  int metrics_port = 0;
};

// Forks a process serving `options`' repository over HTTP, gRPC and metrics on 127.0.0.1
// (OS-chosen ports), until the returned pipe is closed. Called before this process starts any
// thread.
ServerProcess start_server_process(const server::RepositoryOptions& options, int grpc_threads) {
  int ports_pipe[2];
  int stop_pipe[2];
  if (::pipe(ports_pipe) != 0 || ::pipe(stop_pipe) != 0) return {};
  pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    ::close(ports_pipe[0]);
    ::close(stop_pipe[1]);
    int exit_code = 1;
    {
      server::InferenceServer inference(options);
      Status status = inference.load_models();
      if (!status.is_ok()) std::fprintf(stderr, "serve_bench: %s\n", status.to_string().c_str());
      server::HttpOptions http_options;
      http_options.host = "127.0.0.1";
      http_options.port = 0;
      http_options.threads = 96;
      server::HttpFrontend http(inference, http_options);
      server::HttpOptions metrics_options = http_options;
      metrics_options.threads = 2;
      server::HttpFrontend metrics(inference, metrics_options, true);
      server::GrpcOptions grpc_options;
      grpc_options.host = "127.0.0.1";
      grpc_options.port = 0;
      if (grpc_threads > 0) grpc_options.threads = grpc_threads;
      server::GrpcFrontend grpc_frontend(inference, grpc_options);
      Result<int> http_port = status.is_ok() ? http.start() : Result<int>(status);
      Result<int> metrics_port = status.is_ok() ? metrics.start() : Result<int>(status);
      Result<int> grpc_port = status.is_ok() ? grpc_frontend.start() : Result<int>(status);
      if (http_port.ok() && metrics_port.ok() && grpc_port.ok()) {
        std::string ports = fmt::format("{} {} {}\n", *http_port, *grpc_port, *metrics_port);
        if (::write(ports_pipe[1], ports.data(), ports.size()) == static_cast<ssize_t>(ports.size())) exit_code = 0;
        char byte;
        while (::read(stop_pipe[0], &byte, 1) > 0) {
        }
      }
      ::close(ports_pipe[1]);
      http.stop();
      grpc_frontend.stop();
      metrics.stop();
      inference.shutdown();
    }
    std::fflush(stderr);
    ::_exit(exit_code);
  }
  ::close(ports_pipe[1]);
  ::close(stop_pipe[0]);
  ServerProcess child;
  child.pid = pid;
  child.stop_pipe = stop_pipe[1];
  std::string ports;
  char buffer[64];
  for (ssize_t count; (count = ::read(ports_pipe[0], buffer, sizeof(buffer))) > 0;) {
    ports.append(buffer, static_cast<size_t>(count));
    if (ports.find('\n') != std::string::npos) break;
  }
  ::close(ports_pipe[0]);
  if (std::sscanf(ports.c_str(), "%d %d %d", &child.http_port, &child.grpc_port, &child.metrics_port) != 3) {
    ::close(child.stop_pipe);
    ::waitpid(pid, nullptr, 0);
    return {};
  }
  return child;
}

// The server's metrics of `model` (version 1): request_success, request_duration_us, exec_count,
// compute_infer_duration_us, inference_count (Prometheus text from the metrics port).
std::array<double, 5> scrape_model_metrics(int metrics_port, const std::string& model) {
  std::array<double, 5> values{};
  httplib::Client client("127.0.0.1", metrics_port);
  auto response = client.Get("/metrics");
  if (!response || response->status != 200) return values;
  const char* names[5] = {"nv_inference_request_success", "nv_inference_request_duration_us", "nv_inference_exec_count",
                          "nv_inference_compute_infer_duration_us", "nv_inference_count"};
  std::string labels = "{model=\"" + model + "\",version=\"1\"} ";
  std::istringstream text(response->body);
  for (std::string line; std::getline(text, line);) {
    for (size_t index = 0; index < 5; ++index) {
      std::string prefix = std::string(names[index]) + labels;
      if (line.starts_with(prefix)) values[index] = std::stod(line.substr(prefix.size()));
    }
  }
  return values;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> values;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) values.push_back(std::stoi(item));
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path = "models/fmnist_resnet_qdq.onnx";
  double seconds = 3;
  int64_t max_requests = 2'000'000;
  std::vector<int> concurrencies = {1, 4, 16, 64};
  int instances = 1;
  int threads = 2;
  std::string protocols = "http,grpc";  // which transports to drive (a profile wants one at a time)
  std::string batching_modes = "off,on";
  int grpc_threads = 0;  // 0: GrpcOptions' default
  for (int index = 1; index < argc; ++index) {
    std::string arg = argv[index];
    if (arg.starts_with("--model=")) model_path = arg.substr(8);
    else if (arg.starts_with("--seconds=")) seconds = std::stod(arg.substr(10));
    else if (arg.starts_with("--maxRequests=")) max_requests = std::stoll(arg.substr(14));
    else if (arg.starts_with("--concurrency=")) concurrencies = parse_list(arg.substr(14));
    else if (arg.starts_with("--instances=")) instances = std::stoi(arg.substr(12));
    else if (arg.starts_with("--threads=")) threads = std::stoi(arg.substr(10));
    else if (arg.starts_with("--protocols=")) protocols = arg.substr(12);
    else if (arg.starts_with("--batching=")) batching_modes = arg.substr(11);
    else if (arg.starts_with("--grpcThreads=")) grpc_threads = std::stoi(arg.substr(14));
    else {
      std::fprintf(stderr, "usage: serve_bench [--model=PATH] [--seconds=S] [--maxRequests=N] [--concurrency=1,4,16,64]"
                           " [--instances=1] [--threads=2] [--protocols=http,grpc] [--batching=off,on] [--grpcThreads=N]\n");
      return 2;
    }
  }
  fs::path root = fs::temp_directory_path() / ("qdqrt_serve_bench_" + std::to_string(::getpid()));
  auto add_model = [&](const std::string& name, const std::string& config) {
    fs::create_directories(root / name / "1");
    fs::copy_file(model_path, root / name / "1" / "model.onnx");
    std::ofstream(root / name / "config.json") << config;
  };
  // Both modes get the same instances x threads; batching merges up to 64.
  std::string instance_group = "\"instance_group\": {\"count\": " + std::to_string(instances) +
                               ", \"threads\": " + std::to_string(threads) + "}";
  add_model("batched", "{\"max_batch_size\": 64, \"dynamic_batching\": true, \"max_queue_size\": 4096, " +
                           instance_group + "}");
  add_model("unbatched", "{\"max_batch_size\": 64, \"dynamic_batching\": false, \"max_queue_size\": 4096, " +
                             instance_group + "}");
  server::RepositoryOptions options;
  options.repository_dir = root.string();
  // The server runs in a child process, as it would for real clients: in one process gRPC's
  // client and server would share one poller (gRPC 1.51's epoll1 engine), handing the polling
  // role between the client's and the server's threads on every call.
  ServerProcess child = start_server_process(options, grpc_threads);
  if (child.pid <= 0) {
    std::fprintf(stderr, "serve_bench: the server process did not start\n");
    fs::remove_all(root);
    return 1;
  }
  const pid_t server_pid = child.pid;
  const int http_port = child.http_port;
  const int grpc_port = child.grpc_port;
  // This process loads the same repository (from the engine cache the child filled) for the
  // direct runs; its runners stay idle.
  server::InferenceServer inference(options);
  if (Status status = inference.load_models(); !status.is_ok()) {
    std::fprintf(stderr, "serve_bench: %s\n", status.to_string().c_str());
    return 1;
  }

  std::vector<float> pixels = image(1);
  // Direct: the same engine, one context of --threads threads, batch 1 (and batch 16).
  server::ServeError error;
  auto runner = inference.repository().find("batched", "", error);
  auto context = runner->engine().create_context({.threads = threads});
  std::vector<float> logits(64 * 10);
  std::vector<float> batch_pixels(64 * 784);
  for (size_t index = 0; index < batch_pixels.size(); ++index) batch_pixels[index] = pixels[index % 784];
  auto direct = [&](int64_t batch) {
    return run_clients(1, seconds, max_requests, ::getpid(), [&](int) {
      return [&, batch] {
        return context->run({{"input", batch_pixels.data(), {batch, 1, 28, 28}}}, {{"output", logits.data(), {batch, 10}}}).is_ok();
      };
    });
  };
  direct(1);  // warm-up
  Point direct_1 = direct(1);
  Point direct_16 = direct(16);
  // A server's runs are apart by the transport's round trip: after a pause the engine's pool
  // threads have gone to sleep and the run pays for waking them. Timed here with 100 us of sleep
  // between runs (the sleep itself is not timed).
  Point direct_idle;
  {
    std::vector<double> latencies_us;
    Clock::time_point end = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
    int64_t failures = 0;
    double busy_seconds = 0;
    while (Clock::now() < end && static_cast<int64_t>(latencies_us.size()) < max_requests) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      Clock::time_point sent = Clock::now();
      if (!context->run({{"input", batch_pixels.data(), {1, 1, 28, 28}}}, {{"output", logits.data(), {1, 10}}}).is_ok()) {
        ++failures;
        continue;
      }
      double run_us = std::chrono::duration<double, std::micro>(Clock::now() - sent).count();
      busy_seconds += run_us * 1e-6;
      latencies_us.push_back(run_us);
    }
    direct_idle = summarize(latencies_us, busy_seconds, failures);
  }
  std::printf("%d instance(s) x %d thread(s); %.1f s per point\n\n", instances, threads, seconds);
  // "in runner", "engine" and "mean batch" come from the model's metrics: the mean time a request
  // spent inside ModelRunner (queue + run + split), the mean engine run and the mean merged batch,
  // so the transport's share is the p50 minus "in runner". The CPU columns split the process's CPU
  // time per request between the client threads and the rest (server and engine; for the direct
  // rows, the caller's thread and the engine's pool); "switches" counts the process's context
  // switches per request (each a thread hand-off or a wait).
  std::printf("| path | concurrency | batching | throughput (inferences/s) | p50 (us) | p99 (us) | requests | failures |"
              " in runner (us/request) | engine (us/run) | mean batch | client CPU (us/request) |"
              " server CPU (us/request) | switches (/request) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  // `runner` holds the three metrics columns, already formatted ("- | - | -" when none).
  auto print_row = [](const std::string& path, int clients, const char* batching, const Point& point, double samples,
                      const std::string& runner) {
    std::printf("| %s | %d | %s | %.0f | %.1f | %.1f | %lld | %lld | %s | %.1f | %.1f | %.2f |\n", path.c_str(), clients,
                batching, point.throughput * samples, point.p50_us, point.p99_us, static_cast<long long>(point.requests),
                static_cast<long long>(point.failures), runner.c_str(), point.client_cpu_us / samples,
                point.server_cpu_us / samples, point.switches);
    std::fflush(stdout);
  };
  const std::string no_runner = "- | - | -";
  print_row("direct ExecutionContext::run, batch 1", 1, "-", direct_1, 1, no_runner);
  print_row("direct ExecutionContext::run, batch 1, 100 us apart", 1, "-", direct_idle, 1, no_runner);
  print_row("direct ExecutionContext::run, batch 16", 1, "-", direct_16, 16, no_runner);
  std::fflush(stdout);

  std::string header = nlohmann::json{{"inputs", {{{"name", "input"},
                                                   {"shape", {1, 1, 28, 28}},
                                                   {"datatype", "FP32"},
                                                   {"parameters", {{"binary_data_size", 784 * sizeof(float)}}}}}},
                                      {"outputs", {{{"name", "output"}, {"parameters", {{"binary_data", true}}}}}}}
                           .dump();
  std::string http_body = header + std::string(reinterpret_cast<const char*>(pixels.data()), 784 * sizeof(float));
  httplib::Headers http_headers = {{"Inference-Header-Content-Length", std::to_string(header.size())}};
  auto http_point = [&](const std::string& model, int clients) {
    std::string path = "/v2/models/" + model + "/infer";
    return run_clients(clients, seconds, max_requests, server_pid, [&, path](int) {
      auto client = std::make_shared<httplib::Client>("127.0.0.1", http_port);
      client->set_keep_alive(true);
      client->set_read_timeout(30, 0);
      client->set_tcp_nodelay(true);
      return [client, path, &http_body, &http_headers] {
        auto response = client->Post(path.c_str(), http_headers, http_body, "application/octet-stream");
        return response && response->status == 200;
      };
    });
  };
  auto one_write_point = [&](const std::string& model, int clients) {
    std::string request = "POST /v2/models/" + model + "/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Content-Type: application/octet-stream\r\nInference-Header-Content-Length: " +
                          std::to_string(header.size()) + "\r\nContent-Length: " + std::to_string(http_body.size()) +
                          "\r\n\r\n" + http_body;
    return run_clients(clients, seconds, max_requests, server_pid, [&, request](int) {
      auto client = std::make_shared<OneWriteHttpClient>(http_port, request);
      return [client] { return client->call(); };
    });
  };
  // Triton's system shared memory: each client registers a region of its own and keeps the input
  // and output there; the request and response carry only the JSON naming them.
  auto shared_memory_point = [&](const std::string& model, int clients) {
    return run_clients(clients, seconds, max_requests, server_pid, [&, model](int) {
      static std::atomic<int> next_region{0};
      struct Region {
        std::string key;
        uint8_t* bytes = nullptr;
        ~Region() {
          if (bytes) ::munmap(bytes, 8192);
          ::shm_unlink(key.c_str());
        }
      };
      auto region = std::make_shared<Region>();
      std::string name = fmt::format("bench{}", next_region++);
      region->key = fmt::format("/qdqrt_serve_bench_{}_{}", ::getpid(), name);
      int fd = ::shm_open(region->key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd >= 0 && ::ftruncate(fd, 8192) == 0) {
        void* mapping = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (mapping != MAP_FAILED) region->bytes = static_cast<uint8_t*>(mapping);
      }
      if (fd >= 0) ::close(fd);
      if (region->bytes) std::memcpy(region->bytes, pixels.data(), 784 * sizeof(float));
      auto client = std::make_shared<httplib::Client>("127.0.0.1", http_port);
      client->set_keep_alive(true);
      client->set_read_timeout(30, 0);
      client->set_tcp_nodelay(true);
      // No Accept-Encoding: the JSON answer would be compressed (the binary rows' is not).
      client->set_decompress(false);
      client->Post(("/v2/systemsharedmemory/region/" + name + "/register").c_str(),
                   nlohmann::json{{"key", region->key}, {"offset", 0}, {"byte_size", 8192}}.dump(), "application/json");
      std::string body =
          nlohmann::json{{"inputs", {{{"name", "input"},
                                      {"shape", {1, 1, 28, 28}},
                                      {"datatype", "FP32"},
                                      {"parameters", {{"shared_memory_region", name},
                                                      {"shared_memory_byte_size", 784 * sizeof(float)}}}}}},
                         {"outputs", {{{"name", "output"},
                                       {"parameters", {{"shared_memory_region", name},
                                                       {"shared_memory_offset", 4096},
                                                       {"shared_memory_byte_size", 4096}}}}}}}
              .dump();
      std::string path = "/v2/models/" + model + "/infer";
      return [client, region, path, body] {
        auto response = client->Post(path.c_str(), body, "application/json");
        return response && response->status == 200;
      };
    });
  };
  auto grpc_point = [&](const std::string& model, int clients) {
    return run_clients(clients, seconds, max_requests, server_pid, [&, model](int index) {
      // A channel per client (distinct arguments so gRPC does not share one connection).
      grpc::ChannelArguments arguments;
      arguments.SetInt("qdqrt_bench_client", index);
      auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(grpc_port),
                                               grpc::InsecureChannelCredentials(), arguments);
      auto stub = std::shared_ptr<inference::GRPCInferenceService::Stub>(inference::GRPCInferenceService::NewStub(channel));
      auto request = std::make_shared<inference::ModelInferRequest>();
      request->set_model_name(model);
      auto* input = request->add_inputs();
      input->set_name("input");
      input->set_datatype("FP32");
      for (int64_t dim : {1, 1, 28, 28}) input->add_shape(dim);
      request->add_raw_input_contents(reinterpret_cast<const char*>(pixels.data()), 784 * sizeof(float));
      return [stub, request] {
        inference::ModelInferResponse response;
        grpc::ClientContext context;
        return stub->ModelInfer(&context, *request, &response).ok();
      };
    });
  };
  int64_t total_failures = direct_1.failures + direct_16.failures;
  bool with_http = protocols.find("http") != std::string::npos;
  bool with_grpc = protocols.find("grpc") != std::string::npos;
  if (with_http) http_point("batched", 1);  // warm-up
  if (with_grpc) grpc_point("batched", 1);
  // The transport's floor at concurrency 1: a request that runs no model.
  std::vector<std::pair<const char*, Point>> floors;
  if (with_http) floors.emplace_back("HTTP GET /v2/health/live (no model)", run_clients(1, seconds, max_requests, server_pid, [&](int) {
    auto client = std::make_shared<httplib::Client>("127.0.0.1", http_port);
    client->set_keep_alive(true);
    client->set_tcp_nodelay(true);
    return [client] {
      auto response = client->Get("/v2/health/live");
      return response && response->status == 200;
    };
  }));
  // The same with a body of the infer request's size (httplib's POST path costs more than GET): the
  // index request's JSON, padded with spaces.
  std::string index_body = R"({"ready": false})";
  index_body.resize(http_body.size(), ' ');
  if (with_http) floors.emplace_back("HTTP POST 3.3 KB to /v2/repository/index (no model)", run_clients(1, seconds, max_requests, server_pid, [&](int) {
    auto client = std::make_shared<httplib::Client>("127.0.0.1", http_port);
    client->set_keep_alive(true);
    client->set_tcp_nodelay(true);
    return [client, &index_body] {
      auto response = client->Post("/v2/repository/index", index_body, "application/json");
      return response && response->status == 200;
    };
  }));
  if (with_grpc) floors.emplace_back("gRPC ServerLive (no model)", run_clients(1, seconds, max_requests, server_pid, [&](int) {
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port), grpc::InsecureChannelCredentials());
    auto stub = std::shared_ptr<inference::GRPCInferenceService::Stub>(inference::GRPCInferenceService::NewStub(channel));
    return [stub] {
      inference::ServerLiveResponse response;
      grpc::ClientContext context;
      return stub->ServerLive(&context, {}, &response).ok();
    };
  }));
  for (auto& [name, point] : floors) {
    total_failures += point.failures;
    print_row(name, 1, "-", point, 1, no_runner);
  }
  for (const char* protocol : {"HTTP binary", "HTTP binary, one-write client", "HTTP system shared memory", "gRPC raw"}) {
    if (!(std::string(protocol).starts_with("HTTP") ? with_http : with_grpc)) continue;
    for (int clients : concurrencies) {
      for (const char* model : {"unbatched", "batched"}) {
        if (batching_modes.find(std::string(model) == "batched" ? "on" : "off") == std::string::npos) continue;
        auto snapshot = [&] { return scrape_model_metrics(child.metrics_port, model); };
        std::array<double, 5> before = snapshot();
        std::string name = protocol;
        Point point = name == "HTTP binary"   ? http_point(model, clients)
                      : name == "gRPC raw"    ? grpc_point(model, clients)
                      : name == "HTTP system shared memory" ? shared_memory_point(model, clients)
                                              : one_write_point(model, clients);
        std::array<double, 5> after = snapshot();
        auto mean = [](double total, double count) { return total / std::max(1.0, count); };
        total_failures += point.failures;
        print_row(protocol, clients, std::string(model) == "batched" ? "on" : "off", point, 1,
                  fmt::format("{:.1f} | {:.1f} | {:.2f}", mean(after[1] - before[1], after[0] - before[0]),
                              mean(after[3] - before[3], after[2] - before[2]),
                              mean(after[4] - before[4], after[2] - before[2])));
      }
    }
  }
  std::array<double, 5> batched = scrape_model_metrics(child.metrics_port, "batched");
  std::printf("\nbatched model: %.0f requests in %.0f engine runs (mean batch %.2f)\n", batched[4], batched[2],
              batched[4] / std::max(1.0, batched[2]));
  inference.shutdown();
  ::close(child.stop_pipe);  // the child stops on end of file
  int child_status = 0;
  ::waitpid(child.pid, &child_status, 0);
  std::error_code remove_error;
  fs::remove_all(root, remove_error);
  if (total_failures > 0) std::printf("serve_bench: %lld requests failed\n", static_cast<long long>(total_failures));
  return total_failures > 0 ? 1 : 0;
}
