// Engines built from a graph that already holds fused layers (Engine::build(Graph)) follow the batch
// through every fused op: each row of the fused op table has an output-shape function, so the
// engine is not pinned to its maximum batch, and every image gets the same bits at every batch.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "core/ops/fused_op_table.h"
#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "tests/common/fused_op_samples.h"
#include "tests/engine_batch/batch_helpers.h"

namespace qdqrt::batch_testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxBatch = 4;

Tensor random_input(const ValueInfo& info, uint32_t seed) {
  Shape shape = *info.static_shape();
  if (info.dtype == DataType::kFloat) return random_tensor(shape, seed);
  Tensor tensor(info.dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> bytes(0, 255);
  auto* data = static_cast<uint8_t*>(tensor.raw_data());
  for (size_t i = 0; i < tensor.nbytes(); ++i) data[i] = static_cast<uint8_t>(bytes(rng));
  return tensor;
}

TEST(FusedLayerBatch, EveryFusedOpFollowsTheBatch) {
  for (const FusedOpRow& row : fused_op_table()) {
    SCOPED_TRACE(row.op_type);
    auto sample = qdqrt::testing::fused_op_samples().find(row.op_type);
    ASSERT_NE(sample, qdqrt::testing::fused_op_samples().end());
    std::string text = std::string(qdqrt::testing::kFusedSampleHeader) + "\n" + sample->second.text;
    for (size_t at = text.find("[N,"); at != std::string::npos; at = text.find("[N,", at)) {
      text.replace(at, 3, "[" + std::to_string(kMaxBatch) + ",");
    }
    const std::string path = fs::path(::testing::TempDir()) / (std::string("fused_") + row.op_type + ".onnx");
    ASSERT_TRUE(write_text_model(text, {}, 1, path).is_ok());
    Result<Graph> graph = load_onnx_file(path);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    TensorMap inputs;
    uint32_t seed = 7;
    for (const std::string& name : graph->inputs) inputs[name] = random_input(*graph->find_value(name), seed++);

    auto built = engine::Engine::build(*graph, {});
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    const engine::Engine& engine = **built;
    EXPECT_EQ(engine.plan().fixed_batch_reason, "");
    auto at_max = run_per_image(engine, inputs, kMaxBatch, kMaxBatch);
    ASSERT_TRUE(at_max.ok()) << at_max.status().to_string();
    for (int64_t per_run : {int64_t{1}, int64_t{3}}) {
      auto outputs = run_per_image(engine, inputs, kMaxBatch, per_run);
      ASSERT_TRUE(outputs.ok()) << per_run << " at a time: " << outputs.status().to_string();
      for (const auto& [name, slices] : at_max->slices) {
        for (size_t image = 0; image < slices.size(); ++image) {
          EXPECT_TRUE(bit_equal(outputs->slices.at(name)[image], slices[image]))
              << name << " of image " << image << ", " << per_run << " at a time";
        }
      }
    }
  }
}

}  // namespace
}  // namespace qdqrt::batch_testing
