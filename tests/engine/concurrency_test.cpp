// Several ExecutionContexts on one Engine, each run from its own thread with its own thread pool,
// give the outputs of one context run serially, bit for bit: the Engine (plan, bound layers, packed
// weights) is shared read-only. Run under ThreadSanitizer by scripts/test_sanitizers.sh thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace qdqrt::testing {
namespace {

using engine::Engine;

const std::string kFmnistModel = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_qdq.onnx";

std::vector<float> run_once(engine::ExecutionContext& context, const std::vector<float>& images, int64_t batch,
                            int64_t classes) {
  std::vector<float> logits(static_cast<size_t>(batch * classes), -1.0f);
  Status status = context.run({{"input", images.data(), {batch, 1, 28, 28}}},
                              {{"output", logits.data(), {batch, classes}}});
  EXPECT_TRUE(status.is_ok()) << status.message();
  return logits;
}

TEST(Concurrency, ContextsOnOneEngineMatchASerialRunBitForBit) {
  engine::BuildOptions options;
  options.input_shapes["input"] = {4, 1, 28, 28};
  auto built = Engine::build_from_file(kFmnistModel, options);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Engine& engine = **built;
  const int64_t classes = engine.outputs().front().shape.back();

  // Batches 4, 3, 1 of seeded images: each thread runs all of them, in its own order.
  std::mt19937 generator(5);
  std::uniform_real_distribution<float> pixel(-1.0f, 2.0f);
  const std::vector<int64_t> batches = {4, 3, 1};
  std::vector<std::vector<float>> images;
  for (int64_t batch : batches) {
    images.emplace_back(static_cast<size_t>(batch * 28 * 28));
    for (float& value : images.back()) value = pixel(generator);
  }
  auto serial_context = engine.create_context({.threads = 1});
  std::vector<std::vector<float>> serial;
  for (size_t b = 0; b < batches.size(); ++b) serial.push_back(run_once(*serial_context, images[b], batches[b], classes));

  constexpr int kThreads = 3;
  constexpr int kRounds = 3;
  std::vector<std::vector<std::vector<float>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto context = engine.create_context({.threads = 1 + t % 2});
      for (int round = 0; round < kRounds; ++round) {
        for (size_t i = 0; i < batches.size(); ++i) {
          const size_t b = (i + static_cast<size_t>(t)) % batches.size();
          std::vector<float> logits = run_once(*context, images[b], batches[b], classes);
          if (std::memcmp(logits.data(), serial[b].data(), logits.size() * sizeof(float)) != 0) {
            results[static_cast<size_t>(t)].push_back(std::move(logits));  // a mismatch, kept to report
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(results[static_cast<size_t>(t)].empty())
        << "thread " << t << ": " << results[static_cast<size_t>(t)].size() << " runs differ from the serial run";
  }
}

TEST(Concurrency, ACancelFlagStopsRunsBeforeTheNextLayer) {
  engine::BuildOptions options;
  options.input_shapes["input"] = {8, 1, 28, 28};
  auto built = Engine::build_from_file(kFmnistModel, options);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Engine& engine = **built;
  const int64_t classes = engine.outputs().front().shape.back();
  std::vector<float> images(8 * 28 * 28, 0.5f), logits(static_cast<size_t>(8 * classes));
  auto context = engine.create_context({.threads = 1});
  std::atomic<bool> cancel{true};
  context->set_cancel_flag(&cancel);
  auto run = [&] {
    return context->run({{"input", images.data(), {8, 1, 28, 28}}}, {{"output", logits.data(), {8, classes}}});
  };
  // Set before the run: it stops before the first layer and says so.
  Status stopped = run();
  EXPECT_FALSE(stopped.is_ok());
  EXPECT_NE(stopped.message().find("cancelled before layer '" + engine.layers().front().name + "' (1 of"),
            std::string::npos)
      << stopped.message();
  cancel = false;
  EXPECT_TRUE(run().is_ok());

  // Set by another thread while runs go on: the next run (or the one executing) stops, bounded
  // in count and time either way.
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancel = true;
  });
  Status last = Status::ok();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < 100000 && last.is_ok() && std::chrono::steady_clock::now() < give_up; ++i) last = run();
  setter.join();
  EXPECT_FALSE(last.is_ok()) << "the runs did not stop";
  EXPECT_NE(last.message().find("the run was cancelled before layer"), std::string::npos) << last.message();
  context->set_cancel_flag(nullptr);
  EXPECT_TRUE(run().is_ok());
}

}  // namespace
}  // namespace qdqrt::testing
